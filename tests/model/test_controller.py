"""Controller operations (model/controller.py), reached through enabled actions.

Broker failure and start-up, the last ISR member, controller failover and fencing, the 12 steps of
partition reassignment (seed 002's OAR/RAR table), preferred election, controlled shutdown, topic
deletion through the replica deletion states.
"""
from __future__ import annotations

import pytest

from isrcheck.model.state import LEADER_AND_ISR, NO_LEADER, STOP_REPLICA, UPDATE_METADATA, UpdateMetadata
from isrcheck.model.tables import IllegalTransition
from isrcheck.model.tables import PartitionState as PS
from isrcheck.model.tables import ReplicaState as RS

from shared import M


def lai_requests(s, b):
    return [r for r in s.inbox[b - 1] if r[0] == LEADER_AND_ISR]


# ---------------------------------------------------------------------------- broker failure
def test_broker_failure_elects_first_live_isr_replica_in_assignment_order(kafka, edit):
    # AR [1, 3, 2]: when leader 1 dies, 3 (second in AR) wins over 2 (lower id)
    d = kafka(brokers=3, replication_factor=3, max_records=0, assignment=[[1, 3, 2]], faults={"crashes": 1})
    d.do("Crash", 1)
    assert "ProcessBrokerChange" in d.names()
    d.do("ProcessBrokerChange", 1)
    zp = d.s.zk.partitions[0]
    assert zp.leader == 3
    assert zp.isr == M(2, 3)  # the dead broker left the ISR
    assert zp.leader_epoch == 1 and zp.version == 2
    assert d.s.controller.live == M(2, 3)
    assert d.s.controller.partition_states == (PS.ONLINE,)
    assert d.s.controller.replica_states[0] == (RS.OFFLINE, RS.ONLINE, RS.ONLINE)
    # LeaderAndIsr with the new leader and epoch to the live assigned replicas
    for b in (2, 3):
        (req,) = lai_requests(d.s, b)
        assert (req.leader, req.isr, req.leader_epoch, req.zk_version, req.controller_epoch) == (3, M(2, 3), 1, 2, 1)
    d.deliver_all(2, 3)
    assert edit.replica(d.s, 3).leader == 3 and edit.replica(d.s, 3).isr == M(2, 3)
    assert edit.replica(d.s, 2).leader == 3
    assert d.is_enabled("Fetch", 2, 0)


def test_follower_failure_removes_it_from_the_isr_with_a_leader_epoch_bump(kafka, edit):
    d = kafka(brokers=3, replication_factor=3, max_records=0, faults={"crashes": 1})
    d.do("Crash", 3)
    d.do("ProcessBrokerChange", 1)
    zp = d.s.zk.partitions[0]
    assert (zp.leader, zp.isr, zp.leader_epoch, zp.version) == (1, M(1, 2), 1, 2)
    assert [r.leader_epoch for r in lai_requests(d.s, 1)] == [1]  # the leader is told
    assert lai_requests(d.s, 2) == []
    d.deliver_all(1)
    assert edit.replica(d.s, 1).isr == M(1, 2) and edit.replica(d.s, 1).leader_epoch == 1


def test_every_live_broker_gets_update_metadata_after_an_election(kafka):
    d = kafka(brokers=3, replication_factor=2, max_records=0, faults={"crashes": 1})  # AR [1, 2]
    d.do("Crash", 1)
    d.do("ProcessBrokerChange", 1)
    assert any(r[0] == UPDATE_METADATA for r in d.s.inbox[2])  # broker 3 hosts no replica
    assert d.s.inbox[0] == ()  # nothing queued for the dead broker


@pytest.mark.parametrize("unclean", [False, True])
def test_last_isr_member_is_kept_unless_unclean_election(kafka, unclean):
    d = kafka(brokers=2, replication_factor=2, max_records=0, unclean_leader_election=unclean,
              faults={"crashes": 2})
    d.do("Crash", 2)
    d.do("ProcessBrokerChange", 1)
    assert d.s.zk.partitions[0].isr == M(1)
    d.do("Crash", 1)
    d.do("ProcessBrokerChange", 1)
    zp = d.s.zk.partitions[0]
    assert zp.leader == NO_LEADER
    assert zp.leader_epoch == 2  # the removal still writes a new leader epoch
    assert d.s.controller.partition_states == (PS.OFFLINE,)
    if unclean:
        assert zp.isr == 0
    else:
        assert zp.isr == M(1)  # kept, so that 1 can come back as a clean leader


def _both_crash_then_the_one_outside_the_isr_restarts(d) -> None:
    """Broker 2 crashes (the ISR shrinks to 1), then broker 1, the last ISR member; broker 2 comes
    back first, outside the ISR: where the clean and the unclean election part ways."""
    d.do("Crash", 2)
    d.do("ProcessBrokerChange", 1)
    d.do("Crash", 1)
    d.do("ProcessBrokerChange", 1)
    d.do("Restart", 2)
    d.do("ProcessBrokerChange", 1)


def test_unclean_election_elects_a_replica_outside_the_isr(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, unclean_leader_election=True, faults={"crashes": 2})
    _both_crash_then_the_one_outside_the_isr_restarts(d)
    zp = d.s.zk.partitions[0]
    assert (zp.leader, zp.isr) == (2, M(2))
    assert d.s.controller.partition_states == (PS.ONLINE,)


def test_clean_election_waits_for_the_last_isr_member(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, faults={"crashes": 2})
    _both_crash_then_the_one_outside_the_isr_restarts(d)
    assert d.s.zk.partitions[0].leader == NO_LEADER  # 2 is not in the ISR: no clean leader
    assert d.s.controller.partition_states == (PS.OFFLINE,)
    d.do("Restart", 1)
    d.do("ProcessBrokerChange", 1)
    zp = d.s.zk.partitions[0]
    assert (zp.leader, zp.isr) == (1, M(1))
    assert d.s.controller.partition_states == (PS.ONLINE,)
    assert d.s.controller.replica_states[0] == (RS.ONLINE, RS.ONLINE)


# ---------------------------------------------------------------------------- controller failover
def test_controller_failover_bumps_the_controller_epoch(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, faults={"controller_failovers": 1})
    d.do("ControllerFailover")
    assert d.s.zk.controller_epoch == 2
    assert d.s.controller.epoch == 2
    assert d.s.stale is not None and d.s.stale.epoch == 1  # the deposed one has not noticed yet
    assert d.s.budget.controller_failovers == 0
    assert d.s.controller.partition_states == (PS.ONLINE,)
    assert d.s.controller.replica_states[0] == (RS.ONLINE, RS.ONLINE)
    # replica state machine start-up: LeaderAndIsr (controller epoch 2) to every live replica
    for b in (1, 2):
        assert [r.controller_epoch for r in lai_requests(d.s, b)] == [2]
    assert d.is_enabled("ResignController", 1)
    d.do("ResignController", 1)
    assert d.s.stale is None


def test_controller_failover_without_stale_controller(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, stale_controller=False,
              faults={"controller_failovers": 1})
    d.do("ControllerFailover")
    assert d.s.stale is None and d.s.controller.epoch == 2


def test_deposed_controller_requests_are_rejected_by_brokers_that_saw_the_new_epoch(kafka, edit):
    d = kafka(brokers=3, replication_factor=3, max_records=0,
              faults={"controller_failovers": 1, "crashes": 1, "delayed_requests": 1})
    d.do("ControllerFailover")
    d.deliver_all(2)  # broker 2 sees controller epoch 2; broker 3 does not yet
    assert d.s.brokers[1].controller_epoch == 2 and d.s.brokers[2].controller_epoch == 1
    d.do("Crash", 1)
    d.do("ProcessBrokerChange", 1)  # the deposed controller (epoch 1) reacts first and elects 2
    zp = d.s.zk.partitions[0]
    assert (zp.leader, zp.leader_epoch, zp.controller_epoch) == (2, 1, 1)  # 0.8: its write is not fenced
    (stale_to_2,) = [r for r in d.s.inbox[1] if r[0] == LEADER_AND_ISR and r.controller_epoch == 1]
    assert (stale_to_2.leader, stale_to_2.leader_epoch) == (2, 1)
    d.deliver_all(2)
    # broker 2 saw epoch 2: it rejects the deposed controller's LeaderAndIsr and stays a follower of 1
    assert edit.replica(d.s, 2).leader == 1 and edit.replica(d.s, 2).leader_epoch == 0
    # broker 3 gets the same request before the new controller's (overtaking it): it accepts
    queue = d.s.inbox[2]
    i = next(k for k, r in enumerate(queue) if r[0] == LEADER_AND_ISR and r.controller_epoch == 1)
    assert i > 0 and queue[0].controller_epoch == 2
    d.do("DeliverDelayedRequest", 3, i)
    assert edit.replica(d.s, 3).leader == 2 and edit.replica(d.s, 3).leader_epoch == 1
    assert d.s.brokers[2].controller_epoch == 1


def _deposed_request_then_failover(kafka, connections: str, delayed: int = 0):
    """Controller 1 elects 2 after the crash of 1, then loses its session: broker 3's queue holds its
    LeaderAndIsr and, behind it, the new controller's."""
    d = kafka(brokers=3, replication_factor=3, max_records=0, controller_connections=connections,
              faults={"controller_failovers": 1, "crashes": 1, "delayed_requests": delayed})
    d.do("Crash", 1)
    d.do("ProcessBrokerChange", 1)
    d.do("ControllerFailover")
    queue = d.s.inbox[2]
    assert [r.controller_epoch for r in queue] == [1, 2] and queue[0][0] == LEADER_AND_ISR
    return d


def test_per_controller_connections_let_a_deposed_controllers_request_arrive_last(kafka, edit):
    d = _deposed_request_then_failover(kafka, "per-controller")
    assert d.is_enabled("DeliverDelayedRequest", 3, 1)  # another connection: no budget needed
    d.do("DeliverDelayedRequest", 3, 1)  # the new controller's request arrives first
    assert d.s.brokers[2].controller_epoch == 2 and d.s.budget.delayed_requests == 0
    before = edit.replica(d.s, 3)
    d.do("DeliverRequest", 3)  # the deposed controller's LeaderAndIsr, now from an older controller
    assert d.s.inbox[2] == () and edit.replica(d.s, 3) == before  # rejected


def test_a_shared_queue_delivers_in_order_unless_the_budget_allows(kafka):
    d = _deposed_request_then_failover(kafka, "shared")
    assert not d.is_enabled("DeliverDelayedRequest", 3, 1)
    d = _deposed_request_then_failover(kafka, "shared", delayed=1)
    d.do("DeliverDelayedRequest", 3, 1)
    assert d.s.budget.delayed_requests == 0


def test_per_controller_connections_keep_each_controllers_own_order(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=0, controller_connections="per-controller",
              faults={"delayed_requests": 1})
    um = UpdateMetadata
    d.state = edit.with_inbox(d.s, 2, um(UPDATE_METADATA, 1, ()), um(UPDATE_METADATA, 2, ()), um(UPDATE_METADATA, 1, ()))
    d.do("DeliverDelayedRequest", 2, 1)  # overtakes only controller 1's request: free
    assert d.s.budget.delayed_requests == 1
    d.state = edit.with_inbox(d.s, 2, um(UPDATE_METADATA, 1, ()), um(UPDATE_METADATA, 2, ()), um(UPDATE_METADATA, 1, ()))
    d.do("DeliverDelayedRequest", 2, 2)  # overtakes an older request of its own controller: a fault
    assert d.s.budget.delayed_requests == 0
    d.state = edit.with_inbox(d.s, 2, um(UPDATE_METADATA, 1, ()), um(UPDATE_METADATA, 2, ()), um(UPDATE_METADATA, 1, ()))
    assert d.is_enabled("DeliverDelayedRequest", 2, 1) and not d.is_enabled("DeliverDelayedRequest", 2, 2)


def test_deposed_controller_cannot_overwrite_a_newer_controllers_znode(kafka):
    d = kafka(brokers=3, replication_factor=3, max_records=0, faults={"controller_failovers": 1, "crashes": 1})
    d.do("ControllerFailover")
    d.do("Crash", 1)
    d.do("ProcessBrokerChange", 2)  # the new controller elects 2 and writes with controller epoch 2
    zp = d.s.zk.partitions[0]
    assert (zp.leader, zp.controller_epoch, zp.leader_epoch) == (2, 2, 1)
    d.do("ProcessBrokerChange", 1)  # the deposed controller's election is refused (znode epoch 2 > 1)
    assert d.s.zk.partitions[0] == zp


# ---------------------------------------------------------------------------- reassignment
def test_partition_reassignment_12_steps_follow_the_seed_table(kafka, edit):
    """OAR {1,2} -> RAR {3,4}: the seed's {1,2,3} -> {4,5,6} example at replication factor 2."""
    d = kafka(brokers=4, replication_factor=2, max_records=0, assignment=[[1, 2]],
              operations={"reassignments": [{"partition": 0, "target": [3, 4]}]})
    rar = (3, 4)

    def snapshot():
        zp = d.s.zk.partitions[0]
        return zp.replicas, zp.leader, zp.isr

    assert snapshot() == ((1, 2), 1, M(1, 2))  # initial state
    assert "ReassignPartition" not in d.names()
    d.do("RequestReassignment", 0, rar)
    assert d.s.zk.reassign[0] == rar
    taken = []
    zk_ar_before_10 = []

    def step(expected_number):
        zk_ar_before = d.s.zk.partitions[0].replicas
        a = d.reassign_step()
        taken.append(a.args[2])
        assert a.args == (1, 0, expected_number)
        if expected_number < 10:
            zk_ar_before_10.append(d.s.zk.partitions[0].replicas)
        return zk_ar_before

    step(1)  # AR = OAR + RAR
    assert d.s.zk.partitions[0].replicas == (1, 2, 3, 4)
    assert d.s.controller.reassign_old[0] == (1, 2) and d.s.controller.reassign_new[0] == rar
    step(2)  # LeaderAndIsr with AR = OAR + RAR and a new leader epoch
    assert d.s.zk.partitions[0].leader_epoch == 1
    assert lai_requests(d.s, 3)[-1].replicas == (1, 2, 3, 4)
    step(3)  # RAR - OAR -> NewReplica
    assert d.s.controller.replica_states[0][2:] == (RS.NEW, RS.NEW)
    d.deliver_all(1, 2, 3, 4)
    assert "ReassignPartition" not in d.names()  # step 4 waits for RAR to join the ISR
    d.do("Fetch", 3, 0)
    assert "ReassignPartition" not in d.names()
    d.do("Fetch", 4, 0)
    assert snapshot() == ((1, 2, 3, 4), 1, M(1, 2, 3, 4))  # seed: {1..6} 1/{1..6}
    step(4)
    step(5)  # RAR -> OnlineReplica
    assert d.s.controller.replica_states[0][2:] == (RS.ONLINE, RS.ONLINE)
    step(6)  # AR = RAR in memory only
    assert d.s.zk.partitions[0].replicas == (1, 2, 3, 4)
    step(7)  # leader 1 is not in RAR: ReassignedPartition selector elects 3, ISR unchanged
    assert snapshot() == ((1, 2, 3, 4), 3, M(1, 2, 3, 4))  # seed: {1..6} 4/{1..6}
    step(8)  # OAR - RAR -> Offline: out of the ISR
    assert snapshot() == ((1, 2, 3, 4), 3, M(3, 4))  # seed: {1..6} 4/{4,5,6}
    assert d.s.controller.replica_states[0][:2] == (RS.OFFLINE, RS.OFFLINE)
    step(9)  # OAR - RAR -> NonExistentReplica (through the deletion states), StopReplica with delete
    assert d.s.controller.replica_states[0][:2] == (RS.NON_EXISTENT, RS.NON_EXISTENT)
    assert any(r[0] == STOP_REPLICA and r.delete for r in d.s.inbox[0])
    assert d.s.zk.partitions[0].replicas == (1, 2, 3, 4)
    step(10)  # AR = RAR in ZooKeeper, last
    assert snapshot() == ((3, 4), 3, M(3, 4))  # seed: {4,5,6} 4/{4,5,6}
    assert d.s.zk.reassign[0] == rar
    step(11)  # the request is removed
    assert d.s.zk.reassign[0] == ()
    step(12)  # UpdateMetadata to every broker; the reassignment is over
    assert d.s.controller.reassign_step[0] == 0
    assert "ReassignPartition" not in d.names()
    assert taken == list(range(1, 13))
    assert all(ar != rar for ar in zk_ar_before_10)  # AR in ZK became RAR only at step 10
    d.deliver_all(1, 2, 3, 4)
    assert d.s.brokers[0].replicas[0] is None and d.s.brokers[1].replicas[0] is None
    assert edit.replica(d.s, 3).leader == 3 and edit.replica(d.s, 4).leader == 3


def test_IsrSubsetOfReplicas_old_replica_does_not_rejoin_the_isr_after_reassignment_step_8(kafka):
    """Regression: a replica removed by step 8 that still fetches must not rejoin the ISR (it did, and
    stayed in the ISR after step 10 with AR = RAR)."""
    d = kafka(brokers=3, replication_factor=2, max_records=0, assignment=[[1, 2]],
              operations={"reassignments": [{"partition": 0, "target": [1, 3]}]})
    d.do("RequestReassignment", 0, (1, 3))
    d.reassign_step()  # 1
    d.reassign_step()  # 2
    d.deliver_all(1, 3)
    d.do("Fetch", 3, 0)  # 3 joins the ISR
    for _ in range(5):  # 3, 4, 5, 6, 7
        d.reassign_step()
    d.deliver_all(1)
    d.reassign_step()  # 8: replica 2 goes Offline and out of the ISR; StopReplica queued for 2
    assert d.s.zk.partitions[0].isr == M(1, 3)
    d.deliver_all(1)  # the leader learns the new ISR and znode version
    assert d.s.inbox[1], "2 has not processed its StopReplica yet"
    if d.is_enabled("Fetch", 2, 0):  # it may still fetch, but must not rejoin the ISR
        d.do("Fetch", 2, 0)
    assert not d.s.zk.partitions[0].isr >> 2 & 1, "a replica outside the new assignment rejoined the ISR"
    d.reassign_step()  # 9
    d.reassign_step()  # 10
    zp = d.s.zk.partitions[0]
    assert zp.isr & ~M(*zp.replicas) == 0


def test_reassignment_to_the_current_assignment_or_a_dead_broker_is_dropped(kafka):
    d = kafka(brokers=3, replication_factor=2, max_records=0, assignment=[[1, 2]],
              operations={"reassignments": [{"partition": 0, "target": [1, 2]}]})
    d.do("RequestReassignment", 0, (1, 2))
    d.reassign_step()
    assert d.s.zk.reassign[0] == () and d.s.controller.reassign_step[0] == 0
    assert d.s.zk.partitions[0].replicas == (1, 2)

    d = kafka(brokers=3, replication_factor=2, max_records=0, assignment=[[1, 2]],
              operations={"reassignments": [{"partition": 0, "target": [2, 3]}]}, faults={"crashes": 1})
    d.do("Crash", 3)
    d.do("ProcessBrokerChange", 1)
    d.do("RequestReassignment", 0, (2, 3))
    d.reassign_step()
    assert d.s.zk.reassign[0] == () and d.s.zk.partitions[0].replicas == (1, 2)


def test_reassignment_resumes_at_step_1_after_controller_failover(kafka):
    d = kafka(brokers=3, replication_factor=2, max_records=0, assignment=[[1, 2]], stale_controller=False,
              operations={"reassignments": [{"partition": 0, "target": [2, 3]}]},
              faults={"controller_failovers": 1})
    d.do("RequestReassignment", 0, (2, 3))
    d.reassign_step()
    d.reassign_step()
    assert d.s.zk.partitions[0].replicas == (1, 2, 3)
    d.do("ControllerFailover")
    assert d.s.controller.reassign_step[0] == 1
    a = d.reassign_step()
    assert a.args == (2, 0, 1)
    # AR in ZK (OAR + RAR) was the only persistent record of OAR; the new controller keeps it
    assert d.s.controller.reassign_old[0] == (1, 2, 3)
    assert d.s.controller.reassign_new[0] == (2, 3)


# ---------------------------------------------------------------------------- preferred election
def test_preferred_replica_election_moves_leadership_back_to_the_head_of_ar(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, operations={"preferred_elections": 1},
              faults={"crashes": 1})
    d.do("Crash", 1)
    d.do("ProcessBrokerChange", 1)
    d.do("Restart", 1)
    d.do("ProcessBrokerChange", 1)
    d.deliver_all(1, 2)
    d.do("Fetch", 1, 0)  # 1 catches up and rejoins the ISR
    assert d.s.zk.partitions[0].leader == 2 and d.s.zk.partitions[0].isr == M(1, 2)
    epoch = d.s.zk.partitions[0].leader_epoch
    d.do("RequestPreferredElection", 0)
    assert d.s.zk.preferred == 1
    d.do("ElectPreferredLeader", 1, 0)
    zp = d.s.zk.partitions[0]
    assert (zp.leader, zp.isr, zp.leader_epoch) == (1, M(1, 2), epoch + 1)
    assert d.s.zk.preferred == 0


def test_preferred_election_of_the_current_leader_changes_nothing(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, operations={"preferred_elections": 1})
    zp = d.s.zk.partitions[0]
    d.do("RequestPreferredElection", 0)
    d.do("ElectPreferredLeader", 1, 0)
    assert d.s.zk.partitions[0] == zp
    assert d.s.zk.preferred == 0


# ---------------------------------------------------------------------------- controlled shutdown
def test_controlled_shutdown_of_the_leader(kafka, edit):
    d = kafka(brokers=3, replication_factor=3, max_records=0, operations={"controlled_shutdowns": 1})
    d.do("ControlledShutdown", 1, 1)
    zp = d.s.zk.partitions[0]
    assert zp.leader == 2  # first ISR member in AR order that is not shutting down
    assert zp.isr == M(2, 3)
    assert zp.leader_epoch == 1
    assert d.s.brokers[0].alive is False  # the broker stopped after handing over
    assert d.s.controller.shutting_down == M(1)
    d.do("ProcessBrokerChange", 1)
    assert d.s.controller.shutting_down == 0
    assert d.s.zk.partitions[0].leader == 2


def test_controlled_shutdown_of_a_follower_takes_it_out_of_the_isr(kafka):
    d = kafka(brokers=3, replication_factor=3, max_records=0, operations={"controlled_shutdowns": 1})
    d.do("ControlledShutdown", 1, 3)
    zp = d.s.zk.partitions[0]
    assert (zp.leader, zp.isr, zp.leader_epoch) == (1, M(1, 2), 1)
    assert d.s.controller.replica_states[0][2] == RS.OFFLINE


# ---------------------------------------------------------------------------- topic deletion
def test_topic_deletion_goes_through_the_replica_deletion_states(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, operations={"topic_deletions": 1})
    assert "StartTopicDeletion" not in d.names()
    d.do("RequestTopicDeletion")
    assert d.s.zk.deleting == 1
    d.do("StartTopicDeletion", 1)
    c = d.s.controller
    assert c.replica_states[0] == (RS.DELETION_STARTED, RS.DELETION_STARTED)
    assert c.partition_states == (PS.OFFLINE,)
    assert "CompleteTopicDeletion" not in d.names()  # waits for both StopReplica responses
    for b in (1, 2):
        assert any(r[0] == STOP_REPLICA and r.delete for r in d.s.inbox[b - 1])
    d.deliver_all(1)
    assert d.s.controller.replica_states[0] == (RS.DELETION_SUCCESSFUL, RS.DELETION_STARTED)
    assert d.s.brokers[0].replicas[0] is None
    assert "CompleteTopicDeletion" not in d.names()
    d.deliver_all(2)
    assert d.s.controller.replica_states[0] == (RS.DELETION_SUCCESSFUL, RS.DELETION_SUCCESSFUL)
    d.do("CompleteTopicDeletion", 1)
    assert d.s.controller.replica_states[0] == (RS.NON_EXISTENT, RS.NON_EXISTENT)
    assert d.s.controller.partition_states == (PS.NON_EXISTENT,)
    assert d.s.zk.partitions[0].replicas == () and d.s.zk.deleting == 0


def test_topic_deletion_with_a_dead_replica_waits_as_ineligible(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, operations={"topic_deletions": 1},
              faults={"crashes": 1})
    d.do("Crash", 2)
    d.do("ProcessBrokerChange", 1)
    d.do("RequestTopicDeletion")
    d.do("StartTopicDeletion", 1)
    assert d.s.controller.replica_states[0] == (RS.DELETION_STARTED, RS.DELETION_INELIGIBLE)
    d.deliver_all(1)
    assert "CompleteTopicDeletion" not in d.names()
    d.do("Restart", 2)
    d.do("ProcessBrokerChange", 1)  # retried on the returning broker: Ineligible -> Offline -> Started
    assert d.s.controller.replica_states[0] == (RS.DELETION_SUCCESSFUL, RS.DELETION_STARTED)
    d.deliver_all(2)
    d.do("CompleteTopicDeletion", 1)
    assert d.s.zk.partitions[0].replicas == ()


def test_fenced_deposed_controller_does_not_make_an_illegal_deletion_move(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, operations={"topic_deletions": 1},
              faults={"controller_failovers": 1})
    d.do("ControllerFailover")
    d.do("RequestTopicDeletion")
    d.do("StartTopicDeletion", 2)  # the new controller writes the znode with controller epoch 2
    d.do("StartTopicDeletion", 1)  # the deposed controller is fenced on its ISR write: must not raise


def test_deletion_requested_before_topic_creation_is_not_an_illegal_move(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0,
              operations={"topic_creation": True, "topic_deletions": 1})
    d.do("RequestTopicDeletion")
    # the controller never created the partition: nothing to stop, the deletion completes at once
    assert "StartTopicDeletion" not in d.names()
    d.do("CompleteTopicDeletion", 1)
    assert d.s.zk.partitions[0].replicas == ()
    assert d.s.zk.deleting == 0
    assert "CreateTopic" not in d.names()
