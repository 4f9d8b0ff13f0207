"""The on-disk format of a log segment (format version 2): a file header, then checksummed records.

Why a checksum on every record: without one, a flipped byte either makes a record unreadable
(and recovery, taking it for a torn write, silently cuts it and every later record) or, worse,
keeps it readable with another value. Each record carries a CRC32C of its payload, as Kafka's
record batches do, and a second CRC32C of its length and that checksum, so that a damaged length
is told from a short write (a wrong length could otherwise point past the end of the file and look
exactly like a torn tail).

Layout (integers big-endian)::

    file header    "IKLG"  u16 version (2)  u16 flags (0)                       8 bytes
    each record    u32 length  u32 crc32c(payload)  u32 crc32c(the 8 bytes before)   12 bytes
                   payload: ASCII JSON {"offset": o, "id": i, "epoch": e, "value": v}

``offset`` is the record's position in the log (0, 1, ...): a record that is whole and correct
but in the wrong place (a copied block) is refused too.

:func:`scan` reads a whole file and decides (impl/README.md, "Checksummed logs and checkpoints"):

- the file ends inside a record (fewer than 12 header bytes left, or a header whose own checksum
  holds but whose payload runs past the end of the file): a **torn tail**, the trace of a crash in
  the middle of an append; it is cut off (:attr:`Scan.end`);
- the file is empty or ends inside the file header: a segment created by a crash-interrupted
  ``create``; it is rewritten as an empty segment;
- anything else that fails a check — a header or payload checksum, a payload that is not a record,
  an offset out of sequence, the file header's magic, version or flags — is **corruption**, at any
  position including the last complete record: :class:`~.errors.CorruptFile` names the file,
  the record's number and its byte offset, and nothing is changed;
- a file in the earlier format (JSON lines without a header or checksums, version 1) is refused with
  :class:`~.errors.UnsupportedFormat`; a file header whose version field holds anything but 2 is
  damage (no build writes another), refused with :class:`~.errors.CorruptFile` at byte 4.
"""
from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import crc32c

from ..core.messages import Record
from .errors import CorruptFile, UnsupportedFormat

__all__ = ["FILE_HEADER", "FORMAT_VERSION", "MAGIC", "RECORD_HEADER", "Scan", "encode_records", "file_header",
           "scan"]

MAGIC = b"IKLG"
FORMAT_VERSION = 2
FILE_HEADER = struct.Struct(">4sHH")  # magic, version, flags
RECORD_HEADER = struct.Struct(">III")  # payload length, crc32c(payload), crc32c(the first 8 header bytes)
WHAT = "log segment"
_HEAD = struct.Struct(">II")  # the checked part of a record header
_U32 = struct.Struct(">I")


def file_header() -> bytes:
    return FILE_HEADER.pack(MAGIC, FORMAT_VERSION, 0)


# built once (json.dumps with options builds one per call); ASCII, so that any str (a lone surrogate
# included) is encodable
_ENCODER = json.JSONEncoder(separators=(",", ":"))
_DECODER = json.JSONDecoder()


def _payload(offset: int, r: Record) -> bytes:
    return _ENCODER.encode({"offset": offset, "id": r.id, "epoch": r.epoch, "value": r.value}).encode()


def encode_records(first_offset: int, records: Iterable[Record]) -> tuple[bytes, list[int]]:
    """The bytes of ``records`` appended at log offset ``first_offset`` on, and where each starts in them."""
    parts: list[bytes] = []
    starts: list[int] = []
    pos = 0
    for i, r in enumerate(records):
        payload = _payload(first_offset + i, r)
        head = _HEAD.pack(len(payload), crc32c.crc32c(payload))
        rec = head + _U32.pack(crc32c.crc32c(head)) + payload
        starts.append(pos)
        parts.append(rec)
        pos += len(rec)
    return b"".join(parts), starts


@dataclass(frozen=True)
class Scan:
    """What a segment file holds: its complete records, where each starts, and what recovery must do."""

    records: tuple[Record, ...]
    positions: tuple[int, ...]  # the byte offset of each record
    end: int  # the length of the file's valid part (the file header and the complete records)
    header_missing: bool  # empty, or a torn file header: write a fresh one (the log is empty)
    torn_bytes: int  # the length of the torn tail that is cut off (0: none)


def _check_file_header(path: Path, data: bytes) -> bool:
    """True if the header is whole and right, False if the file is empty or a prefix of a header."""
    want = file_header()
    if len(data) < len(want) and want.startswith(data):
        return False
    if data[:1] == b"{":
        raise UnsupportedFormat(WHAT, path, "written in format 1 (JSON lines without checksums, by an earlier "
                                            "isrcheck), which cannot be verified and is not read")
    magic, version, flags = FILE_HEADER.unpack_from(data.ljust(FILE_HEADER.size, b"\0"))
    if magic != MAGIC:
        raise CorruptFile(WHAT, path, 0, f"not an isrcheck log segment (magic {magic!r}, expected {MAGIC!r})")
    if len(data) < FILE_HEADER.size:  # the right magic, then a byte no header of ours has
        raise CorruptFile(WHAT, path, 0, "incomplete file header")
    if version != FORMAT_VERSION:
        # version 1 had no file header (it is told by its first byte, above), and no build has written
        # another: a header whose magic holds but whose version is not 2 is a damaged header (or, if a
        # later build ever writes one, a file this build cannot read); either way it is refused
        raise CorruptFile(WHAT, path, 4, f"damaged file header: the version field holds {version}, which no "
                                         f"isrcheck build writes (this build writes and reads version "
                                         f"{FORMAT_VERSION})")
    if flags != 0:
        raise CorruptFile(WHAT, path, 6, f"unknown flags 0x{flags:04x} in the file header")
    return True


def _decode(path: Path, index: int, pos: int, payload: bytes) -> Record:
    try:
        d = _DECODER.decode(payload.decode())
    except ValueError:  # UnicodeDecodeError included
        d = None
    ints = ("offset", "id", "epoch")
    if (not isinstance(d, dict) or set(d) != {*ints, "value"} or not isinstance(d["value"], str)
            or any(isinstance(d[k], bool) or not isinstance(d[k], int) for k in ints)):
        raise CorruptFile(WHAT, path, pos, f"record {index}: the payload is not a record")
    if d["offset"] != index:
        raise CorruptFile(WHAT, path, pos, f"record {index} says it is at offset {d['offset']}")
    return Record(d["id"], d["epoch"], d["value"])


def scan(path: str | Path, data: bytes) -> Scan:
    """Read segment ``data`` (the bytes of the file ``path``), or raise without changing anything."""
    path = Path(path)
    if not _check_file_header(path, data):
        return Scan((), (), 0, True, len(data))
    records: list[Record] = []
    positions: list[int] = []
    pos = FILE_HEADER.size
    size = len(data)
    hsize = RECORD_HEADER.size
    while pos < size:
        index = len(records)
        if size - pos < hsize:
            break  # torn inside a record header
        length, crc, hcrc = RECORD_HEADER.unpack_from(data, pos)
        computed = crc32c.crc32c(data[pos:pos + 8])
        if computed != hcrc:
            raise CorruptFile(WHAT, path, pos, f"record {index}: header checksum mismatch (stored 0x{hcrc:08x}, "
                                               f"computed 0x{computed:08x})")
        if size - pos - hsize < length:
            break  # torn inside the payload
        payload = data[pos + hsize:pos + hsize + length]
        computed = crc32c.crc32c(payload)
        if computed != crc:
            raise CorruptFile(WHAT, path, pos, f"record {index}: checksum mismatch (stored 0x{crc:08x}, "
                                               f"computed 0x{computed:08x})")
        records.append(_decode(path, index, pos, payload))
        positions.append(pos)
        pos += hsize + length
    return Scan(tuple(records), tuple(positions), pos, False, size - pos)

