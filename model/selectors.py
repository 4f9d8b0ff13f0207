"""The five leader selectors, as pure functions.

Each takes what the controller knows about one partition and returns an :class:`Election`
(new leader, new ISR, which replicas receive LeaderAndIsr) or raises :class:`NoEligibleLeader`.
Ties are broken by assignment order: the first replica of the assignment (AR) that qualifies
wins. They know nothing of the rest of the model, which is what lets z3 prove their contracts
for every input and the designer API replace one of them.
"""
from __future__ import annotations

from enum import Enum
from typing import Any, Final, NamedTuple

from .brokersets import bit


class Selector(Enum):
    NO_OP = "NoOp"
    OFFLINE_PARTITION = "OfflinePartition"
    REASSIGNED_PARTITION = "ReassignedPartition"
    PREFERRED_REPLICA = "PreferredReplica"
    CONTROLLED_SHUTDOWN = "ControlledShutdown"


class Election(NamedTuple):
    leader: int
    isr: int  # bitmask
    receivers: tuple[int, ...]  # brokers that get LeaderAndIsr, in assignment order
    unclean: bool = False  # the leader came from outside the ISR
    #: a variant's new partition fields, written with the leader (None: unchanged)
    fields: tuple[int, ...] | None = None


class NoEligibleLeader(Exception):
    """No replica qualifies; the partition keeps its current leader and ISR."""

    def __init__(self, selector: Selector, reason: str) -> None:
        super().__init__(f"{selector.value} selector: {reason}")
        self.selector = selector
        self.reason = reason


class SelectorInput(NamedTuple):
    """What a selector may look at. Masks are bitmasks of broker ids.

    The model's selectors read the controller's knowledge of the partition (the first seven
    fields). A designer's selector may also read the partition's variant fields in ZooKeeper and
    each broker's replica as it is (``replicas[b - 1]``, None where broker ``b`` hosts none: its
    log, high watermark, leader epoch and epoch cache), e.g. to elect the longest log.
    """

    assignment: tuple[int, ...]  # AR in preference order
    leader: int  # current leader, 0 for none
    isr: int
    live: int  # brokers the controller believes alive
    shutting_down: int = 0
    target: tuple[int, ...] = ()  # RAR, for the ReassignedPartition selector
    unclean_election: bool = False
    partition: int = 0
    leader_epoch: int = 0  # in ZooKeeper
    fields: tuple[int, ...] = ()  # the partition's variant fields in ZooKeeper (ZkPartition.ext)
    replicas: tuple[Any, ...] = ()  # per broker: its Replica of the partition, or None


def _live_in(replicas: tuple[int, ...], live: int) -> tuple[int, ...]:
    return tuple(r for r in replicas if live >> r & 1)


def no_op(i: SelectorInput) -> Election:
    """Keep leader and ISR; tell every assigned replica."""
    return Election(i.leader, i.isr, i.assignment)


def offline_partition(i: SelectorInput) -> Election:
    """First live replica of the ISR; failing that, only with unclean election, first live replica."""
    live_assigned = _live_in(i.assignment, i.live)
    for r in live_assigned:
        if i.isr >> r & 1:
            live_isr = 0
            for x in live_assigned:
                if i.isr >> x & 1:
                    live_isr |= bit(x)
            return Election(r, live_isr, live_assigned)
    if not live_assigned:
        raise NoEligibleLeader(Selector.OFFLINE_PARTITION, "no assigned replica is alive")
    if not i.unclean_election:
        raise NoEligibleLeader(
            Selector.OFFLINE_PARTITION, "no live replica is in the ISR and unclean election is disabled"
        )
    leader = live_assigned[0]
    return Election(leader, bit(leader), live_assigned, unclean=True)


def reassigned_partition(i: SelectorInput) -> Election:
    """First replica of the reassignment target that is alive and in the ISR; ISR unchanged."""
    for r in i.target:
        if i.live >> r & 1 and i.isr >> r & 1:
            return Election(r, i.isr, i.target)
    raise NoEligibleLeader(Selector.REASSIGNED_PARTITION, "no target replica is alive and in the ISR")


def preferred_replica(i: SelectorInput) -> Election:
    """The head of the assignment, if it is alive, in the ISR and not already leading."""
    if not i.assignment:
        raise NoEligibleLeader(Selector.PREFERRED_REPLICA, "the partition has no assignment")
    preferred = i.assignment[0]
    if preferred == i.leader:
        raise NoEligibleLeader(Selector.PREFERRED_REPLICA, "the preferred replica already leads")
    if not (i.live >> preferred & 1 and i.isr >> preferred & 1):
        raise NoEligibleLeader(Selector.PREFERRED_REPLICA, "the preferred replica is not alive and in the ISR")
    return Election(preferred, i.isr, _live_in(i.assignment, i.live))


def controlled_shutdown(i: SelectorInput) -> Election:
    """First ISR member not shutting down; the new ISR drops the shutting-down brokers.

    As in the 0.8 design, liveness of the new leader is not checked.
    """
    new_isr = i.isr & ~i.shutting_down
    for r in i.assignment:
        if new_isr >> r & 1:
            return Election(r, new_isr, _live_in(i.assignment, i.live))
    raise NoEligibleLeader(Selector.CONTROLLED_SHUTDOWN, "every ISR member is shutting down")


SELECTORS: Final = {
    Selector.NO_OP: no_op,
    Selector.OFFLINE_PARTITION: offline_partition,
    Selector.REASSIGNED_PARTITION: reassigned_partition,
    Selector.PREFERRED_REPLICA: preferred_replica,
    Selector.CONTROLLED_SHUTDOWN: controlled_shutdown,
}
