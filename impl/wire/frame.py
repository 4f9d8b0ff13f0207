"""The wire format of the real cluster: length-prefixed, versioned frames, authenticated by a MAC.

A frame is a 10-byte header, in version 2 a 32-byte tag, then a payload::

    offset  size  field
    0       2     magic     b"IK"
    2       1     version   1 = plain, 2 = authenticated (a tag follows the header)
    3       1     type      1 = JSON object (UTF-8)
    4       2     reserved  0
    6       4     length    payload length in bytes, big-endian, at most ``max_payload``
    10      32    tag       version 2 only: HMAC-SHA256(cluster secret, header + payload)
    10/42   length payload

A side that holds the cluster secret (:mod:`.auth`) sends only version 2 and accepts only version 2
frames whose tag it recomputes (``hmac.compare_digest``); a side without one speaks version 1 and
refuses version 2 (it cannot check the tag). The tag is checked before the payload is looked at, so a
peer without the secret reaches neither the JSON parser nor the core.

Limits, checked before the JSON parser runs: the length (``max_payload``, 4 MiB by default) from the
header alone, and the nesting depth of arrays and objects (``max_depth``, 32 by default; the deepest
message is 4) by a linear scan of the payload (:func:`json_depth_exceeds`). Without the depth limit a
payload nested a thousand deep makes ``json.loads`` raise RecursionError, which used to drop the
connection with a 130 KB traceback in the log.

:class:`FrameDecoder` is sans-IO: feed it bytes, take out complete frames. It raises a
:class:`FrameError` subclass — :class:`BadMagic`, :class:`UnsupportedVersion`, :class:`UnknownType`,
:class:`Oversized`, :class:`Unauthenticated`, :class:`TooDeep`, :class:`Malformed` — at the first byte
it cannot accept; after that the stream is out of step (or the peer is not trusted) and the connection
must be closed (the server answers with one error frame first). A frame whose JSON is fine but which
is not a message the receiver knows is refused one level up, without closing the connection
(:func:`decode_message`).
"""
from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

from ..core.messages import MessageError, from_wire, to_wire
from .auth import MAC_SIZE, mac, verify

MAGIC = b"IK"
VERSION = 1  # a plain frame (no cluster secret)
VERSION_AUTH = 2  # a frame with an HMAC-SHA256 tag between header and payload
TYPE_JSON = 1
HEADER = struct.Struct(">2sBBHI")
HEADER_SIZE = HEADER.size  # 10
DEFAULT_MAX_PAYLOAD = 4 * 1024 * 1024
DEFAULT_MAX_DEPTH = 32


class FrameError(ValueError):
    """A byte stream that is not a valid frame; the connection is out of step."""

    code = "MalformedFrame"


class BadMagic(FrameError):
    code = "BadMagic"


class UnsupportedVersion(FrameError):
    code = "UnsupportedVersion"


class UnknownType(FrameError):
    code = "UnknownFrameType"


class Oversized(FrameError):
    code = "FrameTooLarge"


class Malformed(FrameError):
    code = "MalformedFrame"


class Unauthenticated(FrameError):
    """A frame without a tag where one is required, with a wrong tag, or with a tag this side cannot check."""

    code = "Unauthenticated"


class TooDeep(FrameError):
    code = "FrameTooDeep"


def encode_frame(obj: Any, max_payload: int = DEFAULT_MAX_PAYLOAD, *, secret: bytes | None = None) -> bytes:
    """A frame carrying ``obj``: version 2 with its tag when ``secret`` is given, version 1 otherwise."""
    payload = json.dumps(obj, separators=(",", ":")).encode()
    if len(payload) > max_payload:
        raise Oversized(f"frame payload of {len(payload)} bytes exceeds the limit of {max_payload}")
    if secret is None:
        return HEADER.pack(MAGIC, VERSION, TYPE_JSON, 0, len(payload)) + payload
    header = HEADER.pack(MAGIC, VERSION_AUTH, TYPE_JSON, 0, len(payload))
    return header + mac(secret, header, payload) + payload


def encode_message(msg: Any, max_payload: int = DEFAULT_MAX_PAYLOAD, *, secret: bytes | None = None) -> bytes:
    return encode_frame(to_wire(msg), max_payload, secret=secret)


def decode_message(obj: Any) -> Any:
    """A message from a decoded frame; :class:`~isrcheck.impl.core.messages.MessageError` if it is not one."""
    return from_wire(obj)


def check_header(header: bytes, max_payload: int = DEFAULT_MAX_PAYLOAD, authenticated: bool = False) -> int:
    """Validate a frame header; returns the length of the body that follows (the tag, if any, and the
    payload). ``authenticated``: this side holds the secret, so only version 2 is acceptable."""
    magic, version, ftype, reserved, length = HEADER.unpack(header)
    if magic != MAGIC:
        raise BadMagic(f"bad magic {magic!r} (expected {MAGIC!r}): not an isrcheck frame")
    if version == 3:
        raise Unauthenticated("the peer speaks authenticated connections (frame version 3, impl.wire.channel)"
                              + ("" if authenticated else "; this side has no cluster secret"))
    if version not in (VERSION, VERSION_AUTH):
        raise UnsupportedVersion(f"frame version {version} is not supported (this side speaks "
                                 f"{VERSION_AUTH if authenticated else VERSION})")
    if authenticated and version != VERSION_AUTH:
        raise Unauthenticated("a frame without a MAC: this cluster accepts only authenticated frames (version 2)")
    if not authenticated and version == VERSION_AUTH:
        raise Unauthenticated("an authenticated frame (version 2), but this side has no cluster secret to check it")
    if ftype != TYPE_JSON:
        raise UnknownType(f"unknown frame type {ftype}")
    if reserved != 0:
        raise Malformed(f"reserved header bytes must be 0, got {reserved}")
    if length > max_payload:
        raise Oversized(f"frame payload of {length} bytes exceeds the limit of {max_payload}")
    return length + (MAC_SIZE if authenticated else 0)


def open_body(header: bytes, body: bytes, secret: bytes | None, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """The JSON object of a frame whose header passed :func:`check_header`: the tag is checked first
    (when ``secret`` is given), then the depth, then the JSON."""
    if secret is not None:
        tag, payload = body[:MAC_SIZE], body[MAC_SIZE:]
        if not verify(secret, tag, header, payload):
            raise Unauthenticated("bad MAC: the frame was not sent by a holder of the cluster secret")
    else:
        payload = body
    return decode_payload(payload, max_depth)


_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")


def _outside_strings(payload: bytes) -> bytes:
    """The bytes of ``payload`` outside its JSON string literals. Escaped backslashes, then escaped
    quotes are dropped (in valid JSON a backslash occurs only in a string and starts a two-character
    escape, so dropping ``\\\\`` pairs from the left keeps the escapes in step); every quote left is a
    delimiter, and splitting at them puts the strings' insides at the odd positions. Five C-level
    passes; about twice as fast as a regular expression over the strings."""
    return b"".join(payload.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])


def json_depth_exceeds(payload: bytes, limit: int) -> bool:
    """Whether the arrays and objects of ``payload`` nest deeper than ``limit`` (a scan, no parsing).

    String literals are cut out, then only the brackets are kept (both kinds as ``[``/``]``: depth
    does not care which). The count of openings bounds the depth, which settles small frames at once;
    otherwise the brackets are walked in blocks of ``limit // 2``: a block whose openings cannot take
    the depth over the limit is settled by one ``count``, and only the others are walked bracket by
    bracket. Linear in the payload, with most of the work in C. For text that is not JSON the answer
    does not matter: the parser refuses it anyway (and its own recursion guard stops it; a
    RecursionError is a malformed frame)."""
    s = _outside_strings(payload).translate(_AS_SQUARE, _NOT_BRACKETS)
    if s.count(b"[") <= limit:
        return False
    step = max(1, limit // 2)
    depth = 0
    for i in range(0, len(s), step):
        block = s[i:i + step]
        opens = block.count(b"[")
        if depth + opens <= limit:
            depth += 2 * opens - len(block)
            continue
        for c in block:
            if c == 0x5B:  # "["
                depth += 1
                if depth > limit:
                    return True
            else:
                depth -= 1
    return False


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_payload(payload: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """The JSON object of a payload; :class:`TooDeep` or :class:`Malformed` (never another exception:
    a RecursionError or an integer too long to parse is a malformed frame, not a crash)."""
    if json_depth_exceeds(payload, max_depth):
        raise TooDeep(f"payload nests deeper than {max_depth} levels")
    try:
        obj = json.loads(payload.decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise Malformed(f"payload is not UTF-8 JSON: {str(e)[:120]}") from None
    if not isinstance(obj, dict):
        raise Malformed("payload must be a JSON object")
    return obj


class FrameDecoder:
    """Incremental decoder: ``feed(bytes)`` returns the complete frames' objects (raises FrameError on
    bad input, and again on every later call)."""

    def __init__(self, max_payload: int = DEFAULT_MAX_PAYLOAD, *, secret: bytes | None = None,
                 max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.max_payload = max_payload
        self.secret = secret
        self.max_depth = max_depth
        self._buf = bytearray()
        self._need: int | None = None
        self._header = b""
        self.failed: FrameError | None = None

    def feed(self, data: bytes) -> list[Any]:
        if self.failed is not None:
            raise self.failed
        self._buf.extend(data)
        out = []
        try:
            while True:
                if self._need is None:
                    if len(self._buf) < HEADER_SIZE:
                        # fail fast on a wrong magic or version without waiting for a whole header
                        if len(self._buf) >= 2 and bytes(self._buf[:2]) != MAGIC:
                            raise BadMagic(f"bad magic {bytes(self._buf[:2])!r} (expected {MAGIC!r}): "
                                           "not an isrcheck frame")
                        break
                    self._header = bytes(self._buf[:HEADER_SIZE])
                    self._need = check_header(self._header, self.max_payload, self.secret is not None)
                    del self._buf[:HEADER_SIZE]
                if len(self._buf) < self._need:
                    break
                body = bytes(self._buf[: self._need])
                del self._buf[: self._need]
                self._need = None
                out.append(open_body(self._header, body, self.secret, self.max_depth))
        except FrameError as e:
            self.failed = e
            raise
        return out


async def read_frame(reader: asyncio.StreamReader, max_payload: int = DEFAULT_MAX_PAYLOAD, *,
                     secret: bytes | None = None, max_depth: int = DEFAULT_MAX_DEPTH) -> Any | None:
    """The next frame's JSON object from a stream; None at a clean end of stream. The body is read
    only after the header passed (an unauthenticated or oversized frame is refused from its header)."""
    try:
        header = await reader.readexactly(HEADER_SIZE)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        if e.partial[:2] != MAGIC[: len(e.partial[:2])]:
            raise BadMagic(f"bad magic {e.partial[:2]!r} (expected {MAGIC!r}): not an isrcheck frame") from None
        raise Malformed(f"truncated frame header ({len(e.partial)} of {HEADER_SIZE} bytes)") from None
    length = check_header(header, max_payload, secret is not None)
    try:
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError as e:
        raise Malformed(f"truncated frame body ({len(e.partial)} of {length} bytes)") from None
    return open_body(header, body, secret, max_depth)


__all__ = ["FrameError", "BadMagic", "UnsupportedVersion", "UnknownType", "Oversized", "Malformed",
           "Unauthenticated", "TooDeep", "FrameDecoder", "encode_frame", "encode_message", "decode_message",
           "read_frame", "check_header", "open_body", "decode_payload", "json_depth_exceeds", "MessageError",
           "MAGIC", "VERSION", "VERSION_AUTH", "HEADER_SIZE", "DEFAULT_MAX_PAYLOAD", "DEFAULT_MAX_DEPTH"]
