"""The wire format of the real cluster: length-prefixed, versioned frames.

A frame is a 10-byte header followed by a payload::

    offset  size  field
    0       2     magic     b"IK"
    2       1     version   1
    3       1     type      1 = JSON object (UTF-8)
    4       2     reserved  0
    6       4     length    payload length in bytes, big-endian, at most ``max_payload``

:class:`FrameDecoder` is sans-IO: feed it bytes, take out complete frames. It raises a
:class:`FrameError` subclass — :class:`BadMagic`, :class:`UnsupportedVersion`, :class:`UnknownType`,
:class:`Oversized`, :class:`Malformed` — at the first byte it cannot accept; after that the stream is
out of step and the connection must be closed (the server answers with one error frame first).
A frame whose JSON is fine but which is not a message the receiver knows is refused one level up,
without closing the connection (:func:`decode_message`).
"""
from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

from .messages import MessageError, from_wire, to_wire

MAGIC = b"IK"
VERSION = 1
TYPE_JSON = 1
HEADER = struct.Struct(">2sBBHI")
HEADER_SIZE = HEADER.size  # 10
DEFAULT_MAX_PAYLOAD = 4 * 1024 * 1024


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


def encode_frame(obj: Any, max_payload: int = DEFAULT_MAX_PAYLOAD) -> bytes:
    payload = json.dumps(obj, separators=(",", ":")).encode()
    if len(payload) > max_payload:
        raise Oversized(f"frame payload of {len(payload)} bytes exceeds the limit of {max_payload}")
    return HEADER.pack(MAGIC, VERSION, TYPE_JSON, 0, len(payload)) + payload


def encode_message(msg: Any, max_payload: int = DEFAULT_MAX_PAYLOAD) -> bytes:
    return encode_frame(to_wire(msg), max_payload)


def decode_message(obj: Any) -> Any:
    """A message from a decoded frame; :class:`~.messages.MessageError` if it is not one."""
    return from_wire(obj)


def check_header(header: bytes, max_payload: int = DEFAULT_MAX_PAYLOAD) -> int:
    """Validate a frame header; returns the payload length."""
    magic, version, ftype, reserved, length = HEADER.unpack(header)
    if magic != MAGIC:
        raise BadMagic(f"bad magic {magic!r} (expected {MAGIC!r}): not an isrcheck frame")
    if version != VERSION:
        raise UnsupportedVersion(f"frame version {version} is not supported (this side speaks {VERSION})")
    if ftype != TYPE_JSON:
        raise UnknownType(f"unknown frame type {ftype}")
    if reserved != 0:
        raise Malformed(f"reserved header bytes must be 0, got {reserved}")
    if length > max_payload:
        raise Oversized(f"frame payload of {length} bytes exceeds the limit of {max_payload}")
    return length


def decode_payload(payload: bytes) -> Any:
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise Malformed(f"payload is not UTF-8 JSON: {e}") from None
    if not isinstance(obj, dict):
        raise Malformed("payload must be a JSON object")
    return obj


class FrameDecoder:
    """Incremental decoder: ``feed(bytes)`` then ``frames()`` (raises FrameError on bad input)."""

    def __init__(self, max_payload: int = DEFAULT_MAX_PAYLOAD) -> None:
        self.max_payload = max_payload
        self._buf = bytearray()
        self._need: int | None = None
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
                    self._need = check_header(bytes(self._buf[:HEADER_SIZE]), self.max_payload)
                    del self._buf[:HEADER_SIZE]
                if len(self._buf) < self._need:
                    break
                payload = bytes(self._buf[: self._need])
                del self._buf[: self._need]
                self._need = None
                out.append(decode_payload(payload))
        except FrameError as e:
            self.failed = e
            raise
        return out


async def read_frame(reader: asyncio.StreamReader, max_payload: int = DEFAULT_MAX_PAYLOAD) -> Any | None:
    """The next frame's JSON object from a stream; None at a clean end of stream."""
    try:
        header = await reader.readexactly(HEADER_SIZE)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        if e.partial[:2] != MAGIC[: len(e.partial[:2])]:
            raise BadMagic(f"bad magic {e.partial[:2]!r} (expected {MAGIC!r}): not an isrcheck frame") from None
        raise Malformed(f"truncated frame header ({len(e.partial)} of {HEADER_SIZE} bytes)") from None
    length = check_header(header, max_payload)
    try:
        payload = await reader.readexactly(length)
    except asyncio.IncompleteReadError as e:
        raise Malformed(f"truncated frame payload ({len(e.partial)} of {length} bytes)") from None
    return decode_payload(payload)


__all__ = ["FrameError", "BadMagic", "UnsupportedVersion", "UnknownType", "Oversized", "Malformed",
           "FrameDecoder", "encode_frame", "encode_message", "decode_message", "read_frame", "check_header",
           "MessageError", "MAGIC", "VERSION", "HEADER_SIZE", "DEFAULT_MAX_PAYLOAD"]
