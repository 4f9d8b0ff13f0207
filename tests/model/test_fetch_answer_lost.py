"""FetchAnswerLost (budget faults.lost_fetch_answers): the leader handles a fetch whose answer is lost.

specs/05-replication.md#fetch: the leader does exactly what Fetch makes it do (records the follower's
offset, may add it to the ISR, recomputes its HW and acknowledges what that commits) and the
follower changes nothing; enabled only where that changes the leader, never with budget 0. A real
run's dropped frame between two brokers is this step (issue 30, torture --seed 10).
"""
from __future__ import annotations

import pytest

from isrcheck.model.actions import Action, apply
from isrcheck.model.config import Faults

BASE = dict(brokers=2, replication_factor=2, max_records=2)


def test_the_budget_defaults_to_zero_and_then_the_fault_never_happens(kafka) -> None:
    assert Faults().lost_fetch_answers == 0
    d = kafka(**BASE)
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)
    d.do("Produce", 1, 0)
    assert d.is_enabled("Fetch", 2, 0) and "FetchAnswerLost" not in d.names()
    with pytest.raises(ValueError, match="lost_fetch_answers"):
        apply(d.protocol, d.s, Action("FetchAnswerLost", (2, 0)))


def test_the_leader_counts_the_fetch_as_in_fetch_and_the_follower_changes_nothing(kafka) -> None:
    d = kafka(**BASE, faults={"lost_fetch_answers": 1})
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)  # the follower holds record 1; the leader counted offset 0, its HW is still 0
    before = d.s
    assert before.brokers[0].replicas[0].hw == 0 and before.brokers[1].replicas[0].log
    fetched = apply(d.protocol, before, Action("Fetch", (2, 0)))
    d.do("FetchAnswerLost", 2, 0)
    leader, follower = d.s.brokers[0].replicas[0], d.s.brokers[1].replicas[0]
    assert leader == fetched.brokers[0].replicas[0]  # the leader's half is Fetch's
    assert leader.hw == 1 and leader.remote_leo[1] == 1
    assert d.s.ghost[0].acked == fetched.ghost[0].acked and d.s.ghost[0].acked  # record 1 acknowledged
    assert follower == before.brokers[1].replicas[0]  # the answer never arrived
    assert d.s.budget.lost_fetch_answers == 0 and fetched.budget.lost_fetch_answers == 1
    d.do("Fetch", 2, 0)  # it fetches again from the same offset and now learns the HW
    assert d.s.brokers[1].replicas[0].hw == 1


def test_a_lost_answer_that_would_change_nothing_is_no_step(kafka) -> None:
    d = kafka(**BASE, faults={"lost_fetch_answers": 2})
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)
    d.do("FetchAnswerLost", 2, 0)
    # the leader already recorded this offset and the follower is in its ISR: losing the next answer
    # would spend budget on a step that changes no replica
    assert d.is_enabled("Fetch", 2, 0) and not d.is_enabled("FetchAnswerLost", 2, 0)
    d.do("Fetch", 2, 0)
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)  # a new offset: the leader's half changes its record of it again
    assert d.is_enabled("FetchAnswerLost", 2, 0)


def test_a_lost_answer_still_adds_the_follower_to_the_isr(kafka) -> None:
    d = kafka(**BASE, faults={"lost_fetch_answers": 1, "isr_shrinks": 1})
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)  # the follower holds record 1
    d.do("ShrinkIsr", 1, 0, 2)  # the leader alone: its HW rises to 1
    assert d.s.zk.partitions[0].isr == 0b010 and d.s.brokers[0].replicas[0].hw == 1
    follower = d.s.brokers[1].replicas[0]
    d.do("FetchAnswerLost", 2, 0)  # offset 1 is at the leader's HW: the follower may join
    assert d.s.zk.partitions[0].isr == 0b110 and d.s.brokers[0].replicas[0].isr == 0b110
    assert d.s.brokers[1].replicas[0] == follower  # but it never hears of it (its HW stays 0)


def test_each_use_spends_one_unit_and_the_budget_bounds_them(kafka) -> None:
    d = kafka(**BASE, faults={"lost_fetch_answers": 1})
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)
    d.do("FetchAnswerLost", 2, 0)
    d.do("Fetch", 2, 0)
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)
    assert not d.is_enabled("FetchAnswerLost", 2, 0)  # spent, though the leader's half would change it


def test_the_sequence_diagram_shows_the_request_and_the_lost_answer(kafka) -> None:
    from isrcheck.render.sequence import Message, Note, step_events

    d = kafka(**BASE, faults={"lost_fetch_answers": 1})
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)
    s0 = d.s
    s1 = d.do("FetchAnswerLost", 2, 0)
    events = step_events(3, s0, Action("FetchAnswerLost", (2, 0)), s1)
    assert [(e.src, e.dst, e.label) for e in events if isinstance(e, Message)][0] == ("b2", "b1", "Fetch p0 from offset 1")
    assert [(e.lane, e.text, e.fault) for e in events if isinstance(e, Note)] == [("b1", "answer to b2 lost", True)]
    assert not any(isinstance(e, Message) and e.response and e.dst == "b2" for e in events)  # no answer arrives
