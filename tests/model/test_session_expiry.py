"""ExpireSession and Reregister: a running broker loses its ZooKeeper registration and gets it back.

The controller sees only registrations, so an expiry is a broker failure to it and the new
registration a start-up, while the broker itself keeps every bit of its state throughout
(specs/05-replication.md#session-expiry). These tests drive the model step by step.
"""
from __future__ import annotations

from collections import deque

from isrcheck.model.actions import apply, enabled_actions
from isrcheck.model.kafka import initial_state
from isrcheck.model.protocol import Protocol
from isrcheck.model.tables import ReplicaState as RS

SESSION_ACTIONS = {"ExpireSession", "Reregister"}


def three_brokers(kafka, **extra):
    """Three replicas of one partition, broker 1 leading with ISR {1,2,3}, one expiry to spend."""
    raw = dict(brokers=3, replication_factor=3, max_records=2, min_insync_replicas=2,
               faults={"session_expiries": 1, "isr_shrinks": 1})
    raw.update(extra)
    return kafka(**raw)


def test_expiry_removes_only_the_registration(kafka, edit):
    d = three_brokers(kafka)
    before = d.s
    d.do("ExpireSession", 1)
    assert not d.s.zk.live >> 1 & 1
    assert d.s.brokers == before.brokers  # alive, same logs, same role, same controller epoch
    assert d.s.inbox == before.inbox
    assert d.s.zk.partitions == before.zk.partitions  # the leader/ISR znode is the controller's to change
    assert d.s.budget.session_expiries == 0
    assert d.is_enabled("Reregister", 1)
    assert not any(a.name == "ExpireSession" for a in d.enabled())  # budget spent
    assert d.is_enabled("ProcessBrokerChange", 1)


def test_expired_leader_is_replaced_but_still_believes_it_leads(kafka, edit):
    d = three_brokers(kafka)
    d.do("Produce", 1, 0)
    d.do("ExpireSession", 1)
    assert d.is_enabled("ShrinkIsr", 1, 0, 2)  # its ISR write would still succeed: nothing changed yet
    d.do("ProcessBrokerChange", 1)
    zp = d.s.zk.partitions[0]
    assert zp.leader in (2, 3) and not zp.isr >> 1 & 1 and zp.leader_epoch == 1
    assert d.s.controller.replica_states[0][0] == RS.OFFLINE
    assert d.s.inbox[0] == ()  # the controller sends nothing to a broker it thinks dead
    old = edit.replica(d.s, 1)
    assert d.s.brokers[0].alive and old.leader == 1 and old.leader_epoch == 0
    assert old.isr == edit.mask(1, 2, 3) and old.log  # its cached ISR and its unacknowledged record
    # it still acts as the leader of epoch 0: it accepts writes and would let followers fetch
    assert d.is_enabled("Produce", 1, 0)
    # but the znode version check refuses its ISR writes now that the controller wrote the partition
    assert not any(a.name == "ShrinkIsr" and a.args[0] == 1 for a in d.enabled())


def test_followers_that_have_not_heard_keep_fetching_from_the_expired_leader(kafka):
    d = three_brokers(kafka)
    d.do("ExpireSession", 1)
    d.do("ProcessBrokerChange", 1)
    d.do("Produce", 1, 0)
    new = d.s.zk.partitions[0].leader
    other = 5 - new  # the follower of {2, 3} that is not the new leader
    assert d.s.brokers[other - 1].replicas[0].leader == 1  # its LeaderAndIsr is still in its inbox
    assert d.is_enabled("Fetch", other, 0)  # so it fetches from the expired leader, epoch 0 on both sides
    d.deliver_all(other)
    assert d.s.brokers[other - 1].replicas[0].leader == new  # now it follows the new leader


def test_reregistration_brings_the_broker_back_as_a_follower(kafka, edit):
    d = three_brokers(kafka)
    d.do("ExpireSession", 1)
    d.do("ProcessBrokerChange", 1)
    d.deliver_all(2, 3)
    new = d.s.zk.partitions[0].leader
    d.do("Reregister", 1)
    assert d.s.zk.live >> 1 & 1 and not d.is_enabled("Reregister", 1)
    assert d.s.budget.session_expiries == 0  # healing spends nothing
    assert edit.replica(d.s, 1).leader == 1  # nothing told it yet
    d.do("ProcessBrokerChange", 1)  # a broker start-up to the controller
    assert d.s.controller.live >> 1 & 1
    assert d.s.controller.replica_states[0][0] == RS.ONLINE
    d.deliver_all(1)
    r = edit.replica(d.s, 1)
    zp = d.s.zk.partitions[0]
    assert r.leader == new != 1 and r.leader_epoch == zp.leader_epoch
    assert d.is_enabled("Fetch", 1, 0)
    assert not d.is_enabled("Produce", 1, 0)


def test_reregistration_the_controller_missed_is_seen_only_with_bounce_detection(kafka, edit):
    d = three_brokers(kafka)
    d.do("ExpireSession", 1)
    d.do("Reregister", 1)
    assert d.s.zk.live == d.s.controller.live
    assert "ProcessBrokerChange" not in d.names()  # the 0.8 controller sees the same registrations

    d = three_brokers(kafka, detect_restarts=True)
    d.do("ExpireSession", 1)
    d.do("Reregister", 1)
    assert d.s.zk.registrations[0] == d.s.controller.registrations[0] + 1  # a new czxid
    d.do("ProcessBrokerChange", 1)  # failure, then start-up
    zp = d.s.zk.partitions[0]
    assert zp.leader != 1 and zp.leader_epoch == 1
    d.deliver_all(1)
    assert edit.replica(d.s, 1).leader == zp.leader


def test_a_stopped_broker_comes_back_by_restart_not_reregister(kafka):
    d = kafka(brokers=3, replication_factor=3, max_records=0, faults={"session_expiries": 1, "crashes": 1})
    d.do("Crash", 2)
    assert not d.is_enabled("Reregister", 2)
    # an expired broker that then crashes is a stopped broker like any other
    d = kafka(brokers=3, replication_factor=3, max_records=0, faults={"session_expiries": 1, "crashes": 1})
    d.do("ExpireSession", 3)
    d.do("Crash", 3)
    assert not d.is_enabled("Reregister", 3)
    d.do("ProcessBrokerChange", 1)
    assert d.is_enabled("Restart", 3)


def test_the_budget_bounds_the_expiries(kafka):
    d = three_brokers(kafka, faults={"session_expiries": 2})
    d.do("ExpireSession", 1)
    d.do("ProcessBrokerChange", 1)
    d.do("Reregister", 1)
    d.do("ProcessBrokerChange", 1)
    assert d.s.budget.session_expiries == 1
    assert {a.args for a in d.enabled() if a.name == "ExpireSession"} == {(1,), (2,), (3,)}
    d.do("ExpireSession", 1)  # the same broker may expire again
    assert d.s.budget.session_expiries == 0
    assert not any(a.name == "ExpireSession" for a in d.enabled())
    assert [a.args for a in d.enabled() if a.name == "Reregister"] == [(1,)]


def test_without_a_budget_neither_action_is_ever_enabled(edit) -> None:
    """Every reachable state of a small model with the other faults: the two actions never appear,
    which is what keeps every pinned model's state count where it was."""
    protocol = Protocol(edit.config(brokers=2, replication_factor=2, max_records=1, detect_restarts=True,
                                    faults={"crashes": 1, "undetected_restarts": 1, "isr_shrinks": 1}))
    start = initial_state(protocol)
    seen = {start}
    todo = deque([start])
    while todo:
        s = todo.popleft()
        enabled = enabled_actions(protocol, s)
        assert not {a.name for a in enabled} & SESSION_ACTIONS
        assert all(br.alive == bool(s.zk.live >> (i + 1) & 1) for i, br in enumerate(s.brokers))
        for a in enabled:
            t = apply(protocol, s, a)
            if t not in seen:
                seen.add(t)
                todo.append(t)
    assert len(seen) > 100  # the walk did cover crashes and restarts


def test_the_sequence_diagram_shows_a_running_broker_losing_and_renewing_its_session(kafka):
    """The report's sequence diagram: the expiry is a fault note on the broker (not a crash) and the
    re-registration a message to the store, like a restart's."""
    from isrcheck.model.actions import Action
    from isrcheck.render.sequence import Message, Note, step_events

    d = three_brokers(kafka)
    s0 = d.s
    s1 = d.do("ExpireSession", 2)
    s2 = d.do("Reregister", 2)
    expired = step_events(1, s0, Action("ExpireSession", (2,)), s1)
    assert [(type(e), e.lane, e.text, e.fault) for e in expired] == [
        (Note, "b2", "session expired (still running)", True)]
    renewed = step_events(2, s1, Action("Reregister", (2,)), s2)
    assert [(e.src, e.dst, e.label) for e in renewed if isinstance(e, Message)] == [("b2", "zk", "register broker 2")]
