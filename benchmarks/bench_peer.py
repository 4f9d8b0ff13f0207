"""The transcription of the public TLA+ specification (isrcheck.peers.kafka_specification) against
TLC's recorded figures (peers/kafka_specification/expected.toml).

    .venv/bin/python benchmarks/bench_peer.py                  # Kip320, 3 replicas, without and with symmetry
    .venv/bin/python benchmarks/bench_peer.py --quick          # every module with 2 replicas (seconds)
    .venv/bin/python benchmarks/bench_peer.py --module kip-101 --replicas 2 --workers 1
    .venv/bin/python benchmarks/bench_peer.py --max-states 300000

Every measurement runs in a fresh interpreter. The property checked is StrongIsr (as in TLC's
speed runs); --quick checks none, so that the whole reachable set is counted as in TLC's table. TLC's states/s are the recorded ones (TLC 2.20, -workers 2, 2 vCPUs); the ratio is
isrcheck's distinct states/s over TLC's, so > 1 means faster than TLC.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from typing import Any

import children


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """One check in this process (called in a child interpreter)."""
    from isrcheck.engine.checker import Checker
    from isrcheck.peers.kafka_specification import PeerModel

    model = PeerModel(spec["module"], spec["replicas"], spec["symmetry"], properties=spec["properties"])
    workers = spec["workers"]
    limits = {"max_states": spec.get("max_states")}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if workers > 1:
        from isrcheck.engine.parallel import ParallelChecker

        checker = ParallelChecker(model, workers=workers, **limits)
        result = checker.run()
        # every process's peak resident set, the shared fingerprint table counted once (each
        # worker and the coordinator touched it)
        peak_kib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + sum(checker.worker_peak_rss_kib)
                    - checker.coordinator_shared_kib - sum(checker.worker_shared_kib) + checker.table_bytes // 1024)
    else:
        result = Checker(model, **limits).run()
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"outcome": result.outcome, "states": result.distinct_states, "depth": result.depth,
            "seconds": result.seconds, "violations": [(v.property, v.length) for v in result.violations],
            "peak_kib": peak_kib, "before_kib": before}


def run_child(spec: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    return children.run_child(__file__, spec, timeout)


def tlc_row(module: str, replicas: int, symmetry: bool) -> dict[str, Any] | None:
    from isrcheck.peers.kafka_specification.expected import load_expected

    doc = load_expected()
    for r in doc.get("speed", []):
        if r["module"] == module and r["replicas"] == replicas and r["symmetry"] == symmetry:
            return dict(r)
    fig = doc.get(f"replicas{replicas}", {}).get(module)
    if fig is not None:  # states only (TLC's time for the small runs is not recorded)
        return {"states": fig["states_symmetry" if symmetry else "states_no_symmetry"]}
    return None


COLUMNS = [("module", "<", 18), ("repl", ">", 4), ("sym", "<", 4), ("workers", ">", 7), ("outcome", "<", 14),
           ("states", ">", 10), ("TLC states", ">", 10), ("seconds", ">", 8), ("states/s", ">", 9),
           ("TLC s", ">", 6), ("TLC st/s", ">", 9), ("ratio", ">", 6), ("peak MiB", ">", 8)]


def row(values: list[Any]) -> str:
    return "  ".join(f"{str(v):{align}{width}}" for v, (_, align, width) in zip(values, COLUMNS))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", default="kip-320", help="peer module (short name; default kip-320)")
    ap.add_argument("--replicas", type=int, default=3, help="replicas (default 3)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2, as TLC's runs)")
    ap.add_argument("--quick", action="store_true", help="every module with 2 replicas instead")
    children.add_options(ap)
    args = ap.parse_args(argv)
    if children.served_as_child(args, measure):
        return 0

    from isrcheck.peers.kafka_specification import MODULES

    if args.quick:
        todo = [(m, 2, sym) for m in MODULES for sym in (False, True)]
    else:
        if args.module not in MODULES:
            ap.error(f"unknown module {args.module!r}; known: {', '.join(MODULES)}")
        todo = [(args.module, args.replicas, False), (args.module, args.replicas, True)]

    from isrcheck import native

    print(f"# isrcheck peer benchmark (public TLA+ specification)  python {platform.python_version()}  "
          f"{os.cpu_count()} CPUs  {native.describe()}  "
          f"load average {os.getloadavg()[0]:.2f}  {time.strftime('%Y-%m-%d %H:%M')}")
    print(row([c for c, _, _ in COLUMNS]))
    print(row(["-" * w for _, _, w in COLUMNS]))
    results: list[dict[str, Any]] = []
    for module, replicas, sym in todo:
        spec = {"module": module, "replicas": replicas, "symmetry": sym, "workers": args.workers,
                "max_states": args.max_states,
                # --quick explores the whole reachable set (TLC's "distinct states" figures)
                "properties": [] if args.quick else ["StrongIsr"]}
        r = run_child(spec, args.timeout)
        results.append({**spec, **r, "tlc": tlc_row(module, replicas, sym)})
        rate = r["states"] / r["seconds"] if r["seconds"] > 0 else 0.0
        tlc = tlc_row(module, replicas, sym) or {}
        tlc_rate = tlc.get("states_per_second")
        ratio = f"{rate / tlc_rate:.2f}" if tlc_rate else "-"
        print(row([module, replicas, "on" if sym else "off", args.workers, r["outcome"], f"{r['states']:,}",
                   f"{tlc['states']:,}" if "states" in tlc else "-", f"{r['seconds']:.2f}", f"{rate:,.0f}",
                   tlc.get("seconds", "-"), f"{tlc_rate:,}" if tlc_rate else "-", ratio,
                   f"{r['peak_kib'] / 1024:,.0f}"]), flush=True)
    children.finish(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
