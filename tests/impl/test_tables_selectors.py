"""The implementation's state-machine tables and leader selectors, against specs/ (data and prose)."""
from __future__ import annotations

import re

import pytest

from isrcheck import specs
from isrcheck.impl.core import selectors as S
from isrcheck.impl.core import tables as T


def _spec_table(heading: str) -> dict[str, set[str]]:
    """A 'target | valid previous states' table of specs/02-state-machines.md."""
    text = specs.text("02-state-machines.md")
    start = text.index(heading)
    out: dict[str, set[str]] = {}
    for line in text[start:].splitlines()[1:]:
        m = re.match(r"^\| (\w+) \| ([\w, ]+) \|$", line.strip())
        if m and m.group(1) not in ("target",):
            out[m.group(1)] = {x.strip() for x in m.group(2).split(",")}
        elif out and not line.strip().startswith("|"):
            break
    return out


def test_partition_table_matches_the_spec():
    assert {k: set(v) for k, v in T.PARTITION_TRANSITIONS.items()} == _spec_table("### Partition state machine")


def test_replica_table_matches_the_spec():
    assert {k: set(v) for k, v in T.REPLICA_TRANSITIONS.items()} == _spec_table("### Replica state machine")


def test_state_labels_match_the_observation_schema():
    schema = specs.load("observation.toml")
    fields = {f["name"]: f for o in schema["object"] for f in o["field"] if o["name"] in ("partition", "replica")}
    assert set(fields["partition_state"]["values"]) == set(T.PARTITION_STATES)
    assert set(fields["replica_state"]["values"]) == set(T.REPLICA_STATES)


def test_illegal_moves_raise_and_change_nothing():
    m = T.partition_machine()
    assert m[0] == T.NON_EXISTENT_PARTITION
    with pytest.raises(T.IllegalTransition, match="NonExistentPartition -> OnlinePartition"):
        m.move(0, T.ONLINE_PARTITION)
    assert m[0] == T.NON_EXISTENT_PARTITION
    m.move(0, T.NEW_PARTITION)
    m.move(0, T.ONLINE_PARTITION)
    with pytest.raises(T.IllegalTransition):
        m.move(0, T.NON_EXISTENT_PARTITION)
    r = T.replica_machine()
    r.move((0, 1), T.NEW_REPLICA)
    with pytest.raises(T.IllegalTransition):
        r.move((0, 1), T.DELETION_STARTED)
    r.move((0, 1), T.OFFLINE_REPLICA)
    r.move((0, 1), T.DELETION_INELIGIBLE)  # the 2.x move straight from Offline
    r.move((0, 1), T.OFFLINE_REPLICA)


def view(**kw):
    base = dict(assignment=(1, 2, 3), leader=1, isr=frozenset({1, 2, 3}), live=frozenset({1, 2, 3}))
    base.update(kw)
    return S.PartitionView(**base)


def test_noop_keeps_everything():
    d = S.NO_OP.select(view())
    assert (d.leader, d.isr, d.receivers) == (1, frozenset({1, 2, 3}), (1, 2, 3))


def test_offline_partition_prefers_the_isr_in_assignment_order():
    d = S.OFFLINE.select(view(leader=1, isr=frozenset({1, 3}), live=frozenset({2, 3})))
    assert (d.leader, d.isr, d.receivers, d.unclean) == (3, frozenset({3}), (2, 3), False)


def test_offline_partition_unclean_only_when_enabled():
    v = view(isr=frozenset({1}), live=frozenset({2, 3}))
    with pytest.raises(S.NoEligibleLeader, match="unclean election is disabled"):
        S.OFFLINE.select(v)
    d = S.OFFLINE.select(view(isr=frozenset({1}), live=frozenset({2, 3}), unclean=True))
    assert (d.leader, d.isr, d.unclean) == (2, frozenset({2}), True)
    with pytest.raises(S.NoEligibleLeader, match="no assigned replica is alive"):
        S.OFFLINE.select(view(live=frozenset(), unclean=True))


def test_reassigned_partition_takes_the_first_live_in_sync_target():
    d = S.REASSIGNED.select(view(target=(4, 5, 6), isr=frozenset({1, 5, 6}), live=frozenset({1, 4, 5, 6})))
    assert (d.leader, d.isr, d.receivers) == (5, frozenset({1, 5, 6}), (4, 5, 6))
    with pytest.raises(S.NoEligibleLeader):
        S.REASSIGNED.select(view(target=(4,), isr=frozenset({1})))


def test_preferred_replica():
    d = S.PREFERRED.select(view(leader=2, live=frozenset({1, 2})))
    assert (d.leader, d.receivers) == (1, (1, 2))
    with pytest.raises(S.NoEligibleLeader, match="already leads"):
        S.PREFERRED.select(view())
    with pytest.raises(S.NoEligibleLeader, match="not alive and in the ISR"):
        S.PREFERRED.select(view(leader=2, isr=frozenset({2, 3})))


def test_controlled_shutdown_drops_the_shutting_down_brokers():
    d = S.CONTROLLED_SHUTDOWN.select(view(shutting_down=frozenset({1})))
    assert (d.leader, d.isr, d.receivers) == (2, frozenset({2, 3}), (1, 2, 3))
    d = S.CONTROLLED_SHUTDOWN.select(view(shutting_down=frozenset({1}), live=frozenset({1})))
    assert d.leader == 2  # liveness is not checked, as in 0.8
    with pytest.raises(S.NoEligibleLeader):
        S.CONTROLLED_SHUTDOWN.select(view(shutting_down=frozenset({1, 2, 3})))


def test_all_five_selectors_exist():
    assert {s.name for s in S.ALL_SELECTORS} == {"NoOp", "OfflinePartition", "ReassignedPartition",
                                                "PreferredReplica", "ControlledShutdown"}
