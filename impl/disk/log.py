"""A broker's disk: one log segment per partition, the HW checkpoint file, and one leader-epoch
checkpoint per partition (from ``generation = "kip-101"`` on).

The broker core asks for disk writes as :class:`~isrcheck.impl.core.messages.Persist` effects; a disk performs them
and, at start-up, gives back a :class:`~isrcheck.impl.core.broker.DiskImage`. Two disks share that interface:

- :class:`SimDisk` (the simulator's): each segment has a flushed prefix and an unflushed suffix.
  A process crash (:meth:`SimDisk.crash`) loses nothing — the data sits in the OS page cache — while
  a power loss (:meth:`SimDisk.power_loss`) drops every unflushed suffix, or keeps exactly the
  prefixes it is given (the model's ``LossyCrash``). The checkpoint files are written atomically
  (write, fsync, rename), so they are always whole — and a leader-epoch checkpoint may name epochs
  that start beyond what survived of the log: the broker drops those entries when it restarts
  (:meth:`~isrcheck.impl.core.broker.BrokerCore.recover`), so the cache is "cut to the surviving log".
- :class:`FileDisk` (a real broker process's): ``<dir>/<p>/00000000000000000000.log`` holds the
  records in the checksummed format of :mod:`.segment_format` (a CRC32C per record), ``flush`` is
  ``fsync``; ``replication-offset-checkpoint`` and ``<dir>/<p>/leader-epoch-checkpoint`` are
  rewritten atomically in the checksummed text format of :mod:`.checkpoint_format`. On start-up
  (:meth:`FileDisk.image`) every file is checked before anything is changed: a torn last record (a
  crash in the middle of an append) is cut off; any other damage, anywhere, is refused with an
  error naming the file and the byte offset (:class:`~.errors.CorruptFile`), and so is a file
  in an earlier, unchecksummed format (:class:`~.errors.UnsupportedFormat`).

``Persist("epochs", p, entries)`` replaces partition ``p``'s whole leader-epoch checkpoint.
"""
from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..core.broker import DiskImage
from ..core.messages import Persist, Record
from . import checkpoint_format, segment_format
from .errors import CorruptFile, DiskError, StorageError, UnsupportedFormat

log = logging.getLogger("isrcheck.impl")


@dataclass
class Segment:
    records: list[Record] = field(default_factory=list)
    flushed: int = 0  # how many records have been fsynced

    @property
    def unflushed(self) -> int:
        return len(self.records) - self.flushed


class SimDisk:
    """The simulator's disk (in memory, with flushed and unflushed parts)."""

    def __init__(self) -> None:
        self.segments: dict[int, Segment] = {}
        self.checkpoints: dict[int, int] = {}
        self.epochs: dict[int, tuple[tuple[int, int], ...]] = {}  # the leader-epoch checkpoint files

    def apply(self, op: Persist) -> None:
        kind, p = op.kind, op.partition
        if kind == "create":
            self.segments.setdefault(p, Segment())
        elif kind == "append":
            self.segments.setdefault(p, Segment()).records.extend(op.payload)
        elif kind == "truncate":
            seg = self.segments.setdefault(p, Segment())
            del seg.records[op.payload:]
            seg.flushed = min(seg.flushed, len(seg.records))
        elif kind == "flush":
            seg = self.segments.get(p)
            if seg is not None:
                seg.flushed = len(seg.records)
        elif kind == "checkpoint":
            self.checkpoints[p] = int(op.payload)
        elif kind == "epochs":
            self.epochs[p] = tuple((int(e), int(s)) for e, s in op.payload)
        elif kind == "delete":
            self.segments.pop(p, None)
            self.checkpoints.pop(p, None)
            self.epochs.pop(p, None)
        else:
            raise DiskError(f"unknown disk write {kind!r}")

    def image(self) -> DiskImage:
        return DiskImage({p: list(s.records) for p, s in sorted(self.segments.items())}, dict(self.checkpoints),
                         {p: list(e) for p, e in sorted(self.epochs.items()) if p in self.segments})

    def crash(self) -> None:
        """The broker process dies: the page cache survives, nothing is lost."""

    def power_loss(self, kept: dict[int, int] | None = None) -> None:
        """The machine loses power: unflushed suffixes vanish, or each log keeps ``kept[p]`` records."""
        for p, seg in self.segments.items():
            n = seg.flushed if kept is None else min(kept.get(p, 0), len(seg.records))
            del seg.records[n:]
            seg.flushed = min(seg.flushed, n)

    def hw_on_disk(self, p: int) -> int:
        """The HW a broker restarted now would start from (the checkpoint, cut to the log)."""
        seg = self.segments.get(p)
        return min(self.checkpoints.get(p, 0), len(seg.records) if seg else 0)

    def epochs_on_disk(self, p: int) -> tuple[tuple[int, int], ...]:
        """The leader-epoch checkpoint of ``p`` as written (a restart drops entries beyond the log)."""
        return self.epochs.get(p, ())


CHECKPOINT_FILE = "replication-offset-checkpoint"
SEGMENT_FILE = "00000000000000000000.log"
EPOCH_FILE = "leader-epoch-checkpoint"
PROBE_FILE = ".probe"  # written and removed by FileDisk.probe; not a partition (not a number)
PROBE_BYTES = 256 * 1024
HW_CHECKPOINT = "HW checkpoint"
EPOCH_CHECKPOINT = "leader-epoch checkpoint"


class FileDisk:
    """A real broker's data directory (the formats: :mod:`.segment_format`, :mod:`.checkpoint_format`)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._files: dict[int, int] = {}  # partition -> the segment's file descriptor (O_APPEND)
        self.offline: StorageError | None = None  # set by the first write the system refused
        self._offsets: dict[int, list[int]] = {}  # the byte offset of each record in the segment
        self.checkpoints: dict[int, int] = {}

    def _seg(self, p: int) -> Path:
        return self.dir / str(p) / SEGMENT_FILE

    def _open(self, p: int) -> int:
        """The file descriptor of partition ``p``'s segment, opened for appending (unbuffered: each
        append is one ``os.write`` loop whose outcome is known, not a buffer flushed some time later)."""
        fd = self._files.get(p)
        if fd is None:
            path = self._seg(p)
            path.parent.mkdir(parents=True, exist_ok=True)
            if p not in self._offsets:  # not read by image(): check what is there before appending to it
                found = segment_format.scan(path, path.read_bytes() if path.exists() else b"")
                self._repair(path, found)
                self._offsets[p] = list(found.positions)
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            self._files[p] = fd
            if os.fstat(fd).st_size == 0:
                try:
                    self._write_all(fd, 0, segment_format.file_header())
                except OSError:
                    del self._files[p]
                    os.close(fd)
                    raise
        return fd

    @staticmethod
    def _write_all(fd: int, base: int, data: bytes) -> None:
        """Append ``data`` to a file ``base`` bytes long, wholly or not at all: when the system refuses
        part of it (ENOSPC, EIO) the file is cut back to ``base`` and the error raised. If the cut fails
        too, the tail stays torn; the disk is offline from then on, so nothing is ever appended behind
        it, and start-up recovery cuts it (a record of a step whose write failed was never
        acknowledged: the step's messages are never sent)."""
        view = memoryview(data)
        try:
            while view:
                n = os.write(fd, view)
                view = view[n:]
        except OSError:
            os.ftruncate(fd, base)  # may raise: the caller reports the first error either way
            raise

    def apply(self, op: Persist) -> None:
        """Perform one disk write. A write the system refuses raises :class:`~.errors.StorageError`
        after putting the file back as it was (offsets, memory and file agree), and takes the disk
        offline: every later call raises the same error."""
        if self.offline is not None:
            raise self.offline
        try:
            self._apply(op)
        except OSError as e:
            self.offline = StorageError(op.kind, self._path_of(op), e)
            log.error("%s", self.offline)
            raise self.offline from None

    def _path_of(self, op: Persist) -> Path:
        if op.kind == "checkpoint":
            return self.dir / CHECKPOINT_FILE
        if op.kind == "epochs":
            return self.dir / str(op.partition) / EPOCH_FILE
        if op.kind == "delete":
            return self.dir / str(op.partition)
        return self._seg(op.partition)

    def _apply(self, op: Persist) -> None:
        kind, p = op.kind, op.partition
        if kind == "create":
            self._open(p)
        elif kind == "append":
            fd = self._open(p)
            offsets = self._offsets[p]
            base = os.fstat(fd).st_size
            data, starts = segment_format.encode_records(len(offsets), op.payload)
            self._write_all(fd, base, data)  # the whole batch in one write: a crash tears at most its end
            offsets.extend(base + s for s in starts)  # only once the bytes are in the file
        elif kind == "truncate":
            fd = self._open(p)
            offsets = self._offsets[p]
            n = int(op.payload)
            if n < len(offsets):
                os.ftruncate(fd, offsets[n])
                del offsets[n:]
        elif kind == "flush":
            opened = self._files.get(p)
            if opened is not None:
                os.fsync(opened)
        elif kind == "checkpoint":
            updated = {**self.checkpoints, p: int(op.payload)}
            self._write_checkpoints(updated)
            self.checkpoints = updated
        elif kind == "epochs":
            d = self.dir / str(p)
            d.mkdir(parents=True, exist_ok=True)
            self._write(d / EPOCH_FILE, [(int(e), int(s)) for e, s in op.payload])
        elif kind == "delete":
            closing = self._files.pop(p, None)
            if closing is not None:
                os.close(closing)
            self._offsets.pop(p, None)
            shutil.rmtree(self.dir / str(p), ignore_errors=True)
            if p in self.checkpoints:
                updated = {q: v for q, v in self.checkpoints.items() if q != p}
                self._write_checkpoints(updated)
                self.checkpoints = updated
        else:
            raise DiskError(f"unknown disk write {kind!r}")

    @staticmethod
    def _write(path: Path, entries: list[tuple[int, int]]) -> None:
        if any(a < 0 or b < 0 for a, b in entries):
            raise DiskError(f"{path}: a checkpoint holds non-negative integers, got {entries}")
        checkpoint_format.write_atomically(path, checkpoint_format.encode(entries))

    def _write_checkpoints(self, checkpoints: dict[int, int]) -> None:
        self._write(self.dir / CHECKPOINT_FILE, sorted(checkpoints.items()))

    @staticmethod
    def _repair(path: Path, found: segment_format.Scan) -> None:
        """Cut a torn tail, or give an empty (or half-created) segment its file header."""
        if found.header_missing:
            if path.exists():
                path.write_bytes(segment_format.file_header())
        elif found.torn_bytes:
            log.warning("log segment %s: cut a torn last record (%d bytes from byte %d)", path, found.torn_bytes,
                        found.end)
            with open(path, "r+b") as f:
                f.truncate(found.end)

    def image(self) -> DiskImage:
        """Read and check the whole directory, then cut torn tails and remember the record offsets.

        Raises :class:`~.errors.CorruptFile` or :class:`~.errors.UnsupportedFormat`
        before anything on disk is changed."""
        scans: dict[int, tuple[Path, segment_format.Scan]] = {}
        epochs: dict[int, list[tuple[int, int]]] = {}
        for child in sorted(self.dir.iterdir(), key=lambda c: c.name):
            if not child.is_dir() or not child.name.isdigit():
                continue
            p = int(child.name)
            path = child / SEGMENT_FILE
            scans[p] = (path, segment_format.scan(path, path.read_bytes() if path.exists() else b""))
            cache_path = child / EPOCH_FILE
            if cache_path.exists():
                cache = checkpoint_format.decode(EPOCH_CHECKPOINT, cache_path, cache_path.read_bytes())
                if cache:
                    epochs[p] = cache
        cp = self.dir / CHECKPOINT_FILE
        hw = checkpoint_format.decode(HW_CHECKPOINT, cp, cp.read_bytes()) if cp.exists() else []
        logs: dict[int, list[Record]] = {}
        for p, (path, found) in sorted(scans.items()):
            self._repair(path, found)
            logs[p] = list(found.records)
            self._offsets[p] = list(found.positions)
        self.checkpoints = dict(hw)
        return DiskImage(logs, dict(self.checkpoints), epochs)

    def probe(self, size: int = PROBE_BYTES) -> OSError | None:
        """Whether the directory takes writes again: ``size`` bytes written, fsynced and removed (None),
        or the error the system gave. A broker whose log directory went offline polls this before it
        starts again from its files, so it does not come back only to fail on its first append."""
        path = self.dir / PROBE_FILE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                self._write_all(fd, 0, bytes(size))
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            return e
        finally:
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
        return None

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()


__all__ = ["CHECKPOINT_FILE", "EPOCH_FILE", "SEGMENT_FILE", "CorruptFile", "DiskError", "FileDisk", "Segment",
           "SimDisk", "StorageError", "UnsupportedFormat"]
