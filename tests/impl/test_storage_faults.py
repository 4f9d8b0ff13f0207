"""Storage errors are faults, not crashes (issue 30, item 1): a write the system refuses (ENOSPC, EIO)
leaves the log as it was before the write, takes the disk offline, and nothing of the failed step
is acknowledged; the broker starts again from its files once the directory takes writes.

Faults are injected in the disk layer (``os.write`` / ``os.fsync`` / ``os.ftruncate`` as the module
calls them) and, when the test runs as root, made real with a small tmpfs mounted by the test."""
from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from isrcheck.impl.core.broker import STORAGE_ERROR, BrokerCore
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.messages import (LeaderAndIsr, Persist, ProduceRequest, ProduceResponse, Receive,
                                         Record, Send)
from isrcheck.impl.disk import log as disk_log
from isrcheck.impl.disk.errors import StorageError
from isrcheck.impl.disk.log import CHECKPOINT_FILE, FileDisk
from isrcheck.impl.process.runtime import Runtime


def recs(*ids: int) -> tuple[Record, ...]:
    return tuple(Record(i, 1, f"v{i}") for i in ids)


def seg_bytes(d: Path, p: int = 0) -> bytes:
    return (d / str(p) / disk_log.SEGMENT_FILE).read_bytes()


class Refuse:
    """``os.write`` that writes ``partial`` bytes of the next call, then refuses with ``code``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, code: int, partial: int = 0) -> None:
        self.real = os.write
        self.code, self.partial, self.armed = code, partial, True
        monkeypatch.setattr(disk_log.os, "write", self)

    def __call__(self, fd: int, data: bytes) -> int:
        if not self.armed:
            return self.real(fd, data)
        if self.partial:
            n, self.partial = self.real(fd, bytes(data[:self.partial])), 0
            return n
        raise OSError(self.code, os.strerror(self.code))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
@pytest.mark.parametrize("partial", [0, 7, 40])
def test_a_refused_append_leaves_the_log_as_before_and_the_disk_offline(tmp_path, monkeypatch, code, partial):
    disk = FileDisk(tmp_path)
    disk.apply(Persist("create", 0))
    disk.apply(Persist("append", 0, recs(1, 2)))
    before = seg_bytes(tmp_path)
    Refuse(monkeypatch, code, partial)
    with pytest.raises(StorageError) as err:
        disk.apply(Persist("append", 0, recs(3, 4)))
    assert err.value.errno == code and err.value.op == "append"
    assert seg_bytes(tmp_path) == before  # the partial write was cut back
    assert len(disk._offsets[0]) == 2  # the offsets did not run ahead of the file
    with pytest.raises(StorageError):  # offline: no later write is tried (nor appended behind a tear)
        disk.apply(Persist("append", 0, recs(5)))
    monkeypatch.undo()
    again = FileDisk(tmp_path).image()
    assert [r.id for r in again.logs[0]] == [1, 2]


def test_a_failed_cut_back_leaves_a_tail_that_only_a_never_acknowledged_record_made(tmp_path, monkeypatch):
    disk = FileDisk(tmp_path)
    disk.apply(Persist("append", 0, recs(1, 2)))
    Refuse(monkeypatch, errno.EIO, partial=20)

    def no_truncate(fd: int, n: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(disk_log.os, "ftruncate", no_truncate)
    with pytest.raises(StorageError):
        disk.apply(Persist("append", 0, recs(3)))
    with pytest.raises(StorageError):
        disk.apply(Persist("append", 0, recs(4)))  # never written behind the torn record
    monkeypatch.undo()
    assert [r.id for r in FileDisk(tmp_path).image().logs[0]] == [1, 2]  # the tear (record 3) is cut


def test_a_failed_fsync_takes_the_disk_offline(tmp_path, monkeypatch):
    disk = FileDisk(tmp_path)
    disk.apply(Persist("append", 0, recs(1)))

    def eio(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(disk_log.os, "fsync", eio)
    with pytest.raises(StorageError) as err:
        disk.apply(Persist("flush", 0))
    assert err.value.op == "flush"
    monkeypatch.undo()
    with pytest.raises(StorageError):  # a failed fsync is not retried as if the page cache were known
        disk.apply(Persist("flush", 0))


def test_a_refused_checkpoint_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    disk = FileDisk(tmp_path)
    disk.apply(Persist("append", 0, recs(1, 2)))
    disk.apply(Persist("checkpoint", 0, 1))
    old = (tmp_path / CHECKPOINT_FILE).read_bytes()
    real_fsync = os.fsync

    def enospc(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(disk_log.checkpoint_format.os, "fsync", enospc)
    with pytest.raises(StorageError) as err:
        disk.apply(Persist("checkpoint", 0, 2))
    assert err.value.op == "checkpoint"
    assert disk.checkpoints == {0: 1}  # memory agrees with the file
    assert (tmp_path / CHECKPOINT_FILE).read_bytes() == old
    assert not list(tmp_path.glob("*.tmp"))
    monkeypatch.setattr(disk_log.checkpoint_format.os, "fsync", real_fsync)
    assert FileDisk(tmp_path).image().checkpoints == {0: 1}


# ---------------------------------------------------------------------------- the broker's step
def leader_core() -> BrokerCore:
    core = BrokerCore(from_mapping({"brokers": 3, "min_insync_replicas": 1}), 1)
    core.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1,), 1, 0, (1, 2, 3))))
    return core


class FailingDisk:
    """A disk whose appends the system refuses."""

    def __init__(self) -> None:
        self.done: list[Persist] = []

    def apply(self, op: Persist) -> None:
        if op.kind == "append":
            raise StorageError("append", "/x/0/seg", OSError(errno.ENOSPC, "No space left on device"))
        self.done.append(op)


def test_a_step_whose_append_failed_acknowledges_nothing_and_stops_the_broker():
    core = leader_core()
    rt = Runtime(core, store=None, disk=FailingDisk(), feed_now=True, name="broker-1")  # type: ignore[arg-type]
    sent: list[Send] = []
    rt.on_effect = lambda e: sent.append(e) if isinstance(e, Send) else None
    # alone in its ISR with min ISR 1, the core acknowledges the produce in the very step of the append
    assert any(isinstance(e, Send) and isinstance(e.msg, ProduceResponse) and e.msg.error == ""
               for e in leader_core().handle(Receive(("conn", 7), ProduceRequest(5, 0, 42, "x")), 0))
    rt.feed(Receive(("conn", 7), ProduceRequest(5, 0, 42, "x")))
    answers = [e.msg for e in sent if isinstance(e.msg, ProduceResponse)]
    assert answers == [ProduceResponse(5, 0, STORAGE_ERROR)]
    assert rt.stopped.is_set() and rt.storage_error is not None
    rt.feed(Receive(("conn", 7), ProduceRequest(6, 0, 43, "y")))  # a stopped broker takes nothing more
    assert [e.msg for e in sent if isinstance(e.msg, ProduceResponse)] == answers


def test_the_client_retries_a_storage_error():
    from isrcheck.impl.process.client import RETRIABLE
    assert STORAGE_ERROR in RETRIABLE


# ---------------------------------------------------------------------------- a real full filesystem
@pytest.fixture
def small_fs(tmp_path):
    """A 256 KiB tmpfs mounted by the test (root only), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True,
                         text=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_filesystem_loses_no_written_record_and_the_disk_comes_back(small_fs):
    disk = FileDisk(small_fs / "data")
    written: list[int] = []
    with pytest.raises(StorageError) as err:
        for i in range(100_000):
            disk.apply(Persist("append", 0, recs(i)))
            written.append(i)
            if i % 50 == 0:
                disk.apply(Persist("flush", 0))
                disk.apply(Persist("checkpoint", 0, len(written)))
    assert err.value.errno == errno.ENOSPC
    assert FileDisk(small_fs / "data").image().logs[0] == list(recs(*written))
    assert FileDisk(small_fs / "data").probe() is not None  # still full
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_fs)], check=True)
    back = FileDisk(small_fs / "data")
    assert back.probe() is None
    image = back.image()
    assert image.logs[0] == list(recs(*written))
    back.apply(Persist("append", 0, recs(-1)))
    assert [r.id for r in FileDisk(small_fs / "data").image().logs[0]] == [*written, -1]


def test_a_refused_truncation_keeps_offsets_and_file_in_agreement(tmp_path, monkeypatch):
    disk = FileDisk(tmp_path)
    disk.apply(Persist("append", 0, recs(1, 2, 3)))
    before = seg_bytes(tmp_path)

    def eio(fd: int, n: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(disk_log.os, "ftruncate", eio)
    with pytest.raises(StorageError) as err:
        disk.apply(Persist("truncate", 0, 1))
    assert err.value.op == "truncate"
    assert seg_bytes(tmp_path) == before and len(disk._offsets[0]) == 3
    monkeypatch.undo()
    assert [r.id for r in FileDisk(tmp_path).image().logs[0]] == [1, 2, 3]


def test_a_refused_leader_epoch_checkpoint_keeps_the_old_file(tmp_path, monkeypatch):
    disk = FileDisk(tmp_path)
    disk.apply(Persist("append", 0, recs(1, 2)))
    disk.apply(Persist("epochs", 0, ((1, 0),)))

    def enospc(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(disk_log.checkpoint_format.os, "fsync", enospc)
    with pytest.raises(StorageError) as err:
        disk.apply(Persist("epochs", 0, ((1, 0), (2, 1))))
    assert err.value.op == "epochs"
    monkeypatch.undo()
    assert FileDisk(tmp_path).image().epochs[0] == [(1, 0)]
    assert not list((tmp_path / "0").glob("*.tmp"))


def test_a_refused_segment_creation_leaves_no_half_open_segment(tmp_path, monkeypatch):
    disk = FileDisk(tmp_path)
    Refuse(monkeypatch, errno.ENOSPC)
    with pytest.raises(StorageError) as err:
        disk.apply(Persist("create", 0))
    assert err.value.op == "create" and disk._files == {}
    monkeypatch.undo()
    assert FileDisk(tmp_path).image().logs[0] == []  # an empty segment: given its header at start-up
