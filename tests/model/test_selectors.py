"""The five leader selectors (model/selectors.py) against kafka-notes.md's selector table.

| selector | new leader | new ISR | receivers |
| NoOp | current leader | current ISR | assigned replicas |
| OfflinePartition | first live assigned replica in the ISR; else, only if unclean election is enabled,
|   first live assigned replica; else error | live ISR if the leader came from it, else [leader] | live AR |
| ReassignedPartition | first RAR replica that is live and in the ISR; else error | current ISR | RAR |
| PreferredReplica | first assigned replica, only if live and in the ISR (error if it already leads) |
|   current ISR | live assigned replicas |
| ControlledShutdown | first ISR member not shutting down | ISR minus shutting-down | live AR |
Assignment order decides ties.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.model.selectors import (
    SELECTORS,
    Election,
    NoEligibleLeader,
    Selector,
    SelectorInput,
    controlled_shutdown,
    no_op,
    offline_partition,
    preferred_replica,
    reassigned_partition,
)

HYP = settings(max_examples=120, deadline=None)


def m(*brokers: int) -> int:
    out = 0
    for b in brokers:
        out |= 1 << b
    return out


def inp(assignment, leader, isr, live, shutting_down=(), target=(), unclean=False) -> SelectorInput:
    return SelectorInput(tuple(assignment), leader, m(*isr), m(*live), m(*shutting_down), tuple(target), unclean)


# ---------------------------------------------------------------------------- hand-made cases
def test_selector_registry_has_the_five():
    assert set(SELECTORS) == set(Selector)
    assert {s.value for s in Selector} == {
        "NoOp", "OfflinePartition", "ReassignedPartition", "PreferredReplica", "ControlledShutdown"}


def test_NoOp_keeps_leader_and_isr_and_tells_every_assigned_replica():
    e = no_op(inp((3, 1, 2), 1, (1, 3), live=(1,)))
    assert e == Election(1, m(1, 3), (3, 1, 2), False)


def test_OfflinePartition_clean_picks_first_live_isr_member_in_assignment_order():
    # AR (3,2,1); 3 is dead; 1 and 2 both live and in the ISR: 2 comes first in AR (not by id)
    e = offline_partition(inp((3, 2, 1), 0, (1, 2, 3), live=(1, 2)))
    assert e.leader == 2
    assert e.isr == m(1, 2)  # the live ISR
    assert e.receivers == (2, 1)  # live assigned replicas, in AR order
    assert e.unclean is False


def test_OfflinePartition_prefers_isr_over_earlier_non_isr_replica():
    # 1 is live but out of the ISR; 2 is live and in it: clean election picks 2 even with unclean on
    e = offline_partition(inp((1, 2), 0, (2,), live=(1, 2), unclean=True))
    assert (e.leader, e.isr, e.unclean) == (2, m(2), False)


def test_OfflinePartition_unclean_picks_first_live_replica_and_isr_of_one():
    e = offline_partition(inp((3, 1, 2), 0, (3,), live=(1, 2), unclean=True))
    assert (e.leader, e.isr, e.receivers, e.unclean) == (1, m(1), (1, 2), True)


def test_OfflinePartition_without_unclean_fails_when_no_live_isr_member():
    with pytest.raises(NoEligibleLeader) as info:
        offline_partition(inp((3, 1, 2), 0, (3,), live=(1, 2), unclean=False))
    assert info.value.selector is Selector.OFFLINE_PARTITION
    assert str(info.value).startswith("OfflinePartition selector:")


def test_OfflinePartition_fails_when_no_assigned_replica_lives_even_unclean():
    with pytest.raises(NoEligibleLeader):
        offline_partition(inp((1, 2), 0, (1, 2), live=(3,), unclean=True))


def test_ReassignedPartition_picks_first_live_isr_member_of_target_and_keeps_isr():
    # RAR (5, 4, 6): 5 is not in the ISR, 4 is live and in it
    e = reassigned_partition(inp((1, 2, 3, 4, 5, 6), 1, (1, 2, 3, 4, 6), live=(1, 2, 3, 4, 5, 6),
                                 target=(5, 4, 6)))
    assert e.leader == 4
    assert e.isr == m(1, 2, 3, 4, 6)  # current ISR
    assert e.receivers == (5, 4, 6)  # RAR, dead or alive


def test_ReassignedPartition_skips_dead_target_replica():
    e = reassigned_partition(inp((1, 4, 5), 1, (1, 4, 5), live=(1, 5), target=(4, 5)))
    assert e.leader == 5


def test_ReassignedPartition_fails_without_live_isr_target():
    with pytest.raises(NoEligibleLeader) as info:
        reassigned_partition(inp((1, 2, 3), 1, (1, 2), live=(1, 2, 3), target=(3,)))
    assert info.value.selector is Selector.REASSIGNED_PARTITION


def test_PreferredReplica_elects_head_of_assignment():
    e = preferred_replica(inp((2, 1, 3), 1, (1, 2), live=(1, 2)))
    assert (e.leader, e.isr, e.receivers) == (2, m(1, 2), (2, 1))


@pytest.mark.parametrize("case", ["already-leads", "dead", "out-of-isr", "no-assignment"])
def test_PreferredReplica_errors(case):
    i = {
        "already-leads": inp((2, 1), 2, (1, 2), live=(1, 2)),
        "dead": inp((2, 1), 1, (1, 2), live=(1,)),
        "out-of-isr": inp((2, 1), 1, (1,), live=(1, 2)),
        "no-assignment": inp((), 0, (), live=(1,)),
    }[case]
    with pytest.raises(NoEligibleLeader) as info:
        preferred_replica(i)
    assert info.value.selector is Selector.PREFERRED_REPLICA


def test_ControlledShutdown_picks_first_isr_member_not_shutting_down_in_assignment_order():
    e = controlled_shutdown(inp((1, 3, 2), 1, (1, 2, 3), live=(1, 2, 3), shutting_down=(1,)))
    assert e.leader == 3
    assert e.isr == m(2, 3)  # ISR minus the shutting-down brokers
    assert e.receivers == (1, 3, 2)  # live assigned replicas


def test_ControlledShutdown_does_not_check_liveness_as_in_0_8():
    # 2 is dead but in the ISR and not shutting down: the 0.8 selector still picks it
    e = controlled_shutdown(inp((1, 2, 3), 1, (1, 2), live=(1, 3), shutting_down=(1,)))
    assert e.leader == 2
    assert e.receivers == (1, 3)


def test_ControlledShutdown_fails_when_every_isr_member_shuts_down():
    with pytest.raises(NoEligibleLeader) as info:
        controlled_shutdown(inp((1, 2, 3), 1, (1, 2), live=(1, 2, 3), shutting_down=(1, 2)))
    assert info.value.selector is Selector.CONTROLLED_SHUTDOWN


# ---------------------------------------------------------------------------- random inputs
BROKERS = st.integers(1, 6)


@st.composite
def selector_inputs(draw):
    """ISR and target drawn from the assignment (as in the model); any live / shutting-down sets."""
    assignment = draw(st.lists(BROKERS, min_size=1, max_size=5, unique=True))
    isr = draw(st.lists(st.sampled_from(assignment), unique=True))
    leader = draw(st.sampled_from([0, *assignment]))
    live = draw(st.lists(BROKERS, unique=True, max_size=6))
    shutting = draw(st.lists(BROKERS, unique=True, max_size=3))
    target = draw(st.lists(st.sampled_from(assignment), unique=True))
    unclean = draw(st.booleans())
    return SelectorInput(tuple(assignment), leader, m(*isr), m(*live), m(*shutting), tuple(target), unclean)


def _in(mask: int, b: int) -> bool:
    return bool(mask >> b & 1)


def _members_in_order(order, mask):
    return [b for b in order if _in(mask, b)]


def _expected_leader(sel: Selector, i: SelectorInput):
    """The candidate the notes' table names, computed here from the rules; None if none exists."""
    live_ar = [b for b in i.assignment if _in(i.live, b)]
    if sel is Selector.NO_OP:
        return i.leader
    if sel is Selector.OFFLINE_PARTITION:
        clean = [b for b in live_ar if _in(i.isr, b)]
        if clean:
            return clean[0]
        if i.unclean_election and live_ar:
            return live_ar[0]
        return None
    if sel is Selector.REASSIGNED_PARTITION:
        c = [b for b in i.target if _in(i.live, b) and _in(i.isr, b)]
        return c[0] if c else None
    if sel is Selector.PREFERRED_REPLICA:
        if not i.assignment:
            return None
        head = i.assignment[0]
        ok = head != i.leader and _in(i.live, head) and _in(i.isr, head)
        return head if ok else None
    if sel is Selector.CONTROLLED_SHUTDOWN:
        c = [b for b in i.assignment if _in(i.isr, b) and not _in(i.shutting_down, b)]
        return c[0] if c else None
    raise AssertionError(sel)


def _run(sel: Selector, i: SelectorInput):
    try:
        return SELECTORS[sel](i)
    except NoEligibleLeader as e:
        assert e.selector is sel
        return None


@HYP
@given(selector_inputs(), st.sampled_from(list(Selector)))
def test_selectors_error_exactly_when_no_candidate_and_break_ties_by_assignment_order(i, sel):
    expected = _expected_leader(sel, i)
    e = _run(sel, i)
    if expected is None:
        assert e is None
    else:
        assert e is not None and e.leader == expected


@HYP
@given(selector_inputs(), st.sampled_from([Selector.OFFLINE_PARTITION, Selector.REASSIGNED_PARTITION,
                                           Selector.PREFERRED_REPLICA]))
def test_clean_elections_pick_a_live_isr_member(i, sel):
    e = _run(sel, i)
    if e is not None and not e.unclean:
        assert _in(i.live, e.leader)
        assert _in(i.isr, e.leader)


@HYP
@given(selector_inputs(), st.sampled_from([s for s in Selector if s is not Selector.NO_OP]))
def test_LeaderInIsr_and_IsrSubsetOfReplicas_for_every_election_but_NoOp(i, sel):
    e = _run(sel, i)
    if e is None:
        return
    ar = m(*i.assignment)
    assert e.isr & ~ar == 0, "new ISR must be a subset of the assignment"
    assert _in(e.isr, e.leader), "new ISR must contain the new leader"
    assert e.leader in i.assignment


@HYP
@given(selector_inputs(), st.sampled_from(list(Selector)))
def test_only_unclean_OfflinePartition_leaves_the_isr(i, sel):
    e = _run(sel, i)
    if e is None:
        return
    outside = e.leader != 0 and not _in(i.isr, e.leader)
    if sel is Selector.NO_OP:
        return  # NoOp reports whatever leader it was given
    assert outside == e.unclean
    if outside:
        assert sel is Selector.OFFLINE_PARTITION and i.unclean_election
        assert e.isr == m(e.leader)


@HYP
@given(selector_inputs())
def test_OfflinePartition_new_isr_is_the_live_isr_when_clean(i):
    e = _run(Selector.OFFLINE_PARTITION, i)
    if e is None or e.unclean:
        return
    assert e.isr == i.isr & i.live
    assert e.receivers == tuple(b for b in i.assignment if _in(i.live, b))


@HYP
@given(selector_inputs())
def test_PreferredReplica_only_picks_the_head_of_the_assignment(i):
    e = _run(Selector.PREFERRED_REPLICA, i)
    if e is not None:
        assert e.leader == i.assignment[0]
        assert e.leader != i.leader
        assert e.isr == i.isr


@HYP
@given(selector_inputs())
def test_ControlledShutdown_never_picks_a_shutting_down_broker(i):
    e = _run(Selector.CONTROLLED_SHUTDOWN, i)
    if e is not None:
        assert not _in(i.shutting_down, e.leader)
        assert e.isr & i.shutting_down == 0
        assert e.isr == i.isr & ~i.shutting_down


@HYP
@given(selector_inputs())
def test_ReassignedPartition_leader_is_in_the_target_and_isr_unchanged(i):
    e = _run(Selector.REASSIGNED_PARTITION, i)
    if e is not None:
        assert e.leader in i.target
        assert e.isr == i.isr
        assert e.receivers == i.target


@HYP
@given(selector_inputs(), st.sampled_from(list(Selector)))
def test_receivers_follow_assignment_order(i, sel):
    e = _run(sel, i)
    if e is None:
        return
    order = i.target if sel is Selector.REASSIGNED_PARTITION else i.assignment
    positions = [order.index(r) for r in e.receivers]
    assert positions == sorted(positions)
    if sel in (Selector.OFFLINE_PARTITION, Selector.PREFERRED_REPLICA, Selector.CONTROLLED_SHUTDOWN):
        assert all(_in(i.live, r) for r in e.receivers)
