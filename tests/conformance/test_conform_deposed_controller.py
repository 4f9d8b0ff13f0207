"""The deposed-controller weaknesses of the manifest, driven on the implementation.

The checker finds two OnlyValidTransitions violations when a controller failover interrupts a
reassignment (specs/06-properties.md#onlyvalidtransitions). The implementation must follow every
step of each counterexample with the model's observations, and then refuse the very move the model
calls illegal: its own state machine (impl/core/tables.py) raises at the same step.
"""
from __future__ import annotations

import re

import pytest

from isrcheck.inputs import manifest
from isrcheck.conformance.replay import conform_actions
from isrcheck.conformance.sides import ImplFailed, ImplSide
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.model.config import apply_overrides, from_mapping


def _violation(name: str):
    e = manifest.get(name)
    r = Checker(build_model(e.config, symmetry=e.symmetry)).run()
    assert r.outcome == "safety_failure"
    v = r.violations[0]
    assert (v.property, v.length) == (e.property, e.length)
    return e, v


@pytest.mark.parametrize("name", ["deposed-controller-reassignment", "deposed-controller-ar-write"])
def test_implementation_refuses_the_same_illegal_move(name):
    e, v = _violation(name)
    steps = [(s.action.name, s.action.args) for s in v.trace[1:]]
    *before, last = steps
    assert v.trace[-1].state is None  # the last action is the violation itself
    res = conform_actions(e.config, before, label=name)
    assert res.ok, res.divergence.summary() if res.divergence else res
    impl = ImplSide(e.config)
    for n, a in before:
        impl.step(n, a)
    with pytest.raises(ImplFailed, match="IllegalTransition") as err:
        impl.step(*last)
    # the model's message names the replica and the move, e.g. "replica 2 ... NonExistentReplica -> OnlineReplica"
    m = re.search(r"(\w+Replica) -> (\w+Replica)", v.message)
    assert m, v.message
    assert m.group(1) in str(err.value) and m.group(2) in str(err.value)


def test_fenced_writes_close_the_ar_write_but_not_the_in_memory_move():
    """The same two reassignments with fenced writes: the 20-step violation is gone within its depth,
    the 17-step one (no ZooKeeper write involved) is not."""
    e = manifest.get("deposed-controller-ar-write")
    fenced = from_mapping(apply_overrides(e.config.to_dict(), ["fenced_controller_writes=true"]))
    r = Checker(build_model(fenced), max_depth=e.length).run()
    assert not r.violations and r.limit_hit == "depth"
    small = manifest.get("deposed-controller-reassignment")
    assert small.config.fenced_controller_writes
