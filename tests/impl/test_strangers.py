"""No memory for strangers (issue 30, item 3): a peer without the cluster secret is refused from the
first bytes of its connection, cannot declare a body the server would buffer, cannot hold more than
``max_unauthenticated`` handshakes open, and a slow peer is closed.

An in-process Runtime serves on loopback with small timeouts; the peers are asyncio connections. The
figures (memory held by 500 hostile connections, produce latency meanwhile) are measured by
``benchmarks/bench_hostile_connections.py``, not here."""
from __future__ import annotations

import asyncio
import struct

import pytest

from isrcheck.impl.core.messages import MetadataRequest, MetadataResponse, from_wire, to_wire
from isrcheck.impl.process.runtime import Runtime
from isrcheck.impl.wire.channel import Channel, connect_handshake, read_channel_frame
from isrcheck.impl.wire.frame import HEADER, MAGIC

from frame_exchange import refusal

KEY = bytes(range(32))


class Echo:
    """A core that answers a MetadataRequest (enough to show a connection was served)."""

    def handle(self, inp):
        from isrcheck.impl.core.messages import Send
        return [Send(inp.frm, MetadataResponse(inp.msg.request_id, 1, 0, (), ()))]


async def _server(**attrs) -> tuple[Runtime, int]:
    rt = Runtime(Echo(), store=None, name="broker-1", secret=KEY)  # type: ignore[arg-type]
    for k, v in attrs.items():
        setattr(rt, k, v)
    return rt, await rt.serve("127.0.0.1", 0)


async def _until_closed(reader: asyncio.StreamReader, bound: float = 20.0) -> bytes:
    """Everything the server sends until it closes the connection (the bound only stops a hung test)."""
    return await asyncio.wait_for(reader.read(), bound)


def run(coro):
    return asyncio.run(coro)


def test_a_stranger_declaring_a_big_body_is_refused_from_its_first_bytes():
    async def go():
        rt, port = await _server()
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(HEADER.pack(MAGIC, 2, 1, 0, 4 * 1024 * 1024 - 1) + b"x")  # 4 MiB declared, one byte sent
        got = await _until_closed(r)
        w.close()
        await rt.shutdown()
        return got

    answers = refusal(run(go()))
    assert len(answers) == 1 and answers[0]["error"].startswith("Unauthenticated")


def test_handshakes_beyond_the_cap_are_closed_at_once_and_the_held_ones_time_out():
    async def go():
        rt, port = await _server(max_unauthenticated=3, handshake_timeout=0.5)
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        greeted = [await asyncio.wait_for(r.readexactly(34), 10) for r, _ in held]  # the server hellos
        r4, w4 = await asyncio.open_connection("127.0.0.1", port)
        beyond = await _until_closed(r4)  # closed without a hello: no state for a 4th stranger
        # a slowloris: one byte of a hello, then nothing; closed by the handshake timeout
        timed_out = [await _until_closed(r) for r, _ in held]
        # the cap is free again: a proper client is served
        r5, w5 = await asyncio.open_connection("127.0.0.1", port)
        ch = Channel(KEY, "client", "broker-1", accepting=False)
        await connect_handshake(r5, w5, ch)
        w5.write(ch.encode(to_wire(MetadataRequest(9))))
        served = from_wire(await read_channel_frame(r5, ch))
        for _, w in [*held, (r4, w4), (r5, w5)]:
            w.close()
        await rt.shutdown()
        return greeted, beyond, timed_out, served

    greeted, beyond, timed_out, served = run(go())
    assert all(len(g) == 34 for g in greeted)
    assert beyond == b""
    for t in timed_out:
        assert "HandshakeTimeout" in refusal(t)[0]["error"]
    assert isinstance(served, MetadataResponse) and served.request_id == 9


def test_a_started_frame_that_does_not_finish_in_time_closes_the_connection():
    async def go():
        rt, port = await _server(read_timeout=0.5)
        r, w = await asyncio.open_connection("127.0.0.1", port)
        ch = Channel(KEY, "client", "broker-1", accepting=False)
        await connect_handshake(r, w, ch)
        frame = ch.encode(to_wire(MetadataRequest(1)))
        w.write(frame[:-5])  # everything but the last bytes: the server waits for the rest, not forever
        got = []
        while (obj := await asyncio.wait_for(read_channel_frame(r, ch), 20)) is not None:
            got.append(obj)
        w.close()
        await rt.shutdown()
        return got

    got = run(go())
    assert len(got) == 1 and got[0]["error"].startswith("ReadTimeout")


def test_a_client_hello_for_another_process_is_refused():
    async def go():
        rt, port = await _server()
        r, w = await asyncio.open_connection("127.0.0.1", port)
        ch = Channel(KEY, "client", "broker-2", accepting=False)
        await connect_handshake(r, w, ch)
        got = await _until_closed(r)
        w.close()
        await rt.shutdown()
        return got

    answers = refusal(run(go()))
    assert answers and answers[0]["error"].startswith("WrongDestination")


@pytest.mark.parametrize("length", [struct.unpack(">I", b"\xff\xff\xff\xff")[0], 10**6])
def test_a_client_hello_longer_than_a_hello_is_refused_from_its_header(length):
    async def go():
        rt, port = await _server()
        r, w = await asyncio.open_connection("127.0.0.1", port)
        await r.readexactly(34)
        w.write(struct.pack(">2sBBHIQ", MAGIC, 3, 17, 0, length, 0))
        got = await _until_closed(r)
        w.close()
        await rt.shutdown()
        return got

    answers = refusal(b"IK\x03\x10" + b"\0" * 30 + run(go()))
    assert answers and answers[0]["error"].startswith("MalformedFrame")


def test_the_accept_gate_spends_its_burst_then_waits_for_tokens():
    from isrcheck.impl.wire.gate import AcceptGate

    gate = AcceptGate(rate=1.0, burst=3)
    assert [gate.delay() for _ in range(3)] == [0.0, 0.0, 0.0]  # the burst, at once
    wait = gate.delay()  # shut: about a second until the next token, none spent
    assert 0.5 < wait <= 1.0 and gate.waited == 1
    gate.refund()
    assert gate.delay() == 0.0  # a refunded token is spent again
    with pytest.raises(ValueError):
        AcceptGate(rate=0.0)


def test_a_flood_of_connections_waits_in_the_backlog_while_a_served_client_is_answered():
    """A stranger flood beyond the gate's rate is not accepted (it holds no task, no hello, no log
    line), and a client whose channel was already open is answered while the flood waits."""
    from isrcheck.impl.wire.gate import AcceptGate

    async def go():
        rt, port = await _server(accept_gate=AcceptGate(rate=2.0, burst=2))
        r, w = await asyncio.open_connection("127.0.0.1", port)  # the served client, inside the burst
        ch = Channel(KEY, "client", "broker-1", accepting=False)
        await connect_handshake(r, w, ch)
        flood = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
        loop = asyncio.get_running_loop()
        start = loop.time()
        w.write(ch.encode(to_wire(MetadataRequest(7))))
        served = from_wire(await asyncio.wait_for(read_channel_frame(r, ch), 20))
        await asyncio.sleep(0.5)
        elapsed = loop.time() - start
        greeted = 0
        for fr, _ in flood:  # a hello is what an accepted connection gets first
            try:
                await asyncio.wait_for(fr.readexactly(34), 0.01)
                greeted += 1
            except (asyncio.TimeoutError, asyncio.IncompleteReadError):
                pass
        for _, fw in [*flood, (r, w)]:
            fw.close()
        await rt.shutdown()
        return served, greeted, elapsed, rt.accept_gate.waited

    served, greeted, elapsed, waited = run(go())
    assert isinstance(served, MetadataResponse) and served.request_id == 7
    # one token of the burst went to the client: at most the other and the rate's share since
    assert greeted <= 1 + int(2.0 * (elapsed + 0.5)) + 1 < 20, greeted
    assert waited >= 1


@pytest.mark.parametrize("value, ok", [(50, True), (1, True), (0, False), (-5, False), (True, False), ("50", False)])
def test_the_connection_creation_rate_is_a_checked_setting(value, ok):
    """``max_connection_creation_rate`` (the gate's rate in a broker or controller process): a
    positive integer, or one line naming the key."""
    from isrcheck.impl.core.config import ConfigError, from_mapping

    if ok:
        assert from_mapping({"max_connection_creation_rate": value}).max_connection_creation_rate == value
    else:
        with pytest.raises(ConfigError, match="max_connection_creation_rate"):
            from_mapping({"max_connection_creation_rate": value})
    assert from_mapping({}).max_connection_creation_rate == 50
