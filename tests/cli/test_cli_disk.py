"""``check --disk DIR`` (issue 32 item 3): the same JSON and exit status as the in-memory check (only
the time differs), a ``disk:`` line on stderr, the files removed unless ``--keep-disk``; and what it
cannot honour refused in one ``error:`` line with exit status 2, before any search.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


pytest.importorskip("numpy")

FACTS = ("outcome", "distinct_states", "depth", "transitions", "violations", "coverage", "unwitnessed", "limit_hit",
         "exit_status")


def facts(out: str) -> dict:
    d = json.loads(out)
    return {k: d[k] for k in FACTS}


@pytest.mark.parametrize("args", [["hw-truncation-one-crash"], ["unclean-election", "--keep-going"],
                                  ["clean-election", "--max-states", "700"], ["clean-election", "--max-depth", "6"],
                                  ["--peer", "kip-320", "--max-states", "3000"]])
def test_the_same_result_as_in_memory(cli, tmp_path: Path, args: list[str]) -> None:
    want = cli("check", *args, "--json")
    got = cli("check", *args, "--json", "--disk", str(tmp_path / "d"))
    assert got.exit_code == want.exit_code, got.stderr
    assert facts(got.stdout) == facts(want.stdout)
    assert "disk: " in got.stderr and "removed from" in got.stderr
    assert not (tmp_path / "d").exists()


def test_keep_disk_leaves_the_files(cli, tmp_path: Path) -> None:
    d = tmp_path / "d"
    r = cli("check", "replication", "--disk", str(d), "--keep-disk")
    assert r.exit_code == 0, r.stderr
    assert "kept in" in r.stderr
    names = set(os.listdir(d))
    assert {"isrcheck-disk.json", "seen.i64", "L00001.fps", "L00001.parents"} <= names
    r = cli("check", "replication", "--disk", str(d))  # a previous run's directory: cleared and used
    assert r.exit_code == 0, r.stderr
    assert os.listdir(d) == []


def test_pinned_liveness_is_left_out_with_a_note(cli, tmp_path: Path) -> None:
    r = cli("check", "replication", "--disk", str(tmp_path / "d"), "--json")
    assert r.exit_code == 0
    assert "note: --disk checks the safety properties only" in r.stderr
    assert json.loads(r.stdout).get("liveness") is None


@pytest.mark.parametrize("extra,fragment", [
    (["--workers", "2"], "leave out --workers"),
    (["--liveness"], "leave out --liveness"),
    (["--resume", "CK"], "no snapshot to resume"),
])
def test_refusals(cli, assert_input_error, tmp_path: Path, extra: list[str], fragment: str) -> None:
    extra = [str(tmp_path / "ck") if x == "CK" else x for x in extra]
    assert_input_error(cli("check", "replication", "--disk", str(tmp_path / "d"), *extra), fragment)
    assert not (tmp_path / "d").exists()


def test_keep_disk_needs_disk(cli, assert_input_error) -> None:
    assert_input_error(cli("check", "replication", "--keep-disk"), "--keep-disk needs --disk")


def test_a_directory_of_other_files_is_refused_and_left_alone(cli, assert_input_error, tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "mine.txt").write_text("keep me")
    assert_input_error(cli("check", "replication", "--disk", str(d)), "is not empty")
    assert (d / "mine.txt").read_text() == "keep me"
    f = tmp_path / "file"
    f.write_text("")
    assert_input_error(cli("check", "replication", "--disk", str(f)), "--disk")
