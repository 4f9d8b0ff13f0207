"""Inductive invariants of the replication encoding by Houdini (specs/08-symbolic.md#inductive-invariants).

A property is proved here when it belongs to a set of state predicates that holds in the initial
state and that every action preserves: ``Inv(s) and step(s, s') => Inv(s')`` for every state ``s``
within the encoding's bounds (logs of at most ``max_records`` records, request queues of at most
``queue`` requests) — whatever the epochs, versions and remaining fault budgets, so for any
number of steps.

The set is found by Houdini's algorithm: start from the safety properties plus the pool of
**strengthening candidates** (:mod:`.pool`: facts about the protocol's bookkeeping: record offsets,
znode versions, who may lead in which epoch, what followers hold), and repeatedly drop every member
that some action can break from a state satisfying all the others. What remains is the largest
inductive subset of the pool. A safety property that is dropped gets a **counterexample to
induction** (:mod:`.cti`): a state satisfying every other remaining member, the action, and the
state after it where the property fails. A counterexample to induction is not a reachable
violation; bounded model checking (:mod:`.bmc`) says whether one is.

:func:`prove_inductive` runs the phases (:func:`encode`, :func:`houdini`, :func:`explain`, the
transition properties, the verdicts); :func:`check_preserved` asks one property of one action kind
against a pinned strengthening, quickly.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from .candidates import Pred
from .cti import Cti, counterexample_to_induction
from .instance import Instance
from .logic import Judgement, Query, Solver, consecution, truth
from .pool import HIGH_WATERMARK_STRENGTHENING, bounds, candidates_for, member_term
from .replication import Encoding, choose
from .types import SymState
from .verdicts import Obligation, Progress, Verdict, no_progress


# ============================================================================ the order of counterexamples, the results
_PREFERENCE = ("DeliverRequest: LeaderAndIsr, becomes follower", "DeliverRequest: LeaderAndIsr, becomes leader",
               "Fetch", "Produce", "ShrinkIsr")


def _preference(inst: Instance) -> tuple[int, str]:
    """Order in which actions are searched for a counterexample to show: the replication path
    before faults, the controller's broker change last (its queries are the costly ones)."""
    for i, k in enumerate(_PREFERENCE):
        if inst.kind.startswith(k):
            return (i, inst.kind)
    return (len(_PREFERENCE) + (1 if inst.name == "ProcessBrokerChange" else 0), inst.kind)


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
    """Which members of the pool hold in the initial state: one solver holding the pinned initial
    state, each member's negation checked as an assumption (the state is concrete, so z3 decides)."""
    s = enc.fresh("init")
    solver = Solver(None, enc.init_pin(s))
    return {n: solver.check(z3.Not(f(enc, s))).proved for n, f in preds.items()}


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
    steps: list[Query]  # per instance: the bounded pre-state, the guard, a legal step that does not overflow
    illegal: list[Query] = field(default_factory=list)  # per instance: the step is an illegal move

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
    steps = [Query((base, inst.guard, z3.Not(inst.effect.overflow), z3.Not(inst.illegal)), timeout) for inst in insts]
    illegal = [Query((base, inst.guard, inst.illegal), timeout) for inst in insts]
    return Encoded(enc, preds, tuple(n for n, ok in init.items() if not ok), s, insts, pre_terms, post_terms, steps,
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
                j = consecution(e.steps[k], e.pre, inst.effect, [e.pre_terms[n] for n in live], [post[n] for n in live])
                timing[inst.kind] = timing.get(inst.kind, 0.0) + time.perf_counter() - t0
                queries += 1
                if j.answer.proved:
                    break
                if j.answer.unknown:
                    for n in live:
                        unknown.setdefault(n, f"z3 gave up on {inst.label()}")
                    break
                broken = [n for n in live if not truth(j.answer.model, post[n])]
                cti = counterexample_to_induction(e.enc, inst, j)
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
            j = consecution(e.steps[k], e.pre, inst.effect, inv_terms + [e.pre_terms[n] for n in todo],
                            [post[n] for n in todo])
            queries += 1
            if not j.answer.refuted:
                break
            broken = [n for n in todo if not truth(j.answer.model, post[n])]
            if not broken:
                break
            cti = counterexample_to_induction(e.enc, inst, j)
            for n in broken:
                first.setdefault(n, cti)
                if inst.kind not in per_kind.setdefault(n, []):
                    per_kind[n].append(inst.kind)
                todo.remove(n)
    return Explained(first, per_kind, queries)


def _step_check(e: Encoded, judge: Callable[[int, Instance], Judgement[SymState] | None]) -> StepCheck:
    """Phase 4's loop over the actions: each one's judgement (None: the action cannot break the
    property), the first counterexample kept, the actions z3 gave up on listed."""
    unknown: list[str] = []
    cti: Cti | None = None
    queries = 0
    for k, inst in enumerate(e.insts):
        j = judge(k, inst)
        if j is None:
            continue
        queries += 1
        if j.answer.refuted and cti is None:
            cti = counterexample_to_induction(e.enc, inst, j)
        elif j.answer.unknown:
            unknown.append(inst.label())
    return StepCheck(cti, unknown, queries)


def check_epochs_monotonic(e: Encoded, kept: list[str]) -> StepCheck:
    """Phase 4: does any step from a state satisfying the final invariant (``kept``) lower an epoch?"""
    inv = [e.pre_terms[n] for n in kept]

    def judge(k: int, inst: Instance) -> Judgement[SymState]:
        # a predicate of the state after: its term is referenced only by the query while z3 checks
        return consecution(e.steps[k], e.pre, inst.effect, inv,
                           lambda post: e.enc.step_properties(e.pre, post)["EpochsMonotonic"])

    return _step_check(e, judge)


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

    def judge(k: int, inst: Instance) -> Judgement[SymState] | None:
        if z3.is_false(z3.simplify(inst.illegal)):
            return None  # this action never makes an illegal move
        return Judgement(e.illegal[k].check(*inv), (e.pre, inst.effect))

    return _step_check(e, judge)


def _step_verdict(e: Encoded, name: str, check: StepCheck, seconds: float, refuted: Callable[[str], str],
                  proved: str) -> Obligation:
    """Phase 5 for a property of steps: REFUTED with the first counterexample (``refuted`` says what
    the step of that kind did), UNKNOWN where z3 gave up, else PROVED (``proved`` says what)."""
    gen, scope = e.generation, _scope(e.enc)
    if check.cti is not None:
        return InductionObligation("inductive", name, gen, Verdict.REFUTED, seconds, scope,
                                   detail=refuted(check.cti.kind), counterexample=check.cti.to_json(),
                                   lines=check.cti.lines, cti=check.cti)
    if check.unknown:
        return InductionObligation("inductive", name, gen, Verdict.UNKNOWN, seconds, scope,
                                   detail="z3 gave up on " + ", ".join(check.unknown))
    return InductionObligation("inductive", name, gen, Verdict.PROVED, seconds, scope, detail=proved)


def only_valid_transitions_verdict(e: Encoded, check: StepCheck, seconds: float) -> Obligation:
    """Phase 5 for OnlyValidTransitions (see :func:`check_only_valid_transitions`)."""
    return _step_verdict(e, "OnlyValidTransitions", check, seconds,
                         lambda kind: f"a step from a state satisfying the invariant makes a move outside its "
                                      f"state-machine table ({kind}; the state after is the encoding's, "
                                      "meaningless: the model refuses the step)",
                         "no step from a state satisfying the invariant is an illegal move")


def epochs_monotonic_verdict(e: Encoded, check: StepCheck, seconds: float) -> Obligation:
    """Phase 5, for the transition property (see :func:`check_epochs_monotonic`)."""
    return _step_verdict(e, "EpochsMonotonic", check, seconds,
                         lambda kind: f"a step from a state satisfying the invariant lowers an epoch ({kind})",
                         "every step from a state satisfying the invariant")


def prove_inductive(cfg: Any, generation_name: str | None = None, timeout: float | None = 300.0,
                    queue: int | None = None, progress: Progress = no_progress,
                    candidates: tuple[tuple[str, Pred], ...] | None = None,
                    per_action: bool | str = True, rule: Any = None,
                    properties: Sequence[str] | None = None) -> InductionResult:
    """Houdini over the safety properties and ``candidates`` for the encoding of ``cfg``.

    The phases: :func:`encode` the pool and one query per action; :func:`houdini` to the largest
    inductive subset; :func:`explain` each dropped safety property action by action (with
    ``per_action``; ``"all"`` includes the broker-change cases); :func:`check_epochs_monotonic`
    against the final invariant; then the verdicts (:func:`safety_verdicts`,
    :func:`epochs_monotonic_verdict`). Every counterexample to induction is built by
    :func:`counterexample_to_induction`.

    ``properties`` (``--property``): give verdicts on these only (:func:`~.replication.choose`; a
    name the encoding does not cover is refused before any query). Every safety property stays in
    Houdini's pool all the same: the properties strengthen one another, so leaving one out could
    turn a proved property into an unproved one, and a chosen property's verdict is the one a full
    run gives it. What the restriction saves is the per-property work: the explanations, the
    transition checks not chosen (and, in the command, the search for reachable pre-states)."""
    chosen = choose(Encoding(cfg, generation_name, queue, rule=rule), properties)  # cheap: no z3 term yet
    start = time.perf_counter()
    e = encode(cfg, generation_name, timeout, queue, candidates, rule)
    fix = houdini(e, progress)
    dropped, per_kind, queries = dict(fix.dropped), fix.per_kind, fix.queries
    always = e.enc.always()
    lost = [n for n in always if n in dropped and isinstance(dropped[n], Cti) and n in chosen]
    if lost and per_action:
        why = explain(e, fix, lost, per_action == "all", progress)
        dropped.update(why.first)
        per_kind, queries = why.per_kind, queries + why.queries
    safety_seconds = time.perf_counter() - start
    obligations = [o for o in safety_verdicts(e, fix, dropped, per_kind, safety_seconds) if o.property in chosen]
    if "EpochsMonotonic" in chosen:
        em = check_epochs_monotonic(e, fix.kept)
        queries += em.queries
        obligations.append(epochs_monotonic_verdict(e, em, time.perf_counter() - start))
    seconds = time.perf_counter() - start
    if "OnlyValidTransitions" in chosen:
        ov = check_only_valid_transitions(e, fix.kept)
        obligations.append(only_valid_transitions_verdict(e, ov, time.perf_counter() - start))
        queries += ov.queries
    strengthening = [n for n in fix.kept if n not in always]
    return InductionResult(e.generation, strengthening, {n: d for n, d in dropped.items() if n not in always},
                           obligations, queries, seconds, per_kind, fix.timing)


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
            # the assumed invariant is part of the step's base: one query per instance
            step = Query((*base, inst.guard, z3.Not(inst.effect.overflow)), timeout)
            post = member_term(enc, inst.effect, prop, preds)
            j = consecution(step, s, inst.effect, (), post)
            if j.answer.refuted:
                cti = counterexample_to_induction(enc, inst, j)
                verdict = Verdict.REFUTED
                break
            if j.answer.unknown:
                verdict = Verdict.UNKNOWN
        ob = InductionObligation("inductive", f"{prop} preserved by {kind}", enc.rule.name, verdict,
                                 time.perf_counter() - t0, scope)
        if cti is not None:
            ob.lines, ob.counterexample, ob.cti = cti.lines, cti.to_json(), cti
        out.append(ob)
    return out



__all__ = ["prove_inductive", "check_preserved", "InductionResult", "InductionObligation", "encode", "houdini",
           "explain", "check_epochs_monotonic", "safety_verdicts", "epochs_monotonic_verdict",
           "check_only_valid_transitions", "only_valid_transitions_verdict", "Encoded", "Fixpoint",
           "Explained", "StepCheck"]
