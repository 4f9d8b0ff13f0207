"""Helpers shared by the exploration tests (in-process and Spark)."""
from __future__ import annotations

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.pipeline.explore import Explorer
from isrcheck.model.statecodec import kafka_state_codec
from isrcheck.pipeline.explore_spark import ShardContext
from isrcheck.pipeline.shards import initial_key
from isrcheck.pipeline.spec import ModelSpec
from isrcheck.pipeline.store import RunStore

LOCAL = 10**12  # a Spark threshold no frontier reaches: every level in-process


def checker(name: str, **kw):
    e = manifest.get(name)
    return Checker(build_model(e.config, symmetry=e.symmetry), **kw).run()


def explorer(name: str, out, **kw) -> Explorer:
    e = manifest.get(name)
    return Explorer(ModelSpec.of(name, e.config, e.symmetry), out, **{"spark_threshold": LOCAL, **kw})


def summary(r) -> tuple:
    return (r.outcome, r.distinct_states, r.depth, r.transitions, r.coverage, r.unwitnessed if r.outcome != "safety_failure" else [],
            [(v.property, v.kind, v.length) for v in r.violations])


def assert_same(found, want) -> None:
    assert summary(found) == summary(want)
    for a, b in zip(found.violations, want.violations):
        assert [str(s.action) for s in a.trace] == [str(s.action) for s in b.trace]
        assert a.trace[-1].state == b.trace[-1].state


def two_state_level(tmp_path, seen_dir: str | None = None) -> ShardContext:
    """A run whose level 0 holds the initial state of `replication` twice, as a map task's context
    for shard 0 of 1 (``seen_dir``: the level whose seen files the task may consult)."""
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
    ctx = ShardContext(spec.to_json(), 0, 1, str(store.level_dir(0)), str(tmp_path / "staging"), seen_dir, [], [])
    ctx.maps_dir.mkdir(parents=True)
    return ctx
