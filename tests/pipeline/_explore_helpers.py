"""Helpers shared by the exploration tests (in-process and Spark)."""
from __future__ import annotations

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.pipeline.explore import Explorer
from isrcheck.pipeline.spec import ModelSpec

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
