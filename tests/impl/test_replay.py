"""Frames that cannot be replayed (issue 30, item 2), judged on frames captured from a real run.

A cluster runs with every connection between its processes and its client through a recording
nemesis (no faults): a topic, writes, a reassignment that deletes a replica (StopReplica with
delete), so every kind of frame crosses a link. Then every captured frame is replayed twice:

- **on a new connection** to its destination, as an attacker on the wire would (after the captured
  client hello of its own connection): the destination must refuse it before the core sees it;
- **in its own connection**, after the whole captured stream (an attacker who can inject into a live
  TCP stream): a receiver rebuilt from the captured handshake, with the cluster secret, accepts the
  stream as captured and must refuse every frame sent again.

Obeyed replays are counted (a reply that is not a refusal, a frame the rebuilt receiver accepts a
second time) and must be 0; the cluster's state must be as before the replays.
"""
from __future__ import annotations

import copy
import json
import socket
from collections import Counter, defaultdict

import pytest

from isrcheck.impl.process.cluster import LocalCluster
from isrcheck.impl.rigs.nemesis_proxy import Captured, Nemesis
from isrcheck.impl.rigs.torture import RoutedClient, TortureCluster
from isrcheck.impl.wire.channel import HEADER_SIZE, HEADER_TAG, TYPE_CLIENT_HELLO, TYPE_JSON, TYPE_SERVER_HELLO, Channel
from isrcheck.impl.wire.frame import FrameDecoder, FrameError

from frame_exchange import refusal

# each replay or fuzz case opens a connection of its own: the accept gate's rate (what
# test_strangers.py checks) is raised so that it is not what this file waits for
FAST = {"replica_lag_time_max_ms": 1000, "fetch_interval_ms": 5, "controller_recheck_ms": 100,
        "max_connection_creation_rate": 100_000}
BROKERS = [f"broker-{b}" for b in (1, 2, 3)]


def kind(unit: bytes) -> str:
    """The message type a captured data frame carries (payloads are authenticated, not secret)."""
    length = int.from_bytes(unit[6:10], "big")
    start = HEADER_SIZE + HEADER_TAG
    return str(json.loads(unit[start:start + length]).get("type"))


def isr(k) -> set[int]:
    state = k.snapshot().part(0).state
    return set(state.isr) if state is not None else set()


def is_type(unit: bytes, t: int) -> bool:
    return len(unit) > 3 and unit[2] == 3 and unit[3] == t


@pytest.fixture(scope="module")
def captured_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("replay")
    c = TortureCluster(d / "c", brokers=3, controllers=1, config=FAST)
    nem = Nemesis(c.upstream, capture=True)
    c.nemesis = nem
    nodes = [*BROKERS, "controller-1"]
    for src in [*nodes, "client"]:
        nem.add_link(src, "store", framed=False)
        for dst in nodes:
            if dst != src:
                nem.add_link(src, dst, framed=True)
    try:
        c.up(wait=30)
        with RoutedClient(c.routed_spec("client"), c.topic, c.secret, nem) as k:
            k.create_topic(1, 2, assignment=[[1, 2]])
            c.wait_for(lambda k: isr(k) == {1, 2}, 20, "in sync")
            acked = [k.produce(0, f"v{i}", timeout=10)[1] for i in range(250)]
            for b in (1, 2, 3):
                k.metadata(b)
            k.consume(0, 0, timeout=10)
            k.reassign(0, [1, 3])  # broker 2's replica is deleted: a StopReplica(delete) crosses the wire
            c.wait_for(lambda k: tuple(k.snapshot().part(0).replicas) == (1, 3) and isr(k) == {1, 3}, 30,
                       "the reassignment")
            acked += [k.produce(0, f"w{i}", timeout=10)[1] for i in range(250)]
            k.consume(0, 0, timeout=10)
            c.wait_for(lambda k: len(k.consume(0, 0, timeout=10)) == len(acked), 20, "everything committed")
            # and every replica's high watermark there too (a follower learns it one fetch later): the
            # state compared before and after the replays must not still be moving
            c.wait_for(lambda k: all(r[3] == r[4] == len(acked) for b in (1, 3) for r in k.metadata(b).replicas
                                     if r[0] == 0), 20, "every replica's high watermark at the end")
        assert nem.captured is not None
        yield c, list(nem.captured), acked
    finally:
        c.down()
        nem.close()


def _state(c: LocalCluster) -> tuple:
    with c.client() as k:
        snap = k.snapshot().part(0)
        return (snap.replicas, tuple(sorted(snap.state.isr)), snap.state.leader_epoch,
                tuple(r.id for r in k.consume(0, 0, timeout=10)),
                tuple(tuple(r for r in k.metadata(b).replicas if r[0] == 0) for b in (1, 2, 3)))


def test_no_captured_frame_is_obeyed_on_a_new_connection(captured_run):
    c, frames, acked = captured_run
    hellos = {u.conn: u.data for u in frames if is_type(u.data, TYPE_CLIENT_HELLO)}
    # requests replayed to their destination, answers to the process that asked (the client has no port)
    data = [u for u in frames if is_type(u.data, TYPE_JSON) and (u.way == "to-dst" or u.src != "client")]
    kinds = Counter(kind(u.data) for u in data)
    assert len(data) >= 1000, kinds
    for k in ("LeaderAndIsr", "StopReplica", "UpdateMetadata", "FetchRequest", "ProduceRequest",
              "ConsumeRequest", "MetadataRequest", "FetchResponse", "StopReplicaResponse"):
        assert kinds[k] > 0, (k, kinds)
    assert any('"delete":true' in u.data.decode(errors="replace") for u in data if kind(u.data) == "StopReplica")
    before = _state(c)
    obeyed, refused = 0, Counter()
    for u in data:
        host, port = c.upstream(u.dst if u.way == "to-dst" else u.src)
        with socket.create_connection((host, port), timeout=10) as s:
            s.sendall(hellos[u.conn] + u.data)
            s.shutdown(socket.SHUT_WR)
            reply = b""
            try:
                while chunk := s.recv(65536):
                    reply += chunk
            except (ConnectionResetError, TimeoutError):
                pass
        answers = refusal(reply)
        errors = [a.get("error", "") for a in answers]
        if len(answers) != 1 or not str(errors[0]).startswith("Unauthenticated"):
            obeyed += 1
        refused[kind(u.data)] += 1
    assert obeyed == 0
    assert refused == kinds
    after = _state(c)
    assert after == before
    ids = after[3]
    assert sorted(ids) == sorted(acked) and len(set(ids)) == len(ids)  # nothing appended twice, nothing lost
    print(f"\n[replay] new connections: {len(data)} frames replayed, 0 obeyed; kinds {dict(kinds)}")


def test_no_captured_frame_is_obeyed_twice_in_its_own_connection(captured_run):
    c, frames, _ = captured_run
    by_conn: dict[int, list[Captured]] = defaultdict(list)
    for u in frames:
        by_conn[u.conn].append(u)
    replayed, obeyed, streams = 0, 0, 0
    other: Channel | None = None
    for conn, units in sorted(by_conn.items()):
        server_hello = next((u.data for u in units if is_type(u.data, TYPE_SERVER_HELLO)), None)
        if server_hello is None:
            continue
        src, dst = units[0].src, units[0].dst
        receiver = Channel(c.secret, dst, accepting=True, nonce=server_hello[HEADER_SIZE:])
        sent = [u.data for u in units if u.way == "to-dst"]
        accepted = receiver.feed(b"".join(sent))  # the stream as captured is the stream that was obeyed
        assert len(accepted) == len(sent) - 1  # every frame but the client hello
        # the connecting side, rebuilt from its hello's nonce, for the answers
        client_hello = sent[0]
        asker = Channel(c.secret, src, dst, accepting=False, nonce=client_hello[HEADER_SIZE:HEADER_SIZE + 16])
        asker.feed(server_hello)
        assert asker.outgoing() == client_hello
        answers = [u.data for u in units if u.way == "to-src" and is_type(u.data, TYPE_JSON)]
        assert len(asker.feed(b"".join(answers))) == len(answers)
        streams += 1
        for end, units_again in ((receiver, sent[1:]), (asker, answers)):
            for unit in units_again:
                again = copy.deepcopy(end)
                replayed += 1
                try:
                    again.feed(unit)
                    obeyed += 1
                except FrameError as e:
                    assert e.code == "Replayed"
        if other is not None and len(sent) > 1:  # a frame of this connection in another one's stream
            with pytest.raises(FrameError, match="bad header MAC"):
                copy.deepcopy(other).feed(sent[1])
        other = receiver
    assert streams >= 5 and replayed >= 1000
    assert obeyed == 0
    print(f"\n[replay] in-stream: {replayed} frames sent again in {streams} connections, 0 obeyed")


def test_a_plain_decoder_refuses_a_channel_connection():
    """A client without the secret learns at the server hello that it cannot speak here."""
    hello = Channel(b"k" * 32, "broker-1", accepting=True).outgoing()
    with pytest.raises(FrameError, match="authenticated connections"):
        FrameDecoder().feed(hello)
