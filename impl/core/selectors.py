"""The five partition leader selectors (specs/04-controller.md, "Leader selectors").

A selector is a strategy object (seed 003): given what the controller knows about one partition it
returns a :class:`Decision` (leader, ISR, receivers of LeaderAndIsr) or raises
:class:`NoEligibleLeader` (a name shared with the model, specs/protocol.toml). Ties go to assignment
order: the first qualifying replica of AR (or of RAR for the ReassignedPartition selector) wins.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PartitionView:
    assignment: tuple[int, ...]  # the controller's view of AR, in preference order
    leader: int  # 0: none
    isr: frozenset[int]
    live: frozenset[int]  # brokers the controller believes alive
    shutting_down: frozenset[int] = frozenset()
    target: tuple[int, ...] = ()  # RAR during a reassignment
    unclean: bool = False  # unclean.leader.election.enable


@dataclass(frozen=True)
class Decision:
    leader: int
    isr: frozenset[int]
    receivers: tuple[int, ...]
    unclean: bool = False


class NoEligibleLeader(Exception):
    """No replica qualifies; the partition keeps its current leader and ISR."""

    def __init__(self, selector: str, reason: str) -> None:
        super().__init__(f"{selector}: {reason}")
        self.selector = selector
        self.reason = reason


class LeaderSelector:
    name = "abstract"

    def select(self, v: PartitionView) -> Decision:
        raise NotImplementedError

    def fail(self, reason: str) -> NoEligibleLeader:
        return NoEligibleLeader(self.name, reason)


class NoOpLeaderSelector(LeaderSelector):
    name = "NoOp"

    def select(self, v: PartitionView) -> Decision:
        return Decision(v.leader, v.isr, v.assignment)


class OfflinePartitionLeaderSelector(LeaderSelector):
    name = "OfflinePartition"

    def select(self, v: PartitionView) -> Decision:
        alive = tuple(b for b in v.assignment if b in v.live)
        if not alive:
            raise self.fail("no assigned replica is alive")
        in_sync = tuple(b for b in alive if b in v.isr)
        if in_sync:
            return Decision(in_sync[0], frozenset(in_sync), alive)
        if not v.unclean:
            raise self.fail("no live replica is in the ISR and unclean election is disabled")
        return Decision(alive[0], frozenset({alive[0]}), alive, unclean=True)


class ReassignedPartitionLeaderSelector(LeaderSelector):
    name = "ReassignedPartition"

    def select(self, v: PartitionView) -> Decision:
        for b in v.target:
            if b in v.live and b in v.isr:
                return Decision(b, v.isr, v.target)
        raise self.fail("no reassigned replica is alive and in the ISR")


class PreferredReplicaLeaderSelector(LeaderSelector):
    name = "PreferredReplica"

    def select(self, v: PartitionView) -> Decision:
        if not v.assignment:
            raise self.fail("the partition has no assignment")
        head = v.assignment[0]
        if head == v.leader:
            raise self.fail(f"the preferred replica {head} already leads")
        if head not in v.live or head not in v.isr:
            raise self.fail(f"the preferred replica {head} is not alive and in the ISR")
        return Decision(head, v.isr, tuple(b for b in v.assignment if b in v.live))


class ControlledShutdownLeaderSelector(LeaderSelector):
    name = "ControlledShutdown"

    def select(self, v: PartitionView) -> Decision:
        remaining = frozenset(b for b in v.isr if b not in v.shutting_down)
        for b in v.assignment:  # liveness is not checked, as in 0.8
            if b in remaining:
                return Decision(b, remaining, tuple(x for x in v.assignment if x in v.live))
        raise self.fail("every ISR member is shutting down")


NO_OP = NoOpLeaderSelector()
OFFLINE = OfflinePartitionLeaderSelector()
REASSIGNED = ReassignedPartitionLeaderSelector()
PREFERRED = PreferredReplicaLeaderSelector()
CONTROLLED_SHUTDOWN = ControlledShutdownLeaderSelector()
ALL_SELECTORS = (NO_OP, OFFLINE, REASSIGNED, PREFERRED, CONTROLLED_SHUTDOWN)
