"""What the engine sees of a model and what it says about it: the vocabulary every search shares.

The engine is generic (Stateright's ``Model``): initial states, enabled actions, next states and
named properties; it knows nothing about Kafka. Every way of exploring a model (the checker, the
parallel checker, the simulator, the Spark pipeline, conformance's exports) speaks these types,
and :class:`Checks` is the one definition of what counts as a violation:

- a step whose ``next_state`` raises :class:`ModelFault` (an illegal transition);
- a step that breaks a ``transition`` property, ``check(before, after)``;
- a state that breaks an ``always`` property;

while a ``sometimes`` property is *witnessed* by a state that satisfies it.
"""
from __future__ import annotations

import builtins
import gc
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

S = TypeVar("S", bound=Hashable)
A = TypeVar("A")

Kind = Literal["always", "sometimes", "transition", "liveness"]


class Property(NamedTuple):
    """A named property. ``always``: holds in every state; ``sometimes``: holds in at least one
    reachable state (a guard against a vacuous model); ``transition``: holds on every step,
    ``check(before, after)``. ``explain``, when given, takes the same arguments as ``check`` on a
    violation and answers the one line naming the offending values (a designer's property says
    there what it found; the model's own are explained by their modules)."""

    name: str
    kind: Kind
    check: Callable[..., bool]
    spec: str = ""
    description: str = ""
    explain: Callable[..., str] | None = None


class ModelFault(Exception):
    """Raised by ``next_state`` when a step itself breaks a property (an illegal transition)."""

    def __init__(self, property_name: str, message: str) -> None:
        super().__init__(message)
        self.property_name = property_name


class Model(Protocol[S, A]):
    """What the engine sees of a model. A model may also offer ``state_codec`` (a
    :class:`~isrcheck.engine.codec.StateCodec` of its states), which the parallel workers then use
    to move states instead of pickle."""

    def init_states(self) -> Sequence[S]: ...
    def actions(self, state: S) -> Iterable[A]: ...
    def next_state(self, state: S, action: A) -> S: ...
    def properties(self) -> Sequence[Property]: ...
    def fingerprint(self, state: S) -> int: ...


class Step(NamedTuple):
    action: Any  # None for the initial state
    state: Any  # None when the action raised ModelFault


@dataclass
class Violation:
    property: str
    kind: Kind
    trace: list[Step]
    message: str = ""
    #: liveness only: the index in ``trace`` where the loop starts (the last state equals it, or
    #: the behaviour stutters at the last state when ``loop == len(trace) - 1``)
    loop: int | None = None
    #: what the property's own ``explain`` says of the violating state (a designer's property;
    #: "" for the model's own, which their modules explain from the trace)
    found: str = ""
    #: the property's one-sentence description (filled in from the model's properties by
    #: :func:`explained`, so a designer's property is described like the model's own)
    description: str = ""

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
    limit_hit: str | None = None  # "depth" | "states" | "memory" when the search stopped early

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


def explained(violations: Iterable[Violation], properties: Sequence[Property]) -> list[Violation]:
    """Each violation with its property's ``description``, and ``found`` filled in by the property's
    ``explain`` where it has one, run once on the violation's last state (or last step, for a
    transition property)."""
    explain = {p.name: p.explain for p in properties if p.explain is not None}
    described = {p.name: p.description for p in properties if p.description}
    out: list[Violation] = []
    for v in violations:
        if not v.description and v.property in described:
            v = replace(v, description=described[v.property])
        fn = explain.get(v.property)
        if fn is not None and not v.found and v.trace and v.trace[-1].state is not None:
            if v.kind == "transition" and len(v.trace) > 1 and v.trace[-2].state is not None:
                v = replace(v, found=fn(v.trace[-2].state, v.trace[-1].state))
            elif v.kind != "transition":
                v = replace(v, found=fn(v.trace[-1].state))
        out.append(v)
    return out


def result_of(distinct_states: int, depth: int, seconds: float, transitions: int,
              violations: Iterable[Violation], unwitnessed: Iterable[str], coverage: dict[str, int],
              limit_hit: str | None, properties: Sequence[Property] = ()) -> CheckResult:
    """A search's result from its figures: the outcome by :func:`outcome_of`, the violations
    shortest first (explained by their properties, :func:`explained`), the unwitnessed properties
    and the coverage sorted by name."""
    found = sorted(explained(violations, properties), key=lambda v: (v.length, v.property))
    missing = sorted(unwitnessed)
    return CheckResult(
        outcome=outcome_of(bool(found), limit_hit, bool(missing)),
        distinct_states=distinct_states,
        depth=depth,
        seconds=seconds,
        transitions=transitions,
        violations=found,
        unwitnessed=missing,
        coverage=dict(sorted(coverage.items())),
        limit_hit=limit_hit,
    )


def action_name(action: Any) -> str:
    """The name coverage counts an action under: its ``name`` field, else its type's name (looked
    up only then: this runs once per transition)."""
    name = getattr(action, "name", None)
    if name is None:
        return type(action).__name__
    return name


class Checks:
    """A model's properties sorted by kind, and the verdicts every search asks of them.

    Built once per search; the lists keep the model's order, which is the order violations of
    one step are reported in.
    """

    def __init__(self, properties: Iterable[Property]) -> None:
        props = list(properties)
        self.always: list[Property] = [p for p in props if p.kind == "always"]
        self.transition: list[Property] = [p for p in props if p.kind == "transition"]
        self.sometimes: list[Property] = [p for p in props if p.kind == "sometimes"]
        # the predicates themselves: calling ``p.check(...)`` on a Property (a NamedTuple) looks the
        # field up as a method by name on every call, once per state and property
        self._always_checks: list[Callable[[Any], bool]] = [p.check for p in self.always]
        self._transition_checks: list[Callable[[Any, Any], bool]] = [p.check for p in self.transition]

    @classmethod
    def of(cls, model: Any) -> Checks:
        return cls(model.properties())

    def safe(self, state: Any) -> bool:
        """Whether ``state`` keeps every ``always`` property (the hot path's question: no list is
        built for the common answer, yes)."""
        for check in self._always_checks:
            if not check(state):
                return False
        return True

    def legal(self, before: Any, after: Any) -> bool:
        """Whether the step ``before -> after`` keeps every ``transition`` property."""
        for check in self._transition_checks:
            if not check(before, after):
                return False
        return True

    def broken_always(self, state: Any) -> list[str]:
        """Names of the ``always`` properties ``state`` breaks (empty when it is safe)."""
        return [p.name for p in self.always if not p.check(state)]

    def broken_transition(self, before: Any, after: Any) -> list[str]:
        """Names of the ``transition`` properties the step ``before -> after`` breaks."""
        return [p.name for p in self.transition if not p.check(before, after)]

    def witnessed(self, state: Any, pending: Iterable[str]) -> list[str]:
        """Which of the ``sometimes`` properties named in ``pending`` ``state`` witnesses."""
        want = set(pending)
        return [p.name for p in self.sometimes if p.name in want and p.check(state)]

    def sometimes_names(self) -> list[str]:
        return [p.name for p in self.sometimes]


class Search:
    """What every exhaustive search is asked besides the model: its bounds (``max_depth`` levels,
    ``max_states`` distinct states, ``max_memory`` bytes resident: a search they stop is
    ``incomplete``), whether to stop at the first violation, and where to report progress (every
    ``progress_every`` seconds)."""

    def __init__(self, max_depth: int | None, max_states: int | None, stop_on_first: bool,
                 progress: Callable[[Progress], None] | None, progress_every: float,
                 max_memory: int | None = None) -> None:
        self.max_depth = max_depth
        self.max_states = max_states
        self.max_memory = max_memory
        self.stop_on_first = stop_on_first
        self.progress = progress
        self.progress_every = progress_every


def paused_gc() -> bool:
    """Pause the cyclic garbage collector for a search; True if the caller must re-enable it.

    States are trees of tuples, freed by reference counting alone; but the collector tracks every
    NamedTuple, so each full collection would walk every stored state again (in the compiled
    build that was the largest single cost of a search).
    """
    was = gc.isenabled()
    gc.disable()
    return was


# ---------------------------------------------------------------------------- state objects
# A model whose states are NamedTuples builds them on the hot path; the NamedTuple constructor is
# interpreted even in the compiled build. ``tuple_constructor()`` gives ``new(cls, *items)``:
# engine/_newtuple.c where it is built (one allocation, no argument parsing), else ``tuple.__new__``.
def _tuple_new(cls: type, *items: object) -> tuple:
    """The pure-Python constructor: ``tuple.__new__`` with the items as one tuple."""
    return tuple.__new__(cls, items)  # type: ignore[call-overload]


def tuple_constructor() -> Callable[..., Any]:
    """``new(cls, *items)``: engine/_newtuple.c when it is built and compiled code is wanted, else
    :func:`_tuple_new`; both give equal objects of the same class."""
    from isrcheck import native

    if native.compiled_wanted():
        try:
            from ._newtuple import new
        except ImportError:  # a pure install (ISRCHECK_BUILD_PURE=1)
            pass
        else:
            return new  # type: ignore[no-any-return]
    return _tuple_new


__all__ = ["A", "S", "Kind", "Property", "ModelFault", "Model", "Step", "Violation", "Progress", "Outcome",
           "CheckResult", "outcome_of", "result_of", "action_name", "Checks", "Search", "paused_gc",
           "tuple_constructor"]
