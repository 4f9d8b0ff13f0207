"""Inductive invariants of the replication encoding (specs/08-symbolic.md#inductive-invariants).

A property is proved here when it belongs to a set of state predicates that holds in the initial
state and that every action preserves: ``Inv(s) and step(s, s') => Inv(s')`` for every state ``s``
within the encoding's bounds (logs of at most ``max_records`` records, request queues of at most
``queue`` requests) — whatever the epochs, versions and remaining fault budgets, so for any
number of steps.

The set is found by Houdini's algorithm: start from the safety properties plus a pool of
**strengthening candidates** (facts about the protocol's bookkeeping: record offsets, znode
versions, who may lead in which epoch, what followers hold), and repeatedly drop every member that
some action can break from a state satisfying all the others. What remains is the largest
inductive subset of the pool. A safety property that is dropped gets a **counterexample to
induction**: a state satisfying every other remaining member, the action, and the state after it
where the property fails. A counterexample to induction is not a reachable violation; bounded
model checking (:mod:`.bmc`) says whether one is.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import z3

from isrcheck.model.brokersets import render
from isrcheck.model.records import render_log
from isrcheck.model.state import ASK_EPOCH_END, FETCHING, TRUNCATE_PENDING, LeaderAndIsr, State, StopReplica

from .committed import COMMITTED_PREFIX_CANDIDATES, KIP_320_COMMITTED_PREFIX
from .epochs import answer_function, last as epoch_last, latest as cache_latest
from .instance import Instance, Unsupported
from .replication import ALWAYS, Encoding
from .types import NUM_MAX, REQ_LAI, REQ_NONE, REQ_STOP, REQ_UM, SymLog, SymState
from .verdicts import Obligation, Progress, Verdict, new_solver, no_progress

Pred = Callable[[Encoding, SymState], z3.BoolRef]


# ============================================================================ bounds and candidates
def bounds(enc: Encoding, s: SymState) -> z3.BoolRef:
    """The bounded state space: sizes within the capacities, numbers within range, ids typed."""
    K, Q = enc.K, enc.Q
    out: list[z3.BoolRef] = [z3.Not(s.overflow)]

    def lg(x: SymLog) -> None:
        out.append(z3.And(x.length >= 0, x.length <= K))

    # a topic not created yet, or deleted, has no znode: version 0 (topic creation and deletion)
    unborn = enc.ops is not None and enc.ops.admin is not None
    for p in range(enc.P):
        ar = enc.U[p]
        z = s.zk[p]
        out += [z3.Or([z.leader == b for b in (0, *ar)]), z.leader_epoch >= 0, z.leader_epoch <= NUM_MAX,
                z.version >= (0 if unborn else 1), z.version <= NUM_MAX]
        for b, r in s.replicas[p].items():
            lg(r.log)
            out += [r.hw >= 0, r.hw <= K, r.checkpoint >= 0, r.checkpoint <= K,
                    z3.Or([r.leader == m for m in (0, *ar)]), r.leader_epoch >= -1, r.leader_epoch <= NUM_MAX,
                    r.zk_version >= 0, r.zk_version <= NUM_MAX]
            out += [z3.And(v >= 0, v <= K) for v in r.remote_leo.values()]
        g = s.ghost[p]
        lg(g.exposed)
        out += [g.produced >= 0, g.produced <= K]
        out += [z3.And(v >= 0, v < max(K, 1)) for v in g.position.values()]
        out += [z3.And(v >= 0, v <= NUM_MAX) for v in g.epoch.values()]
    for b, q in s.inbox.items():
        out += [q.length >= 0, q.length <= Q]
        for sl in q.slots:
            out += [sl.leader_epoch >= 0, sl.leader_epoch <= NUM_MAX, sl.zk_version >= 0, sl.zk_version <= NUM_MAX,
                    z3.Or([sl.leader == m for m in range(0, enc.N + 1)]), sl.partition >= 0, sl.partition < enc.P]
    f = enc.cfg.faults
    limits = {"crashes": f.crashes, "lossy_crashes": f.lossy_crashes, "undetected_restarts": f.undetected_restarts,
              "isr_shrinks": f.isr_shrinks, "delayed_requests": f.delayed_requests}
    for name, v in s.budget.items():
        out += [v >= 0, v <= limits[name]]
    out += _ops_bounds(enc, s)
    return z3.And(out)


def _ops_bounds(enc: Encoding, s: SymState) -> list[z3.BoolRef]:
    """The controller side's types (operations.py, reassignment.py): budgets within the
    configuration's, controller epochs from 0 to one per failover more, replica states of the
    table, reassignment lists indices into their partition's list table and steps 0..12. Each holds
    on every reachable state (tests/invariants/test_symbolic_induction_operations.py checks them)."""
    ops = s.ops
    if ops is None:
        return []
    cfg = enc.cfg
    limits = {"preferred_elections": cfg.operations.preferred_elections,
              "controlled_shutdowns": cfg.operations.controlled_shutdowns,
              "controller_failovers": cfg.faults.controller_failovers}
    out = [z3.And(v >= 0, v <= limits[n]) for n, v in ops.budget.items()]
    top = 1 + cfg.faults.controller_failovers
    out += [ops.zk_epoch >= 1, ops.zk_epoch <= top]
    out += [z3.And(v >= 0, v <= ops.zk_epoch) for v in (*ops.part_epoch, *ops.broker_epoch.values())]
    out += [z3.And(v >= 0, v <= ops.zk_epoch) for row in ops.req_epoch.values() for v in row]
    r = ops.reassign
    if r is None:
        return out
    tables = r.owner.tables
    widest = max(len(t) for t in tables)
    for p in range(enc.P):
        n = len(tables[p])
        out += [z3.And(x >= 0, x < n) for x in (r.ar[p], r.target[p], r.origin[p], r.old[p], r.new[p],
                                                *r.stale_old[p:p + 1], *r.stale_new[p:p + 1])]
        out += [z3.And(x >= 0, x <= 12) for x in (r.step[p], *r.stale_step[p:p + 1])]
        rows = [r.rstate[p]] + ([r.stale_rstate[p]] if r.stale_rstate else [])
        out += [z3.And(x >= 0, x <= 6) for row in rows for x in row.values()]
    out += [z3.And(r.requested >= 0, r.requested <= len(r.owner.requests))]
    out += [z3.And(x >= 0, x < widest) for xs in (r.req_list or {}).values() for x in xs]
    return out


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


def _history_points(enc: Encoding, s: SymState, p: int, field: str) -> list[tuple[z3.BoolRef, z3.ArithRef, Any]]:
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
        for (ci, ei, li), (cj, ej, lj) in itertools.combinations(_history_points(enc, s, p, "leader"), 2):
            out.append(z3.Implies(z3.And(ci, cj, ei == ej), li == lj))
    return z3.And(out)


def _blank_unless(enc: Encoding, s: SymState, alive: Any) -> z3.BoolRef:
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
    return _blank_unless(enc, s, s.alive)


def _followers_hold_no_leader_state(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        for b, r in s.replicas[p].items():
            out.append(z3.Implies(r.leader != b, z3.And(
                r.zk_version == 0, *[z3.Not(v) for v in r.isr.values()], *[v == 0 for v in r.remote_leo.values()],
                *[z3.Not(v) for v in r.pending.values()])))
    return z3.And(out)


def _leaders_are_in_their_isr(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([z3.Implies(r.leader == b, r.isr[b]) for p in range(enc.P) for b, r in s.replicas[p].items()])


def _remote_below_leader_leo(enc: Encoding, s: SymState) -> z3.BoolRef:
    return z3.And([z3.Implies(r.leader == b, v <= r.log.length)
                   for p in range(enc.P) for b, r in s.replicas[p].items() for v in r.remote_leo.values()])


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
    out = []
    for p in range(enc.P):
        z = s.zk[p]
        for b, r in s.replicas[p].items():
            out.append(z3.Implies(z.leader != b, z3.And(r.leader == z.leader, r.leader_epoch == z.leader_epoch)))
    return z3.And(out)


def _prefix(enc: Encoding, a: SymLog, b: SymLog) -> z3.BoolRef:
    """``a`` is a prefix of ``b``."""
    return z3.And(a.length <= b.length, *[z3.Implies(a.length > i, enc.rec_eq(a, b, i)) for i in range(enc.K)])


def _followers_are_prefixes(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        reps = s.replicas[p]
        for L, rl in reps.items():
            for b, r in reps.items():
                if b != L:
                    out.append(z3.Implies(z3.And(r.leader == L, rl.leader == L, s.alive[L]), z3.And(
                        _prefix(enc, r.log, rl.log), r.hw <= rl.hw,
                        z3.Implies(rl.isr[b], rl.hw <= rl.remote_leo[b]), rl.remote_leo[b] <= r.log.length)))
    return z3.And(out)


def _committed_below_leader_hw(enc: Encoding, s: SymState) -> z3.BoolRef:
    out = []
    for p in range(enc.P):
        g = s.ghost[p]
        for L, rl in s.replicas[p].items():
            leads = enc.acting_leader(s, p, L)
            for j in range(1, enc.K + 1):
                out.append(z3.Implies(z3.And(leads, g.acked[j]),
                                      z3.And(enc.holds_id(rl.log, j), g.position[j] < rl.hw)))
            out.append(z3.Implies(leads, z3.And(_prefix(enc, g.exposed, rl.log), g.exposed.length <= rl.hw)))
    return z3.And(out) if out else z3.BoolVal(True)


# ---------------------------------------------------------------------------- leader-epoch generations
# (true by construction, i.e. ``True``, under high-watermark, whose replicas have no epoch cache)
def _epoch_replicas(enc: Encoding, s: SymState) -> list[tuple[int, int, Any]]:
    return [(p, b, r) for p in range(enc.P) for b, r in s.replicas[p].items() if r.ep is not None]


def _entry_ends(ep: Any) -> list[z3.ArithRef]:
    """For each entry k, whether it is the last one (its epoch runs to the log end)."""
    n = len(ep.epochs)
    return [z3.Or(ep.length == k + 1, k + 1 >= n) for k in range(n)]


def _epoch_cache_well_formed(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Entries in increasing epochs with non-decreasing starts within the log, blank slots beyond the
    length; an answer is held exactly while TRUNCATE_PENDING, and it is UNDEFINED or an offset."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        ep = r.ep
        n = len(ep.epochs)
        out += [ep.length >= 0, ep.length <= n, z3.Or(ep.fetch_state == FETCHING, ep.fetch_state == ASK_EPOCH_END,
                                                      ep.fetch_state == TRUNCATE_PENDING),
                ep.answered == (ep.fetch_state == TRUNCATE_PENDING),
                z3.Implies(z3.Not(ep.answered), z3.And(ep.answer_epoch == 0, ep.answer_end == 0)),
                z3.Implies(ep.answered, z3.Or(z3.And(ep.answer_epoch == -1, ep.answer_end == -1),
                                              z3.And(ep.answer_epoch >= 0, ep.answer_end >= 0,
                                                     ep.answer_end <= enc.K)))]
        for k in range(n):
            inside = ep.length > k
            out.append(z3.If(inside, z3.And(ep.epochs[k] >= 0, ep.starts[k] >= 0, ep.starts[k] <= r.log.length),
                             z3.And(ep.epochs[k] == 0, ep.starts[k] == 0)))
            if k + 1 < n:
                out.append(z3.Implies(ep.length > k + 1, z3.And(ep.epochs[k] < ep.epochs[k + 1],
                                                                 ep.starts[k] <= ep.starts[k + 1])))
    return z3.And(out) if out else z3.BoolVal(True)


def _epoch_cache_covers_log(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A non-empty log has a cache starting at 0, and each record's epoch is that of the last entry
    starting at or before it (so OffsetsForLeaderEpoch answers describe the log)."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        ep = r.ep
        n = len(ep.epochs)
        out.append(z3.Implies(r.log.length > 0, z3.And(ep.length > 0, ep.starts[0] == 0)))
        for i in range(enc.K):
            for k in range(n):
                covers = z3.And(ep.length > k, ep.starts[k] <= i,
                                z3.Or(ep.length <= k + 1, *([ep.starts[k + 1] > i] if k + 1 < n else [])))
                out.append(z3.Implies(z3.And(r.log.length > i, covers), r.log.epochs[i] == ep.epochs[k]))
    return z3.And(out) if out else z3.BoolVal(True)


def _leaders_fetch_normally(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A leader and a dead replica are not reconciling; a reconciling follower has a log."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        ep = r.ep
        out.append(z3.Implies(z3.Or(r.leader == b, z3.Not(s.alive[b])), ep.fetch_state == FETCHING))
        out.append(z3.Implies(ep.fetch_state != FETCHING, r.log.length > 0))
    return z3.And(out) if out else z3.BoolVal(True)


def _leader_cache_ends_with_its_epoch(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A leader's latest cache entry is its own epoch; no live replica's cache is ahead of the epoch
    it believes in (kip-320 fences fetches, so a follower only copies records of its own epoch)."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        last = cache_latest(r.ep)
        out.append(z3.Implies(z3.And(s.alive[b], r.leader == b), last == r.leader_epoch))
        out.append(z3.Implies(z3.And(s.alive[b], r.leader != 0), last <= r.leader_epoch))
    return z3.And(out) if out else z3.BoolVal(True)


def _answers_cover_committed(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A pending OffsetsForLeaderEpoch answer of a live ISR member never cuts an acknowledged record
    it holds: it names an epoch (not UNDEFINED) and ends after that record."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        g = s.ghost[p]
        for j in range(1, enc.K + 1):
            held = z3.And(s.alive[b], s.zk[p].isr[b], r.ep.answered, g.acked[j], enc.holds_id(r.log, j))
            out.append(z3.Implies(held, z3.And(r.ep.answer_epoch >= g.epoch[j], r.ep.answer_end > g.position[j])))
    return z3.And(out) if out else z3.BoolVal(True)


def _committed_held_by_leaders(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A live leader of the znode's epoch holds every acknowledged record (below its HW)."""
    out = []
    for p in range(enc.P):
        g = s.ghost[p]
        for L in enc.U[p]:
            leads = enc.acting_leader(s, p, L)
            rl = s.replicas[p][L]
            for j in range(1, enc.K + 1):
                out.append(z3.Implies(z3.And(leads, g.acked[j]), enc.holds_id(rl.log, j)))
    return z3.And(out) if out else z3.BoolVal(True)


def _cache_epochs_bounded(enc: Encoding, s: SymState) -> z3.BoolRef:
    """No cached or answered epoch is ahead of the znode's."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        z = s.zk[p]
        out += [z3.Implies(r.ep.length > k, r.ep.epochs[k] <= z.leader_epoch) for k in range(len(r.ep.epochs))]
        out.append(r.ep.answer_epoch <= z.leader_epoch)
    return z3.And(out) if out else z3.BoolVal(True)


def _queued_requests_not_behind(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Every LeaderAndIsr queued at a broker is at least as new as the epoch it is on and as its
    cache (requests are sent in epoch order and delivered in order; a crash empties the queue)."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        q = s.inbox[b]
        for i, sl in enumerate(q.slots):
            lai = z3.And(q.length > i, sl.kind == REQ_LAI, sl.partition == p)
            out.append(z3.Implies(lai, z3.And(sl.leader_epoch >= r.leader_epoch, sl.leader_epoch >= cache_latest(r.ep))))
    return z3.And(out) if out else z3.BoolVal(True)


def _queued_requests_ordered(enc: Encoding, s: SymState) -> z3.BoolRef:
    """The LeaderAndIsr requests for one partition in a queue are in epoch order."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for b, q in s.inbox.items():
        for i, a in enumerate(q.slots):
            for j in range(i + 1, len(q.slots)):
                c = q.slots[j]
                both = z3.And(q.length > j, a.kind == REQ_LAI, c.kind == REQ_LAI, a.partition == c.partition)
                out.append(z3.Implies(both, a.leader_epoch <= c.leader_epoch))
    return z3.And(out) if out else z3.BoolVal(True)


def _queued_promotions(enc: Encoding, s: SymState, p: int) -> list[tuple[z3.BoolRef, Any]]:
    """(queued, slot) for every request slot of ``p`` that, when queued, is a LeaderAndIsr naming its
    receiver leader in an epoch newer than the receiver's."""
    out = []
    for b, q in s.inbox.items():
        if b not in s.replicas[p]:
            continue
        r = s.replicas[p][b]
        for i, sl in enumerate(q.slots):
            out.append((z3.And(q.length > i, sl.kind == REQ_LAI, sl.partition == p, sl.leader == b,
                               sl.leader_epoch > r.leader_epoch), sl))
    return out


def _unled_epochs_have_no_records(enc: Encoding, s: SymState) -> z3.BoolRef:
    """No log holds a record of an epoch whose leader has not taken over yet (a queued LeaderAndIsr
    naming its receiver as leader in an epoch newer than the receiver's)."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        logs = [r.log for r in s.replicas[p].values()]
        for new, sl in _queued_promotions(enc, s, p):
            for lg in logs:
                out += [z3.Implies(z3.And(new, lg.length > k), lg.epochs[k] != sl.leader_epoch)
                        for k in range(enc.K)]
    return z3.And(out) if out else z3.BoolVal(True)


def _leader_complete_for_its_epoch(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A live leader holds every record of its own epoch that any log holds, at the same offset."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        reps = s.replicas[p]
        for L, rl in reps.items():
            leads = z3.And(s.alive[L], rl.leader == L)
            for m, rm in reps.items():
                if m == L:
                    continue
                for k in range(enc.K):
                    mine = z3.And(leads, rm.log.length > k, rm.log.epochs[k] == rl.leader_epoch)
                    out.append(z3.Implies(mine, z3.And(rl.log.length > k, enc.rec_eq(rm.log, rl.log, k))))
    return z3.And(out) if out else z3.BoolVal(True)


def _answer_from_leader(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A pending answer of a follower whose leader still leads in its epoch is the leader's answer
    to the follower's latest epoch (its end only grows while the leader appends in its own epoch).
    Only where epoch queries are fenced by leader epoch (kip-320): an answer was given in the epoch
    the follower still has."""
    if not enc.rule.traits.fenced_by_leader_epoch:
        return z3.BoolVal(True)
    answer = answer_function(enc.rule.traits)
    out = []
    for p in range(enc.P):
        reps = s.replicas[p]
        for L, rl in reps.items():
            for f, rf in reps.items():
                if f == L or rf.ep is None or rl.ep is None:
                    continue
                cond = z3.And(s.alive[f], s.alive[L], rf.leader == L, rl.leader == L,
                              rf.leader_epoch == rl.leader_epoch, rf.ep.answered)
                e, o = answer(rl.ep, rl.log.length, cache_latest(rf.ep))
                out.append(z3.Implies(cond, z3.And(rf.ep.answer_epoch == e, z3.If(
                    e == rl.leader_epoch, rf.ep.answer_end <= o,
                    rf.ep.answer_end == o))))
    return z3.And(out) if out else z3.BoolVal(True)


def _controller_dead_are_not_leaders(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A broker the controller believes dead is not the znode's leader (its leave moved leadership)."""
    if not enc.E:
        return z3.BoolVal(True)
    return z3.And([z3.Implies(z3.Not(s.c_live[b]), s.zk[p].leader != b)
                   for p in range(enc.P) for b in enc.U[p]])


def _controller_dead_are_blank(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A broker the controller believes dead (dead, or restarted unnoticed) has no requests and leads
    or follows nobody: the controller sends only to brokers it believes alive."""
    if not enc.E:
        return z3.BoolVal(True)
    return _blank_unless(enc, s, s.c_live)


def _same_epoch_same_prefix(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Raft's log matching: two logs holding a record of the same epoch at the same offset agree on
    everything up to it (one leader per epoch appends, followers copy prefixes)."""
    out = []
    for p in range(enc.P):
        reps = list(s.replicas[p].values())
        for x in range(len(reps)):
            for y in range(x + 1, len(reps)):
                a, b = reps[x].log, reps[y].log
                for i in range(enc.K):
                    same = z3.And(a.length > i, b.length > i, a.epochs[i] == b.epochs[i])
                    out.append(z3.Implies(same, z3.And([enc.rec_eq(a, b, k) for k in range(i + 1)])))
    return z3.And(out) if out else z3.BoolVal(True)


def _reconciled_followers_are_prefixes(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A live follower that fetches from the live leader in the leader's epoch holds a prefix of the
    leader's log, and the leader's record of its LEO is not beyond it (kip-320: it reconciled when
    the epoch changed)."""
    out = []
    for L, rl, f, rf in _epoch_pairs(enc, s):
        cond = z3.And(s.alive[f], s.alive[L], rf.leader == L, rl.leader == L,
                      rf.leader_epoch == rl.leader_epoch, rf.ep.fetch_state == FETCHING)
        above = [z3.Implies(z3.And(rl.log.length > i, rf.log.length <= i), rl.log.epochs[i] >= cache_latest(rf.ep))
                 for i in range(enc.K)]
        out.append(z3.Implies(cond, z3.And(_prefix(enc, rf.log, rl.log), rl.remote_leo[f] <= rf.log.length, *above)))
    return z3.And(out) if out else z3.BoolVal(True)


def _epoch_pairs(enc: Encoding, s: SymState) -> list[tuple[int, Any, int, Any]]:
    """(L, replica of L, f, replica of f) for every two replicas of a partition, f's with an epoch
    state (the leader-epoch generations)."""
    return [(L, rl, f, rf) for p in range(enc.P) for L, rl in s.replicas[p].items()
            for f, rf in s.replicas[p].items() if f != L and rf.ep is not None]


def _remote_leo_sound(enc: Encoding, s: SymState) -> z3.BoolRef:
    """What a live leader records of a live replica's LEO is really held by that replica, in the same
    records as its own (so an HW computed from remote LEOs never counts records a follower lacks)."""
    out = []
    for p in range(enc.P):
        reps = s.replicas[p]
        for L, rl in reps.items():
            for m, rm in reps.items():
                if m != L:
                    out.append(z3.Implies(z3.And(s.alive[L], rl.leader == L, s.alive[m]), z3.And(
                        rl.remote_leo[m] <= rm.log.length, enc.prefix_eq(rm.log, rl.log, rl.remote_leo[m]))))
    return z3.And(out) if out else z3.BoolVal(True)


def _versions_follow_epochs(enc: Encoding, s: SymState) -> z3.BoolRef:
    """The znode, every queued LeaderAndIsr and every leader's (epoch, version) are points of the
    znode's history, where the version grows with every write and the epoch never falls: a newer
    epoch always comes with a newer version."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        for (ci, ei, vi), (cj, ej, vj) in itertools.permutations(_history_points(enc, s, p, "zk_version"), 2):
            out.append(z3.Implies(z3.And(ci, cj, ei < ej), vi < vj))
    return z3.And(out) if out else z3.BoolVal(True)


def _znode_isr_within_queued_leadership(enc: Encoding, s: SymState) -> z3.BoolRef:
    """While a LeaderAndIsr naming its receiver leader in a newer epoch than the receiver's waits in
    its queue, the znode still names that leader and its ISR stays within the request's: only the
    controller writes the znode meanwhile (the leader's conditional write needs the newer version),
    and the controller only shrinks an ISR."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        z, ar = s.zk[p], enc.U[p]
        for mine, sl in _queued_promotions(enc, s, p):
            out.append(z3.Implies(mine, z3.And(z.leader == sl.leader, *[z3.Implies(z.isr[m], sl.isr[m]) for m in ar])))
    return z3.And(out) if out else z3.BoolVal(True)


def _live_leaders_lead_the_znode(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A live replica that leads is the znode's leader, and the znode's ISR is within its own view:
    the controller moves leadership only away from a broker it saw leave (which left it blank), only
    shrinks an ISR, and a leader's own ISR writes set the znode's ISR to its view."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        z, ar = s.zk[p], enc.U[p]
        for b, r in s.replicas[p].items():
            out.append(z3.Implies(z3.And(s.alive[b], r.leader == b),
                                  z3.And(z.leader == b, *[z3.Implies(z.isr[m], r.isr[m]) for m in ar])))
    return z3.And(out) if out else z3.BoolVal(True)


def _committed_held_by_isr_even_if_down(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Every member of the znode's ISR and its leader holds every acknowledged record, down or not:
    a crash keeps the log (no lossy crash), so a broker that restarts still in the ISR holds them."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        z, g = s.zk[p], s.ghost[p]
        for b, r in s.replicas[p].items():
            for j in range(1, enc.K + 1):
                out.append(z3.Implies(z3.And(z3.Or(z.isr[b], z.leader == b), g.acked[j]), enc.holds_id(r.log, j)))
    return z3.And(out) if out else z3.BoolVal(True)


def _remote_leo_sound_even_if_down(enc: Encoding, s: SymState) -> z3.BoolRef:
    """*RemoteLeoSound* for down replicas too: what a live leader records of a replica's LEO is held
    by that replica even while it is down (its log survives the crash)."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        reps = s.replicas[p]
        for L, rl in reps.items():
            for m, rm in reps.items():
                if m != L:
                    out.append(z3.Implies(z3.And(s.alive[L], rl.leader == L), z3.And(
                        rl.remote_leo[m] <= rm.log.length, enc.prefix_eq(rm.log, rl.log, rl.remote_leo[m]))))
    return z3.And(out) if out else z3.BoolVal(True)


def _answers_not_ahead_of_cache(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A pending OffsetsForLeaderEpoch answer names no epoch newer than the follower's latest cached
    one: the leader answers with an epoch at most the one asked, and the follower's cache does not
    change while the answer waits."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        out.append(z3.Implies(z3.And(r.ep.answered, r.ep.answer_epoch != -1), r.ep.answer_epoch <= cache_latest(r.ep)))
    return z3.And(out) if out else z3.BoolVal(True)


def _answers_cover_recorded_leo(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A pending answer never cuts below what a live leader records of that follower's LEO: it names
    an epoch (not UNDEFINED) at least that of the follower's record before it, and ends at or after
    it (so truncating keeps the records the leader counts on for its HW)."""
    out = []
    for L, rl, f, rf in _epoch_pairs(enc, s):
        v = rl.remote_leo[f]
        cond = z3.And(s.alive[L], rl.leader == L, rf.ep.answered, v > 0)
        last = [z3.Implies(v == i + 1, rf.ep.answer_epoch >= rf.log.epochs[i]) for i in range(enc.K)]
        out.append(z3.Implies(cond, z3.And(rf.ep.answer_epoch >= 0, rf.ep.answer_end >= v, *last)))
    return z3.And(out) if out else z3.BoolVal(True)


def _offline_means_leaderless(enc: Encoding, s: SymState) -> z3.BoolRef:
    """The controller holds a partition Offline only while its znode names no leader (it goes
    Offline when no leader can be elected), so a broker coming back never re-elects over a leader."""
    if not enc.E:
        return z3.BoolVal(True)
    return z3.And([z3.Or(s.partition_online[p], s.zk[p].leader == 0) for p in range(enc.P)])


# ---------------------------------------------------------------------------- kip-320 reconciliation
# (specs/08-symbolic.md#the-kip-320-gap: what a fetching follower's log and cache hold relative to its leader's)
def _cache_last_start(ep: Any) -> z3.ArithRef:
    return epoch_last(ep, ep.starts)


def _empty_epochs_only_at_leaders(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Only a live leader has a latest cache entry without records (one starting at its log end),
    apart from the initial ``[e0@0]`` of an empty log: a leader records its epoch before appending,
    a follower only for records it appends, a truncation or a crash drops entries starting at or
    beyond the new end, and (with the OfflinePartition selector alone) a live leader is never made a
    follower. So a follower's latest epoch is that of its last record."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        ep = r.ep
        out.append(z3.Implies(z3.Not(z3.And(s.alive[b], r.leader == b)), z3.Or(
            ep.length == 0, _cache_last_start(ep) < r.log.length,
            z3.And(r.log.length == 0, ep.length == 1, ep.epochs[0] == 0))))
    return z3.And(out) if out else z3.BoolVal(True)


def _queued_requests_keep_live_leaders(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A LeaderAndIsr queued at a live leader for a newer epoch than its own, or queued behind a
    promotion of its receiver, names the receiver leader too: the controller moves leadership only
    away from a broker it saw leave, and leaving empties the queue."""
    out = []
    for p in range(enc.P):
        for b, r in s.replicas[p].items():
            q = s.inbox[b]
            lai = [z3.And(q.length > i, sl.kind == REQ_LAI, sl.partition == p) for i, sl in enumerate(q.slots)]
            for j, sl in enumerate(q.slots):
                behind = [z3.And(lai[i], q.slots[i].leader == b, q.slots[i].leader_epoch > r.leader_epoch)
                          for i in range(j)]
                c = z3.And(lai[j], z3.Or(z3.And(s.alive[b], r.leader == b, sl.leader_epoch > r.leader_epoch), *behind))
                out.append(z3.Implies(c, sl.leader == b))
    return z3.And(out) if out else z3.BoolVal(True)


def _followers_wait_for_their_leader(enc: Encoding, s: SymState) -> z3.BoolRef:
    """While a promotion of L to epoch E waits in L's queue, a live follower of L in epoch E has not
    reconciled or fetched yet: it must ask its epoch's end, or it has an empty log (kip-320 fences
    epoch queries and fetches by the leader's epoch, which L does not have yet)."""
    if not enc.rule.traits.fenced_by_leader_epoch:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        for new, sl in _queued_promotions(enc, s, p):
            for f, rf in s.replicas[p].items():
                if rf.ep is None:
                    continue
                c = z3.And(new, s.alive[f], rf.leader == sl.leader, rf.leader_epoch == sl.leader_epoch)
                out.append(z3.Implies(c, z3.Or(rf.ep.fetch_state == ASK_EPOCH_END,
                                               z3.And(rf.ep.fetch_state == FETCHING, rf.log.length == 0))))
    return z3.And(out) if out else z3.BoolVal(True)


def _records_not_before_their_epoch_start(enc: Encoding, s: SymState) -> z3.BoolRef:
    """No log holds a record of epoch e at an offset before where any cache says e starts: the
    leader of e starts it at its log end and appends from there, followers copy at the same offsets."""
    out = []
    for p in range(enc.P):
        logs = [r.log for r in s.replicas[p].values()]
        for r in s.replicas[p].values():
            if r.ep is None:
                continue
            ep = r.ep
            for k in range(len(ep.epochs)):
                for x in logs:
                    for i in range(enc.K):
                        out.append(z3.Implies(z3.And(ep.length > k, x.length > i, x.epochs[i] == ep.epochs[k]),
                                              ep.starts[k] <= i))
    return z3.And(out) if out else z3.BoolVal(True)


def _blank_replicas_fetch_normally(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A replica blanked by a crash (leader epoch -1) is not reconciling and holds no answer."""
    return z3.And([z3.Implies(r.leader_epoch == -1, r.ep.fetch_state == FETCHING)
                   for p, b, r in _epoch_replicas(enc, s)] or [z3.BoolVal(True)])


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

EPOCH_CANDIDATES: tuple[tuple[str, Pred], ...] = (
    ("EpochCacheWellFormed", _epoch_cache_well_formed),
    ("EpochCacheCoversLog", _epoch_cache_covers_log),
    ("LeadersFetchNormally", _leaders_fetch_normally),
    ("LeaderCacheEndsWithItsEpoch", _leader_cache_ends_with_its_epoch),
    ("AnswersCoverCommitted", _answers_cover_committed),
    ("CommittedHeldByLeader", _committed_held_by_leaders),
    ("SameEpochSamePrefix", _same_epoch_same_prefix),
    ("ReconciledFollowersArePrefixes", _reconciled_followers_are_prefixes),
    ("RemoteLeoSound", _remote_leo_sound),
    ("CacheEpochsBounded", _cache_epochs_bounded),
    ("QueuedRequestsNotBehind", _queued_requests_not_behind),
    ("QueuedRequestsOrdered", _queued_requests_ordered),
    ("UnledEpochsHaveNoRecords", _unled_epochs_have_no_records),
    ("LeaderCompleteForItsEpoch", _leader_complete_for_its_epoch),
    ("AnswerFromLeader", _answer_from_leader),
    ("ControllerDeadAreNotLeaders", _controller_dead_are_not_leaders),
    ("ControllerDeadAreBlank", _controller_dead_are_blank),
    ("VersionsFollowEpochs", _versions_follow_epochs),
    ("ZnodeIsrWithinQueuedLeadership", _znode_isr_within_queued_leadership),
    ("LiveLeadersLeadTheZnode", _live_leaders_lead_the_znode),
    ("CommittedHeldByIsrEvenIfDown", _committed_held_by_isr_even_if_down),
    ("RemoteLeoSoundEvenIfDown", _remote_leo_sound_even_if_down),
    ("AnswersNotAheadOfCache", _answers_not_ahead_of_cache),
    ("AnswersCoverRecordedLeo", _answers_cover_recorded_leo),
    ("OfflineMeansLeaderless", _offline_means_leaderless),
    ("EmptyEpochsOnlyAtLeaders", _empty_epochs_only_at_leaders),
    ("QueuedRequestsKeepLiveLeaders", _queued_requests_keep_live_leaders),
    ("FollowersWaitForTheirLeader", _followers_wait_for_their_leader),
    ("RecordsNotBeforeTheirEpochStart", _records_not_before_their_epoch_start),
    ("BlankReplicasFetchNormally", _blank_replicas_fetch_normally),
) + COMMITTED_PREFIX_CANDIDATES  # .committed: the committed prefix (specs/08-symbolic.md#the-committed-prefix)
"""Added to the pool for the leader-epoch generations only: the epoch cache and reconciliation, and
the Raft-style facts a durability proof through OffsetsForLeaderEpoch needs (specs/08-symbolic.md).
The high-watermark pool is :data:`CANDIDATES` alone, so its results are what they were."""


def candidates_for(enc: Encoding) -> tuple[tuple[str, Pred], ...]:
    return CANDIDATES + EPOCH_CANDIDATES if enc.E else CANDIDATES


# ============================================================================ readable states
_FETCH_STATES = {FETCHING: "fetching", ASK_EPOCH_END: "must ask its epoch's end", TRUNCATE_PENDING: "must truncate"}


def describe(s: State, enc: Encoding) -> list[str]:
    """A state of the encoded fragment, one line per partition and per broker."""
    out = []
    c = s.controller
    out.append(f"controller: believes alive {render(c.live)}; ZooKeeper registrations {render(s.zk.live)}")
    for p, zp in enumerate(s.zk.partitions):
        g = s.ghost[p]
        state = "Online" if c.partition_states[p] == 2 else "Offline"
        out.append(f"p{p}: znode leader {zp.leader or 'none'}, ISR {render(zp.isr)}, leader epoch {zp.leader_epoch}, "
                   f"version {zp.version}; {state}; produced {g.produced}, acked {render(g.acked)}, "
                   f"exposed {render_log(g.exposed)}")
    for i, br in enumerate(s.brokers):
        b = i + 1
        head = f"broker {b} {'up' if br.alive else 'DOWN'}"
        parts = []
        for p, r in enumerate(br.replicas):
            if r is None:
                continue
            role = ("leads" if r.leader == b else f"follows {r.leader}" if r.leader else "no leader")
            t = f"p{p}: log {render_log(r.log)} hw {r.hw} ckpt {r.checkpoint}, {role} (epoch {r.leader_epoch})"
            if r.leader == b:
                remote = ",".join(f"{m + 1}:{v}" for m, v in enumerate(r.remote_leo) if m + 1 in enc.U[p] and m + 1 != b)
                t += f", ISR {render(r.isr)}, zkv {r.zk_version}, remote LEO {{{remote}}}, pending {render(r.pending)}"
            if enc.E:  # the leader-epoch generations
                cache = " ".join(f"e{e}@{o}" for e, o in r.epochs) or "empty"
                t += f", epochs [{cache}], {_FETCH_STATES.get(r.fetch_state, r.fetch_state)}"
                if r.answer:
                    t += f" (answer: epoch {r.answer[0]} ends at {r.answer[1]})"
            parts.append(t)
        reqs = []
        for q in s.inbox[i]:
            if isinstance(q, LeaderAndIsr):
                reqs.append(f"LeaderAndIsr(p{q.partition}: leader {q.leader or 'none'}, ISR {render(q.isr)}, "
                            f"epoch {q.leader_epoch}, zkv {q.zk_version})")
            elif isinstance(q, StopReplica):
                reqs.append(f"StopReplica(p{q.partition})")
            else:
                reqs.append("UpdateMetadata")
        if reqs:
            parts.append("queue: " + ", ".join(reqs))
        out.append(head + ("; " + "; ".join(parts) if parts else ""))
    left = s.budget
    out.append(f"budgets left: crashes {left.crashes}, lossy {left.lossy_crashes}, undetected restarts "
               f"{left.undetected_restarts}, ISR shrinks {left.isr_shrinks}, delayed deliveries {left.delayed_requests}")
    return out


def describe_pair(before: State, label: str, after: State, enc: Encoding) -> list[str]:
    a, b = describe(before, enc), describe(after, enc)
    lines = ["before:"] + [f"    {x}" for x in a] + [f"action: {label}", "after (changed lines marked *):"]
    lines += [f"  {'*' if i >= len(a) or a[i] != x else ' '} {x}" for i, x in enumerate(b)]
    return lines


# ============================================================================ Houdini
_PREFERENCE = ("DeliverRequest: LeaderAndIsr, becomes follower", "DeliverRequest: LeaderAndIsr, becomes leader",
               "Fetch", "Produce", "ShrinkIsr")


def _preference(inst: Instance) -> tuple[int, str]:
    """Order in which actions are searched for a counterexample to show: the replication path
    before faults, the controller's broker change last (its queries are the costly ones)."""
    for i, k in enumerate(_PREFERENCE):
        if inst.kind.startswith(k):
            return (i, inst.kind)
    return (len(_PREFERENCE) + (1 if inst.name == "ProcessBrokerChange" else 0), inst.kind)


class _Answer(NamedTuple):
    result: z3.CheckSatResult
    model: Any  # a z3.ModelRef when ``result`` is sat, else None


class _Query:
    """A fixed base of constraints; each check runs on a fresh solver (non-incremental z3
    preprocesses and bit-blasts the problem, much faster here than push/pop)."""

    def __init__(self, timeout: float | None, base: list[z3.BoolRef]) -> None:
        self.timeout = timeout
        self.base = base

    def check(self, extra: list[z3.BoolRef]) -> _Answer:
        sv = new_solver(self.timeout)
        sv.add(*self.base, *extra)
        r = sv.check()
        return _Answer(r, sv.model() if r == z3.sat else None)


@dataclass
class Cti:
    before: State
    action: str
    kind: str
    after: State
    lines: list[str]

    def to_json(self) -> dict[str, Any]:
        """Plain data: the action and both states as readable lines (isrcheck.render.json_form turns
        the states themselves into JSON where the command line wants it)."""
        return {"action": self.action, "kind": self.kind, "before": self.lines_of("before"),
                "after": self.lines_of("after")}

    def lines_of(self, which: str) -> list[str]:
        start = self.lines.index("before:" if which == "before" else "after (changed lines marked *):") + 1
        out = []
        for line in self.lines[start:]:
            if not line.startswith("  "):
                break
            out.append(line.strip().lstrip("* ").strip())
        return out


def counterexample_to_induction(enc: Encoding, pre: SymState, inst: Instance, model: Any) -> Cti:
    """The pair of model states (and the action between them) that a satisfying z3 ``model`` of a
    query on ``inst`` from the symbolic state ``pre`` describes, decoded by the model's own types."""
    before = pre.decode(model, enc.init_state)
    after = inst.effect.decode(model, enc.init_state)
    label = str(enc.action_of(inst, model))
    return Cti(before, label, inst.kind, after, describe_pair(before, label, after, enc))


@dataclass
class InductionObligation(Obligation):
    """An ``inductive`` verdict; a refuted one carries its counterexample to induction (``cti``)."""

    cti: Cti | None = None


@dataclass
class InductionResult:
    generation: str
    kept: list[str]
    dropped: dict[str, Cti | str]  # name -> counterexample to induction, or "initial state" / "unknown"
    obligations: list[Obligation]
    queries: int
    seconds: float
    per_kind: dict[str, list[str]] = field(default_factory=dict)  # safety property -> kinds that broke it
    timing: dict[str, float] = field(default_factory=dict)  # action kind -> seconds of its Houdini queries


def _init_holds(enc: Encoding, preds: dict[str, Pred]) -> dict[str, bool]:
    s = enc.fresh("init")
    solver = z3.Solver()
    solver.add(enc.init_pin(s))
    return {n: solver.check(z3.Not(f(enc, s))) == z3.unsat for n, f in preds.items()}


# ---------------------------------------------------------------------------- the phases of prove_inductive
@dataclass(frozen=True)
class Encoded:
    """Phase 1: the encoding, the pool (candidates and safety properties), which members the initial
    state breaks, and one query per action from a symbolic state ``pre`` (within the bounds, the step
    not overflowing) with every member's term before and after the step."""

    enc: Encoding
    preds: dict[str, Pred]
    false_initially: tuple[str, ...]
    pre: SymState
    insts: list[Instance]  # cheap actions first: they drop most candidates before the costly broker changes
    pre_terms: dict[str, z3.BoolRef]
    post_terms: list[dict[str, z3.BoolRef]]  # per instance
    solvers: list[_Query]  # per instance
    illegal: list[_Query] = field(default_factory=list)  # per instance: the step is an illegal move

    @property
    def generation(self) -> str:
        return self.enc.rule.name


@dataclass(frozen=True)
class Fixpoint:
    """Phase 2 (Houdini): the largest inductive subset of the pool and why every other member left it."""

    kept: list[str]  # in pool order
    dropped: dict[str, Cti | str]  # a counterexample to induction, or "false in the initial state"
    unknown: dict[str, str]  # members z3 gave up on (neither kept nor dropped)
    per_kind: dict[str, list[str]]  # member -> the kinds of action that broke it, in the order found
    timing: dict[str, float]  # action kind -> seconds of its queries
    queries: int


@dataclass(frozen=True)
class Explained:
    """Phase 3: for each dropped safety property, the first counterexample to induction given the final
    invariant (actions in :func:`_preference` order) and every kind of action it is not preserved by."""

    first: dict[str, Cti]
    per_kind: dict[str, list[str]]
    queries: int


@dataclass(frozen=True)
class StepCheck:
    """Phase 4: the transition property EpochsMonotonic against the final invariant."""

    cti: Cti | None  # the first step that lowers an epoch
    unknown: list[str]  # labels of the instances z3 gave up on
    queries: int


def encode(cfg: Any, generation_name: str | None = None, timeout: float | None = 300.0, queue: int | None = None,
           candidates: tuple[tuple[str, Pred], ...] | None = None, rule: Any = None) -> Encoded:
    """Phase 1 of :func:`prove_inductive` (see :class:`Encoded`); ``rule`` replaces the generation's
    :class:`~.instance.TruncationRule` (a documented mutation, :mod:`.mutations`)."""
    enc = Encoding(cfg, generation_name, queue, split_broker_change=True, rule=rule)
    preds: dict[str, Pred] = {n: f for n, f in (candidates_for(enc) if candidates is None else candidates)}
    for name in enc.always():
        preds[name] = (lambda n: (lambda e, s: e.properties(s)[n]))(name)
    init = _init_holds(enc, preds)
    s = enc.fresh("pre")
    insts = sorted(enc.instances(s), key=lambda i: i.name == "ProcessBrokerChange")
    pre_terms = {n: preds[n](enc, s) for n in preds}
    post_terms = [{n: preds[n](enc, i.effect) for n in preds} for i in insts]
    base = bounds(enc, s)
    # an illegal move (OnlyValidTransitions) ends the run in the model: only legal steps lead on
    solvers = [_Query(timeout, [base, inst.guard, z3.Not(inst.effect.overflow), z3.Not(inst.illegal)])
               for inst in insts]
    illegal = [_Query(timeout, [base, inst.guard, inst.illegal]) for inst in insts]
    return Encoded(enc, preds, tuple(n for n, ok in init.items() if not ok), s, insts, pre_terms, post_terms, solvers,
                   illegal)


def houdini(e: Encoded, progress: Progress = no_progress) -> Fixpoint:
    """Phase 2: drop every member some action breaks from a state satisfying all the others, until
    none is dropped (see :class:`Fixpoint`)."""
    dropped: dict[str, Cti | str] = {n: "false in the initial state" for n in e.false_initially}
    active = [n for n in e.preds if n not in dropped]
    timing: dict[str, float] = {}
    queries = 0
    unknown: dict[str, str] = {}
    per_kind: dict[str, list[str]] = {}
    changed = True
    while changed:
        changed = False
        for k, inst in enumerate(e.insts):
            post = e.post_terms[k]
            while True:
                live = [n for n in active if n not in unknown]
                if not live:
                    break
                progress(f"{e.generation}: {inst.label()}: {len(live)} invariants")
                t0 = time.perf_counter()
                r, m = e.solvers[k].check([e.pre_terms[n] for n in live] + [z3.Or([z3.Not(post[n]) for n in live])])
                timing[inst.kind] = timing.get(inst.kind, 0.0) + time.perf_counter() - t0
                queries += 1
                if r == z3.unsat:
                    break
                if r != z3.sat:
                    for n in live:
                        unknown.setdefault(n, f"z3 gave up on {inst.label()}")
                    break
                broken = [n for n in live if z3.is_false(m.eval(post[n], model_completion=True))]
                cti = counterexample_to_induction(e.enc, e.pre, inst, m)
                for n in broken:
                    dropped[n] = cti
                    active.remove(n)
                    per_kind.setdefault(n, []).append(inst.kind)
                changed = True
    kept = [n for n in active if n not in unknown]
    return Fixpoint(kept, dropped, unknown, per_kind, timing, queries)


def explain(e: Encoded, fix: Fixpoint, lost: list[str], every_action: bool,
            progress: Progress = no_progress) -> Explained:
    """Phase 3: through which actions is each of the ``lost`` safety properties not inductive, given
    the final invariant? The first one found, in :func:`_preference` order, is the counterexample
    shown; the broker-change cases are searched only with ``every_action``."""
    inv_terms = [e.pre_terms[n] for n in fix.kept]
    order = sorted(range(len(e.insts)), key=lambda k: _preference(e.insts[k]))
    first: dict[str, Cti] = {}
    per_kind: dict[str, list[str]] = {}
    queries = 0
    for k in order:
        inst = e.insts[k]
        if not every_action and inst.name == "ProcessBrokerChange":
            continue
        post = e.post_terms[k]
        todo = list(lost)
        while todo:
            progress(f"{e.generation}: counterexamples through {inst.kind}")
            r, m = e.solvers[k].check(inv_terms + [e.pre_terms[n] for n in todo]
                                      + [z3.Or([z3.Not(post[n]) for n in todo])])
            queries += 1
            if r != z3.sat:
                break
            broken = [n for n in todo if z3.is_false(m.eval(post[n], model_completion=True))]
            if not broken:
                break
            cti = counterexample_to_induction(e.enc, e.pre, inst, m)
            for n in broken:
                first.setdefault(n, cti)
                if inst.kind not in per_kind.setdefault(n, []):
                    per_kind[n].append(inst.kind)
                todo.remove(n)
    return Explained(first, per_kind, queries)


def check_epochs_monotonic(e: Encoded, kept: list[str]) -> StepCheck:
    """Phase 4: does any step from a state satisfying the final invariant (``kept``) lower an epoch?"""
    inv = [e.pre_terms[n] for n in kept]
    unknown: list[str] = []
    cti: Cti | None = None
    queries = 0
    for k, inst in enumerate(e.insts):
        r, m = e.solvers[k].check(inv + [z3.Not(e.enc.step_properties(e.pre, inst.effect)["EpochsMonotonic"])])
        queries += 1
        if r == z3.sat and cti is None:
            cti = counterexample_to_induction(e.enc, e.pre, inst, m)
        elif r not in (z3.sat, z3.unsat):
            unknown.append(inst.label())
    return StepCheck(cti, unknown, queries)


def _scope(enc: Encoding) -> str:
    return (f"every state of {enc.N} brokers with logs of at most {enc.K} records and at most {enc.Q} queued "
            f"requests per broker, any epochs and remaining budgets")


def safety_verdicts(e: Encoded, fix: Fixpoint, dropped: dict[str, Cti | str], per_kind: dict[str, list[str]],
                    seconds: float) -> list[Obligation]:
    """Phase 5: one verdict per safety property: PROVED when it is in the final invariant, UNKNOWN
    when z3 gave up on it, REFUTED with its counterexample to induction (or the reason) otherwise."""
    gen, scope = e.generation, _scope(e.enc)
    out: list[Obligation] = []
    for name in e.enc.always():
        if name in fix.kept:
            ob = InductionObligation("inductive", name, gen, Verdict.PROVED, seconds, scope,
                                     detail="inductive together with: "
                                            + (", ".join(x for x in fix.kept if x != name) or "nothing"))
        elif name in fix.unknown:
            ob = InductionObligation("inductive", name, gen, Verdict.UNKNOWN, seconds, scope, detail=fix.unknown[name])
        else:
            why = dropped[name]
            if isinstance(why, Cti):
                kinds = per_kind.get(name, [why.kind])
                detail = (f"not inductive: counterexample to induction through {why.kind} "
                          "(a state satisfying the other invariants; bmc tells whether it is reachable)"
                          + (f"; also not preserved by: {', '.join(k for k in kinds if k != why.kind)}"
                             if len(kinds) > 1 else ""))
                ob = InductionObligation("inductive", name, gen, Verdict.REFUTED, seconds, scope, detail=detail,
                                         counterexample=why.to_json(), lines=why.lines, cti=why)
            else:
                ob = InductionObligation("inductive", name, gen, Verdict.REFUTED, seconds, scope, detail=why)
        out.append(ob)
    return out


def check_only_valid_transitions(e: Encoded, kept: list[str]) -> StepCheck:
    """Phase 4, where the encoding checks state-machine moves (reassignment, topic creation or
    deletion): is any step from a state satisfying the final invariant (``kept``) an illegal move?"""
    inv = [e.pre_terms[n] for n in kept]
    unknown: list[str] = []
    cti: Cti | None = None
    queries = 0
    for k, inst in enumerate(e.insts):
        if z3.is_false(z3.simplify(inst.illegal)):
            continue
        r, m = e.illegal[k].check(inv)
        queries += 1
        if r == z3.sat and cti is None:
            cti = counterexample_to_induction(e.enc, e.pre, inst, m)
        elif r not in (z3.sat, z3.unsat):
            unknown.append(inst.label())
    return StepCheck(cti, unknown, queries)


def only_valid_transitions_verdict(e: Encoded, check: StepCheck, seconds: float) -> Obligation:
    """Phase 5 for OnlyValidTransitions (see :func:`check_only_valid_transitions`)."""
    gen, scope = e.generation, _scope(e.enc)
    if check.cti is not None:
        return InductionObligation("inductive", "OnlyValidTransitions", gen, Verdict.REFUTED, seconds, scope,
                                   detail=f"a step from a state satisfying the invariant makes a move outside its "
                                          f"state-machine table ({check.cti.kind}; the state after is the "
                                          "encoding's, meaningless: the model refuses the step)",
                                   counterexample=check.cti.to_json(), lines=check.cti.lines, cti=check.cti)
    if check.unknown:
        return InductionObligation("inductive", "OnlyValidTransitions", gen, Verdict.UNKNOWN, seconds, scope,
                                   detail="z3 gave up on " + ", ".join(check.unknown))
    return InductionObligation("inductive", "OnlyValidTransitions", gen, Verdict.PROVED, seconds, scope,
                               detail="no step from a state satisfying the invariant is an illegal move")


def epochs_monotonic_verdict(e: Encoded, check: StepCheck, seconds: float) -> Obligation:
    """Phase 5, for the transition property (see :func:`check_epochs_monotonic`)."""
    gen, scope = e.generation, _scope(e.enc)
    if check.cti is not None:
        return InductionObligation("inductive", "EpochsMonotonic", gen, Verdict.REFUTED, seconds, scope,
                                   detail=f"a step from a state satisfying the invariant lowers an epoch "
                                          f"({check.cti.kind})",
                                   counterexample=check.cti.to_json(), lines=check.cti.lines, cti=check.cti)
    if check.unknown:
        return InductionObligation("inductive", "EpochsMonotonic", gen, Verdict.UNKNOWN, seconds, scope,
                                   detail="z3 gave up on " + ", ".join(check.unknown))
    return InductionObligation("inductive", "EpochsMonotonic", gen, Verdict.PROVED, seconds, scope,
                               detail="every step from a state satisfying the invariant")


def prove_inductive(cfg: Any, generation_name: str | None = None, timeout: float | None = 300.0,
                    queue: int | None = None, progress: Progress = no_progress,
                    candidates: tuple[tuple[str, Pred], ...] | None = None,
                    per_action: bool | str = True, rule: Any = None) -> InductionResult:
    """Houdini over the safety properties and ``candidates`` for the encoding of ``cfg``.

    The phases: :func:`encode` the pool and one query per action; :func:`houdini` to the largest
    inductive subset; :func:`explain` each dropped safety property action by action (with
    ``per_action``; ``"all"`` includes the broker-change cases); :func:`check_epochs_monotonic`
    against the final invariant; then the verdicts (:func:`safety_verdicts`,
    :func:`epochs_monotonic_verdict`). Every counterexample to induction is built by
    :func:`counterexample_to_induction`."""
    start = time.perf_counter()
    e = encode(cfg, generation_name, timeout, queue, candidates, rule)
    fix = houdini(e, progress)
    dropped, per_kind, queries = dict(fix.dropped), fix.per_kind, fix.queries
    always = e.enc.always()
    lost = [n for n in always if n in dropped and isinstance(dropped[n], Cti)]
    if lost and per_action:
        why = explain(e, fix, lost, per_action == "all", progress)
        dropped.update(why.first)
        per_kind, queries = why.per_kind, queries + why.queries
    safety_seconds = time.perf_counter() - start
    em = check_epochs_monotonic(e, fix.kept)
    seconds = time.perf_counter() - start
    obligations = safety_verdicts(e, fix, dropped, per_kind, safety_seconds)
    obligations.append(epochs_monotonic_verdict(e, em, seconds))
    if e.enc.step_faults():
        ov = check_only_valid_transitions(e, fix.kept)
        obligations.append(only_valid_transitions_verdict(e, ov, time.perf_counter() - start))
        queries += ov.queries
    strengthening = [n for n in fix.kept if n not in always]
    return InductionResult(e.generation, strengthening, {n: d for n, d in dropped.items() if n not in always},
                           obligations, queries + em.queries, seconds, per_kind, fix.timing)


__all__ = ["KIP_320_STRENGTHENING", "KIP_320_DURABILITY", "KIP_320_RECONCILIATION", "KIP_320_COMMITTED_PREFIX", "HIGH_WATERMARK_STRENGTHENING", "check_preserved",
           "CANDIDATES", "EPOCH_CANDIDATES", "candidates_for", "prove_inductive", "describe", "describe_pair", "bounds",
           "InductionResult", "InductionObligation", "Cti", "counterexample_to_induction", "encode", "houdini",
           "explain", "check_epochs_monotonic", "safety_verdicts", "epochs_monotonic_verdict",
           "check_only_valid_transitions", "only_valid_transitions_verdict", "Encoded", "Fixpoint",
           "Explained", "StepCheck"]


HIGH_WATERMARK_STRENGTHENING = (
    "WellFormed", "RecordsKeepTheirPlace", "LogNoLongerThanProduced", "AckedAndPendingWereProduced",
    "VersionsBounded", "EpochsBounded", "CurrentVersionIsCurrentLeader", "CurrentRequestIsCurrentZnode",
    "EpochNamesOneLeader", "DeadBrokersAreBlank", "FollowersHoldNoLeaderState", "RemoteLeoBelowLeaderLeo",
    "DeadBrokersWithinCrashBudget",
)
"""What Houdini keeps for the seeds' protocol with crashes (hw-truncation-one-crash); pinned so that a
single action can be checked quickly (:func:`check_preserved`); tests/invariants/test_symbolic_induction.py
checks that it is still what Houdini finds and that it holds on reachable states."""


KIP_320_STRENGTHENING = HIGH_WATERMARK_STRENGTHENING + (
    "LeadersAreInTheirIsr", "PendingAboveHighWatermark",
    "EpochCacheWellFormed", "EpochCacheCoversLog", "LeadersFetchNormally", "LeaderCacheEndsWithItsEpoch",
    "AnswersCoverCommitted", "CommittedHeldByLeader", "SameEpochSamePrefix", "ReconciledFollowersArePrefixes",
    "RemoteLeoSound", "CacheEpochsBounded", "QueuedRequestsNotBehind", "QueuedRequestsOrdered",
    "UnledEpochsHaveNoRecords", "LeaderCompleteForItsEpoch", "AnswerFromLeader", "ControllerDeadAreNotLeaders",
    "ControllerDeadAreBlank", "VersionsFollowEpochs", "ZnodeIsrWithinQueuedLeadership", "LiveLeadersLeadTheZnode",
    "CommittedHeldByIsrEvenIfDown", "RemoteLeoSoundEvenIfDown", "AnswersNotAheadOfCache", "AnswersCoverRecordedLeo",
    "OfflineMeansLeaderless", "EmptyEpochsOnlyAtLeaders", "QueuedRequestsKeepLiveLeaders",
    "FollowersWaitForTheirLeader", "RecordsNotBeforeTheirEpochStart", "BlankReplicasFetchNormally",
    *KIP_320_COMMITTED_PREFIX)
"""What Houdini keeps for kip-320 with one crash and three replicas (leader-crash-kip-320): the
high-watermark set, two more replica facts and every candidate of :data:`EPOCH_CANDIDATES` (the
durability facts :data:`KIP_320_DURABILITY` and the reconciliation facts
:data:`KIP_320_RECONCILIATION` among them); with it NoCommittedWriteLost is proved inductive
(specs/08-symbolic.md#the-kip-320-gap). CheckpointBelowLogEnd holds on reachable states but is not
inductive (truncating to an epoch's end may cut below the checkpoint in an unreachable state). With the
committed-prefix facts (:data:`KIP_320_COMMITTED_PREFIX`, :mod:`.committed`) StrongIsr, LogMatching and
ConsistentRead are proved too (specs/08-symbolic.md#the-committed-prefix)."""


KIP_320_DURABILITY = (
    "VersionsFollowEpochs", "ZnodeIsrWithinQueuedLeadership", "LiveLeadersLeadTheZnode", "OfflineMeansLeaderless",
    "CommittedHeldByIsrEvenIfDown", "RemoteLeoSoundEvenIfDown", "AnswersNotAheadOfCache", "AnswersCoverRecordedLeo")
"""The epoch pool's facts that close the kip-320 durability gap (specs/08-symbolic.md#the-kip-320-gap):
the znode's history orders epochs and versions alike; a queued LeaderAndIsr that will make its
receiver leader bounds the znode's ISR; a live leader is the znode's leader and its ISR view covers
the znode's; an Offline partition has no leader; acknowledged records and recorded follower LEOs are
held even by replicas that are down; a pending OffsetsForLeaderEpoch answer cuts neither."""


KIP_320_RECONCILIATION = (
    "EmptyEpochsOnlyAtLeaders", "QueuedRequestsKeepLiveLeaders", "FollowersWaitForTheirLeader",
    "RecordsNotBeforeTheirEpochStart", "BlankReplicasFetchNormally")
"""The epoch pool's facts about reconciliation that make the kip-320 pool inductive
(specs/08-symbolic.md#the-kip-320-gap): only a live leader has a latest cache entry without records;
a live leader is never sent a request making it a follower; a follower does not reconcile or fetch
before its new leader has taken the epoch; no record sits before its epoch's start in any cache; a
replica blanked by a crash is not reconciling. Each is checked on the reachable states
(tests/invariants/test_symbolic_induction.py)."""


def check_preserved(cfg: Any, prop: str, kinds: tuple[str, ...] | None = None,
                    assume: tuple[str, ...] = HIGH_WATERMARK_STRENGTHENING, generation_name: str | None = None,
                    timeout: float | None = 60.0, queue: int | None = None) -> list[Obligation]:
    """Is ``prop`` preserved by each action kind in ``kinds`` (all if None), from every state within
    the bounds that satisfies ``assume`` and every safety property? One obligation per kind."""
    enc = Encoding(cfg, generation_name, queue, split_broker_change=True)
    preds: dict[str, Pred] = {n: f for n, f in candidates_for(enc)}
    s = enc.fresh("pre")
    base = [bounds(enc, s)] + [preds[n](enc, s) for n in assume] + list(enc.properties(s).values())
    out: list[Obligation] = []
    by_kind: dict[str, list[Instance]] = {}
    for inst in enc.instances(s):
        if kinds is None or inst.kind in kinds:
            by_kind.setdefault(inst.kind, []).append(inst)
    scope = f"states within the bounds satisfying every safety property and {len(assume)} strengthening invariants"
    for kind, insts in by_kind.items():
        t0 = time.perf_counter()
        verdict, cti = Verdict.PROVED, None
        for inst in insts:
            q = _Query(timeout, [*base, inst.guard, z3.Not(inst.effect.overflow)])
            post = prop_term(enc, inst.effect, prop, preds)
            r, m = q.check([z3.Not(post)])
            if r == z3.sat:
                cti = counterexample_to_induction(enc, s, inst, m)
                verdict = Verdict.REFUTED
                break
            if r != z3.unsat:
                verdict = Verdict.UNKNOWN
        ob = InductionObligation("inductive", f"{prop} preserved by {kind}", enc.rule.name, verdict,
                                 time.perf_counter() - t0, scope)
        if cti is not None:
            ob.lines, ob.counterexample, ob.cti = cti.lines, cti.to_json(), cti
        out.append(ob)
    return out


def prop_term(enc: Encoding, s: SymState, name: str, preds: dict[str, Pred] | None = None) -> z3.BoolRef:
    if name in ALWAYS:
        return enc.properties(s)[name]
    return (preds or dict(candidates_for(enc)))[name](enc, s)
