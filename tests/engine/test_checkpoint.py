"""engine/checkpoint.py: the snapshot format on its own (the kill-and-resume runs are in
tests/cli/test_cli_checkpoint.py). A snapshot whose digest is right but whose content is not a
search's (a forged file) is refused too: the frontier is decoded by the validating state codec and
checked against the parent map, and nothing of the file is ever evaluated.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from isrcheck.engine.checker import Checker
from isrcheck.engine.checkpoint import (FILE_NAME, MAGIC, Checkpoints, SnapshotError, absorb_pairs,
                                        identity_difference, pairs_of, read_snapshot)
from isrcheck.engine.parentmap import new_parent_map
from isrcheck.inputs import targets
from isrcheck.invariants import build_model


def model_of(name: str):  # type: ignore[no-untyped-def]
    t = targets.resolve(name, None, [])
    return build_model(t.config, symmetry=t.symmetry)


def test_pairs_round_trip_through_both_parent_maps() -> None:
    entries = {5: None, 7: 5, 0: 7, -3: 7, 2**63 - 1: -3, -(2**63): None}
    for source in ({}, new_parent_map()):
        for fp, parent in entries.items():
            source[fp] = parent
        raw = pairs_of(source)
        assert len(raw) == 16 * len(entries)
        for target in ({}, new_parent_map()):
            absorb_pairs(target, raw)
            assert len(target) == len(entries)
            assert {fp: target[fp] for fp in entries} == entries


def test_identity_difference_names_the_setting() -> None:
    a = {"model": "m", "configuration": {"faults": {"crashes": 1}, "brokers": 3}}
    assert identity_difference(a, a) is None
    b = {"model": "m", "configuration": {"faults": {"crashes": 2}, "brokers": 3}}
    assert identity_difference(a, b) == "its configuration differs (faults.crashes: 1 in the snapshot, 2 here)"
    assert "model differs" in (identity_difference(a, {**a, "model": "n"}) or "")
    v = {"variant": {"name": "v.py:V", "sha256": "1"}}
    assert identity_difference(v, {"variant": {"name": "v.py:V", "sha256": "2"}}) == \
        "its variant's file changed since the snapshot was written (v.py:V)"
    assert identity_difference(v, {"variant": None}) == "its variant differs (v.py:V in the snapshot, none here)"


def complete_run(tmp_path: Path) -> Checkpoints:
    ck = Checkpoints(tmp_path, {"model": "replication"}, every=0)
    result = Checker(model_of("replication"), checkpoint=ck).run()
    assert result.outcome == "success" and ck.written > 0
    return ck


def forge(path: Path, mutate) -> None:  # type: ignore[no-untyped-def]
    """Rewrite the snapshot with ``mutate(header, body) -> body``, the digest made right again."""
    data = path.read_bytes()
    size = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
    start = len(MAGIC) + 8
    header = json.loads(data[start:start + size])
    body = mutate(header, bytearray(data[start + size:]))
    header["sha256"] = hashlib.sha256(body).hexdigest()
    head = json.dumps(header).encode()
    path.write_bytes(MAGIC + len(head).to_bytes(8, "little") + head + bytes(body))


def resume(tmp_path: Path) -> None:
    Checker(model_of("replication"), checkpoint=Checkpoints(tmp_path, {"model": "replication"}, resume=True)).run()


def test_a_forged_frontier_state_is_refused(tmp_path: Path) -> None:
    ck = complete_run(tmp_path)

    def garble(header, body):  # type: ignore[no-untyped-def]
        at = header["sections"]["pairs"] + header["sections"]["lengths"]
        body[at] ^= 0xFF  # the first frontier state's first byte: its codec header
        return body

    forge(ck.path, garble)
    with pytest.raises(SnapshotError, match="damaged .a frontier state does not decode"):
        resume(tmp_path)


def test_a_forged_parent_map_is_refused(tmp_path: Path) -> None:
    ck = complete_run(tmp_path)

    def forget(header, body):  # type: ignore[no-untyped-def]
        body[:16 * header["states"]] = bytes(16 * header["states"])  # every pair (0, 0)
        return body

    forge(ck.path, forget)
    with pytest.raises(SnapshotError, match="not in its parent map"):
        resume(tmp_path)


def test_a_header_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    ck = complete_run(tmp_path)

    def bad_counts(header, body):  # type: ignore[no-untyped-def]
        header["counts"] = {"Write": "many"}
        return body

    forge(ck.path, bad_counts)
    with pytest.raises(SnapshotError, match="damaged .its header"):
        read_snapshot(ck.path)


@pytest.mark.parametrize("directory", ["/some/where", 7, ""])
def test_a_disk_directory_is_only_a_disk_searchs_and_a_path(tmp_path: Path, directory: Any) -> None:
    """A snapshot names a --disk directory only beside a --disk search's table, and as a non-empty
    path; a memory search's snapshot naming one (or a directory that is not a string) is damaged."""
    ck = complete_run(tmp_path)
    assert read_snapshot(ck.path).disk_directory is None

    def name_it(header, body):  # type: ignore[no-untyped-def]
        header["disk_directory"] = directory
        return body

    forge(ck.path, name_it)
    with pytest.raises(SnapshotError, match="damaged .its header: disk_directory"):
        read_snapshot(ck.path)


def test_the_disk_directory_is_read_from_the_header_alone(tmp_path: Path) -> None:
    """``--resume`` asks the snapshot for its --disk directory before the resume reads it: only the
    header is read (a body that does not match its digest does not matter there), and a search in
    memory's snapshot names none."""
    from isrcheck.engine.checkpoint import snapshot_disk_directory

    ck = complete_run(tmp_path)
    assert snapshot_disk_directory(tmp_path) is None

    def as_disk(header, body):  # type: ignore[no-untyped-def]
        header["disk"] = {"level": 1, "seen": 0, "on_file_candidates": 0, "candidates": 0, "disk_peak": 0}
        header["disk_directory"] = "/runs/d"
        return body

    forge(ck.path, as_disk)
    data = bytearray(ck.path.read_bytes())
    data[-1] ^= 0xFF  # the body no longer matches its digest
    ck.path.write_bytes(bytes(data))
    assert snapshot_disk_directory(tmp_path) == "/runs/d"
    with pytest.raises(SnapshotError, match="SHA-256"):
        read_snapshot(ck.path)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / ck.path.name).write_bytes(b"not a snapshot at all")
    with pytest.raises(SnapshotError, match="not an isrcheck snapshot"):
        snapshot_disk_directory(tmp_path / "other")


def test_the_snapshot_is_written_atomically(tmp_path: Path) -> None:
    ck = complete_run(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE_NAME]  # no temporary file left behind
    assert read_snapshot(ck.path).identity["model"] == "replication"
