"""engine/disk.py with engine/checkpoint.py: a ``--disk`` search that is stopped in the middle of a
level (as a SIGKILL stops it: no clean-up, the next level's files half written) and resumed from its
last snapshot gives the in-memory Checker's result field for field, counterexamples included, with a
level's states held in memory or on file; a resume that cannot be honoured (another directory, an
emptied one, a snapshot of the other kind of search) is one sentence. The real kill through the
command line is in tests/cli/test_cli_checkpoint.py."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy")

from isrcheck.engine.checker import Checker  # noqa: E402
from isrcheck.engine.checkpoint import FILE_NAME, MAGIC, Checkpoints, SnapshotError, read_snapshot  # noqa: E402
from isrcheck.engine.disk import DiskChecker, DiskError  # noqa: E402
from isrcheck.peers.kafka_specification import PeerModel  # noqa: E402

from test_disk import gate_model, summary  # noqa: E402

IDENTITY = {"model": "under test"}


class Killed(Exception):
    """Raised from the progress callback: the search stops where it stands, as under SIGKILL."""


def killer(ck: Path, after: int) -> Callable[[Any], None]:
    """A progress callback that raises :class:`Killed` at the ``after``-th report that comes once
    a snapshot is in ``ck``."""
    calls = [0]

    def progress(_: Any) -> None:
        if (ck / FILE_NAME).exists():
            calls[0] += 1
            if calls[0] >= after:
                raise Killed

    return progress


def killed_run(model: Any, disk: Path, ck: Path, after: int, buffer: int, **limits: Any) -> int:
    """Start a checkpointed disk search and stop it at the ``after``-th progress report that comes
    once a snapshot is on disk; the snapshot's level."""
    checker = DiskChecker(model, disk, buffer=buffer, progress=killer(ck, after), progress_every=0.0,
                          checkpoint=Checkpoints(ck, IDENTITY, every=0.0), **limits)
    with pytest.raises(Killed):
        checker.run()
    snap = read_snapshot(ck / FILE_NAME)
    assert snap.disk is not None and snap.pairs == b""
    return snap.disk["level"]


def resumed(model: Any, disk: Path, ck: Path, buffer: int, **limits: Any) -> Any:
    return DiskChecker(model, disk, buffer=buffer, checkpoint=Checkpoints(ck, IDENTITY, every=0.0, resume=True),
                       **limits).run()


@pytest.mark.parametrize("buffer", [0, 40, 1 << 20], ids=["on-file", "mixed", "held"])
def test_a_stopped_disk_search_resumes_to_the_checkers_result(buffer: int, tmp_path: Path) -> None:
    """hw-truncation-one-crash with keep-going: two violations found before the stop, carried by the
    snapshot (their counterexamples replayed from the level files), and the rest found after it."""
    model = gate_model("hw-truncation-one-crash")
    want = Checker(model, stop_on_first=False).run()
    assert len(want.violations) == 2
    level = killed_run(model, tmp_path / "disk", tmp_path / "ck", 2_000, buffer, stop_on_first=False)
    snap = read_snapshot(tmp_path / "ck" / FILE_NAME)
    assert 0 < level < want.depth and snap.violations  # stopped between the violations and the end
    assert snap.disk is not None and len(snap.frontier) == min(buffer, len(snap.frontier) + snap.disk["on_file_candidates"])
    assert (snap.disk["on_file_candidates"] > 0) == (buffer < 1 << 20)
    assert os.path.exists(tmp_path / "disk" / f"L{level + 1:05d}.states")  # the next level half written
    got = resumed(model, tmp_path / "disk", tmp_path / "ck", buffer, stop_on_first=False)
    assert summary(got) == summary(want)
    assert not (tmp_path / "disk").exists()  # a finished run removes its files


def test_a_stopped_peer_search_resumes_under_a_state_cut(tmp_path: Path) -> None:
    """The peer transcription, cut by max_states after the resume: the cut lands where Checker's does."""
    model = PeerModel("kip-320", 2, False)
    want = Checker(model, max_states=5_000).run()
    killed_run(model, tmp_path / "disk", tmp_path / "ck", 50, 16, max_states=5_000)
    got = resumed(model, tmp_path / "disk", tmp_path / "ck", 16, max_states=5_000)
    assert summary(got) == summary(want) and got.limit_hit == "states"


def test_a_resume_without_the_runs_files_is_one_sentence(tmp_path: Path) -> None:
    model = gate_model("clean-election")
    killed_run(model, tmp_path / "disk", tmp_path / "ck", 5, 0)
    with pytest.raises(DiskError, match="holds no disk run"):
        resumed(model, tmp_path / "elsewhere", tmp_path / "ck", 0)
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "disk", copy)
    for f in copy.glob("seen.L*.snap"):
        f.unlink()
    with pytest.raises(DiskError, match=r"does not hold the files of the snapshot .*seen\.L\d{5}\.snap is missing"):
        resumed(model, copy, tmp_path / "ck", 0)
    victim = tmp_path / "disk" / "L00000.fps"
    victim.write_bytes(victim.read_bytes() + b"\0" * 8)
    with pytest.raises(DiskError, match="their sizes differ"):
        resumed(model, tmp_path / "disk", tmp_path / "ck", 0)


def test_damaged_level_files_and_an_earlier_layout_are_one_sentence(tmp_path: Path) -> None:
    """A lengths file that no longer adds up to the states file, marks that are not marks, and a
    snapshot of the earlier layout (the frontier's offsets in its ``on_file`` count) are refused."""
    model = gate_model("clean-election")
    level = killed_run(model, tmp_path / "disk", tmp_path / "ck", 5, 0)
    pristine = tmp_path / "pristine"
    shutil.copytree(tmp_path / "disk", pristine)
    lens = tmp_path / "disk" / f"L{level:05d}.lsnap"
    data = bytearray(lens.read_bytes())
    data[0] ^= 1
    lens.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match="the level's states file is not the lengths of its states"):
        resumed(model, tmp_path / "disk", tmp_path / "ck", 0)
    shutil.rmtree(tmp_path / "disk")
    shutil.copytree(pristine, tmp_path / "disk")
    marks = tmp_path / "disk" / f"L{level:05d}.front"
    marks.write_bytes(b"\x07" + marks.read_bytes()[1:])
    with pytest.raises(SnapshotError, match="its frontier's marks are not of the level's candidates"):
        resumed(model, tmp_path / "disk", tmp_path / "ck", 0)
    path = tmp_path / "ck" / FILE_NAME
    raw = path.read_bytes()
    at = len(MAGIC)
    size = int.from_bytes(raw[at:at + 8], "little")
    header = json.loads(raw[at + 8:at + 8 + size])
    header["disk"]["on_file"] = header["disk"].pop("on_file_candidates")
    text = json.dumps(header).encode()
    path.write_bytes(raw[:at] + len(text).to_bytes(8, "little") + text + raw[at + 8 + size:])
    with pytest.raises(SnapshotError, match="earlier --disk layout .* cannot be resumed by this isrcheck"):
        resumed(model, pristine, tmp_path / "ck", 0)


def test_the_other_kind_of_search_is_refused_in_one_sentence(tmp_path: Path) -> None:
    model = gate_model("clean-election")
    killed_run(model, tmp_path / "disk", tmp_path / "ck", 5, 0)
    with pytest.raises(SnapshotError, match="it is of a --disk search: resume it with --disk DIR"):
        Checker(model, checkpoint=Checkpoints(tmp_path / "ck", IDENTITY, resume=True)).run()
    Checker(model, checkpoint=Checkpoints(tmp_path / "mem", IDENTITY, every=0.0)).run()
    with pytest.raises(SnapshotError, match="it is of a search in memory: resume it without --disk"):
        resumed(model, tmp_path / "disk", tmp_path / "mem", 0)


def test_a_kill_while_a_snapshot_is_written_leaves_the_previous_one_whole(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped after the next snapshot's files were linked and synced but before its file was written:
    the previous snapshot's files are all still there and resuming it gives Checker's result."""
    model = gate_model("hw-truncation-one-crash")
    want = Checker(model, stop_on_first=False).run()
    real_write = Checkpoints.write
    written = [0]

    def write(self: Checkpoints, *args: Any, **kw: Any) -> None:
        if written[0] == 6:
            raise Killed
        written[0] += 1
        real_write(self, *args, **kw)

    monkeypatch.setattr(Checkpoints, "write", write)
    with pytest.raises(Killed):
        DiskChecker(model, tmp_path / "disk", buffer=0, stop_on_first=False,
                    checkpoint=Checkpoints(tmp_path / "ck", IDENTITY, every=0.0)).run()
    monkeypatch.setattr(Checkpoints, "write", real_write)
    level = read_snapshot(tmp_path / "ck" / FILE_NAME).disk["level"]
    links = sorted(f.name for f in (tmp_path / "disk").glob("*.snap"))
    assert links == [f"L{level:05d}.snap", f"L{level + 1:05d}.snap", f"seen.L{level:05d}.snap",
                     f"seen.L{level + 1:05d}.snap"]  # the unwritten snapshot's files, and the last one's
    got = resumed(model, tmp_path / "disk", tmp_path / "ck", 0, stop_on_first=False)
    assert summary(got) == summary(want)


def test_a_run_stopped_by_the_memory_ceiling_keeps_its_files_for_a_resume(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The ceiling is read as past once a snapshot is written: the run reports ``memory``, leaves the
    files its snapshot names, and a resume without the ceiling finishes with Checker's result."""
    import isrcheck.engine.disk as disk_module

    model = gate_model("clean-election")
    want = Checker(model).run()
    ck = tmp_path / "ck"
    monkeypatch.setattr(disk_module, "resident_bytes", lambda: 1 << 40 if (ck / FILE_NAME).exists() else 0)
    stopped = DiskChecker(model, tmp_path / "disk", buffer=0, max_memory=1 << 30,
                          checkpoint=Checkpoints(ck, IDENTITY, every=0.0)).run()
    assert stopped.limit_hit == "memory" and stopped.distinct_states < want.distinct_states
    level = read_snapshot(ck / FILE_NAME).disk["level"]
    assert (tmp_path / "disk" / f"seen.L{level:05d}.snap").exists()
    monkeypatch.undo()
    got = resumed(model, tmp_path / "disk", ck, 0)
    assert summary(got) == summary(want)
