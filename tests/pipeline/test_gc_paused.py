"""The cyclic garbage collector is paused while a level's states are expanded (pipeline/levels.py)."""
from __future__ import annotations

import gc

import pyarrow as pa
import pytest

from isrcheck.inputs import manifest
from isrcheck.model.statecodec import kafka_state_codec
from isrcheck.pipeline.explore_spark import expand_arrow
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


def test_a_worker_batch_runs_paused_and_the_collector_is_back_between_batches(gc_on, monkeypatch) -> None:
    """expand_arrow pauses the collector for each batch (decoding and expanding) and gives it back
    before handing the batch's rows to Spark."""
    import isrcheck.pipeline.explore_spark as ex

    seen: list[bool] = []
    real_expand = ex.expand

    def watching_expand(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_expand(*args, **kwargs)

    monkeypatch.setattr(ex, "expand", watching_expand)
    spec = ModelSpec.of("replication", manifest.get("replication").config, None)
    model = spec.build()
    s0 = model.init_states()[0]
    codec = kafka_state_codec()
    batch = pa.RecordBatch.from_pydict({"fingerprint": [model.fingerprint(s0)], "rank": [0],
                                        "state": [codec.encode(s0)]})
    outs = []
    for out in expand_arrow(spec.to_json(), [], None, iter([batch, batch])):
        outs.append(out)
        assert gc.isenabled()
    assert seen == [False, False]
    assert all(o.num_rows > 0 for o in outs)
