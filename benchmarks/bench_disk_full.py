"""Acknowledged writes through full disks (issue 30, item 1), on a real cluster. Needs root (it mounts
a small tmpfs as each broker's data directory).

    python benchmarks/bench_disk_full.py [--runs 20] [--start 1] [--json]

Each run (seeded): three brokers, one partition with replication factor 3, ``generation =
"kip-320"``, ``min_insync_replicas = 2``, acks=all; each broker's data directory is a tmpfs of
160-480 KiB (drawn from the seed, so the brokers fill at different times: leader first, or a
follower). A producer writes 1 KiB records, retrying each with the same record id until it is
acknowledged, until the writes have failed for 3 s in a row (the disks are full); the tmpfs are then
grown to 16 MiB ("space returns"), 20 more writes must be acknowledged with no one restarting
anything, then every broker is killed with SIGKILL and started again, and the whole log is read.

Counted per run: writes acknowledged, acknowledged writes missing from the log (lost), records
present twice (duplicated), whether the brokers came back on their own. Exit status 1 if any run
lost or duplicated a write or did not recover.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isrcheck.impl.process.client import ClientError  # noqa: E402
from isrcheck.impl.process.cluster import LocalCluster  # noqa: E402

CONFIG = {"generation": "kip-320", "min_insync_replicas": 2, "replica_lag_time_max_ms": 1000,
          "fetch_interval_ms": 5, "controller_recheck_ms": 100}


def mount(path: Path, size: str) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)


def isr(k) -> set[int]:
    state = k.snapshot().part(0).state
    return set(state.isr) if state is not None else set()


def one_run(seed: int, base: Path) -> dict:
    rng = random.Random(seed)
    d = base / f"run-{seed}"
    c = LocalCluster(d, brokers=3, controllers=1, config=CONFIG)
    d.mkdir(parents=True)
    mounts = []
    for b in (1, 2, 3):
        m = d / f"data-{b}"
        m.mkdir()
        mount(m, f"{rng.choice([160, 224, 288, 352, 416, 480])}k")
        mounts.append(m)
    acked: list[int] = []
    stop = threading.Event()
    last_ack = [time.monotonic()]
    errors: dict[str, int] = {}
    try:
        c.up(wait=30)
        with c.client() as k:
            k.create_topic(1, 3)
        c.wait_for(lambda k: isr(k) == {1, 2, 3}, 30, "in sync")
        ids = iter(range(1, 1 << 30))

        def produce() -> None:
            with c.client() as k:
                rid = next(ids)
                while not stop.is_set():
                    try:
                        k.produce(0, "x" * 1024, timeout=1.0, record_id=rid)
                        acked.append(rid)
                        last_ack[0] = time.monotonic()
                        rid = next(ids)
                    except (ClientError, OSError) as e:
                        code = getattr(e, "code", type(e).__name__)
                        errors[code] = errors.get(code, 0) + 1
                        time.sleep(0.05)

        last_ack[0] = time.monotonic()
        t = threading.Thread(target=produce, daemon=True)
        t.start()
        deadline = time.monotonic() + 120
        while time.monotonic() - last_ack[0] < 3.0 and time.monotonic() < deadline:
            time.sleep(0.1)
        full_at = len(acked)
        for m in mounts:
            subprocess.run(["mount", "-o", "remount,size=16m", str(m)], check=True)
        deadline = time.monotonic() + 60
        while len(acked) < full_at + 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        recovered = len(acked) >= full_at + 20
        stop.set()
        t.join(10)
        for b in (1, 2, 3):
            c.kill(f"broker-{b}")
        for b in (1, 2, 3):
            c.start_broker(b)
        c.wait_for(lambda k: k.leader(0) > 0, 30, "a leader after the restart")
        c.wait_for(lambda k: len(k.consume(0, 0, 100_000, timeout=5)) >= len(acked), 30, "the log read back")
        with c.client() as k:
            log = [r.id for r in k.consume(0, 0, 100_000, timeout=10)]
        lost = sorted(set(acked) - set(log))
        dup = len(log) - len(set(log))
        return {"seed": seed, "acked": len(acked), "acked_before_full": full_at, "lost": len(lost),
                "duplicated": dup, "recovered": recovered, "errors": errors}
    finally:
        stop.set()
        c.down()
        for m in mounts:
            subprocess.run(["umount", "-l", str(m)], check=False)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--start", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(a.start, a.start + a.runs):
            try:
                r = one_run(seed, Path(tmp))
            except Exception as e:  # noqa: BLE001 - a run that could not finish is a result too
                r = {"seed": seed, "failed": f"{type(e).__name__}: {e}"}
            results.append(r)
            if not a.json:
                print(json.dumps(r), flush=True)
    bad = [r for r in results if r.get("failed") or r["lost"] or r["duplicated"] or not r["recovered"]]
    total = sum(r.get("acked", 0) for r in results)
    lost = sum(r.get("lost", 0) for r in results)
    dup = sum(r.get("duplicated", 0) for r in results)
    summary = {"runs": len(results), "acked": total, "lost": lost, "duplicated": dup,
               "not_recovered_or_failed": len(bad)}
    print(json.dumps({"summary": summary, "runs": results}) if a.json else json.dumps({"summary": summary}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
