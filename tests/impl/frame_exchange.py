"""One raw exchange with a server of the real cluster, below the client library: what the frame
tests (test_frame_auth.py, test_frame_hardening.py) send a port that must refuse it.

Written once because the two files need the same care: a server may refuse a frame from its header
and close the connection while the rest is still being sent, so writing or half-closing may fail
(EPIPE, ECONNRESET, or ENOTCONN from shutdown once the server has closed) and the answer is read all
the same.
"""
from __future__ import annotations

import socket

from isrcheck.impl.wire.frame import FrameDecoder


def exchange(port: int, data: bytes, secret: bytes | None) -> list[dict]:
    """Send ``data`` on a new connection, half-close, and decode every frame of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:  # refused from the header while the rest was still being sent: read the answer
            pass
        reply = b""
        try:
            while chunk := s.recv(65536):
                reply += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    if secret is not None:  # an authenticated server greets with its hello; a refusal is a plain frame
        return refusal(reply)
    return FrameDecoder(secret=secret).feed(reply)


def refusal(reply: bytes) -> list[dict]:
    """The plain error frames a server sent before any handshake finished, after its server hello
    (an accepting side of an authenticated cluster greets every connection with one)."""
    from isrcheck.impl.wire.channel import HEADER_SIZE, VERSION_CHANNEL
    if len(reply) >= HEADER_SIZE and reply[2] == VERSION_CHANNEL:
        reply = reply[HEADER_SIZE + 16:]
    return FrameDecoder().feed(reply)


def connect(port: int, dest: str, secret: bytes, timeout: float = 20):
    """A socket to ``port`` past its handshake, bound to ``dest``, and its channel."""
    from isrcheck.impl.wire.channel import Channel, blocking_handshake
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    ch = Channel(secret, "test-client", dest, accepting=False)
    blocking_handshake(s, ch)
    return s, ch


def read_until(s: socket.socket, ch, count: int) -> list[dict]:
    """``count`` data frames from an established connection."""
    got: list[dict] = []
    while len(got) < count:
        data = s.recv(65536)
        if not data:
            break
        got += ch.feed(data)
    return got


class Insider:
    """Bytes an insider (a holder of the cluster secret) sends on a connection it opened properly:
    ``payload`` in one data frame of the channel, cut to ``cut`` bytes if given. What reaches the
    parser of a cluster that accepts only authenticated connections."""

    def __init__(self, payload: bytes, cut: int | None = None) -> None:
        self.payload, self.cut = payload, cut

    def __getitem__(self, part: slice) -> "Insider":
        return Insider(self.payload, part.stop)

    def __bool__(self) -> bool:
        return self.cut is None or self.cut > 0


def insider_exchange(port: int, dest: str, secret: bytes, data: Insider) -> list[dict]:
    """Send ``data`` on a connection past its handshake, half-close, decode every answer frame."""
    s, ch = connect(port, dest, secret)
    with s:
        frame = ch.encode_payload(data.payload)
        try:
            s.sendall(frame[:data.cut] if data.cut is not None else frame)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        reply = b""
        try:
            while chunk := s.recv(65536):
                reply += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return ch.feed(reply)
