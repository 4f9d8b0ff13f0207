"""TLC and isrcheck side by side on the public TLA+ specification of Kafka replication: the ratio of
their states/s measured in one run, pair by pair, instead of against TLC figures from another day.

    .venv/bin/python benchmarks/bench_tlc.py --tlc tla2tools.jar --specs DIR [--pairs 2] [--rows a,b]

``--tlc`` is TLC's jar, or a class path (a directory of compiled classes and its jars, joined by
``:``); ``--specs`` the directory of the specification's modules (``Kip320.tla``, ...) with the TLC
wrapper ``tlc/MC_Kip320.tla`` beside its configurations (``tlc/MC_R3_Sym_StrongIsr.cfg``), as the
reference material lays them out. The wrapper of another module is the same text with that module
extended; the ``TypeOk`` rows check the wrapper's ``TypeOkTLC`` (the specification's own ``TypeOk``
cannot be evaluated by TLC once a record is written). Nothing of the specification is kept: the
files are written to a temporary directory for the run.

Every row runs TLC then isrcheck, ``--pairs`` times, each a fresh process timed from outside
(start-up included on both sides: the JVM's and Python's), both with 2 workers; the ratio is taken
per pair and the median printed, with the load average at the start and the end. This machine's
speed moves by a third between hours, so only ratios measured in one run are comparable.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Row:
    name: str
    module: str  # the TLA+ module
    peer: str  # isrcheck's --peer name
    tlc_invariant: str
    property: str  # isrcheck's --property
    symmetry: bool


ROWS = {
    "kip-320-sym": Row("Kip320, SYMMETRY, StrongIsr", "Kip320", "kip-320", "StrongIsr", "StrongIsr", True),
    "truncate-sym": Row("KafkaTruncateToHighWatermark, SYMMETRY, TypeOk", "KafkaTruncateToHighWatermark",
                        "truncate-to-hw", "TypeOkTLC", "TypeOk", True),
    "kip-320": Row("Kip320, no symmetry, StrongIsr", "Kip320", "kip-320", "StrongIsr", "StrongIsr", False),
}
DEFAULT_ROWS = "kip-320-sym,truncate-sym"
DISTINCT = re.compile(r"([\d,]+) distinct states found")


class BenchError(Exception):
    pass


def prepare(specs: Path, work: Path, row: Row, replicas: int) -> tuple[str, str]:
    """The wrapper module and configuration of ``row`` in ``work``: (module name, config file)."""
    wrapper = specs / "tlc" / "MC_Kip320.tla"
    base_cfg = specs / "tlc" / "MC_R3_Sym_StrongIsr.cfg"
    for f in (wrapper, base_cfg, specs / f"{row.module}.tla"):
        if not f.is_file():
            raise BenchError(f"--specs: no {f}")
    for f in specs.glob("*.tla"):
        shutil.copy(f, work / f.name)
    name = f"MC_{row.module}"
    text = wrapper.read_text(encoding="utf-8")
    (work / f"{name}.tla").write_text(text.replace("MODULE MC_Kip320", f"MODULE {name}")
                                      .replace("EXTENDS Kip320,", f"EXTENDS {row.module},"), encoding="utf-8")
    cfg = base_cfg.read_text(encoding="utf-8").replace("INVARIANT StrongIsr", f"INVARIANT {row.tlc_invariant}")
    cfg = re.sub(r"Replicas = \{[^}]*\}", "Replicas = {" + ", ".join(f"r{i + 1}" for i in range(replicas)) + "}", cfg)
    if not row.symmetry:
        cfg = cfg.replace("SYMMETRY Perms", "")
    cfg_name = f"{name}_{row.tlc_invariant}{'_sym' if row.symmetry else ''}.cfg"
    (work / cfg_name).write_text(cfg, encoding="utf-8")
    return name, cfg_name


def timed(args: list[str], cwd: Path) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        raise BenchError(f"{' '.join(args[:4])} ... exited {done.returncode}: {' | '.join(tail)}")
    return seconds, done.stdout


def tlc_states(out: str) -> int:
    found = DISTINCT.findall(out)
    if not found:
        raise BenchError("TLC printed no 'distinct states found' line")
    return int(found[-1].replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tlc", required=True, help="TLC's jar, or a class path holding tlc2.TLC")
    ap.add_argument("--specs", required=True, type=Path, help="the specification's directory (with tlc/)")
    ap.add_argument("--pairs", type=int, default=1, help="TLC/isrcheck pairs per row (default 1)")
    ap.add_argument("--rows", default=DEFAULT_ROWS, help=f"comma-separated: {', '.join(ROWS)} (default {DEFAULT_ROWS})")
    ap.add_argument("--replicas", type=int, default=3, choices=(2, 3), help="replicas (default 3, as issue 32)")
    ap.add_argument("--java", default=shutil.which("java") or "java", help="the java command")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.rows.split(",") if n.strip()]
    unknown = [n for n in names if n not in ROWS]
    if unknown or args.pairs < 1:
        print(f"error: --rows: no row {', '.join(unknown)} ({', '.join(ROWS)})" if unknown
              else "error: --pairs must be at least 1", file=sys.stderr)
        return 2
    isrcheck = [sys.executable, "-m", "isrcheck", "check"]
    print(f"# bench-tlc: {args.replicas} replicas, load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, "
          f"TLC {args.tlc if len(args.tlc) <= 100 else args.tlc[:97] + '...'}")
    lines = [f"{'run':<62} {'states':>11} {'TLC s':>8} {'isrcheck s':>10} {'ratio':>6}"]
    try:
        for name in names:
            row = ROWS[name]
            with tempfile.TemporaryDirectory(prefix="bench-tlc-") as tmp:
                work = Path(tmp)
                module, cfg = prepare(args.specs, work, row, args.replicas)
                tlc_cmd = [args.java, "-XX:+UseParallelGC", "-cp", args.tlc, "tlc2.TLC", "-workers", "2",
                           "-deadlock", "-config", cfg, module]
                ours = [*isrcheck, "--peer", row.peer, "--replicas", str(args.replicas), "--property", row.property, "--workers",
                        "2", "--json", *(["--symmetry"] if row.symmetry else [])]
                ratios, tlc_times, our_times = [], [], []
                for _ in range(args.pairs):
                    t_tlc, out = timed(tlc_cmd, work)
                    states = tlc_states(out)
                    t_ours, js = timed(ours, work)
                    mine = json.loads(js)["distinct_states"]
                    if mine != states:
                        raise BenchError(f"{row.name}: TLC found {states:,} states, isrcheck {mine:,}")
                    tlc_times.append(t_tlc)
                    our_times.append(t_ours)
                    ratios.append(t_tlc / t_ours)
                    print(f"#   {row.name}: TLC {t_tlc:.1f} s, isrcheck {t_ours:.1f} s ({states:,} states)", flush=True)
                lines.append(f"{row.name:<62} {states:>11,} {statistics.median(tlc_times):>8.1f} "
                             f"{statistics.median(our_times):>10.1f} {statistics.median(ratios):>5.1f}x")
    except (BenchError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print()
    print("\n".join(lines))
    print(f"# ratio: TLC's wall time over isrcheck's, the median of the pairs (the same states, so the ratio of "
          f"states/s); load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
