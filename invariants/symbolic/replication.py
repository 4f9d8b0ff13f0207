"""The replication protocol as a symbolic transition system (specs/08-symbolic.md#replication).

:class:`Encoding` transcribes, step for step, what ``model/broker.py``, ``model/controller.py`` (broker
change, elections, taking replicas offline) and ``model/actions.py`` do in a configuration without
reassignment, topic creation or deletion (preferred elections, controlled shutdown and controller
failover are :mod:`.operations`, hooked in through ``self.ops``): produce, fetch (one step, answering the
leader's HW from before the fetch), HW advance and acknowledgement, ISR shrink and expansion by
conditional writes, controller requests in per-broker FIFO queues (LeaderAndIsr, StopReplica,
UpdateMetadata), the controller's broker-change handling with the OfflinePartition selector,
becoming leader or follower, HW checkpoints, crashes (whole or lossy), restarts (noticed or not).
Every action of the explicit model in such a configuration is an :class:`~.instance.Instance` here,
with the same name and arguments, so that a bounded model checking trace is replayed by the model
itself (:func:`~.bmc.bmc` checks each one that way) and its length is comparable with the explicit
checker's.

The follower truncation rule is a plug-in (:class:`~.instance.TruncationRule`, looked up in
:data:`~.generations.GENERATIONS`, one per generation of specs/protocol.toml, chosen and deciding by
the generation's traits): the seeds' high-watermark rule (truncate to the HW on a leader change),
and the leader-epoch generations kip-101, kip-279, kip-320 (the leader-epoch cache,
OffsetsForLeaderEpoch as the model's two actions, KIP-320's fencing; ``epochs.py``). The plug-ins see the encoding as an
:class:`~.instance.Encoder`, which :class:`Encoding` implements.

Bounds: the shape is concrete (brokers, assignment); logs hold at most ``max_records`` records (a
proved invariant: a record keeps its offset in every copy), request queues at most ``queue``
requests, leader-epoch caches ``max_records + 1`` entries (a step that would need more sets
``overflow``: BMC reports it, induction excludes it). Epochs, versions and budgets are 8-bit numbers
kept below NUM_MAX (an increment that would pass it sets ``overflow`` too).
"""
from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import z3

from isrcheck.model.actions import Action
from isrcheck.model.config import Config
from isrcheck.model.kafka import initial_state
from isrcheck.model.protocol import Protocol
from isrcheck.model.state import State

from .admin import admin_unsupported
from .generations import GENERATIONS, generation
from .instance import Instance, TruncationRule, Unsupported
from .logic import number
from .operations import Operations, needs_operations
from .reassignment import universe
from .types import (
    NUM_MAX,
    REQ_LAI,
    REQ_NONE,
    REQ_STOP,
    REQ_UM,
    as_bool,
    conj,
    disj,
    first_of,
    fresh_name,
    imin,
    ite,
    num,
    numval,
    SymInbox,
    SymLog,
    SymReplica,
    SymRequest,
    SymState,
    uncovered_budget,
)

B = z3.BoolVal
I = numval  # noqa: E741


DEFAULT_QUEUE = 3
"""Request-queue capacity per broker; the explicit checker's models never queue more than 3
requests, and a step that would need more is reported (``overflow``), never silently cut."""


# ============================================================================ small helpers
def count_true(bs: Sequence[z3.BoolRef]) -> z3.ArithRef:
    return z3.Sum([z3.If(b, I(1), I(0)) for b in bs]) if bs else I(0)


# ============================================================================ the encoding
class Encoding:
    """The replication encoding of one configuration (an :class:`~.instance.Encoder`).

    It consults two plug-ins, as the model consults its ``Protocol``: ``rule``, the generation's
    :class:`~.instance.TruncationRule` (from :data:`~.generations.GENERATIONS`), and ``ops``, the
    controller operations (:class:`~.operations.Operations`, None when the configuration has none),
    which are handed this encoding and call back only through :class:`~.instance.Encoder`."""

    def __init__(self, cfg: Config, generation_name: str | None = None, queue: int | None = None,
                 split_broker_change: bool = False, epoch_slots: int | None = None,
                 rule: TruncationRule | None = None) -> None:
        if generation_name is not None and generation_name != cfg.generation:
            cfg = dataclasses.replace(cfg, generation=generation(generation_name).generation)
        # ``rule``: a replacement TruncationRule for the generation's (a documented mutation, mutations.py)
        self.rule = generation(cfg.generation) if rule is None else rule
        reason = unsupported_reason(cfg)
        if reason:
            raise Unsupported(reason)
        self.cfg = cfg
        self.N = cfg.brokers
        self.P = cfg.partitions
        self.AR = tuple(cfg.replicas_of(p) for p in range(cfg.partitions))
        # every broker that can ever be assigned each partition: the per-replica entries range over
        # it (the initial AR unless reassignments add brokers, reassignment.universe)
        self.U = tuple(universe(cfg, p) for p in range(cfg.partitions))
        self.K = cfg.max_records
        # two controllers' requests interleave (an UpdateMetadata of one epoch is not absorbed by a
        # request of the other): the failover models queue one request more; the deletion models two
        # more (topic deletion: StopReplica, ISR removal and a deleting StopReplica per replica;
        # under kip-320 the ISR removals go to every remaining replica: five; the reassignment models
        # queue up to five too)
        # what the manifest's models reach: deletions and reassignments queue StopReplicas too, two
        # controllers interleave, and a lossy crash under the leader-epoch generations (ISR removals
        # told to every remaining replica) queues 4 (lossy-divergence-kip-*)
        # queue 7 and 8 (deposed-controller-*: both controllers send the same reassignment's requests)
        # a reassignment restarted by a broker's start-up (04, broker start-up step 4) sends its
        # LeaderAndIsr requests again: reassignments with crashes queue up to 6
        self.Q = queue if queue is not None else DEFAULT_QUEUE + (
            5 if cfg.operations.reassignments and cfg.faults.controller_failovers
            else 3 if cfg.operations.reassignments and (cfg.faults.crashes or cfg.faults.lossy_crashes)
            else 2 if cfg.operations.topic_deletions or cfg.operations.reassignments
            else 1 if cfg.faults.controller_failovers
            else 1 if cfg.faults.lossy_crashes and cfg.generation.traits.leader_epochs else 0)
        self.periodic = cfg.hw_checkpoint == "periodic"
        self.E = self.rule.initial_slots(cfg) if epoch_slots is None else epoch_slots  # epoch-cache entries
        self.protocol = Protocol(cfg)
        self.init_state = initial_state(self.protocol)
        # administrative operations and controller failover (operations.py), when the configuration has them
        self.ops: Operations | None = Operations(self) if needs_operations(cfg) else None
        # induction splits ProcessBrokerChange by which assigned brokers came or left (smaller
        # queries); bounded model checking keeps one symbolic case (fewer choices per step)
        self.split_broker_change = split_broker_change

    # ------------------------------------------------------------------ states
    def fresh(self, prefix: str) -> SymState:
        s = SymState.fresh(self.N, self.U, self.K, self.Q, prefix, epoch_slots=self.E)
        if self.ops is not None:
            s.ops = self.ops.fresh(prefix)
        return s

    def brokers(self) -> range:
        return range(1, self.N + 1)

    def init_pin(self, s: SymState) -> z3.BoolRef:
        return s.pin(self.init_state)

    # ------------------------------------------------------------------ logs
    def trunc(self, lg: SymLog, n: z3.ArithRef) -> SymLog:
        """``log[:n]``."""
        L = imin(n, lg.length)
        return SymLog(L, tuple(z3.If(L > i, lg.ids[i], 0) for i in range(self.K)),
                      tuple(z3.If(L > i, lg.epochs[i], 0) for i in range(self.K)))

    def log_ite(self, c: z3.BoolRef, a: SymLog, b: SymLog) -> SymLog:
        return SymLog(ite(c, a.length, b.length), tuple(ite(c, x, y) for x, y in zip(a.ids, b.ids)),
                      tuple(ite(c, x, y) for x, y in zip(a.epochs, b.epochs)))

    def rec_eq(self, a: SymLog, b: SymLog, i: int) -> z3.BoolRef:
        return z3.And(a.ids[i] == b.ids[i], a.epochs[i] == b.epochs[i])

    def prefix_eq(self, a: SymLog, b: SymLog, n: z3.ArithRef) -> z3.BoolRef:
        """``a[:n] == b[:n]`` (Python slices: a shorter log gives a shorter slice)."""
        na, nb = imin(n, a.length), imin(n, b.length)
        return z3.And(na == nb, *[z3.Implies(na > i, self.rec_eq(a, b, i)) for i in range(self.K)])

    def holds_id(self, lg: SymLog, j: int) -> z3.BoolRef:
        return z3.Or([z3.And(lg.length > i, lg.ids[i] == j) for i in range(self.K)]) if self.K else B(False)

    def follower_replica(self, log: SymLog, hw: z3.ArithRef, ckpt: z3.ArithRef, leader: z3.ArithRef,
                         epoch: z3.ArithRef) -> SymReplica:
        """A follower's replica; its leader-only parts are filled by :meth:`_fill_follower`."""
        return SymReplica(log, hw, ckpt, leader, epoch, {}, I(0), {}, {})

    def _fill_follower(self, r: SymReplica, ar: tuple[int, ...]) -> SymReplica:
        r.isr = {m: B(False) for m in ar}
        r.remote_leo = {m: I(0) for m in ar}
        r.pending = {j: B(False) for j in range(1, self.K + 1)}
        return r

    # ------------------------------------------------------------------ ghost and HW
    def expose(self, t: SymState, p: int, log: SymLog, hw: z3.ArithRef, cond: z3.BoolRef = B(True)) -> None:
        """World.expose: extend the longest exposed prefix if ``log[:hw]`` is longer and agrees."""
        g = t.ghost[p]
        e = g.exposed
        vis = imin(hw, log.length)
        agree = z3.And(*[z3.Implies(e.length > i, self.rec_eq(log, e, i)) for i in range(self.K)])
        c = z3.And(cond, vis > e.length, agree)
        g.exposed = SymLog(ite(c, vis, e.length),
                           tuple(ite(c, z3.If(vis > i, log.ids[i], 0), e.ids[i]) for i in range(self.K)),
                           tuple(ite(c, z3.If(vis > i, log.epochs[i], 0), e.epochs[i]) for i in range(self.K)))

    def advance_hw(self, t: SymState, b: int, p: int, cond: z3.BoolRef = B(True)) -> None:
        """broker.advance_hw for leader ``b`` (its replica in ``t``), when ``cond``."""
        r = t.replicas[p][b]
        new_hw: z3.ArithRef = r.log.length
        for m in self.U[p]:
            if m != b:
                new_hw = z3.If(z3.And(r.isr[m], r.remote_leo[m] < new_hw), r.remote_leo[m], new_hw)
        c = z3.And(cond, new_hw > r.hw)
        acks = (B(True) if self.cfg.acks == "1"
                else count_true(list(r.isr.values())) >= self.cfg.min_insync_replicas)
        g = t.ghost[p]
        for j in range(1, self.K + 1):
            committed = z3.And(r.pending[j], z3.Or([z3.And(new_hw > i, r.log.length > i, r.log.ids[i] == j)
                                                    for i in range(self.K)]))
            g.acked[j] = ite(z3.And(c, acks, committed), B(True), g.acked[j])
            r.pending[j] = ite(z3.And(c, committed), B(False), r.pending[j])
        r.hw = ite(c, new_hw, r.hw)
        self.expose(t, p, r.log, new_hw, c)

    # ------------------------------------------------------------------ requests
    def send(self, t: SymState, b: int, kind: int, p: int = 0, cond: z3.BoolRef = B(True),
             delete: bool = False) -> None:
        """World.send to broker ``b`` (a LeaderAndIsr carries partition ``p``'s znode as it is now;
        ``delete``: a StopReplica that deletes, reassignment step 9)."""
        q = t.inbox[b]
        c = conj(cond, t.alive[b])
        if c is False:
            return
        if kind == REQ_UM:  # not queued behind a request of the same controller epoch
            c = conj(c, self.ops.um_not_queued(t, b) if self.ops is not None else q.length == 0)
        if kind == REQ_LAI:
            z = t.zk[p]
            req = SymRequest(I(kind), I(p), z.leader, {m: z.isr.get(m, B(False)) for m in self.brokers()},
                             z.leader_epoch, z.version)
        else:
            req = SymRequest(I(kind), I(p if kind == REQ_STOP else 0), I(0), {m: B(False) for m in self.brokers()},
                             I(0), I(0))
        slots = []
        for i, s in enumerate(q.slots):
            w = conj(c, q.length == i)
            slots.append(SymRequest(ite(w, req.kind, s.kind), ite(w, req.partition, s.partition),
                                    ite(w, req.leader, s.leader), {m: ite(w, req.isr[m], s.isr[m]) for m in s.isr},
                                    ite(w, req.leader_epoch, s.leader_epoch), ite(w, req.zk_version, s.zk_version)))
        t.overflow = z3.Or(t.overflow, conj(c, q.length >= self.Q))
        t.inbox[b] = SymInbox(ite(c, q.length + 1, q.length), tuple(slots))
        if self.ops is not None:
            self.ops.sent(t, b, c, q.length, kind, p, delete)

    def pop(self, t: SymState, b: int, k: int) -> SymRequest:
        """Remove the request at position ``k`` of ``b``'s queue; return it."""
        q = t.inbox[b]
        req = q.slots[k]
        if self.ops is not None and self.ops.reassign is not None:
            req = dataclasses.replace(req, replicas=t.ops.reassign.req_list[b][k])
        empty = SymRequest(I(REQ_NONE), I(0), I(0), {m: B(False) for m in self.brokers()}, I(0), I(0))
        slots = list(q.slots[:k]) + list(q.slots[k + 1:]) + [empty]
        t.inbox[b] = SymInbox(q.length - 1, tuple(slots))
        if self.ops is not None:
            self.ops.popped(t, b, k)
        return req

    # ------------------------------------------------------------------ controller
    def write_leader_isr(self, t: SymState, p: int, leader: z3.ArithRef, isr: dict[int, z3.BoolRef],
                         cond: z3.BoolRef) -> None:
        if cond is False:
            return
        z = t.zk[p]
        t.overflow = z3.Or(t.overflow, conj(cond, z3.Or(z.leader_epoch >= NUM_MAX, z.version >= NUM_MAX)))
        z.leader = ite(cond, leader, z.leader)
        z.isr = {b: ite(cond, isr[b], z.isr[b]) for b in z.isr}
        z.leader_epoch = ite(cond, z.leader_epoch + 1, z.leader_epoch)
        z.version = ite(cond, z.version + 1, z.version)
        if self.ops is not None:
            self.ops.wrote(t, p, cond)

    def unfenced(self, t: SymState, p: int) -> z3.BoolRef | bool:
        """Whether the acting controller's write of ``p``'s leader/ISR znode is accepted (always, with
        one controller)."""
        return z3.Not(self.ops.fenced(t, p)) if self.ops is not None else True

    def broadcast_metadata(self, t: SymState, cond: z3.BoolRef | bool) -> None:
        if cond is False:
            return
        for b in self.brokers():
            self.send(t, b, REQ_UM, cond=conj(cond, t.c_live[b]))

    # ------------------------------------------------------------------ the controller's view of AR
    def in_assignment(self, t: SymState, p: int, b: int) -> z3.BoolRef | bool:
        """controller.assignment(p) holds ``b``: constant without reassignments (the universe is AR),
        else a lookup in reassignment.py's list table (RAR from step 7 on)."""
        if self.ops is None or self.ops.reassign is None:
            return b in self.AR[p]
        R = self.ops.reassign
        return R.member(p, R.assignment(t.ops.reassign, p), b)

    def first_assigned(self, t: SymState, p: int, cond: dict[int, Any]) -> z3.ArithRef:
        """The first broker of the controller's AR, in AR order, for which ``cond`` holds (0 if none)."""
        if self.ops is None or self.ops.reassign is None:
            return first_of([(cond[b], b) for b in self.AR[p]])
        R = self.ops.reassign
        return R.first_of(p, R.assignment(t.ops.reassign, p), cond)

    def elect_offline(self, t: SymState, p: int, cond: z3.BoolRef) -> None:
        """partition_to(ONLINE) from Offline with the OfflinePartition selector."""
        if cond is False:
            return
        ar = self.U[p]
        z = t.zk[p]
        live = {b: as_bool(conj(self.in_assignment(t, p, b), t.c_live[b])) for b in ar}
        cand = {b: z3.And(live[b], z.isr[b]) for b in ar}
        has_clean = z3.Or(list(cand.values()))
        any_live = z3.Or(list(live.values()))
        ok = z3.Or(has_clean, z3.And(any_live, B(self.cfg.unclean_leader_election)))
        leader = z3.If(has_clean, self.first_assigned(t, p, cand), self.first_assigned(t, p, live))
        isr = {b: z3.If(has_clean, cand[b], leader == b) for b in ar}
        do = conj(cond, ok, self.unfenced(t, p))
        self.write_leader_isr(t, p, leader, isr, do)
        t.partition_online = tuple(ite(do, B(True), o) if q == p else o for q, o in enumerate(t.partition_online))
        for b in ar:  # LeaderAndIsr to the live assigned replicas, in AR order
            self.send(t, b, REQ_LAI, p, conj(do, live[b], t.c_live[b]))
        self.broadcast_metadata(t, do)

    def elect_offline_and_new(self, t: SymState, cond: z3.BoolRef | bool) -> None:
        admin = self.ops.admin if self.ops is not None else None
        for p in range(self.P):
            if admin is not None:  # topic creation: a New partition is initialised, not elected
                admin.elect_offline_or_new(t, p, cond)
                continue
            self.elect_offline(t, p, conj(cond, z3.Not(t.partition_online[p])))

    def remove_from_isr(self, t: SymState, p: int, b: int, cond: z3.BoolRef | bool) -> None:
        if cond is False:
            return
        z = t.zk[p]
        c = conj(cond, z.isr[b], self.unfenced(t, p))
        new_leader = z3.If(z.leader == b, 0, z.leader)
        minus = {m: (B(False) if m == b else z.isr[m]) for m in z.isr}
        if not self.cfg.unclean_leader_election:
            empty = z3.Not(z3.Or(list(minus.values())))
            minus = {m: z3.If(empty, z.isr[m], minus[m]) for m in z.isr}
        self.write_leader_isr(t, p, new_leader, minus, c)
        for m in self.U[p]:
            told = self.rule.isr_removal_receiver(m, b, new_leader)
            if self.rule.traits.isr_removal_tells_replicas:  # every remaining replica of the controller's AR
                told = conj(self.in_assignment(t, p, m), told)
            self.send(t, m, REQ_LAI, p, conj(c, told, t.c_live[m]))
        self.broadcast_metadata(t, c)

    def process_broker_change(self, s: SymState, case: dict[int, str] | None = None) -> tuple[z3.BoolRef, SymState]:
        """process_broker_change of the active controller, without bounce detection.

        ``case`` fixes, for some brokers, whether the controller sees them come ("came"), leave
        ("left") or neither ("same"); the others are symbolic. Returns (the case's condition, the
        state after)."""
        case = case or {}
        t = s.clone()
        came: dict[int, Any] = {}
        left: dict[int, Any] = {}
        guard = []
        for b in self.brokers():
            c_sym = z3.And(s.alive[b], z3.Not(s.c_live[b]))
            l_sym = z3.And(s.c_live[b], z3.Not(s.alive[b]))
            k = case.get(b)
            if k is None:
                came[b], left[b] = c_sym, l_sym
            else:
                came[b], left[b] = k == "came", k == "left"
                guard.append(c_sym if k == "came" else l_sym if k == "left" else s.alive[b] == s.c_live[b])
        guard.append(z3.Or([s.c_live[b] != s.alive[b] for b in self.brokers()]))
        any_came = disj(list(came.values()))
        any_left = disj(list(left.values()))
        admin = self.ops.admin if self.ops is not None else None  # topic creation (admin.py)
        t.c_live = dict(s.alive)
        # on_broker_startup(new)
        for b in self.brokers():
            self.send(t, b, REQ_UM, cond=came[b])
        for p in range(self.P):
            for b in self.U[p]:
                lai = conj(came[b], self.in_assignment(t, p, b))
                lai = lai if admin is None else admin.startup_replica(t, p, b, lai)
                if self.ops is not None and self.ops.reassign is not None:  # the replica states
                    lai = self.ops.reassign.startup_replica(t, p, b, lai)
                self.send(t, b, REQ_LAI, p, conj(lai, t.c_live[b]))
        self.elect_offline_and_new(t, any_came)
        if self.ops is not None and self.ops.reassign is not None:  # resume a reassignment waiting on them
            self.ops.reassign.resume_on_startup(t, came)
        # on_broker_failure(dead)
        if self.ops is not None:
            self.ops.forget_shutting_down(t, left)
        for p in range(self.P):
            z = t.zk[p]
            leader_left = disj([conj(left[b], z.leader == b) for b in self.brokers()])
            c = conj(any_left, leader_left)
            if admin is not None:
                admin.leader_left(t, p, c)
                continue
            t.partition_online = tuple(ite(c, B(False), o) if q == p else o for q, o in enumerate(t.partition_online))
        self.elect_offline_and_new(t, any_left)
        for p in range(self.P):
            for b in self.U[p]:
                gone = conj(left[b], self.in_assignment(t, p, b))
                gone = gone if admin is None else admin.failed_replica(t, p, b, gone)
                if self.ops is not None and self.ops.reassign is not None:
                    gone = self.ops.reassign.failed_replica(t, p, b, gone)
                self.send(t, b, REQ_STOP, p, gone)  # to a dead broker: dropped
                self.remove_from_isr(t, p, b, gone)
        return z3.And(guard), t

    def broker_change_cases(self) -> list[dict[int, str]]:
        """Which brokers' changes are fixed per case: every assigned broker's (3^n - 1 cases when
        there are at most 3 of them), others symbolic; one symbolic case otherwise."""
        split = sorted({b for ar in self.AR for b in ar})
        if len(split) > 3 or not self.split_broker_change:
            return [{}]
        cases = []
        for combo in itertools.product(("same", "came", "left"), repeat=len(split)):
            cases.append(dict(zip(split, combo)))
        if len(split) == self.N:
            cases = [c for c in cases if any(v != "same" for v in c.values())]
        return cases

    # ------------------------------------------------------------------ broker requests
    def become_leader(self, t: SymState, b: int, p: int, req: SymRequest) -> None:
        r = t.replicas[p][b]
        was = r.leader == b
        self.rule.on_become_leader(self, t, r, r, req, was)  # the epoch cache, before the fields change
        r.remote_leo = {m: ite(was, v, I(0)) for m, v in r.remote_leo.items()}
        r.pending = {j: ite(was, v, B(False)) for j, v in r.pending.items()}
        r.leader = I(b)
        r.leader_epoch = req.leader_epoch
        r.isr = {m: req.isr[m] for m in self.U[p]}
        r.zk_version = req.zk_version
        if self.ops is not None and self.ops.reassign is not None:  # the AR it carries gates Fetch
            self.ops.reassign.became_leader(t.ops.reassign, p, b, req.replicas)
        self.advance_hw(t, b, p)
        self.expose(t, p, r.log, r.hw)

    def become_follower(self, t: SymState, b: int, p: int, req: SymRequest) -> None:
        r = self.rule.become_follower(self, t.replicas[p][b], req)
        t.replicas[p][b] = self._fill_follower(r, self.U[p])
        if self.ops is not None and self.ops.reassign is not None:
            self.ops.reassign.became_follower(t.ops.reassign, p, b)

    def delivery_slots(self, s: SymState, b: int) -> Iterator[tuple[int, str, tuple, z3.BoolRef, str | None]]:
        """(slot, action name, arguments, extra guard, budget spent) of each delivery from ``b``'s queue:
        its head (DeliverRequest) and, with delayed requests, every later slot (DeliverDelayedRequest).
        Lazily: each guard is built when the delivery before it has been."""
        yield 0, "DeliverRequest", (b,), B(True), None
        if self.cfg.faults.delayed_requests:
            for k in range(1, self.Q):
                yield k, "DeliverDelayedRequest", (b, k), s.budget["delayed_requests"] > 0, "delayed_requests"

    def deliveries(self, s: SymState, b: int, k: int, name: str, args: tuple, extra_guard: z3.BoolRef,
                   budget: str | None) -> list[Instance]:
        out = []
        q = s.inbox[b].slots[k]
        base = z3.And(s.alive[b], s.inbox[b].length > k, extra_guard)
        if self.ops is not None:  # a request from a deposed controller is rejected
            out.append(self.ops.rejected_delivery(s, b, k, name, args, base, budget))
            base = z3.And(base, self.ops.accepts(s, b, k))

        reassign = self.ops.reassign if self.ops is not None else None

        def make(kind: str, guard: z3.BoolRef, act: Callable[[SymState, SymRequest], None], lai: int = -1) -> None:
            t = s.spend(budget)
            if self.ops is not None:
                self.ops.accepted(s, t, b, k)
            req = self.pop(t, b, k)
            act(t, req)
            if reassign is not None and lai >= 0:  # any LeaderAndIsr creates the replica it names
                reassign.hosts(t, lai, b, B(True))
            out.append(Instance(name, args, f"{name}: {kind}", z3.And(base, guard), t))

        make("UpdateMetadata", q.kind == REQ_UM, lambda t, req: None)
        for p in range(self.P):
            if b not in self.U[p]:
                make("StopReplica or LeaderAndIsr for a partition it does not host",
                     z3.And(q.partition == p, z3.Or(q.kind == REQ_STOP, q.kind == REQ_LAI)), lambda t, req: None)
                continue
            r = s.replicas[p][b]

            def stop(t: SymState, req: SymRequest, p: int = p) -> None:
                rr = t.replicas[p][b]
                rr.leader = ite(rr.leader != b, I(0), rr.leader)

            stop_guard = z3.And(q.kind == REQ_STOP, q.partition == p)
            if self.ops is not None and self.ops.admin is not None:  # a deleting one: admin.py
                stop_guard = z3.And(stop_guard, z3.Not(self.ops.admin.is_delete(s, b, k)))
            if reassign is not None:  # a deleting one (step 9): reassignment.py
                stop_guard = z3.And(stop_guard, z3.Not(s.ops.reassign.req_del[b][k]))
            make("StopReplica", stop_guard, stop)
            lai = z3.And(q.kind == REQ_LAI, q.partition == p)
            if reassign is not None and s.ops.reassign.req_list is not None:
                # a LeaderAndIsr whose AR leaves the receiver out is ignored (broker._leader_and_isr):
                # a replica of OAR only, started again after step ar-in-memory, is sent RAR
                named = reassign.member(p, s.ops.reassign.req_list[b][k], b)
                make("LeaderAndIsr not naming it", z3.And(lai, z3.Not(named)), lambda t, req: None)
                lai = z3.And(lai, named)
            make("LeaderAndIsr, stale epoch", z3.And(lai, q.leader_epoch <= r.leader_epoch), lambda t, req: None, p)
            make("LeaderAndIsr, becomes leader", z3.And(lai, q.leader_epoch > r.leader_epoch, q.leader == b),
                 lambda t, req, p=p: self.become_leader(t, b, p, req), p)
            make("LeaderAndIsr, becomes follower", z3.And(lai, q.leader_epoch > r.leader_epoch, q.leader != b),
                 lambda t, req, p=p: self.become_follower(t, b, p, req), p)
        return out

    # ------------------------------------------------------------------ replication
    def produce(self, s: SymState, b: int, p: int) -> Instance:
        r = s.replicas[p][b]
        g = s.ghost[p]
        enough = (B(True) if self.cfg.acks == "1"
                  else count_true(list(r.isr.values())) >= self.cfg.min_insync_replicas)
        guard = z3.And(s.alive[b], r.leader == b, g.produced < self.K, enough)
        if self.ops is not None and self.ops.admin is not None:  # the partition must exist (topic deletion)
            guard = z3.And(guard, s.ops.admin.exists[p])
        t = s.clone()
        rt, gt = t.replicas[p][b], t.ghost[p]
        rid = g.produced + 1
        gt.produced = rid
        n = r.log.length
        rt.log = SymLog(n + 1, tuple(z3.If(n == i, rid, r.log.ids[i]) for i in range(self.K)),
                        tuple(z3.If(n == i, r.leader_epoch, r.log.epochs[i]) for i in range(self.K)))
        t.overflow = z3.Or(t.overflow, n >= self.K)
        self.rule.on_produce(self, t, r, rt)
        for j in range(1, self.K + 1):
            rt.pending[j] = z3.Or(r.pending[j], rid == j)
            gt.position[j] = z3.If(rid == j, n, g.position[j])
            gt.epoch[j] = z3.If(rid == j, r.leader_epoch, g.epoch[j])
        self.advance_hw(t, b, p)
        return Instance("Produce", (b, p), "Produce", guard, t)

    def fetch(self, s: SymState, f: int, p: int, L: int) -> Instance:
        rf, rl = s.replicas[p][f], s.replicas[p][L]
        guard = z3.And(s.alive[f], rf.leader == L, s.alive[L], rl.leader == L, self.rule.fetch_allowed(self, rf, rl))
        if self.ops is not None and self.ops.reassign is not None:  # the leader's AR must name the follower
            guard = z3.And(guard, s.ops.reassign.assigned[p][L][f])
        offset = rf.log.length
        out_of_range = offset > rl.log.length
        # OffsetOutOfRange: the follower truncates to the leader's LEO
        a = s.clone()
        ra = a.replicas[p][f]
        ra.log = self.trunc(rf.log, rl.log.length)
        ra.hw = imin(rf.hw, ra.log.length)
        self.rule.on_cut(self, rf, ra, crashed=False)
        # the normal fetch
        t = s.clone()
        answered_hw = rl.hw
        z = s.zk[p]
        join = z3.And(z3.Not(rl.isr[f]), self.rule.may_join_isr(self, rl, offset))
        write = z3.And(join, z.version == rl.zk_version)
        t.overflow = z3.Or(t.overflow, z3.And(write, z.version >= NUM_MAX))
        zt = t.zk[p]
        zt.isr = {m: (z3.Or(z.isr[m], write) if m == f else z.isr[m]) for m in z.isr}
        zt.version = ite(write, z.version + 1, z.version)
        rlt = t.replicas[p][L]
        rlt.isr = {m: (z3.Or(rl.isr[m], write) if m == f else rl.isr[m]) for m in rl.isr}
        rlt.zk_version = ite(write, z.version + 1, rl.zk_version)
        rlt.remote_leo = {m: (offset if m == f else v) for m, v in rl.remote_leo.items()}
        self.advance_hw(t, L, p)
        rft = t.replicas[p][f]
        log = SymLog(rl.log.length, tuple(z3.If(offset > i, rf.log.ids[i], rl.log.ids[i]) for i in range(self.K)),
                     tuple(z3.If(offset > i, rf.log.epochs[i], rl.log.epochs[i]) for i in range(self.K)))
        rft.log = log
        rft.hw = imin(answered_hw, log.length)
        self.rule.on_fetch(self, t, rf, rft, offset)
        return Instance("Fetch", (f, p), "Fetch", guard, self.state_ite(out_of_range, a, t))

    def state_ite(self, c: z3.BoolRef, a: SymState, b: SymState) -> SymState:
        return a.rebuild([ite(c, x, y) for x, y in zip(a.leaves(), b.leaves())])

    def shrink(self, s: SymState, b: int, p: int, f: int) -> Instance:
        r = s.replicas[p][b]
        z = s.zk[p]
        guard = z3.And(s.alive[b], r.leader == b, s.budget["isr_shrinks"] > 0, z.version == r.zk_version, r.isr[f])
        t = s.clone()
        t.budget["isr_shrinks"] = s.budget["isr_shrinks"] - 1
        t.overflow = z3.Or(t.overflow, z.version >= NUM_MAX)
        zt = t.zk[p]
        zt.isr = {m: (B(False) if m == f else v) for m, v in z.isr.items()}
        zt.version = z.version + 1
        rt = t.replicas[p][b]
        rt.isr = {m: (B(False) if m == f else v) for m, v in r.isr.items()}
        rt.zk_version = z.version + 1
        self.advance_hw(t, b, p)
        return Instance("ShrinkIsr", (b, p, f), "ShrinkIsr", guard, t)

    def checkpoint(self, s: SymState, b: int, p: int) -> Instance:
        r = s.replicas[p][b]
        t = s.clone()
        t.replicas[p][b].checkpoint = r.hw
        return Instance("CheckpointHighWatermark", (b, p), "CheckpointHighWatermark",
                        z3.And(s.alive[b], r.checkpoint != r.hw), t)

    def crash(self, s: SymState, b: int, lossy: bool) -> Instance:
        field_ = "lossy_crashes" if lossy else "crashes"
        t = s.clone()
        t.budget[field_] = s.budget[field_] - 1
        guard = z3.And(s.alive[b], s.budget[field_] > 0)
        kept: dict[int, z3.ArithRef] = {}
        shorter = []
        for p in range(self.P):
            if b not in self.U[p]:
                continue
            r = s.replicas[p][b]
            log = r.log
            if lossy:
                k = num(fresh_name(f"kept{b}.{p}"))
                kept[p] = k
                guard = z3.And(guard, k >= 0, k <= r.log.length)
                shorter.append(k < r.log.length)
                log = self.trunc(r.log, k)
            on_disk = r.checkpoint if self.periodic else r.hw
            hw = imin(on_disk, log.length)
            nr = SymReplica(log, hw, hw if self.periodic else I(0), I(0), I(-1), {}, I(0), {}, {})
            self.rule.on_cut(self, r, nr, crashed=True)
            t.replicas[p][b] = self._fill_follower(nr, self.U[p])
        if lossy:
            guard = z3.And(guard, z3.Or(shorter) if shorter else B(False))
        t.alive[b] = B(False)
        empty = SymRequest(I(REQ_NONE), I(0), I(0), {m: B(False) for m in self.brokers()}, I(0), I(0))
        t.inbox[b] = SymInbox(I(0), tuple(empty for _ in range(self.Q)))
        if self.ops is not None:
            self.ops.crashed(t, b)
        name = "LossyCrash" if lossy else "Crash"
        return Instance(name, (b,), name, guard, t, {"kept": kept})

    def restart(self, s: SymState, b: int, quick: bool) -> Instance:
        t = s.clone()
        t.alive[b] = B(True)
        if quick:
            t.budget["undetected_restarts"] = s.budget["undetected_restarts"] - 1
            guard = z3.And(z3.Not(s.alive[b]), s.c_live[b], s.budget["undetected_restarts"] > 0)
            return Instance("QuickRestart", (b,), "QuickRestart", guard, t)
        return Instance("Restart", (b,), "Restart", z3.And(z3.Not(s.alive[b]), z3.Not(s.c_live[b])), t)

    # ------------------------------------------------------------------ every action
    def actions(self, s: SymState) -> list[Instance]:
        """One Instance per model action (name and arguments): the cases of an action (which
        request is delivered, which leader is fetched from) are merged, their guards being
        exclusive. Bounded model checking chooses among these."""
        groups: dict[tuple, list[Instance]] = {}
        for inst in self.instances(s):
            groups.setdefault((inst.name, inst.args), []).append(inst)
        out = []
        for (name, args), insts in groups.items():
            if len(insts) == 1:
                out.append(insts[0])
                continue
            effect = insts[-1].effect
            for inst in reversed(insts[:-1]):
                effect = self.state_ite(inst.guard, inst.effect, effect)
            extra: dict[str, Any] = {}
            for inst in insts:
                extra.update(inst.extra)
            effect.illegal = disj([conj(i.guard, i.effect.illegal) for i in insts])
            out.append(Instance(name, args, name, z3.Or([i.guard for i in insts]), effect, extra))
        return out

    def instances(self, s: SymState) -> list[Instance]:
        f = self.cfg.faults
        out: list[Instance] = []
        for b in self.brokers():
            for k, name, args, extra, budget in self.delivery_slots(s, b):
                out += self.deliveries(s, b, k, name, args, extra, budget)
            for p in range(self.P):
                if b not in self.U[p]:
                    continue
                out.append(self.produce(s, b, p))
                if f.isr_shrinks:
                    for m in self.U[p]:
                        if m != b:
                            out.append(self.shrink(s, b, p, m))
                for L in self.U[p]:
                    if L != b:
                        out.append(self.fetch(s, b, p, L))
                out += self.rule.extra_instances(self, s, b, p)
                if self.periodic:
                    out.append(self.checkpoint(s, b, p))
        for case in self.broker_change_cases():
            guard, pbc = self.process_broker_change(s, case)
            what = ", ".join(f"{b} {v}" for b, v in case.items() if v != "same") or "other brokers"
            if self.ops is None:
                out.append(Instance("ProcessBrokerChange", (1,), f"ProcessBrokerChange ({what})", guard, pbc))
            else:  # the active controller, named by its epoch
                for e in self.ops.active_epochs():
                    out.append(Instance("ProcessBrokerChange", (e,), f"ProcessBrokerChange ({what})",
                                        z3.And(guard, s.ops.zk_epoch == e), pbc))
        if self.ops is not None:
            out += self.ops.instances(s)
        for b in self.brokers():
            if f.crashes:
                out.append(self.crash(s, b, lossy=False))
            if f.lossy_crashes:
                out.append(self.crash(s, b, lossy=True))
            out.append(self.restart(s, b, quick=False))
            if f.undetected_restarts:
                out.append(self.restart(s, b, quick=True))
        return out

    # ------------------------------------------------------------------ properties
    def acting_leader(self, s: SymState, p: int, L: int) -> z3.BoolRef:
        z, r = s.zk[p], s.replicas[p][L]
        return z3.And(z.leader == L, s.alive[L], r.leader == L, r.leader_epoch == z.leader_epoch)

    def always(self) -> tuple[str, ...]:
        """The always-properties encoded for this configuration: ALWAYS, and with reassignments the two
        that only a changing assignment can break."""
        if self.ops is not None and self.ops.reassign is not None:
            return ALWAYS + REASSIGNMENT_PROPERTIES
        return ALWAYS

    def step_faults(self) -> tuple[str, ...]:
        """The properties a step breaks by being refused (``Instance.illegal``): OnlyValidTransitions
        where the encoding keeps the controller's replica states and checks its moves."""
        if self.ops is not None and (self.ops.reassign is not None or self.ops.admin is not None):
            return STEP_FAULTS
        return ()

    def encoded(self) -> tuple[str, ...]:
        """Every property this encoding gives a verdict on, in the order the commands report them:
        the always-properties, the transition property and, where moves are checked,
        OnlyValidTransitions. ``prove inductive`` and ``bmc`` report exactly these, and
        ``--property`` chooses among them (:func:`choose`)."""
        return self.always() + TRANSITION + self.step_faults()

    def properties(self, s: SymState) -> dict[str, z3.BoolRef]:
        """The always-properties of invariants/properties.py that this fragment can break."""
        out: dict[str, list[z3.BoolRef]] = {n: [] for n in ALWAYS}
        admin = self.ops.admin if self.ops is not None else None
        for p in range(self.P):
            ar = self.U[p]  # every broker that can host a replica (an unhosted one is a fresh replica)
            z, reps, g = s.zk[p], s.replicas[p], s.ghost[p]
            # a partition queued for deletion or deleted is skipped, as invariants/properties.py does
            kept = [z3.Not(admin.gone(s, p))] if admin is not None else []
            out["LeaderInIsr"].append(z3.Implies(z.leader != 0, z3.Or([z3.And(z.leader == b, z.isr[b]) for b in ar])))
            for b in ar:
                out["HighWatermarkBelowLogEnd"].append(reps[b].hw <= reps[b].log.length)
            for L in ar:
                rl = reps[L]
                for b in ar:
                    if b != L:
                        out["StrongIsr"].append(z3.Implies(
                            z3.And(*kept, self.acting_leader(s, p, L), z.isr[b], s.alive[b]),
                            self.prefix_eq(reps[b].log, rl.log, rl.hw)))
            for b in ar:
                holder = z3.And(*kept, z3.Or(z.isr[b], z.leader == b), s.alive[b])
                out["NoCommittedWriteLost"].append(z3.Implies(holder, z3.And(
                    [z3.Implies(g.acked[j], self.holds_id(reps[b].log, j)) for j in range(1, self.K + 1)])))
            for i, a in enumerate(ar):
                for c in ar[i + 1:]:
                    # live in-sync replicas: the ZooKeeper ISR and the znode's leader
                    in_sync = z3.And(*[z3.And(s.alive[x], z3.Or(z.isr[x], z.leader == x)) for x in (a, c)])
                    n = imin(reps[a].hw, reps[c].hw)
                    out["LogMatching"].append(z3.Implies(z3.And(in_sync, n > 0),
                                                         self.prefix_eq(reps[a].log, reps[c].log, n)))
                    out["OneLeaderPerEpoch"].append(z3.Not(z3.And(
                        s.alive[a], reps[a].leader == a, s.alive[c], reps[c].leader == c,
                        reps[a].leader_epoch == reps[c].leader_epoch)))
            for b in ar:
                r = reps[b]
                n = imin(r.hw, g.exposed.length)
                out["ConsistentRead"].append(z3.Implies(z3.And(s.alive[b], r.leader == b), z3.And(
                    imin(n, r.log.length) == n, *[z3.Implies(n > i, self.rec_eq(r.log, g.exposed, i))
                                                  for i in range(self.K)])))
        res = {k: z3.And(v) if v else B(True) for k, v in out.items()}
        if self.ops is not None and self.ops.reassign is not None:  # see always()
            R, r = self.ops.reassign, s.ops.reassign
            res["IsrSubsetOfReplicas"] = R.isr_subset_of_replicas(r, tuple(z.isr for z in s.zk))
            res["ReassignmentRecoverable"] = R.reassignment_recoverable(r)
        return res

    def step_properties(self, s: SymState, t: SymState) -> dict[str, z3.BoolRef]:
        parts = []
        admin = self.ops.admin if self.ops is not None else None
        for p in range(self.P):
            # a deleted partition (topic deletion) and a replica a broker does not host are skipped
            zk_ok = t.zk[p].leader_epoch >= s.zk[p].leader_epoch
            parts.append(zk_ok if admin is None else z3.Implies(t.ops.admin.exists[p], zk_ok))
            for b in self.U[p]:
                both = [s.alive[b], t.alive[b]]
                if admin is not None:
                    both += [s.ops.admin.hosted[p][b], t.ops.admin.hosted[p][b]]
                if self.ops is not None and self.ops.reassign is not None:
                    both += [s.ops.reassign.hosted[p][b], t.ops.reassign.hosted[p][b]]
                parts.append(z3.Implies(z3.And(both),
                                        t.replicas[p][b].leader_epoch >= s.replicas[p][b].leader_epoch))
        return {"EpochsMonotonic": z3.And(parts)}

    def write_committed(self, s: SymState) -> z3.BoolRef:
        return z3.Or([g.acked[j] for g in s.ghost for j in g.acked]) if self.K else B(False)

    # ------------------------------------------------------------------ concrete actions
    def action_of(self, inst: Instance, m: z3.ModelRef) -> Action:
        if inst.name == "LossyCrash":
            kept = tuple(number(m, inst.extra["kept"][p]) if p in inst.extra["kept"] else 0
                         for p in range(self.P))
            return Action("LossyCrash", (inst.args[0], kept))
        return Action(inst.name, inst.args)


ALWAYS = ("LeaderInIsr", "HighWatermarkBelowLogEnd", "StrongIsr", "NoCommittedWriteLost", "LogMatching",
          "ConsistentRead", "OneLeaderPerEpoch")
TRANSITION = ("EpochsMonotonic",)
STEP_FAULTS = ("OnlyValidTransitions",)
REASSIGNMENT_PROPERTIES = ("IsrSubsetOfReplicas", "ReassignmentRecoverable")
NOT_ENCODED = {
    "IsrSubsetOfReplicas": "encoded with reassignments; without them it holds by construction (the encoding's "
                           "ISRs range over the assigned brokers)",
    "ReassignmentRecoverable": "encoded with reassignments; vacuous without them",
    "OnlyValidTransitions": "encoded with reassignments, topic creation or deletion (each partition and replica move is checked "
                            "against the table); without them every move is between Online and Offline, which the "
                            "table allows, and `isrcheck prove transitions` covers the composed operations",
}


def choose(enc: Encoding, only: Sequence[str] | None) -> tuple[str, ...]:
    """The properties a run of ``enc`` gives verdicts on: every one it encodes (:meth:`Encoding.encoded`)
    when ``only`` is empty or None, else those named (``--property``), in the encoding's order.

    A name the encoding does not cover is refused (:class:`~.instance.Unsupported`, one line naming
    what it covers) rather than silently dropped: a restriction to a property nothing checks would
    otherwise report PROVED over an empty set."""
    covered = enc.encoded()
    if not only:
        return covered
    from ..liveness import LIVENESS_NAMES
    from ..properties import ALL_PROPERTIES

    kinds = {p.name: p.kind for p in ALL_PROPERTIES}
    for name in only:
        if name in covered:
            continue
        if name in NOT_ENCODED:
            why = f"not encoded for this configuration: {NOT_ENCODED[name]}"
        elif name in LIVENESS_NAMES:
            why = "a liveness property, which the z3 encoding does not state; `isrcheck check --property` checks it"
        elif name in kinds:
            what = {"always": "an always-property the z3 encoding does not state",
                    "transition": "a transition property the z3 encoding does not state"}.get(
                kinds[name], f"a {kinds[name]}-property, not one of the claims the z3 commands give verdicts on")
            why = f"{what}; `isrcheck check --property` checks it"
        else:
            why = "no such property"
        raise Unsupported(f"--property {name}: {why}; the z3 encoding of this configuration covers "
                          f"{', '.join(covered)}")
    return tuple(n for n in covered if n in only)


def unsupported_reason(cfg: Config) -> str:
    """Why ``cfg`` is outside the fragment the encoding covers ('' when it is inside)."""
    o = cfg.operations
    if cfg.generation not in GENERATIONS:
        return (f"the symbolic encoding does not cover generation = {cfg.generation.value!r} (encoded: "
                f"{', '.join(GENERATIONS)}); `isrcheck check` does")
    if cfg.reintroduce:  # each bug is a Protocol mixin over the model's hooks, which the encoding does not call
        return (f"the symbolic encoding does not cover Kafka's bugs put back (reintroduce = "
                f"{json.dumps(list(cfg.reintroduce))}): it encodes the fixed rules; `isrcheck check` runs the pre-fix ones")
    if cfg.detect_restarts:
        return "the symbolic encoding does not cover bounce detection (detect_restarts)"
    if cfg.isr_change != "zookeeper":
        return f"the symbolic encoding does not cover ISR changes through the controller (isr_change = \"{cfg.isr_change}\")"
    if cfg.metadata_cache:
        return "the symbolic encoding does not cover the brokers' metadata cache (metadata_cache)"
    uncovered = uncovered_budget(cfg)  # a counter of the model's budget that no action of the encoding spends
    if uncovered:
        return f"the symbolic encoding does not cover {uncovered}"
    if cfg.controller_connections != "shared":
        return "the symbolic encoding does not cover per-controller connections (controller_connections)"
    if cfg.max_fetch_records:
        return "the symbolic encoding does not cover partial fetches (max_fetch_records)"
    if cfg.fenced_reassignment_steps and o.reassignments:
        return "the symbolic encoding does not cover fenced reassignment steps (fenced_reassignment_steps)"
    if o.reassignments and (o.topic_creation or o.topic_deletions or o.preferred_elections or o.controlled_shutdowns):
        return ("the symbolic encoding covers reassignments only without topic creation, deletion, preferred "
                "elections and controlled shutdown")
    if o.topic_deletions or o.topic_creation:
        reason = admin_unsupported(cfg)
        if reason:
            return reason
    if cfg.max_records > 6:
        return "the symbolic encoding covers at most 6 records (max_records)"
    return ""


# ============================================================================ concrete evaluation (tests, tools)
def concrete(enc: Encoding, s: State) -> SymState:
    """The encoding's view of the concrete model state ``s``: a SymState whose leaves are values."""
    shape = enc.fresh("shape")
    values = {a.get_id(): v for a, v in shape.values_of(s)}
    return shape.rebuild([values[leaf.get_id()] for leaf in shape.leaves()])


def evaluate(terms: Sequence[z3.ExprRef]) -> list[int | bool]:
    """Values of ground terms (Booleans and bit-vectors), with one call to z3's simplifier."""
    if not terms:
        return []
    parts = []
    widths: list[int | None] = []
    for t in terms:
        if z3.is_bool(t):
            parts.append(z3.If(t, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)))
            widths.append(None)
        else:
            parts.append(t)
            widths.append(t.size())
    packed = z3.simplify(parts[0] if len(parts) == 1 else z3.Concat(parts))
    if not z3.is_bv_value(packed):
        raise ValueError("evaluate() needs ground terms")
    v = packed.as_long()
    out: list[int | bool] = []
    for w in reversed(widths):
        n = 1 if w is None else w
        x = v & ((1 << n) - 1)
        v >>= n
        if w is None:
            out.append(bool(x))
        else:
            out.append(x - (1 << n) if x >= 1 << (n - 1) else x)
    out.reverse()
    return out


__all__ = ["Encoding", "DEFAULT_QUEUE", "unsupported_reason", "ALWAYS", "REASSIGNMENT_PROPERTIES", "TRANSITION",
           "STEP_FAULTS", "NOT_ENCODED", "choose", "concrete", "evaluate"]
