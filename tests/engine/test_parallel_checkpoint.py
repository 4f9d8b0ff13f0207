"""engine/parallel.py with engine/checkpoint.py (issue 32: checkpoints with ``--workers``): a
parallel search stopped between levels as a kill stops it (no clean-up) and resumed from its last
snapshot gives :class:`Checker`'s result field for field, counterexamples included, resumed with two
workers or with one; a single process's snapshot resumes with two workers; and the shared table's
(fingerprint, parent) pairs go out and back in, in both implementations. The real SIGKILL through
the command line is in tests/cli/test_cli_checkpoint.py."""
from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from isrcheck.engine.checker import Checker
from isrcheck.engine.checkpoint import FILE_NAME, Checkpoints, Snapshot, SnapshotError, read_snapshot
from isrcheck.engine.fptable import PyFingerprintTable, new_table
from isrcheck.engine.parallel import ParallelChecker
from shared import result_summary

from test_checkpoint import forge
from test_disk import gate_model
from test_disk_checkpoint import IDENTITY, Killed, killer

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="the parallel checker forks"
)


def searcher(model: Any, workers: int, ck: Checkpoints, **kw: Any) -> Any:
    if workers == 1:
        return Checker(model, checkpoint=ck, **kw)
    return ParallelChecker(model, workers=workers, checkpoint=ck, **kw)


def stopped(model: Any, ck: Path, workers: int, after: int) -> Snapshot:
    """Start a checkpointed search (a snapshot at every level) and stop it at the ``after``-th
    progress report once a snapshot is on disk (the parallel search reports once a level, the
    single process once a state); the last snapshot."""
    with pytest.raises(Killed):
        searcher(model, workers, Checkpoints(ck, IDENTITY, every=0.0), progress=killer(ck, after),
                 progress_every=0.0).run()
    assert multiprocessing.active_children() == []
    return read_snapshot(ck / FILE_NAME)


def resumed(model: Any, ck: Path, workers: int) -> Any:
    return searcher(model, workers, Checkpoints(ck, IDENTITY, every=0.0, resume=True)).run()


#: a counterexample mid-level, a success, and symmetry (the first representative met is kept)
MODELS = ["hw-truncation-one-crash", "clean-election", "spare-brokers"]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("written,resumed_with", [(2, 2), (2, 1), (1, 2)], ids=["2-2", "2-1", "1-2"])
def test_a_stopped_search_resumes_to_the_checkers_result(name: str, written: int, resumed_with: int,
                                                        tmp_path: Path) -> None:
    model = gate_model(name)
    want = Checker(model).run()
    snap = stopped(model, tmp_path, written, 3 if written > 1 else 400)
    assert 1 <= snap.depth < want.depth and snap.frontier and not snap.violations  # between levels
    got = resumed(model, tmp_path, resumed_with)
    assert result_summary(got) == result_summary(want)


def test_both_write_the_same_snapshot(tmp_path: Path) -> None:
    """At the same boundary the parallel search's snapshot is the single process's: the same parent
    map (as a set of pairs), the same frontier in the same order, the same counts."""
    model = gate_model("clean-election")
    snaps = {}
    for workers in (1, 2):
        d = tmp_path / str(workers)
        searcher(model, workers, Checkpoints(d, IDENTITY, every=0.0), max_depth=5).run()
        snaps[workers] = read_snapshot(d / FILE_NAME)
    one, two = snaps[1], snaps[2]
    assert (one.depth, one.states, one.transitions, one.counts, one.unseen) == \
        (two.depth, two.states, two.transitions, two.counts, two.unseen)
    assert one.frontier == two.frontier
    assert pairs(one.pairs) == pairs(two.pairs) and len(one.pairs) == len(two.pairs)


def pairs(raw: bytes) -> set[tuple[int, int]]:
    words = [int.from_bytes(raw[i:i + 8], "little", signed=True) for i in range(0, len(raw), 8)]
    return set(zip(words[::2], words[1::2]))


def test_a_forged_frontier_is_refused_by_the_parallel_resume(tmp_path: Path) -> None:
    model = gate_model("clean-election")
    stopped(model, tmp_path, 2, 2)

    def drop_pairs(header: dict, body: bytearray) -> bytearray:
        n = header["sections"]["pairs"]
        header["sections"]["pairs"] = 16
        header["states"] = 1
        return body[:16] + body[n:]

    forge(tmp_path / FILE_NAME, drop_pairs)
    with pytest.raises(SnapshotError, match="a frontier state is not in its parent map"):
        resumed(model, tmp_path, 2)


@pytest.mark.parametrize("make", [lambda: new_table(1 << 20, 16), lambda: PyFingerprintTable(1 << 20, 16)],
                         ids=["native", "python"])
def test_the_tables_pairs_go_out_and_back_in(make: Any) -> None:
    """pairs() answers every settled (fingerprint, parent), fingerprint 0 and the signed extremes
    included; absorb() puts them in a fresh table (growing it from 16 slots) with key 0, so that no
    claim wins them again, and with their parents."""
    entries = {0: 0, 5: 5, 7: 5, -3: 7, 2**63 - 1: -3, -(2**63): -(2**63)}
    entries.update({1000 + i: 5 for i in range(200)})
    source = make()
    for i, (fp, parent) in enumerate(entries.items()):
        while source.claim(fp, 0, i + 1) < 0:
            source.grow()
        assert source.settle(fp, i + 1, parent)
    raw = source.pairs()
    assert len(raw) == 16 * len(entries)
    for target in (new_table(1 << 20, 16), PyFingerprintTable(1 << 20, 16)):
        target.absorb(raw)
        assert len(target) == len(entries)
        assert {fp: target.entry(fp) for fp in entries} == {fp: (0, p) for fp, p in entries.items()}
        assert all(target.claim(fp, 1 << 48, 0) == 0 for fp in entries)
        with pytest.raises(ValueError, match="whole 16-byte pairs"):
            target.absorb(raw[:-1])
