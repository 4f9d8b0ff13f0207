"""The seed's reassignment example, OAR {1,2,3} -> RAR {4,5,6}, replayed from examples/.

Seed 002 lists the values AR and leader/ISR take in ZooKeeper during onPartitionReassignment. The
scenario file drives the 12 steps (plus the deliveries and fetches that let the new replicas
catch up); this test holds the model to that table, step by step.
"""
from __future__ import annotations

from pathlib import Path

from isrcheck.invariants import build_model
from isrcheck.model.brokersets import members
from isrcheck.inputs.scenario import broken_properties, run_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "reassignment-seed.toml"

# The seed's table: (AR, leader, ISR), and the reassignment step after which each row holds.
SEED_TABLE = [
    ((1, 2, 3), 1, {1, 2, 3}, None),        # initial state
    ((1, 2, 3, 4, 5, 6), 1, {1, 2, 3, 4, 5, 6}, 4),  # RAR caught up: the wait of step 4 is over
    ((1, 2, 3, 4, 5, 6), 4, {1, 2, 3, 4, 5, 6}, 7),  # new leader from RAR
    ((1, 2, 3, 4, 5, 6), 4, {4, 5, 6}, 8),  # OAR - RAR out of the ISR
    ((4, 5, 6), 4, {4, 5, 6}, 10),          # AR = RAR in ZooKeeper
]


def _zk_row(state):
    zp = state.zk.partitions[0]
    return zp.replicas, zp.leader, set(members(zp.isr))


def _steps():
    cfg, steps = run_scenario(SCENARIO)
    return cfg, steps


def test_seed_reassignment_rows_after_each_named_step():
    _, steps = _steps()
    after_step = {}
    for st in steps[1:]:
        if st.action.name == "ReassignPartition":
            after_step[st.action.args[2]] = _zk_row(st.state)
    assert _zk_row(steps[0].state) == SEED_TABLE[0][:3]
    for ar, leader, isr, step in SEED_TABLE[1:]:
        assert after_step[step] == (ar, leader, isr), f"after step {step}"


def test_seed_reassignment_table_is_the_sequence_of_distinct_rows_restricted_to_the_table():
    _, steps = _steps()
    distinct = []
    for st in steps:
        row = _zk_row(st.state)
        if not distinct or distinct[-1] != row:
            distinct.append(row)
    wanted = [row[:3] for row in SEED_TABLE]
    assert [row for row in distinct if row in wanted] == wanted
    # AR changes exactly twice: OAR + RAR at step 1, RAR at step 10
    ar_changes = [st.action for prev, st in zip(steps, steps[1:])
                  if prev.state.zk.partitions[0].replicas != st.state.zk.partitions[0].replicas]
    assert [a.args[2] for a in ar_changes] == [1, 10]


def test_seed_reassignment_keeps_every_property_along_the_way():
    cfg, steps = _steps()
    assert broken_properties(build_model(cfg), steps) == []
    final = steps[-1].state
    assert final.zk.reassign[0] == ()
    assert final.controller.reassign_step[0] == 0
    # the old replicas were deleted from their brokers once their StopReplica requests arrive
    assert all(final.controller.replica_states[0][b - 1] == 0 for b in (1, 2, 3))
