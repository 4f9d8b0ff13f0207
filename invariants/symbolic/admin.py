"""Topic creation and deletion in the replication encoding (specs/08-symbolic.md#operations).

The base encoding (``replication.py``) assumes the topic exists: every assigned broker hosts a replica and
the controller's partitions are Online or Offline, its replicas Online or Offline as its view says.
With ``operations.topic_creation`` neither holds, so this module encodes what the model keeps:

- the controller's **partition state** (NonExistent, New, Online, Offline: the base encoding's
  ``partition_online`` flag plus ``none``/``new`` flags here, at most one of the three set);
- the controller's **replica state** of every assigned replica (a ``ReplicaState`` number);
- whether the broker **hosts** the replica (``None`` in the model until a LeaderAndIsr creates it;
  an unhosted replica's encoded fields are those of ``world.fresh_replica``, so the base encoding's
  broker code acts on it exactly as the model acts on the replica it creates);

and, step for step from ``model/controller.py``, CreateTopic (``on_new_partition_creation``:
NonExistent -> New -> Online with ``_initialize_leader_and_isr``, the znode's creation at version 1,
leader epoch 0) and what topic creation changes in the broker-change handling (a New partition is
initialised, not elected; replicas of a NonExistent partition do not move; a replica that comes
back is told of the partition only if it was not New and the znode exists).

Topic deletion adds the deletion queue, whether a partition's znode still exists, the budget and,
per queued request, whether a StopReplica deletes; RequestTopicDeletion, StartTopicDeletion,
CompleteTopicDeletion and the delivery of a deleting StopReplica (the replica is gone, its fields
those of a fresh replica; DeletionStarted -> DeletionSuccessful) as in ``model/controller.py``, and
the deletion branches of the broker-change handling (Ineligible on failure, retried on return).

Scope: one controller (no failover), none of the other administrative operations in the same
configuration, and not creation and deletion together (``unsupported_reason`` says so).
Every partition and replica move is checked against its table first (``SymState.illegal``), so
OnlyValidTransitions is encoded (no illegal move is reachable in the covered manifest models).
The state hangs on :class:`~.operations.SymOps` (``admin``); the hooks are called by the base
encoding and by :class:`~.operations.Operations`, which hands this plug-in the acting controller
(:class:`~.instance.ControllerContext`) and through it the encoding (:class:`~.instance.Encoder`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import z3

from isrcheck.model.brokersets import mask_of
from isrcheck.model.config import Config
from isrcheck.model.state import State, StopReplica
from isrcheck.model.tables import PartitionState as PS
from isrcheck.model.tables import ReplicaState as RS

from .instance import ControllerContext, Instance, deleting_delivery
from .logic import number, truth
from .types import (REQ_LAI, REQ_STOP, as_bool, check_partition_move, check_replica_move, conj, first_of, fresh_name,
                    ite, negate, num, numval, SymState)

B = z3.BoolVal
I = numval  # noqa: E741


def needs_admin(cfg: Config) -> bool:
    return bool(cfg.operations.topic_creation or cfg.operations.topic_deletions)


def admin_unsupported(cfg: Config) -> str:
    """Why topic administration in ``cfg`` is outside the encoding ('' when it is inside)."""
    o, f = cfg.operations, cfg.faults
    if o.topic_creation and o.topic_deletions:
        return ("the symbolic encoding does not cover topic creation and deletion together "
                "(operations.topic_creation, operations.topic_deletions)")
    what = "topic creation (operations.topic_creation)" if o.topic_creation else \
        "topic deletion (operations.topic_deletions)"
    if f.controller_failovers or o.preferred_elections or o.controlled_shutdowns:
        return (f"the symbolic encoding covers {what} only without controller failover, preferred elections "
                "and controlled shutdown")
    return ""


# ============================================================================ state
@dataclass
class SymAdmin:
    """The controller's partition and replica states and the brokers' hosting of replicas."""

    none: tuple[z3.BoolRef, ...]  # partition state NonExistent
    new: tuple[z3.BoolRef, ...]  # partition state New (Online is SymState.partition_online)
    rstate: tuple[dict[int, z3.ArithRef], ...]  # ReplicaState per partition, per assigned broker
    hosted: tuple[dict[int, z3.BoolRef], ...]  # the broker hosts the replica (not None in the model)
    exists: tuple[z3.BoolRef, ...]  # the partition's znode holds AR (False once its deletion completed)
    deleting: tuple[z3.BoolRef, ...]  # /admin/delete_topics
    deletions: z3.ArithRef  # the topic_deletions budget
    qdel: dict[int, tuple[z3.BoolRef, ...]]  # per broker, per queue slot: a StopReplica that deletes

    @classmethod
    def fresh(cls, assignment: tuple[tuple[int, ...], ...], brokers: int, queue: int, prefix: str) -> SymAdmin:
        def bv(n: str) -> z3.BoolRef:
            return z3.Bool(fresh_name(f"{prefix}.{n}"))

        P = len(assignment)
        return cls(
            none=tuple(bv(f"pnone{p}") for p in range(len(assignment))),
            new=tuple(bv(f"pnew{p}") for p in range(len(assignment))),
            rstate=tuple({b: num(fresh_name(f"{prefix}.rstate{p}.{b}")) for b in ar}
                         for p, ar in enumerate(assignment)),
            hosted=tuple({b: bv(f"hosted{p}.{b}") for b in ar} for p, ar in enumerate(assignment)),
            exists=tuple(bv(f"exists{p}") for p in range(P)),
            deleting=tuple(bv(f"deleting{p}") for p in range(P)),
            deletions=num(fresh_name(f"{prefix}.budget.topic_deletions")),
            qdel={b: tuple(bv(f"q{b}.{i}.delete") for i in range(queue)) for b in range(1, brokers + 1)},
        )

    def leaves(self) -> list[z3.ExprRef]:
        out: list[z3.ExprRef] = [*self.none, *self.new]
        for d in self.rstate:
            out += [d[b] for b in sorted(d)]
        for h in self.hosted:
            out += [h[b] for b in sorted(h)]
        out += [*self.exists, *self.deleting, self.deletions]
        for b in sorted(self.qdel):
            out += self.qdel[b]
        return out

    def rebuild(self, nx: Callable[[], Any]) -> SymAdmin:
        none = tuple(nx() for _ in self.none)
        new = tuple(nx() for _ in self.new)
        rstate = tuple({b: nx() for b in sorted(d)} for d in self.rstate)
        hosted = tuple({b: nx() for b in sorted(h)} for h in self.hosted)
        exists = tuple(nx() for _ in self.exists)
        deleting = tuple(nx() for _ in self.deleting)
        deletions = nx()
        qdel = {b: tuple(nx() for _ in self.qdel[b]) for b in sorted(self.qdel)}
        return SymAdmin(none, new, rstate, hosted, exists, deleting, deletions, qdel)

    def values_of(self, s: State) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        Bv = z3.BoolVal
        c = s.controller
        pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
        for p in range(len(self.none)):
            pairs.append((self.none[p], Bv(c.partition_states[p] == PS.NON_EXISTENT)))
            pairs.append((self.new[p], Bv(c.partition_states[p] == PS.NEW)))
            for b, x in self.rstate[p].items():
                pairs.append((x, I(c.replica_states[p][b - 1])))
            for b, x in self.hosted[p].items():
                pairs.append((x, Bv(s.brokers[b - 1].replicas[p] is not None)))
            pairs.append((self.exists[p], Bv(bool(s.zk.partitions[p].replicas))))
            pairs.append((self.deleting[p], Bv(bool(s.zk.deleting >> p & 1))))
        pairs.append((self.deletions, I(s.budget.topic_deletions)))
        for b, xs in self.qdel.items():
            reqs = s.inbox[b - 1]
            pairs += [(x, Bv(i < len(reqs) and isinstance(reqs[i], StopReplica) and reqs[i].delete))
                      for i, x in enumerate(xs)]
        return pairs

    def decode(self, model: z3.ModelRef, st: State) -> State:
        def bv(t: z3.ExprRef) -> bool:
            return truth(model, t)

        c = st.controller
        pstates = []
        for p, ps in enumerate(c.partition_states):
            pstates.append(PS.NON_EXISTENT if bv(self.none[p]) else PS.NEW if bv(self.new[p]) else ps)
        rstates = tuple(tuple(number(model, self.rstate[p][b])
                              if b in self.rstate[p] else RS.NON_EXISTENT for b in range(1, len(row) + 1))
                        for p, row in enumerate(c.replica_states))
        brokers = tuple(br._replace(replicas=tuple(
            r if (p >= len(self.hosted) or b + 1 not in self.hosted[p] or bv(self.hosted[p][b + 1])) else None
            for p, r in enumerate(br.replicas))) for b, br in enumerate(st.brokers))
        parts = tuple(zp if bv(self.exists[p]) else zp._replace(replicas=())
                      for p, zp in enumerate(st.zk.partitions))
        deleting = mask_of(p for p, x in enumerate(self.deleting) if bv(x))
        inbox = tuple(tuple(req._replace(delete=True) if isinstance(req, StopReplica) and bv(self.qdel[i + 1][k]) else req
                            for k, req in enumerate(q)) for i, q in enumerate(st.inbox))
        budget = st.budget._replace(topic_deletions=number(model, self.deletions))
        return st._replace(zk=st.zk._replace(partitions=parts, deleting=deleting), inbox=inbox, budget=budget,
                           controller=c._replace(partition_states=tuple(pstates), replica_states=rstates),
                           brokers=brokers)


# ============================================================================ the operations
class Admin:
    """Topic creation and deletion for one acting controller (:class:`~.operations.Operations`) and its
    encoding."""

    def __init__(self, ops: ControllerContext) -> None:
        self.ops = ops
        self.enc = ops.enc
        self._sending_delete = False  # the request being queued is a StopReplica that deletes

    def fresh(self, prefix: str) -> SymAdmin:
        e = self.enc
        return SymAdmin.fresh(e.AR, e.N, e.Q, prefix)

    # ------------------------------------------------------------------ state-machine moves
    def _set_rstate(self, t: SymState, p: int, b: int, cond: Any, target: RS, checked: Any = None) -> None:
        """replica_to: the move checked against the table when ``checked`` (default: when it happens),
        then made when ``cond``."""
        a = t.ops.admin
        check_replica_move(t, cond if checked is None else checked, a.rstate[p][b], target)
        a.rstate = tuple({m: (ite(cond, I(int(target)), x) if (q == p and m == b) else x) for m, x in d.items()}
                         for q, d in enumerate(a.rstate))

    def _set_pstate(self, t: SymState, p: int, cond: Any, target: PS) -> None:
        a = t.ops.admin
        source = z3.If(as_bool(a.none[p]), I(int(PS.NON_EXISTENT)), z3.If(as_bool(a.new[p]), I(int(PS.NEW)),
                       z3.If(as_bool(t.partition_online[p]), I(int(PS.ONLINE)), I(int(PS.OFFLINE)))))
        check_partition_move(t, cond, source, target)

        def upd(xs: tuple, v: bool) -> tuple:
            return tuple(ite(cond, B(v), x) if q == p else x for q, x in enumerate(xs))

        a.none = upd(a.none, target == PS.NON_EXISTENT)
        a.new = upd(a.new, target == PS.NEW)
        t.partition_online = upd(t.partition_online, target == PS.ONLINE)

    def electable(self, t: SymState, p: int) -> z3.BoolRef:
        """controller._electable: the partition exists and is not queued for deletion."""
        a = t.ops.admin
        return z3.And(a.exists[p], z3.Not(a.deleting[p]))

    def gone(self, s: SymState, p: int) -> z3.BoolRef:
        """The partition is queued for deletion or deleted: StrongIsr and NoCommittedWriteLost skip it."""
        a = s.ops.admin
        return z3.Or(a.deleting[p], z3.Not(a.exists[p]))

    def is_offline(self, t: SymState, p: int) -> z3.BoolRef:
        a = t.ops.admin
        return z3.And(z3.Not(t.partition_online[p]), z3.Not(a.new[p]), z3.Not(a.none[p]))

    # ------------------------------------------------------------------ queued requests
    def sent(self, t: SymState, b: int, cond: Any, at: z3.ArithRef) -> None:
        xs = t.ops.admin.qdel[b]
        flag = B(self._sending_delete)
        t.ops.admin.qdel[b] = tuple(ite(conj(cond, at == i), flag, x) for i, x in enumerate(xs))

    def popped(self, t: SymState, b: int, k: int) -> None:
        xs = t.ops.admin.qdel[b]
        t.ops.admin.qdel[b] = tuple(xs[:k]) + tuple(xs[k + 1:]) + (B(False),)

    def crashed(self, t: SymState, b: int) -> None:
        t.ops.admin.qdel[b] = tuple(B(False) for _ in t.ops.admin.qdel[b])

    def is_delete(self, s: SymState, b: int, k: int) -> z3.BoolRef:
        return s.ops.admin.qdel[b][k]

    def send_delete(self, t: SymState, b: int, p: int, cond: Any) -> None:
        """StopReplica(delete=True) to ``b``."""
        self._sending_delete = True
        try:
            self.enc.send(t, b, REQ_STOP, p, cond)
        finally:
            self._sending_delete = False

    # ------------------------------------------------------------------ replica moves with messages
    def to_offline(self, t: SymState, p: int, b: int, cond: Any) -> None:
        """replica_to(OFFLINE): StopReplica, ISR removal (one controller: never fenced)."""
        self.enc.send(t, b, REQ_STOP, p, cond)
        self.enc.remove_from_isr(t, p, b, cond)
        self._set_rstate(t, p, b, cond, RS.OFFLINE)

    def to_deletion_started(self, t: SymState, p: int, b: int, cond: Any) -> None:
        self.send_delete(t, b, p, cond)
        self._set_rstate(t, p, b, cond, RS.DELETION_STARTED)

    # ------------------------------------------------------------------ hooks of the base encoding
    def accepted(self, s: SymState, t: SymState, b: int, k: int) -> None:
        """A LeaderAndIsr delivered to an assigned broker creates its replica (startReplica), even
        when its leader epoch is then rejected."""
        q = s.inbox[b].slots[k]
        h = t.ops.admin.hosted
        t.ops.admin.hosted = tuple(
            {m: (z3.Or(x, z3.And(q.kind == REQ_LAI, q.partition == p)) if m == b else x) for m, x in d.items()}
            for p, d in enumerate(h))

    def startup_replica(self, t: SymState, p: int, b: int, came: Any) -> Any:
        """on_broker_startup for replica (p, b): -> Online unless NonExistent; returns when the
        LeaderAndIsr is sent (the source was not New and the znode exists)."""
        a = t.ops.admin
        rs = a.rstate[p][b]
        moves = conj(came, a.exists[p], z3.Not(a.deleting[p]), rs != int(RS.NON_EXISTENT))
        retry = conj(came, a.exists[p], a.deleting[p], rs == int(RS.DELETION_INELIGIBLE))
        send = conj(moves, rs != int(RS.NEW), t.zk[p].version != 0)
        self._set_rstate(t, p, b, moves, RS.ONLINE)
        if self.enc.cfg.operations.topic_deletions:  # retry the deletion on the returning broker
            self.to_offline(t, p, b, retry)
            self.to_deletion_started(t, p, b, retry)
        return send

    def leader_left(self, t: SymState, p: int, cond: Any) -> Any:
        """on_broker_failure: a partition whose leader died goes Offline unless it is NonExistent."""
        c = conj(cond, z3.Not(t.ops.admin.none[p]), self.electable(t, p))
        self._set_pstate(t, p, c, PS.OFFLINE)
        return c

    def failed_replica(self, t: SymState, p: int, b: int, left: Any) -> Any:
        """on_broker_failure for replica (p, b): -> Offline unless NonExistent (one controller: the
        ISR removal is never fenced). Returns when the move happens."""
        a = t.ops.admin
        rs = a.rstate[p][b]
        c = conj(left, a.exists[p], z3.Not(a.deleting[p]), rs != int(RS.NON_EXISTENT))
        inel = conj(left, a.exists[p], a.deleting[p],
                     z3.Or(rs == int(RS.DELETION_STARTED), rs == int(RS.OFFLINE)))
        self._set_rstate(t, p, b, c, RS.OFFLINE)
        self._set_rstate(t, p, b, inel, RS.DELETION_INELIGIBLE)
        return c

    def elect_offline_or_new(self, t: SymState, p: int, cond: Any) -> None:
        """_elect_offline_and_new for ``p``: an Offline partition is elected, a New one initialised."""
        cond = conj(cond, self.electable(t, p))
        self.enc.elect_offline(t, p, conj(cond, self.is_offline(t, p)))
        self.initialize(t, p, conj(cond, t.ops.admin.new[p]))

    def initialize(self, t: SymState, p: int, cond: Any) -> None:
        """partition_to(ONLINE) from New: _initialize_leader_and_isr (the first live assigned replica
        leads, every live one is in the ISR, the znode is created: version 1, leader epoch 0)."""
        if cond is False:
            return
        enc = self.enc
        ar = enc.AR[p]
        z = t.zk[p]
        live = {b: t.c_live[b] for b in ar}
        do = conj(cond, z3.Or(list(live.values())), z.version == 0, negate(self.ops.controller_fenced(t)))
        leader = first_of([(live[b], b) for b in ar])
        z.leader = ite(do, leader, z.leader)
        z.isr = {b: ite(do, live[b], z.isr[b]) for b in z.isr}
        z.leader_epoch = ite(do, I(0), z.leader_epoch)
        z.version = ite(do, I(1), z.version)
        self.ops.wrote(t, p, do)
        self._set_pstate(t, p, do, PS.ONLINE)
        for b in ar:
            enc.send(t, b, REQ_LAI, p, conj(do, live[b], t.c_live[b]))
        enc.broadcast_metadata(t, do)

    # ------------------------------------------------------------------ actions
    def create_topic(self, s: SymState, e: int) -> Instance:
        """on_new_partition_creation of the active controller (epoch ``e``)."""
        enc = self.enc
        t = s.clone()
        a = s.ops.admin
        created = [z3.And(s.zk[p].version == 0, a.none[p]) for p in range(enc.P)]
        with self.ops.acting_as(I(e)):
            for p in range(enc.P):
                self._set_pstate(t, p, created[p], PS.NEW)
                for b in enc.AR[p]:
                    # replica_to(NEW): refused for the znode's leader (never one at version 0)
                    self._set_rstate(t, p, b, z3.And(created[p], t.zk[p].leader != b), RS.NEW, checked=created[p])
            for p in range(enc.P):
                self.initialize(t, p, created[p])
                for b in enc.AR[p]:
                    self._set_rstate(t, p, b, created[p], RS.ONLINE)
        guard = z3.And(s.ops.zk_epoch == e, z3.Or(created))
        return Instance("CreateTopic", (e,), "CreateTopic", guard, t)

    # ------------------------------------------------------------------ topic deletion
    def request_deletion(self, s: SymState) -> Instance:
        """RequestTopicDeletion: queue every existing partition (/admin/delete_topics)."""
        a = s.ops.admin
        t = s.clone()
        ta = t.ops.admin
        ta.deletions = a.deletions - 1
        ta.deleting = tuple(z3.Or(d, x) for d, x in zip(a.deleting, a.exists))
        guard = z3.And(a.deletions > 0, z3.Not(z3.Or(a.deleting)), z3.Or(a.exists))
        return Instance("RequestTopicDeletion", (), "RequestTopicDeletion", guard, t)

    def _in_deletion_states(self, s: SymState, p: int, b: int) -> z3.BoolRef:
        rs = s.ops.admin.rstate[p][b]
        return z3.Or([rs == int(x) for x in (RS.DELETION_STARTED, RS.DELETION_SUCCESSFUL, RS.DELETION_INELIGIBLE)])

    def deletion_started(self, s: SymState) -> z3.BoolRef:
        """controller.deletion_started: a replica of a queued partition is in a deletion state, or the
        controller created none of the queued partitions."""
        a = s.ops.admin
        nothing_created = z3.And([z3.Implies(a.deleting[p], z3.And(a.none[p], s.zk[p].version == 0))
                                  for p in range(self.enc.P)])
        some = [z3.And(a.deleting[p], a.exists[p], self._in_deletion_states(s, p, b))
                for p in range(self.enc.P) for b in self.enc.AR[p]]
        return z3.Or(*some, nothing_created)

    def deletion_complete(self, s: SymState) -> z3.BoolRef:
        a = s.ops.admin
        done = (RS.DELETION_SUCCESSFUL, RS.NON_EXISTENT)
        return z3.And([z3.Implies(z3.And(a.deleting[p], a.exists[p]),
                                  z3.Or([a.rstate[p][b] == int(x) for x in done]))
                       for p in range(self.enc.P) for b in self.enc.AR[p]])

    def start_deletion(self, s: SymState, e: int) -> Instance:
        """start_topic_deletion: replicas -> Offline -> DeletionStarted (their broker believed alive)
        or DeletionIneligible, then the partition -> Offline."""
        t = s.clone()
        with self.ops.acting_as(I(e)):
            for p in range(self.enc.P):
                a = t.ops.admin
                go = z3.And(a.deleting[p], a.exists[p], z3.Not(a.none[p]))
                for b in self.enc.AR[p]:
                    m = z3.And(go, t.ops.admin.rstate[p][b] != int(RS.NON_EXISTENT))
                    self.to_offline(t, p, b, m)
                    live = t.c_live[b]
                    self.to_deletion_started(t, p, b, z3.And(m, live))
                    self._set_rstate(t, p, b, z3.And(m, z3.Not(live)), RS.DELETION_INELIGIBLE)
                self._set_pstate(t, p, go, PS.OFFLINE)
        a = s.ops.admin
        guard = z3.And(s.ops.zk_epoch == e, z3.Or(a.deleting), z3.Not(self.deletion_started(s)))
        return Instance("StartTopicDeletion", (e,), "StartTopicDeletion", guard, t)

    def complete_deletion(self, s: SymState, e: int) -> Instance:
        """complete_topic_deletion: replicas and partitions -> NonExistent, the znodes deleted."""
        t = s.clone()
        a = s.ops.admin
        with self.ops.acting_as(I(e)):
            for p in range(self.enc.P):
                d = a.deleting[p]
                for b in self.enc.AR[p]:
                    self._set_rstate(t, p, b, z3.And(d, a.rstate[p][b] == int(RS.DELETION_SUCCESSFUL)),
                                     RS.NON_EXISTENT)
                self._set_pstate(t, p, z3.And(d, z3.Not(a.none[p])), PS.NON_EXISTENT)
                z = t.zk[p]
                z.leader = ite(d, I(0), z.leader)
                z.isr = {b: ite(d, B(False), x) for b, x in z.isr.items()}
                z.leader_epoch = ite(d, I(0), z.leader_epoch)
                z.version = ite(d, I(0), z.version)
                t.ops.part_epoch = tuple(ite(d, I(0), x) if q == p else x for q, x in enumerate(t.ops.part_epoch))
                t.ops.preferred = tuple(ite(d, B(False), x) if q == p else x for q, x in enumerate(t.ops.preferred))
                ta = t.ops.admin
                ta.exists = tuple(ite(d, B(False), x) if q == p else x for q, x in enumerate(ta.exists))
            t.ops.admin.deleting = tuple(B(False) for _ in a.deleting)
            self.enc.broadcast_metadata(t, True)
        guard = z3.And(s.ops.zk_epoch == e, z3.Or(a.deleting), self.deletion_started(s), self.deletion_complete(s))
        return Instance("CompleteTopicDeletion", (e,), "CompleteTopicDeletion", guard, t)

    def delete_delivery(self, s: SymState, b: int, k: int, name: str, args: tuple, extra: Any,
                        budget: str | None) -> Instance:
        """A StopReplica that deletes: the replica is gone (None) and the controller's replica moves
        DeletionStarted -> DeletionSuccessful."""
        q = s.inbox[b].slots[k]

        def gone(t: SymState, p: int, c: z3.BoolRef) -> None:
            ta = t.ops.admin
            ta.hosted = tuple({m: (ite(c, B(False), x) if (r == p and m == b) else x) for m, x in h.items()}
                              for r, h in enumerate(ta.hosted))
            self._set_rstate(t, p, b, z3.And(c, s.ops.admin.rstate[p][b] == int(RS.DELETION_STARTED)),
                             RS.DELETION_SUCCESSFUL)

        t = deleting_delivery(self.enc, self.ops, s, b, k, budget, self.enc.AR, gone)
        guard = z3.And(s.alive[b], s.inbox[b].length > k, q.kind == REQ_STOP, self.is_delete(s, b, k),
                       self.ops.accepts(s, b, k), extra)
        return Instance(name, args, f"{name}: StopReplica (delete)", guard, t)

    def instances(self, s: SymState) -> list[Instance]:
        """CreateTopic, or the deletion actions, for each epoch the active controller can have (here:
        one), and the deliveries of a deleting StopReplica."""
        o = self.enc.cfg.operations
        out: list[Instance] = []
        if o.topic_creation:
            out += [self.create_topic(s, e) for e in self.ops.active_epochs()]
        if o.topic_deletions:
            for e in self.ops.active_epochs():
                out += [self.start_deletion(s, e), self.complete_deletion(s, e)]
            out.append(self.request_deletion(s))
            for b in self.enc.brokers():
                out += [self.delete_delivery(s, b, *slot) for slot in self.enc.delivery_slots(s, b)]
        return out


__all__ = ["SymAdmin", "Admin", "needs_admin", "admin_unsupported"]
