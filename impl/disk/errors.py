"""The errors of a broker's disk, kept apart so that the formats and the disk can share them.

A broker that finds a damaged file refuses to start instead of repairing it, because every repair a
broker could make on its own (dropping a record that fails its checksum and everything after it,
reading a changed record as if it were the original) can lose or change an acknowledged write
without a word. The error names the file and the byte offset, and says that nothing was changed:
the operator decides (restore the file, or remove the partition's data so that it is copied again
from the other replicas). Every message is one line, for ``error: ...`` on a process's stderr.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["CorruptFile", "DiskError", "StorageError", "UnsupportedFormat"]


class DiskError(Exception):
    """A disk write or read that cannot be performed; the message is one line."""


class CorruptFile(DiskError):
    """A file whose bytes fail a check: a checksum, a header field, the structure of a record or line."""

    def __init__(self, what: str, path: str | Path, offset: int, detail: str) -> None:
        self.what = what  # "log segment", "HW checkpoint", "leader-epoch checkpoint"
        self.path = str(path)
        self.offset = offset  # the byte where the damaged record, line or header starts
        self.detail = detail
        super().__init__(f"corrupt {what} {self.path} at byte {offset}: {detail}; refusing to start "
                         "(nothing on disk was changed: restore the file, or remove the partition's data "
                         "so that it is copied again from the other replicas)")


class UnsupportedFormat(DiskError):
    """A file in a format this build does not read (an older, unchecksummed one, or an unknown version)."""

    def __init__(self, what: str, path: str | Path, detail: str) -> None:
        self.what = what
        self.path = str(path)
        self.detail = detail
        super().__init__(f"{what} {self.path}: {detail}; refusing to start (nothing on disk was changed)")


class StorageError(DiskError):
    """A write, truncate or fsync the operating system refused (ENOSPC, EIO, ...): a fault, not damage.

    The disk that raises it has already put the file back as it was before the write, when it could
    (a failed append is cut back to its old length), and is **offline** from then on: every later
    operation raises the same error, because after a failed fsync the page cache may no longer say
    what the file holds. The broker takes its log directory offline (specs/05-replication.md,
    "Storage errors") and starts again from what the files hold once a probe write succeeds."""

    def __init__(self, op: str, path: str | Path, error: OSError) -> None:
        self.op = op  # "append", "flush", "truncate", "checkpoint", "epochs", "create", "delete"
        self.path = str(path)
        self.errno = error.errno
        self.reason = error.strerror or str(error)
        super().__init__(f"storage error: {op} of {self.path} failed: {self.reason}"
                         f"{f' (errno {error.errno})' if error.errno else ''}")
