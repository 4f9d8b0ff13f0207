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
into verdicts, happens here. z3's answers, and so the counterexamples printed, depend on more than
the constraints: on their order, which is the caller's, kept as given; and on the ids of z3's terms,
which z3 reuses once terms are released, so on when solvers, models and the terms of a check are
released. Each check here keeps the lifetimes it always had: a :class:`Solver` lives as long as its
caller holds it, a :class:`Query`'s solver as long as its check, a model is read only when it is
used, and the formulas of :func:`initiation` and :func:`consecution`, given as predicates, are held
only by the solver while it checks.
"""
from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar, Union

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
    """z3's answer to one check, as a verdict on the claim that the constraints have no model.

    When REFUTED, :attr:`model` is the counterexample, read from the solver that answered at its first
    use (a check whose model nobody reads never builds one) and kept by the answer; it must be read
    while that solver lives and before it answers another check. An answer does not keep its solver
    alive: the caller's :class:`Solver` lives as long as the caller holds it, and a :class:`Query`'s
    as long as its check. z3 reuses the ids of released terms and its answers depend on them, so
    every check keeps the lifetimes it always had, and its counterexamples with them.
    """

    verdict: Verdict  # PROVED, REFUTED or UNKNOWN (never NOT INDUCTIVE: that is prove inductive's word)
    reason: str = ""  # why z3 gave up, when UNKNOWN
    seconds: float = 0.0  # the time z3 took to answer
    _model: z3.ModelRef | None = field(default=None, repr=False, compare=False)
    _solver: Callable[[], Solver | None] | None = field(default=None, repr=False, compare=False)  # a weak reference
    _check: int = field(default=0, repr=False, compare=False)  # which of its solver's checks this is

    @property
    def model(self) -> z3.ModelRef | None:
        """The counterexample (a model of the constraints) when REFUTED, else None."""
        if self.verdict != Verdict.REFUTED:
            return None
        if self._model is None:
            solver = self._solver() if self._solver is not None else None
            if solver is None or solver.checks != self._check:
                raise RuntimeError("an answer's model is read while its solver lives and before it checks again")
            object.__setattr__(self, "_model", solver.z3_model())
        return self._model

    def detached(self) -> Answer:
        """This answer with its model read (if any), no longer tied to its solver: for a check whose
        solver is released when it returns."""
        return replace(self, _model=self.model, _solver=None)

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
        self.checks = 0  # how many checks it has answered
        if constraints:
            self.add(*constraints)

    def add(self, *constraints: z3.BoolRef) -> None:
        self._z3.add(*constraints)

    @contextmanager
    def frame(self) -> Iterator[Solver]:
        """A frame (push) for the ``with`` block: what is added in it is gone when it is left (pop),
        however the block ends. The constraints are built and added inside the block, after the
        push (which may build z3's own terms first: z3's answers depend on their order)."""
        self._z3.push()
        try:
            yield self
        finally:
            self._z3.pop()

    def check(self, *assumptions: z3.BoolRef) -> Answer:
        """Is there a model of the constraints (and of ``assumptions``, for this check only)?"""
        start = time.perf_counter()
        r = self._z3.check(*assumptions)
        seconds = time.perf_counter() - start
        self.checks += 1
        verdict = verdict_of(r)
        reason = self._z3.reason_unknown() if verdict == Verdict.UNKNOWN else ""
        return Answer(verdict, reason, seconds, _solver=weakref.ref(self), _check=self.checks)

    def z3_model(self) -> z3.ModelRef:
        """z3's model of the last check (for :attr:`Answer.model`)."""
        return self._z3.model()


@dataclass(frozen=True)
class Query:
    """A fixed base of constraints, put to a fresh solver with the extra constraints of each check
    (the base first): the same question asked many times with different extras, as Houdini asks of
    each action, without incremental solving (see the module's docstring). The model, if any, is read
    before the check returns and its solver is released."""

    base: tuple[z3.BoolRef, ...]
    timeout: float | None = None

    def check(self, *extra: z3.BoolRef) -> Answer:
        solver = Solver(self.timeout, *self.base, *extra)
        return solver.check().detached()


def check(*constraints: z3.BoolRef, timeout: float | None = None) -> Answer:
    """One check on a fresh solver, released when it returns: is there a model of ``constraints``?"""
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
Formula = Union[z3.BoolRef, Callable[[S], z3.BoolRef]]
"""A formula over a symbolic state: a term already built over it, or a predicate to apply to it."""


def _at(f: Formula[S], state: S) -> z3.BoolRef:
    return f(state) if callable(f) else f


def _violation(goal: Formula[S] | Sequence[Formula[S]], post: S) -> z3.BoolRef:
    """``post`` breaks ``goal`` (a sequence of goals: breaks at least one of them)."""
    if isinstance(goal, Sequence):
        return z3.Or([z3.Not(_at(g, post)) for g in goal])
    return z3.Not(_at(goal, post))


@dataclass(frozen=True)
class Judgement(Generic[S]):
    """The verdict of an initiation or a consecution check, with the symbolic states its
    counterexample is about: ``(state,)`` for initiation, ``(pre, post)`` for consecution. Its
    answer is detached (:meth:`Answer.detached`): the counterexample outlives the solver."""

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
        model = self.answer.model
        if model is None:
            return None
        return tuple(decode(model, s) for s in self.states)


def initiation(on: Solver, state: S, init: Sequence[Formula[S]], inv: Formula[S]) -> Judgement[S]:
    """``init => inv``: does every state satisfying ``init`` (what makes ``state`` an initial state,
    its domain included) satisfy ``inv``? Asked of the caller's solver ``on``, which keeps the
    constraints; refuted by an initial state breaking ``inv``. Given as predicates, the formulas are
    built here and referenced only by the solver while it checks (z3's answers can depend on it)."""
    on.add(*[_at(f, state) for f in init], z3.Not(_at(inv, state)))
    return Judgement(on.check().detached(), (state,))


def consecution(on: Query | Solver, pre: S, post: S, inv: Sequence[Formula[S]],
                goal: Formula[S] | Sequence[Formula[S]]) -> Judgement[S]:
    """``inv and step => goal'``: does every step from ``pre`` to ``post`` that the constraints of
    ``on`` allow (the transition relation and the domain: a :class:`Query`'s base, kept for many
    checks, or the caller's :class:`Solver`'s constraints) from a state satisfying ``inv`` (over
    ``pre``) lead to a state satisfying ``goal`` (over ``post``)? A sequence of goals asks for all of
    them: refuted by a step that breaks at least one (the model says which). On a :class:`Solver`,
    the formulas are added to it, and given as predicates they are referenced only by it while it
    checks, as in :func:`initiation`."""
    if isinstance(on, Query):
        assumed = [_at(f, pre) for f in inv]
        violation = _violation(goal, post)
        return Judgement(on.check(*assumed, violation), (pre, post))
    on.add(*[_at(f, pre) for f in inv], _violation(goal, post))
    return Judgement(on.check().detached(), (pre, post))


__all__ = ["Answer", "Solver", "Query", "check", "verdict_of", "truth", "number", "unsigned", "Formula", "Judgement",
           "initiation", "consecution"]
