"""The named properties (invariants/properties/): for each always-property a reachable state that
satisfies it and an edited copy that violates it; EpochsMonotonic on pairs; the sometimes-properties;
which properties apply to which configuration."""
from __future__ import annotations

import pytest

from isrcheck.invariants import ALL_PROPERTIES, applicable_properties, build_model, property_names
from isrcheck.invariants.properties import DEFINITIONS
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping
from isrcheck.model.records import make_record
from isrcheck.model.state import NO_LEADER

from shared import M

BY_NAME = {p.name: p for p in ALL_PROPERTIES}
ALWAYS = [p.name for p in ALL_PROPERTIES if p.kind == "always"]


def rec(rid, epoch=0):
    return make_record(rid, epoch)


def holds(name, *states):
    return BY_NAME[name].check(*states)


@pytest.fixture
def replicated(kafka):
    """Three brokers, m1 produced, fetched by both followers, committed and acknowledged."""
    d = kafka(brokers=3, replication_factor=3, max_records=2, faults={"crashes": 1})
    d.do("Produce", 1, 0)
    for b in (2, 3, 2, 3):
        d.do("Fetch", b, 0)
    s = d.s
    assert s.ghost[0].acked == M(1)
    assert [r.log for r in (br.replicas[0] for br in s.brokers)] == [(rec(1),)] * 3
    assert s.brokers[0].replicas[0].hw == 1
    assert s.ghost[0].exposed == (rec(1),)
    return d


def test_property_names_are_stable_and_unique():
    names = property_names()
    assert len(names) == len(set(names))
    assert set(names) == {
        "LeaderInIsr", "IsrSubsetOfReplicas", "HighWatermarkBelowLogEnd", "StrongIsr", "NoCommittedWriteLost",
        "LogMatching", "ConsistentRead", "OneLeaderPerEpoch", "ReassignmentRecoverable", "EpochsMonotonic",
        "OnlyValidTransitions", "WriteCommitted", "ReassignmentCanComplete", "ControllerFailoverHappens",
        "TopicDeleted", "EpochCacheCoversLog", "ReassignmentRequestHonoured", "ConsistentFollowerRead"}
    assert BY_NAME["EpochsMonotonic"].kind == "transition"
    assert BY_NAME["OnlyValidTransitions"].kind == "transition"
    assert {p.name for p in ALL_PROPERTIES if p.kind == "sometimes"} == {
        "WriteCommitted", "ReassignmentCanComplete", "ControllerFailoverHappens", "TopicDeleted"}


@pytest.mark.parametrize("name", ALWAYS)
def test_always_property_holds_initially_and_on_a_replicated_state(name, kafka, replicated):
    d = DEFINITIONS[name]
    if d.applies is not None and not d.applies(replicated.cfg):
        # a property of the leader-epoch generations (EpochCacheCoversLog): there, initially
        assert holds(name, kafka(brokers=3, replication_factor=3, generation="kip-320").s)
        return
    assert holds(name, kafka(brokers=3, replication_factor=3).s)
    assert holds(name, replicated.s)


# ---------------------------------------------------------------------------- one violation each
def test_LeaderInIsr(replicated, edit):
    s = replicated.s
    assert not holds("LeaderInIsr", edit.with_zk_partition(s, 0, isr=M(2, 3)))
    assert holds("LeaderInIsr", edit.with_zk_partition(s, 0, isr=M(2, 3), leader=2))
    assert holds("LeaderInIsr", edit.with_zk_partition(s, 0, isr=M(2, 3), leader=NO_LEADER))
    # a deleted partition (no znode) is not checked
    assert holds("LeaderInIsr", edit.with_zk_partition(s, 0, replicas=(), isr=0))


def test_IsrSubsetOfReplicas(kafka, edit):
    s = kafka(brokers=3, replication_factor=2, max_records=0).s  # AR [1, 2]
    assert holds("IsrSubsetOfReplicas", s)
    assert not holds("IsrSubsetOfReplicas", edit.with_zk_partition(s, 0, isr=M(1, 2, 3)))
    assert holds("IsrSubsetOfReplicas", edit.with_zk_partition(s, 0, isr=M(2)))


def test_HighWatermarkBelowLogEnd(replicated, edit):
    s = replicated.s
    assert not holds("HighWatermarkBelowLogEnd", edit.with_replica(s, 3, 0, hw=2))
    assert holds("HighWatermarkBelowLogEnd", edit.with_replica(s, 3, 0, hw=0))
    # on a dead broker too
    dead = edit.with_broker(s, 3, alive=False)
    assert not holds("HighWatermarkBelowLogEnd", edit.with_replica(dead, 3, 0, hw=2))


def test_StrongIsr(replicated, edit):
    s = replicated.s
    lost = edit.with_replica(s, 3, 0, log=(), hw=0)  # an ISR member without what is below the leader's HW
    assert not holds("StrongIsr", lost)
    assert not holds("StrongIsr", edit.with_replica(s, 3, 0, log=(rec(9),), hw=0))  # a different record
    assert holds("StrongIsr", edit.with_zk_partition(lost, 0, isr=M(1, 2)))  # not in the ISR
    assert holds("StrongIsr", edit.with_broker(lost, 3, alive=False))  # not alive
    # the leader is not acting on the current leader epoch: nothing to compare against
    assert holds("StrongIsr", edit.with_zk_partition(lost, 0, leader_epoch=1))
    assert holds("StrongIsr", edit.with_replica(lost, 1, 0, hw=0))  # below HW 0 there is nothing


def test_StrongIsr_holds_right_after_topic_creation(kafka):
    """Regression: an ISR member that has not created its replica yet holds everything below HW 0."""
    d = kafka(brokers=2, replication_factor=2, max_records=1, operations={"topic_creation": True})
    d.do("CreateTopic", 1)
    d.do("DeliverRequest", 1)  # broker 1 leads with an empty log; broker 2 has not yet got its LeaderAndIsr
    assert d.s.brokers[1].replicas[0] is None
    assert d.s.brokers[0].replicas[0].hw == 0
    assert holds("StrongIsr", d.s)


def test_NoCommittedWriteLost(replicated, edit):
    s = replicated.s
    lost = edit.with_replica(s, 2, 0, log=(), hw=0)
    assert not holds("NoCommittedWriteLost", lost)
    assert not holds("NoCommittedWriteLost", edit.with_replica(s, 1, 0, log=(), hw=0))  # the leader itself
    assert holds("NoCommittedWriteLost", edit.with_zk_partition(lost, 0, isr=M(1, 3)))
    assert holds("NoCommittedWriteLost", edit.with_broker(lost, 2, alive=False))
    assert holds("NoCommittedWriteLost", edit.with_ghost(lost, 0, acked=0))  # nothing was acknowledged
    # a replica that was deleted while the broker is in the ISR has lost the write too
    assert not holds("NoCommittedWriteLost", edit.with_broker(s, 2, replicas=(None,)))


def test_LogMatching(replicated, edit):
    s = replicated.s
    assert not holds("LogMatching", edit.with_replica(s, 2, 0, log=(rec(9),), hw=1))
    assert holds("LogMatching", edit.with_replica(s, 2, 0, log=(rec(9),), hw=0))  # differs only above HW
    longer = edit.with_replica(s, 1, 0, log=(rec(1), rec(2)), hw=2)
    assert holds("LogMatching", edit.with_replica(longer, 2, 0, log=(rec(1), rec(5)), hw=1))
    assert not holds("LogMatching", edit.with_replica(longer, 2, 0, log=(rec(1), rec(5)), hw=2))
    # only live in-sync replicas count: a dead one, or one outside the ISR, may hold a stale suffix
    diverged = edit.with_replica(s, 3, 0, log=(rec(9),), hw=1)
    assert not holds("LogMatching", diverged)
    assert holds("LogMatching", edit.with_broker(diverged, 3, alive=False))
    assert holds("LogMatching", edit.with_zk_partition(diverged, 0, isr=M(1, 2)))


def test_ConsistentRead(replicated, edit):
    s = replicated.s
    assert not holds("ConsistentRead", edit.with_replica(s, 1, 0, log=(rec(2),), hw=1))
    assert holds("ConsistentRead", edit.with_replica(s, 1, 0, log=(rec(2),), hw=0))
    assert holds("ConsistentRead", edit.with_replica(s, 1, 0, log=(rec(1), rec(2)), hw=2))
    # only leaders serve reads: a follower's divergent log does not count here
    assert holds("ConsistentRead", edit.with_replica(s, 2, 0, log=(rec(2),), hw=1))


def test_OneLeaderPerEpoch(replicated, edit):
    s = replicated.s
    two = edit.with_replica(s, 2, 0, leader=2, leader_epoch=0)
    assert not holds("OneLeaderPerEpoch", two)
    assert holds("OneLeaderPerEpoch", edit.with_replica(s, 2, 0, leader=2, leader_epoch=1))
    assert holds("OneLeaderPerEpoch", edit.with_broker(two, 1, alive=False))


def test_ReassignmentRecoverable(kafka, edit):
    s = kafka(brokers=3, replication_factor=2, max_records=0, assignment=[[1, 2]]).s
    pending = edit.with_ghost(s._replace(zk=s.zk._replace(reassign=((3,),))), 0, reassign_origin=(1, 2))
    assert holds("ReassignmentRecoverable", pending)  # AR (1, 2) still holds the origin
    assert holds("ReassignmentRecoverable", edit.with_zk_partition(pending, 0, replicas=(1, 2, 3)))
    assert not holds("ReassignmentRecoverable", edit.with_zk_partition(pending, 0, replicas=(2, 3)))
    assert holds("ReassignmentRecoverable", edit.with_zk_partition(pending, 0, replicas=(3,)))  # step 10 done


# ---------------------------------------------------------------------------- EpochsMonotonic
def test_EpochsMonotonic(replicated, edit):
    s = replicated.s
    assert holds("EpochsMonotonic", s, s)
    up = edit.with_zk_partition(s, 0, leader_epoch=1)
    assert holds("EpochsMonotonic", s, up)
    assert not holds("EpochsMonotonic", up, s)  # ZooKeeper leader epoch went back
    newer = s._replace(zk=s.zk._replace(controller_epoch=2))
    assert holds("EpochsMonotonic", s, newer)
    assert not holds("EpochsMonotonic", newer, s)  # controller epoch went back
    b2 = edit.with_broker(s, 2, controller_epoch=3)
    assert not holds("EpochsMonotonic", b2, s)  # a live broker forgot a controller epoch
    assert holds("EpochsMonotonic", b2, edit.with_broker(s, 2, alive=False))  # a crash may forget it
    r3 = edit.with_replica(s, 3, 0, leader_epoch=2)
    assert not holds("EpochsMonotonic", r3, s)  # a live replica's leader epoch went back
    assert holds("EpochsMonotonic", r3, edit.with_broker(s, 3, replicas=(None,)))  # replica deleted


def test_EpochsMonotonic_on_real_steps(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, faults={"crashes": 1, "controller_failovers": 1})
    before = d.s
    for name, *args in (("Crash", 2), ("ProcessBrokerChange", 1), ("ControllerFailover",), ("Restart", 2),
                        ("ProcessBrokerChange", 2)):
        d.do(name, *args)
        assert holds("EpochsMonotonic", before, d.s), name
        before = d.s


# ---------------------------------------------------------------------------- sometimes-properties
def test_WriteCommitted(kafka, replicated):
    assert not holds("WriteCommitted", kafka(brokers=3, replication_factor=3).s)
    assert holds("WriteCommitted", replicated.s)


def test_ControllerFailoverHappens(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, faults={"controller_failovers": 1})
    assert not holds("ControllerFailoverHappens", d.s)
    d.do("ControllerFailover")
    assert holds("ControllerFailoverHappens", d.s)


def test_TopicDeleted(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, operations={"topic_deletions": 1})
    d.do("RequestTopicDeletion")
    d.do("StartTopicDeletion", 1)
    d.deliver_all(1, 2)
    assert not holds("TopicDeleted", d.s)
    d.do("CompleteTopicDeletion", 1)
    assert holds("TopicDeleted", d.s)


def _reassignment_completes(cfg):
    (p,) = [p for p in applicable_properties(cfg) if p.name == "ReassignmentCanComplete"]
    return p


def test_ReassignmentCanComplete(kafka):
    d = kafka(brokers=3, replication_factor=2, max_records=0, assignment=[[1, 2]],
              operations={"reassignments": [{"partition": 0, "target": [2, 3]}]})
    prop = _reassignment_completes(d.cfg)
    assert prop.kind == "sometimes"
    assert not prop.check(d.s)
    d.do("RequestReassignment", 0, (2, 3))
    for _ in range(3):
        d.reassign_step()
    d.deliver_all(1, 2, 3)
    d.do("Fetch", 3, 0)
    while d.s.controller.reassign_step[0] not in (0, 11):
        assert not prop.check(d.s)
        d.reassign_step()
    assert d.s.zk.partitions[0].replicas == (2, 3)
    assert not prop.check(d.s)  # AR is the target, but the request is still pending (step 11 not done)
    d.reassign_step()
    assert prop.check(d.s)


def test_ReassignmentCanComplete_in_ALL_PROPERTIES_is_not_the_topic_deletion_check(kafka):
    """Regression: the catalogue entry used to carry the TopicDeleted check."""
    d = kafka(brokers=2, replication_factor=2, max_records=0, operations={"topic_deletions": 1})
    d.do("RequestTopicDeletion")
    d.do("StartTopicDeletion", 1)
    d.deliver_all(1, 2)
    d.do("CompleteTopicDeletion", 1)
    # no reassignment was ever requested, yet the catalogue's check says one completed
    assert not BY_NAME["ReassignmentCanComplete"].check(d.s)


# ---------------------------------------------------------------------------- applicable_properties
def _names(**raw):
    return [p.name for p in applicable_properties(from_mapping(raw))]


def test_applicable_properties_always_include_every_safety_property():
    names = _names(brokers=2, max_records=0)
    # nothing to witness (no records, faults or operations); every safety property but those that
    # say they mean nothing here (EpochCacheCoversLog: the high-watermark generation keeps no cache)
    safety = [p.name for p in ALL_PROPERTIES if p.kind != "sometimes"
              and (getattr(DEFINITIONS[p.name], "applies", None) is None
                   or DEFINITIONS[p.name].applies(from_mapping({"brokers": 2, "max_records": 0})))]
    assert names == safety and "EpochCacheCoversLog" not in names


@pytest.mark.parametrize("raw, name", [
    ({"max_records": 1}, "WriteCommitted"),
    ({"max_records": 0, "faults": {"controller_failovers": 1}}, "ControllerFailoverHappens"),
    ({"max_records": 0, "operations": {"topic_deletions": 1}}, "TopicDeleted"),
    ({"max_records": 0, "brokers": 3, "replication_factor": 2, "assignment": [[1, 2]],
      "operations": {"reassignments": [{"partition": 0, "target": [2, 3]}]}}, "ReassignmentCanComplete"),
], ids=["WriteCommitted", "ControllerFailoverHappens", "TopicDeleted", "ReassignmentCanComplete"])
def test_applicable_properties_add_a_sometimes_property_only_when_possible(raw, name):
    assert _names(**raw).count(name) == 1
    others = {"WriteCommitted", "ControllerFailoverHappens", "TopicDeleted", "ReassignmentCanComplete"} - {name}
    assert not others & set(_names(**raw))


def test_reassignment_to_the_current_assignment_cannot_complete_anything():
    names = _names(brokers=3, replication_factor=2, max_records=0, assignment=[[1, 2]],
                   operations={"reassignments": [{"partition": 0, "target": [1, 2]}]})
    assert "ReassignmentCanComplete" not in names


# ---------------------------------------------------------------------------- with the checker
def test_build_model_checks_a_tiny_replication_model():
    cfg = from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1})
    model = build_model(cfg)
    assert [p.name for p in model.properties()] == [p.name for p in applicable_properties(cfg)]
    r = Checker(model).run()
    assert r.outcome == "success"
    assert r.unwitnessed == []  # WriteCommitted was witnessed


def test_NoCommittedWriteLost_under_unclean_election():
    """Unclean election is the notes' known way to lose an acknowledged write; the checker finds it."""
    cfg = from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1, "unclean_leader_election": True,
                        "faults": {"crashes": 2}})
    r = Checker(build_model(cfg)).run()
    assert r.outcome == "safety_failure"
    (v,) = r.violations
    assert v.property == "NoCommittedWriteLost"
    last = v.trace[-1].state
    assert last.zk.partitions[0].leader == 2 and last.ghost[0].acked
    assert not BY_NAME["NoCommittedWriteLost"].check(last)
    assert all(BY_NAME["NoCommittedWriteLost"].check(step.state) for step in v.trace[:-1])
