"""Memory and produce latency of a broker under 500 hostile connections (issue 30, item 3).

    python benchmarks/bench_hostile_connections.py [--connections 500] [--records 300] [--seconds 0]

A 3-broker cluster on loopback (authenticated connections, replication factor 3, acks=all). One
client writes ``--records`` records one at a time, first alone, then while ``--connections``
peers without the cluster secret attack the leader, each in a loop:

- half declare a 4 MiB body in a frame header and then send it, slowly (the attack that once
  took a broker from 28 to 630 MiB: the body was read before the MAC was checked);
- half are slowloris peers: one byte a second, never a whole hello.

A peer the leader closes connects again after ``--reconnect`` seconds (0.1 by default; 0 makes it
a connection flood, which measures the attackers' own CPU on a small machine as much as the broker).

Printed: the leader's RSS before and its peak during the attack (sampled every 50 ms from
/proc/<pid>/status), the produce latency (median and 99th percentile) without and with the attack,
and how many attack connections were made and closed by the leader. Exit status 1 if the RSS grew
by 50 MiB or more, or the median latency more than doubled (the issue's targets), so a regression
fails the benchmark.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isrcheck.impl.process.cluster import LocalCluster  # noqa: E402
from isrcheck.impl.wire.frame import HEADER, MAGIC  # noqa: E402

CONFIG = {"replica_lag_time_max_ms": 2000, "controller_recheck_ms": 200}
MiB = 1024 * 1024


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def latencies(c: LocalCluster, n: int) -> list[float]:
    out = []
    with c.client() as k:
        for i in range(n):
            t = time.perf_counter()
            k.produce(0, f"r{i}", timeout=20)
            out.append(time.perf_counter() - t)
    return out


class Attack:
    """``n`` hostile peers against ``port`` on an asyncio loop of their own thread."""

    def __init__(self, port: int, n: int, pause: float) -> None:
        self.port, self.n, self.pause = port, n, pause
        self.connections = 0
        self.closed_by_server = 0
        self.stop = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)

    async def _peer(self, i: int) -> None:
        big = i % 2 == 0
        while not self.stop.is_set():
            try:
                r, w = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            self.connections += 1
            try:
                if big:
                    w.write(HEADER.pack(MAGIC, 2, 1, 0, 4 * MiB - 1))
                    for _ in range(4 * 64):  # 4 MiB - 1 in 16 KiB pieces, as long as the server listens
                        if self.stop.is_set() or r.at_eof():
                            break
                        w.write(b"\0" * (16 * 1024))
                        await asyncio.wait_for(w.drain(), 1.0)
                        await asyncio.sleep(0.01)
                else:
                    for _ in range(3600):
                        if self.stop.is_set() or r.at_eof():
                            break
                        w.write(b"I")
                        await w.drain()
                        await asyncio.sleep(1.0)
            except (OSError, asyncio.TimeoutError):
                pass
            if r.at_eof() or w.is_closing():
                self.closed_by_server += 1
            w.close()
            await asyncio.sleep(self.pause)

    async def _main(self) -> None:
        await asyncio.gather(*(self._peer(i) for i in range(self.n)), return_exceptions=True)

    def __enter__(self) -> Attack:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=500)
    ap.add_argument("--records", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=0.0, help="keep the attack on this long before measuring")
    ap.add_argument("--reconnect", type=float, default=0.1, metavar="S",
                    help="a closed peer connects again after S seconds (0: a connection flood)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        c = LocalCluster(Path(d) / "c", brokers=3, controllers=1, config=CONFIG)
        try:
            c.up(wait=30)
            with c.client() as k:
                k.create_topic(1, 3)
                c.wait_for(lambda k: k.snapshot().part(0).state is not None
                           and len(k.snapshot().part(0).state.isr) == 3, 30, "in sync")
                leader = k.leader(0)
            info = c.procs[f"broker-{leader}"]
            pid, port = int(info["pid"]), int(info["port"])
            latencies(c, 50)  # warm up
            quiet = latencies(c, a.records)
            before = rss(pid)
            peak = [before]
            sampling = threading.Event()

            def sample() -> None:
                while not sampling.is_set():
                    peak[0] = max(peak[0], rss(pid))
                    time.sleep(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            with Attack(port, a.connections, a.reconnect) as attack:
                time.sleep(max(a.seconds, 2.0))  # let every peer connect (and be refused) at least once
                loud = latencies(c, a.records)
                made, closed = attack.connections, attack.closed_by_server
            sampling.set()
            sampler.join()
            alive = c.alive(f"broker-{leader}")
        finally:
            c.down()
    grew = (peak[0] - before) / MiB
    q, lo = statistics.median(quiet), statistics.median(loud)
    p99 = (lambda xs: sorted(xs)[int(len(xs) * 0.99) - 1])
    print(f"leader RSS: {before / MiB:.1f} MiB before, peak {peak[0] / MiB:.1f} MiB under {a.connections} hostile "
          f"connections (+{grew:.1f} MiB); {made} attack connections made, {closed} closed by the leader")
    print(f"produce latency, acks=all, {a.records} records: median {q * 1e3:.2f} ms alone, {lo * 1e3:.2f} ms under "
          f"attack ({lo / q:.2f}x); p99 {p99(quiet) * 1e3:.2f} ms / {p99(loud) * 1e3:.2f} ms; leader alive: {alive}")
    ok = grew < 50 and lo <= 2 * q and alive
    print("targets (RSS +<50 MiB, median latency within 2x): " + ("met" if ok else "MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
