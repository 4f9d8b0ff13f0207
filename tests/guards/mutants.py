"""Protocol variants that each remove one safety-relevant guard (specs/guards.toml).

Every guard must matter: for each, the checker must find a violation once it is removed. The
mutants use only the designer API (subclasses of Protocol), as a user's variant would.
"""
from __future__ import annotations

from isrcheck.model.follower import become_follower_reconciling_by_epoch
from isrcheck.model.protocol import Protocol
from isrcheck.model.selectors import Election, Selector, SelectorInput


class NoControllerEpochFence(Protocol):
    def accepts_controller_epoch(self, request_epoch: int, highest_seen: int) -> bool:
        return True


class NoLeaderEpochFence(Protocol):
    def accepts_leader_epoch(self, request_epoch: int, current: int) -> bool:
        return request_epoch != current


class NoConditionalIsrWrite(Protocol):
    def isr_write_succeeds(self, znode_version: int, cached_version: int) -> bool:
        return True


class JoinIsrBeforeCaughtUp(Protocol):
    def may_join_isr(self, leader_replica, fetch_offset: int) -> bool:
        return True


class NoEpochStartJoinCondition(Protocol):
    """KIP-320 without KAFKA-7128: rejoining needs only the HW."""

    def may_join_isr(self, leader_replica, fetch_offset: int) -> bool:
        return fetch_offset >= leader_replica.hw


class NoLeaderEpochFencingOfFetch(Protocol):
    def epoch_matches(self, follower_epoch: int, leader_epoch: int) -> bool:
        return True


class ReconcileOnlyOnLeaderChange(Protocol):
    """KIP-320 without KAFKA-7164: a follower reconciles only when the leader changes."""

    def become_follower(self, w, b, p, r, req):
        return become_follower_reconciling_by_epoch(r, req, on_every_epoch=False)


class NoTruncationOnBecomingFollower(Protocol):
    def become_follower(self, w, b, p, r, req):
        from isrcheck.model.state import Replica
        return Replica(r.log, min(r.hw, len(r.log)), r.checkpoint, req.leader, req.leader_epoch, 0, 0, (), 0, 0)


def _live(inp: SelectorInput) -> list[int]:
    return [r for r in inp.assignment if inp.live >> r & 1]


class OfflineElectionOutsideIsr(Protocol):
    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        if selector is Selector.OFFLINE_PARTITION and _live(inp):
            live = _live(inp)
            return Election(live[0], 1 << live[0], tuple(live), unclean=True)
        return super().select(selector, inp)


class ShutdownElectsShuttingDown(Protocol):
    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        if selector is Selector.CONTROLLED_SHUTDOWN:
            for r in inp.assignment:
                if inp.isr >> r & 1:
                    return Election(r, inp.isr & ~inp.shutting_down, tuple(_live(inp)))
        return super().select(selector, inp)


class ReassignedElectionOutsideIsr(Protocol):
    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        if selector is Selector.REASSIGNED_PARTITION:
            for r in inp.target:
                if inp.live >> r & 1:
                    return Election(r, inp.isr, inp.target)
        return super().select(selector, inp)


class PreferredOutsideIsr(Protocol):
    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        if selector is Selector.PREFERRED_REPLICA and inp.assignment:
            head = inp.assignment[0]
            if head != inp.leader and inp.live >> head & 1:
                return Election(head, inp.isr, tuple(_live(inp)))
        return super().select(selector, inp)


class AckBelowMinInsync(Protocol):
    def acknowledges(self, leader_replica, committed: int) -> bool:
        return True


MUTANTS = {cls.__name__: cls for cls in (
    NoControllerEpochFence, NoLeaderEpochFence, NoConditionalIsrWrite, JoinIsrBeforeCaughtUp,
    NoEpochStartJoinCondition, NoLeaderEpochFencingOfFetch, ReconcileOnlyOnLeaderChange,
    NoTruncationOnBecomingFollower, OfflineElectionOutsideIsr, ShutdownElectsShuttingDown,
    ReassignedElectionOutsideIsr, PreferredOutsideIsr, AckBelowMinInsync,
)}


class NoRequestFencing(NoControllerEpochFence, NoLeaderEpochFence):
    """Neither epoch fence: a broker applies any LeaderAndIsr, however stale."""


MUTANTS["NoRequestFencing"] = NoRequestFencing
