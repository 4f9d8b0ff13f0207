"""Bounded model checking of the replication encoding (specs/08-symbolic.md#bounded-model-checking).

:class:`Unroller` chains ``depth`` steps of :class:`~.replication.Encoding` from the initial state
(each step one :class:`~.instance.Instance`, chosen by a symbolic index); :func:`bmc` asks, depth by
depth, for the shortest violation of each property. Every counterexample is replayed by the model
(:func:`replay`) and must break the property there too, so a REFUTED verdict never rests on the
encoding alone; an illegal state-machine move (OnlyValidTransitions) is the step the model refuses.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import z3

from isrcheck.model.actions import Action, apply, enabled_actions
from isrcheck.model.config import Config
from isrcheck.model.state import State
from isrcheck.model.tables import IllegalTransition

from ..properties import ALL_PROPERTIES
from .instance import Instance
from .replication import STEP_FAULTS, Encoding, choose
from .logic import Answer, Solver, number, truth
from .types import as_bool, conj, disj, fresh_name
from .verdicts import Obligation, Verdict

B = z3.BoolVal

Trace = list[tuple[Action | None, State | None]]
"""A replayed counterexample: (the action that led to it, or None first; the state, or None after
the step the model refuses)."""


@dataclass
class BmcObligation(Obligation):
    """A bounded model checking verdict; a refuted one carries the trace the model replayed."""

    trace: Trace | None = None


@dataclass
class BmcResult:
    depth: int
    obligations: list[Obligation]
    witnessed: dict[str, int | None]
    overflow_depth: int | None
    seconds: float


def _decode_trace(enc: Encoding, m: z3.ModelRef, acts: list[z3.ArithRef],
                  steps: list[list[Instance]]) -> list[Action]:
    out = []
    for t, a in enumerate(acts):
        k = number(m, a)
        out.append(enc.action_of(steps[t][k], m))
    return out


def replay(enc: Encoding, actions: Sequence[Action], start: State | None = None) -> list[State]:
    """Run a BMC trace through the model itself; every action must be enabled."""
    s = enc.init_state if start is None else start
    states = [s]
    for i, a in enumerate(actions):
        if a not in enabled_actions(enc.protocol, s):
            raise RuntimeError(f"the encoding disagrees with the model: step {i + 1}, {a}, is not enabled "
                               f"in the model (please report)")
        s = apply(enc.protocol, s, a)
        states.append(s)
    return states


class Unroller:
    """States s_0 .. s_d as fresh constants, s_0 the initial state, each step one action.

    The constraints are kept as a list: each query gets a fresh solver (z3's non-incremental mode
    preprocesses and bit-blasts the whole problem, several times faster here than incremental
    solving)."""

    def __init__(self, enc: Encoding, init: bool = True, merged: bool = False, start: State | None = None) -> None:
        self.enc = enc
        self.merged = merged
        self.states = [enc.fresh("s0")]
        first = enc.init_state if start is None else start
        self.constraints: list[z3.BoolRef] = [self.states[0].pin(first)] if init else []
        self.acts: list[z3.BitVecRef] = []
        self.steps: list[list[Instance]] = []
        # per step: the chosen action is one the model refuses (IllegalTransition); a path goes on
        # only through legal steps, so these are assumed false but where a query asks for one
        self.illegal: list[z3.BoolRef | bool] = []

    def extend(self) -> None:
        enc = self.enc
        t = len(self.acts)
        s = self.states[-1]
        insts = enc.actions(s) if self.merged else enc.instances(s)
        nxt = enc.fresh(f"s{t + 1}")
        act = z3.BitVec(fresh_name(f"act{t}"), 8)
        cs = self.constraints
        cs.append(z3.ULT(act, len(insts)))
        cur = s.leaves()
        effects = [i.effect.leaves() for i in insts]
        for k, inst in enumerate(insts):
            cs.append(z3.Implies(act == k, inst.guard))
        self.illegal.append(disj([conj(act == k, i.effect.illegal) for k, i in enumerate(insts)]))
        for j, leaf in enumerate(nxt.leaves()):
            term = cur[j]
            for k in reversed(range(len(insts))):
                e = effects[k][j]
                if not e.eq(cur[j]):
                    term = z3.If(act == k, e, term)
            cs.append(leaf == term)
        self.states.append(nxt)
        self.acts.append(act)
        self.steps.append(insts)

    def can_be_illegal(self, t: int) -> bool:
        """Whether step ``t`` (0-based) may be an illegal one at all (some instance can be)."""
        return self.illegal[t] is not False

    def check(self, goal: z3.BoolRef, timeout: float | None, illegal_last: bool = False) -> Answer:
        """Is ``goal`` reachable along legal steps (``illegal_last``: legal steps, then an illegal one)?
        REFUTED (a model: the path) when it is, PROVED when it is not."""
        solver = Solver(timeout)
        solver.add(*self.constraints)
        legal = self.illegal[:-1] if illegal_last else self.illegal
        solver.add(*[z3.Not(x) for x in legal if x is not False])
        if illegal_last:
            solver.add(as_bool(self.illegal[-1]))
        solver.add(goal)
        return solver.check().detached()


def _property_holds(name: str, states: Sequence[State]) -> bool:
    prop = next(p for p in ALL_PROPERTIES if p.name == name)
    if prop.kind == "transition":
        return prop.check(states[-2], states[-1])
    return prop.check(states[-1])


def _refused(enc: Encoding, s: State, a: Action) -> bool:
    """Whether the model refuses ``a`` in ``s`` with IllegalTransition (OnlyValidTransitions)."""
    try:
        apply(enc.protocol, s, a)
    except IllegalTransition:
        return True
    return False


def bmc(cfg: Config, depth: int, generation_name: str | None = None, timeout: float | None = None,
        queue: int | None = None, progress: Callable[[str], None] = lambda _: None,
        stop_at_first: bool = False, init_state: State | None = None,
        properties: Sequence[str] | None = None) -> BmcResult:
    """Bounded model checking: for each property, the shortest violation within ``depth`` steps.

    Every counterexample is replayed by the model (it must be enabled step by step and break the
    property concretely), so a REFUTED verdict never rests on the encoding alone. ``properties``
    (``--property``): search only for violations of these (:func:`~.replication.choose`; a name the
    encoding does not cover is refused before any query), so the queries ask nothing of the others.
    """
    enc = Encoding(cfg, generation_name, queue)
    names = list(choose(enc, properties))
    start = time.perf_counter()
    un = Unroller(enc, start=init_state)
    remaining = list(names)
    found: dict[str, tuple[int, list[Action], list[State | None], float]] = {}
    unknown_at: int | None = None
    overflow_at: int | None = None
    witnessed: dict[str, int | None] = {"WriteCommitted": None} if cfg.max_records else {}
    last_depth = -1
    for d in range(depth + 1):
        if d:
            progress(f"depth {d}/{depth}: unrolling")
            un.extend()
        s = un.states[d]
        progress(f"depth {d}/{depth}: {len(remaining)} properties open")
        props = enc.properties(s)
        if d:
            props.update(enc.step_properties(un.states[d - 1], s))
        while True:
            open_ = [n for n in remaining if n in props]
            if not open_:
                break
            q_start = time.perf_counter()
            goal = z3.Or(s.overflow, *[z3.Not(props[n]) for n in open_])
            answer = un.check(goal, timeout)
            if answer.proved:
                break
            m = answer.model
            if m is None:
                unknown_at = d
                break
            if truth(m, s.overflow):
                overflow_at = d
                break
            broken = [n for n in open_ if not truth(m, props[n])]
            actions = _decode_trace(enc, m, un.acts, un.steps)
            states = replay(enc, actions, init_state)
            if stop_at_first:
                broken = broken[:1] if broken else broken
            for n in broken:
                if _property_holds(n, states):
                    raise RuntimeError(f"the encoding disagrees with the model: {n} is broken after "
                                       f"{', '.join(map(str, actions))} in the encoding but not in the model "
                                       f"(please report)")
                found[n] = (d, actions, list(states), time.perf_counter() - q_start)
                remaining.remove(n)
            if stop_at_first:
                break
        fault = next((n for n in remaining if n in STEP_FAULTS), None)
        if (d and fault and unknown_at is None and overflow_at is None and not (stop_at_first and found)
                and un.can_be_illegal(d - 1)):
            q_start = time.perf_counter()
            answer = un.check(B(True), timeout, illegal_last=True)
            m = answer.model
            if m is not None:
                actions = _decode_trace(enc, m, un.acts, un.steps)
                states = replay(enc, actions[:-1], init_state)
                if not _refused(enc, states[-1], actions[-1]):
                    raise RuntimeError(f"the encoding disagrees with the model: {actions[-1]} after "
                                       f"{', '.join(map(str, actions[:-1]))} is an illegal move in the encoding "
                                       f"but not in the model (please report)")
                found[fault] = (d, actions, [*states, None], time.perf_counter() - q_start)
                remaining.remove(fault)
            elif answer.unknown:
                unknown_at = d
        if unknown_at is not None or overflow_at is not None:
            break
        if stop_at_first and found:
            last_depth = d - 1
            break
        if "WriteCommitted" in witnessed and witnessed["WriteCommitted"] is None:
            if un.check(enc.write_committed(s), timeout).refuted:
                witnessed["WriteCommitted"] = d
        last_depth = d
    seconds = time.perf_counter() - start
    gen = enc.rule.name
    obligations: list[Obligation] = []
    for n in names:
        ob: Obligation
        if n in found:
            d, path, visited, secs = found[n]
            refuted = BmcObligation("bmc", n, gen, Verdict.REFUTED, secs, f"executions of at most {depth} steps",
                                    detail=f"shortest violation: {d} steps")
            refuted.counterexample = {"length": d, "actions": [str(a) for a in path]}
            refuted.lines = [f"{i + 1:>3}. {a}" for i, a in enumerate(path)]
            refuted.trace = list(zip([None, *path], visited))
            if init_state is not None:
                refuted.detail += " from the given state"
            ob = refuted
        elif stop_at_first and found and unknown_at is None and overflow_at is None:
            ob = Obligation("bmc", n, gen, Verdict.PROVED, seconds, f"every execution of at most {last_depth} steps",
                            detail=f"not checked beyond {last_depth} steps (stopped at the first violation, "
                                   f"like `isrcheck check`)")
        elif last_depth >= 0 and (unknown_at is None and overflow_at is None):
            ob = Obligation("bmc", n, gen, Verdict.PROVED, seconds, f"every execution of at most {depth} steps")
        else:
            reason = (f"request queues overflow the encoding's capacity ({enc.Q}) at depth {overflow_at}"
                      if overflow_at is not None else f"z3 gave up at depth {unknown_at}")
            scope = f"holds for every execution of at most {last_depth} steps" if last_depth >= 0 else ""
            ob = Obligation("bmc", n, gen, Verdict.UNKNOWN, seconds, scope, detail=reason)
        obligations.append(ob)
    return BmcResult(depth, obligations, witnessed, overflow_at, seconds)


__all__ = ["bmc", "BmcResult", "BmcObligation", "Unroller", "replay"]
