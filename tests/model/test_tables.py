"""The partition and replica state machines (model/tables.py) against kafka-notes.md's tables.

The expected tables are written out here from the notes (shared/reference/kafka-notes.md, sections
"Partition state machine" and "Replica state machine"), independently of the code's dicts, and
every (source, target) pair of both machines is checked.
"""
from __future__ import annotations

import itertools

import pytest

from isrcheck.model.actions import Action
from isrcheck.engine.checker import ModelFault
from isrcheck.model.kafka import KafkaModel
from isrcheck.model.tables import (
    IllegalTransition,
    PartitionState,
    ReplicaState,
    check_partition_move,
    check_replica_move,
)

# ---------------------------------------------------------------------------- expected, from the notes
# The state names exactly as the notes (and Kafka) spell them.
PARTITION_NAMES = ["NonExistentPartition", "NewPartition", "OnlinePartition", "OfflinePartition"]
REPLICA_NAMES = [
    "NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionStarted",
    "ReplicaDeletionSuccessful", "ReplicaDeletionIneligible", "NonExistentReplica",
]

# | target | valid previous states |   (kafka-notes.md, "Partition state machine")
EXPECTED_PARTITION = {
    "NewPartition": {"NonExistentPartition"},
    "OnlinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "OfflinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "NonExistentPartition": {"OfflinePartition"},
}

# | target | valid previous states |   (kafka-notes.md, "Replica state machine")
EXPECTED_REPLICA = {
    "NewReplica": {"NonExistentReplica"},
    "OnlineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "OfflineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "ReplicaDeletionStarted": {"OfflineReplica"},
    "ReplicaDeletionSuccessful": {"ReplicaDeletionStarted"},
    # "DeletionStarted (2.x also: Offline)": the model takes the 2.x rule, which its own deletion
    # path needs (a replica on a dead broker goes Offline -> Ineligible).
    "ReplicaDeletionIneligible": {"ReplicaDeletionStarted", "OfflineReplica"},
    "NonExistentReplica": {"ReplicaDeletionSuccessful"},
}

# Independent mapping of the notes' names onto the code's enum members (by member name).
PARTITION_ENUM = {
    "NonExistentPartition": PartitionState.NON_EXISTENT,
    "NewPartition": PartitionState.NEW,
    "OnlinePartition": PartitionState.ONLINE,
    "OfflinePartition": PartitionState.OFFLINE,
}
REPLICA_ENUM = {
    "NewReplica": ReplicaState.NEW,
    "OnlineReplica": ReplicaState.ONLINE,
    "OfflineReplica": ReplicaState.OFFLINE,
    "ReplicaDeletionStarted": ReplicaState.DELETION_STARTED,
    "ReplicaDeletionSuccessful": ReplicaState.DELETION_SUCCESSFUL,
    "ReplicaDeletionIneligible": ReplicaState.DELETION_INELIGIBLE,
    "NonExistentReplica": ReplicaState.NON_EXISTENT,
}

PARTITION_PAIRS = list(itertools.product(PARTITION_NAMES, PARTITION_NAMES))
REPLICA_PAIRS = list(itertools.product(REPLICA_NAMES, REPLICA_NAMES))


def _pair_id(pair):
    return f"{pair[0]}->{pair[1]}"


# ---------------------------------------------------------------------------- the state sets
def test_partition_states_are_the_four_of_the_notes():
    assert {s.label for s in PartitionState} == set(PARTITION_NAMES)
    for name, member in PARTITION_ENUM.items():
        assert member.label == name


def test_replica_states_are_the_seven_of_the_notes():
    assert {s.label for s in ReplicaState} == set(REPLICA_NAMES)
    for name, member in REPLICA_ENUM.items():
        assert member.label == name


# ---------------------------------------------------------------------------- OnlyValidTransitions
@pytest.mark.parametrize("pair", PARTITION_PAIRS, ids=_pair_id)
def test_OnlyValidTransitions_partition_move(pair):
    source, target = pair
    allowed = source in EXPECTED_PARTITION[target]
    move = lambda: check_partition_move(2, PARTITION_ENUM[source], PARTITION_ENUM[target])  # noqa: E731
    if allowed:
        move()  # must not raise
    else:
        with pytest.raises(IllegalTransition) as info:
            move()
        msg = str(info.value)
        assert source in msg and target in msg.split(source, 1)[1]  # "... source -> target"
        assert "partition 2" in msg
        assert info.value.machine == "partition"
        assert (info.value.source, info.value.target) == (source, target)


@pytest.mark.parametrize("pair", REPLICA_PAIRS, ids=_pair_id)
def test_OnlyValidTransitions_replica_move(pair):
    source, target = pair
    allowed = source in EXPECTED_REPLICA[target]
    move = lambda: check_replica_move(1, 3, REPLICA_ENUM[source], REPLICA_ENUM[target])  # noqa: E731
    if allowed:
        move()
    else:
        with pytest.raises(IllegalTransition) as info:
            move()
        msg = str(info.value)
        assert source in msg and target in msg.split(source, 1)[1]
        assert "replica 3" in msg and "partition 1" in msg
        assert info.value.machine == "replica"
        assert (info.value.source, info.value.target) == (source, target)


def test_OnlyValidTransitions_illegal_move_in_a_step_is_a_model_fault(kafka, edit):
    """A step that drives an illegal move surfaces as a ModelFault of OnlyValidTransitions."""
    d = kafka(brokers=2, replication_factor=2, max_records=0, faults={"crashes": 1})
    d.do("Crash", 2)
    s = d.s
    # a controller whose books say replica 2 was already deleted; the failure of broker 2 then
    # asks for ReplicaDeletionSuccessful -> OfflineReplica, which the table forbids
    c = s.controller._replace(replica_states=((ReplicaState.ONLINE, ReplicaState.DELETION_SUCCESSFUL),))
    s = s._replace(controller=c)
    model = KafkaModel(d.protocol)
    with pytest.raises(ModelFault) as info:
        model.next_state(s, Action("ProcessBrokerChange", (1,)))
    assert info.value.property_name == "OnlyValidTransitions"
    assert "ReplicaDeletionSuccessful" in str(info.value) and "OfflineReplica" in str(info.value)


def test_initial_state_machines_are_online(kafka):
    d = kafka(brokers=3, replication_factor=2, max_records=0)
    s = d.s
    assert s.controller.partition_states == (PartitionState.ONLINE,)
    # assignment [1, 2]: broker 3 hosts no replica
    assert s.controller.replica_states == ((ReplicaState.ONLINE, ReplicaState.ONLINE, ReplicaState.NON_EXISTENT),)


def test_initial_state_with_topic_creation_starts_nonexistent(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, operations={"topic_creation": True})
    s = d.s
    assert s.controller.partition_states == (PartitionState.NON_EXISTENT,)
    assert s.zk.partitions[0].version == 0
    # CreateTopic: NonExistent -> New -> Online for the partition, NonExistent -> New -> Online replicas
    d.do("CreateTopic", 1)
    assert d.s.controller.partition_states == (PartitionState.ONLINE,)
    assert d.s.controller.replica_states == ((ReplicaState.ONLINE, ReplicaState.ONLINE),)
    zp = d.s.zk.partitions[0]
    assert (zp.leader, zp.isr, zp.version) == (1, 0b110, 1)
