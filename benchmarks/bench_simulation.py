"""Seeded random-fault campaigns of the implementation (isrcheck cluster simulate), per setting.

    .venv/bin/python benchmarks/bench_simulation.py                  # 500 seeds of each setting below
    .venv/bin/python benchmarks/bench_simulation.py --seeds 2000
    .venv/bin/python benchmarks/bench_simulation.py --seeds 200 --json sim.json

Each setting runs seeds 0..N-1 in this process, one after the other (impl/rigs/sim_campaign.py), and
prints one row: seeds, faults injected, writes acknowledged, acknowledged writes lost, seeds that
lost one, seeds with any violation (lost, reordered, diverged), the shapes those matched
(impl/rigs/loss_shape.py) and the wall-clock seconds. The first three settings are within Kafka's
promise for acks=all (min ISR 2 of three replicas, clean election, no power loss); the last two let
up to two brokers lose power (their unflushed suffix), which the promise does not cover.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from isrcheck.impl.rigs.fault_schedule import Setting
from isrcheck.impl.rigs.sim_campaign import Tally, campaign

SETTINGS: tuple[tuple[str, Setting], ...] = (
    ("high-watermark", Setting(generation="high-watermark")),
    ("kip-101", Setting(generation="kip-101")),
    ("kip-320", Setting(generation="kip-320")),
    ("kip-320 power loss, min ISR 1", Setting(generation="kip-320", power_loss=2, min_isr=1)),
    ("kip-320 power loss, min ISR 2", Setting(generation="kip-320", power_loss=2, min_isr=2)),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=500)
    ap.add_argument("--json", dest="json_file", default=None, help="also write every figure to this file")
    args = ap.parse_args()
    rows = []
    head = f"{'setting':<30} {'seeds':>6} {'faults':>7} {'acked':>7} {'lost':>5} {'seeds w/ loss':>13} " \
           f"{'violating':>9} {'seconds':>8}  shapes"
    print(head)
    for label, setting in SETTINGS:
        tally = Tally(setting)
        began = time.perf_counter()
        for r in campaign(range(args.seeds), setting):
            tally.add(r)
        seconds = time.perf_counter() - began
        shapes = Counter(s for f in tally.failures for s in f.shapes)
        shown = ", ".join(f"{k} x{v}" for k, v in sorted(shapes.items())) or "-"
        print(f"{label:<30} {tally.seeds:>6} {tally.faults:>7} {tally.acked:>7} {tally.lost:>5} "
              f"{tally.seeds_with_loss:>13} {len(tally.failures):>9} {seconds:>8.1f}  {shown}", flush=True)
        rows.append({"label": label, **tally.to_json(), "seconds": round(seconds, 2)})
    if args.json_file:
        with open(args.json_file, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
