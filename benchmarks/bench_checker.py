"""Throughput and memory of the checker: single-process Checker against ParallelChecker.

    .venv/bin/python benchmarks/bench_checker.py              # every standard configuration
    .venv/bin/python benchmarks/bench_checker.py --quick      # the small ones only (seconds)
    .venv/bin/python benchmarks/bench_checker.py --model unclean-election   # a manifest model
    .venv/bin/python benchmarks/bench_checker.py --config '{"brokers": 3, "max_records": 3}'

Every measurement runs in a fresh interpreter, so that peak memory is that run's alone. See
benchmarks/README.md for what the columns mean.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from typing import Any

import children

# name -> (size, description, config). Pinned here rather than read from specs/models.toml so
# that figures stay comparable while the manifest grows; --model runs a manifest entry.
STANDARD: dict[str, tuple[str, str, dict[str, Any]]] = {
    "replication": ("small", "3 brokers, RF 3, 2 records, no faults",
                    {"brokers": 3, "replication_factor": 3, "max_records": 2}),
    "hw-truncation": ("small", "RF 3, 2 records, 1 crash: fails NoCommittedWriteLost (stops early)",
                      {"brokers": 3, "replication_factor": 3, "max_records": 2, "faults": {"crashes": 1}}),
    "clean-rf2": ("small", "RF 2, 2 records, 1 crash",
                  {"brokers": 3, "replication_factor": 2, "max_records": 2, "faults": {"crashes": 1}}),
    "rf2-crashes2": ("medium", "RF 2, 2 records, 2 crashes",
                     {"brokers": 3, "replication_factor": 2, "max_records": 2, "faults": {"crashes": 2}}),
    "rf2-records3-crashes2-shrink1": ("large", "RF 2, 3 records, 2 crashes, 1 ISR shrink",
                                      {"brokers": 3, "replication_factor": 2, "max_records": 3,
                                       "faults": {"crashes": 2, "isr_shrinks": 1}}),
}


# ---------------------------------------------------------------------------- one measurement
def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one check in this process and return its figures (called in a child interpreter)."""
    from isrcheck import native
    from isrcheck.invariants import build_model
    from isrcheck.engine.checker import Checker
    from isrcheck.model.config import from_mapping
    from isrcheck.engine.parallel import ParallelChecker

    model = build_model(from_mapping(spec["config"]), symmetry=spec.get("symmetry"))
    limits = {"max_states": spec.get("max_states"), "max_depth": spec.get("max_depth")}
    workers = spec["workers"]
    stats: dict[str, Any] = {}
    worker_rss: list[int] = []
    shared_kib = 0
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu0 = time.process_time()
    if workers == 0:
        result = Checker(model, **limits).run()
    else:
        checker = ParallelChecker(model, workers=workers, **limits)
        result = checker.run()
        worker_rss = checker.worker_peak_rss_kib
        # the shared fingerprint table is in every process's peak: count it once
        shared_kib = checker.coordinator_shared_kib + sum(checker.worker_shared_kib) - checker.table_bytes // 1024
        stats = dict(checker.stats)
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "outcome": result.outcome,
        "states": result.distinct_states,
        "depth": result.depth,
        "transitions": result.transitions,
        "seconds": result.seconds,
        "violations": [(v.property, v.length) for v in result.violations],
        "cpu_seconds": (time.process_time() - cpu0) + kids.ru_utime + kids.ru_stime,
        "rss_self_kib": me.ru_maxrss,
        "rss_before_kib": rss_before,
        "build": native.build(),
        "rss_workers_kib": worker_rss,
        "shared_counted_again_kib": max(shared_kib, 0),
        "rss_children_max_kib": kids.ru_maxrss,
        "stats": stats,
        "symmetry": model.symmetry,
    }


def run_child(spec: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    return children.run_child(__file__, spec, timeout, pure=spec.get("build") == "pure")


# ---------------------------------------------------------------------------- the table
COLUMNS = [("model", "<", 30), ("build", "<", 8), ("mode", "<", 10), ("outcome", "<", 14), ("states", ">", 9),
           ("depth", ">", 5), ("seconds", ">", 8), ("states/s", ">", 9), ("trans/s", ">", 9), ("cpu s", ">", 7),
           ("peak MiB", ">", 8), ("B/state", ">", 7)]


def row(values: list[Any]) -> str:
    return "  ".join(f"{str(v):{align}{width}}" for v, (_, align, width) in zip(values, COLUMNS))


def mode_name(workers: int) -> str:
    return "single" if workers == 0 else f"parallel{workers}"


def _shared_counted_again_kib(r: dict[str, Any]) -> float:
    """The parallel checker's fingerprint table is one piece of shared memory, but every process
    that touched it (the coordinator, which grows it, and each worker) has what it touched in its
    peak resident set: the excess over one table."""
    return float(r.get("shared_counted_again_kib", 0))


def peak_mib(r: dict[str, Any]) -> float:
    return (r["rss_self_kib"] + sum(r["rss_workers_kib"]) - _shared_counted_again_kib(r)) / 1024


def bytes_per_state(r: dict[str, Any]) -> float:
    """Memory the search added, per distinct state: peak resident memory beyond what the process
    had before the run (in parallel mode: the coordinator's and every worker's, each worker counted
    from the same starting point, since it is a fork of the coordinator, and the shared fingerprint
    table once)."""
    processes = 1 + len(r["rss_workers_kib"])
    grown = (r["rss_self_kib"] + sum(r["rss_workers_kib"]) - processes * r["rss_before_kib"]
             - _shared_counted_again_kib(r))
    return max(grown, 0) * 1024 / max(r["states"], 1)


def format_result(name: str, workers: int, r: dict[str, Any]) -> str:
    secs = r["seconds"]
    return row([
        name, r["build"], mode_name(workers), r["outcome"], r["states"], r["depth"], f"{secs:.2f}",
        f"{r['states'] / secs:,.0f}" if secs > 0 else "-",
        f"{r['transitions'] / secs:,.0f}" if secs > 0 else "-",
        f"{r['cpu_seconds']:.2f}", f"{peak_mib(r):.0f}", f"{bytes_per_state(r):.0f}",
    ])


def load_manifest_entry(name: str) -> tuple[str, dict[str, Any], bool | None]:
    from isrcheck import specs

    entries = specs.load("models.toml").get("model", [])
    for e in entries:
        if e.get("name") == name:
            return e.get("description", ""), dict(e.get("config", {})), e.get("symmetry")
    known = ", ".join(e.get("name", "?") for e in entries)
    raise SystemExit(f"no model {name!r} in specs/models.toml (known: {known})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="only the small standard configurations")
    ap.add_argument("--model", action="append", default=[], metavar="NAME",
                    help="a model of specs/models.toml instead of the standard set (repeatable)")
    ap.add_argument("--config", metavar="JSON", help="a configuration given inline, as JSON")
    ap.add_argument("--only", metavar="NAME", action="append", default=[],
                    help="only this standard configuration (repeatable)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the parallel run (default 2)")
    ap.add_argument("--modes", default="single,parallel", help="single, parallel or both (default)")
    ap.add_argument("--builds", default="compiled,pure",
                    help="compiled, pure (ISRCHECK_PURE=1) or both (default): the same runs on each build")
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement; the fastest is shown")
    children.add_options(ap)
    args = ap.parse_args(argv)

    if children.served_as_child(args, measure):
        return 0

    todo: list[tuple[str, dict[str, Any], bool | None]] = []
    if args.config:
        todo.append(("config", json.loads(args.config), None))
    for name in args.model:
        _, cfg, sym = load_manifest_entry(name)
        todo.append((name, cfg, sym))
    if not todo:
        for name, (size, _, cfg) in STANDARD.items():
            if args.only and name not in args.only:
                continue
            if args.quick and size != "small":
                continue
            todo.append((name, cfg, None))
    modes = [m.strip() for m in args.modes.split(",")]
    worker_counts = ([0] if "single" in modes else []) + ([args.workers] if "parallel" in modes else [])

    print(f"# isrcheck checker benchmark  python {platform.python_version()}  {os.cpu_count()} CPUs  "
          f"load average {os.getloadavg()[0]:.2f}  {time.strftime('%Y-%m-%d %H:%M')}")
    print(row([c for c, _, _ in COLUMNS]))
    print(row(["-" * w for _, _, w in COLUMNS]))
    builds = [b.strip() for b in args.builds.split(",")]
    results: list[dict[str, Any]] = []
    for name, cfg, sym in todo:
        runs_of: dict[tuple[str, int], dict[str, Any]] = {}
        for build in builds:
            for workers in worker_counts:
                spec = {"config": cfg, "workers": workers, "symmetry": sym, "max_states": args.max_states,
                        "build": build}
                runs = [run_child(spec, args.timeout) for _ in range(max(1, args.repeat))]
                best = min(runs, key=lambda r: r["seconds"])
                runs_of[build, workers] = best
                print(format_result(name, workers, best), flush=True)
                results.append({"model": name, "config": cfg, "workers": workers, **best})
        first = next(iter(runs_of.values()))
        for key, other in runs_of.items():
            if any(first[k] != other[k] for k in ("outcome", "states", "depth", "transitions", "violations")):
                print(f"!! {name}: the {key[0]} {mode_name(key[1])} result differs from the others (a bug)",
                      flush=True)
    if "compiled" in builds and "pure" in builds:
        print()
        print("speed-up of the compiled build over the pure-Python one (wall clock, same mode):")
        for name, *_ in todo:
            for workers in worker_counts:
                c = next(r for r in results if r["model"] == name and r["workers"] == workers and r["build"] == "compiled")
                p = next(r for r in results if r["model"] == name and r["workers"] == workers and r["build"] == "pure")
                print(f"  {name:<30} {mode_name(workers):<10} {p['seconds'] / c['seconds']:5.2f}x")
    if len(worker_counts) == 2:
        print()
        print(f"speed-up of {args.workers} workers over the single-process checker (wall clock, {builds[0]} build):")
        for name, *_ in todo:
            s = next(r for r in results if r["model"] == name and r["workers"] == 0 and r["build"] == builds[0])
            p = next(r for r in results if r["model"] == name and r["workers"] == args.workers
                     and r["build"] == builds[0])
            moved = p["stats"].get("moved_states", 0)
            print(f"  {name:<30} {s['seconds'] / p['seconds']:5.2f}x   "
                  f"(cpu {p['cpu_seconds'] / max(s['cpu_seconds'], 1e-9):.2f}x of single; "
                  f"states moved between workers: {moved})")
    children.finish(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
