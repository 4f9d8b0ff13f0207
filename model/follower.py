"""What a replica does when a LeaderAndIsr makes it a follower, one function per rule.

``Protocol.become_follower`` (model/protocol.py) picks the rule by the generation's traits
(specs/protocol.toml); the broker's request handling (model/broker.py) reaches it only through the
protocol. These functions read nothing but the replica and the request (they import only the state
types), so any module can import this one and neither protocol.py nor broker.py imports the other.
"""
from __future__ import annotations

from .state import ASK_EPOCH_END, FETCHING, LeaderAndIsr, Replica, make_replica


def become_follower_truncating_to_hw(r: Replica, req: LeaderAndIsr) -> Replica:
    """The seeds' rule: on a leader change, stop any commit work and truncate the log to the HW."""
    log = r.log
    if r.leader != req.leader:
        log = log[: r.hw]
    return make_replica(log, min(r.hw, len(log)), r.checkpoint, req.leader, req.leader_epoch, 0, 0, (), 0, 0,
                        (), FETCHING, (), r.ext)


def become_follower_reconciling_by_epoch(r: Replica, req: LeaderAndIsr, on_every_epoch: bool) -> Replica:
    """With leader epochs: keep the log and ask the new leader where our latest epoch ends.

    Reconciliation starts on a leader change, or (KAFKA-7164, with ``on_every_epoch``) on any
    leader-epoch change. A follower with an empty log has nothing to reconcile.
    """
    changed = r.leader != req.leader or (on_every_epoch and r.leader_epoch != req.leader_epoch)
    state: int = r.fetch_state
    answer: tuple[int, ...] = r.answer
    if changed:
        state, answer = (ASK_EPOCH_END if r.log else FETCHING), ()
    return make_replica(r.log, r.hw, r.checkpoint, req.leader, req.leader_epoch, 0, 0, (), 0, 0,
                        r.epochs, state, answer, r.ext)
