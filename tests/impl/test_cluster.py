"""The real cluster: broker processes on loopback, a controller process that can be killed.

Bounded: loopback only, every wait has a timeout, every process is killed at the end. Run against
the embedded store's server and, when scripts/zookeeper.sh can start it, real ZooKeeper.
"""
from __future__ import annotations

import os
import signal
import socket
import struct
import time

import pytest

from isrcheck.impl.core.messages import ErrorResponse, MetadataRequest, MetadataResponse, from_wire, to_wire
from isrcheck.impl.process.client import BrokerConnection
from isrcheck.impl.process.cluster import LocalCluster
from isrcheck.impl.wire.frame import HEADER, MAGIC, encode_frame, encode_message

from frame_exchange import connect, read_until, refusal

pytestmark = pytest.mark.cluster

FAST = {"replica_lag_time_max_ms": 1000, "fetch_interval_ms": 5, "controller_recheck_ms": 100}


@pytest.fixture(params=["embedded", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
def cluster_factory(request, tmp_path):
    zk = None
    if request.param == "zookeeper":
        zk = request.getfixturevalue("zk_fresh_chroot")
    made = []

    def make(brokers=3, controllers=2, **config):
        c = LocalCluster(tmp_path / f"cluster-{len(made)}", brokers=brokers, zookeeper=zk,
                         config={**FAST, **config}, controllers=controllers, session_timeout=2.0)
        made.append(c)
        c.up(wait=30)
        return c

    yield make
    for c in made:
        c.down()


def wait(c, pred, what, timeout=20.0):
    c.wait_for(pred, timeout, what)


def test_acks_all_survive_sigkill_of_the_leader_and_of_the_controller(cluster_factory):
    c = cluster_factory(brokers=3)
    k = c.client()
    k.create_topic(1, 3)
    wait(c, lambda k: k.leader(0) and len(k.snapshot().part(0).state.isr) == 3, "the topic led and in sync")
    acked = [k.produce(0, f"a{i}", timeout=10)[1] for i in range(25)]
    old_leader = k.leader(0)
    isr_before = set(k.snapshot().part(0).state.isr)
    c.kill(f"broker-{old_leader}", signal.SIGKILL)
    wait(c, lambda k: k.leader(0) not in (0, old_leader), "a new leader")
    new_leader = k.leader(0)
    assert new_leader in isr_before
    acked += [k.produce(0, f"b{i}", timeout=10)[1] for i in range(10)]
    got = {r.id for r in k.consume(0, 0, timeout=10)}
    assert set(acked) <= got, "an acknowledged write was lost"

    # the active controller dies: the other candidate takes over with the next epoch
    epoch = k.snapshot().controller_epoch
    active = c.active_controller()
    c.kill(active, signal.SIGKILL)
    wait(c, lambda k: k.snapshot().controller_epoch > epoch and k.status()["controller"]["name"] not in (None, active),
         "another controller", timeout=30)
    # ... and it does its job: the old leader comes back and rejoins the ISR
    c.start_broker(old_leader)
    wait(c, lambda k: old_leader in k.snapshot().part(0).state.isr, "the restarted broker back in the ISR", 30)
    acked += [k.produce(0, f"c{i}", timeout=10)[1] for i in range(5)]
    got = [r.id for r in k.consume(0, 0, timeout=10)]
    assert set(acked) <= set(got) and len(got) == len(set(got))
    k.close()


def test_a_reassignment_completes(cluster_factory):
    c = cluster_factory(brokers=3, controllers=1)
    k = c.client()
    k.create_topic(1, 2, assignment=[[1, 2]])
    wait(c, lambda k: k.leader(0) == 1 and k.snapshot().part(0).state.isr == (1, 2), "the topic led and in sync")
    acked = [k.produce(0, f"r{i}", timeout=10)[1] for i in range(10)]
    k.reassign(0, [2, 3])
    wait(c, lambda k: k.snapshot().part(0).replicas == (2, 3) and not k.snapshot().reassign, "the reassignment",
         timeout=30)
    st = k.snapshot().part(0).state
    assert st.leader in (2, 3) and set(st.isr) == {2, 3}
    assert set(acked) <= {r.id for r in k.consume(0, 0, timeout=10)}
    wait(c, lambda k: all(p != 0 for p, *_ in k.metadata(1).replicas), "broker 1 deleted its replica")
    k.close()


def _garbage_cases() -> list[bytes]:
    oversized = HEADER.pack(MAGIC, 1, 1, 0, 1 << 30)
    return [
        b"\x00" * 64,
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        os.urandom(4096),
        HEADER.pack(MAGIC, 99, 1, 0, 2) + b"{}",  # unknown version
        HEADER.pack(MAGIC, 1, 7, 0, 2) + b"{}",  # unknown type
        oversized,  # a length beyond the limit: refused from the header alone
        HEADER.pack(MAGIC, 1, 1, 0, 10) + b"{not json}",
        HEADER.pack(MAGIC, 1, 1, 0, 4) + b"[1]",  # truncated, then the connection closes
        encode_frame({"type": "NoSuchMessage"}),
        encode_frame({"type": "ProduceRequest", "request_id": "x"}),
        HEADER.pack(MAGIC, 1, 1, 0, 3) + b"[1]",  # JSON, but not an object
    ]


def _still_serves(port: int, secret: bytes | None) -> None:
    conn = BrokerConnection("127.0.0.1", port, 5.0, secret, peer="broker-1")
    try:
        ans = conn.request(MetadataRequest(42))
        assert isinstance(ans, MetadataResponse) and ans.request_id == 42
    finally:
        conn.close()


def test_malformed_frames_are_rejected_and_the_broker_keeps_serving(tmp_path):
    c = LocalCluster(tmp_path / "garbage", brokers=1, controllers=1, config=FAST)
    try:
        c.up(wait=30)
        port = c.procs["broker-1"]["port"]
        for data in _garbage_cases():
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                reply = b""
                try:
                    while chunk := s.recv(65536):
                        reply += chunk
                except (ConnectionResetError, socket.timeout):
                    pass
            # the broker greets with its server hello, then says why (a plain frame: nothing can be
            # authenticated before the handshake) and closes
            answer = refusal(reply)
            assert answer, reply
            msg = from_wire(answer[0])
            assert isinstance(msg, ErrorResponse) and msg.error
            _still_serves(port, c.secret)
            assert c.alive("broker-1")
        # a bad message on a good connection is answered, and the connection stays usable
        s, ch = connect(port, "broker-1", c.secret)
        with s:
            s.sendall(ch.encode({"type": "Nope"}) + ch.encode(to_wire(MetadataRequest(7))))
            data = repr(read_until(s, ch, 2))
            assert "BadMessage" in data and "MetadataResponse" in data
        # the store server survives garbage too
        store_port = c.procs["store"]["port"]
        with socket.create_connection(("127.0.0.1", store_port), timeout=5) as s:
            s.sendall(os.urandom(1000))
        with c.client() as k:
            assert k.brokers()
        # an oversized frame is refused by the sender's encoder as well
        from isrcheck.impl.wire.frame import Oversized
        with pytest.raises(Oversized):
            encode_frame({"type": "x", "blob": "a" * 100}, max_payload=50)
    finally:
        c.down()
