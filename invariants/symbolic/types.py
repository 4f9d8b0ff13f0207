"""The one translation between the model's types and z3 terms (specs/08-symbolic.md).

Everything the symbolic checks say about the model goes through here, in both directions:

- broker sets: the model's bitmasks (bit ``b`` is broker ``b``) become z3 bit-vectors of width
  ``brokers + 1`` for the selectors, and tuples of z3 Booleans (one per broker) in the replication
  encoding;
- :class:`~isrcheck.model.selectors.SelectorInput` and
  :class:`~isrcheck.model.selectors.Election` become :class:`SymSelectorInput` and
  :class:`SymElection`, and a z3 model decodes back into a real ``SelectorInput``;
- the partition and replica states (``IntEnum``s of ``model/tables.py``) are z3 integers, and the
  transition tables become formulas read from the very dicts the model uses
  (:func:`partition_move_ok`, :func:`replica_move_ok`);
- a replication :class:`~isrcheck.model.state.State` (one partition or a few, no controller
  operations) becomes a :class:`SymState` of z3 constants, and a z3 model decodes back into a real
  ``State`` (:meth:`SymState.decode`), so that counterexamples are printed, and checked, by the
  model's own code.

The model's fault budget is named here too (:data:`BUDGET_HOME`): where the encoding counts each
counter of the model's ``Budget`` down, by the model's own field names.

This module imports only the logic layer of the package (:mod:`.logic`, to read values out of a z3
model); every module of ``invariants/symbolic/`` that speaks of the model's types builds on it.
Nothing outside ``invariants/`` imports z3.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import count
from typing import Any

import z3

from isrcheck.model.brokersets import mask_of
from isrcheck.model.config import Config, Faults, Operations
from isrcheck.model.records import make_record, record_epoch, record_id
from isrcheck.model.selectors import Election, SelectorInput
from isrcheck.model.state import (
    LEADER_AND_ISR,
    NO_LEADER,
    STOP_REPLICA,
    UPDATE_METADATA,
    Broker,
    Budget,
    Ghost,
    LeaderAndIsr,
    Replica,
    State,
    StopReplica,
    UpdateMetadata,
    ZkPartition,
)
from isrcheck.model.tables import (
    PARTITION_VALID_PREVIOUS,
    REPLICA_VALID_PREVIOUS,
    PartitionState,
    ReplicaState,
)
from isrcheck.model.world import fresh_replica

from .logic import number, truth, unsigned

_fresh = count()


# ============================================================================ the fault budget, by name
def budget_counters(section: type) -> tuple[str, ...]:
    """The counters a configuration section (``config.Faults``, ``config.Operations``) grants, by
    name in declaration order: its int fields, each one field of the model's ``Budget``."""
    return tuple(f.name for f in dataclasses.fields(section) if f.type in (int, "int"))


#: Where the replication encoding counts each counter of the model's budget (model/state.py's
#: ``Budget``: the counters of ``config.Faults`` and ``config.Operations``) down, by the model's name:
#: on the state (``SymState.budget``: the broker faults), with the controller's operations
#: (``operations.SymOps.budget``) or with topic administration (``admin.SymAdmin.deletions``). A
#: counter without a home is not encoded: ``replication.unsupported_reason`` refuses a configuration
#: that grants any of it, so that a fault added to the model is never silently left out of z3.
BUDGET_HOME: dict[str, str] = {
    "crashes": "state", "lossy_crashes": "state", "undetected_restarts": "state", "isr_shrinks": "state",
    "delayed_requests": "state",
    "preferred_elections": "controller", "controlled_shutdowns": "controller", "controller_failovers": "controller",
    "topic_deletions": "admin",
}
#: How the refusal names a counter the encoding does not cover (the counter's name otherwise)
UNCOVERED_BUDGET_WORDS: dict[str, str] = {"session_expiries": "broker session expiries",
                                          "lost_isr_answers": "lost AlterIsr answers",
                                          "lost_fetch_answers": "lost fetch answers"}

_misnamed = sorted(set(BUDGET_HOME) - set(Budget._fields))
if _misnamed:
    raise ImportError(f"invariants/symbolic/types.py: BUDGET_HOME names {', '.join(_misnamed)}, which model/state.py's "
                      f"Budget does not have ({', '.join(Budget._fields)})")


def budget_home(where: str) -> tuple[str, ...]:
    """The counters kept ``where`` (a value of :data:`BUDGET_HOME`), in the configuration's order,
    operations first: the order of the encoding's variables, on which z3's answers depend."""
    return tuple(n for n in budget_counters(Operations) + budget_counters(Faults) if BUDGET_HOME.get(n) == where)


def budget_limit(cfg: Config, name: str) -> int:
    """What ``cfg`` grants of the counter ``name`` (a fault, or an administrative operation)."""
    return int(getattr(cfg.faults if name in budget_counters(type(cfg.faults)) else cfg.operations, name))


def uncovered_budget(cfg: Config) -> str:
    """The first counter ``cfg`` grants that the encoding does not count down, as
    ``"words (section.name)"`` ('' when there is none)."""
    for section, granted in (("faults", cfg.faults), ("operations", cfg.operations)):
        for name in budget_counters(type(granted)):
            if name not in BUDGET_HOME and getattr(granted, name):
                return f"{UNCOVERED_BUDGET_WORDS.get(name, name.replace('_', ' '))} ({section}.{name})"
    return ""


#: the broker faults, counted down on the state (``SymState.budget``)
STATE_BUDGET = budget_home("state")
#: the controller's operations and failovers, counted down by the operations plug-in (``SymOps.budget``)
CONTROLLER_BUDGET = budget_home("controller")


def fresh_name(prefix: str) -> str:
    return f"{prefix}!{next(_fresh)}"


# ============================================================================ broker sets (bit-vectors)
def mask_width(brokers: int) -> int:
    """Bit-vector width holding broker ids 1..brokers as bits (bit 0 is never set)."""
    return brokers + 1


def bv_bit(broker: z3.BitVecRef) -> z3.BitVecRef:
    """``1 << broker`` for a symbolic broker id."""
    one = z3.BitVecVal(1, broker.size())
    return one << broker


def bv_member(mask: z3.BitVecRef, broker: z3.BitVecRef | int) -> z3.BoolRef:
    """``mask >> broker & 1`` (brokersets.contains) for a symbolic or concrete broker id."""
    w = mask.size()
    if isinstance(broker, int):
        return z3.Extract(broker, broker, mask) == 1 if broker < w else z3.BoolVal(False)
    return z3.Extract(0, 0, z3.LShR(mask, broker)) == 1


def bv_subset(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BoolRef:
    return a & ~b == 0


# ============================================================================ selector inputs
@dataclass
class SymSelectorInput:
    """A :class:`SelectorInput` over broker ids 1..``brokers``, every field a z3 term.

    ``assignment`` and ``target`` are ``brokers`` slots each with a symbolic length: slot ``i`` is
    part of the list when ``i < length``. :meth:`wellformed` says what a real input looks like:
    lengths 1..brokers (target 0..brokers), slots in the list are distinct ids in 1..brokers and the
    rest are 0, the leader is 0 or an id, and every mask has only bits 1..brokers.
    """

    brokers: int
    length: z3.BitVecRef
    assignment: tuple[z3.BitVecRef, ...]
    leader: z3.BitVecRef
    isr: z3.BitVecRef
    live: z3.BitVecRef
    shutting_down: z3.BitVecRef
    target_length: z3.BitVecRef
    target: tuple[z3.BitVecRef, ...]
    unclean_election: z3.BoolRef

    @classmethod
    def fresh(cls, brokers: int, prefix: str = "in") -> SymSelectorInput:
        w = mask_width(brokers)

        def bv(name: str) -> z3.BitVecRef:
            return z3.BitVec(fresh_name(f"{prefix}.{name}"), w)

        return cls(
            brokers=brokers,
            length=bv("len"),
            assignment=tuple(bv(f"ar{i}") for i in range(brokers)),
            leader=bv("leader"),
            isr=bv("isr"),
            live=bv("live"),
            shutting_down=bv("shutting_down"),
            target_length=bv("tlen"),
            target=tuple(bv(f"rar{i}") for i in range(brokers)),
            unclean_election=z3.Bool(fresh_name(f"{prefix}.unclean")),
        )

    @property
    def width(self) -> int:
        return mask_width(self.brokers)

    def const(self, v: int) -> z3.BitVecRef:
        return z3.BitVecVal(v, self.width)

    def slots(self) -> list[tuple[z3.BoolRef, z3.BitVecRef]]:
        """(is part of the assignment, broker id) for each slot, in preference order."""
        return [(z3.ULT(self.const(i), self.length), a) for i, a in enumerate(self.assignment)]

    def target_slots(self) -> list[tuple[z3.BoolRef, z3.BitVecRef]]:
        return [(z3.ULT(self.const(i), self.target_length), t) for i, t in enumerate(self.target)]

    def mask_of_slots(self, slots: Sequence[tuple[z3.BoolRef, z3.BitVecRef]]) -> z3.BitVecRef:
        m = self.const(0)
        for valid, b in slots:
            m = m | z3.If(valid, bv_bit(b), self.const(0))
        return m

    def _list_ok(self, length: z3.BitVecRef, slots: Sequence[z3.BitVecRef], min_len: int) -> list[z3.BoolRef]:
        n = self.brokers
        out = [z3.ULE(self.const(min_len), length), z3.ULE(length, self.const(n))]
        for i, a in enumerate(slots):
            inside = z3.ULT(self.const(i), length)
            out.append(z3.If(inside, z3.And(z3.ULE(self.const(1), a), z3.ULE(a, self.const(n))), a == 0))
            for j in range(i):
                out.append(z3.Implies(inside, slots[j] != a))
        return out

    def wellformed(self) -> z3.BoolRef:
        n = self.brokers
        ids = self.const(((1 << (n + 1)) - 1) & ~1)  # bits 1..n
        parts = self._list_ok(self.length, self.assignment, 1)
        parts += self._list_ok(self.target_length, self.target, 0)
        parts.append(z3.ULE(self.leader, self.const(n)))
        for m in (self.isr, self.live, self.shutting_down):
            parts.append(bv_subset(m, ids))
        return z3.And(parts)

    def isr_within_assignment(self) -> z3.BoolRef:
        """The ISR names only assigned replicas (the property IsrSubsetOfReplicas, as a premise)."""
        return bv_subset(self.isr, self.mask_of_slots(self.slots()))

    # ------------------------------------------------------------------ concrete <-> symbolic
    def decode(self, model: z3.ModelRef) -> SelectorInput:
        """The concrete input a z3 model describes."""
        n = unsigned(model, self.length)
        tn = unsigned(model, self.target_length)
        return SelectorInput(
            assignment=tuple(unsigned(model, a) for a in self.assignment[:n]),
            leader=unsigned(model, self.leader),
            isr=unsigned(model, self.isr),
            live=unsigned(model, self.live),
            shutting_down=unsigned(model, self.shutting_down),
            target=tuple(unsigned(model, t) for t in self.target[:tn]),
            unclean_election=truth(model, self.unclean_election),
        )

    def substitution(self, inp: SelectorInput) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        """Pairs (symbol, value) that pin this symbolic input to the concrete ``inp``."""
        if len(inp.assignment) > self.brokers or len(inp.target) > self.brokers:
            raise ValueError(f"input has more than {self.brokers} brokers: {inp}")
        pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = [
            (self.length, self.const(len(inp.assignment))),
            (self.target_length, self.const(len(inp.target))),
            (self.leader, self.const(inp.leader)),
            (self.isr, self.const(inp.isr)),
            (self.live, self.const(inp.live)),
            (self.shutting_down, self.const(inp.shutting_down)),
            (self.unclean_election, z3.BoolVal(bool(inp.unclean_election))),
        ]
        for i, a in enumerate(self.assignment):
            pairs.append((a, self.const(inp.assignment[i] if i < len(inp.assignment) else 0)))
        for i, t in enumerate(self.target):
            pairs.append((t, self.const(inp.target[i] if i < len(inp.target) else 0)))
        return pairs


@dataclass
class SymElection:
    """A selector's answer: ``ok`` false stands for NoEligibleLeader (the other fields are then
    meaningless); ``receivers`` is the set of brokers that get LeaderAndIsr (their order is the
    order of the list they were taken from, which :func:`election_from` checks)."""

    ok: z3.BoolRef
    leader: z3.BitVecRef
    isr: z3.BitVecRef
    receivers: z3.BitVecRef
    unclean: z3.BoolRef

    def packed(self) -> z3.BitVecRef:
        """All five outputs in one bit-vector (so one substitution evaluates them all)."""
        one, zero = z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)
        return z3.Concat(z3.If(self.ok, one, zero), self.leader, self.isr, self.receivers,
                         z3.If(self.unclean, one, zero))

    def substitute(self, pairs: list[tuple[z3.ExprRef, z3.ExprRef]],
                   packed: z3.BitVecRef | None = None) -> tuple[bool, int, int, int, bool]:
        """Evaluate on a concrete input (``SymSelectorInput.substitution``), with z3's simplifier."""
        w = self.leader.size()
        v = z3.simplify(z3.substitute(self.packed() if packed is None else packed, *pairs)).as_long()
        unclean = v & 1
        receivers = v >> 1 & ((1 << w) - 1)
        isr = v >> (1 + w) & ((1 << w) - 1)
        leader = v >> (1 + 2 * w) & ((1 << w) - 1)
        ok = v >> (1 + 3 * w) & 1
        return (bool(ok), leader, isr, receivers, bool(unclean))

    def decode(self, model: z3.ModelRef) -> tuple[bool, int, int, int, bool]:
        return (truth(model, self.ok), unsigned(model, self.leader), unsigned(model, self.isr),
                unsigned(model, self.receivers), truth(model, self.unclean))


def election_tuple(e: Election | None) -> tuple[bool, int, int, int, bool]:
    """A concrete Election (None for NoEligibleLeader) in :class:`SymElection`'s shape."""
    if e is None:
        return (False, 0, 0, 0, False)
    return (True, e.leader, e.isr, mask_of(e.receivers), bool(e.unclean))


# ============================================================================ state machines
PARTITION_STATES: tuple[PartitionState, ...] = tuple(PartitionState)
REPLICA_STATES: tuple[ReplicaState, ...] = tuple(ReplicaState)


def state_in(term: z3.ArithRef, states: Iterable[int]) -> z3.BoolRef:
    return z3.Or([term == int(s) for s in states]) if states else z3.BoolVal(False)


def partition_move_ok(source: z3.ArithRef, target: PartitionState) -> z3.BoolRef:
    """The partition table (PARTITION_VALID_PREVIOUS) as a formula: may ``source`` go to ``target``?"""
    return state_in(source, PARTITION_VALID_PREVIOUS[target])


def replica_move_ok(source: z3.ArithRef, target: ReplicaState) -> z3.BoolRef:
    """The replica table (REPLICA_VALID_PREVIOUS) as a formula."""
    return state_in(source, REPLICA_VALID_PREVIOUS[target])


def check_replica_move(t: Any, cond: z3.BoolRef | bool, source: z3.ArithRef, target: ReplicaState) -> None:
    """check_replica_move in a step being built: when ``cond`` holds and the table forbids
    ``source`` -> ``target``, the step is illegal (``SymState.illegal``)."""
    if cond is not False:
        t.illegal = disj([t.illegal, conj(cond, z3.Not(replica_move_ok(source, target)))])


def check_partition_move(t: Any, cond: z3.BoolRef | bool, source: z3.ArithRef, target: PartitionState) -> None:
    """check_partition_move in a step being built (see :func:`check_replica_move`)."""
    if cond is not False:
        t.illegal = disj([t.illegal, conj(cond, z3.Not(partition_move_ok(source, target)))])


def state_label(kind: str, value: int) -> str:
    return (PartitionState(value) if kind == "partition" else ReplicaState(value)).label


# ============================================================================ replication states
# A replication State (one controller, no administrative operations) as z3 constants. Broker sets
# are tuples of Booleans indexed by broker id (index 0 unused); per-broker data of a partition are
# dicts keyed by the assigned brokers. Records are (id, epoch) pairs of integers; a log is a fixed
# number of slots and a length, and slots at or beyond the length are 0.

REQ_NONE, REQ_LAI, REQ_STOP, REQ_UM = 0, LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA

NUM_BITS = 8
"""Integers of the replication encoding (offsets, ids, epochs, versions, budgets) are signed
bit-vectors of this width: bit-blasting makes bounded model checking several times faster than
linear integer arithmetic on these small ranges. Values stay far from the limit (NUM_MAX); every
increment that could reach it sets the state's ``overflow`` flag instead of wrapping."""
NUM_MAX = (1 << (NUM_BITS - 1)) - 16


def num(name: str) -> z3.BitVecRef:
    return z3.BitVec(name, NUM_BITS)


def numval(v: int) -> z3.BitVecRef:
    return z3.BitVecVal(v, NUM_BITS)


# ---------------------------------------------------------------------------- building terms
def ite(c: z3.BoolRef | bool, a: Any, b: Any) -> Any:
    """If-then-else that folds a Python condition and equal branches (fewer terms to bit-blast)."""
    if c is True:
        return a
    if c is False:
        return b
    if isinstance(a, z3.ExprRef) and isinstance(b, z3.ExprRef) and a.eq(b):
        return a
    return z3.If(c, a, b)


def imin(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a <= b, a, b)


def _fold(xs: Iterable[z3.BoolRef | bool], unit: bool,
          join: Callable[[list[z3.BoolRef]], z3.BoolRef]) -> z3.BoolRef | bool:
    """``xs`` joined by ``join`` (z3.And, whose unit is True, or z3.Or, whose unit is False), keeping
    Python booleans where it can, so that impossible branches are not built: the unit is dropped,
    its negation decides."""
    rest = []
    for x in xs:
        if x is (not unit):
            return not unit
        if x is not unit:
            rest.append(x)
    if not rest:
        return unit
    return rest[0] if len(rest) == 1 else join(rest)


def conj(*xs: z3.BoolRef | bool) -> z3.BoolRef | bool:
    """And, keeping Python booleans where it can."""
    return _fold(xs, True, z3.And)


def disj(xs: Sequence[z3.BoolRef | bool]) -> z3.BoolRef | bool:
    """Or, keeping Python booleans where it can."""
    return _fold(xs, False, z3.Or)


def negate(x: z3.BoolRef | bool) -> z3.BoolRef | bool:
    """Not, keeping Python booleans."""
    if x is True or x is False:
        return not x
    return z3.Not(x)


def as_bool(x: z3.BoolRef | bool) -> z3.BoolRef:
    """A z3 boolean for a Python or z3 one."""
    return z3.BoolVal(x) if isinstance(x, bool) else x


def first_of(options: Sequence[tuple[z3.BoolRef, int]]) -> z3.ArithRef:
    """The first broker id whose condition holds (0 if none): assignment order breaks ties."""
    out: z3.ArithRef = numval(0)
    for c, b in reversed(options):
        out = z3.If(c, numval(b), out)
    return out


def decode_mask(model: z3.ModelRef, bits: dict[int, z3.BoolRef]) -> int:
    """The model's bitmask of a broker set encoded as one Boolean per broker (bit ``b`` set when
    ``bits[b]`` is true in ``model``)."""
    return mask_of(b for b, t in bits.items() if truth(model, t))


@dataclass
class SymLog:
    length: z3.ArithRef
    ids: tuple[z3.ArithRef, ...]
    epochs: tuple[z3.ArithRef, ...]


@dataclass
class SymEpochs:
    """A replica's leader-epoch cache and reconciliation state (the leader-epoch generations only).

    The cache is ``slots`` pairs (epoch, start offset) with a symbolic length, unused pairs 0 (like
    a log); ``fetch_state`` is FETCHING / ASK_EPOCH_END / TRUNCATE_PENDING; ``answered`` says the
    model's ``answer`` is a pair (``answer_epoch``, ``answer_end``) rather than ``()`` (both 0 then).
    """

    length: z3.ArithRef
    epochs: tuple[z3.ArithRef, ...]
    starts: tuple[z3.ArithRef, ...]
    fetch_state: z3.ArithRef
    answered: z3.BoolRef
    answer_epoch: z3.ArithRef
    answer_end: z3.ArithRef

    def leaves(self) -> list[z3.ExprRef]:
        return [self.length, *self.epochs, *self.starts, self.fetch_state, self.answered, self.answer_epoch,
                self.answer_end]

    @classmethod
    def of_leaves(cls, xs: Sequence[Any], slots: int) -> SymEpochs:
        return cls(xs[0], tuple(xs[1:1 + slots]), tuple(xs[1 + slots:1 + 2 * slots]), *xs[1 + 2 * slots:])

    @staticmethod
    def size(slots: int) -> int:
        return 2 * slots + 5


@dataclass
class SymReplica:
    log: SymLog
    hw: z3.ArithRef
    checkpoint: z3.ArithRef
    leader: z3.ArithRef
    leader_epoch: z3.ArithRef
    isr: dict[int, z3.BoolRef]  # over the assigned brokers
    zk_version: z3.ArithRef
    remote_leo: dict[int, z3.ArithRef]  # over the assigned brokers
    pending: dict[int, z3.BoolRef]  # over record ids 1..max_records
    ep: SymEpochs | None = None  # leader-epoch generations only (None under high-watermark)


@dataclass
class SymRequest:
    kind: z3.ArithRef  # REQ_NONE for an empty slot
    partition: z3.ArithRef
    leader: z3.ArithRef
    isr: dict[int, z3.BoolRef]  # over every broker 1..N (the request's ISR; assigned ones matter)
    leader_epoch: z3.ArithRef
    zk_version: z3.ArithRef
    # the AR a delivered LeaderAndIsr carries, as a reassignment.py list number (reassignments
    # only, set by Encoding.pop; not a leaf: the queued numbers live in SymReassign.req_list)
    replicas: Any = None


@dataclass
class SymInbox:
    length: z3.ArithRef
    slots: tuple[SymRequest, ...]


@dataclass
class SymZkPartition:
    leader: z3.ArithRef
    isr: dict[int, z3.BoolRef]  # over the assigned brokers
    leader_epoch: z3.ArithRef
    version: z3.ArithRef


@dataclass
class SymGhost:
    produced: z3.ArithRef
    acked: dict[int, z3.BoolRef]  # over record ids
    exposed: SymLog
    # encoding-only history (not in the model's State): where and in which epoch record j was made
    position: dict[int, z3.ArithRef]
    epoch: dict[int, z3.ArithRef]


@dataclass
class SymState:
    """A replication State as z3 terms. Shape (brokers, assignment, capacities) is concrete."""

    brokers: int
    assignment: tuple[tuple[int, ...], ...]  # AR per partition (constant in this fragment)
    max_records: int
    queue: int  # inbox capacity
    alive: dict[int, z3.BoolRef]  # = ZooKeeper's registrations
    c_live: dict[int, z3.BoolRef]  # the controller's view
    partition_online: tuple[z3.BoolRef, ...]  # the controller's partition state: Online (else Offline)
    zk: tuple[SymZkPartition, ...]
    replicas: tuple[dict[int, SymReplica], ...]  # per partition, keyed by assigned broker
    inbox: dict[int, SymInbox]
    ghost: tuple[SymGhost, ...]
    budget: dict[str, z3.ArithRef]  # the counters of STATE_BUDGET, by the model's names
    overflow: z3.BoolRef  # a step needed more inbox slots than ``queue``
    # the controller side of operations and failover (operations.SymOps), None when not encoded
    ops: Any = None
    # not a leaf: set on a successor when the step that built it asked a controller state machine
    # for a move its table forbids (the model raises IllegalTransition: OnlyValidTransitions)
    illegal: Any = False

    # ------------------------------------------------------------------ construction
    @classmethod
    def fresh(cls, brokers: int, assignment: tuple[tuple[int, ...], ...], max_records: int, queue: int,
              prefix: str, epoch_slots: int = 0) -> SymState:
        """Fresh constants; ``epoch_slots`` > 0 gives every replica a leader-epoch cache of that
        many entries and a reconciliation state (:class:`SymEpochs`), 0 none (high-watermark)."""
        I = lambda n: num(fresh_name(f"{prefix}.{n}"))  # noqa: E731
        B = lambda n: z3.Bool(fresh_name(f"{prefix}.{n}"))  # noqa: E731
        K = max_records
        ids = range(1, K + 1)
        bs = range(1, brokers + 1)

        def log(n: str) -> SymLog:
            return SymLog(I(f"{n}.len"), tuple(I(f"{n}.id{i}") for i in range(K)),
                          tuple(I(f"{n}.ep{i}") for i in range(K)))

        zk, replicas, ghost = [], [], []
        for p, ar in enumerate(assignment):
            zk.append(SymZkPartition(I(f"zk{p}.leader"), {b: B(f"zk{p}.isr{b}") for b in ar},
                                     I(f"zk{p}.epoch"), I(f"zk{p}.version")))
            reps = {}
            for b in ar:
                n = f"b{b}p{p}"
                reps[b] = SymReplica(log(f"{n}.log"), I(f"{n}.hw"), I(f"{n}.ckpt"), I(f"{n}.leader"),
                                     I(f"{n}.lepoch"), {m: B(f"{n}.isr{m}") for m in ar}, I(f"{n}.zkv"),
                                     {m: I(f"{n}.remote{m}") for m in ar}, {j: B(f"{n}.pending{j}") for j in ids})
                if epoch_slots:
                    E = epoch_slots
                    reps[b].ep = SymEpochs(I(f"{n}.eplen"), tuple(I(f"{n}.ep{i}") for i in range(E)),
                                           tuple(I(f"{n}.epstart{i}") for i in range(E)), I(f"{n}.fstate"),
                                           B(f"{n}.answered"), I(f"{n}.ans_epoch"), I(f"{n}.ans_end"))
            replicas.append(reps)
            ghost.append(SymGhost(I(f"g{p}.produced"), {j: B(f"g{p}.acked{j}") for j in ids}, log(f"g{p}.exposed"),
                                  {j: I(f"g{p}.pos{j}") for j in ids}, {j: I(f"g{p}.ep{j}") for j in ids}))
        inbox = {}
        for b in bs:
            slots = tuple(SymRequest(I(f"q{b}.{i}.kind"), I(f"q{b}.{i}.p"), I(f"q{b}.{i}.leader"),
                                     {m: B(f"q{b}.{i}.isr{m}") for m in bs}, I(f"q{b}.{i}.epoch"),
                                     I(f"q{b}.{i}.zkv")) for i in range(queue))
            inbox[b] = SymInbox(I(f"q{b}.len"), slots)
        return cls(
            brokers=brokers, assignment=assignment, max_records=max_records, queue=queue,
            alive={b: B(f"alive{b}") for b in bs}, c_live={b: B(f"clive{b}") for b in bs},
            partition_online=tuple(B(f"online{p}") for p in range(len(assignment))),
            zk=tuple(zk), replicas=tuple(replicas), inbox=inbox, ghost=tuple(ghost),
            budget={f: I(f"budget.{f}") for f in STATE_BUDGET}, overflow=B("overflow"),
        )

    @property
    def partitions(self) -> int:
        return len(self.assignment)

    # ------------------------------------------------------------------ leaves
    def leaves(self) -> list[z3.ExprRef]:
        """Every z3 term of the state, in a fixed order (the same for every SymState of one shape)."""
        out: list[z3.ExprRef] = []

        def log(lg: SymLog) -> None:
            out.append(lg.length)
            out.extend(lg.ids)
            out.extend(lg.epochs)

        out += [self.alive[b] for b in sorted(self.alive)]
        out += [self.c_live[b] for b in sorted(self.c_live)]
        out += list(self.partition_online)
        for z in self.zk:
            out += [z.leader, *[z.isr[b] for b in sorted(z.isr)], z.leader_epoch, z.version]
        for reps in self.replicas:
            for b in sorted(reps):
                r = reps[b]
                log(r.log)
                out += [r.hw, r.checkpoint, r.leader, r.leader_epoch, *[r.isr[m] for m in sorted(r.isr)],
                        r.zk_version, *[r.remote_leo[m] for m in sorted(r.remote_leo)],
                        *[r.pending[j] for j in sorted(r.pending)]]
                if r.ep is not None:
                    out += r.ep.leaves()
        for b in sorted(self.inbox):
            q = self.inbox[b]
            out.append(q.length)
            for s in q.slots:
                out += [s.kind, s.partition, s.leader, *[s.isr[m] for m in sorted(s.isr)], s.leader_epoch,
                        s.zk_version]
        for g in self.ghost:
            out.append(g.produced)
            out += [g.acked[j] for j in sorted(g.acked)]
            log(g.exposed)
            out += [g.position[j] for j in sorted(g.position)]
            out += [g.epoch[j] for j in sorted(g.epoch)]
        out += [self.budget[f] for f in STATE_BUDGET]
        out.append(self.overflow)
        if self.ops is not None:
            out += self.ops.leaves()
        return out

    def equals(self, other: SymState) -> z3.BoolRef:
        return z3.And([a == b for a, b in zip(self.leaves(), other.leaves())])

    def rebuild(self, leaves: Sequence[z3.ExprRef]) -> SymState:
        """A SymState of this shape whose leaves (in :meth:`leaves` order) are ``leaves``."""
        it = iter(leaves)

        def nx() -> Any:
            return next(it)

        def log() -> SymLog:
            n = nx()
            ids = tuple(nx() for _ in range(self.max_records))
            eps = tuple(nx() for _ in range(self.max_records))
            return SymLog(n, ids, eps)

        alive = {b: nx() for b in sorted(self.alive)}
        c_live = {b: nx() for b in sorted(self.c_live)}
        online = tuple(nx() for _ in self.partition_online)
        zk = []
        for z in self.zk:
            leader = nx()
            isr = {b: nx() for b in sorted(z.isr)}
            zk.append(SymZkPartition(leader, isr, nx(), nx()))
        replicas = []
        for reps in self.replicas:
            d = {}
            for b in sorted(reps):
                r = reps[b]
                lg = log()
                hw, ck, leader, lep = nx(), nx(), nx(), nx()
                isr = {m: nx() for m in sorted(r.isr)}
                zkv = nx()
                remote = {m: nx() for m in sorted(r.remote_leo)}
                pending = {j: nx() for j in sorted(r.pending)}
                ep = None
                if r.ep is not None:
                    k = len(r.ep.epochs)
                    ep = SymEpochs.of_leaves([nx() for _ in range(SymEpochs.size(k))], k)
                d[b] = SymReplica(lg, hw, ck, leader, lep, isr, zkv, remote, pending, ep)
            replicas.append(d)
        inbox = {}
        for b in sorted(self.inbox):
            q = self.inbox[b]
            n = nx()
            slots = []
            for s in q.slots:
                kind, part, leader = nx(), nx(), nx()
                isr = {m: nx() for m in sorted(s.isr)}
                slots.append(SymRequest(kind, part, leader, isr, nx(), nx()))
            inbox[b] = SymInbox(n, tuple(slots))
        ghost = []
        for g in self.ghost:
            produced = nx()
            acked = {j: nx() for j in sorted(g.acked)}
            exposed = log()
            position = {j: nx() for j in sorted(g.position)}
            epoch = {j: nx() for j in sorted(g.epoch)}
            ghost.append(SymGhost(produced, acked, exposed, position, epoch))
        budget = {f: nx() for f in STATE_BUDGET}
        overflow = nx()
        ops = self.ops.rebuild(nx) if self.ops is not None else None
        out = SymState(self.brokers, self.assignment, self.max_records, self.queue, alive, c_live, online,
                       tuple(zk), tuple(replicas), inbox, tuple(ghost), budget, overflow, ops)
        out.illegal = self.illegal  # a successor's copy keeps what its step did
        return out

    def clone(self) -> SymState:
        """A structurally separate copy with the same terms (to edit field by field)."""
        return self.rebuild(self.leaves())

    def spend(self, budget: str | None) -> SymState:
        """A copy (:meth:`clone`) with one of ``budget`` (a counter of :data:`STATE_BUDGET`) spent, the
        start of a step charged to a fault; None spends nothing."""
        t = self.clone()
        if budget:
            t.budget[budget] = self.budget[budget] - 1
        return t

    # ------------------------------------------------------------------ concrete -> symbolic
    def values_of(self, s: State, extra: dict[str, Any] | None = None) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        """Pairs (leaf, value) pinning this symbolic state to the concrete model state ``s``.

        The encoding-only history (record positions and epochs) is read off the logs of ``s``: a
        record that no log holds any more gets position and epoch 0.
        """
        pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
        I = numval
        Bv = z3.BoolVal

        def log(lg: SymLog, records: tuple[int, ...]) -> None:
            pairs.append((lg.length, I(len(records))))
            for i in range(self.max_records):
                r = records[i] if i < len(records) else None
                pairs.append((lg.ids[i], I(record_id(r) if r is not None else 0)))
                pairs.append((lg.epochs[i], I(record_epoch(r) if r is not None else 0)))

        c = s.controller
        for b in self.alive:
            pairs.append((self.alive[b], Bv(s.brokers[b - 1].alive)))
            pairs.append((self.c_live[b], Bv(bool(c.live >> b & 1))))
        for p in range(self.partitions):
            pairs.append((self.partition_online[p], Bv(c.partition_states[p] == PartitionState.ONLINE)))
            zp = s.zk.partitions[p]
            z = self.zk[p]
            pairs += [(z.leader, I(zp.leader)), (z.leader_epoch, I(zp.leader_epoch)), (z.version, I(zp.version))]
            pairs += [(z.isr[b], Bv(bool(zp.isr >> b & 1))) for b in z.isr]
            positions: dict[int, tuple[int, int]] = {}
            for b, sr in self.replicas[p].items():
                r = s.brokers[b - 1].replicas[p]
                if r is None:  # not created yet (topic creation): encoded as the replica a LeaderAndIsr creates
                    r = fresh_replica(len(s.brokers))
                log(sr.log, r.log)
                for i, rec in enumerate(r.log):
                    positions.setdefault(record_id(rec), (i, record_epoch(rec)))
                pairs += [(sr.hw, I(r.hw)), (sr.checkpoint, I(r.checkpoint)), (sr.leader, I(r.leader)),
                          (sr.leader_epoch, I(r.leader_epoch)), (sr.zk_version, I(r.zk_version))]
                pairs += [(sr.isr[m], Bv(bool(r.isr >> m & 1))) for m in sr.isr]
                pairs += [(sr.remote_leo[m], I(r.remote_leo[m - 1] if r.remote_leo else 0)) for m in sr.remote_leo]
                pairs += [(sr.pending[j], Bv(bool(r.pending >> j & 1))) for j in sr.pending]
                if sr.ep is not None:
                    ep, n = sr.ep, len(sr.ep.epochs)
                    if len(r.epochs) > n:
                        raise ValueError(f"broker {b}'s leader-epoch cache of partition {p} has {len(r.epochs)} "
                                         f"entries, more than the encoding's {n}")
                    cache = list(r.epochs) + [(0, 0)] * (n - len(r.epochs))
                    answer = r.answer if r.answer else (0, 0)
                    pairs += [(ep.length, I(len(r.epochs))), (ep.fetch_state, I(r.fetch_state)),
                              (ep.answered, Bv(bool(r.answer))), (ep.answer_epoch, I(answer[0])),
                              (ep.answer_end, I(answer[1]))]
                    pairs += [(ep.epochs[i], I(cache[i][0])) for i in range(n)]
                    pairs += [(ep.starts[i], I(cache[i][1])) for i in range(n)]
            g, sg = s.ghost[p], self.ghost[p]
            for i, rec in enumerate(g.exposed):
                positions.setdefault(record_id(rec), (i, record_epoch(rec)))
            pairs.append((sg.produced, I(g.produced)))
            pairs += [(sg.acked[j], Bv(bool(g.acked >> j & 1))) for j in sg.acked]
            log(sg.exposed, g.exposed)
            for j in sg.position:
                pos, ep = positions.get(j, (0, 0))
                pairs += [(sg.position[j], I(pos)), (sg.epoch[j], I(ep))]
        for b, q in self.inbox.items():
            reqs = s.inbox[b - 1]
            if len(reqs) > self.queue:
                raise ValueError(f"broker {b} has {len(reqs)} queued requests, more than the encoding's {self.queue}")
            pairs.append((q.length, I(len(reqs))))
            for i, slot in enumerate(q.slots):
                req = reqs[i] if i < len(reqs) else None
                kind = req[0] if req is not None else REQ_NONE
                lai = req if isinstance(req, LeaderAndIsr) else None
                part = req[2] if isinstance(req, (LeaderAndIsr, StopReplica)) else 0
                pairs += [(slot.kind, I(kind)), (slot.partition, I(part)),
                          (slot.leader, I(lai.leader if lai else 0)),
                          (slot.leader_epoch, I(lai.leader_epoch if lai else 0)),
                          (slot.zk_version, I(lai.zk_version if lai else 0))]
                pairs += [(slot.isr[m], Bv(bool(lai.isr >> m & 1) if lai else False)) for m in slot.isr]
        budget = s.budget
        for f in STATE_BUDGET:
            pairs.append((self.budget[f], I(getattr(budget, f))))
        pairs.append((self.overflow, Bv(False)))
        if self.ops is not None:
            pairs += self.ops.values_of(s)
        return pairs

    def pin(self, s: State) -> z3.BoolRef:
        return z3.And([a == v for a, v in self.values_of(s)])

    # ------------------------------------------------------------------ symbolic -> concrete
    def decode(self, model: z3.ModelRef, like: State) -> State:
        """The model State a z3 model describes; fields the encoding leaves out come from ``like``
        (the configuration's initial state) or follow from the encoded ones (see specs/08)."""

        def iv(t: z3.ExprRef) -> int:
            return number(model, t)

        def bv(t: z3.ExprRef) -> bool:
            return truth(model, t)

        def mask(d: dict[int, z3.BoolRef]) -> int:
            return decode_mask(model, d)

        def records(lg: SymLog) -> tuple[int, ...]:
            n = max(0, min(iv(lg.length), self.max_records))
            return tuple(make_record(iv(lg.ids[i]), iv(lg.epochs[i])) for i in range(n))

        nb = self.brokers
        live = mask(self.alive)
        c_live = mask(self.c_live)
        parts = []
        for p, ar in enumerate(self.assignment):
            z = self.zk[p]
            zp0 = like.zk.partitions[p]
            parts.append(ZkPartition(ar, iv(z.leader), mask(z.isr), iv(z.leader_epoch), iv(z.version),
                                     zp0.controller_epoch))
        zk = like.zk._replace(live=live, partitions=tuple(parts))
        rstates = []
        for p, ar in enumerate(self.assignment):
            rstates.append(tuple(
                (ReplicaState.ONLINE if c_live >> b & 1 else ReplicaState.OFFLINE) if b in ar
                else ReplicaState.NON_EXISTENT for b in range(1, nb + 1)))
        controller = like.controller._replace(
            live=c_live,
            partition_states=tuple(PartitionState.ONLINE if bv(o) else PartitionState.OFFLINE
                                   for o in self.partition_online),
            replica_states=tuple(rstates),
        )
        brokers = []
        for b in range(1, nb + 1):
            reps: list[Replica | None] = []
            for p, ar in enumerate(self.assignment):
                if b not in ar:
                    reps.append(None)
                    continue
                r = self.replicas[p][b]
                leader = iv(r.leader)
                leads = leader == b
                remote = tuple(iv(r.remote_leo[m]) if m in r.remote_leo else 0 for m in range(1, nb + 1))
                rep = Replica(records(r.log), iv(r.hw), iv(r.checkpoint), leader, iv(r.leader_epoch),
                              mask(r.isr) if leads else 0, iv(r.zk_version) if leads else 0,
                              remote if leads else (), mask(r.pending) if leads else 0,
                              mask_of(ar) if leads else 0)
                if r.ep is not None:
                    ep = r.ep
                    n = max(0, min(iv(ep.length), len(ep.epochs)))
                    rep = rep._replace(epochs=tuple((iv(ep.epochs[i]), iv(ep.starts[i])) for i in range(n)),
                                       fetch_state=iv(ep.fetch_state),
                                       answer=(iv(ep.answer_epoch), iv(ep.answer_end)) if bv(ep.answered) else ())
                reps.append(rep)
            alive = bool(live >> b & 1)
            brokers.append(Broker(alive, like.zk.controller_epoch if alive else 0, tuple(reps)))
        inbox = []
        for b in range(1, nb + 1):
            q = self.inbox[b]
            reqs = []
            for i in range(max(0, min(iv(q.length), self.queue))):
                slot = q.slots[i]
                kind = iv(slot.kind)
                epoch = like.zk.controller_epoch
                if kind == REQ_LAI:
                    p = iv(slot.partition)
                    reqs.append(LeaderAndIsr(LEADER_AND_ISR, epoch, p, iv(slot.leader), mask(slot.isr),
                                             iv(slot.leader_epoch), iv(slot.zk_version),
                                             self.assignment[p] if 0 <= p < self.partitions else ()))
                elif kind == REQ_STOP:
                    reqs.append(StopReplica(STOP_REPLICA, epoch, iv(slot.partition), False))
                else:
                    reqs.append(UpdateMetadata(UPDATE_METADATA, epoch, ()))  # z3 models no metadata cache
            inbox.append(tuple(reqs))
        ghost = []
        for p, g in enumerate(self.ghost):
            ghost.append(Ghost(iv(g.produced), mask(g.acked), records(g.exposed), ()))
        budget = like.budget._replace(**{f: iv(self.budget[f]) for f in STATE_BUDGET})
        st = State(zk, controller, None, tuple(brokers), tuple(inbox), tuple(ghost), budget, ())
        return self.ops.decode(model, st) if self.ops is not None else st


def fresh_replica_if(c: z3.BoolRef, r: SymReplica) -> SymReplica:
    """``r``, or (when ``c``) the fields of world.fresh_replica: what an unhosted replica holds."""
    def z(x: Any) -> Any:
        return ite(c, z3.BoolVal(False), x) if z3.is_bool(x) else ite(c, numval(0), x)

    log = SymLog(z(r.log.length), tuple(z(x) for x in r.log.ids), tuple(z(x) for x in r.log.epochs))
    ep = None
    if r.ep is not None:
        ep = SymEpochs.of_leaves([z(x) for x in r.ep.leaves()], len(r.ep.epochs))
    return SymReplica(log, z(r.hw), z(r.checkpoint), z(r.leader), ite(c, numval(-1), r.leader_epoch),
                      {m: z(x) for m, x in r.isr.items()}, z(r.zk_version), {m: z(x) for m, x in r.remote_leo.items()},
                      {j: z(x) for j, x in r.pending.items()}, ep)


__all__ = [
    "NO_LEADER", "SymSelectorInput", "SymElection", "SymState", "SymLog", "SymReplica", "SymRequest",
    "SymInbox", "SymZkPartition", "SymGhost", "SymEpochs", "bv_bit", "bv_member", "bv_subset", "election_tuple",
    "partition_move_ok", "replica_move_ok", "check_partition_move", "check_replica_move", "state_in", "state_label", "mask_width", "fresh_name",
    "num", "numval", "decode_mask", "NUM_BITS", "NUM_MAX", "ite", "imin", "conj", "disj", "negate", "as_bool",
    "first_of", "fresh_replica_if", "STATE_BUDGET", "CONTROLLER_BUDGET", "BUDGET_HOME", "UNCOVERED_BUDGET_WORDS",
    "budget_counters", "budget_home", "budget_limit", "uncovered_budget",
]
