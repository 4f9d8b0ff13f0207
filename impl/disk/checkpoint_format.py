"""The on-disk format of the checkpoint files (format version 1): text lines ending in a CRC32C line.

Two files use it: ``replication-offset-checkpoint`` (one ``<partition> <hw>`` line per partition)
and ``<p>/leader-epoch-checkpoint`` (one ``<epoch> <start offset>`` line per cache entry)::

    1                      the format version
    2                      how many entry lines follow
    0 0
    3 10
    crc32c 5f1d2e3a        CRC32C of every byte before this line, 8 lowercase hex digits

Why a checksum although the files are replaced atomically (:func:`write_atomically`: a temporary
file, fsync, rename, fsync of the directory): the rename keeps a crash from leaving half a file,
but not a disk or a stray write from changing a byte of a whole one, and a changed HW or epoch
start is read as a valid number. A checkpoint is therefore never repaired: any file that fails
its checks (including one cut short, which the atomic replacement rules out as a crash's trace) is
refused with :class:`~.errors.CorruptFile`, naming the file and the byte offset of the
offending line. A file in the earlier format (Kafka's text format: version ``0``, a count, the
entries, no checksum) is refused with :class:`~.errors.UnsupportedFormat`.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import crc32c

from .errors import CorruptFile, UnsupportedFormat

__all__ = ["FORMAT_VERSION", "decode", "encode", "write_atomically"]

FORMAT_VERSION = 1
_CRC_LINE = re.compile(rb"crc32c ([0-9a-f]{8})")
_ENTRY = re.compile(r"(0|[1-9][0-9]*) (0|[1-9][0-9]*)")
_COUNT = re.compile(r"0|[1-9][0-9]*")


def encode(entries: Sequence[tuple[int, int]]) -> bytes:
    """The file's bytes for ``entries`` (pairs of non-negative integers)."""
    body = f"{FORMAT_VERSION}\n{len(entries)}\n" + "".join(f"{a} {b}\n" for a, b in entries)
    data = body.encode("ascii")
    return data + f"crc32c {crc32c.crc32c(data):08x}\n".encode("ascii")


def decode(what: str, path: str | Path, data: bytes) -> list[tuple[int, int]]:
    """The entries of checkpoint ``data`` (the bytes of ``path``), or raise; ``what`` names the file's role."""
    body_end = data.rfind(b"\n", 0, len(data) - 1) + 1 if data.endswith(b"\n") else -1
    m = _CRC_LINE.fullmatch(data[body_end:-1]) if body_end >= 0 else None
    if m is None:
        if data.startswith(b"0\n") and b"crc32c" not in data:
            raise UnsupportedFormat(what, path, "written in format 0 (Kafka's text format without a checksum, by "
                                                "an earlier isrcheck), which cannot be verified and is not read")
        where = max(body_end, 0) if data.endswith(b"\n") else len(data)
        raise CorruptFile(what, path, where, "no checksum line at the end (a cut or damaged file)")
    stored = int(m.group(1), 16)
    computed = crc32c.crc32c(data[:body_end])
    if stored != computed:
        raise CorruptFile(what, path, body_end, f"checksum mismatch (stored 0x{stored:08x}, computed "
                                                f"0x{computed:08x} over bytes 0-{body_end - 1})")
    # the checksum holds: what follows can fail only for a file this build did not write
    lines = data[:body_end].decode("ascii", errors="replace").split("\n")[:-1]
    if not lines or lines[0] != str(FORMAT_VERSION):
        raise UnsupportedFormat(what, path, f"format version {lines[0] if lines else '?'!r} is not one this "
                                            f"build reads (it reads version {FORMAT_VERSION})")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    if len(lines) < 2 or not _COUNT.fullmatch(lines[1]) or int(lines[1]) != len(lines) - 2:
        raise CorruptFile(what, path, starts[1] if len(lines) > 1 else 0, "the entry count does not match the lines")
    out: list[tuple[int, int]] = []
    for i, line in enumerate(lines[2:], start=2):
        e = _ENTRY.fullmatch(line)
        if e is None:
            raise CorruptFile(what, path, starts[i], f"line {i + 1} is not two non-negative integers")
        out.append((int(e.group(1)), int(e.group(2))))
    return out


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: a whole old file or a whole new one survives any crash. When the
    system refuses a step (ENOSPC, EIO: ``OSError``) the temporary file is removed, so a full disk is
    not made fuller, the old file stays as it was, and the error goes up to the caller."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # the first error is the one to report
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself reaches the disk
    finally:
        os.close(fd)
