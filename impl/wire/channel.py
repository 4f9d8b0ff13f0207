"""Authenticated connections that cannot be replayed: a handshake, a key per connection, sequenced frames.

Why: a frame with a MAC of the cluster secret alone (frame version 2) is valid forever and
anywhere. A captured ``StopReplica(delete)`` sent again to its broker deleted the replica; a
captured produce sent again appended the record twice (issue 30). Here every connection has its
own key, drawn from two fresh nonces, and every frame its place in the connection:

1. **Server hello** (the accepting side, at once): ``header(type 16, length 16) + Ns``, 16 random
   bytes. Not authenticated: it is a challenge.
2. **Client hello** (the connecting side, after reading the server hello):
   ``header(type 17, length n) + Nc(16) + sender + NUL + destination + tag``, the names in UTF-8
   (at most 64 bytes each), tag = HMAC-SHA256(secret, "isrcheck-hello" + Ns + the payload).
   The acceptor checks the tag, and that the destination is its own name, before it reads
   anything more. The connection's key is then
   ``K = HMAC-SHA256(secret, "isrcheck-conn" + Ns + Nc + sender + NUL + destination)``.
3. **Data frames**, both ways, keyed with ``K``::

       offset  size  field
       0       2     magic "IK"
       2       1     version 3
       3       1     type 1 = JSON object
       4       2     reserved 0
       6       4     length of the payload, at most max_payload
       10      8     sequence: 1, 2, 3, ... in each direction
       18      16    header tag: HMAC-SHA256(K, direction + bytes 0-17), first 16 bytes
       34      n     payload (JSON, checked as in frame version 1/2)
       34+n    32    payload tag: HMAC-SHA256(K, direction + bytes 0-17 + payload)

   ``direction`` is ``b"c"`` from the connecting side, ``b"s"`` from the accepting one, so a frame
   cannot be reflected back to its sender. A receiver accepts only a sequence number above the last
   one it accepted (strictly increasing: a frame a nemesis dropped leaves a gap, which is fine; one
   sent again or out of order is refused).

What this buys (the threat model is in impl/README.md, "Frames that cannot be replayed"): a frame
replayed on its own connection has a used sequence number; on any other connection, or towards
another process, the key differs and the tags fail; the header is authenticated before the body is
read, so a peer without the secret makes the receiver hold at most one header (it cannot declare a
4 MiB body); a hello is at most 190 bytes. Sender and destination are names under the MAC, not
identities proven by separate keys: every holder of the cluster secret can still speak as any
process (one secret per cluster, as before).

:class:`Channel` is sans-IO: ``feed(bytes)`` returns the data frames' objects; ``outgoing()`` takes the
handshake bytes it has to send. Drivers: :mod:`isrcheck.impl.process.runtime` (asyncio, with
timeouts) and the blocking clients (:mod:`isrcheck.impl.process.client`,
:mod:`isrcheck.impl.store.remote`).
"""
from __future__ import annotations

import asyncio
import hmac
import json
import os
import struct
from typing import Any

from .frame import (DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAYLOAD, MAGIC, BadMagic, FrameError, Malformed, Oversized,
                    Unauthenticated, UnknownType, UnsupportedVersion, decode_payload)

VERSION_CHANNEL = 3
TYPE_JSON = 1
TYPE_SERVER_HELLO = 16
TYPE_CLIENT_HELLO = 17
HEADER = struct.Struct(">2sBBHIQ")  # magic, version, type, reserved, length, sequence
HEADER_SIZE = HEADER.size  # 18
HEADER_TAG = 16
PAYLOAD_TAG = 32
NONCE = 16
MAX_NAME = 64
MAX_HELLO = NONCE + 2 * MAX_NAME + 1  # the longest client hello payload
HELLO_LABEL = b"isrcheck-hello"
KEY_LABEL = b"isrcheck-conn"

__all__ = ["Channel", "Replayed", "WrongDestination", "HEADER_SIZE", "VERSION_CHANNEL", "MAX_HELLO",
           "HANDSHAKE_TIMEOUT", "READ_TIMEOUT", "read_channel_frame", "accept_handshake", "connect_handshake",
           "blocking_handshake"]


class Replayed(FrameError):
    """A frame whose sequence number is not the next one: sent again, reordered or dropped."""

    code = "Replayed"


class WrongDestination(FrameError):
    """A client hello addressed to another process than the one that received it."""

    code = "WrongDestination"


def _mac(key: bytes, data: bytes) -> bytes:
    return hmac.digest(key, data, "sha256")


def _check_name(name: str) -> bytes:
    raw = name.encode()
    if not raw or len(raw) > MAX_NAME or b"\0" in raw:
        raise ValueError(f"a connection end's name must be 1-{MAX_NAME} bytes without NUL, got {name!r}")
    return raw


class Channel:
    """One end of an authenticated connection (see the module's description).

    ``accepting``: this side accepted the connection (it sends the server hello, checks the client
    hello's destination against ``local``). Otherwise it connected to ``peer``, sends its client
    hello once the server hello arrived, and may encode frames from then on."""

    def __init__(self, secret: bytes, local: str, peer: str = "", *, accepting: bool,
                 max_payload: int = DEFAULT_MAX_PAYLOAD, max_depth: int = DEFAULT_MAX_DEPTH,
                 nonce: bytes | None = None) -> None:
        self.secret = secret
        self.local = _check_name(local)
        self.peer = _check_name(peer) if peer else b""
        self.accepting = accepting
        self.max_payload = max_payload
        self.max_depth = max_depth
        self._key: bytes | None = None
        self._send_dir, self._recv_dir = (b"s", b"c") if accepting else (b"c", b"s")
        self._sent = 0
        self._received = 0
        self._buf = bytearray()
        self._out = bytearray()
        self._head: bytes | None = None  # an authenticated data-frame header whose body is awaited
        self.failed: FrameError | None = None
        # ``nonce``: this side's hello nonce given, not drawn (only to rebuild either end of a captured
        # connection in replay tests; a side that reused a nonce would accept that connection's replay)
        self._server_nonce = (nonce or os.urandom(NONCE)) if accepting else b""
        self._client_nonce = b"" if accepting else (nonce or b"")
        if accepting:
            self._out += HEADER.pack(MAGIC, VERSION_CHANNEL, TYPE_SERVER_HELLO, 0, NONCE, 0) + self._server_nonce

    # ------------------------------------------------------------------ state
    @property
    def established(self) -> bool:
        """The key is known: frames may be encoded, and data frames are accepted."""
        return self._key is not None

    @property
    def remote_name(self) -> str:
        return self.peer.decode()

    def outgoing(self) -> bytes:
        """The handshake bytes this side must send now (taken once)."""
        out, self._out = bytes(self._out), bytearray()
        return out

    def need(self) -> int:
        """How many more bytes complete the unit being read (a header, a hello, a body): a driver reads
        exactly that much, so a body is read only after its header was authenticated."""
        if self._head is not None:
            length = HEADER.unpack(self._head)[4]
            return max(1, length + PAYLOAD_TAG - len(self._buf))
        if self._key is None and len(self._buf) < 4:
            return 4 - len(self._buf)  # magic, version, type first: a stranger is refused early
        if len(self._buf) < HEADER_SIZE:
            return HEADER_SIZE - len(self._buf)
        return max(1, self._unit_size() - len(self._buf))

    # ------------------------------------------------------------------ sending
    def encode(self, obj: Any) -> bytes:
        """A data frame carrying ``obj`` (``Oversized`` beyond ``max_payload``); only once established."""
        return self.encode_payload(json.dumps(obj, separators=(",", ":")).encode())

    def encode_payload(self, payload: bytes) -> bytes:
        """A data frame around payload bytes as they are (the receiver checks them as JSON)."""
        if self._key is None:
            raise Unauthenticated("the connection's handshake is not finished")
        if len(payload) > self.max_payload:
            raise Oversized(f"frame payload of {len(payload)} bytes exceeds the limit of {self.max_payload}")
        self._sent += 1
        head = HEADER.pack(MAGIC, VERSION_CHANNEL, TYPE_JSON, 0, len(payload), self._sent)
        return (head + _mac(self._key, self._send_dir + head)[:HEADER_TAG] + payload
                + _mac(self._key, self._send_dir + head + payload))

    # ------------------------------------------------------------------ receiving
    def feed(self, data: bytes) -> list[Any]:
        """The data frames' objects completed by ``data``; ``FrameError`` (for good) at the first
        byte this side does not accept."""
        if self.failed is not None:
            raise self.failed
        self._buf.extend(data)
        out: list[Any] = []
        try:
            while True:
                got = self._step()
                if got is None:
                    break
                if got is not _HANDSHAKE:
                    out.append(got)
        except FrameError as e:
            self.failed = e
            raise
        return out

    def _unit_size(self) -> int:
        """The size of the unit whose 18-byte header starts the buffer (checked)."""
        magic, version, ftype, reserved, length, seq = HEADER.unpack_from(self._buf)
        if magic != MAGIC:
            raise BadMagic(f"bad magic {magic!r} (expected {MAGIC!r}): not an isrcheck frame")
        if self._key is None and (version != VERSION_CHANNEL or ftype not in (TYPE_SERVER_HELLO, TYPE_CLIENT_HELLO)):
            raise Unauthenticated(f"a frame (version {version}, type {ftype}) before the connection's handshake: "
                                  "this side accepts only authenticated connections")
        if version != VERSION_CHANNEL:
            raise UnsupportedVersion(f"frame version {version}: this connection speaks only version "
                                     f"{VERSION_CHANNEL} (a handshake, then sequenced frames)")
        if reserved != 0:
            raise Malformed(f"reserved header bytes must be 0, got {reserved}")
        if self._key is None:
            want = TYPE_CLIENT_HELLO if self.accepting else TYPE_SERVER_HELLO
            if ftype != want:
                raise Unauthenticated(f"frame type {ftype} before the handshake (expected the "
                                      f"{'client' if self.accepting else 'server'} hello)")
            if seq != 0:
                raise Malformed("a hello carries sequence 0")
            if self.accepting and not NONCE + 3 <= length <= MAX_HELLO:
                raise Malformed(f"a client hello of {length} bytes")
            if not self.accepting and length != NONCE:
                raise Malformed(f"a server hello of {length} bytes")
            return HEADER_SIZE + length + (PAYLOAD_TAG if self.accepting else 0)
        if ftype != TYPE_JSON:
            raise UnknownType(f"unknown frame type {ftype}")
        return HEADER_SIZE + HEADER_TAG

    def _step(self) -> Any:
        """Consume one unit from the buffer if it is complete: None if more bytes are needed."""
        if self._head is None:
            if len(self._buf) < 2:
                return None
            if bytes(self._buf[:2]) != MAGIC:
                raise BadMagic(f"bad magic {bytes(self._buf[:2])!r} (expected {MAGIC!r}): not an isrcheck frame")
            if (self._key is None and len(self._buf) >= 4
                    and (self._buf[2] != VERSION_CHANNEL or self._buf[3] not in (TYPE_SERVER_HELLO, TYPE_CLIENT_HELLO))):
                raise Unauthenticated(f"a frame (version {self._buf[2]}, type {self._buf[3]}) before the connection's "
                                      "handshake: this side accepts only authenticated connections")
            if len(self._buf) < HEADER_SIZE:
                return None
            size = self._unit_size()
            if len(self._buf) < size:
                return None
            unit = bytes(self._buf[:size])
            del self._buf[:size]
            if self._key is None:
                self._hello(unit)
                return _HANDSHAKE
            head, tag = unit[:HEADER_SIZE], unit[HEADER_SIZE:]
            if not hmac.compare_digest(tag, _mac(self._key, self._recv_dir + head)[:HEADER_TAG]):
                raise Unauthenticated("bad header MAC: not a frame of this connection (a replay from "
                                      "another connection, or a sender without the cluster secret)")
            length, seq = HEADER.unpack(head)[4:]
            if seq <= self._received:
                raise Replayed(f"frame sequence {seq}, not above {self._received}: a replayed or "
                               "reordered frame")
            if length > self.max_payload:
                raise Oversized(f"frame payload of {length} bytes exceeds the limit of {self.max_payload}")
            self._head = head
        head = self._head
        length = HEADER.unpack(head)[4]
        if len(self._buf) < length + PAYLOAD_TAG:
            return None
        payload = bytes(self._buf[:length])
        tag = bytes(self._buf[length:length + PAYLOAD_TAG])
        del self._buf[:length + PAYLOAD_TAG]
        self._head = None
        assert self._key is not None
        if not hmac.compare_digest(tag, _mac(self._key, self._recv_dir + head + payload)):
            raise Unauthenticated("bad MAC: the frame's payload was changed or not sent by a holder of "
                                  "the cluster secret")
        self._received = HEADER.unpack(head)[5]
        return decode_payload(payload, self.max_depth)

    def _hello(self, unit: bytes) -> None:
        payload = unit[HEADER_SIZE:HEADER_SIZE + HEADER.unpack_from(unit)[4]]
        if not self.accepting:  # the server hello: answer with ours and derive the key
            client_nonce = self._client_nonce or os.urandom(NONCE)
            body = client_nonce + self.local + b"\0" + self.peer
            self._out += (HEADER.pack(MAGIC, VERSION_CHANNEL, TYPE_CLIENT_HELLO, 0, len(body), 0) + body
                          + _mac(self.secret, HELLO_LABEL + payload + body))
            self._key = _mac(self.secret, KEY_LABEL + payload + body)
            return
        tag = unit[HEADER_SIZE + len(payload):]
        if not hmac.compare_digest(tag, _mac(self.secret, HELLO_LABEL + self._server_nonce + payload)):
            raise Unauthenticated("bad hello MAC: the peer does not hold the cluster secret")
        names = payload[NONCE:].split(b"\0")
        if len(names) != 2 or not names[0] or not names[1]:
            raise Malformed("a client hello names its sender and its destination")
        sender, dest = names
        if dest != self.local:
            raise WrongDestination(f"a connection for {dest.decode(errors='replace')!r} reached "
                                   f"{self.local.decode()!r}")
        self.peer = sender
        self._key = _mac(self.secret, KEY_LABEL + self._server_nonce + payload)


_HANDSHAKE = object()  # what _step returns for a handshake unit (no object for the caller)


# ---------------------------------------------------------------------------- asyncio drivers
HANDSHAKE_TIMEOUT = 5.0  # seconds for a peer to finish its hello after connecting
READ_TIMEOUT = 10.0  # seconds for the rest of a frame once its first byte arrived


async def read_channel_frame(reader: Any, ch: Channel, timeout: float = READ_TIMEOUT) -> Any | None:
    """The next data frame's object from an asyncio stream; None at a clean end of stream.

    Reads exactly the bytes of the unit under way (:meth:`Channel.need`), so a body is read only
    after its header was authenticated. Waiting for a frame to start is unbounded (an idle
    connection, a long-polled fetch); once it started, the rest must arrive within ``timeout``
    seconds (``asyncio.TimeoutError``), so a peer that sends one byte a second is closed."""
    started = False
    while True:
        n = ch.need()
        try:
            data = (await asyncio.wait_for(reader.readexactly(n), timeout) if started
                    else await reader.readexactly(n))
        except asyncio.IncompleteReadError as e:
            if not started and not e.partial:
                return None
            raise Malformed(f"truncated frame ({len(e.partial)} of {n} bytes)") from None
        if not started:
            started = True
        got = ch.feed(data)
        if got:
            return got[0]


async def accept_handshake(reader: Any, writer: Any, ch: Channel, timeout: float = HANDSHAKE_TIMEOUT) -> None:
    """The accepting side's handshake: send the server hello, read and check the client hello, all
    within ``timeout`` seconds (``asyncio.TimeoutError``); ``FrameError`` if the hello is refused."""

    async def run() -> None:
        writer.write(ch.outgoing())
        await writer.drain()
        while not ch.established:
            try:
                ch.feed(await reader.readexactly(ch.need()))
            except asyncio.IncompleteReadError as e:
                raise Malformed(f"the connection ended in its handshake ({len(e.partial)} bytes)") from None

    await asyncio.wait_for(run(), timeout)


async def connect_handshake(reader: Any, writer: Any, ch: Channel, timeout: float = HANDSHAKE_TIMEOUT) -> None:
    """The connecting side's handshake: read the server hello, send the client hello."""

    async def run() -> None:
        while not ch.established:
            try:
                ch.feed(await reader.readexactly(ch.need()))
            except asyncio.IncompleteReadError as e:
                raise Malformed(f"the connection ended in its handshake ({len(e.partial)} bytes)") from None
        writer.write(ch.outgoing())
        await writer.drain()

    await asyncio.wait_for(run(), timeout)


def blocking_handshake(sock: Any, ch: Channel) -> None:
    """The connecting side's handshake on a blocking socket (its timeout applies to each read)."""
    while not ch.established:
        data = sock.recv(ch.need())
        if not data:
            raise Malformed("the server closed the connection in its handshake")
        ch.feed(data)
    sock.sendall(ch.outgoing())
