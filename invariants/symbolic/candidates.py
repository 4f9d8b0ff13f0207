"""The strengthening candidates of the replication core: the base families (specs/08-symbolic.md#inductive-invariants).

Houdini (:mod:`.houdini`) starts from the safety properties and a pool of **candidates**: state
predicates about the protocol's bookkeeping that, together, may be inductive where a property alone
is not. Each candidate is a :data:`Pred`, a function of the encoding and a symbolic state. This
module holds the families every generation gets (:data:`CANDIDATES`):

- the bookkeeping of the replication path: well-formed slots and requests, records at their place,
  versions and epochs not ahead of the znode, one leader per epoch, followers without leader state;
- the fault-free facts (every broker alive, no request in flight, followers are prefixes of their
  leader, ...), which Houdini keeps only where the configuration has no faults to break them.

The leader-epoch generations add :mod:`.epoch_candidates` (and the committed prefix of
:mod:`.committed`); :mod:`.pool` says which families an encoding gets. The families' vocabulary
(:func:`every_replica`, :func:`replica_pairs`, :func:`is_prefix`, :func:`history_points`,
:func:`blank_unless`) is shared with :mod:`.epoch_candidates`.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import z3

from .replication import Encoding
from .types import REQ_LAI, REQ_NONE, REQ_STOP, REQ_UM, SymLog, SymState

Pred = Callable[[Encoding, SymState], z3.BoolRef]
"""A candidate: a state predicate over the encoding's symbolic state."""


# ============================================================================ the bookkeeping of the replication path
def every_replica(enc: Encoding, s: SymState) -> list[tuple[int, int, Any]]:
    """(partition, broker, its replica) for every replica the state holds, partition by partition."""
    return [(p, b, r) for p in range(enc.P) for b, r in s.replicas[p].items()]


def replica_pairs(enc: Encoding, s: SymState) -> list[tuple[int, int, Any, int, Any]]:
    """(partition, L, L's replica, m, m's replica) for every two different replicas of a partition."""
    return [(p, L, rl, m, rm) for p in range(enc.P) for L, rl in s.replicas[p].items()
            for m, rm in s.replicas[p].items() if m != L]


def _logs(enc: Encoding, s: SymState, p: int) -> list[SymLog]:
    return [r.log for r in s.replicas[p].values()] + [s.ghost[p].exposed]


def _well_formed(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        for b, r in s.replicas[p].items():
            out.append(z3.Implies(r.leader != 0, r.leader_epoch >= 0))
        for x in _logs(enc, s, p):
            for i in range(enc.K):
                out.append(z3.If(x.length > i, z3.And(x.ids[i] >= 1, x.ids[i] <= enc.K, x.epochs[i] >= 0),
                                 z3.And(x.ids[i] == 0, x.epochs[i] == 0)))
    for b, q in s.inbox.items():
        for i, sl in enumerate(q.slots):
            lai_isr_ok = z3.And([z3.Implies(sl.isr[m], z3.Or([sl.partition == p for p in range(enc.P) if m in enc.U[p]]
                                                               or [z3.BoolVal(False)]))
                                 for m in sl.isr])
            inside = z3.And(z3.Or(sl.kind == REQ_LAI, sl.kind == REQ_STOP, sl.kind == REQ_UM),
                            z3.Implies(sl.kind != REQ_LAI, z3.And(sl.leader == 0, sl.leader_epoch == 0,
                                                                  sl.zk_version == 0,
                                                                  *[z3.Not(v) for v in sl.isr.values()])),
                            z3.Implies(sl.kind == REQ_UM, sl.partition == 0),
                            z3.Implies(sl.kind == REQ_LAI, z3.And(sl.zk_version >= 1, lai_isr_ok,
                                       z3.Or([z3.And(sl.partition == p, z3.Or([sl.leader == m for m in (0, *enc.U[p])]))
                                              for p in range(enc.P)]))))
            blank = z3.And(sl.kind == REQ_NONE, sl.partition == 0, sl.leader == 0, sl.leader_epoch == 0,
                           sl.zk_version == 0, *[z3.Not(v) for v in sl.isr.values()])
            out.append(z3.If(q.length > i, inside, blank))
    return z3.And(out) if out else z3.BoolVal(True)


def _records_keep_their_place(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        g = s.ghost[p]
        for x in _logs(enc, s, p):
            for i in range(enc.K):
                inside = x.length > i
                out.append(z3.Implies(inside, x.ids[i] <= g.produced))
                for j in range(1, enc.K + 1):
                    out.append(z3.Implies(z3.And(inside, x.ids[i] == j),
                                          z3.And(g.position[j] == i, g.epoch[j] == x.epochs[i])))
    return z3.And(out) if out else z3.BoolVal(True)


def _log_no_longer_than_produced(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([x.length <= s.ghost[p].produced for p in range(enc.P) for x in _logs(enc, s, p)])


def _acked_and_pending_were_produced(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        g = s.ghost[p]
        for j in range(1, enc.K + 1):
            out.append(z3.Implies(g.acked[j], g.produced >= j))
            for r in s.replicas[p].values():
                out.append(z3.Implies(r.pending[j], g.produced >= j))
    return z3.And(out) if out else z3.BoolVal(True)


def _lai_slots(enc: Encoding, s: SymState, p: int) -> list[tuple[z3.BoolRef, Any]]:
    """(is a LeaderAndIsr for p in a queue, the slot) for every queue slot."""
    out = []
    for q in s.inbox.values():
        for i, sl in enumerate(q.slots):
            out.append((z3.And(q.length > i, sl.kind == REQ_LAI, sl.partition == p), sl))
    return out


def _versions_bounded(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        z = s.zk[p]
        out += [r.zk_version <= z.version for r in s.replicas[p].values()]
        out += [z3.Implies(c, sl.zk_version <= z.version) for c, sl in _lai_slots(enc, s, p)]
    return z3.And(out)


def _epochs_bounded(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        z = s.zk[p]
        for r in s.replicas[p].values():
            out.append(r.leader_epoch <= z.leader_epoch)
            out += [z3.Implies(r.log.length > i, r.log.epochs[i] <= z.leader_epoch) for i in range(enc.K)]
        out += [z3.Implies(c, sl.leader_epoch <= z.leader_epoch) for c, sl in _lai_slots(enc, s, p)]
    return z3.And(out)


def _isr_eq(a: dict[int, z3.BoolRef], b: dict[int, z3.BoolRef], ar: tuple[int, ...]) -> z3.BoolRef:
    return z3.And([a[m] == b[m] for m in ar])


def _current_version_is_current_leader(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        z, ar = s.zk[p], enc.U[p]
        for b, r in s.replicas[p].items():
            out.append(z3.Implies(z3.And(r.leader == b, r.zk_version == z.version),
                                  z3.And(z.leader == b, r.leader_epoch == z.leader_epoch, _isr_eq(r.isr, z.isr, ar))))
    return z3.And(out)


def _current_request_is_current_znode(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        z, ar = s.zk[p], enc.U[p]
        for c, sl in _lai_slots(enc, s, p):
            out.append(z3.Implies(z3.And(c, sl.zk_version == z.version),
                                  z3.And(sl.leader == z.leader, sl.leader_epoch == z.leader_epoch,
                                         _isr_eq(sl.isr, z.isr, ar))))
    return z3.And(out)


def history_points(enc: Encoding, s: SymState, p: int, field: str) -> list[tuple[z3.BoolRef, z3.ArithRef, Any]]:
    """(present, leader epoch, ``field``) of the points of ``p``'s znode history the state holds: the
    znode, each queued LeaderAndIsr, each leading replica (``field``: "leader" or "zk_version")."""
    z = s.zk[p]
    own = z.leader if field == "leader" else z.version
    items: list[tuple[z3.BoolRef, z3.ArithRef, Any]] = [(z3.BoolVal(True), z.leader_epoch, own)]
    items += [(c, sl.leader_epoch, getattr(sl, field)) for c, sl in _lai_slots(enc, s, p)]
    items += [(r.leader == b, r.leader_epoch, getattr(r, field)) for b, r in s.replicas[p].items()]
    return items


def _epoch_names_one_leader(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        for (ci, ei, li), (cj, ej, lj) in itertools.combinations(history_points(enc, s, p, "leader"), 2):
            out.append(z3.Implies(z3.And(ci, cj, ei == ej), li == lj))
    return z3.And(out)


def blank_unless(enc: Encoding, s: SymState, alive: Any) -> z3.BoolRef:
    """Every broker ``b`` with ``alive[b]`` false has no requests queued and leads or follows nobody."""
    out = []
    for b in enc.brokers():
        parts = [s.inbox[b].length == 0]
        for p in range(enc.P):
            if b in s.replicas[p]:
                r = s.replicas[p][b]
                parts += [r.leader == 0, r.leader_epoch == -1]
        out.append(z3.Implies(z3.Not(alive[b]), z3.And(parts)))
    return z3.And(out)


def _dead_brokers_are_blank(enc: Encoding, s: SymState) -> z3.BoolRef:
    return blank_unless(enc, s, s.alive)


def _followers_hold_no_leader_state(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([z3.Implies(r.leader != b, z3.And(
        r.zk_version == 0, *[z3.Not(v) for v in r.isr.values()], *[v == 0 for v in r.remote_leo.values()],
        *[z3.Not(v) for v in r.pending.values()])) for p, b, r in every_replica(enc, s)])


def _leaders_are_in_their_isr(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([z3.Implies(r.leader == b, r.isr[b]) for p, b, r in every_replica(enc, s)])


def _remote_below_leader_leo(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([z3.Implies(r.leader == b, v <= r.log.length)
                   for p, b, r in every_replica(enc, s) for v in r.remote_leo.values()])


def _pending_above_hw(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        g = s.ghost[p]
        for b, r in s.replicas[p].items():
            for j in range(1, enc.K + 1):
                out.append(z3.Implies(r.pending[j], z3.And(enc.holds_id(r.log, j), g.position[j] >= r.hw,
                                                           z3.Not(g.acked[j]))))
    return z3.And(out) if out else z3.BoolVal(True)


def _checkpoint_below_hw(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([r.checkpoint <= r.log.length for p in range(enc.P) for r in s.replicas[p].values()])


# ---------------------------------------------------------------------------- fault-free facts
def _dead_within_budget(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Every broker that is down, or up but not yet seen by the controller, has used a crash."""
    f = enc.cfg.faults
    spent = (f.crashes - s.budget["crashes"]) + (f.lossy_crashes - s.budget["lossy_crashes"])
    w = a_size(s)
    behind = [z3.If(z3.Or(z3.Not(s.alive[b]), z3.Not(s.c_live[b])), z3.BitVecVal(1, w), z3.BitVecVal(0, w))
              for b in enc.brokers()]
    return z3.Sum(behind) <= spent


def a_size(s: SymState) -> int:
    return next(iter(s.budget.values())).size()


def _all_alive(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And(list(s.alive.values()))


def _controller_sees_registrations(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([s.c_live[b] == s.alive[b] for b in enc.brokers()])


def _no_requests(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([q.length == 0 for q in s.inbox.values()])


def _zk_leader_leads(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        z = s.zk[p]
        out.append(z3.Or([z3.And(z.leader == b, r.leader == b, r.leader_epoch == z.leader_epoch,
                                 r.zk_version == z.version) for b, r in s.replicas[p].items()]))
    return z3.And(out)


def _others_follow_zk_leader(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([z3.Implies(s.zk[p].leader != b, z3.And(r.leader == s.zk[p].leader,
                                                          r.leader_epoch == s.zk[p].leader_epoch))
                   for p, b, r in every_replica(enc, s)])


def is_prefix(enc: Encoding, a: SymLog, b: SymLog) -> z3.BoolRef:
    """``a`` is a prefix of ``b``."""
    return z3.And(a.length <= b.length, *[z3.Implies(a.length > i, enc.rec_eq(a, b, i)) for i in range(enc.K)])


def _followers_are_prefixes(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([z3.Implies(z3.And(r.leader == L, rl.leader == L, s.alive[L]), z3.And(
        is_prefix(enc, r.log, rl.log), r.hw <= rl.hw,
        z3.Implies(rl.isr[b], rl.hw <= rl.remote_leo[b]), rl.remote_leo[b] <= r.log.length))
        for p, L, rl, b, r in replica_pairs(enc, s)])


def _committed_below_leader_hw(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        g = s.ghost[p]
        for L, rl in s.replicas[p].items():
            leads = enc.acting_leader(s, p, L)
            for j in range(1, enc.K + 1):
                out.append(z3.Implies(z3.And(leads, g.acked[j]),
                                      z3.And(enc.holds_id(rl.log, j), g.position[j] < rl.hw)))
            out.append(z3.Implies(leads, z3.And(is_prefix(enc, g.exposed, rl.log), g.exposed.length <= rl.hw)))
    return z3.And(out) if out else z3.BoolVal(True)



CANDIDATES: tuple[tuple[str, Pred], ...] = (
    ("WellFormed", _well_formed),
    ("RecordsKeepTheirPlace", _records_keep_their_place),
    ("LogNoLongerThanProduced", _log_no_longer_than_produced),
    ("AckedAndPendingWereProduced", _acked_and_pending_were_produced),
    ("VersionsBounded", _versions_bounded),
    ("EpochsBounded", _epochs_bounded),
    ("CurrentVersionIsCurrentLeader", _current_version_is_current_leader),
    ("CurrentRequestIsCurrentZnode", _current_request_is_current_znode),
    ("EpochNamesOneLeader", _epoch_names_one_leader),
    ("DeadBrokersAreBlank", _dead_brokers_are_blank),
    ("FollowersHoldNoLeaderState", _followers_hold_no_leader_state),
    ("LeadersAreInTheirIsr", _leaders_are_in_their_isr),
    ("RemoteLeoBelowLeaderLeo", _remote_below_leader_leo),
    ("PendingAboveHighWatermark", _pending_above_hw),
    ("CheckpointBelowLogEnd", _checkpoint_below_hw),
    ("DeadBrokersWithinCrashBudget", _dead_within_budget),
    ("AllBrokersAlive", _all_alive),
    ("ControllerSeesRegistrations", _controller_sees_registrations),
    ("NoRequestsInFlight", _no_requests),
    ("ZkLeaderLeads", _zk_leader_leads),
    ("OthersFollowZkLeader", _others_follow_zk_leader),
    ("FollowersArePrefixesOfTheirLeader", _followers_are_prefixes),
    ("CommittedBelowLeaderHighWatermark", _committed_below_leader_hw),
)
"""The pool of every generation (the only one of high-watermark)."""


__all__ = ["Pred", "CANDIDATES", "every_replica", "replica_pairs", "is_prefix", "history_points", "blank_unless"]
