"""The runs of issue 32 (bigger bounds) with time, peak memory and bytes per state, and their ratios.

    .venv/bin/python benchmarks/bench_scale.py            # the issue's sizes (minutes: 7-15 M states)
    .venv/bin/python benchmarks/bench_scale.py --quick    # scaled-down runs of the same shape (seconds)
    .venv/bin/python benchmarks/bench_scale.py --only liveness,checkpoint --json scale.json
    .venv/bin/python benchmarks/bench_scale.py --only disk --rounds 3   # interleaved, median ratios

Each run is ``isrcheck check ... --json`` in a child process, as a user would type it: its wall
time is measured around the child, its states and verdict come from its JSON. Memory is measured
two ways, both honest about what they miss: ``peak MiB`` is the largest resident set of one process
of the run (``os.wait4``'s ``ru_maxrss``: the child, or its largest worker), and ``tree MiB`` the
largest sum of the resident sets of the child and its workers, sampled every 0.2 s from /proc (a
table shared between processes is counted once per process that touched it, so it can overstate;
a peak shorter than the sampling interval can be missed). ``B/state`` is ``tree MiB`` over the
distinct states. A run that checks liveness adds a line on its graph (from the JSON's
``liveness``): its bytes per state, the fingerprint index included, and per edge.

Why these rows (issue 32's targets): liveness against safety on the same space (the target is at
most 1.5x the time and 2x the memory), the four-broker configuration, the public specification's
transcription against TLC 2.20's figures from one run on this machine kind (the reference's
README, ``../shared/reference/kafka-specification``: the ratio is isrcheck's states/s over TLC's),
``--disk`` against the same run in memory in one process (the target: at least half the states/s;
its line says what the files took at most), and a checkpointed run against the same run without
(the target: under 10% more time), in memory, with ``--disk`` and with two workers; ``isrcheck spark
explore`` on ``local[2]`` against ``check --workers 2`` on the same space (the target: within 2x;
its tree memory includes Spark's JVM and Python workers); and, only
when ``--only disk-200m`` names it, issue 32's run beyond memory: a ``--disk`` run cut at 205 M
states (the target: under 6 GiB, at least half the in-memory states/s), beside the same space in
memory and on disk cut at 30 M (in memory it passes the default 8 GiB ceiling at 35.5 M). The load
average is printed: figures from a loaded machine are not comparable.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

#: TLC 2.20 on this machine kind, 2 workers, one run side by side with isrcheck (issue 32; the
#: reference's README): (states, seconds)
TLC = {
    ("kip-320", 3, False): (9_985_570, 534.0),
    ("kip-320", 3, True): (1_665_204, 94.3),
    ("truncate-to-hw", 3, True): (6_655_713, 414.0),
}

KIP320 = "leader-crash-kip-320"
BIG = ["--set", "max_records=3", "--set", "faults.crashes=2"]
FOUR = ["--set", "brokers=4", "--set", "replication_factor=3", "--set", "max_records=3", "--set", "faults.crashes=2"]


@dataclass
class Run:
    """One row: a label, the group whose ratios it joins, and the arguments of ``isrcheck check``."""

    label: str
    group: str
    args: list[str]
    tlc: tuple[str, int, bool] | None = None
    checkpoint: bool = False
    disk: bool = False
    spark: bool = False  # ``isrcheck spark explore ... --master local[2]`` instead of ``check``
    figures: dict[str, Any] = field(default_factory=dict)


#: groups run only when ``--only`` names them (half an hour and more)
OPT_IN = {"disk-200m"}
#: issue 32's run beyond memory: the peer transcription with a wider bound, whose 200 M-th state
#: comes in its level 22 (the run is cut there: the whole space is larger)
WIDE = ["--peer", "kip-320", "--replicas", "3", "--set", "max_leader_epoch=4", "--set", "max_records=3"]


def runs(quick: bool) -> list[Run]:
    """The issue's runs, or (``quick``) the same shapes on spaces small enough for seconds."""
    if quick:
        return [
            Run("safety (clean-election, 2 workers)", "liveness", ["clean-election", "--workers", "2", "--no-liveness"]),
            Run("with liveness (pinned)", "liveness", ["clean-election", "--workers", "2"]),
            Run("safety (clean-election, 1 process)", "liveness-1p", ["clean-election", "--no-liveness"]),
            Run("with liveness (pinned), 1 process", "liveness-1p", ["clean-election"]),
            Run("4 brokers, rf 3, 1 record, 1 crash", "brokers", [KIP320, "--set", "brokers=4", "--set",
                                                                  "replication_factor=3", "--set", "max_records=1",
                                                                  "--no-liveness", "--workers", "2"]),
            Run("peer kip-320, 2 replicas", "peer", ["--peer", "kip-320", "--replicas", "2", "--property",
                                                     "StrongIsr", "--workers", "2"]),
            Run("peer kip-320, 2 replicas, symmetry", "peer", ["--peer", "kip-320", "--replicas", "2", "--symmetry",
                                                               "--property", "StrongIsr", "--workers", "2"]),
            Run("peer kip-320, 2 replicas, in memory, 1 process", "disk", ["--peer", "kip-320"]),
            Run("peer kip-320, 2 replicas, --disk", "disk", ["--peer", "kip-320"], disk=True),
            Run("plain (replication, 1 process)", "checkpoint", ["replication", "--no-liveness"]),
            Run("--checkpoint, every level", "checkpoint", ["replication", "--no-liveness", "--checkpoint-every", "0"],
                checkpoint=True),
            Run("--disk (replication)", "disk-checkpoint", ["replication", "--no-liveness"], disk=True),
            Run("--disk --checkpoint, every level", "disk-checkpoint",
                ["replication", "--no-liveness", "--checkpoint-every", "0"], disk=True, checkpoint=True),
            Run("plain (clean-election, 2 workers)", "checkpoint-workers", ["clean-election", "--no-liveness",
                                                                            "--workers", "2"]),
            Run("--checkpoint, every level, 2 workers", "checkpoint-workers",
                ["clean-election", "--no-liveness", "--workers", "2", "--checkpoint-every", "0"], checkpoint=True),
            Run("safety (replication, 2 workers)", "spark", ["replication", "--workers", "2", "--no-liveness"]),
            Run("spark explore, local[2], levels of 20+ on Spark", "spark",
                ["replication", "--spark-threshold", "20"], spark=True),
            Run("peer kip-320, 2 replicas, in memory, cut at 20,000", "disk-200m",
                ["--peer", "kip-320", "--max-states", "20000"]),
            Run("the same, --disk, cut at 20,000", "disk-200m", ["--peer", "kip-320", "--max-states", "20000"],
                disk=True),
            Run("the same, --disk, cut at 40,000", "disk-200m", ["--peer", "kip-320", "--max-states", "40000"],
                disk=True),
        ]
    return [
        Run("safety (kip-320 records 3 crashes 2, 2 workers)", "liveness", [KIP320, *BIG, "--workers", "2",
                                                                            "--no-liveness"]),
        Run("with liveness (pinned)", "liveness", [KIP320, *BIG, "--workers", "2"]),
        # one process: the safety search records the liveness graph as it goes (one exploration)
        Run("safety (kip-320 records 3 crashes 2, 1 process)", "liveness-1p", [KIP320, *BIG, "--no-liveness"]),
        Run("with liveness (pinned), 1 process", "liveness-1p", [KIP320, *BIG]),
        Run("4 brokers, 2 workers", "brokers", [KIP320, *FOUR, "--workers", "2", "--no-liveness"]),
        Run("4 brokers, 1 process", "brokers", [KIP320, *FOUR, "--no-liveness"]),
        Run("peer kip-320, 3 replicas", "peer", ["--peer", "kip-320", "--replicas", "3", "--property", "StrongIsr",
                                                 "--workers", "2"], tlc=("kip-320", 3, False)),
        Run("peer kip-320, 3 replicas, symmetry", "peer", ["--peer", "kip-320", "--replicas", "3", "--symmetry",
                                                           "--property", "StrongIsr", "--workers", "2"],
            tlc=("kip-320", 3, True)),
        Run("peer truncate-to-hw, 3 replicas, symmetry", "peer", ["--peer", "truncate-to-hw", "--replicas", "3",
                                                                  "--symmetry", "--property", "TypeOk", "--workers",
                                                                  "2"], tlc=("truncate-to-hw", 3, True)),
        Run("peer kip-320, 3 replicas, in memory, 1 process", "disk", ["--peer", "kip-320", "--replicas", "3"]),
        Run("peer kip-320, 3 replicas, --disk", "disk", ["--peer", "kip-320", "--replicas", "3"], disk=True),
        Run("plain (kip-320 records 3 crashes 2, 1 process)", "checkpoint", [KIP320, *BIG, "--no-liveness"]),
        Run("--checkpoint (every 60 s, the default)", "checkpoint", [KIP320, *BIG, "--no-liveness"], checkpoint=True),
        Run("--disk (kip-320 records 3 crashes 2)", "disk-checkpoint", [KIP320, *BIG, "--no-liveness"], disk=True),
        Run("--disk --checkpoint (every 60 s)", "disk-checkpoint", [KIP320, *BIG, "--no-liveness"], disk=True,
            checkpoint=True),
        Run("plain (kip-320 records 3 crashes 2, 2 workers)", "checkpoint-workers",
            [KIP320, *BIG, "--no-liveness", "--workers", "2"]),
        # the run takes under a minute with two workers: at the default interval it writes no snapshot
        Run("--checkpoint (every 10 s), 2 workers", "checkpoint-workers",
            [KIP320, *BIG, "--no-liveness", "--workers", "2", "--checkpoint-every", "10"], checkpoint=True),
        # in memory, the space passes the default 8 GiB ceiling at about 35.5 M states
        Run("safety (kip-320 records 3 crashes 2, 2 workers)", "spark", [KIP320, *BIG, "--workers", "2",
                                                                             "--no-liveness"]),
        Run("spark explore, local[2]", "spark", [KIP320, *BIG], spark=True),
        Run("peer kip-320 epochs 4 records 3, memory, cut 30 M", "disk-200m", [*WIDE, "--max-states", "30000000"]),
        Run("the same, --disk, cut at 30 M", "disk-200m", [*WIDE, "--max-states", "30000000"], disk=True),
        Run("the same, --disk, cut at 205 M", "disk-200m", [*WIDE, "--max-states", "205000000"], disk=True),
    ]


def group_names() -> list[str]:
    """The groups of rows, in the table's order (``--only`` takes them)."""
    return list(dict.fromkeys(r.group for r in runs(False)))


# ---------------------------------------------------------------------- measuring
def _tree_rss(pid: int) -> int:
    """The resident bytes of ``pid`` and its descendants, from /proc (0 once it is gone)."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status", encoding="ascii", errors="replace") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
            with open(f"/proc/{p}/task/{p}/children", encoding="ascii") as f:
                todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def measure(run: Run, timeout: float | None) -> dict[str, Any]:
    """Run one ``isrcheck check`` (or ``spark explore``) child; its figures (or ``error`` with why it failed)."""
    workdir = tempfile.mkdtemp(prefix="bench-scale-")
    if run.spark:
        args = [sys.executable, "-m", "isrcheck", "spark", "explore", *run.args, "--master", "local[2]",
                "--out", os.path.join(workdir, "run"), "--json"]
    else:
        args = [sys.executable, "-m", "isrcheck", "check", *run.args, "--json"]
    if run.checkpoint:
        args += ["--checkpoint", os.path.join(workdir, "ck")]
    if run.disk:
        args += ["--disk", os.path.join(workdir, "disk")]
    out_path = os.path.join(workdir, "out.json")
    err_path = os.path.join(workdir, "err.txt")
    peak_tree = 0
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            began = time.perf_counter()
            child = subprocess.Popen(args, stdout=out, stderr=err)
            done = threading.Event()

            def sample() -> None:
                nonlocal peak_tree
                while not done.wait(0.2):
                    peak_tree = max(peak_tree, _tree_rss(child.pid))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            status, usage = _wait(child, timeout)
            seconds = time.perf_counter() - began
            done.set()
            sampler.join()
        if status is None:
            return {"error": f"took more than {timeout:g} s (--timeout)"}
        try:
            with open(out_path, encoding="utf-8") as f:
                d = json.load(f)
        except ValueError:
            return {"error": f"exit status {status}, no JSON"}
        ck = os.path.join(workdir, "ck", "snapshot.isrc")
        with open(err_path, encoding="utf-8", errors="replace") as f:
            said = [ln.strip() for ln in f if ln.startswith(("checkpoint: ", "disk: "))]
        graph = d.get("liveness") or {}
        return {"seconds": seconds, "engine_seconds": d.get("seconds"), "states": d.get("distinct_states"),
                "graph_states": graph.get("states"), "graph_edges": graph.get("edges"),
                "graph_bytes": graph.get("bytes"), "liveness_seconds": graph.get("seconds"),
                "outcome": d.get("outcome"), "exit_status": status,
                "spark_levels": d.get("spark_levels"), "levels": len(d["levels"]) if "levels" in d else None, "peak_bytes": usage.ru_maxrss * 1024,
                "tree_bytes": max(peak_tree, usage.ru_maxrss * 1024),
                "snapshot_bytes": os.path.getsize(ck) if os.path.exists(ck) else None,
                # the run's own lines on its files (checkpoint: and disk:)
                "checkpoint_line": "; ".join(said) if said else None}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _wait(child: subprocess.Popen[bytes], timeout: float | None) -> tuple[int | None, Any]:
    """The child's exit status and its own resource usage (``os.wait4``, not this process's
    cumulative RUSAGE_CHILDREN, so that one row's peak is not an earlier row's); None on timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            return child.returncode, usage
        if deadline is not None and time.monotonic() > deadline:
            child.kill()
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            return None, usage
        time.sleep(0.05)


# ---------------------------------------------------------------------- the table
def mib(n: float | None) -> str:
    return "-" if not n else f"{n / 2**20:,.0f}"


#: bytes of an edge of the liveness graph: its target and its fair label (engine/liveness.py)
EDGE_BYTES = 8


def graph_line(states: int, edges: int, nbytes: int) -> str:
    """What the liveness graph held (issue 32 asks for it per state and per edge): its bytes split
    into the edges' fixed 8 and the rest per state (fingerprint, depth, parent, row offset, the
    masks and the fingerprint index)."""
    per_state = (nbytes - EDGE_BYTES * edges) / states
    return (f"liveness graph: {states:,} states, {edges:,} edges, {nbytes / 2**20:,.0f} MiB: "
            f"{per_state:,.0f} B a state (index included) + {EDGE_BYTES} B an edge")


def time_ratio(f: dict[str, Any], base: dict[str, Any]) -> float:
    """A row's time over its group's first row's: the median of the rounds' ratios (``--rounds``),
    else of the one run each."""
    ratios = f.get("round_ratios")
    return statistics.median(ratios) if ratios else f["seconds"] / base["seconds"]


def table(rows: list[Run]) -> list[str]:
    """The table: one line per run, the ratio to the first run of its group (time and memory),
    and TLC's states/s ratio for the peer rows."""
    head = f"{'run':<50} {'states':>11} {'seconds':>8} {'peak MiB':>8} {'tree MiB':>8} {'B/state':>8} " \
           f"{'x time':>6} {'x mem':>6} {'vs TLC':>7}"
    lines = [head, "-" * len(head)]
    first: dict[str, dict[str, Any]] = {}
    for r in rows:
        f = r.figures
        if "error" in f:
            lines.append(f"{r.label:<50} failed: {f['error']}")
            continue
        base = first.setdefault(r.group, f)
        x_time = f"{time_ratio(f, base):.2f}" if base is not f else "1.00"
        x_mem = f"{f['tree_bytes'] / base['tree_bytes']:.2f}" if base is not f and base["tree_bytes"] else "1.00"
        per_state = f"{f['tree_bytes'] / f['states']:,.0f}" if f.get("states") else "-"
        vs = "-"
        if r.tlc is not None and r.tlc in TLC and f.get("states"):
            tlc_states, tlc_seconds = TLC[r.tlc]
            vs = f"{(f['states'] / f['seconds']) / (tlc_states / tlc_seconds):.1f}x"
        states = f"{f['states']:,}" if f.get("states") is not None else "-"
        lines.append(f"{r.label:<50} {states:>11} {f['seconds']:>8.1f} {mib(f['peak_bytes']):>8} "
                     f"{mib(f['tree_bytes']):>8} {per_state:>8} {x_time:>6} {x_mem:>6} {vs:>7}")
        if f.get("graph_bytes") and f.get("graph_states"):
            lines.append(f"{'':<50} {graph_line(f['graph_states'], f['graph_edges'] or 0, f['graph_bytes'])}")
        if r.checkpoint and f.get("snapshot_bytes"):
            # the wall-clock difference is at the mercy of the load; the run's own account of the
            # time spent writing snapshots (its stderr line) is not
            lines.append(f"{'':<50} wall clock {100 * (time_ratio(f, base) - 1):+.1f}% against the "
                         f"plain run; {f.get('checkpoint_line') or 'no checkpoint line'}")
        ratios = f.get("round_ratios")
        if ratios and base is not f:
            ordered = sorted(ratios)
            lines.append(f"{'':<50} {len(ratios)} rounds: time ratio min {ordered[0]:.2f}, median "
                         f"{statistics.median(ordered):.2f}, max {ordered[-1]:.2f}; seconds "
                         + ", ".join(f"{x:.1f}" for x in f["round_seconds"]))
        if r.spark:
            # issue 32's target: within 2x of check --workers 2 on the same space
            lines.append(f"{'':<50} {f.get('spark_levels', 0)} of {(f.get('levels') or 0)} levels on Spark; "
                         f"{time_ratio(f, base):.2f}x the time of `check`")
        if r.disk and base is not f and not r.checkpoint:
            # issue 32's target: at least half the in-memory states/s, in bounded memory
            rate = (f["states"] / base["states"]) / time_ratio(f, base)
            lines.append(f"{'':<50} {rate:.2f}x the in-memory states/s; "
                         f"{f.get('checkpoint_line') or 'no disk line'}")
    return lines


def selected(rows: list[Run], only: str | None) -> list[Run]:
    """The rows of the groups ``only`` names (comma-separated), or of every group but the opt-in
    ones; ValueError naming a group there is none of."""
    if not only:
        return [r for r in rows if r.group not in OPT_IN]
    groups = {g.strip() for g in only.split(",") if g.strip()}
    unknown = groups - {r.group for r in rows}
    if unknown:
        raise ValueError(f"no group {', '.join(sorted(unknown))} ({', '.join(group_names())})")
    return [r for r in rows if r.group in groups]


def _first_of_group(rows: list[Run], i: int) -> int:
    """The index of the first row of row ``i``'s group (the one its ratios are taken to)."""
    return next(j for j, r in enumerate(rows) if r.group == rows[i].group)


def combined(runs_of_row: list[dict[str, Any]], runs_of_base: list[dict[str, Any]]) -> dict[str, Any]:
    """One row's figures over ``--rounds`` rounds: the median time (this machine's speed drifts by
    a third within hours, so one run each is a weak ratio; rows run interleaved, round by round), the
    largest memory, and the ratio of its time to its group's first row's, round by round, as
    ``round_ratios`` (printed as its spread). The first failed round's error when any failed."""
    for f in runs_of_row:
        if "error" in f:
            return f
    if len(runs_of_row) == 1:
        return runs_of_row[0]
    times = sorted(f["seconds"] for f in runs_of_row)
    out = dict(runs_of_row[0])
    out["seconds"] = statistics.median(times)
    out["peak_bytes"] = max(f["peak_bytes"] for f in runs_of_row)
    out["tree_bytes"] = max(f["tree_bytes"] for f in runs_of_row)
    out["round_seconds"] = [f["seconds"] for f in runs_of_row]
    if all("error" not in b for b in runs_of_base):
        out["round_ratios"] = [f["seconds"] / b["seconds"] for f, b in zip(runs_of_row, runs_of_base)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="scaled-down runs of the same shapes (seconds)")
    ap.add_argument("--only", metavar="GROUPS", help=f"comma-separated groups: {', '.join(group_names())} "
                    f"({', '.join(sorted(OPT_IN))} only when named: its run takes half an hour)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed to one run")
    ap.add_argument("--json", metavar="FILE", help="also write every figure to FILE")
    ap.add_argument("--rounds", type=int, default=1, metavar="N",
                    help="run every chosen row N times, interleaved; median times and each row's ratio to "
                         "its group's first row round by round (min, median, max)")
    args = ap.parse_args(argv)
    try:
        chosen = selected(runs(args.quick), args.only)
    except ValueError as e:
        print(f"error: --only: {e}", file=sys.stderr)
        return 2
    if args.rounds < 1:
        print("error: --rounds must be at least 1", file=sys.stderr)
        return 2
    load_start = os.getloadavg()[0]
    print(f"# bench-scale{' --quick' if args.quick else ''}: {len(chosen)} runs, load average {load_start:.2f}, "
          f"{os.cpu_count()} CPUs, {sys.executable}")
    rounds: list[list[dict[str, Any]]] = []
    for k in range(args.rounds):
        if args.rounds > 1:
            print(f"# round {k + 1} of {args.rounds}", flush=True)
        this: list[dict[str, Any]] = []
        for r in chosen:
            f = measure(r, args.timeout)
            this.append(f)
            print(f"#   {r.label}: " + (f.get("error") or f"{f['states']:,} states in {f['seconds']:.1f} s"),
                  flush=True)
        rounds.append(this)
    for i, r in enumerate(chosen):
        r.figures = combined([rnd[i] for rnd in rounds], [rnd[_first_of_group(chosen, i)] for rnd in rounds])
    print()
    for line in table(chosen):
        print(line)
    print(f"# load average at the start {load_start:.2f}, at the end {os.getloadavg()[0]:.2f} "
          "(figures are only comparable on an otherwise idle machine)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{"label": r.label, "group": r.group, "args": r.args, **r.figures} for r in chosen], f, indent=2)
    return 0 if all("error" not in r.figures for r in chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
