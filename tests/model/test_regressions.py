"""Regressions: model bugs found during review, each pinned by the sequence that exposed it."""
from __future__ import annotations

import pytest

from isrcheck.invariants import build_model
from isrcheck.model.actions import Action, apply
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping
from isrcheck.model.tables import PartitionState as PS


def test_preferred_election_before_creation_is_not_an_illegal_move(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0,
              operations={"topic_creation": True, "preferred_elections": 1})
    d.do("RequestPreferredElection", 0)
    d.do("ElectPreferredLeader", 1, 0)  # used to raise NonExistentPartition -> OnlinePartition
    assert d.s.zk.preferred == 0
    assert d.s.controller.partition_states == (PS.NON_EXISTENT,)


def test_deposed_controller_does_not_recreate_a_topic_its_successor_created(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0,
              operations={"topic_creation": True}, faults={"controller_failovers": 1})
    d.do("ControllerFailover")  # the new controller creates the partition during its start-up
    assert d.s.zk.partitions[0].version == 1
    assert not d.is_enabled("CreateTopic", 1)


def test_deposed_controller_cannot_resume_a_reassignment(kafka):
    d = kafka(brokers=4, replication_factor=2, max_records=0,
              operations={"reassignments": [{"partition": 0, "target": [3, 4]}]},
              faults={"controller_failovers": 2})
    d.do("RequestReassignment", 0, (3, 4))
    d.do("ControllerFailover")
    d.do("ControllerFailover")
    assert not d.is_enabled("ReassignPartition", 2, 0, 1)  # deposed: it must not write AR
    assert d.is_enabled("ReassignPartition", 3, 0, 1)


def test_resumed_reassignment_whose_request_is_gone_does_not_wipe_the_assignment(kafka):
    """Controller 1 finishes steps 10-11 after being deposed; controller 2 must not then run
    step 1 with an empty target (which took every replica offline and wrote AR = ())."""
    d = kafka(brokers=3, replication_factor=2, max_records=0,
              operations={"reassignments": [{"partition": 0, "target": [1, 3]}]},
              faults={"controller_failovers": 1})
    d.do("RequestReassignment", 0, (1, 3))
    for step in range(1, 10):
        if step == 4:
            d.deliver_all(1, 2, 3)  # the leader learns AR = OAR + RAR; broker 3 starts following
            d.do("Fetch", 3, 0)  # and joins the ISR
        d.do("ReassignPartition", 1, 0, step)
    d.do("ControllerFailover")
    d.do("ReassignPartition", 1, 0, 10)
    d.do("ReassignPartition", 1, 0, 11)
    assert d.s.zk.reassign[0] == ()
    assert not d.is_enabled("ReassignPartition", 2, 0, 1)
    assert d.s.zk.partitions[0].replicas == (1, 3)


def test_deposed_controller_does_not_delete_a_topic_it_never_created(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0,
              operations={"topic_creation": True, "topic_deletions": 1}, faults={"controller_failovers": 1})
    d.do("ControllerFailover")
    d.do("RequestTopicDeletion")
    assert not d.is_enabled("CompleteTopicDeletion", 1)  # replicas exist: deletion must go through StopReplica


def test_reassignment_step_argument_must_match_the_controllers_next_step(kafka):
    d = kafka(brokers=3, replication_factor=2, max_records=0,
              operations={"reassignments": [{"partition": 0, "target": [2, 3]}]})
    d.do("RequestReassignment", 0, (2, 3))
    with pytest.raises(ValueError, match="step 1"):
        apply(d.protocol, d.s, Action("ReassignPartition", (1, 0, 5)))


def test_deposed_controllers_cannot_break_state_machines_with_creation_and_deletion():
    """Exhaustively: topic creation, deletion and a failover together keep every property."""
    cfg = from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 0,
                        "operations": {"topic_creation": True, "topic_deletions": 1},
                        "faults": {"controller_failovers": 1}})
    result = Checker(build_model(cfg)).run()
    assert result.outcome == "success", [(v.property, v.message) for v in result.violations]


def test_reassignment_requested_before_creation_waits_for_the_topic():
    """Found by `isrcheck prove transitions`: step 1 on an unborn topic made an illegal
    OnlineReplica -> NewReplica move five steps later."""
    cfg = from_mapping({"brokers": 3, "replication_factor": 2, "max_records": 0,
                        "operations": {"topic_creation": True,
                                       "reassignments": [{"partition": 0, "target": [2, 3]}]}})
    result = Checker(build_model(cfg)).run()
    assert result.outcome == "success", [(v.property, v.length, v.message) for v in result.violations]
