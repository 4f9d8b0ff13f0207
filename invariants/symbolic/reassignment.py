"""Reassignment in the symbolic encoding: its state and controller-side logic (specs/08-symbolic.md).

The 12-step reassignment makes a partition's AR change, so the encoding cannot keep AR as the
constant ``Encoding.AR``. This module holds what the model keeps about a reassignment, as z3 terms
(``SymReassign``, hung on ``operations.SymOps.reassign``), the controller's decisions over it,
and the encoding's reassignment actions, transcribed from ``model/controller.py``,
``model/actions.py``, ``model/selectors.py`` and ``model/broker.py``: RequestReassignment, the 12
steps of ReassignPartition for the active controller and, with controller failover, for a deposed
one from its own memory (its step, OAR, RAR and replica states are state too, swapped in while it
acts: ``SymReassign.swap_contexts``), a refused write ending a step as controller.Fenced does, the
deleting StopReplica of step 9, and the hooks the base encoding calls (the AR a LeaderAndIsr
carries, the leader's ``assigned`` mask that gates Fetch, which broker hosts a replica, the
controller's replica states in a broker change and a failover). Every replica move is checked
against the table first, so a step the model refuses with IllegalTransition is flagged
(``SymState.illegal``: OnlyValidTransitions).

**Lists as numbers.** Every replica list a reassignment can produce for partition ``p`` is known
before the search: the initial AR, the targets of the configuration's requests for ``p``, and the
closure under step 1 (AR := AR + (target - AR)) and step 10 (AR := target). :func:`list_table`
numbers them, 0 being the empty list; ZooKeeper's AR, the pending request
(``/admin/reassign_partitions``), the ghost's origin, and the controller's OAR and RAR are each one
such number. Membership, the union of step 1 and "the first replica of a list that ..." are
case splits over the table, so every answer is exact.

**Universe.** :func:`universe` is every broker that can ever be assigned ``p`` (the initial AR,
then the new brokers of each target in request order): the set the base encoding's per-replica
dictionaries range over (``Encoding.U``); an unhosted replica holds a fresh replica's fields.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import z3

from isrcheck.model.config import Config
from isrcheck.model.state import LeaderAndIsr, State, StopReplica
from isrcheck.model.tables import ReplicaState as RS

from isrcheck.specs.protocol import REASSIGNMENT_STEPS, step_number

from .instance import ControllerContext, Encoder, Instance, deleting_delivery
from .logic import number, truth
from .types import REQ_LAI, REQ_STOP, as_bool, check_replica_move, decode_mask, fresh_name, num, numval, SymState

B = z3.BoolVal
I = numval  # noqa: E741

List = tuple[int, ...]

# The reassignment steps the logic below names, numbered by specs/protocol.toml (step n is
# REASSIGNMENT_STEPS[n - 1]), as model/controller.py numbers them; ``step`` holds the number of the
# next step, 0 for none.
STEP_START = step_number("start")
STEP_CAUGHT_UP = step_number("caught-up")
STEP_AR_IN_MEMORY = step_number("ar-in-memory")
STEP_AR_IN_ZK = step_number("ar-in-zk")
STEP_CLEAR_REQUEST = step_number("clear-request")
LAST_STEP = len(REASSIGNMENT_STEPS)


# ============================================================================ static tables
def targets_of(cfg: Config, p: int) -> list[List]:
    """The configuration's reassignment targets for partition ``p``, in request order."""
    return [tuple(r.target) for r in cfg.operations.reassignments if r.partition == p]


def list_table(cfg: Config, p: int) -> tuple[List, ...]:
    """Every replica list partition ``p``'s reassignments can produce; index 0 is ``()``.

    Closed under step 1 (``current + target - current``) and step 10 (``target``), for every
    target of ``p`` and every list already in the table, whatever the order of the steps (a
    deposed controller may write a stale target late)."""
    table: list[List] = [(), tuple(cfg.replicas_of(p))]
    targets = targets_of(cfg, p)
    for t in targets:
        if t not in table:
            table.append(t)
    i = 1
    while i < len(table):
        cur = table[i]
        for t in targets:
            u = cur + tuple(r for r in t if r not in cur)
            if u not in table:
                table.append(u)
        i += 1
    return tuple(table)


def universe(cfg: Config, p: int) -> List:
    """Every broker that can be assigned ``p``: the initial AR, then each target's new brokers."""
    out = list(cfg.replicas_of(p))
    for t in targets_of(cfg, p):
        out += [r for r in t if r not in out]
    return tuple(out)


# ============================================================================ state
@dataclass
class SymReassign:
    """What the model keeps about reassignments (one controller), as z3 numbers.

    Lists are indices into :func:`list_table` (0: empty). With the broker side (the encoding's
    state, ``queue`` > 0 in :meth:`Reassignment.fresh`) also each replica's ``assigned`` mask over
    the universe (the AR of the leader's last LeaderAndIsr, all False for a follower) and, per
    queued request, the index of the AR a LeaderAndIsr carries (0 for other requests): both stop
    being functions of a constant AR once a reassignment runs."""

    ar: tuple[z3.ArithRef, ...]  # ZooKeeper's AR per partition (zk.partitions[p].replicas)
    target: tuple[z3.ArithRef, ...]  # /admin/reassign_partitions per partition (zk.reassign[p])
    origin: tuple[z3.ArithRef, ...]  # ghost: AR when the pending request was made
    requested: z3.ArithRef  # how many of the configuration's requests have been made
    step: tuple[z3.ArithRef, ...]  # the controller's reassign_step (0 idle, else the next step)
    old: tuple[z3.ArithRef, ...]  # the controller's OAR
    new: tuple[z3.ArithRef, ...]  # the controller's RAR
    # broker side (empty unless requested): replica.assigned per partition, broker, member
    assigned: tuple[dict[int, dict[int, z3.BoolRef]], ...] = ()
    # the AR (index into the request's partition's table) each queued request carries, per broker
    req_list: dict[int, tuple[z3.ArithRef, ...]] | None = None
    # the controller's replica state (a ReplicaState number) and whether the broker hosts the
    # replica, per partition and broker of the universe; whether each queued StopReplica deletes
    rstate: tuple[dict[int, z3.ArithRef], ...] = ()
    hosted: tuple[dict[int, z3.BoolRef], ...] = ()
    req_del: dict[int, tuple[z3.BoolRef, ...]] | None = None
    owner: Any = None  # the Reassignment whose tables the numbers index (not a leaf)
    # the deposed controller's own step, OAR, RAR and replica states (with controller failover;
    # all 0 while there is none): it carries on from its own memory until it resigns
    stale_step: tuple[z3.ArithRef, ...] = ()
    stale_old: tuple[z3.ArithRef, ...] = ()
    stale_new: tuple[z3.ArithRef, ...] = ()
    stale_rstate: tuple[dict[int, z3.ArithRef], ...] = ()

    @classmethod
    def fresh(cls, partitions: int, prefix: str, universes: tuple[tuple[int, ...], ...] = (),
              brokers: int = 0, queue: int = 0, failover: bool = False) -> SymReassign:
        def iv(n: str) -> z3.ArithRef:
            return num(fresh_name(f"{prefix}.{n}"))

        def bv(n: str) -> z3.BoolRef:
            return z3.Bool(fresh_name(f"{prefix}.{n}"))

        P = range(partitions)
        assigned: tuple[dict[int, dict[int, z3.BoolRef]], ...] = ()
        req_list = None
        if queue:
            assigned = tuple({b: {m: bv(f"r{p}.{b}.assigned{m}") for m in u} for b in u}
                             for p, u in enumerate(universes))
            req_list = {b: tuple(iv(f"q{b}.{i}.replicas") for i in range(queue)) for b in range(1, brokers + 1)}
            rstate = tuple({b: iv(f"r{p}.{b}.rstate") for b in u} for p, u in enumerate(universes))
            hosted = tuple({b: bv(f"r{p}.{b}.hosted") for b in u} for p, u in enumerate(universes))
            req_del = {b: tuple(bv(f"q{b}.{i}.delete") for i in range(queue)) for b in range(1, brokers + 1)}
            out = cls(ar=tuple(iv(f"ar{p}") for p in P), target=tuple(iv(f"rtarget{p}") for p in P),
                      origin=tuple(iv(f"rorigin{p}") for p in P), requested=iv("rrequested"),
                      step=tuple(iv(f"rstep{p}") for p in P), old=tuple(iv(f"oar{p}") for p in P),
                      new=tuple(iv(f"rar{p}") for p in P), assigned=assigned, req_list=req_list)
            out.rstate, out.hosted, out.req_del = rstate, hosted, req_del
            if failover:
                out.stale_step = tuple(iv(f"stale.rstep{p}") for p in P)
                out.stale_old = tuple(iv(f"stale.oar{p}") for p in P)
                out.stale_new = tuple(iv(f"stale.rar{p}") for p in P)
                out.stale_rstate = tuple({b: iv(f"stale.r{p}.{b}.rstate") for b in u} for p, u in enumerate(universes))
            return out
        return cls(ar=tuple(iv(f"ar{p}") for p in P), target=tuple(iv(f"rtarget{p}") for p in P),
                   origin=tuple(iv(f"rorigin{p}") for p in P), requested=iv("rrequested"),
                   step=tuple(iv(f"rstep{p}") for p in P), old=tuple(iv(f"oar{p}") for p in P),
                   new=tuple(iv(f"rar{p}") for p in P), assigned=assigned, req_list=req_list)

    def leaves(self) -> list[z3.ExprRef]:
        out = [*self.ar, *self.target, *self.origin, self.requested, *self.step, *self.old, *self.new]
        for row in self.assigned:
            for b in sorted(row):
                out += [row[b][m] for m in sorted(row[b])]
        if self.req_list is not None:
            for b in sorted(self.req_list):
                out += self.req_list[b]
        for row in self.rstate:
            out += [row[b] for b in sorted(row)]
        for row in self.hosted:
            out += [row[b] for b in sorted(row)]
        if self.req_del is not None:
            for b in sorted(self.req_del):
                out += self.req_del[b]
        out += [*self.stale_step, *self.stale_old, *self.stale_new]
        for row in self.stale_rstate:
            out += [row[b] for b in sorted(row)]
        return out

    def rebuild(self, nx: Callable[[], Any]) -> SymReassign:
        n = len(self.ar)

        def row() -> tuple:
            return tuple(nx() for _ in range(n))

        ar, target, origin = row(), row(), row()
        requested = nx()
        step, old, new = row(), row(), row()
        assigned = tuple({b: {m: nx() for m in sorted(r[b])} for b in sorted(r)} for r in self.assigned)
        req_list = (None if self.req_list is None
                    else {b: tuple(nx() for _ in self.req_list[b]) for b in sorted(self.req_list)})
        rstate = tuple({b: nx() for b in sorted(row)} for row in self.rstate)
        hosted = tuple({b: nx() for b in sorted(row)} for row in self.hosted)
        req_del = (None if self.req_del is None
                   else {b: tuple(nx() for _ in self.req_del[b]) for b in sorted(self.req_del)})
        stale_step = tuple(nx() for _ in self.stale_step)
        stale_old = tuple(nx() for _ in self.stale_old)
        stale_new = tuple(nx() for _ in self.stale_new)
        stale_rstate = tuple({b: nx() for b in sorted(row)} for row in self.stale_rstate)
        return SymReassign(ar, target, origin, requested, step, old, new, assigned, req_list, rstate, hosted,
                           req_del, self.owner, stale_step, stale_old, stale_new, stale_rstate)

    def swap_contexts(self) -> None:
        """Exchange the active controller's fields with the deposed one's (operations.as_stale)."""
        self.step, self.stale_step = self.stale_step, self.step
        self.old, self.stale_old = self.stale_old, self.old
        self.new, self.stale_new = self.stale_new, self.new
        self.rstate, self.stale_rstate = self.stale_rstate, self.rstate

    def clone(self) -> SymReassign:
        it = iter(self.leaves())
        return self.rebuild(lambda: next(it))


@dataclass
class _StepView:
    """What every step of :meth:`Reassignment._step` reads: the state before (``s``) and the one
    being built (``t``), partition ``p``'s reassignment fields, universe and znode, and whether the
    znode exists (``version``), the acting controller's writes are refused (``fenced``) and each
    broker is in RAR (``in_new``) and OAR (``in_old``)."""

    enc: Encoder
    s: SymState
    t: SymState
    p: int
    r: SymReassign
    U: List
    z: Any
    version: Any
    fenced: Any
    in_new: dict[int, Any]
    in_old: dict[int, Any]


class Reassignment:
    """The reassignment tables and transcribed controller logic for one configuration."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.P = cfg.partitions
        self.N = cfg.brokers
        self.tables = tuple(list_table(cfg, p) for p in range(self.P))
        self.U = tuple(universe(cfg, p) for p in range(self.P))
        self.requests = tuple((r.partition, tuple(r.target)) for r in cfg.operations.reassignments)
        self.failovers = cfg.faults.controller_failovers > 0

    def fresh(self, prefix: str, queue: int = 0) -> SymReassign:
        """The controller side; with ``queue`` > 0 also the broker side (see :class:`SymReassign`)."""
        out = SymReassign.fresh(self.P, prefix, self.U, self.N, queue, failover=self.failovers and queue > 0)
        out.owner = self
        return out

    # ------------------------------------------------------------------ concrete <-> symbolic
    def index(self, p: int, lst: List) -> int:
        try:
            return self.tables[p].index(tuple(lst))
        except ValueError:
            raise ValueError(f"partition {p}'s replica list {list(lst)} is not in the reassignment table "
                             f"{[list(x) for x in self.tables[p]]}") from None

    def values_of(self, r: SymReassign, s: State) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        c = s.controller
        done = len(self.requests) - len(s.reassignments)
        pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = [(r.requested, I(done))]
        for p in range(self.P):
            pairs += [(r.ar[p], I(self.index(p, s.zk.partitions[p].replicas))),
                      (r.target[p], I(self.index(p, s.zk.reassign[p]))),
                      (r.origin[p], I(self.index(p, s.ghost[p].reassign_origin))),
                      (r.step[p], I(c.reassign_step[p])),
                      (r.old[p], I(self.index(p, c.reassign_old[p]))),
                      (r.new[p], I(self.index(p, c.reassign_new[p])))]
            for b, row in (r.assigned[p].items() if r.assigned else ()):
                rep = s.brokers[b - 1].replicas[p]
                mask = rep.assigned if rep is not None else 0
                pairs += [(x, z3.BoolVal(bool(mask >> m & 1))) for m, x in row.items()]
        for b, xs in (r.req_list or {}).items():
            reqs = s.inbox[b - 1]
            for i, x in enumerate(xs):
                req = reqs[i] if i < len(reqs) else None
                lst = req.replicas if isinstance(req, LeaderAndIsr) else ()
                pairs.append((x, I(self.index(req.partition, lst) if lst else 0)))
        for p, row in enumerate(r.rstate):
            pairs += [(x, I(int(c.replica_states[p][b - 1]))) for b, x in row.items()]
        for p, row in enumerate(r.hosted):
            pairs += [(x, z3.BoolVal(s.brokers[b - 1].replicas[p] is not None)) for b, x in row.items()]
        for b, xs in (r.req_del or {}).items():
            reqs = s.inbox[b - 1]
            pairs += [(x, z3.BoolVal(i < len(reqs) and isinstance(reqs[i], StopReplica) and reqs[i].delete))
                      for i, x in enumerate(xs)]
        if r.stale_step:  # the deposed controller's memory, all 0 when there is none
            st = s.stale
            for p in range(self.P):
                pairs += [(r.stale_step[p], I(st.reassign_step[p] if st else 0)),
                          (r.stale_old[p], I(self.index(p, st.reassign_old[p]) if st else 0)),
                          (r.stale_new[p], I(self.index(p, st.reassign_new[p]) if st else 0))]
                pairs += [(x, I(int(st.replica_states[p][b - 1]) if st else 0)) for b, x in r.stale_rstate[p].items()]
        return pairs

    def decode(self, model: z3.ModelRef, r: SymReassign, st: State) -> State:
        """``st`` with the reassignment fields a z3 model gives ``r``."""
        def iv(t: z3.ExprRef) -> int:
            return number(model, t)

        def lst(p: int, t: z3.ExprRef) -> List:
            k = iv(t)
            return self.tables[p][k] if 0 <= k < len(self.tables[p]) else ()

        P = range(self.P)
        parts = tuple(zp._replace(replicas=lst(p, r.ar[p])) for p, zp in enumerate(st.zk.partitions))
        zk = st.zk._replace(partitions=parts, reassign=tuple(lst(p, r.target[p]) for p in P))
        ghost = tuple(g._replace(reassign_origin=lst(p, r.origin[p])) for p, g in enumerate(st.ghost))
        c = st.controller._replace(reassign_step=tuple(iv(r.step[p]) for p in P),
                                   reassign_old=tuple(lst(p, r.old[p]) for p in P),
                                   reassign_new=tuple(lst(p, r.new[p]) for p in P))
        k = max(0, min(iv(r.requested), len(self.requests)))
        out = st._replace(zk=zk, ghost=ghost, controller=c, reassignments=self.requests[k:])
        if r.assigned:
            brokers = tuple(br._replace(replicas=tuple(
                rep if rep is None or (b + 1) not in r.assigned[p]
                else rep._replace(assigned=decode_mask(model, r.assigned[p][b + 1]))
                for p, rep in enumerate(br.replicas))) for b, br in enumerate(out.brokers))
            out = out._replace(brokers=brokers)
        if r.req_list is not None:
            inbox = tuple(tuple(
                req._replace(replicas=lst(req.partition, r.req_list[b + 1][i]))
                if isinstance(req, LeaderAndIsr) and 0 <= req.partition < self.P else req
                for i, req in enumerate(q)) for b, q in enumerate(out.inbox))
            out = out._replace(inbox=inbox)
        if r.req_del is not None:
            inbox = tuple(tuple(req._replace(delete=truth(model, r.req_del[b + 1][i]))
                                if isinstance(req, StopReplica) else req
                                for i, req in enumerate(q)) for b, q in enumerate(out.inbox))
            out = out._replace(inbox=inbox)
        if r.rstate:
            rs = tuple(tuple(RS(iv(r.rstate[p][b])) if b in r.rstate[p] else row[b - 1]
                             for b in range(1, len(row) + 1))
                       for p, row in enumerate(out.controller.replica_states))
            out = out._replace(controller=out.controller._replace(replica_states=rs))
            brokers = tuple(br._replace(replicas=tuple(
                None if (b + 1) in r.hosted[p] and not truth(model, r.hosted[p][b + 1]) else rep
                for p, rep in enumerate(br.replicas))) for b, br in enumerate(out.brokers))
            out = out._replace(brokers=brokers)
        if r.stale_step and out.stale is not None:
            sc = out.stale
            rs = tuple(tuple(RS(iv(r.stale_rstate[p][b])) if b in r.stale_rstate[p] else row[b - 1]
                             for b in range(1, len(row) + 1)) for p, row in enumerate(sc.replica_states))
            out = out._replace(stale=sc._replace(
                reassign_step=tuple(iv(r.stale_step[p]) for p in P),
                reassign_old=tuple(lst(p, r.stale_old[p]) for p in P),
                reassign_new=tuple(lst(p, r.stale_new[p]) for p in P), replica_states=rs))
        return out

    # ------------------------------------------------------------------ lists as case splits
    def _case(self, p: int, idx: z3.ArithRef, f: Callable[[List], Any], default: Any) -> Any:
        """``f(table[idx])`` as one term (``default`` outside the table)."""
        out = default
        for k in reversed(range(len(self.tables[p]))):
            out = z3.If(idx == k, f(self.tables[p][k]), out)
        return out

    def member(self, p: int, idx: z3.ArithRef, b: int) -> z3.BoolRef:
        """Broker ``b`` is in list ``idx``."""
        ks = [k for k, lst in enumerate(self.tables[p]) if b in lst]
        return z3.Or([idx == k for k in ks]) if ks else B(False)

    def is_empty(self, idx: z3.ArithRef) -> z3.BoolRef:
        return idx == 0

    def first_of(self, p: int, idx: z3.ArithRef, cond: dict[int, Any]) -> z3.ArithRef:
        """The first broker of list ``idx`` for which ``cond`` holds, 0 if none."""
        def first(lst: List) -> z3.ArithRef:
            out: z3.ArithRef = I(0)
            for b in reversed(lst):
                out = z3.If(cond[b], I(b), out)
            return out
        return self._case(p, idx, first, I(0))

    def head(self, p: int, idx: z3.ArithRef) -> z3.ArithRef:
        return self._case(p, idx, lambda lst: I(lst[0] if lst else 0), I(0))

    def union(self, p: int, cur: z3.ArithRef, tgt: z3.ArithRef) -> z3.ArithRef:
        """Step 1's ``current + (target - current)`` (both in the table, so is the result)."""
        tab = self.tables[p]
        out: z3.ArithRef = cur
        for i, c in enumerate(tab):
            for j, t in enumerate(tab):
                u = c + tuple(r for r in t if r not in c)
                if u in tab:
                    out = z3.If(z3.And(cur == i, tgt == j), I(tab.index(u)), out)
        return out

    # ------------------------------------------------------------------ controller logic
    def assignment(self, r: SymReassign, p: int) -> z3.ArithRef:
        """controller.assignment: ZooKeeper's AR, except RAR once step ar-in-memory set it in memory."""
        return z3.If(r.step[p] > STEP_AR_IN_MEMORY, r.new[p], r.ar[p])

    def step_enabled(self, r: SymReassign, p: int, isr: dict[int, Any], deleting: Any = False,
                     created: Any = True, active: Any = True) -> z3.BoolRef:
        """actions.enabled_actions' condition for ReassignPartition on ``p`` together with
        controller.reassignment_step_enabled (``isr``: ZooKeeper's ISR over :func:`universe`)."""
        st = r.step[p]
        start = z3.And(active, r.target[p] != 0, r.ar[p] != 0, z3.Not(deleting), created)
        caught_up = z3.And([z3.Implies(self.member(p, r.new[p], b), isr.get(b, B(False))) for b in self.U[p]])
        return z3.If(z3.Or(st == 0, st == STEP_START), start, z3.If(st == STEP_CAUGHT_UP, caught_up, B(True)))

    def reassigned_partition(self, r: SymReassign, p: int, live: dict[int, Any],
                             isr: dict[int, Any]) -> tuple[z3.BoolRef, z3.ArithRef]:
        """The ReassignedPartition selector over RAR: (it finds a leader, the leader). The new ISR is
        the current one and LeaderAndIsr goes to RAR."""
        cand = {b: z3.And(live.get(b, B(False)), isr.get(b, B(False))) for b in self.U[p]}
        leader = self.first_of(p, r.new[p], cand)
        return leader != 0, leader

    def request(self, r: SymReassign, zk_exists: Any = True, deleting: Any = False) -> list[tuple[int, List, z3.BoolRef,
                                                                                                  SymReassign]]:
        """RequestReassignment(p, target) for the next configured request: (p, target, guard, after)."""
        out = []
        for k, (p, tgt) in enumerate(self.requests):
            t = r.clone()
            t.requested = r.requested + 1
            t.target = tuple(I(self.index(p, tgt)) if q == p else x for q, x in enumerate(r.target))
            t.origin = tuple(r.ar[p] if q == p else x for q, x in enumerate(r.origin))
            guard = z3.And(r.requested == k, r.ar[p] != 0, r.target[p] == 0, z3.Not(deleting), zk_exists)
            out.append((p, tgt, guard, t))
        return out

    def bookkeeping(self, r: SymReassign, p: int, live: dict[int, Any], fenced: Any = False) -> SymReassign:
        """The reassignment fields after one ReassignPartition step of ``p``: step numbers, OAR/RAR,
        AR in ZooKeeper (steps 1 and 10), the request (dropped by step 1 when it cannot start, by
        step 11 when done). ``fenced``: the step was refused a write (controller.Fenced), so the
        controller gives up (step 0) and steps 10 and 11 write nothing; OAR and RAR stay as they
        were. The moves, elections and requests of the steps are not here."""
        t = r.clone()
        st = r.step[p]
        starting = z3.Or(st == 0, st == STEP_START)
        gone = r.target[p] == 0
        dead_target = z3.Or([z3.And(self.member(p, r.target[p], b), z3.Not(live.get(b, B(False))))
                             for b in self.U[p]] or [B(False)])
        give_up = z3.And(starting, z3.Not(gone), z3.Or(r.target[p] == r.ar[p], dead_target))
        start = z3.And(starting, z3.Not(gone), z3.Not(give_up))
        fenced = as_bool(fenced)
        drop = z3.Or(give_up, z3.And(st == STEP_CLEAR_REQUEST, z3.Not(fenced)))

        def upd(xs: tuple, v: Any, cond: Any) -> tuple:
            return tuple(z3.If(cond, v, x) if q == p else x for q, x in enumerate(xs))

        nxt = z3.If(starting, z3.If(start, I(STEP_START + 1), I(0)), z3.If(z3.Or(st == LAST_STEP, fenced), I(0), st + 1))
        t.step = upd(r.step, nxt, B(True))
        t.old = upd(r.old, z3.If(start, r.ar[p], z3.If(st == LAST_STEP, I(0), r.old[p])), B(True))
        t.new = upd(r.new, z3.If(start, r.target[p], z3.If(st == LAST_STEP, I(0), r.new[p])), B(True))
        t.ar = upd(r.ar, z3.If(start, self.union(p, r.ar[p], r.target[p]),
                               z3.If(z3.And(st == STEP_AR_IN_ZK, z3.Not(fenced)), r.new[p], r.ar[p])), B(True))
        t.target = upd(r.target, I(0), drop)
        t.origin = upd(r.origin, I(0), drop)
        return t

    # ------------------------------------------------------------------ broker side: request queues
    def sent(self, r: SymReassign, b: int, cond: Any, at: z3.ArithRef, lai: bool, p: int,
             delete: bool = False) -> None:
        """A request was queued at ``at`` of ``b``'s queue: a LeaderAndIsr of ``p`` carries the
        controller's view of AR (controller.send_leader_and_isr), other requests none."""
        if r.req_list is None:
            return
        v = self.assignment(r, p) if lai else I(0)
        r.req_list[b] = tuple(z3.If(z3.And(cond, at == i), v, x) for i, x in enumerate(r.req_list[b]))
        assert r.req_del is not None
        r.req_del[b] = tuple(z3.If(z3.And(cond, at == i), B(delete), x) for i, x in enumerate(r.req_del[b]))

    def popped(self, r: SymReassign, b: int, k: int) -> None:
        if r.req_list is None:
            return
        xs = r.req_list[b]
        r.req_list[b] = tuple(xs[:k]) + tuple(xs[k + 1:]) + (I(0),)
        assert r.req_del is not None
        ds = r.req_del[b]
        r.req_del[b] = tuple(ds[:k]) + tuple(ds[k + 1:]) + (B(False),)

    def crashed(self, r: SymReassign, b: int) -> None:
        """broker.crash: the queue is gone and no replica leads (``assigned`` 0)."""
        if r.req_list is not None:
            r.req_list[b] = tuple(I(0) for _ in r.req_list[b])
        if r.req_del is not None:
            r.req_del[b] = tuple(B(False) for _ in r.req_del[b])
        for row in r.assigned:
            if b in row:
                row[b] = {m: B(False) for m in row[b]}

    # ------------------------------------------------------------------ broker side: the leader's AR
    def became_leader(self, r: SymReassign, p: int, b: int, carried: z3.ArithRef) -> None:
        """broker._become_leader: ``assigned`` := the AR of the LeaderAndIsr (``carried``)."""
        if r.assigned:
            r.assigned[p][b] = {m: self.member(p, carried, m) for m in r.assigned[p][b]}

    def became_follower(self, r: SymReassign, p: int, b: int) -> None:
        """A follower's replica keeps no assignment (``assigned`` 0)."""
        if r.assigned:
            r.assigned[p][b] = {m: B(False) for m in r.assigned[p][b]}

    # ------------------------------------------------------------------ the encoding's actions
    def set_rstate(self, t: SymState, p: int, b: int, cond: Any, target: RS) -> None:
        row = t.ops.reassign.rstate[p]
        row[b] = z3.If(cond, I(int(target)), row[b]) if cond is not True else I(int(target))

    def hosts(self, t: SymState, p: int, b: int, cond: Any) -> None:
        """A LeaderAndIsr for ``p`` delivered to ``b`` creates the replica (startReplica)."""
        row = t.ops.reassign.hosted[p]
        if b in row:
            row[b] = z3.Or(row[b], cond)

    def step_instances(self, enc: Encoder, s: SymState, e: int, p: int) -> list[Instance]:
        """ReassignPartition(e, p, k) for every step k (1..LAST_STEP): controller.reassignment_step of
        the active controller (epoch ``e``), one instance per step, the guards exclusive."""
        r = s.ops.reassign
        isr = dict(s.zk[p].isr)
        enabled = z3.And(s.ops.zk_epoch == e, self.step_enabled(r, p, isr))
        out = []
        for k in range(1, LAST_STEP + 1):
            due = z3.Or(r.step[p] == 0, r.step[p] == STEP_START) if k == STEP_START else r.step[p] == k
            t = s.clone()
            self._step(enc, s, t, p, k)
            out.append(Instance("ReassignPartition", (e, p, k), f"ReassignPartition: step {k}",
                                z3.And(enabled, due), t))
        return out

    def stale_step_instances(self, enc: Encoder, s: SymState, e: int, p: int) -> list[Instance]:
        """ReassignPartition(e, p, k) for the deposed controller of epoch ``e``, from its own step
        number, OAR and RAR (every step after start: only the active controller starts or resumes one)."""
        out = []
        for k in range(STEP_START + 1, LAST_STEP + 1):
            def build(tmp: SymState, k: int = k) -> tuple[z3.BoolRef, SymState]:
                r = tmp.ops.reassign
                t = tmp.clone()
                self._step(enc, tmp, t, p, k)
                return z3.And(r.step[p] == k, self.step_enabled(r, p, isr_of(tmp, p), active=False)), t
            out.append(_controller(enc).stale_instance(s, "ReassignPartition", (e, p, k),
                                                       f"ReassignPartition: step {k}", e, build))
        return out

    # ------------------------------------------------------------------ controller failover
    def failover(self, s: SymState, t: SymState, keep: bool) -> None:
        """_controller_failover: the active controller's memory becomes the deposed one's (or is
        dropped), and the new controller starts from ZooKeeper: no reassignment step yet (see
        :meth:`resume`), each replica of ZooKeeper's AR Online or Offline by its broker's
        registration, every other replica NonExistent."""
        r, tr = s.ops.reassign, t.ops.reassign
        zero = I(0)
        tr.stale_step = tuple(x if keep else zero for x in r.step)
        tr.stale_old = tuple(x if keep else zero for x in r.old)
        tr.stale_new = tuple(x if keep else zero for x in r.new)
        tr.stale_rstate = tuple({b: (x if keep else zero) for b, x in row.items()} for row in r.rstate)
        tr.step = tuple(zero for _ in r.step)
        tr.old = tuple(zero for _ in r.old)
        tr.new = tuple(zero for _ in r.new)
        tr.rstate = tuple({b: z3.If(self.member(p, r.ar[p], b),
                                    z3.If(s.alive[b], I(int(RS.ONLINE)), I(int(RS.OFFLINE))), I(int(RS.NON_EXISTENT)))
                           for b in row} for p, row in enumerate(r.rstate))

    def resume(self, t: SymState) -> None:
        """on_controller_failover's last step: a pending request resumes at step start."""
        tr = t.ops.reassign
        tr.step = tuple(z3.If(z3.And(tr.target[p] != 0, tr.ar[p] != 0), I(STEP_START), I(0)) for p in range(self.P))

    def resigned(self, t: SymState) -> None:
        tr = t.ops.reassign
        tr.stale_step = tuple(I(0) for _ in tr.stale_step)
        tr.stale_old = tuple(I(0) for _ in tr.stale_old)
        tr.stale_new = tuple(I(0) for _ in tr.stale_new)
        tr.stale_rstate = tuple({b: I(0) for b in row} for row in tr.stale_rstate)

    def _step(self, enc: Encoder, s: SymState, t: SymState, p: int, k: int) -> None:
        """The sends, writes and moves of step ``k`` (model/controller.py's function of the step
        called ``REASSIGNMENT_STEPS[k - 1]``: here the method ``_step_`` + that name, found by
        :func:`_step_method`), then the bookkeeping of :meth:`bookkeeping`.

        The acting controller (``enc.ops.acting``) may be a deposed one: a refused znode write
        (``fenced``, the same for the whole step, since a write of its own never makes a newer
        controller's mark) ends the step as controller.Fenced does. Every replica move is checked
        against the table first (``SymState.illegal``), as check_replica_move does before the move's
        own conditions (a leader cannot be a NewReplica, a fenced ISR removal)."""
        r = s.ops.reassign
        z = s.zk[p]
        v = _StepView(enc, s, t, p, r, self.U[p], z, z.version != 0, z3.Not(_unfenced(enc, t, p)),
                      {b: self.member(p, r.new[p], b) for b in self.U[p]},
                      {b: self.member(p, r.old[p], b) for b in self.U[p]})
        abort = _STEP_METHODS[k](self, v)
        book = self.bookkeeping(r, p, s.c_live, abort)
        tr = t.ops.reassign
        tr.ar, tr.target, tr.origin, tr.requested = book.ar, book.target, book.origin, book.requested
        tr.step, tr.old, tr.new = book.step, book.old, book.new

    # The steps: each returns when it ends as controller.Fenced does (``abort``; False: never). The
    # step's effect on the reassignment's own fields (AR, the request, OAR, RAR) is in bookkeeping().
    def _step_start(self, v: _StepView) -> Any:
        """AR := OAR + RAR, or give up (all in bookkeeping)."""
        return False

    def _bump(self, v: _StepView, bump: Any, to: dict[int, Any]) -> Any:
        """bump_leader_epoch (when ``bump``): the znode's leader epoch + 1, LeaderAndIsr to ``to``."""
        enc, s, t, p, z = v.enc, v.s, v.t, v.p, v.z
        do = z3.And(bump, z3.Not(v.fenced))
        enc.write_leader_isr(t, p, z.leader, dict(z.isr), do)
        for b in v.U:
            enc.send(t, b, REQ_LAI, p, z3.And(do, as_bool(to[b]), s.c_live[b]))
        return z3.And(bump, v.fenced)

    def _step_bump_epoch(self, v: _StepView) -> Any:
        """bump_leader_epoch to every replica of OAR + RAR."""
        return self._bump(v, v.version, {b: v.enc.in_assignment(v.t, v.p, b) for b in v.U})

    def _step_new_replicas(self, v: _StepView) -> Any:
        """RAR - OAR -> NewReplica (a leader cannot be new)."""
        enc, s, t, p, z, r = v.enc, v.s, v.t, v.p, v.z, v.r
        for b in v.U:
            moving = z3.And(v.in_new[b], z3.Not(v.in_old[b]))
            check_replica_move(t, moving, r.rstate[p][b], RS.NEW)
            do = z3.And(moving, z.leader != b)
            enc.send(t, b, REQ_LAI, p, z3.And(do, v.version, s.c_live[b]))
            self.set_rstate(t, p, b, do, RS.NEW)
        return False

    def _step_caught_up(self, v: _StepView) -> Any:
        """Enabled only once every RAR replica is in the ISR (step_enabled); does nothing."""
        return False

    def _step_online(self, v: _StepView) -> Any:
        """RAR -> OnlineReplica."""
        enc, s, t, p, r = v.enc, v.s, v.t, v.p, v.r
        for b in v.U:
            check_replica_move(t, v.in_new[b], r.rstate[p][b], RS.ONLINE)
            lai = z3.And(v.in_new[b], r.rstate[p][b] != int(RS.NEW), v.version, s.c_live[b])
            enc.send(t, b, REQ_LAI, p, lai)
            self.set_rstate(t, p, b, v.in_new[b], RS.ONLINE)
        return False

    def _step_ar_in_memory(self, v: _StepView) -> Any:
        """AR := RAR in the controller's memory: from the next step on assignment() answers RAR."""
        return False

    def _step_leader(self, v: _StepView) -> Any:
        """Elect from RAR if the leader is not in it or dead, else bump the leader epoch (to RAR)."""
        enc, s, t, p, z, r = v.enc, v.s, v.t, v.p, v.z, v.r
        leader_ok = z3.Or([z3.And(z.leader == b, v.in_new[b], s.c_live[b]) for b in v.U])
        found, leader = self.reassigned_partition(r, p, s.c_live, isr_of(s, p))
        elect = z3.And(z3.Not(leader_ok), found, z3.Not(v.fenced))  # partition_to swallows Fenced
        enc.write_leader_isr(t, p, leader, dict(z.isr), elect)
        for b in v.U:
            enc.send(t, b, REQ_LAI, p, z3.And(elect, v.in_new[b], s.c_live[b]))
        enc.broadcast_metadata(t, elect)
        t.partition_online = tuple(z3.Or(o, elect) if q == p else o for q, o in enumerate(t.partition_online))
        return self._bump(v, z3.And(leader_ok, v.version), v.in_new)

    def _step_old_offline(self, v: _StepView) -> Any:
        """OAR - RAR -> OfflineReplica, in OAR order (each ISR removal sees the last); a fenced ISR
        removal stops the loop (the StopReplica is already sent)."""
        enc, t, p, z, r = v.enc, v.t, v.p, v.z, v.r
        halts = []
        for idx, lst in enumerate(self.tables[p]):
            halted: Any = False
            for b in lst:
                go = z3.And(r.old[p] == idx, z3.Not(v.in_new[b]), z3.Not(as_bool(halted)))
                check_replica_move(t, go, r.rstate[p][b], RS.OFFLINE)
                enc.send(t, b, REQ_STOP, p, go)
                here = z3.And(go, v.fenced, v.version, z.isr[b])  # the write is tried, and refused
                moved = z3.And(go, z3.Not(here))
                enc.remove_from_isr(t, p, b, moved)
                self.set_rstate(t, p, b, moved, RS.OFFLINE)
                halted = z3.Or(as_bool(halted), here)
            halts.append(halted)
        return z3.Or([as_bool(h) for h in halts])

    def _step_old_deleted(self, v: _StepView) -> Any:
        """OAR - RAR: StopReplica with delete, then NonExistent."""
        enc, t, p, r = v.enc, v.t, v.p, v.r
        for b in v.U:
            do = z3.And(v.in_old[b], z3.Not(v.in_new[b]))
            check_replica_move(t, do, r.rstate[p][b], RS.DELETION_STARTED)  # the next two always pass
            enc.send(t, b, REQ_STOP, p, do, delete=True)
            self.set_rstate(t, p, b, do, RS.NON_EXISTENT)
        return False

    def _refused_write(self, v: _StepView) -> Any:
        """A ZooKeeper write (done in bookkeeping): refused only by fenced controller writes."""
        return as_bool(v.enc.ops.controller_fenced(v.t)) if v.enc.ops is not None else False

    def _step_ar_in_zk(self, v: _StepView) -> Any:
        """AR := RAR in ZooKeeper."""
        return self._refused_write(v)

    def _step_clear_request(self, v: _StepView) -> Any:
        """The request's removal from /admin/reassign_partitions."""
        return self._refused_write(v)

    def _step_metadata(self, v: _StepView) -> Any:
        """UpdateMetadata to every live broker."""
        v.enc.broadcast_metadata(v.t, B(True))
        return False

    def delete_delivery(self, enc: Encoder, s: SymState, b: int, k: int, name: str, args: tuple,
                        extra: Any, budget: str | None) -> Instance:
        """Step 9's StopReplica with delete delivered: the broker no longer hosts the replica (its
        fields those of a fresh replica); the controller's replica is already NonExistent."""
        ctl = _controller(enc)
        q = s.inbox[b].slots[k]

        def gone(t: SymState, p: int, c: z3.BoolRef) -> None:
            row = t.ops.reassign.hosted[p]
            row[b] = z3.And(row[b], z3.Not(c))
            t.ops.reassign.assigned[p][b] = {m: z3.And(x, z3.Not(c)) for m, x in t.ops.reassign.assigned[p][b].items()}

        t = deleting_delivery(enc, ctl, s, b, k, budget, self.U, gone)
        guard = z3.And(s.alive[b], s.inbox[b].length > k, q.kind == REQ_STOP, s.ops.reassign.req_del[b][k],
                       ctl.accepts(s, b, k), extra)
        return Instance(name, args, f"{name}: StopReplica (delete)", guard, t)

    def instances(self, enc: Encoder, s: SymState) -> list[Instance]:
        """The reassignment steps of the active controller and the deliveries of a deleting
        StopReplica (RequestReassignment is added by operations.py, in the model's order)."""
        ctl = _controller(enc)
        out: list[Instance] = []
        for e in ctl.active_epochs():
            for p in range(self.P):
                out += self.step_instances(enc, s, e, p)
        for e in ctl.stale_epochs():
            for p in range(self.P):
                out += self.stale_step_instances(enc, s, e, p)
        for b in enc.brokers():
            out += [self.delete_delivery(enc, s, b, *slot) for slot in enc.delivery_slots(s, b)]
        return out

    # ------------------------------------------------------------------ the broker change
    def startup_replica(self, t: SymState, p: int, b: int, came: Any) -> Any:
        """on_broker_startup for an assigned replica: Online unless NonExistent; LeaderAndIsr only if
        it was not New and the znode exists. Returns whether a LeaderAndIsr goes out."""
        if came is False:
            return False
        rs = t.ops.reassign.rstate[p][b]
        move = z3.And(came, rs != int(RS.NON_EXISTENT))
        check_replica_move(t, move, rs, RS.ONLINE)
        lai = z3.And(move, rs != int(RS.NEW), t.zk[p].version != 0)
        self.set_rstate(t, p, b, move, RS.ONLINE)
        return lai

    def resume_on_startup(self, t: SymState, came: dict[int, Any]) -> None:
        """on_broker_startup's last part (model/controller.py ``resume_reassignments_on``): a
        reassignment waiting at step caught-up with a target replica on a broker that came starts
        over from step start."""
        r = t.ops.reassign
        steps = []
        for p in range(self.P):
            back = [z3.And(as_bool(came[b]), self.member(p, r.new[p], b)) for b in self.U[p] if b in came]
            steps.append(z3.If(z3.And(r.step[p] == STEP_CAUGHT_UP, z3.Or(back)), I(STEP_START), r.step[p])
                         if back else r.step[p])
        r.step = tuple(steps)

    def failed_replica(self, t: SymState, p: int, b: int, left: Any) -> Any:
        """on_broker_failure for an assigned replica: Offline unless NonExistent (StopReplica, ISR
        removal). Returns whether it moves."""
        if left is False:
            return False
        rs = t.ops.reassign.rstate[p][b]
        move = z3.And(left, rs != int(RS.NON_EXISTENT))
        check_replica_move(t, move, rs, RS.OFFLINE)
        self.set_rstate(t, p, b, move, RS.OFFLINE)
        return move

    # ------------------------------------------------------------------ properties
    def isr_subset_of_replicas(self, r: SymReassign, zk_isr: tuple[dict[int, Any], ...]) -> z3.BoolRef:
        """IsrSubsetOfReplicas: the ISR in ZooKeeper contains only assigned replicas (a partition
        without AR is skipped)."""
        parts = []
        for p in range(self.P):
            for b in self.U[p]:
                parts.append(z3.Implies(z3.And(r.ar[p] != 0, zk_isr[p].get(b, B(False))), self.member(p, r.ar[p], b)))
        return z3.And(parts) if parts else B(True)

    def reassignment_recoverable(self, r: SymReassign) -> z3.BoolRef:
        """ReassignmentRecoverable: while a request is pending and AR is not yet its target, AR keeps
        every replica of the AR it was requested from."""
        parts = []
        for p in range(self.P):
            pending = z3.And(r.target[p] != 0, r.origin[p] != 0, r.ar[p] != r.target[p])
            for b in self.U[p]:
                parts.append(z3.Implies(z3.And(pending, self.member(p, r.origin[p], b)), self.member(p, r.ar[p], b)))
        return z3.And(parts) if parts else B(True)



StepMethod = Callable[[Reassignment, "_StepView"], Any]


def _step_method(name: str) -> StepMethod:
    """The method performing the step called ``name`` in specs/protocol.toml: ``_step_`` followed
    by the name with ``-`` as ``_`` (step "bump-epoch" is :meth:`Reassignment._step_bump_epoch`),
    as model/controller.py finds its step functions."""
    f = getattr(Reassignment, "_step_" + name.replace("-", "_"), None)
    if f is None:
        raise RuntimeError(f"specs/protocol.toml names the reassignment step {name!r}, which "
                           "invariants/symbolic/reassignment.py does not encode")
    return f  # type: ignore[no-any-return]


#: the method of step n (1..LAST_STEP), in the order of specs/protocol.toml
_STEP_METHODS: dict[int, StepMethod] = {n: _step_method(name) for n, name in enumerate(REASSIGNMENT_STEPS, start=1)}

def isr_of(s: SymState, p: int) -> dict[int, Any]:
    return dict(s.zk[p].isr)


def _unfenced(enc: Encoder, t: SymState, p: int) -> z3.BoolRef:
    return as_bool(enc.unfenced(t, p))


def _controller(enc: Encoder) -> ControllerContext:
    """The acting controller, which the encoding always has when it encodes reassignments."""
    assert enc.ops is not None, "reassignments are encoded only with the controller operations"
    return enc.ops


__all__ = ["SymReassign", "Reassignment", "list_table", "universe", "targets_of", "STEP_START", "STEP_CAUGHT_UP",
           "STEP_AR_IN_MEMORY", "STEP_AR_IN_ZK", "STEP_CLEAR_REQUEST", "LAST_STEP"]
