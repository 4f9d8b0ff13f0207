"""Long torture runs: a seeded nemesis against real 3-broker clusters (isrcheck cluster torture), per setting.

    .venv/bin/python benchmarks/bench_torture.py                         # 5 seeds of each setting, embedded store
    .venv/bin/python benchmarks/bench_torture.py --seeds 20 --duration 20
    .venv/bin/python benchmarks/bench_torture.py --zookeeper 127.0.0.1:2181   # also on ZooKeeper
    .venv/bin/python benchmarks/bench_torture.py --only high-watermark --faults kill,pause --json t.json

Each setting runs seeds 0..N-1 one after the other (impl/rigs/torture.py: up, acks=all and acks=1 producers
and a consumer, the seed's faults, heal, settle, judge; the event logs are not validated here) and
prints one row: runs, faults done, acks=all writes acknowledged and lost, acks=1 writes acknowledged
and lost, runs with a violation (acks=all lost, reordered, diverged), runs that did not settle, the
median and largest failover (a fault striking the leader -> another leader in the store), the same
for controller failovers (a fault ending the active controller's session, by a kill or a cut from the
store -> a higher controller epoch in the store) and the wall-clock seconds. The first setting is within Kafka's promise for acks=all; the others are not.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace

from isrcheck.impl.rigs.torture import TortureSetting, remove, run_torture

SETTINGS: tuple[tuple[str, TortureSetting], ...] = (
    ("kip-320, min ISR 2", TortureSetting(generation="kip-320", min_isr=2)),
    ("high-watermark, min ISR 2", TortureSetting(generation="high-watermark", min_isr=2)),
    ("kip-320, min ISR 1, unclean", TortureSetting(generation="kip-320", min_isr=1, unclean=True)),
)


def _med_max(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}/{max(xs):.2f}" if xs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of nemesis per run")
    ap.add_argument("--faults", default=None, help="fault kinds, comma-separated (default: all)")
    ap.add_argument("--zookeeper", default=None, metavar="HOST:PORT", help="also run every setting on this ZooKeeper")
    ap.add_argument("--only", default=None, help="run only the settings whose name starts with this")
    ap.add_argument("--json", dest="json_file", default=None, help="also write every figure to this file")
    args = ap.parse_args()
    kinds = tuple(args.faults.split(",")) if args.faults else None
    stores = [("embedded", None)] + ([("zookeeper", args.zookeeper)] if args.zookeeper else [])
    head = (f"{'setting':<28} {'store':<9} {'runs':>4} {'faults':>6} {'all acked':>9} {'lost':>4} "
            f"{'1 acked':>7} {'lost':>4} {'violating':>9} {'unsettled':>9} {'failover med/max s':>18} {'ctl failover s':>18} {'seconds':>7}")
    print(head)
    rows = []
    for name, base in SETTINGS:
        if args.only and not name.startswith(args.only):
            continue
        for store, zk in stores:
            s = replace(base, store=store, zookeeper=zk, duration=args.duration, kinds=kinds)
            t = time.monotonic()
            row = {"setting": name, "store": store, "runs": 0, "faults": 0, "acked_all": 0, "lost_all": 0,
                   "acked_one": 0, "lost_one": 0, "violating": [], "unsettled": [], "failovers": [],
                   "controller_failovers": []}
            for seed in range(args.start, args.start + args.seeds):
                r = run_torture(seed, s)
                row["runs"] += 1
                row["faults"] += sum(1 for _, what in r.faults if what)
                row["acked_all"] += r.acked_all
                row["lost_all"] += r.verdict.lost_count
                row["acked_one"] += r.acked_one
                row["lost_one"] += r.verdict_acks1.lost_count
                row["failovers"] += r.failovers
                row["controller_failovers"] += r.controller_failovers
                if not r.ok:
                    row["violating"].append(seed)
                if not r.settled:
                    row["unsettled"].append(seed)
                if r.ok and r.settled:
                    remove(r)
            row["seconds"] = round(time.monotonic() - t, 1)
            fo = row["failovers"]
            fos = f"{statistics.median(fo):.2f}/{max(fo):.2f}" if fo else "-"
            print(f"{name:<28} {store:<9} {row['runs']:>4} {row['faults']:>6} {row['acked_all']:>9} "
                  f"{row['lost_all']:>4} {row['acked_one']:>7} {row['lost_one']:>4} {len(row['violating']):>9} "
                  f"{len(row['unsettled']):>9} {fos:>18} {_med_max(row['controller_failovers']):>18} {row['seconds']:>7}", flush=True)
            if row["violating"]:
                print(f"  violating seeds: {row['violating']}")
            rows.append(row)
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
