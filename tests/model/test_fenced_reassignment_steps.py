"""The designer's option ``fenced_reassignment_steps`` (issue 15): a deposed controller abandons its
reassignment at its next step instead of performing it (specs/04-controller.md, "Partition
reassignment"), which closes the 17-step counterexample of ``deposed-controller-reassignment``."""
from __future__ import annotations

import pytest

from isrcheck.inputs import manifest
from isrcheck.model.config import ConfigError, apply_overrides, from_mapping
from isrcheck.model.tables import IllegalTransition
from isrcheck.model.tables import ReplicaState as RS

from shared import DEPOSED_REASSIGNMENT_PREFIX as PREFIX


def driver(kafka, fenced_steps: bool):
    raw = manifest.get("deposed-controller-reassignment").config.to_dict()
    d = kafka(**apply_overrides(raw, [f"fenced_reassignment_steps={str(fenced_steps).lower()}"]))
    for name, args in PREFIX:
        d.do(name, *args)
    assert d.s.stale is not None and d.s.stale.epoch == 1 and d.s.zk.controller_epoch == 2
    assert d.s.stale.reassign_step[0] == 3 and d.s.zk.partitions[0].leader == 2
    return d


def test_the_key_defaults_to_false_and_rejects_a_non_boolean():
    assert from_mapping({}).fenced_reassignment_steps is False
    assert from_mapping({"fenced_reassignment_steps": True}).fenced_reassignment_steps is True
    with pytest.raises(ConfigError) as info:
        from_mapping({"fenced_reassignment_steps": "yes"})
    msg = str(info.value)
    assert "\n" not in msg and "fenced_reassignment_steps" in msg and "true or false" in msg


def test_without_the_option_the_deposed_controller_performs_its_steps_and_breaks_the_state_machine(kafka):
    d = driver(kafka, fenced_steps=False)
    d.do("ReassignPartition", 1, 0, 3)  # step 3 performed, but the new leader cannot become a
    assert d.s.stale.reassign_step[0] == 4  # NewReplica: it stays NonExistentReplica in its context
    assert d.s.stale.replica_states[0][1] == RS.NON_EXISTENT
    d.do("ReassignPartition", 1, 0, 4)
    with pytest.raises(IllegalTransition, match="NonExistentReplica -> OnlineReplica"):
        d.do("ReassignPartition", 1, 0, 5)


def test_with_the_option_the_deposed_controller_abandons_the_reassignment(kafka):
    d = driver(kafka, fenced_steps=True)
    before = d.s
    d.do("ReassignPartition", 1, 0, 3)  # enabled as before: the check is part of the step
    stale = d.s.stale
    # it forgot the reassignment (step, OAR, RAR) and did nothing else: no request, no write, no move
    assert (stale.reassign_step[0], stale.reassign_old[0], stale.reassign_new[0]) == (0, (), ())
    assert stale.replica_states == before.stale.replica_states
    assert stale.partition_states == before.stale.partition_states
    assert d.s.inbox == before.inbox and d.s.zk == before.zk
    assert d.s.controller == before.controller
    assert not [a for a in d.enabled() if a.name == "ReassignPartition" and a.args[0] == 1]
    # the new controller finishes the reassignment on its own
    for n in range(8, 13):
        d.do("ReassignPartition", 2, 0, n)
    assert d.s.zk.partitions[0].replicas == (2,) and not d.s.zk.reassign[0]


def test_the_active_controller_is_not_affected(kafka):
    """Before the failover the option changes nothing: the same steps, the same states."""
    raw = manifest.get("deposed-controller-reassignment").config.to_dict()
    plain, fenced = kafka(**raw), kafka(**apply_overrides(raw, ["fenced_reassignment_steps=true"]))
    for d in (plain, fenced):
        for name, args in PREFIX[:6]:
            d.do(name, *args)
    assert plain.s == fenced.s
