"""Controller operations and controller failover in the replication encoding (specs/08-symbolic.md#operations).

The base encoding (``replication.py``) transcribes the replication path and the active controller's
broker-change handling. This module adds, step for step from ``model/controller.py`` and
``model/actions.py``, what an administrator and a second controller can do:

- **preferred elections**: RequestPreferredElection (the ``/admin/preferred_replica_election``
  flag per partition) and ElectPreferredLeader (the PreferredReplica selector, the znode write, the
  LeaderAndIsr requests and UpdateMetadata, clearing the flag unless the controller is fenced);
- **controlled shutdown**: the ControlledShutdown selector for partitions the broker leads, the
  replica's move to OfflineReplica (StopReplica, ISR removal) where it follows, then the broker's
  graceful stop (HW checkpoint, crash) — the controller's shutting-down set is state;
- **controller failover**: the controller epoch in ZooKeeper, on every leader/ISR znode, on every
  request and in every broker (the highest one it has seen: a broker rejects a request from a
  deposed controller), the new controller's initialisation from ZooKeeper, and the deposed
  controller's own context (its view of the brokers, its partition states, its shutting-down
  set, and with reassignments its reassignment memory and replica states), acting until it resigns;
  its znode writes are refused when a newer controller wrote the znode, or always with
  ``fenced_controller_writes``.

Not encoded, because no behaviour in these fragments depends on them: the controller's replica
states (every move here is between Online and Offline, which the tables allow in every
direction, and the decoder derives them from the controller's view) and its partition states
other than Online/Offline (no partition is New without topic creation). With topic creation,
``admin.py`` encodes both (``SymOps.admin``).

The controller-side state lives in :class:`SymOps`, hung on ``SymState.ops``; the hooks of
:class:`Operations` are called by ``Encoding`` where a request is queued, delivered or dropped, a
leader/ISR znode written, or a broker change handled. :class:`Operations` is a plug-in of the
encoding: it sees it only as an :class:`~.instance.Encoder`, and it is in turn the
:class:`~.instance.ControllerContext` of its own plug-ins, :class:`~.admin.Admin` and
:class:`~.reassignment.Reassignment`. A controller is named by its epoch in the
action arguments (``ElectPreferredLeader(2, 0)``), so there is one instance per possible epoch.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import z3

from isrcheck.model.brokersets import mask_of
from isrcheck.model.config import Config
from isrcheck.model.state import Broker, Controller, State
from isrcheck.model.tables import PartitionState, ReplicaState

from .admin import Admin, SymAdmin, needs_admin
from .instance import Encoder, Instance
from .logic import number, truth
from .reassignment import Reassignment, SymReassign
from .types import (CONTROLLER_BUDGET, NUM_MAX, REQ_LAI, REQ_STOP, as_bool, conj, decode_mask, first_of, fresh_name,
                    ite, negate, num, numval, SymState)

B = z3.BoolVal
I = numval  # noqa: E741

def needs_operations(cfg: Config) -> bool:
    """Whether ``cfg`` uses anything of this module (otherwise the encoding stays as it was)."""
    o, f = cfg.operations, cfg.faults
    return bool(o.preferred_elections or o.controlled_shutdowns or f.controller_failovers or needs_admin(cfg)
                or o.reassignments)


# ============================================================================ state
@dataclass
class SymOps:
    """The controller side of a State that the base encoding leaves out.

    ``zk_epoch`` is ZooKeeper's controller epoch, which is the active controller's; a deposed one
    (``stale``) has epoch ``zk_epoch - 1`` (a failover always deposes the active controller).
    When there is no deposed controller its fields are all False (one representation per state).
    """

    preferred: tuple[z3.BoolRef, ...]  # /admin/preferred_replica_election, per partition
    zk_epoch: z3.ArithRef
    part_epoch: tuple[z3.ArithRef, ...]  # controller epoch of the last leader/ISR znode write
    broker_epoch: dict[int, z3.ArithRef]  # highest controller epoch each broker has seen
    req_epoch: dict[int, tuple[z3.ArithRef, ...]]  # controller epoch of each queued request
    shutting: dict[int, z3.BoolRef]  # the active controller's shutting-down brokers
    stale: z3.BoolRef
    stale_live: dict[int, z3.BoolRef]
    stale_online: tuple[z3.BoolRef, ...]
    stale_shutting: dict[int, z3.BoolRef]
    budget: dict[str, z3.ArithRef]  # the counters of CONTROLLER_BUDGET, by the model's names
    admin: SymAdmin | None = None  # topic creation (admin.py), None when not encoded
    reassign: SymReassign | None = None  # reassignments (reassignment.py), None when not encoded

    @classmethod
    def fresh(cls, brokers: int, partitions: int, queue: int, prefix: str) -> SymOps:
        def iv(n: str) -> z3.ArithRef:
            return num(fresh_name(f"{prefix}.{n}"))

        def bv(n: str) -> z3.BoolRef:
            return z3.Bool(fresh_name(f"{prefix}.{n}"))

        bs = range(1, brokers + 1)
        return cls(
            preferred=tuple(bv(f"preferred{p}") for p in range(partitions)),
            zk_epoch=iv("cepoch"),
            part_epoch=tuple(iv(f"zk{p}.cepoch") for p in range(partitions)),
            broker_epoch={b: iv(f"b{b}.cepoch") for b in bs},
            req_epoch={b: tuple(iv(f"q{b}.{i}.cepoch") for i in range(queue)) for b in bs},
            shutting={b: bv(f"shutting{b}") for b in bs},
            stale=bv("stale"),
            stale_live={b: bv(f"stale.live{b}") for b in bs},
            stale_online=tuple(bv(f"stale.online{p}") for p in range(partitions)),
            stale_shutting={b: bv(f"stale.shutting{b}") for b in bs},
            budget={f: iv(f"budget.{f}") for f in CONTROLLER_BUDGET},
        )

    def leaves(self) -> list[z3.ExprRef]:
        out: list[z3.ExprRef] = [*self.preferred, self.zk_epoch, *self.part_epoch]
        out += [self.broker_epoch[b] for b in sorted(self.broker_epoch)]
        for b in sorted(self.req_epoch):
            out += self.req_epoch[b]
        out += [self.shutting[b] for b in sorted(self.shutting)]
        out.append(self.stale)
        out += [self.stale_live[b] for b in sorted(self.stale_live)]
        out += list(self.stale_online)
        out += [self.stale_shutting[b] for b in sorted(self.stale_shutting)]
        out += [self.budget[f] for f in CONTROLLER_BUDGET]
        if self.admin is not None:
            out += self.admin.leaves()
        if self.reassign is not None:
            out += self.reassign.leaves()
        return out

    def rebuild(self, nx: Callable[[], Any]) -> SymOps:
        preferred = tuple(nx() for _ in self.preferred)
        zk_epoch = nx()
        part_epoch = tuple(nx() for _ in self.part_epoch)
        broker_epoch = {b: nx() for b in sorted(self.broker_epoch)}
        req_epoch = {b: tuple(nx() for _ in self.req_epoch[b]) for b in sorted(self.req_epoch)}
        shutting = {b: nx() for b in sorted(self.shutting)}
        stale = nx()
        stale_live = {b: nx() for b in sorted(self.stale_live)}
        stale_online = tuple(nx() for _ in self.stale_online)
        stale_shutting = {b: nx() for b in sorted(self.stale_shutting)}
        budget = {f: nx() for f in CONTROLLER_BUDGET}
        admin = self.admin.rebuild(nx) if self.admin is not None else None
        reassign = self.reassign.rebuild(nx) if self.reassign is not None else None
        return SymOps(preferred, zk_epoch, part_epoch, broker_epoch, req_epoch, shutting, stale, stale_live,
                      stale_online, stale_shutting, budget, admin, reassign)

    # ------------------------------------------------------------------ concrete <-> symbolic
    def values_of(self, s: State) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        Bv = z3.BoolVal
        zk = s.zk
        pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
        pairs += [(x, Bv(bool(zk.preferred >> p & 1))) for p, x in enumerate(self.preferred)]
        pairs.append((self.zk_epoch, I(zk.controller_epoch)))
        pairs += [(x, I(zk.partitions[p].controller_epoch)) for p, x in enumerate(self.part_epoch)]
        for b, x in self.broker_epoch.items():
            pairs.append((x, I(s.brokers[b - 1].controller_epoch)))
        for b, xs in self.req_epoch.items():
            reqs = s.inbox[b - 1]
            pairs += [(x, I(reqs[i][1] if i < len(reqs) else 0)) for i, x in enumerate(xs)]
        c, st = s.controller, s.stale
        pairs += [(x, Bv(bool(c.shutting_down >> b & 1))) for b, x in self.shutting.items()]
        pairs.append((self.stale, Bv(st is not None)))
        for b, x in self.stale_live.items():
            pairs.append((x, Bv(st is not None and bool(st.live >> b & 1))))
        for p, x in enumerate(self.stale_online):
            pairs.append((x, Bv(st is not None and st.partition_states[p] == PartitionState.ONLINE)))
        for b, x in self.stale_shutting.items():
            pairs.append((x, Bv(st is not None and bool(st.shutting_down >> b & 1))))
        pairs += [(self.budget[f], I(getattr(s.budget, f))) for f in CONTROLLER_BUDGET]
        if self.admin is not None:
            pairs += self.admin.values_of(s)
        if self.reassign is not None:
            pairs += self.reassign.owner.values_of(self.reassign, s)
        return pairs

    def decode(self, model: z3.ModelRef, st: State) -> State:
        """``st`` (decoded by SymState) completed with the controller side."""
        epoch = number(model, self.zk_epoch)
        parts = tuple(zp._replace(controller_epoch=number(model, self.part_epoch[p]))
                      for p, zp in enumerate(st.zk.partitions))
        preferred = mask_of(p for p, x in enumerate(self.preferred) if truth(model, x))
        zk = st.zk._replace(controller_epoch=epoch, partitions=parts, preferred=preferred)
        brokers = tuple(Broker(br.alive, number(model, self.broker_epoch[i + 1]), br.replicas)
                        for i, br in enumerate(st.brokers))
        inbox = tuple(tuple(req._replace(controller_epoch=number(model, self.req_epoch[i + 1][k]))
                            for k, req in enumerate(q)) for i, q in enumerate(st.inbox))
        controller = st.controller._replace(epoch=epoch, shutting_down=decode_mask(model, self.shutting))
        stale: Controller | None = None
        if truth(model, self.stale):
            live = decode_mask(model, self.stale_live)
            stale = controller._replace(
                epoch=epoch - 1, live=live, shutting_down=decode_mask(model, self.stale_shutting),
                partition_states=tuple(PartitionState.ONLINE if truth(model, o) else PartitionState.OFFLINE
                                       for o in self.stale_online),
                replica_states=tuple(tuple(ReplicaState.NON_EXISTENT if rs == ReplicaState.NON_EXISTENT
                                           else ReplicaState.ONLINE if live >> (b + 1) & 1 else ReplicaState.OFFLINE
                                           for b, rs in enumerate(row)) for row in controller.replica_states))
        budget = st.budget._replace(**{f: number(model, self.budget[f]) for f in CONTROLLER_BUDGET})
        out = st._replace(zk=zk, controller=controller, stale=stale, brokers=brokers, inbox=inbox, budget=budget)
        if self.admin is not None:
            out = self.admin.decode(model, out)
        return self.reassign.owner.decode(model, self.reassign, out) if self.reassign is not None else out


# ============================================================================ the operations
class Operations:
    """The hooks and actions of this module for one encoding; the
    :class:`~.instance.ControllerContext` of :class:`~.admin.Admin` and :class:`~.reassignment.Reassignment`."""

    def __init__(self, enc: Encoder) -> None:
        self.enc = enc
        cfg = enc.cfg
        self.cfg = cfg
        self.fenced_writes = cfg.fenced_controller_writes
        self.failovers = cfg.faults.controller_failovers
        # the term naming the controller that is acting while an operation is being built
        self._acting: z3.ArithRef | None = None
        self.admin: Admin | None = Admin(self) if needs_admin(cfg) else None
        # reassignments (reassignment.py): still behind unsupported_reason, see specs/08-symbolic.md
        self.reassign: Reassignment | None = Reassignment(cfg) if cfg.operations.reassignments else None

    def fresh(self, prefix: str) -> SymOps:
        e = self.enc
        out = SymOps.fresh(e.N, e.P, e.Q, prefix)
        if self.admin is not None:
            out.admin = self.admin.fresh(prefix)
        if self.reassign is not None:
            out.reassign = self.reassign.fresh(prefix, e.Q)
        return out

    # ------------------------------------------------------------------ which controller acts
    def acting(self, t: SymState) -> z3.ArithRef:
        return self._acting if self._acting is not None else t.ops.zk_epoch

    @contextmanager
    def acting_as(self, epoch: z3.ArithRef) -> Iterator[None]:
        saved = self._acting
        self._acting = epoch
        try:
            yield
        finally:
            self._acting = saved

    def active_epochs(self) -> range:
        """Epochs the active controller can have: 1 plus one per failover."""
        return range(1, self.failovers + 2)

    def stale_epochs(self) -> range:
        return range(1, self.failovers + 1)

    # ------------------------------------------------------------------ hooks of the base encoding
    def fenced(self, t: SymState, p: int) -> z3.BoolRef:
        """write_leader_isr's refusal: a newer controller wrote the znode, or (fenced writes) this
        controller is not the active one."""
        e = self.acting(t)
        out = t.ops.part_epoch[p] > e
        if self.fenced_writes:
            out = z3.Or(out, e != t.ops.zk_epoch)
        return out

    def controller_fenced(self, t: SymState) -> z3.BoolRef | bool:
        return self.acting(t) != t.ops.zk_epoch if self.fenced_writes else False

    def wrote(self, t: SymState, p: int, cond: z3.BoolRef) -> None:
        ops = t.ops
        ops.part_epoch = tuple(z3.If(cond, self.acting(t), x) if q == p else x for q, x in enumerate(ops.part_epoch))

    def um_not_queued(self, t: SymState, b: int) -> z3.BoolRef:
        """World.send: an UpdateMetadata is not queued behind a request of the same controller epoch."""
        q = t.inbox[b]
        e = self.acting(t)
        return z3.Not(z3.Or([z3.And(q.length > i, x == e) for i, x in enumerate(t.ops.req_epoch[b])]))

    def sent(self, t: SymState, b: int, cond: z3.BoolRef | bool, at: z3.ArithRef, kind: int = 0,
             p: int = 0, delete: bool = False) -> None:
        """A request of ``kind`` (for ``p``) was queued at position ``at`` of ``b``'s queue (when ``cond``)."""
        e = self.acting(t)
        xs = t.ops.req_epoch[b]
        t.ops.req_epoch[b] = tuple(ite(conj(cond, at == i), e, x) for i, x in enumerate(xs))
        if self.admin is not None:
            self.admin.sent(t, b, cond, at)
        if self.reassign is not None:
            self.reassign.sent(t.ops.reassign, b, as_bool(cond), at, kind == REQ_LAI, p, delete)

    def popped(self, t: SymState, b: int, k: int) -> None:
        xs = t.ops.req_epoch[b]
        t.ops.req_epoch[b] = tuple(xs[:k]) + tuple(xs[k + 1:]) + (I(0),)
        if self.admin is not None:
            self.admin.popped(t, b, k)
        if self.reassign is not None:
            self.reassign.popped(t.ops.reassign, b, k)

    def crashed(self, t: SymState, b: int) -> None:
        t.ops.req_epoch[b] = tuple(I(0) for _ in t.ops.req_epoch[b])
        t.ops.broker_epoch[b] = I(0)
        if self.admin is not None:
            self.admin.crashed(t, b)
        if self.reassign is not None:
            self.reassign.crashed(t.ops.reassign, b)

    def accepts(self, s: SymState, b: int, k: int) -> z3.BoolRef:
        """Protocol.accepts_controller_epoch for the request at position ``k``."""
        return s.ops.req_epoch[b][k] >= s.ops.broker_epoch[b]

    def accepted(self, s: SymState, t: SymState, b: int, k: int) -> None:
        req, seen = s.ops.req_epoch[b][k], s.ops.broker_epoch[b]
        t.ops.broker_epoch[b] = z3.If(req > seen, req, seen)
        if self.admin is not None:
            self.admin.accepted(s, t, b, k)

    def forget_shutting_down(self, t: SymState, left: dict[int, Any]) -> None:
        """on_broker_failure: ``c.shutting_down &= ~dead``."""
        t.ops.shutting = {b: conj(x, negate(left[b])) for b, x in t.ops.shutting.items()}

    def rejected_delivery(self, s: SymState, b: int, k: int, name: str, args: tuple, base: z3.BoolRef,
                          budget: str | None) -> Instance:
        """A request from a deposed controller: popped, nothing else."""
        t = s.spend(budget)
        self.enc.pop(t, b, k)
        return Instance(name, args, f"{name}: from a deposed controller", z3.And(base, z3.Not(self.accepts(s, b, k))), t)

    # ------------------------------------------------------------------ controller contexts
    def as_stale(self, s: SymState) -> SymState:
        """A copy of ``s`` in which the deposed controller's context stands in the active one's
        place (so that the base encoding's controller code acts for it)."""
        t = s.clone()
        o = t.ops
        t.c_live, o.stale_live = o.stale_live, t.c_live
        t.partition_online, o.stale_online = o.stale_online, t.partition_online
        o.shutting, o.stale_shutting = o.stale_shutting, o.shutting
        if o.reassign is not None and o.reassign.stale_step:
            o.reassign.swap_contexts()
        return t

    def stale_instance(self, s: SymState, name: str, args: tuple, kind: str, e: int,
                       build: Callable[[SymState], tuple[z3.BoolRef | bool, SymState]]) -> Instance:
        """``build`` run for the deposed controller of epoch ``e``: on the swapped state, then swapped back."""
        tmp = self.as_stale(s)
        with self.acting_as(I(e)):
            guard, t = build(tmp)
        t = self.as_stale(t)
        guard = conj(s.ops.stale, s.ops.zk_epoch == e + 1, guard)
        return Instance(name, args, f"{kind} (deposed controller)", as_bool(guard), t)

    # ------------------------------------------------------------------ actions
    def broker_change_stale(self, s: SymState) -> list[Instance]:
        out = []
        for e in self.stale_epochs():
            out.append(self.stale_instance(s, "ProcessBrokerChange", (e,), "ProcessBrokerChange", e,
                                           lambda tmp: self.enc.process_broker_change(tmp)))
        return out

    def request_preferred(self, s: SymState, p: int) -> Instance:
        t = s.clone()
        t.ops.budget["preferred_elections"] = s.ops.budget["preferred_elections"] - 1
        t.ops.preferred = tuple(B(True) if q == p else x for q, x in enumerate(s.ops.preferred))
        guard = z3.And(s.ops.budget["preferred_elections"] > 0, z3.Not(s.ops.preferred[p]))
        return Instance("RequestPreferredElection", (p,), "RequestPreferredElection", guard, t)

    def elect_preferred(self, t: SymState, p: int) -> None:
        """on_preferred_replica_election for the acting controller (every partition of these
        fragments is electable and Online or Offline; no reassignment moves it)."""
        enc = self.enc
        ar = enc.AR[p]
        z = t.zk[p]
        pref = ar[0]
        ok = z3.And(z.leader != pref, t.c_live[pref], z.isr[pref])
        do = z3.And(ok, z3.Not(self.fenced(t, p)))
        live = {b: t.c_live[b] for b in ar}
        enc.write_leader_isr(t, p, I(pref), dict(z.isr), do)
        t.partition_online = tuple(ite(do, B(True), o) if q == p else o for q, o in enumerate(t.partition_online))
        for b in ar:
            enc.send(t, b, REQ_LAI, p, z3.And(do, live[b], t.c_live[b]))
        enc.broadcast_metadata(t, do)
        clear = negate(self.controller_fenced(t))
        t.ops.preferred = tuple(ite(clear, B(False), x) if q == p else x for q, x in enumerate(t.ops.preferred))

    def preferred_instances(self, s: SymState, p: int) -> list[Instance]:
        out = []
        for e in self.active_epochs():
            t = s.clone()
            with self.acting_as(I(e)):
                self.elect_preferred(t, p)
            out.append(Instance("ElectPreferredLeader", (e, p), "ElectPreferredLeader",
                                z3.And(s.ops.preferred[p], s.ops.zk_epoch == e), t))
        for e in self.stale_epochs():
            def build(tmp: SymState, p: int = p) -> tuple[z3.BoolRef | bool, SymState]:
                t = tmp.clone()
                self.elect_preferred(t, p)
                return tmp.ops.preferred[p], t
            out.append(self.stale_instance(s, "ElectPreferredLeader", (e, p), "ElectPreferredLeader", e, build))
        return out

    def controlled_shutdown(self, s: SymState, e: int, b: int) -> Instance:
        """controlled_shutdown then graceful_stop, for the active controller of epoch ``e``."""
        enc = self.enc
        t = s.clone()
        t.ops.budget["controlled_shutdowns"] = s.ops.budget["controlled_shutdowns"] - 1
        with self.acting_as(I(e)):
            t.ops.shutting = {m: (B(True) if m == b else x) for m, x in t.ops.shutting.items()}
            for p in range(enc.P):
                ar = enc.AR[p]
                if b not in ar:
                    continue
                z = t.zk[p]
                leads = z.leader == b
                if len(ar) > 1:
                    new_isr = {m: z3.And(z.isr[m], z3.Not(t.ops.shutting[m])) for m in ar}
                    ok = z3.Or(list(new_isr.values()))
                    leader = first_of([(new_isr[m], m) for m in ar])
                    do = z3.And(leads, ok, z3.Not(self.fenced(t, p)))
                    live = {m: t.c_live[m] for m in ar}
                    enc.write_leader_isr(t, p, leader, new_isr, do)
                    t.partition_online = tuple(ite(do, B(True), o) if q == p else o
                                               for q, o in enumerate(t.partition_online))
                    for m in ar:
                        enc.send(t, m, REQ_LAI, p, z3.And(do, live[m], t.c_live[m]))
                    enc.broadcast_metadata(t, do)
                follower = z3.Not(leads)
                enc.send(t, b, REQ_STOP, p, follower)
                enc.remove_from_isr(t, p, b, follower)
        # graceful_stop: flush and checkpoint, then stop (not charged to the crash budget)
        if enc.periodic:
            for p in range(enc.P):
                if b in enc.AR[p]:
                    r = t.replicas[p][b]
                    r.checkpoint = r.hw
        crashes = t.budget["crashes"]
        t = enc.crash(t, b, lossy=False).effect
        t.budget["crashes"] = crashes
        guard = z3.And(s.ops.budget["controlled_shutdowns"] > 0, s.ops.zk_epoch == e, s.c_live[b], s.alive[b],
                       z3.Not(s.ops.shutting[b]))
        return Instance("ControlledShutdown", (e, b), "ControlledShutdown", guard, t)

    def failover(self, s: SymState) -> Instance:
        """_controller_failover: a new controller (epoch + 1) initialised from ZooKeeper; the old
        active one goes on acting (``stale_controller``) until it resigns."""
        enc = self.enc
        t = s.clone()
        o = t.ops
        o.budget["controller_failovers"] = s.ops.budget["controller_failovers"] - 1
        t.overflow = z3.Or(t.overflow, s.ops.zk_epoch >= NUM_MAX)
        new = s.ops.zk_epoch + 1
        o.zk_epoch = new
        keep = self.cfg.stale_controller
        o.stale = B(keep)
        o.stale_live = {b: (s.c_live[b] if keep else B(False)) for b in s.c_live}
        o.stale_online = tuple(x if keep else B(False) for x in s.partition_online)
        o.stale_shutting = {b: (s.ops.shutting[b] if keep else B(False)) for b in s.ops.shutting}
        R = self.reassign
        if R is not None:  # the reassignment memory: the deposed controller's, and a fresh one
            R.failover(s, t, keep)
        # on_controller_failover
        o.shutting = {b: B(False) for b in s.ops.shutting}
        t.c_live = dict(s.alive)
        t.partition_online = tuple(z3.Or([z3.And(s.zk[p].leader == b, s.alive[b]) for b in enc.U[p]])
                                   for p in range(enc.P))
        with self.acting_as(new):
            for p in range(enc.P):
                for b in enc.U[p]:  # replica state machine start-up: LeaderAndIsr to each live replica of AR
                    in_ar = True if R is None else R.member(p, s.ops.reassign.ar[p], b)
                    enc.send(t, b, REQ_LAI, p, conj(in_ar, t.c_live[b]))
            enc.elect_offline_and_new(t, B(True))
            if R is not None:
                R.resume(t)
            enc.broadcast_metadata(t, B(True))
        return Instance("ControllerFailover", (), "ControllerFailover",
                        s.ops.budget["controller_failovers"] > 0, t)

    def resign(self, s: SymState, e: int) -> Instance:
        t = s.clone()
        o = t.ops
        o.stale = B(False)
        o.stale_live = {b: B(False) for b in o.stale_live}
        o.stale_online = tuple(B(False) for _ in o.stale_online)
        o.stale_shutting = {b: B(False) for b in o.stale_shutting}
        if self.reassign is not None and o.reassign.stale_step:
            self.reassign.resigned(t)
        return Instance("ResignController", (e,), "ResignController", z3.And(s.ops.stale, s.ops.zk_epoch == e + 1), t)

    def instances(self, s: SymState) -> list[Instance]:
        """Every instance of this module, in the order of model/actions.enabled_actions."""
        enc = self.enc
        o, f = self.cfg.operations, self.cfg.faults
        out: list[Instance] = []
        if f.controller_failovers:
            out += self.broker_change_stale(s)
        if self.admin is not None:
            out += self.admin.instances(s)
        if self.reassign is not None:
            out += self.reassign.instances(enc, s)
        for p in range(enc.P):
            if o.preferred_elections:
                out += self.preferred_instances(s, p)
        if o.controlled_shutdowns:
            for e in self.active_epochs():
                for b in enc.brokers():
                    out.append(self.controlled_shutdown(s, e, b))
        if f.controller_failovers:
            for e in self.stale_epochs():
                out.append(self.resign(s, e))
            out.append(self.failover(s))
        if self.reassign is not None:
            out += self.request_reassignment(s)
        if o.preferred_elections:
            for p in range(enc.P):
                out.append(self.request_preferred(s, p))
        return out

    def request_reassignment(self, s: SymState) -> list[Instance]:
        """RequestReassignment(p, target) of the next configured request (one instance per request,
        their guards exclusive): writes /admin/reassign_partitions and the ghost's origin."""
        assert self.reassign is not None
        out = []
        for p, tgt, guard, after in self.reassign.request(s.ops.reassign):
            t = s.clone()
            t.ops.reassign = after
            out.append(Instance("RequestReassignment", (p, tgt), "RequestReassignment", guard, t))
        return out


__all__ = ["SymOps", "Operations", "needs_operations"]
