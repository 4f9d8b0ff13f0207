"""Leader selectors: their contracts, proved for every input (specs/08-symbolic.md#leader-selectors).

Three pieces, kept apart on purpose:

- **contracts** (:data:`CONTRACTS`): what each selector promises, written once against a tiny
  operator interface (:class:`PyOps` for concrete Python values, :class:`Z3Ops` for z3 terms), so
  the very same clause is evaluated on the real code's answers and proved about the encoding;
- **encodings** (:data:`ENCODINGS`): each selector of ``model/selectors.py`` transcribed into z3,
  operation for operation, as a function of a :class:`~isrcheck.invariants.symbolic.types.SymSelectorInput`;
- **agreement**: :func:`crosscheck` runs the real Python selector and the z3 encoding on the same
  concrete input and compares every output, so the encoding cannot drift from the code unnoticed.

:func:`prove_selectors` proves every clause of every contract for the encoding, for every input
over up to ``max_brokers`` brokers (z3), checks the real code against the contracts for every
input over up to ``exhaustive_brokers`` brokers (enumeration) and cross-checks encoding and code on
random inputs up to ``max_brokers``. A protocol variant's ``select`` (which z3 cannot read) is
checked by enumeration and random inputs only: :func:`check_select_function`.
"""
from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from isrcheck.model.brokersets import members, render
from isrcheck.model.selectors import SELECTORS, Election, NoEligibleLeader, Selector, SelectorInput

from .logic import Solver
from .types import SymElection, SymSelectorInput, bv_bit, bv_member, bv_subset, election_tuple
from .verdicts import Obligation, Progress, Verdict, no_progress

SelectFn = Callable[[Selector, SelectorInput], Election]
"""The variant hook's signature: ``Protocol.select(selector, inp)``."""


# ============================================================================ the z3 encodings
def _first(slots: Sequence[tuple[z3.BoolRef, z3.BitVecRef]], pred: Callable[[z3.BitVecRef], z3.BoolRef],
           zero: z3.BitVecRef) -> tuple[z3.BoolRef, z3.BitVecRef]:
    """(some slot qualifies, the first qualifying broker): ``for r in ...: if pred(r): return r``."""
    found = z3.BoolVal(False)
    first = zero
    for valid, b in reversed(slots):
        q = z3.And(valid, pred(b))
        first = z3.If(q, b, first)
        found = z3.Or(q, found)
    return z3.simplify(found), first


def encode_no_op(i: SymSelectorInput) -> SymElection:
    return SymElection(z3.BoolVal(True), i.leader, i.isr, i.mask_of_slots(i.slots()), z3.BoolVal(False))


def encode_offline_partition(i: SymSelectorInput) -> SymElection:
    zero = i.const(0)
    # live_assigned = _live_in(i.assignment, i.live)
    live_assigned = [(z3.And(v, bv_member(i.live, b)), b) for v, b in i.slots()]
    # for r in live_assigned: if i.isr >> r & 1: ... return Election(r, live_isr, live_assigned)
    has_clean, clean = _first(live_assigned, lambda b: bv_member(i.isr, b), zero)
    live_isr = zero
    for v, b in live_assigned:
        live_isr = live_isr | z3.If(z3.And(v, bv_member(i.isr, b)), bv_bit(b), zero)
    # if not live_assigned: raise; if not unclean: raise; leader = live_assigned[0]
    any_live, first_live = _first(live_assigned, lambda b: z3.BoolVal(True), zero)
    ok = z3.Or(has_clean, z3.And(any_live, i.unclean_election))
    leader = z3.If(has_clean, clean, first_live)
    isr = z3.If(has_clean, live_isr, bv_bit(first_live))
    return SymElection(ok, leader, isr, i.mask_of_slots(live_assigned), z3.Not(has_clean))


def encode_reassigned_partition(i: SymSelectorInput) -> SymElection:
    # for r in i.target: if live and in the ISR: return Election(r, i.isr, i.target)
    ok, leader = _first(i.target_slots(), lambda b: z3.And(bv_member(i.live, b), bv_member(i.isr, b)), i.const(0))
    return SymElection(ok, leader, i.isr, i.mask_of_slots(i.target_slots()), z3.BoolVal(False))


def encode_preferred_replica(i: SymSelectorInput) -> SymElection:
    preferred = i.assignment[0]  # the domain has at least one assigned replica
    ok = z3.And(preferred != i.leader, bv_member(i.live, preferred), bv_member(i.isr, preferred))
    live_assigned = [(z3.And(v, bv_member(i.live, b)), b) for v, b in i.slots()]
    return SymElection(ok, preferred, i.isr, i.mask_of_slots(live_assigned), z3.BoolVal(False))


def encode_controlled_shutdown(i: SymSelectorInput) -> SymElection:
    new_isr = i.isr & ~i.shutting_down
    ok, leader = _first(i.slots(), lambda b: bv_member(new_isr, b), i.const(0))
    live_assigned = [(z3.And(v, bv_member(i.live, b)), b) for v, b in i.slots()]
    return SymElection(ok, leader, new_isr, i.mask_of_slots(live_assigned), z3.BoolVal(False))


ENCODINGS: dict[Selector, Callable[[SymSelectorInput], SymElection]] = {
    Selector.NO_OP: encode_no_op,
    Selector.OFFLINE_PARTITION: encode_offline_partition,
    Selector.REASSIGNED_PARTITION: encode_reassigned_partition,
    Selector.PREFERRED_REPLICA: encode_preferred_replica,
    Selector.CONTROLLED_SHUTDOWN: encode_controlled_shutdown,
}


# ============================================================================ contracts, twice interpreted
class PyOps:
    """Contract operators on concrete values (ints for ids and masks, bools)."""

    true, false = True, False

    @staticmethod
    def And(*xs: Any) -> bool:
        return all(xs)

    @staticmethod
    def Or(*xs: Any) -> bool:
        return any(xs)

    @staticmethod
    def Not(x: Any) -> bool:
        return not x

    @staticmethod
    def Implies(a: Any, b: Any) -> bool:
        return (not a) or bool(b)

    @staticmethod
    def Iff(a: Any, b: Any) -> bool:
        return bool(a) == bool(b)

    @staticmethod
    def eq(a: Any, b: Any) -> bool:
        return a == b

    @staticmethod
    def member(mask: int, b: int) -> bool:
        return bool(mask >> b & 1)

    @staticmethod
    def subset(a: int, b: int) -> bool:
        return a & ~b == 0

    @staticmethod
    def minus(a: int, b: int) -> int:
        return a & ~b

    @staticmethod
    def inter(a: int, b: int) -> int:
        return a & b

    empty = 0

    @staticmethod
    def mask(slots: Sequence[tuple[Any, Any]]) -> int:
        m = 0
        for v, b in slots:
            if v:
                m |= 1 << b
        return m


class Z3Ops:
    """The same operators on z3 terms."""

    true, false = z3.BoolVal(True), z3.BoolVal(False)

    def __init__(self, i: SymSelectorInput) -> None:
        self.i = i

    And = staticmethod(lambda *xs: z3.And(*xs))
    Or = staticmethod(lambda *xs: z3.Or(*xs))
    Not = staticmethod(z3.Not)
    Implies = staticmethod(z3.Implies)

    @staticmethod
    def Iff(a: z3.BoolRef, b: z3.BoolRef) -> z3.BoolRef:
        return a == b

    @staticmethod
    def eq(a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        return a == b

    member = staticmethod(bv_member)
    subset = staticmethod(bv_subset)

    @staticmethod
    def minus(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BitVecRef:
        return a & ~b

    @staticmethod
    def inter(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BitVecRef:
        return a & b

    def mask(self, slots: Sequence[tuple[Any, Any]]) -> z3.BitVecRef:
        return self.i.mask_of_slots(slots)

    @property
    def empty(self) -> z3.BitVecRef:
        return self.i.const(0)


@dataclass
class View:
    """What a contract reads: the input's fields and the selector's answer, in either world."""

    ops: Any
    slots: list[tuple[Any, Any]]  # (in the list, broker) per assignment slot
    target_slots: list[tuple[Any, Any]]
    leader: Any
    isr: Any
    live: Any
    shutting_down: Any
    unclean_election: Any
    ok: Any  # the selector elected (False: NoEligibleLeader)
    new_leader: Any
    new_isr: Any
    receivers: Any  # mask
    unclean: Any

    # ---------------------------------------------------------------- helpers shared by clauses
    def any(self, slots: list[tuple[Any, Any]], pred: Callable[[Any], Any]) -> Any:
        o = self.ops
        return o.Or(*[o.And(v, pred(b)) for v, b in slots]) if slots else o.false

    def first_is(self, slots: list[tuple[Any, Any]], pred: Callable[[Any], Any], who: Any) -> Any:
        """``who`` is the first broker of ``slots`` satisfying ``pred``."""
        o = self.ops
        alts = []
        for k, (v, b) in enumerate(slots):
            before = [o.Implies(vv, o.Not(pred(bb))) for vv, bb in slots[:k]]
            alts.append(o.And(v, pred(b), o.eq(b, who), *before))
        return o.Or(*alts) if alts else o.false

    def assigned(self) -> Any:
        return self.ops.mask(self.slots)

    def live_isr(self, b: Any) -> Any:
        o = self.ops
        return o.And(o.member(self.live, b), o.member(self.isr, b))


@dataclass(frozen=True)
class Clause:
    """One promise of a selector. ``premise`` (on the input) restricts the inputs it speaks of."""

    name: str
    check: Callable[[View], Any]
    premise: Callable[[View], Any] | None = None
    premise_text: str = ""


def _isr_premise(v: View) -> Any:
    return v.ops.subset(v.isr, v.assigned())


_ISR_PREMISE = "the input ISR names only assigned replicas (IsrSubsetOfReplicas)"


def _stays_in_isr(v: View) -> Any:
    o = v.ops
    return o.Implies(v.ok, o.And(o.member(v.isr, v.new_leader), o.Not(v.unclean)))


def _offline_candidates(v: View) -> Any:
    return v.any(v.slots, v.live_isr)


# clauses that more than one selector promises
_NEVER_OUTSIDE_THE_ISR = Clause("never elects outside the ISR", _stays_in_isr)
_KEEPS_THE_ISR = Clause("the new ISR is the current one, within AR and contains the leader",
                        lambda v: v.ops.Implies(v.ok, v.ops.And(
                            v.ops.eq(v.new_isr, v.isr), v.ops.member(v.new_isr, v.new_leader),
                            v.ops.subset(v.new_isr, v.assigned()))),
                        _isr_premise, _ISR_PREMISE)
_TELLS_THE_LEADER_AND_LIVE_ASSIGNED = Clause(
    "LeaderAndIsr goes to the leader and only to live assigned replicas",
    lambda v: v.ops.Implies(v.ok, v.ops.And(v.ops.member(v.receivers, v.new_leader),
                                            v.ops.subset(v.receivers, v.ops.inter(v.assigned(), v.live)))))


CONTRACTS: dict[Selector, tuple[Clause, ...]] = {
    Selector.OFFLINE_PARTITION: (
        Clause("errors exactly when no candidate exists",
               lambda v: v.ops.Iff(v.ok, v.ops.Or(_offline_candidates(v), v.ops.And(
                   v.unclean_election, v.any(v.slots, lambda b: v.ops.member(v.live, b)))))),
        Clause("a clean election picks a live ISR member of AR",
               lambda v: v.ops.Implies(v.ops.And(v.ok, v.ops.Not(v.unclean)), v.ops.And(
                   v.live_isr(v.new_leader), v.ops.member(v.assigned(), v.new_leader)))),
        Clause("the leader leaves the ISR only by an enabled unclean election",
               lambda v: v.ops.Implies(v.ok, v.ops.And(
                   v.ops.Iff(v.unclean, v.ops.Not(v.ops.member(v.isr, v.new_leader))),
                   v.ops.Implies(v.unclean, v.ops.And(v.unclean_election, v.ops.Not(_offline_candidates(v)),
                                                      v.ops.member(v.live, v.new_leader),
                                                      v.ops.member(v.assigned(), v.new_leader)))))),
        Clause("the new ISR is live, within AR and contains the leader",
               lambda v: v.ops.Implies(v.ok, v.ops.And(
                   v.ops.member(v.new_isr, v.new_leader), v.ops.subset(v.new_isr, v.assigned()),
                   v.ops.subset(v.new_isr, v.live)))),
        Clause("the first qualifying replica of AR wins",
               lambda v: v.ops.Implies(v.ok, v.ops.And(
                   v.ops.Implies(v.ops.Not(v.unclean), v.first_is(v.slots, v.live_isr, v.new_leader)),
                   v.ops.Implies(v.unclean, v.first_is(v.slots, lambda b: v.ops.member(v.live, b), v.new_leader))))),
        _TELLS_THE_LEADER_AND_LIVE_ASSIGNED,
    ),
    Selector.REASSIGNED_PARTITION: (
        Clause("errors exactly when no candidate exists",
               lambda v: v.ops.Iff(v.ok, v.any(v.target_slots, v.live_isr))),
        Clause("a clean election picks a live ISR member of RAR",
               lambda v: v.ops.Implies(v.ok, v.ops.And(
                   v.live_isr(v.new_leader), v.ops.member(v.ops.mask(v.target_slots), v.new_leader)))),
        _NEVER_OUTSIDE_THE_ISR,
        _KEEPS_THE_ISR,
        Clause("the first qualifying replica of RAR wins",
               lambda v: v.ops.Implies(v.ok, v.first_is(v.target_slots, v.live_isr, v.new_leader))),
        Clause("LeaderAndIsr goes to RAR, leader included",
               lambda v: v.ops.Implies(v.ok, v.ops.And(
                   v.ops.eq(v.receivers, v.ops.mask(v.target_slots)), v.ops.member(v.receivers, v.new_leader)))),
    ),
    Selector.PREFERRED_REPLICA: (
        Clause("errors exactly when no candidate exists",
               lambda v: v.ops.Iff(v.ok, v.ops.And(v.ops.Not(v.ops.eq(v.slots[0][1], v.leader)),
                                                   v.live_isr(v.slots[0][1])))),
        Clause("only picks the head of AR",
               lambda v: v.ops.Implies(v.ok, v.ops.eq(v.new_leader, v.slots[0][1]))),
        Clause("a clean election picks a live ISR member of AR",
               lambda v: v.ops.Implies(v.ok, v.ops.And(v.live_isr(v.new_leader),
                                                       v.ops.member(v.assigned(), v.new_leader)))),
        _NEVER_OUTSIDE_THE_ISR,
        _KEEPS_THE_ISR,
        _TELLS_THE_LEADER_AND_LIVE_ASSIGNED,
    ),
    Selector.CONTROLLED_SHUTDOWN: (
        Clause("errors exactly when no candidate exists",
               lambda v: v.ops.Iff(v.ok, v.any(v.slots, lambda b: v.ops.member(v.ops.minus(v.isr, v.shutting_down), b)))),
        Clause("never picks a shutting-down broker",
               lambda v: v.ops.Implies(v.ok, v.ops.And(
                   v.ops.Not(v.ops.member(v.shutting_down, v.new_leader)),
                   v.ops.eq(v.ops.inter(v.new_isr, v.shutting_down), v.ops.empty)))),
        Clause("picks an ISR member of AR", lambda v: v.ops.And(_stays_in_isr(v), v.ops.Implies(
            v.ok, v.ops.member(v.assigned(), v.new_leader)))),
        Clause("the new ISR is the ISR without the shutting-down brokers, within AR, leader included",
               lambda v: v.ops.Implies(v.ok, v.ops.And(
                   v.ops.eq(v.new_isr, v.ops.minus(v.isr, v.shutting_down)), v.ops.member(v.new_isr, v.new_leader),
                   v.ops.subset(v.new_isr, v.assigned()))),
               _isr_premise, _ISR_PREMISE),
        Clause("the first qualifying replica of AR wins",
               lambda v: v.ops.Implies(v.ok, v.first_is(
                   v.slots, lambda b: v.ops.member(v.ops.minus(v.isr, v.shutting_down), b), v.new_leader))),
        Clause("LeaderAndIsr goes only to live assigned replicas",
               lambda v: v.ops.Implies(v.ok, v.ops.subset(v.receivers, v.ops.inter(v.assigned(), v.live)))),
    ),
    Selector.NO_OP: (
        Clause("never errors", lambda v: v.ok),
        Clause("keeps the leader and the ISR",
               lambda v: v.ops.And(v.ops.eq(v.new_leader, v.leader), v.ops.eq(v.new_isr, v.isr),
                                   v.ops.Not(v.unclean))),
        Clause("LeaderAndIsr goes to every assigned replica", lambda v: v.ops.eq(v.receivers, v.assigned())),
    ),
}

ORDER = (Selector.OFFLINE_PARTITION, Selector.REASSIGNED_PARTITION, Selector.PREFERRED_REPLICA,
         Selector.CONTROLLED_SHUTDOWN, Selector.NO_OP)

NOTES: dict[Selector, tuple[str, Callable[[View], Any]]] = {
    # documented behaviour, shown as a witness rather than checked: 0.8's ControlledShutdown
    # selector does not look at liveness (specs/04-controller.md#leader-selectors)
    Selector.CONTROLLED_SHUTDOWN: (
        "may elect a broker the controller believes dead (0.8 does not check liveness)",
        lambda v: v.ops.And(v.ok, v.ops.Not(v.ops.member(v.live, v.new_leader)))),
}


def py_view(inp: SelectorInput, out: tuple[bool, int, int, int, bool]) -> View:
    ok, leader, isr, receivers, unclean = out
    return View(PyOps, [(True, b) for b in inp.assignment], [(True, b) for b in inp.target], inp.leader,
                inp.isr, inp.live, inp.shutting_down, bool(inp.unclean_election), ok, leader, isr, receivers, unclean)


def z3_view(i: SymSelectorInput, e: SymElection) -> View:
    return View(Z3Ops(i), i.slots(), i.target_slots(), i.leader, i.isr, i.live, i.shutting_down,
                i.unclean_election, e.ok, e.leader, e.isr, e.receivers, e.unclean)


# ============================================================================ concrete runs of the code
def run_select(select: SelectFn, selector: Selector, inp: SelectorInput) -> tuple[tuple[bool, int, int, int, bool], str]:
    """Run a selector on a concrete input: its answer in SymElection's shape, and a problem with its
    form (receivers out of list order, an exception other than NoEligibleLeader) or ''."""
    try:
        e = select(selector, inp)
    except NoEligibleLeader:
        return election_tuple(None), ""
    except Exception as ex:  # noqa: BLE001 - a selector that crashes is refuted, not a tool error
        return election_tuple(None), f"raised {type(ex).__name__}: {ex}"
    source = inp.target if selector == Selector.REASSIGNED_PARTITION else inp.assignment
    if not isinstance(e, Election):
        return election_tuple(None), f"returned {e!r}, not an Election"
    if tuple(r for r in source if r in e.receivers) != tuple(e.receivers) or len(set(e.receivers)) != len(e.receivers):
        return election_tuple(e), f"receivers {list(e.receivers)} are not in the order of {list(source)}"
    return election_tuple(e), ""


def default_select(selector: Selector, inp: SelectorInput) -> Election:
    return SELECTORS[selector](inp)


def sequences(n: int, min_len: int = 1) -> Iterator[tuple[int, ...]]:
    """Every ordered list of distinct broker ids from 1..n, of length min_len..n."""
    ids = range(1, n + 1)
    for k in range(min_len, n + 1):
        yield from itertools.permutations(ids, k)


def inputs(selector: Selector, n: int) -> Iterator[SelectorInput]:
    """Every input over brokers 1..n that the selector can tell apart.

    The assignment (or, for ReassignedPartition, the target) ranges over every ordered list of
    distinct ids; the masks over every subset of 1..n; the leader over 0..n; unclean election over
    both values. Fields a selector's contract does not mention are fixed: the target for the
    others, the shutting-down set except for ControlledShutdown.
    """
    masks = range(0, 1 << (n + 1), 2)
    reassigned = selector == Selector.REASSIGNED_PARTITION
    for seq in sequences(n):
        ar = tuple(range(1, n + 1)) if reassigned else seq
        target = seq if reassigned else ()
        for leader in range(n + 1):
            for isr in masks:
                for live in masks:
                    for sd in (masks if selector == Selector.CONTROLLED_SHUTDOWN else (0,)):
                        for unclean in ((False, True) if selector == Selector.OFFLINE_PARTITION else (False,)):
                            yield SelectorInput(ar, leader, isr, live, sd, target, unclean)


def random_input(rng: random.Random, n: int) -> SelectorInput:
    ids = list(range(1, n + 1))
    k = rng.randint(1, n)
    ar = tuple(rng.sample(ids, k))
    t = tuple(rng.sample(ids, rng.randint(0, n)))

    def m() -> int:
        return sum(1 << b for b in ids if rng.random() < 0.5)

    return SelectorInput(ar, rng.choice([0, *ids]), m(), m(), m() if rng.random() < 0.7 else 0, t,
                         rng.random() < 0.5)


def violated_clauses(selector: Selector, inp: SelectorInput, out: tuple[bool, int, int, int, bool]) -> list[str]:
    v = py_view(inp, out)
    bad = []
    for c in CONTRACTS[selector]:
        if c.premise is not None and not c.premise(v):
            continue
        if not c.check(v):
            bad.append(c.name)
    return bad


# ============================================================================ text
def describe_input(inp: SelectorInput, selector: Selector | None = None) -> str:
    parts = [f"assignment {list(inp.assignment)}"]
    if selector in (None, Selector.REASSIGNED_PARTITION) or inp.target:
        parts.append(f"target {list(inp.target)}")
    parts += [f"leader {inp.leader or 'none'}", f"ISR {render(inp.isr)}", f"live {render(inp.live)}",
              f"shutting down {render(inp.shutting_down)}",
              f"unclean election {'on' if inp.unclean_election else 'off'}"]
    return ", ".join(parts)


def describe_output(out: tuple[bool, int, int, int, bool], problem: str = "") -> str:
    ok, leader, isr, receivers, unclean = out
    if problem:
        return problem
    if not ok:
        return NoEligibleLeader.__name__
    return (f"picked {leader}{' (unclean)' if unclean else ''}, new ISR {render(isr)}, "
            f"LeaderAndIsr to {render(receivers)}")


def input_json(inp: SelectorInput) -> dict[str, Any]:
    return {"assignment": list(inp.assignment), "target": list(inp.target), "leader": inp.leader or None,
            "isr": list(members(inp.isr)), "live": list(members(inp.live)),
            "shutting_down": list(members(inp.shutting_down)), "unclean_election": bool(inp.unclean_election)}


def output_json(out: tuple[bool, int, int, int, bool], problem: str = "") -> dict[str, Any]:
    ok, leader, isr, receivers, unclean = out
    if problem:
        return {"error": problem}
    if not ok:
        return {"elected": False}
    return {"elected": True, "leader": leader, "isr": list(members(isr)), "receivers": list(members(receivers)),
            "unclean": unclean}


def _counterexample(selector: Selector, inp: SelectorInput, out: tuple[bool, int, int, int, bool],
                    problem: str = "", what: str = "") -> tuple[dict[str, Any], list[str]]:
    lines = [f"input:  {describe_input(inp, selector)}", f"answer: {describe_output(out, problem)}"]
    if what:
        lines.append(f"breaks: {what}")
    return {"selector": selector.value, "input": input_json(inp), "answer": output_json(out, problem)}, lines


# ============================================================================ proofs
@dataclass
class SelectorCheck:
    """The agreement check between the z3 encoding and the Python code (not a proof)."""

    selector: Selector
    inputs: int
    mismatch: tuple[SelectorInput, tuple, tuple] | None  # input, encoding's answer, code's answer
    seconds: float

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"selector": self.selector.value, "inputs": self.inputs, "agrees": self.mismatch is None,
                             "seconds": round(self.seconds, 6)}
        if self.mismatch:
            inp, enc, code = self.mismatch
            d["input"] = input_json(inp)
            d["encoding"] = output_json(enc)
            d["code"] = output_json(code)
        return d


def prove_clause(selector: Selector, clause: Clause, brokers: int, timeout: float | None,
                 encoding: Callable[[SymSelectorInput], SymElection] | None = None) -> Obligation:
    """Prove one clause for the encoding over every input up to ``brokers`` brokers."""
    i = SymSelectorInput.fresh(brokers)
    e = (encoding or ENCODINGS[selector])(i)
    v = z3_view(i, e)
    s = Solver(timeout)
    s.add(i.wellformed())
    if clause.premise is not None:
        s.add(clause.premise(v))
    s.add(z3.Not(clause.check(v)))
    answer = s.check()
    scope = f"every input over 1..{brokers} brokers"
    if clause.premise_text:
        scope += f", given {clause.premise_text}"
    ob = Obligation("selectors", f"{selector.value}: {clause.name}", "", answer.verdict, answer.seconds, scope)
    if answer.refuted:
        m = _small_model(s, i) or answer.model
        inp = i.decode(m)
        out = e.decode(m)
        ob.counterexample, ob.lines = _counterexample(selector, inp, out, what=clause.name)
    elif answer.unknown:
        ob.detail = f"z3: {answer.reason}"
    return ob


def _small_model(s: Solver, i: SymSelectorInput) -> z3.ModelRef | None:
    """A counterexample over as few brokers as possible (easier to read): ids and sets within 1..k."""
    for k in range(1, i.brokers + 1):
        ids = i.const(((1 << (k + 1)) - 1) & ~1)
        with s.frame():
            s.add(z3.ULE(i.length, i.const(k)), z3.ULE(i.target_length, i.const(k)), z3.ULE(i.leader, i.const(k)))
            s.add(*[bv_subset(m, ids) for m in (i.isr, i.live, i.shutting_down)])
            s.add(*[z3.ULE(a, i.const(k)) for a in (*i.assignment, *i.target)])
            m = s.check().model
        if m is not None:
            return m
    return None


def witness_note(selector: Selector, brokers: int, timeout: float | None) -> str | None:
    """A documented behaviour, exhibited by z3 on a concrete input ('' if z3 finds none)."""
    if selector not in NOTES:
        return None
    text, pred = NOTES[selector]
    i = SymSelectorInput.fresh(brokers)
    e = ENCODINGS[selector](i)
    s = Solver(timeout)
    s.add(i.wellformed(), pred(z3_view(i, e)))
    found = s.check()
    if not found.refuted:
        return ""
    m = _small_model(s, i) or found.model
    return f"{selector.value} {text}: {describe_input(i.decode(m), selector)} -> {describe_output(e.decode(m))}"


def crosscheck(selector: Selector, inp: SelectorInput, brokers: int | None = None,
               cache: dict | None = None) -> tuple[tuple, tuple, str]:
    """(encoding's answer, code's answer, problem with the code's answer) on one concrete input."""
    n = brokers or max([len(inp.assignment), len(inp.target), 1, *members(inp.isr | inp.live | inp.shutting_down),
                        inp.leader])
    key = (selector, n)
    if cache is not None and key in cache:
        i, e, packed = cache[key]
    else:
        i = SymSelectorInput.fresh(n)
        e = ENCODINGS[selector](i)
        packed = e.packed()
        if cache is not None:
            cache[key] = (i, e, packed)
    enc = e.substitute(i.substitution(inp), packed)
    code, problem = run_select(default_select, selector, inp)
    return _normal(enc), _normal(code), problem


def _normal(out: tuple[bool, int, int, int, bool]) -> tuple:
    """NoEligibleLeader carries no leader or ISR: compare only ``ok`` then."""
    return out if out[0] else (False,)


def agreement(selector: Selector, max_brokers: int, samples: int, seed: int = 0) -> SelectorCheck:
    """Random inputs over 1..max_brokers brokers on which the encoding and the code must agree."""
    rng = random.Random(seed)
    cache: dict = {}
    start = time.perf_counter()
    for k in range(samples):
        n = rng.randint(1, max_brokers)
        inp = random_input(rng, n)
        if selector == Selector.PREFERRED_REPLICA and not inp.assignment:
            continue
        enc, code, problem = crosscheck(selector, inp, max_brokers, cache)
        if enc != code or problem:
            return SelectorCheck(selector, k + 1, (inp, enc, code), time.perf_counter() - start)
    return SelectorCheck(selector, samples, None, time.perf_counter() - start)


def check_select_function(select: SelectFn, selector: Selector, brokers: int, generation: str,
                          samples: int = 0, sample_brokers: int | None = None, seed: int = 0) -> list[Obligation]:
    """Check a Python ``select`` (the default one or a variant's) against the contract.

    Every input over 1..``brokers`` brokers is enumerated (:func:`inputs`): each clause is PROVED for
    that bound, or REFUTED with the first input that breaks it. ``samples`` random inputs over up to
    ``sample_brokers`` brokers then look for counterexamples beyond the bound (they can refute a
    clause, never prove one).
    """
    clauses = CONTRACTS[selector]
    start = time.perf_counter()
    broken: dict[str, tuple[SelectorInput, tuple, str]] = {}
    problem_seen: tuple[SelectorInput, tuple, str] | None = None
    count = 0

    def examine(inp: SelectorInput) -> None:
        nonlocal problem_seen
        out, problem = run_select(select, selector, inp)
        if problem and problem_seen is None:
            problem_seen = (inp, out, problem)
        v = py_view(inp, out)
        for c in clauses:
            if c.name in broken:
                continue
            if c.premise is not None and not c.premise(v):
                continue
            if not c.check(v):
                broken[c.name] = (inp, out, problem)

    for inp in inputs(selector, brokers):
        count += 1
        examine(inp)
    enumerated = time.perf_counter() - start
    rng = random.Random(seed)
    top = max(brokers, sample_brokers or brokers)
    for _ in range(samples):
        inp = random_input(rng, rng.randint(1, top))
        if selector != Selector.REASSIGNED_PARTITION and not inp.assignment:
            continue
        examine(inp)
    seconds = time.perf_counter() - start
    scope = f"all {count:,} inputs over 1..{brokers} brokers"
    if samples:
        scope += f" + {samples:,} random inputs up to {top} brokers"
    out: list[Obligation] = []
    for c in clauses:
        scope_c = scope + (f", given {c.premise_text}" if c.premise_text else "")
        if c.name in broken:
            inp, answer, problem = broken[c.name]
            ob = Obligation("selectors", f"{selector.value}: {c.name}", generation, Verdict.REFUTED,
                            seconds / len(clauses), scope_c, method="exhaustive")
            ob.counterexample, ob.lines = _counterexample(selector, inp, answer, problem, c.name)
        else:
            ob = Obligation("selectors", f"{selector.value}: {c.name}", generation, Verdict.PROVED,
                            enumerated / len(clauses), scope_c, method="exhaustive")
        out.append(ob)
    if problem_seen is not None:
        inp, answer, problem = problem_seen
        ob = Obligation("selectors", f"{selector.value}: answers with a well-formed Election or NoEligibleLeader",
                        generation, Verdict.REFUTED, 0.0, scope, method="exhaustive")
        ob.counterexample, ob.lines = _counterexample(selector, inp, answer, problem, "well-formed answer")
        out.append(ob)
    return out


@dataclass
class SelectorReport:
    obligations: list[Obligation]
    agreement: list[SelectorCheck]
    notes: list[str]
    generation: str
    symbolic: bool


def prove_selectors(max_brokers: int = 8, timeout: float | None = 30.0, select: SelectFn | None = None,
                    generation: str = "kafka-0.8", exhaustive_brokers: int = 3, samples: int = 500,
                    selectors: Sequence[Selector] = ORDER, progress: Progress = no_progress) -> SelectorReport:
    """Every selector against its contract.

    With ``select=None`` (the default protocol): each clause is proved by z3 for the encoding over
    1..max_brokers brokers, the real code is checked against each clause for every input over
    1..exhaustive_brokers brokers, and encoding and code are compared on ``samples`` random inputs.
    With a variant's ``select``: enumeration up to ``exhaustive_brokers`` and ``samples`` random
    inputs up to ``max_brokers`` (z3 cannot read Python).
    """
    if max_brokers < 1:
        raise ValueError("max_brokers must be at least 1")
    obligations: list[Obligation] = []
    checks: list[SelectorCheck] = []
    notes: list[str] = []
    symbolic = select is None
    code = select or default_select
    for sel in selectors:
        if symbolic:
            for c in CONTRACTS[sel]:
                progress(f"z3: {sel.value}: {c.name}")
                ob = prove_clause(sel, c, max_brokers, timeout)
                ob.generation = generation
                obligations.append(ob)
            progress(f"code vs contract: {sel.value}")
            for ob in check_select_function(code, sel, min(exhaustive_brokers, max_brokers), generation):
                ob.property += " [code]"
                obligations.append(ob)
            if samples:
                progress(f"encoding vs code: {sel.value}")
                checks.append(agreement(sel, max_brokers, samples))
            note = witness_note(sel, max_brokers, timeout)
            if note:
                notes.append(note)
        else:
            progress(f"variant vs contract: {sel.value}")
            obligations += check_select_function(code, sel, min(exhaustive_brokers, max_brokers), generation,
                                                 samples=samples, sample_brokers=max_brokers)
    return SelectorReport(obligations, checks, notes, generation, symbolic)
