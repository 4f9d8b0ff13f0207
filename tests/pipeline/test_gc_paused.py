"""The cyclic garbage collector is paused while a level's states are expanded (pipeline/levels.py)."""
from __future__ import annotations

import gc

import pytest

from isrcheck.inputs import manifest
from isrcheck.model.statecodec import kafka_state_codec
from isrcheck.pipeline.explore_spark import ShardContext, expand_shard
from isrcheck.pipeline.levels import gc_paused
from isrcheck.pipeline.spec import ModelSpec


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


def test_a_worker_batch_runs_paused_and_the_collector_is_back_between_batches(gc_on, monkeypatch, tmp_path) -> None:
    """A Spark level's map task pauses the collector for each batch (decoding and expanding) and
    gives it back before handing the batch's successors to Spark."""
    import isrcheck.pipeline.explore_spark as ex
    from isrcheck.pipeline.shards import initial_key
    from isrcheck.pipeline.store import RunStore

    seen: list[bool] = []
    real_expand = ex.expand

    def watching_expand(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_expand(*args, **kwargs)

    monkeypatch.setattr(ex, "expand", watching_expand)
    monkeypatch.setattr(ex, "BATCH_ROWS", 1)
    spec = ModelSpec.of("replication", manifest.get("replication").config, None)
    model = spec.build()
    s0 = model.init_states()[0]
    codec = kafka_state_codec()
    store = RunStore(tmp_path / "run")
    store.levels_dir.mkdir(parents=True)
    fp = model.fingerprint(s0)
    store.write_level(0, {"fingerprint": [fp, fp], "parent": [None, None], "prank": [None, None],
                          "aidx": [None, None], "action": [None, None], "depth": [0, 0], "rank": [0, 1],
                          "state": [codec.encode(s0)] * 2, "broken": [[], []], "key": [initial_key(0), initial_key(1)]})
    ctx = ShardContext(spec.to_json(), 0, 1, str(store.level_dir(0)), str(tmp_path / "staging"), None, [], [])
    outs = []
    for dest, (kind, _payload) in expand_shard(ctx, 0):
        outs.append(kind)
        assert gc.isenabled() and dest == 0
    assert seen == [False, False]
    assert outs == ["rows", "rows", "summary"]
