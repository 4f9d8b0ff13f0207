"""isr_change = "alter-isr" (KIP-497): a leader's ISR change is a request the controller applies.

specs/05-replication.md#alterisr: the change is pending at the leader until the controller's answer;
the controller fences an older leader epoch, answers a request it already applied with the znode,
refuses a stale znode version and (KIP-841/903) a new member that is down or registered again
since its fetch. These tests drive the model step by step.
"""
from __future__ import annotations

import pytest
from shared import M

from isrcheck.model import alterisr as A
from isrcheck.model.alterisr import AlterIsr, Decision
from isrcheck.model.extension import Scope
from isrcheck.model.config import ConfigError, from_mapping
from isrcheck.model.history import configured_protocol
from isrcheck.model.protocol import Protocol
from isrcheck.model.state import make_zk_partition

BASE = dict(brokers=3, replication_factor=3, max_records=1, generation="kip-320", isr_change="alter-isr")


def field(d, b: int, name: str, p: int = 0) -> int:
    return d.protocol.field(d.s.brokers[b - 1].replicas[p], name)


def test_the_key_selects_the_protocol_and_defaults_to_the_leaders_own_write() -> None:
    assert type(configured_protocol(from_mapping({"brokers": 2}))) is Protocol
    p = configured_protocol(from_mapping({"brokers": 2, "isr_change": "alter-isr"}))
    assert isinstance(p, AlterIsr) and {a.name for a in p.variant_actions} >= {"HandleAlterIsr", "CompleteAlterIsr"}
    with pytest.raises(ConfigError, match="isr_change"):
        from_mapping({"brokers": 2, "isr_change": "alter-partition"})


def test_a_variant_keeps_its_rules_and_gains_the_alter_isr_state() -> None:
    class Quiet(Protocol):
        def may_shrink_isr(self, leader_replica, follower, new_isr):  # type: ignore[no-untyped-def]
            return False

    cfg = from_mapping({"brokers": 2, "isr_change": "alter-isr"})
    p = configured_protocol(cfg, Quiet(cfg))
    assert isinstance(p, Quiet) and isinstance(p, AlterIsr)
    assert type(p).__mro__.index(Quiet) < type(p).__mro__.index(AlterIsr)  # the variant decides first
    assert A.PENDING in [f.name for f in p.extension.of(Scope.REPLICA)]


def test_a_shrink_is_pending_until_the_controller_applies_it_and_the_answer_comes(kafka) -> None:
    d = kafka(**BASE, faults={"isr_shrinks": 1})
    v = d.s.zk.partitions[0].version
    d.do("ShrinkIsr", 1, 0, 3)
    assert d.s.zk.partitions[0].isr == M(1, 2, 3) and d.s.zk.partitions[0].version == v  # nothing written
    r = d.s.brokers[0].replicas[0]
    assert r.isr == M(1, 2, 3)  # the committed ISR still counts the removed member
    assert field(d, 1, A.PENDING) == M(1, 2) and field(d, 1, A.SENT) == M(1, 2) and field(d, 1, A.QUEUED) == 1
    assert not d.is_enabled("ShrinkIsr", 1, 0, 2)  # one change at a time
    d.do("HandleAlterIsr", 1, 0)
    zp = d.s.zk.partitions[0]
    assert zp.isr == M(1, 2) and zp.version == v + 1 and zp.leader_epoch == 0  # the controller wrote it
    assert d.s.inbox == ((), (), ())  # and sent no LeaderAndIsr
    assert field(d, 1, A.ANSWER) == A.ANSWER_APPLIED and field(d, 1, A.ANSWER_VERSION) == v + 1
    d.do("CompleteAlterIsr", 1, 0)
    r = d.s.brokers[0].replicas[0]
    assert (r.isr, r.zk_version) == (M(1, 2), v + 1)
    assert all(field(d, 1, n) == 0 for n in (A.PENDING, A.QUEUED, A.SENT, A.ANSWER))


def test_the_high_watermark_waits_for_a_member_a_pending_expansion_adds(kafka) -> None:
    d = kafka(**{**BASE, "brokers": 2, "replication_factor": 2}, faults={"isr_shrinks": 1})
    d.do("ShrinkIsr", 1, 0, 2)
    d.do("HandleAlterIsr", 1, 0)
    d.do("CompleteAlterIsr", 1, 0)
    d.do("Fetch", 2, 0)  # at the HW (0): the leader proposes {1,2}
    assert field(d, 1, A.PENDING) == M(1, 2)
    d.do("Produce", 1, 0)
    assert d.s.brokers[0].replicas[0].hw == 0  # the maximal ISR {1,2}: broker 2 has not fetched m1
    assert d.s.ghost[0].acked == 0


def test_a_crash_loses_the_request_in_flight(kafka) -> None:
    d = kafka(**BASE, faults={"isr_shrinks": 1, "crashes": 1})
    d.do("ShrinkIsr", 1, 0, 3)
    d.do("Crash", 1)
    assert not any(a.name == "HandleAlterIsr" for a in d.enabled())


def test_a_leader_and_isr_cancels_the_pending_change_but_keeps_the_managers_item(kafka) -> None:
    d = kafka(**BASE, faults={"isr_shrinks": 1, "crashes": 1})
    d.do("ShrinkIsr", 1, 0, 3)
    d.do("Crash", 2)
    d.do("ProcessBrokerChange", 1)  # the controller removes 2: epoch 1, LeaderAndIsr to the leader
    d.do("DeliverRequest", 1)
    assert field(d, 1, A.PENDING) == 0 and field(d, 1, A.QUEUED) == 1
    d.do("HandleAlterIsr", 1, 0)
    assert field(d, 1, A.ANSWER) == A.ANSWER_REFUSED  # leader epoch 0 < 1: fenced
    d.do("CompleteAlterIsr", 1, 0)
    assert d.s.brokers[0].replicas[0].isr == M(1, 3) and field(d, 1, A.QUEUED) == 0


@pytest.mark.parametrize("znode, request_, expected", [
    ((1, M(1, 2), 1, 3), (M(1, 2), 0, 3), Decision.FENCED),
    ((1, M(1, 2), 1, 3), (M(1, 2), 1, 2), Decision.ALREADY),  # applied before, answer lost
    ((1, M(1, 2, 3), 1, 3), (M(1, 2), 1, 2), Decision.STALE_VERSION),
    ((1, M(1, 2, 3), 1, 3), (M(1, 2), 1, 3), Decision.WRITE),
], ids=["fenced", "already", "stale-version", "write"])
def test_the_controllers_decision(znode, request_, expected) -> None:
    p = configured_protocol(from_mapping({"brokers": 3, "isr_change": "alter-isr"}))
    leader, isr, epoch, version = znode
    zp = make_zk_partition((1, 2, 3), leader, isr, epoch, version, 1, ())
    assert p.alter_isr_decision(zp, 1, *request_) is expected


def test_kafka_14144s_rule_refuses_the_copy_of_an_applied_request() -> None:
    cfg = from_mapping({"brokers": 3, "isr_change": "alter-isr", "generation": "kip-320",
                        "reintroduce": ["KAFKA-14144"]})
    zp = make_zk_partition((1, 2, 3), 1, M(1, 2), 1, 3, 1, ())
    assert configured_protocol(cfg).alter_isr_decision(zp, 1, M(1, 2), 1, 2) is Decision.STALE_VERSION


def test_a_lost_answer_applies_the_request_and_sends_it_again(kafka) -> None:
    d = kafka(**{**BASE, "brokers": 2, "replication_factor": 2}, faults={"isr_shrinks": 1, "lost_isr_answers": 1})
    v = d.s.zk.partitions[0].version
    d.do("ShrinkIsr", 1, 0, 2)
    d.do("AlterIsrAnswerLost", 1, 0)
    assert d.s.zk.partitions[0].isr == M(1) and field(d, 1, A.ANSWER) == 0 and field(d, 1, A.SENT) == M(1)
    assert d.s.budget.lost_isr_answers == 0
    d.do("HandleAlterIsr", 1, 0)  # the copy: the znode already holds it
    assert field(d, 1, A.ANSWER) == A.ANSWER_APPLIED and d.s.zk.partitions[0].version == v + 1
    d.do("CompleteAlterIsr", 1, 0)
    assert d.s.brokers[0].replicas[0].isr == M(1)


def test_an_expansion_for_a_member_that_went_down_is_refused_and_the_leader_goes_back(kafka) -> None:
    d = kafka(**{**BASE, "brokers": 2, "replication_factor": 2, "detect_restarts": True},
              faults={"isr_shrinks": 1, "crashes": 1})
    d.do("ShrinkIsr", 1, 0, 2)
    d.do("HandleAlterIsr", 1, 0)
    d.do("CompleteAlterIsr", 1, 0)
    d.do("Fetch", 2, 0)
    assert field(d, 1, A.ADDED) == 2
    d.do("Crash", 2)
    d.do("HandleAlterIsr", 1, 0)
    assert field(d, 1, A.ANSWER) == A.ANSWER_NOT_APPLIED and d.s.zk.partitions[0].isr == M(1)
    d.do("CompleteAlterIsr", 1, 0)
    assert field(d, 1, A.PENDING) == 0  # INELIGIBLE_REPLICA: back to the committed ISR


def test_a_dead_isr_member_expires_fairly(kafka) -> None:
    d = kafka(**{**BASE, "brokers": 2, "replication_factor": 2}, faults={"crashes": 1})
    d.do("Crash", 2)
    assert d.is_enabled("ExpireIsrMember", 1, 0, 2)
    assert next(a for a in d.protocol.variant_actions if a.name == "ExpireIsrMember").fair
    assert d.s.budget == d.do("ExpireIsrMember", 1, 0, 2).budget  # unbudgeted
