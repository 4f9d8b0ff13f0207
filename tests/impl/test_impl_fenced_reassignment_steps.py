"""The implementation's ``fenced_reassignment_steps`` (impl/core/controller.py, op_reassign): a
controller whose snapshot shows a newer /controller_epoch abandons its reassignment instead of
performing the next step, as the model does (specs/04-controller.md, "Partition reassignment")."""
from __future__ import annotations

import pytest

from isrcheck.impl.core.config import ConfigError, from_mapping
from isrcheck.impl.core.tables import IllegalTransition
from isrcheck.impl.rigs.simulator import NotEnabled, Simulator

from shared import DEPOSED_REASSIGNMENT_CONFIG as CONFIG
from shared import DEPOSED_REASSIGNMENT_PREFIX as PREFIX


def simulator(fenced_steps: bool) -> Simulator:
    sim = Simulator({**CONFIG, "fenced_reassignment_steps": fenced_steps})
    for name, args in PREFIX:
        sim.apply(name, args)
    assert sim.deposed is not None and sim.deposed.core.epoch == 1
    assert sim.deposed.core.ctx.reassign[0].step == 3 and sim.leader_of(0) == 2
    return sim


def test_config_key_defaults_to_false_and_rejects_a_non_boolean():
    assert from_mapping({}).fenced_reassignment_steps is False
    cfg = from_mapping({"fenced_reassignment_steps": True})
    assert cfg.fenced_reassignment_steps is True
    assert cfg.with_changes(max_records=1).fenced_reassignment_steps is True  # kept by to_mapping
    with pytest.raises(ConfigError) as info:
        from_mapping({"fenced_reassignment_steps": 1})
    assert "\n" not in str(info.value) and "fenced_reassignment_steps" in str(info.value)


def test_without_the_option_the_deposed_controller_makes_the_illegal_move():
    sim = simulator(fenced_steps=False)
    sim.apply("ReassignPartition", (1, 0, 3))
    sim.apply("ReassignPartition", (1, 0, 4))
    with pytest.raises(IllegalTransition, match="NonExistentReplica -> OnlineReplica"):
        sim.apply("ReassignPartition", (1, 0, 5))


def test_with_the_option_the_deposed_controller_abandons_the_reassignment():
    sim = simulator(fenced_steps=True)
    deposed = sim.deposed.core
    states = (dict(deposed.ctx.partitions.states), dict(deposed.ctx.replicas.states))
    before, inbox = sim.observe(), {b: list(q) for b, q in sim.inbox.items()}
    sim.apply("ReassignPartition", (1, 0, 3))
    # it forgot the reassignment (step, OAR and RAR) and did nothing else: no request, no write,
    # no state-machine move
    assert deposed.ctx.reassign == {} and deposed.last_status.startswith("abandoned")
    assert (dict(deposed.ctx.partitions.states), dict(deposed.ctx.replicas.states)) == states
    assert sim.observe() == before and {b: list(q) for b, q in sim.inbox.items()} == inbox
    assert ("ReassignPartition", (1, 0, 4)) not in sim.enabled()
    with pytest.raises(NotEnabled):
        sim.apply("ReassignPartition", (1, 0, 4))
    for n in range(8, 13):  # the new controller completes the reassignment
        sim.apply("ReassignPartition", (2, 0, n))
    assert sim.snapshot().part(0).replicas == (2,) and 0 not in sim.snapshot().reassign
