"""Authenticated frames (issue 18): the cluster secret, the MAC of every frame, and a real cluster that
refuses a forged controller request.

The audit's attack: one ``StopReplica{controller_epoch: 1000000, delete: true}`` sent to a broker's
port deleted its replica and left it fencing the real controller. Here the same frame, sent without
the secret (or with a wrong one), is refused with one log line and changes nothing; and, so that the
test means something, the same frame *with* the secret does what the audit saw.
"""
from __future__ import annotations

import asyncio
import os
import stat
import threading
import time

import pytest
from isrcheck.impl.core.messages import (
    ErrorResponse,
    MetadataRequest,
    MetadataResponse,
    StopReplica,
    from_wire,
    to_wire,
)
from isrcheck.impl.core.store import StoreError
from isrcheck.impl.process.client import BrokerConnection, Client, ClientError
from isrcheck.impl.process.cluster import LocalCluster
from isrcheck.impl.store.remote import RemoteStore, StoreServer
from isrcheck.impl.wire.auth import (
    SECRET_FILE,
    SecretError,
    find_secret,
    read_secret,
    write_secret,
)
from isrcheck.impl.wire.frame import (
    HEADER,
    HEADER_SIZE,
    FrameDecoder,
    FrameError,
    Unauthenticated,
    encode_frame,
    encode_message,
)
from frame_exchange import connect, exchange

FAST = {"replica_lag_time_max_ms": 1000, "fetch_interval_ms": 5, "controller_recheck_ms": 100}
KEY = bytes(range(32))
OTHER = bytes(range(1, 33))


# ---------------------------------------------------------------------------- the secret file
def test_the_secret_file_is_fresh_private_and_checked(tmp_path):
    p1 = write_secret(tmp_path)
    assert p1 == tmp_path / SECRET_FILE
    assert stat.S_IMODE(p1.stat().st_mode) == 0o600
    s1 = read_secret(p1)
    assert len(s1) == 32 and find_secret(tmp_path) == s1
    s2 = read_secret(write_secret(tmp_path))  # a new cluster gets a new secret, still private
    assert s2 != s1 and stat.S_IMODE(p1.stat().st_mode) == 0o600
    assert not [f for f in os.listdir(tmp_path) if f != SECRET_FILE]  # no temporary file left behind

    os.chmod(p1, 0o640)
    with pytest.raises(SecretError, match="must be 0600"):
        read_secret(p1)
    os.chmod(p1, 0o600)
    p1.write_text("not hex\n")
    with pytest.raises(SecretError, match="not hex"):
        read_secret(p1)
    p1.write_text("abcd\n")
    with pytest.raises(SecretError, match="2 bytes"):
        read_secret(p1)
    assert find_secret(tmp_path / "elsewhere") is None
    with pytest.raises(SecretError, match="cannot read"):
        read_secret(tmp_path / "missing")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)  # a FIFO in the secret's place is refused at once, not read (which would block)
    with pytest.raises(SecretError, match="not a regular file"):
        read_secret(fifo)


# ---------------------------------------------------------------------------- frames
def test_authenticated_frames_round_trip_and_anything_else_is_refused():
    msg = StopReplica(1, 0, True)
    good = encode_message(msg, secret=KEY)
    assert good[2] == 2 and len(good) == HEADER_SIZE + 32 + HEADER.unpack(good[:HEADER_SIZE])[4]
    dec = FrameDecoder(secret=KEY)
    got = []
    for i in range(0, len(good) * 2, 5):  # two frames, fed in pieces
        got += dec.feed((good + good)[i:i + 5])
    assert [from_wire(o) for o in got] == [msg, msg]

    plain = encode_message(msg)
    tampered = bytearray(good)
    tampered[-3] ^= 0x01  # one bit of the payload
    forged_tag = bytearray(good)
    forged_tag[HEADER_SIZE] ^= 0x80
    cases = {
        "no MAC": plain,
        "wrong secret": encode_message(msg, secret=OTHER),
        "payload changed": bytes(tampered),
        "tag changed": bytes(forged_tag),
        "epoch raised, tag kept": good.replace(b'"controller_epoch":1', b'"controller_epoch":9'),
    }
    for name, data in cases.items():
        with pytest.raises(Unauthenticated):
            FrameDecoder(secret=KEY).feed(data)
        assert name
    # a side without the secret cannot check a tag, so it refuses the frame rather than trust it
    with pytest.raises(Unauthenticated, match="no cluster secret"):
        FrameDecoder().feed(good)
    # a frame without MAC is refused from its header alone: the payload is never read
    with pytest.raises(Unauthenticated, match="without a MAC"):
        FrameDecoder(secret=KEY).feed(plain[:HEADER_SIZE])


# ---------------------------------------------------------------------------- the store server
@pytest.fixture
def secured_store():
    """A StoreServer with the secret KEY on a background loop; yields its port."""
    loop = asyncio.new_event_loop()
    holder: dict = {}
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)

        async def start() -> None:
            srv = StoreServer("127.0.0.1", 0, secret=KEY)
            holder["port"] = await srv.start()
            holder["srv"] = srv
            started.set()

        loop.run_until_complete(start())
        loop.run_forever()

    async def stop() -> None:  # end every connection's task before the loop goes
        await holder["srv"].close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert started.wait(10)
    yield holder["port"]
    asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    t.join(5)
    loop.close()


def test_the_store_server_refuses_unauthenticated_requests_and_changes_nothing(secured_store, caplog):
    store = RemoteStore("127.0.0.1", secured_store, timeout=5, secret=KEY)
    s = store.session()
    s.create("/victim", b"v1")
    before = s.get("/victim")
    forged = {"type": "StoreRequest", "id": 1, "op": "delete", "path": "/victim", "version": -1}
    forged_multi = {"type": "StoreRequest", "id": 2, "op": "multi",
                    "ops": [{"op": "set", "path": "/victim", "data": "eA==", "version": -1}]}
    with caplog.at_level("WARNING", logger="isrcheck.impl"):
        for data in (encode_frame(forged), encode_frame(forged_multi, secret=OTHER),
                     encode_frame(forged) + encode_frame(forged_multi)):
            caplog.clear()
            answers = exchange(secured_store, data, KEY)
            # one refusal before any session (the handshake failed); the second frame of the last case
            # is never looked at
            assert [a["type"] for a in answers] == ["StoreResponse"]
            assert answers[0]["error"] == "Unauthenticated"
            refusals = [r for r in caplog.records if "refused" in r.getMessage()]
            assert len(refusals) == 1 and "Unauthenticated" in refusals[0].getMessage()
            assert not any(r.exc_info for r in caplog.records)
    assert s.get("/victim") == before
    # a client without the secret cannot even open a session
    with pytest.raises(StoreError, match="ended the session at once: Unauthenticated"):
        RemoteStore("127.0.0.1", secured_store, timeout=2).session()
    s.close()
    store.close()


# ---------------------------------------------------------------------------- a real cluster
def _replica_view(k: Client, b: int, p: int = 0) -> tuple:
    md = k.metadata(b)
    return md.controller_epoch, [r for r in md.replicas if r[0] == p]


def _partition_files(c: LocalCluster, b: int, p: int = 0) -> dict[str, bytes]:
    """The files of broker ``b``'s replica of ``p`` (its log), with their bytes."""
    d = c.dir / f"data-{b}" / str(p)
    return {f.name: f.read_bytes() for f in sorted(d.iterdir())} if d.is_dir() else {}


def _refusal_lines(c: LocalCluster, name: str) -> list[str]:
    return [ln for ln in (c.dir / f"{name}.log").read_text().splitlines() if "refused a frame" in ln]


@pytest.mark.cluster
def test_a_forged_stop_replica_without_the_secret_changes_nothing(tmp_path):
    c = LocalCluster(tmp_path / "auth", brokers=2, controllers=1, config=FAST)
    try:
        c.up(wait=30)
        assert c.secret is not None
        assert stat.S_IMODE((c.dir / SECRET_FILE).stat().st_mode) == 0o600
        with c.client() as k:
            k.create_topic(1, 2, assignment=[[1, 2]])
            c.wait_for(lambda k: k.leader(0) == 1 and k.snapshot().part(0).state.isr == (1, 2), 20, "in sync")
            acked = [k.produce(0, f"v{i}", timeout=10)[1] for i in range(5)]
            c.wait_for(lambda k: _replica_view(k, 2)[1][0][4] == 5, 20, "the follower's HW at 5")
            victim = 2  # the follower: its replica, its log and its ISR membership are at stake
            port = c.procs[f"broker-{victim}"]["port"]
            epoch_before, replica_before = _replica_view(k, victim)
            isr_before = k.snapshot().part(0).state.isr
            log_before = _partition_files(c, victim)
            assert log_before  # the replica's log exists on disk
            assert replica_before and epoch_before < 1_000_000

            attack = StopReplica(controller_epoch=1_000_000, partition=0, delete=True)
            for data in (encode_message(attack),  # no MAC at all
                         encode_message(attack, secret=os.urandom(32))):  # a MAC with a guessed secret
                lines_before = len(_refusal_lines(c, f"broker-{victim}"))
                answers = exchange(port, data, c.secret)
                assert len(answers) == 1
                err = from_wire(answers[0])
                assert isinstance(err, ErrorResponse) and err.error.startswith("Unauthenticated")
                lines = _refusal_lines(c, f"broker-{victim}")
                deadline = time.monotonic() + 20
                while len(lines) == lines_before and time.monotonic() < deadline:
                    time.sleep(0.02)
                    lines = _refusal_lines(c, f"broker-{victim}")
                assert len(lines) == lines_before + 1 and "Unauthenticated" in lines[-1]

            time.sleep(0.5)  # time for a wrongly accepted request to have done its harm
            assert _replica_view(k, victim) == (epoch_before, replica_before)
            assert _partition_files(c, victim) == log_before  # the log: same files, same bytes
            assert k.snapshot().part(0).state.isr == isr_before
            assert "Traceback" not in (c.dir / f"broker-{victim}.log").read_text()
            # ... and the broker still follows the real controller and replicates
            acked += [k.produce(0, f"w{i}", timeout=10)[1] for i in range(3)]
            c.wait_for(lambda k: _replica_view(k, victim)[1][0][4] == 8, 20, "the follower's HW at 8")
            assert set(acked) <= {r.id for r in k.consume(0, 0, timeout=10)}
            assert k.snapshot().part(0).state.isr == isr_before

            # the control: the same request on a connection made with the cluster's secret is obeyed
            # (what the MAC now stops)
            s, ch = connect(port, f"broker-{victim}", c.secret)
            with s:
                s.sendall(ch.encode(to_wire(attack)))
            c.wait_for(lambda k: _replica_view(k, victim) == (1_000_000, []), 10, "the replica deleted")
    finally:
        c.down()


@pytest.mark.cluster
def test_clients_without_the_secret_are_refused_by_every_process(tmp_path):
    c = LocalCluster(tmp_path / "auth2", brokers=1, controllers=1, config=FAST)
    try:
        c.up(wait=30)
        # the broker: a plain request is answered with a refusal, an authenticated one is served
        with pytest.raises((ClientError, ConnectionError, FrameError)):
            BrokerConnection("127.0.0.1", c.procs["broker-1"]["port"], 5.0).request(MetadataRequest(1))
        ok = BrokerConnection("127.0.0.1", c.procs["broker-1"]["port"], 5.0, c.secret, peer="broker-1")
        try:
            assert isinstance(ok.request(MetadataRequest(2)), MetadataResponse)
        finally:
            ok.close()
        # the store server and the controller's port
        with pytest.raises(ClientError, match="cannot reach the metadata store"):
            Client(c.store_spec, secret=None, timeout=2).brokers()
        answers = exchange(c.procs["controller-1"]["port"], encode_message(MetadataRequest(3)), c.secret)
        assert [from_wire(a).error.split(":")[0] for a in answers] == ["Unauthenticated"]
        # the launcher's own client (the CLI's) holds the secret and works
        with c.client() as k:
            assert list(k.brokers()) == [1]
    finally:
        c.down()
