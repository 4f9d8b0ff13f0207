"""A generic explicit-state checker: breadth-first search over any :class:`Model`.

The engine sees only initial states, enabled actions and next states (Stateright's ``Model``);
it knows nothing about Kafka. Breadth-first order makes every counterexample a shortest one.
States are stored as 64-bit fingerprints (Python's ``hash`` of a nest of tuples, consistent within
a process and its forks) with the parent's fingerprint; a trace is rebuilt
by replaying actions from an initial state, so only real, concrete states are ever printed.
"""
from __future__ import annotations

import builtins
import gc
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, NamedTuple, Protocol, TypeVar

S = TypeVar("S", bound=Hashable)
A = TypeVar("A")

Kind = Literal["always", "sometimes", "transition"]


class Property(NamedTuple):
    """A named property. ``always``: holds in every state; ``sometimes``: holds in at least one
    reachable state (a guard against a vacuous model); ``transition``: holds on every step,
    ``check(before, after)``."""

    name: str
    kind: Kind
    check: Callable[..., bool]
    spec: str = ""
    description: str = ""


class ModelFault(Exception):
    """Raised by ``next_state`` when a step itself breaks a property (an illegal transition)."""

    def __init__(self, property_name: str, message: str) -> None:
        super().__init__(message)
        self.property_name = property_name


class Model(Protocol[S, A]):
    """What the engine sees of a model. A model may also offer ``state_codec`` (a
    :class:`~isrcheck.model.codec.StateCodec` of its states), which the parallel workers then use
    to move states instead of pickle."""

    def init_states(self) -> Sequence[S]: ...
    def actions(self, state: S) -> Iterable[A]: ...
    def next_state(self, state: S, action: A) -> S: ...
    def properties(self) -> Sequence[Property]: ...
    def fingerprint(self, state: S) -> int: ...


class Step(NamedTuple):
    action: Any  # None for the initial state
    state: Any


@dataclass
class Violation:
    property: str
    kind: Kind
    trace: list[Step]
    message: str = ""

    @builtins.property  # the field above is called ``property``
    def length(self) -> int:
        """Number of actions in the counterexample."""
        return len(self.trace) - 1


@dataclass
class Progress:
    states: int
    depth: int
    queue: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


Outcome = Literal["success", "safety_failure", "vacuous", "incomplete"]


@dataclass
class CheckResult:
    outcome: Outcome
    distinct_states: int
    depth: int
    seconds: float
    transitions: int
    violations: list[Violation] = field(default_factory=list)
    unwitnessed: list[str] = field(default_factory=list)  # sometimes-properties never seen
    coverage: dict[str, int] = field(default_factory=dict)  # action name -> times taken
    limit_hit: str | None = None  # "depth" | "states" when the search stopped early

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else 0.0

    @property
    def collision_probability(self) -> float:
        """Optimistic estimate that two distinct states shared a 64-bit fingerprint."""
        n = self.distinct_states
        return min(1.0, n * (n - 1) / 2 / 2.0**64)


def outcome_of(violated: bool, limit_hit: str | None, unwitnessed: bool) -> Outcome:
    """A run's verdict: a violation wins; then a stopped search proves nothing; then a
    sometimes-property never witnessed makes the model vacuous."""
    if violated:
        return "safety_failure"
    if limit_hit:
        return "incomplete"
    if unwitnessed:
        return "vacuous"
    return "success"


def paused_gc() -> bool:
    """Pause the cyclic garbage collector for a search; True if the caller must re-enable it.

    States are trees of tuples, freed by reference counting alone; but the collector tracks every
    NamedTuple, so each full collection would walk every stored state again (in the compiled
    build that was the largest single cost of a search).
    """
    was = gc.isenabled()
    gc.disable()
    return was


def _action_name(action: Any) -> str:
    return getattr(action, "name", type(action).__name__)


class Checker(Generic[S, A]):
    """Breadth-first exhaustive search with fingerprints, coverage and limits."""

    def __init__(
        self,
        model: Model[S, A],
        *,
        max_depth: int | None = None,
        max_states: int | None = None,
        stop_on_first: bool = True,
        progress: Callable[[Progress], None] | None = None,
        progress_every: float = 0.5,
        observer: Callable[[S, int, int], None] | None = None,
    ) -> None:
        self.model = model
        self.max_depth = max_depth
        self.max_states = max_states
        self.stop_on_first = stop_on_first
        self.progress = progress
        self.progress_every = progress_every
        #: called as observer(state, fingerprint, depth) for every distinct state, in BFS order
        self.observer = observer

    def run(self) -> CheckResult:
        """Explore; the cyclic garbage collector is paused meanwhile (see :func:`paused_gc`)."""
        resume = paused_gc()
        try:
            return self._search()
        finally:
            if resume:
                gc.enable()

    def _search(self) -> CheckResult:
        model = self.model
        props = list(model.properties())
        always = [p for p in props if p.kind == "always"]
        sometimes = [p for p in props if p.kind == "sometimes"]
        transition = [p for p in props if p.kind == "transition"]
        fingerprint = model.fingerprint
        actions = model.actions
        next_state = model.next_state

        start = time.perf_counter()
        parents: dict[int, int | None] = {}
        self._parents = parents
        coverage: Counter[str] = Counter()
        violations: dict[str, Violation] = {}
        unseen = {p.name: p for p in sometimes}
        queue: deque[tuple[S, int, int]] = deque()
        transitions = 0
        depth = 0
        limit_hit: str | None = None
        last_report = start

        def record(prop: Property | str, kind: Kind, fp: int, extra: Step | None, message: str) -> None:
            name = prop if isinstance(prop, str) else prop.name
            if name not in violations:
                violations[name] = Violation(name, kind, self._trace(fp, extra), message)

        def witness(state: S) -> None:
            for name, p in list(unseen.items()):
                if p.check(state):
                    del unseen[name]

        for s in model.init_states():
            fp = fingerprint(s)
            if fp in parents:
                continue
            parents[fp] = None
            if self.observer is not None:
                self.observer(s, fp, 0)
            for p in always:
                if not p.check(s):
                    record(p, "always", fp, None, "")
            witness(s)
            queue.append((s, fp, 0))

        stop = bool(violations) and self.stop_on_first
        while queue and not stop:
            s, fp, d = queue.popleft()
            if d > depth:
                depth = d
            if self.max_depth is not None and d >= self.max_depth:
                limit_hit = limit_hit or "depth"
                continue
            for a in actions(s):
                try:
                    t = next_state(s, a)
                except ModelFault as e:
                    record(e.property_name, "transition", fp, Step(a, None), str(e))
                    if self.stop_on_first:
                        stop = True
                        break
                    continue
                transitions += 1
                coverage[_action_name(a)] += 1
                for p in transition:
                    if not p.check(s, t):
                        record(p, "transition", fp, Step(a, t), "")
                        stop = self.stop_on_first
                tfp = fingerprint(t)
                if tfp in parents:
                    if stop:
                        break
                    continue
                parents[tfp] = fp
                if self.observer is not None:
                    self.observer(t, tfp, d + 1)
                for p in always:
                    if not p.check(t):
                        record(p, "always", tfp, None, "")
                        stop = self.stop_on_first
                if unseen:
                    witness(t)
                if stop:
                    break
                queue.append((t, tfp, d + 1))
                if self.max_states is not None and len(parents) >= self.max_states:
                    limit_hit = "states"
                    stop = True
                    break
            if self.progress is not None:
                now = time.perf_counter()
                if now - last_report >= self.progress_every:
                    last_report = now
                    self.progress(Progress(len(parents), depth, len(queue), now - start))
        if queue and not limit_hit and not violations:
            limit_hit = "states"
        seconds = time.perf_counter() - start
        if self.progress is not None:
            self.progress(Progress(len(parents), depth, len(queue), seconds))

        return CheckResult(
            outcome=outcome_of(bool(violations), limit_hit, bool(unseen)),
            distinct_states=len(parents),
            depth=depth,
            seconds=seconds,
            transitions=transitions,
            violations=sorted(violations.values(), key=lambda v: (v.length, v.property)),
            unwitnessed=sorted(unseen),
            coverage=dict(sorted(coverage.items())),
            limit_hit=limit_hit,
        )

    # ------------------------------------------------------------------ traces
    def trace_to(self, fp: int) -> list[Step]:
        """A shortest trace to the state with fingerprint ``fp`` (after or during ``run``)."""
        return self._trace(fp, None)

    def _trace(self, fp: int, extra: Step | None) -> list[Step]:
        chain: list[int] = []
        cur: int | None = fp
        parents = self._parents
        while cur is not None:
            chain.append(cur)
            cur = parents[cur]
        chain.reverse()
        steps = replay_fingerprints(self.model, chain)
        if extra is not None:
            steps.append(extra)
        return steps


def replay_fingerprints(model: Model[S, A], chain: Sequence[int]) -> list[Step]:
    """Rebuild concrete states along a chain of fingerprints by replaying actions."""
    fingerprint = model.fingerprint
    state = next(s for s in model.init_states() if fingerprint(s) == chain[0])
    steps = [Step(None, state)]
    for want in chain[1:]:
        for a in model.actions(state):
            try:
                t = model.next_state(state, a)
            except ModelFault:
                continue
            if fingerprint(t) == want:
                steps.append(Step(a, t))
                state = t
                break
        else:  # pragma: no cover - would mean a fingerprint collision or a non-deterministic model
            raise RuntimeError("could not replay the counterexample: the model is not deterministic")
    return steps


def replay_actions(model: Model[S, A], actions: Sequence[A], init: S | None = None) -> list[Step]:
    """Run a scripted list of actions from an initial state; every action must be enabled."""
    state = init if init is not None else model.init_states()[0]
    steps = [Step(None, state)]
    for i, a in enumerate(actions):
        enabled = list(model.actions(state))
        if a not in enabled:
            raise ValueError(f"step {i + 1}: {a} is not enabled")
        state = model.next_state(state, a)
        steps.append(Step(a, state))
    return steps
