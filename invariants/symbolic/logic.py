"""The logic layer: every question the symbolic checks put to z3, asked and answered one way.

A symbolic check is a claim whose counterexamples are the models of some constraints. The claim is
PROVED when z3 answers *unsat* (no counterexample exists within the stated scope), REFUTED when it
answers *sat* (its model is the counterexample, which the caller decodes into the model's own
values), and UNKNOWN when z3 gives up, usually at the time limit (with z3's reason): an unknown is
never reported as proved. This module owns the solver work behind that, written once:

- :class:`Solver`: one z3 solver with a time limit per check, whose frames are pushed and popped
  as a context manager (:meth:`Solver.frame`), answering each check with an :class:`Answer`;
- :class:`Query` and :func:`check`: a fixed base of constraints put to a fresh solver for every
  check, the form the replication encoding's checks take (z3's non-incremental mode preprocesses
  and bit-blasts the whole problem, several times faster there than push/pop or assumptions);
- :func:`truth`, :func:`number`, :func:`unsigned`: values read out of a counterexample's model;
- the two obligations of an inductive argument, in mypyvy's style: :func:`initiation` (every
  initial state satisfies the invariant) and :func:`consecution` (every step from a state
  satisfying it leads to a state satisfying it), each a :class:`Judgement` that carries the states
  the counterexample is about when it is refuted.

Building terms stays with the encodings (plain z3 expressions): solving, and turning z3's answers
into verdicts, happens here. The order of the constraints a check asserts is the caller's, kept as
given: z3's models (and so the counterexamples printed) depend on it.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

import z3

from .verdicts import Verdict

S = TypeVar("S")  # a symbolic state: a replication SymState, a transitions Env, ...
D = TypeVar("D")  # what a symbolic state decodes into


def verdict_of(result: z3.CheckSatResult) -> Verdict:
    """``unsat`` (no counterexample) is PROVED, ``sat`` REFUTED, anything else UNKNOWN."""
    if result == z3.unsat:
        return Verdict.PROVED
    if result == z3.sat:
        return Verdict.REFUTED
    return Verdict.UNKNOWN


@dataclass(frozen=True)
class Answer:
    """z3's answer to one check, as a verdict on the claim that the constraints have no model."""

    verdict: Verdict  # PROVED, REFUTED or UNKNOWN (never NOT INDUCTIVE: that is prove inductive's word)
    model: z3.ModelRef | None = None  # the counterexample (a model of the constraints) when REFUTED
    reason: str = ""  # why z3 gave up, when UNKNOWN
    seconds: float = 0.0  # the time z3 took to answer

    @property
    def proved(self) -> bool:
        return self.verdict == Verdict.PROVED

    @property
    def refuted(self) -> bool:
        return self.verdict == Verdict.REFUTED

    @property
    def unknown(self) -> bool:
        return self.verdict == Verdict.UNKNOWN


class Solver:
    """One z3 solver: constraints added stay until the frame they were added in is left.

    ``timeout`` is the time limit of each check in seconds (None: no limit); z3 answers ``unknown``
    when it is reached, which :meth:`check` reports as UNKNOWN with z3's reason.
    """

    def __init__(self, timeout: float | None = None, *constraints: z3.BoolRef) -> None:
        self._z3 = z3.Solver()
        if timeout is not None:
            self._z3.set("timeout", max(1, int(timeout * 1000)))
        self.add(*constraints)

    def add(self, *constraints: z3.BoolRef) -> None:
        self._z3.add(*constraints)

    @contextmanager
    def frame(self, *constraints: z3.BoolRef) -> Iterator[Solver]:
        """A frame (push) holding ``constraints`` for the ``with`` block; left (pop) however the block
        ends, so that the solver is as it was before."""
        self._z3.push()
        try:
            self.add(*constraints)
            yield self
        finally:
            self._z3.pop()

    def check(self, *assumptions: z3.BoolRef) -> Answer:
        """Is there a model of the constraints (and of ``assumptions``, for this check only)?"""
        start = time.perf_counter()
        r = self._z3.check(*assumptions)
        seconds = time.perf_counter() - start
        verdict = verdict_of(r)
        if verdict == Verdict.REFUTED:
            return Answer(verdict, self._z3.model(), seconds=seconds)
        if verdict == Verdict.UNKNOWN:
            return Answer(verdict, reason=self._z3.reason_unknown(), seconds=seconds)
        return Answer(verdict, seconds=seconds)


@dataclass(frozen=True)
class Query:
    """A fixed base of constraints, put to a fresh solver with the extra constraints of each check
    (the base first): the same question asked many times with different extras, as Houdini asks of
    each action, without incremental solving (see the module's docstring)."""

    base: tuple[z3.BoolRef, ...]
    timeout: float | None = None

    def check(self, *extra: z3.BoolRef) -> Answer:
        return Solver(self.timeout, *self.base, *extra).check()


def check(*constraints: z3.BoolRef, timeout: float | None = None) -> Answer:
    """One check on a fresh solver: is there a model of ``constraints``?"""
    return Query(constraints, timeout).check()


# ============================================================================ reading a model
def truth(model: z3.ModelRef, term: z3.ExprRef) -> bool:
    """The value of a Boolean term in ``model`` (a variable the model leaves free is false)."""
    return z3.is_true(model.eval(term, model_completion=True))


def number(model: z3.ModelRef, term: z3.ExprRef) -> int:
    """The value of a number in ``model``: a bit-vector read as signed (the replication encoding's
    numbers are signed bit-vectors), an integer as it is."""
    v = model.eval(term, model_completion=True)
    return v.as_signed_long() if z3.is_bv_value(v) else v.as_long()


def unsigned(model: z3.ModelRef, term: z3.ExprRef) -> int:
    """The value of a bit-vector in ``model`` read as unsigned (broker masks and ids of the
    selectors' encoding, whose top bit is a broker)."""
    return model.eval(term, model_completion=True).as_long()


# ============================================================================ initiation and consecution
@dataclass(frozen=True)
class Judgement(Generic[S]):
    """The verdict of an initiation or a consecution check, with the symbolic states its
    counterexample is about: ``(state,)`` for initiation, ``(pre, post)`` for consecution."""

    answer: Answer
    states: tuple[S, ...]

    @property
    def verdict(self) -> Verdict:
        return self.answer.verdict

    @property
    def model(self) -> z3.ModelRef | None:
        return self.answer.model

    def counterexample(self, decode: Callable[[z3.ModelRef, S], D]) -> tuple[D, ...] | None:
        """The counterexample's states, each decoded by ``decode`` (None unless refuted)."""
        if self.answer.model is None:
            return None
        return tuple(decode(self.answer.model, s) for s in self.states)


def initiation(state: S, init: Sequence[z3.BoolRef], inv: z3.BoolRef,
               timeout: float | None = None) -> Judgement[S]:
    """``init => inv``: does every state satisfying ``init`` (the constraints that make ``state``
    an initial state, its domain included) satisfy ``inv``? Refuted by an initial state breaking it."""
    return Judgement(check(*init, z3.Not(inv), timeout=timeout), (state,))


def consecution(step: Query, pre: S, post: S, inv: Sequence[z3.BoolRef],
                goal: z3.BoolRef | Sequence[z3.BoolRef]) -> Judgement[S]:
    """``inv and step => goal'``: does every step from ``pre`` to ``post`` that ``step`` allows (its
    base: the transition relation and the domain, kept for many checks) from a state satisfying
    ``inv`` (terms over ``pre``) lead to a state satisfying ``goal`` (over ``post``)? A sequence of
    goals asks for all of them: refuted by a step that breaks at least one (the model says which)."""
    violation = z3.Not(goal) if isinstance(goal, z3.ExprRef) else z3.Or([z3.Not(g) for g in goal])
    return Judgement(step.check(*inv, violation), (pre, post))


__all__ = ["Answer", "Solver", "Query", "check", "verdict_of", "truth", "number", "unsigned", "Judgement",
           "initiation", "consecution"]
