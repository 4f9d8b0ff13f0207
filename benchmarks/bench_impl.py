"""Figures for the reference implementation on loopback: produce throughput with acks=all,
failover time after SIGKILL of the leader and of the controller, and the simulator's speed.

    python benchmarks/bench_impl.py [--records 2000] [--zookeeper HOST:PORT] [--runs 3]

The last lines give what a frame costs to encode and decode on the framing the cluster speaks
(impl/wire/channel.py: a data frame of an authenticated, sequenced channel, issue 30) against a
plain frame, and what a channel's handshake costs; ``--frames-only`` prints just those (no cluster).
``--plain`` runs the cluster part with plain frames (no secret, no channel), for comparison.

Every number is measured on this machine now; nothing is a target. Produce is one client writing
sequentially (each write waits for its acknowledgement: the latency of a commit across the ISR),
and several clients writing concurrently. Failover is the time from the SIGKILL until a write
with acks=all succeeds again (detection + election + LeaderAndIsr + the client finding the leader).
"""
from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import threading
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isrcheck.impl.core.messages import FetchResponse, LeaderAndIsr, Record  # noqa: E402
from isrcheck.impl.process.client import Client  # noqa: E402
from isrcheck.impl.process.cluster import LocalCluster  # noqa: E402
from isrcheck.impl.rigs.simulator import Simulator  # noqa: E402
from isrcheck.impl.core.messages import to_wire  # noqa: E402
from isrcheck.impl.wire.channel import Channel  # noqa: E402
from isrcheck.impl.wire.frame import FrameDecoder, decode_message, encode_message  # noqa: E402

CONFIG = {"replica_lag_time_max_ms": 2000, "controller_recheck_ms": 200}


class PlainCluster(LocalCluster):
    """The same cluster with plain frames (no secret, no MAC): ``--plain``, to measure what the MAC costs
    end to end. Only here: ``isrcheck cluster up`` always authenticates."""

    def _secret_args(self) -> list[str]:
        return []

    def client(self, timeout: float = 5.0) -> Client:
        return Client(self.store_spec, self.topic, timeout=timeout)


def produce_sequential(c: LocalCluster, n: int) -> float:
    with c.client(timeout=10) as k:
        k.produce(0, "warm-up")
        t = time.perf_counter()
        for i in range(n):
            k.produce(0, f"r{i}", acks="all")
        return n / (time.perf_counter() - t)


def produce_concurrent(c: LocalCluster, n: int, clients: int) -> float:
    per = n // clients
    errors: list[Exception] = []

    def work(j: int) -> None:
        try:
            with c.client(timeout=10) as k:
                for i in range(per):
                    k.produce(0, f"c{j}-{i}", acks="all")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(j,)) for j in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.perf_counter() - t
    if errors:
        raise errors[0]
    return per * clients / dt


def failover_leader(c: LocalCluster) -> float:
    with c.client(timeout=10) as k:
        leader = k.leader(0)
        t = time.perf_counter()
        c.kill(f"broker-{leader}", signal.SIGKILL)
        k.produce(0, "after-failover", timeout=30)
        dt = time.perf_counter() - t
    c.start_broker(leader)
    c.wait_for(lambda k: leader in k.snapshot().part(0).state.isr, 30, "the broker back in the ISR")
    return dt


def failover_controller(c: LocalCluster) -> float:
    with c.client(timeout=10) as k:
        epoch = k.snapshot().controller_epoch
        active = k.status()["controller"]["name"]
        t = time.perf_counter()
        c.kill(active, signal.SIGKILL)
        while k.snapshot().controller_epoch == epoch or k.status()["controller"]["name"] is None:
            time.sleep(0.005)
        dt = time.perf_counter() - t
    c.start_controller(int(active.rsplit("-", 1)[1]))
    return dt


def simulator_speed(steps: int = 3000) -> float:
    cfg = {"brokers": 3, "max_records": 50, "faults": {"crashes": 20, "isr_shrinks": 20, "controller_failovers": 5}}
    sim = Simulator(cfg, seed=1)
    t = time.perf_counter()
    n = len(sim.run(steps))
    return n / (time.perf_counter() - t)


def _channel_pair(secret: bytes) -> tuple[Channel, Channel]:
    """Both ends of one established connection (impl/wire/channel.py), the handshake exchanged in
    memory: a controller connected to broker 1, as the runtime opens its connections."""
    server = Channel(secret, "broker-1", accepting=True)
    client = Channel(secret, "controller-1", "broker-1", accepting=False)
    client.feed(server.outgoing())
    server.feed(client.outgoing())
    assert client.established and server.established
    return client, server


def frame_costs(n: int = 20_000) -> None:
    """What a frame costs on the wire the cluster speaks now: encode + decode of a plain frame
    (version 1, the framing of a cluster without a secret: ``--plain``) against a data frame of an
    established channel (version 3: sequence number, header tag and payload tag under the
    connection's key, impl/wire/channel.py), and what a channel's handshake costs once per
    connection. Each figure is the least disturbed of five runs."""
    secret = bytes(range(32))
    small = LeaderAndIsr(3, 0, 2, (1, 2, 3), 5, 7, (1, 2, 3), 2)
    big = FetchResponse(0, 1, 0, "", tuple(Record(i, 1, "x" * 100) for i in range(500)), 0, 500)
    for name, msg, count in (("LeaderAndIsr", small, n), ("FetchResponse, 500 records", big, max(5, n // 100))):
        per = count // 5
        plain = encode_message(msg)
        plain_s = min(timeit.repeat(lambda m=msg: [decode_message(o) for o in FrameDecoder().feed(encode_message(m))],
                                    number=per, repeat=5))
        client, server = _channel_pair(secret)
        framed = client.encode(to_wire(msg))
        got = [decode_message(o) for o in server.feed(framed)]
        assert got == [msg], "the channel did not carry the message unchanged"

        def channel_round(c: Channel = client, s: Channel = server, m: object = msg) -> None:
            for o in s.feed(c.encode(to_wire(m))):  # a new sequence number each time, as on a connection
                decode_message(o)

        channel_s = min(timeit.repeat(channel_round, number=per, repeat=5))
        a, b = plain_s / per * 1e6, channel_s / per * 1e6
        print(f"frame encode+decode, {name}: plain v1 ({len(plain):,} bytes) {a:,.1f} us, "
              f"channel v3 ({len(framed):,} bytes) {b:,.1f} us ({b - a:+,.1f} us)")
    hs = min(timeit.repeat(lambda: _channel_pair(secret), number=200, repeat=5)) / 200 * 1e6
    print(f"channel handshake (two hellos, the connection key on both ends): {hs:,.1f} us per connection")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--zookeeper", default=None, metavar="HOST:PORT")
    ap.add_argument("--plain", action="store_true", help="frames without MAC (to compare; see PlainCluster)")
    ap.add_argument("--frames-only", action="store_true", help="only the frame and handshake costs (no cluster)")
    a = ap.parse_args()
    if a.frames_only:
        frame_costs()
        return 0
    store = f"ZooKeeper {a.zookeeper}" if a.zookeeper else "embedded store server"
    frames = "plain frames" if a.plain else "authenticated frames"
    print(f"isrcheck reference implementation, loopback, 3 brokers, replication factor 3, {store}, {frames}")
    with tempfile.TemporaryDirectory(prefix="isrcheck-bench-") as d:
        kind = PlainCluster if a.plain else LocalCluster
        c = kind(d, brokers=3, zookeeper=a.zookeeper, config=CONFIG, controllers=2, session_timeout=2.0)
        try:
            c.up()
            with c.client() as k:
                k.create_topic(1, 3)
            c.wait_for(lambda k: k.leader(0) and len(k.snapshot().part(0).state.isr) == 3, 20, "an in-sync topic")
            seq = produce_sequential(c, a.records)
            print(f"produce, acks=all, 1 client, sequential: {seq:,.0f} records/s "
                  f"({1000 / seq:.2f} ms per acknowledged write)")
            conc = produce_concurrent(c, a.records, 8)
            print(f"produce, acks=all, 8 clients:            {conc:,.0f} records/s")
            times = [failover_leader(c) for _ in range(a.runs)]
            print(f"leader failover (SIGKILL -> next acked write): median {statistics.median(times) * 1000:,.0f} ms, "
                  f"runs {', '.join(f'{x * 1000:,.0f}' for x in times)} ms")
            times = [failover_controller(c) for _ in range(a.runs)]
            print(f"controller failover (SIGKILL -> new epoch elected): median "
                  f"{statistics.median(times) * 1000:,.0f} ms, runs {', '.join(f'{x * 1000:,.0f}' for x in times)} ms")
        finally:
            c.down()
    print(f"simulator (step mode, seeded scheduler): {simulator_speed():,.0f} actions/s")
    frame_costs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
