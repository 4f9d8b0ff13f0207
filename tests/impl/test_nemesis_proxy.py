"""The nemesis proxy on loopback echo servers: partition, heal, drop, delay, bounds, loopback only.

No test waits on a wall-clock figure: a fault's effect is observed (a frame does or does not come
back), and the delay test only checks an ordering and a lower bound that the proxy itself imposes.
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from isrcheck.impl.core.messages import MetadataRequest
from isrcheck.impl.process.routes import parse, route
from isrcheck.impl.rigs.nemesis_proxy import (
    FaultLimit,
    Nemesis,
    NemesisError,
    check_loopback,
)
from isrcheck.impl.wire.frame import FrameDecoder, encode_message


class Echo:
    """A loopback TCP server that sends back every byte it receives."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)


@pytest.fixture
def echo() -> Iterator[Echo]:
    e = Echo()
    yield e
    e.sock.close()


@pytest.fixture
def nemesis(echo: Echo) -> Iterator[Nemesis]:
    n = Nemesis(lambda dst: ("127.0.0.1", echo.port), seed=1, max_faults=5, max_fault_seconds=20)
    for src in ("a", "b", "c"):
        n.add_link(src, "srv", framed=True)
    n.add_link("a", "raw", framed=False)
    yield n
    n.close()


FRAME = encode_message(MetadataRequest(7))


def _roundtrip(port: int, payload: bytes = FRAME, timeout: float = 1.0) -> bytes:
    """Send ``payload`` through a fresh connection; what came back (b"" when nothing did)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(payload)
            got = b""
            while len(got) < len(payload):
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
            return got
        except (TimeoutError, ConnectionError):
            return b""


def test_frames_pass_through_and_are_whole(nemesis: Nemesis) -> None:
    got = _roundtrip(nemesis.links[("a", "srv")].port, FRAME * 3)
    assert got == FRAME * 3
    d = FrameDecoder()
    assert len(d.feed(got)) == 3


def test_partition_blocks_only_the_cut_links_and_heal_restores(nemesis: Nemesis) -> None:
    nemesis.partition(["a"], ["srv"], 10)
    assert _roundtrip(nemesis.links[("a", "srv")].port, timeout=0.5) == b""
    assert _roundtrip(nemesis.links[("b", "srv")].port) == FRAME  # b is on neither side
    nemesis.heal()
    assert _roundtrip(nemesis.links[("a", "srv")].port) == FRAME


def test_partition_holds_frames_of_an_open_connection_until_it_heals(nemesis: Nemesis) -> None:
    second = encode_message(MetadataRequest(8))
    with socket.create_connection(("127.0.0.1", nemesis.links[("c", "srv")].port), timeout=0.5) as s:
        s.sendall(FRAME)
        assert s.recv(65536) == FRAME
        nemesis.partition(["srv"], ["c"], 10)
        s.sendall(FRAME)
        with pytest.raises(TimeoutError):
            s.recv(65536)  # nothing crosses the partition
        s.sendall(second)
        nemesis.heal()
        s.settimeout(5)
        got = b""
        while len(got) < len(FRAME) + len(second):
            got += s.recv(65536)
        assert got == FRAME + second  # held, then delivered whole and in order (as TCP retransmits)


def test_raw_link_is_closed_by_a_partition(nemesis: Nemesis) -> None:
    with socket.create_connection(("127.0.0.1", nemesis.links[("a", "raw")].port), timeout=2) as s:
        s.sendall(b"hello")
        assert s.recv(100) == b"hello"
        nemesis.isolate("a", 10)
        s.settimeout(2)
        try:
            assert s.recv(100) == b""  # closed by the proxy (a store session ends)
        except ConnectionError:
            pass
    nemesis.heal()
    assert _roundtrip(nemesis.links[("a", "raw")].port, b"again") == b"again"


def test_drop_with_probability_one_loses_every_frame_and_zero_none(nemesis: Nemesis) -> None:
    port = nemesis.links[("a", "srv")].port
    nemesis.drop("a", "srv", 1.0, 10)
    assert _roundtrip(port, timeout=0.5) == b""
    nemesis.heal()
    nemesis.drop("a", "srv", 0.0, 10)
    assert _roundtrip(port, FRAME * 5) == FRAME * 5
    assert nemesis.links[("a", "srv")].dropped >= 1


def test_delay_holds_frames_back_and_keeps_them_in_order(nemesis: Nemesis) -> None:
    nemesis.delay("b", "srv", 300, 10)
    t = time.monotonic()
    got = _roundtrip(nemesis.links[("b", "srv")].port, FRAME + encode_message(MetadataRequest(8)), timeout=5)
    assert time.monotonic() - t >= 0.3  # each frame was held back 300 ms in the proxy
    assert got == FRAME + encode_message(MetadataRequest(8))


def test_faults_are_bounded_in_count_and_duration(nemesis: Nemesis) -> None:
    with pytest.raises(FaultLimit):
        nemesis.partition(["a"], ["srv"], 21)  # longer than max_fault_seconds
    for _ in range(5):
        nemesis.delay("a", "srv", 1, 1)
    with pytest.raises(FaultLimit):
        nemesis.delay("a", "srv", 1, 1)  # the sixth: more than max_faults


def test_a_fault_heals_by_itself(nemesis: Nemesis) -> None:
    nemesis.partition(["a"], ["srv"], 0.2)
    deadline = time.monotonic() + 5
    while _roundtrip(nemesis.links[("a", "srv")].port, timeout=0.3) != FRAME:
        assert time.monotonic() < deadline, "the partition never healed"


def test_bad_controls_are_refused(nemesis: Nemesis) -> None:
    with pytest.raises(NemesisError):
        nemesis.partition(["a"], ["nobody"], 1)
    with pytest.raises(NemesisError):
        nemesis.partition(["a"], ["a", "srv"], 1)
    with pytest.raises(NemesisError):
        nemesis.drop("a", "srv", 1.5, 1)


@pytest.mark.parametrize("host", ["10.0.0.1", "192.168.1.2", "8.8.8.8", "example.com", "0.0.0.0", "::"])
def test_non_loopback_addresses_are_refused(host: str) -> None:
    with pytest.raises(NemesisError):
        check_loopback(host)
    with pytest.raises(NemesisError):
        Nemesis(lambda dst: None, host=host)


def test_a_non_loopback_upstream_is_never_connected(echo: Echo) -> None:
    n = Nemesis(lambda dst: ("10.255.255.1", echo.port))
    try:
        port = n.add_link("a", "b")
        assert _roundtrip(port, timeout=0.5) == b""
    finally:
        n.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "localhost"])
def test_loopback_addresses_are_accepted(host: str) -> None:
    assert check_loopback(host) == host


def test_routes_refuse_non_loopback_and_default_to_the_registered_address() -> None:
    assert parse('{"broker-2": ["127.0.0.1", 4000]}') == {"broker-2": ("127.0.0.1", 4000)}
    with pytest.raises(ValueError):
        parse('{"broker-2": ["10.0.0.1", 4000]}')
    with pytest.raises(ValueError):
        parse('{"broker-2": ["127.0.0.1", 0]}')
    assert route("broker-9", ("127.0.0.1", 9)) == ("127.0.0.1", 9)  # no $ISRCHECK_ROUTES in tests
