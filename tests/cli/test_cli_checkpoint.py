"""``check --checkpoint DIR`` / ``--resume DIR`` (issue 32, item 4): a run killed with SIGKILL after a
snapshot was written, then resumed, reports what an uninterrupted run reports: the same state and
transition counts, coverage, verdicts and (shortest) counterexamples; and a resume that cannot be
honoured (another configuration, a damaged file, a file that is not a snapshot) is refused in one
``error:`` line with exit status 2, before any search.

The kill is real: the run is a child process, the test polls its checkpoint directory and sends
SIGKILL once a snapshot holding a violation is there (``--keep-going``, so the search goes on past
the violations and the snapshot has to carry them).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

import pytest

from isrcheck.engine.checkpoint import FILE_NAME, MAGIC, SnapshotError, read_snapshot

#: hw-truncation-one-crash with --keep-going: 31,574 states, 24 levels, two violations (8 and 10 steps)
MODEL = ["hw-truncation-one-crash", "--keep-going"]


def run(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "isrcheck", *args], capture_output=True, text=True, timeout=600,
                          **kw)


def facts(out: str) -> dict[str, Any]:
    """What must be identical between an uninterrupted and a resumed run (not the time)."""
    d = json.loads(out)
    return {k: d[k] for k in ("outcome", "distinct_states", "depth", "transitions", "violations", "coverage",
                              "unwitnessed", "limit_hit", "exit_status")}


@pytest.fixture(scope="module")
def uninterrupted() -> dict[str, Any]:
    r = run(["check", *MODEL, "--json"])
    assert r.returncode == 0, r.stderr  # the violations are the manifest's pins: "as pinned"
    found = facts(r.stdout)
    assert len(found["violations"]) == 2
    return found


def killed(command: list[str], ck: Path, ready: Callable[[Any], bool]) -> Any:
    """Run ``isrcheck COMMAND`` as a child, poll its checkpoint directory ``ck`` and SIGKILL it
    as soon as the snapshot there is ``ready``; that snapshot."""
    child = subprocess.Popen([sys.executable, "-m", "isrcheck", *command], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    snap = None
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and child.poll() is None:
            if (ck / FILE_NAME).exists():
                seen = read_snapshot(ck / FILE_NAME)  # never a SnapshotError: the rename is atomic
                if ready(seen):
                    os.kill(child.pid, signal.SIGKILL)
                    snap = seen
                    break
            time.sleep(0.002)
    finally:
        if child.poll() is None and snap is None:
            child.kill()
        child.wait()
    assert snap is not None, "the run ended before the snapshot awaited could be seen"
    assert child.returncode == -signal.SIGKILL
    return snap


@pytest.mark.parametrize("disk", ["memory", "disk", "disk-moved"])
def test_resume_after_sigkill_matches_an_uninterrupted_run(tmp_path: Path, uninterrupted: dict[str, Any],
                                                           disk: str) -> None:
    """In memory, and with --disk: the snapshot names the disk directory, so --resume alone goes on
    there (the kill left its next level half written); when the files have moved, --resume alone
    says so in one line and --disk gives their new place."""
    ck = tmp_path / "ck"
    on_disk = ["--disk", str(tmp_path / "disk")] if disk != "memory" else []
    snap = killed(["check", *MODEL, "--json", "--checkpoint", str(ck), "--checkpoint-every", "0", *on_disk], ck,
                  lambda seen: bool(seen.violations))
    assert 0 < snap.states < uninterrupted["distinct_states"]
    assert (snap.disk is not None) == (disk != "memory")
    again: list[str] = []
    if disk == "disk":
        assert snap.disk_directory == str((tmp_path / "disk").resolve())
    elif disk == "disk-moved":
        (tmp_path / "disk").rename(tmp_path / "moved")
        assert "whose directory" in refusal([*MODEL, "--resume", str(ck)]) and "is gone" in refusal(
            [*MODEL, "--resume", str(ck)])
        again = ["--disk", str(tmp_path / "moved")]
    r = run(["check", *MODEL, "--json", "--resume", str(ck), *again])
    assert r.returncode == 0, r.stderr
    assert facts(r.stdout) == uninterrupted
    said = "disk: resuming with the snapshot's --disk directory"
    assert (said in r.stderr) == (disk == "disk")
    # the resumed run went on checkpointing in the same directory, and its snapshot is resumable
    assert read_snapshot(ck / FILE_NAME).states >= snap.states


#: a search the workers run (no --keep-going, which only the single process does): 50,164 states
PARALLEL = ["reassignment-broker-crash", "--no-liveness"]


@pytest.mark.parametrize("workers", ["2", "1"], ids=["resumed-with-2", "resumed-with-1"])
def test_a_parallel_run_killed_resumes_with_any_worker_count(tmp_path: Path, workers: str) -> None:
    """``--workers 2`` writes the single process's snapshot: killed with SIGKILL a few levels in, it
    is resumed with two workers or one to the uninterrupted run's result."""
    plain = run(["check", *PARALLEL, "--json"])
    assert plain.returncode == 0, plain.stderr
    want = facts(plain.stdout)
    ck = tmp_path / "ck"
    snap = killed(["check", *PARALLEL, "--json", "--workers", "2", "--checkpoint", str(ck), "--checkpoint-every", "0"],
                  ck, lambda seen: seen.depth >= 3)
    assert 0 < snap.states < want["distinct_states"]
    r = run(["check", *PARALLEL, "--json", "--workers", workers, "--resume", str(ck)])
    assert r.returncode == 0, r.stderr
    assert facts(r.stdout) == want


def test_a_checkpointed_run_reports_what_a_plain_run_does(tmp_path: Path, uninterrupted: dict[str, Any]) -> None:
    r = run(["check", *MODEL, "--json", "--checkpoint", str(tmp_path / "ck"), "--checkpoint-every", "0"])
    assert r.returncode == 0, r.stderr
    assert facts(r.stdout) == uninterrupted
    snap = read_snapshot(tmp_path / "ck" / FILE_NAME)
    assert snap.identity["model"] == "hw-truncation-one-crash"
    assert snap.identity["configuration"]["faults"]["crashes"] == 1
    assert {v["property"] for v in snap.violations} == {v["property"] for v in uninterrupted["violations"]}


@pytest.fixture(scope="module")
def snapshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run's directory after a complete checkpointed run (its last snapshot is resumable)."""
    ck = tmp_path_factory.mktemp("snap") / "ck"
    r = run(["check", "replication", "--checkpoint", str(ck), "--checkpoint-every", "0"])
    assert r.returncode == 0, r.stderr
    return ck


def refusal(args: list[str]) -> str:
    r = run(["check", *args])
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def test_a_resume_with_another_configuration_is_refused(snapshot_dir: Path) -> None:
    line = refusal(["replication", "--set", "max_records=1", "--resume", str(snapshot_dir)])
    assert "configuration differs" in line and "max_records" in line


def test_a_resume_of_another_model_or_search_is_refused(snapshot_dir: Path) -> None:
    assert "differs" in refusal(["clean-election", "--resume", str(snapshot_dir)])
    assert "search bounds differ" in refusal(["replication", "--keep-going", "--resume", str(snapshot_dir)])


def test_a_resume_with_another_variant_is_refused(snapshot_dir: Path) -> None:
    variant = Path(__file__).resolve().parents[2] / "examples" / "variants" / "eager_election.py"
    line = refusal(["replication", "--variant", f"{variant}:EagerElection", "--resume", str(snapshot_dir)])
    assert "variant differs" in line and "EagerElection" in line


def test_a_damaged_snapshot_is_refused(snapshot_dir: Path, tmp_path: Path) -> None:
    data = bytearray((snapshot_dir / FILE_NAME).read_bytes())
    for name, change in (("flip", lambda d: d.__setitem__(len(d) - 5, d[len(d) - 5] ^ 0xFF)),
                         ("cut", lambda d: d.__delitem__(slice(len(d) - 100, None))),
                         ("header", lambda d: d.__setitem__(len(MAGIC) + 12, 0))):
        ck = tmp_path / name
        ck.mkdir()
        damaged = bytearray(data)
        change(damaged)
        (ck / FILE_NAME).write_bytes(bytes(damaged))
        line = refusal(["replication", "--resume", str(ck)])
        assert "damaged" in line, line


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    import pickle

    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / FILE_NAME).write_bytes(pickle.dumps({"states": 3}))
    assert "not an isrcheck snapshot" in refusal(["replication", "--resume", str(ck)])


def test_resume_without_a_snapshot_and_bad_combinations_are_refused(tmp_path: Path, snapshot_dir: Path) -> None:
    assert "no snapshot to resume" in refusal(["replication", "--resume", str(tmp_path)])
    assert "already holds a snapshot" in refusal(["replication", "--checkpoint", str(snapshot_dir)])
    assert "needs --checkpoint" in refusal(["replication", "--checkpoint-every", "5"])
    assert "give one of them" in refusal(["replication", "--checkpoint", str(tmp_path / "a"),
                                          "--resume", str(snapshot_dir)])
