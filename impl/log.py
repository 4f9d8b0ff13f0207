"""A broker's disk: one log segment per partition, the HW checkpoint file, and one leader-epoch
checkpoint per partition (from ``generation = "kip-101"`` on).

The broker core asks for disk writes as :class:`~.messages.Persist` effects; a disk performs them
and, at start-up, gives back a :class:`~.broker_core.DiskImage`. Two disks share that interface:

- :class:`SimDisk` (the simulator's): each segment has a flushed prefix and an unflushed suffix.
  A process crash (:meth:`SimDisk.crash`) loses nothing — the data sits in the OS page cache — while
  a power loss (:meth:`SimDisk.power_loss`) drops every unflushed suffix, or keeps exactly the
  prefixes it is given (the model's ``LossyCrash``). The checkpoint files are written atomically
  (write, fsync, rename), so they are always whole — and a leader-epoch checkpoint may name epochs
  that start beyond what survived of the log: the broker drops those entries when it restarts
  (:meth:`~.broker_core.BrokerCore.recover`), so the cache is "cut to the surviving log".
- :class:`FileDisk` (a real broker process's): ``<dir>/<p>/00000000000000000000.log`` holds one JSON
  record per line, ``flush`` is ``fsync``; ``replication-offset-checkpoint`` is rewritten atomically,
  and so is ``<dir>/<p>/leader-epoch-checkpoint`` (Kafka's format: a version line ``0``, a count
  line, then ``<epoch> <start offset>`` per entry). On start-up a torn last line (a crash in the
  middle of a write) is cut off.

``Persist("epochs", p, entries)`` replaces partition ``p``'s whole leader-epoch checkpoint.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .broker_core import DiskImage
from .messages import Persist, Record


@dataclass
class Segment:
    records: list[Record] = field(default_factory=list)
    flushed: int = 0  # how many records have been fsynced

    @property
    def unflushed(self) -> int:
        return len(self.records) - self.flushed


class DiskError(Exception):
    pass


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


class FileDisk:
    """A real broker's data directory."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._files: dict[int, object] = {}
        self._offsets: dict[int, list[int]] = {}  # byte offset of each record's line
        self.checkpoints: dict[int, int] = {}

    def _seg(self, p: int) -> Path:
        return self.dir / str(p) / SEGMENT_FILE

    def _open(self, p: int):
        f = self._files.get(p)
        if f is None:
            path = self._seg(p)
            path.parent.mkdir(parents=True, exist_ok=True)
            f = open(path, "ab+")  # noqa: SIM115 - kept open for the broker's lifetime
            self._files[p] = f
            if p not in self._offsets:
                self._offsets[p] = []
        return f

    def apply(self, op: Persist) -> None:
        kind, p = op.kind, op.partition
        if kind == "create":
            self._open(p)
        elif kind == "append":
            f = self._open(p)
            f.seek(0, os.SEEK_END)
            offsets = self._offsets[p]
            for r in op.payload:
                offsets.append(f.tell())
                f.write((json.dumps({"id": r.id, "epoch": r.epoch, "value": r.value}) + "\n").encode())
            f.flush()  # into the page cache: survives a process crash
        elif kind == "truncate":
            f = self._open(p)
            offsets = self._offsets[p]
            n = int(op.payload)
            if n < len(offsets):
                f.truncate(offsets[n])
                del offsets[n:]
        elif kind == "flush":
            f = self._files.get(p)
            if f is not None:
                os.fsync(f.fileno())
        elif kind == "checkpoint":
            self.checkpoints[p] = int(op.payload)
            self._write_checkpoints()
        elif kind == "epochs":
            self._write_epochs(p, [(int(e), int(s)) for e, s in op.payload])
        elif kind == "delete":
            f = self._files.pop(p, None)
            if f is not None:
                f.close()
            self._offsets.pop(p, None)
            shutil.rmtree(self.dir / str(p), ignore_errors=True)
            if self.checkpoints.pop(p, None) is not None:
                self._write_checkpoints()
        else:
            raise DiskError(f"unknown disk write {kind!r}")

    def _write_epochs(self, p: int, entries: list[tuple[int, int]]) -> None:
        d = self.dir / str(p)
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / (EPOCH_FILE + ".tmp")
        with open(tmp, "w") as f:
            f.write("0\n" + f"{len(entries)}\n" + "".join(f"{e} {s}\n" for e, s in entries))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, d / EPOCH_FILE)

    @staticmethod
    def _read_epochs(path: Path) -> list[tuple[int, int]]:
        if not path.exists():
            return []
        out: list[tuple[int, int]] = []
        for line in path.read_text().split("\n")[2:]:
            parts = line.split()
            if len(parts) == 2 and all(x.lstrip("-").isdigit() for x in parts):
                out.append((int(parts[0]), int(parts[1])))
        return out

    def _write_checkpoints(self) -> None:
        tmp = self.dir / (CHECKPOINT_FILE + ".tmp")
        lines = [f"{p} {hw}" for p, hw in sorted(self.checkpoints.items())]
        with open(tmp, "w") as f:
            f.write("0\n" + f"{len(lines)}\n" + "".join(x + "\n" for x in lines))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.dir / CHECKPOINT_FILE)

    def image(self) -> DiskImage:
        """Read the directory (cutting a torn last record) and remember the record offsets."""
        logs: dict[int, list[Record]] = {}
        epochs: dict[int, list[tuple[int, int]]] = {}
        for child in sorted(self.dir.iterdir()):
            if not child.is_dir() or not child.name.isdigit():
                continue
            p = int(child.name)
            path = child / SEGMENT_FILE
            records: list[Record] = []
            offsets: list[int] = []
            if path.exists():
                data = path.read_bytes()
                pos = 0
                while pos < len(data):
                    end = data.find(b"\n", pos)
                    if end < 0:
                        break
                    try:
                        d = json.loads(data[pos:end])
                        records.append(Record(int(d["id"]), int(d["epoch"]), str(d.get("value", ""))))
                    except (ValueError, KeyError, TypeError):
                        break
                    offsets.append(pos)
                    pos = end + 1
                if pos < len(data):
                    with open(path, "r+b") as f:
                        f.truncate(pos)
            logs[p] = records
            self._offsets[p] = offsets
            cache = self._read_epochs(child / EPOCH_FILE)
            if cache:
                epochs[p] = cache
        self.checkpoints = {}
        cp = self.dir / CHECKPOINT_FILE
        if cp.exists():
            lines = cp.read_text().split("\n")
            for line in lines[2:]:
                parts = line.split()
                if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                    self.checkpoints[int(parts[0])] = int(parts[1])
        return DiskImage(logs, dict(self.checkpoints), epochs)

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()
