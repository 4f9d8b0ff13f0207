"""What a designer's variant costs the checker: the model's own protocol against a variant that
changes nothing (a Protocol subclass with no override, loaded and guarded like any variant) and
against the ELR example (two fields, five hooks), on the same bounds.

    .venv/bin/python benchmarks/bench_variant.py            # the standard models, 5 rounds each
    .venv/bin/python benchmarks/bench_variant.py --rounds 9

Rounds alternate the sides (own, empty, own, empty, ...) in one interpreter, so that a noisy
machine disturbs both alike; the figure is each side's best states/s, and the ratio empty/own is
what a variant that adds nothing costs (the target: within 5%). See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EMPTY = '''
from isrcheck.model.protocol import Protocol


class Unchanged(Protocol):
    """A variant that changes nothing: what the variant machinery alone costs."""
'''
ELR = f"{ROOT / 'examples' / 'variants' / 'eligible_leader_replicas.py'}:EligibleLeaderReplicas"

#: name -> configuration (as a manifest entry's [model.config])
MODELS: dict[str, dict[str, Any]] = {
    "replication": {"brokers": 3, "replication_factor": 3, "max_records": 2},
    "clean-rf2": {"brokers": 3, "replication_factor": 2, "max_records": 2, "faults": {"crashes": 1}},
    "leader-crash-kip-320": {"brokers": 3, "replication_factor": 3, "max_records": 2, "generation": "kip-320",
                             "faults": {"crashes": 1}},
    "elr-bounds": {"brokers": 2, "replication_factor": 2, "max_records": 1, "min_insync_replicas": 2,
                   "generation": "kip-320", "faults": {"crashes": 1, "lossy_crashes": 1}},
}


def _run(cfg: Any, factory: Any) -> tuple[int, float]:
    from isrcheck.engine.checker import Checker
    from isrcheck.invariants import build_model

    model = build_model(cfg, protocol=factory(cfg) if factory else None)
    start = time.perf_counter()
    result = Checker(model, stop_on_first=False).run()
    return result.distinct_states, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="runs of each side per model (default 5)")
    args = ap.parse_args(argv)
    from isrcheck import native
    from isrcheck.invariants.variants import load_variant
    from isrcheck.model.config import from_mapping

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "unchanged.py"
        path.write_text(EMPTY)
        sides = {"own": None, "empty variant": load_variant(f"{path}:Unchanged"), "ELR": load_variant(ELR)}
        print(f"isrcheck variant cost ({native.describe()}), Python {sys.version.split()[0]}, "
              f"best of {args.rounds} rounds, sides alternated")
        print(f"{'model':<24}{'states':>9}{'own st/s':>12}{'empty st/s':>12}{'empty/own':>11}"
              f"{'ELR states':>12}{'ELR st/s':>11}")
        for name, raw in MODELS.items():
            cfg = from_mapping(raw)
            best: dict[str, float] = {k: 0.0 for k in sides}
            states: dict[str, int] = {}
            for _ in range(args.rounds):
                for side, factory in sides.items():
                    n, seconds = _run(cfg, factory)
                    states[side] = n
                    best[side] = max(best[side], n / seconds)
            if states["own"] != states["empty variant"]:
                print(f"error: {name}: the empty variant reached {states['empty variant']} states, the model "
                      f"{states['own']}", file=sys.stderr)
                return 1
            print(f"{name:<24}{states['own']:>9,}{best['own']:>12,.0f}{best['empty variant']:>12,.0f}"
                  f"{best['empty variant'] / best['own']:>10.1%}{states['ELR']:>12,}{best['ELR']:>11,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
