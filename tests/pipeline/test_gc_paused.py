"""The cyclic garbage collector is paused while a level's states are expanded (pipeline/levels.py)."""
from __future__ import annotations

import gc

import pytest

from isrcheck.pipeline.explore_spark import expand_shard
from isrcheck.pipeline.levels import gc_paused
from _explore_helpers import two_state_level


@pytest.fixture
def gc_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_restored_after(gc_on) -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restored_after_an_error_and_left_off_when_it_was_off(gc_on) -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_a_map_task_runs_paused_for_its_whole_shard_and_gives_the_collector_back(gc_on, monkeypatch, tmp_path) -> None:
    """A Spark level's map task pauses the collector for its whole shard, every batch (decoding and
    expanding), as the Checker does for its search; the collector is back once the shard's files
    are written, before anything goes to Spark. Re-enabled after every batch, its first collection
    walked the batch's surviving states: an eighth of a wide level's map time."""
    import isrcheck.pipeline.explore_spark as ex

    seen: list[bool] = []
    real_expand = ex.expand

    def watching_expand(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_expand(*args, **kwargs)

    monkeypatch.setattr(ex, "expand", watching_expand)
    monkeypatch.setattr(ex, "BATCH_ROWS", 1)
    ctx = two_state_level(tmp_path)
    outs = [(dest, kind, gc.isenabled()) for dest, (kind, _payload) in expand_shard(ctx, 0)]
    assert seen == [False, False]
    assert outs == [(0, "rows", True), (0, "summary", True)]


def test_a_map_task_that_fails_gives_the_collector_back_and_leaves_no_file(gc_on, monkeypatch, tmp_path) -> None:
    import isrcheck.pipeline.explore_spark as ex

    calls = []
    real_expand = ex.expand

    def failing_expand(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("worker lost")
        return real_expand(*args, **kwargs)

    monkeypatch.setattr(ex, "expand", failing_expand)
    monkeypatch.setattr(ex, "BATCH_ROWS", 1)
    ctx = two_state_level(tmp_path)
    with pytest.raises(RuntimeError, match="worker lost"):
        list(expand_shard(ctx, 0))
    assert gc.isenabled()
    assert sorted(p.name for p in ctx.maps_dir.iterdir()) == []  # the first batch's file went too


def _shipped(ctx) -> list[int]:
    """The fingerprints a map task sends to the reduce side."""
    from isrcheck.pipeline.explore_spark import _read_map_file, map_file

    out: list[int] = []
    ctx.maps_dir.mkdir(parents=True, exist_ok=True)
    for dest, (kind, payload) in expand_shard(ctx, 0):
        if kind == "rows":
            out += _read_map_file(map_file(ctx.maps_dir, payload, dest)).column("fingerprint").to_pylist()
        else:
            assert isinstance(payload.coverage, dict) and payload.transitions > 0
    return out


def test_a_map_task_drops_the_successors_its_seen_files_hold(tmp_path) -> None:
    """With the last Spark level's seen files, a map task ships only successors they do not hold
    (the reduce side would drop the others); its transitions and coverage are the same."""
    import numpy as np

    from isrcheck.pipeline.shards import seen_path, write_seen

    every = sorted(set(_shipped(two_state_level(tmp_path / "a"))))
    assert len(every) >= 2
    seen_dir = tmp_path / "seen"
    seen_dir.mkdir()
    old = np.array(sorted(every[::2]), dtype=np.int64)
    write_seen(old, seen_path(seen_dir, 0))
    kept = _shipped(two_state_level(tmp_path / "b", str(seen_dir)))
    assert sorted(kept) == sorted(set(every) - set(old.tolist()))
