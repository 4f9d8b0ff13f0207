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
The attackers run in a process of their own at nice 19 (``--attack-nice``): an attacker is another
machine, and on a 2-core machine shared with five cluster processes an equal share of the CPU for
500 reconnecting coroutines would measure the attacker's CPU as much as the broker's work; the
leader's own CPU is printed for both phases, so its cost can be read either way.

Printed: the leader's RSS before and its peak during the attack (sampled every 50 ms from
/proc/<pid>/status), the produce latency (median and 99th percentile) without and with the attack,
and how many attack connections were made and closed by the leader. Exit status 1 if the RSS grew
by 50 MiB or more, or the median latency more than doubled (the issue's targets), so a regression
fails the benchmark.
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

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


def cpu(pid: int) -> float:
    """CPU seconds (user and system) process ``pid`` used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latencies(c: LocalCluster, n: int) -> list[float]:
    out = []
    with c.client() as k:
        for i in range(n):
            t = time.perf_counter()
            k.produce(0, f"r{i}", timeout=20)
            out.append(time.perf_counter() - t)
    return out


class Attack:
    """``n`` hostile peers against ``port``, on an asyncio loop in a process of their own at nice
    level ``nice``: an attacker is another machine, so by default its CPU (a few hundred Python
    coroutines reconnecting) yields to the cluster's on this shared one; ``--attack-nice 0`` puts it
    on an equal footing, which on 2 cores measures the attacker's CPU as much as the broker."""

    def __init__(self, port: int, n: int, pause: float, nice: int) -> None:
        self.port, self.n, self.pause, self.nice = port, n, pause, nice
        ctx = multiprocessing.get_context("spawn")
        self._made = ctx.Value("q", 0)
        self._closed = ctx.Value("q", 0)
        self._cpu = ctx.Value("d", 0.0)
        self.stop = ctx.Event()
        self.proc = ctx.Process(target=_attack_main, args=(port, n, pause, nice, self.stop, self._made,
                                                           self._closed, self._cpu), daemon=True)

    @property
    def connections(self) -> int:
        return int(self._made.value)

    @property
    def closed_by_server(self) -> int:
        return int(self._closed.value)

    @property
    def cpu(self) -> float:
        """CPU seconds the attackers' process used (known once it stopped)."""
        return float(self._cpu.value)

    def __enter__(self) -> Attack:
        self.proc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.proc.join(30)


def _attack_main(port: int, n: int, pause: float, nice: int, stop: Any, made: Any, closed: Any, cpu: Any) -> None:
    os.nice(nice)

    async def peer(i: int) -> None:
        big = i % 2 == 0
        while not stop.is_set():
            try:
                r, w = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            made.value += 1
            try:
                if big:
                    w.write(HEADER.pack(MAGIC, 2, 1, 0, 4 * MiB - 1))
                    for _ in range(4 * 64):  # 4 MiB - 1 in 16 KiB pieces, as long as the server listens
                        if stop.is_set() or r.at_eof():
                            break
                        w.write(b"\0" * (16 * 1024))
                        await asyncio.wait_for(w.drain(), 1.0)
                        await asyncio.sleep(0.01)
                else:
                    for _ in range(3600):
                        if stop.is_set() or r.at_eof():
                            break
                        w.write(b"I")
                        await w.drain()
                        await asyncio.sleep(1.0)
            except (OSError, asyncio.TimeoutError):
                pass
            if r.at_eof() or w.is_closing():
                closed.value += 1
            w.close()
            await asyncio.sleep(pause)

    async def run() -> None:
        await asyncio.gather(*(peer(i) for i in range(n)), return_exceptions=True)

    asyncio.run(run())
    cpu.value = time.process_time()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=500)
    ap.add_argument("--records", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=0.0, help="keep the attack on this long before measuring")
    ap.add_argument("--reconnect", type=float, default=0.1, metavar="S",
                    help="a closed peer connects again after S seconds (0: a connection flood)")
    ap.add_argument("--attack-nice", type=int, default=19, metavar="N",
                    help="the attackers' process runs at nice level N (19: another machine's CPU; 0: an equal share)")
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
            t, used = time.perf_counter(), cpu(pid)
            quiet = latencies(c, a.records)
            quiet_cpu = (cpu(pid) - used) / (time.perf_counter() - t)
            before = rss(pid)
            peak = [before]
            sampling = threading.Event()

            def sample() -> None:
                while not sampling.is_set():
                    peak[0] = max(peak[0], rss(pid))
                    time.sleep(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            started = time.perf_counter()
            with Attack(port, a.connections, a.reconnect, a.attack_nice) as attack:
                time.sleep(max(a.seconds, 2.0))  # let every peer connect (and be refused) at least once
                t, used = time.perf_counter(), cpu(pid)
                loud = latencies(c, a.records)
                wall = time.perf_counter() - t
                loud_cpu = (cpu(pid) - used) / wall
                made, closed = attack.connections, attack.closed_by_server
            attack_cpu = attack.cpu / (time.perf_counter() - started)
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
    print(f"leader CPU: {quiet_cpu:.0%} of a core alone, {loud_cpu:.0%} under attack; the attackers' process (nice "
          f"{a.attack_nice}): {attack_cpu:.0%} of a core")
    ok = grew < 50 and lo <= 2 * q and alive
    print("targets (RSS +<50 MiB, median latency within 2x): " + ("met" if ok else "MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
