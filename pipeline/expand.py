"""One breadth-first level, as pure functions over the model (no Spark, no I/O).

The engine's :class:`~isrcheck.model.checker.Checker` takes states off a queue in order and stops at
the first violation. Level-synchronous exploration reproduces that order exactly with a **key** per
step: the state at position ``rank`` of level ``d`` taking its ``i``-th enabled action is step
``(rank, i)``, and the Checker takes the steps of a level in increasing key order. So:

- a level's new states are the successors not seen before, each kept at its smallest key, and
  their queue order (the next level's ranks) is the order of those keys;
- the Checker's first violation is the event with the smallest key: a step that raises
  :class:`ModelFault`, a step that breaks a ``transition`` property, or a new state that breaks an
  ``always`` property (at the key where it first appears);
- when it stops there, it has counted every new state with a smaller key, plus the state of that
  step if it is new, and the transitions and coverage of every step up to it.

:func:`expand` computes a batch of a level (any subset of its states, in any order); its results
combine across batches by taking the minimum key per fingerprint, which Spark does with a
``groupBy``. The in-process explorer calls it once on the whole level.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from isrcheck.model.checker import ModelFault, Property, _action_name

Key = tuple[int, int]

FAULT = "fault"
TRANSITION = "transition"


@dataclass
class Successor:
    fingerprint: int
    parent: int
    prank: int  # rank of the parent in its level
    aidx: int  # index of the action among the parent's enabled actions
    action: str  # the action's text
    state: Any
    broken: list[str]  # always-properties the state breaks

    @property
    def key(self) -> Key:
        return (self.prank, self.aidx)


@dataclass
class Event:
    """A step that is itself a violation (``fault``: it raised ModelFault; ``transition``: it broke
    a transition property)."""

    kind: str
    prop: str
    message: str
    parent: int
    prank: int
    aidx: int
    action: str

    @property
    def key(self) -> Key:
        return (self.prank, self.aidx)


@dataclass
class Expansion:
    successors: dict[int, Successor] = field(default_factory=dict)  # fingerprint -> first occurrence
    events: list[Event] = field(default_factory=list)
    coverage: Counter[str] = field(default_factory=Counter)
    transitions: int = 0
    witnessed: set[str] = field(default_factory=set)
    witness_keys: dict[str, Key] = field(default_factory=dict)  # property -> smallest key of a kept witness


@dataclass(frozen=True)
class PropertySets:
    always: tuple[Property, ...]
    transition: tuple[Property, ...]
    sometimes: tuple[Property, ...]

    @classmethod
    def of(cls, model: Any) -> PropertySets:
        props = list(model.properties())
        return cls(
            tuple(p for p in props if p.kind == "always"),
            tuple(p for p in props if p.kind == "transition"),
            tuple(p for p in props if p.kind == "sometimes"),
        )


def broken_always(props: PropertySets, state: Any) -> list[str]:
    return [p.name for p in props.always if not p.check(state)]


def expand(
    model: Any,
    rows: Iterable[tuple[int, int, Any]],
    *,
    skip: Container[int] = (),
    unwitnessed: Iterable[str] = (),
    props: PropertySets | None = None,
    action_text: Callable[[Any], str] = str,
) -> Expansion:
    """Expand ``rows`` of ``(fingerprint, rank, state)``.

    Successors whose fingerprint is in ``skip`` (states of earlier levels) are dropped; the others
    are kept once each, at their smallest key, with the always-properties they break. Events are
    every faulting step and every (step, transition property) that breaks. ``unwitnessed`` names
    the sometimes-properties still to witness; ``witnessed`` says which of them a kept successor
    satisfies, and ``witness_keys`` the smallest key of such a successor (where a Checker that
    stops inside the level has witnessed it by then).
    """
    props = props or PropertySets.of(model)
    fingerprint = model.fingerprint
    actions = model.actions
    next_state = model.next_state
    transition = props.transition
    out = Expansion()
    succ = out.successors
    coverage = out.coverage
    events = out.events
    transitions = 0
    for fp, rank, s in rows:
        for i, a in enumerate(actions(s)):
            try:
                t = next_state(s, a)
            except ModelFault as e:
                events.append(Event(FAULT, e.property_name, str(e), fp, rank, i, action_text(a)))
                continue
            transitions += 1
            coverage[_action_name(a)] += 1
            for p in transition:
                if not p.check(s, t):
                    events.append(Event(TRANSITION, p.name, "", fp, rank, i, action_text(a)))
            tfp = fingerprint(t)
            if tfp in skip:
                continue
            prev = succ.get(tfp)
            if prev is not None and (prev.prank, prev.aidx) <= (rank, i):
                continue
            succ[tfp] = Successor(tfp, fp, rank, i, a, t, [])  # action text filled in below
    out.transitions = transitions
    wanted = [p for p in props.sometimes if p.name in set(unwitnessed)]
    for x in (sorted(succ.values(), key=lambda x: (x.prank, x.aidx)) if wanted else succ.values()):
        x.action = action_text(x.action)
        x.broken = broken_always(props, x.state)
        if wanted:
            for p in list(wanted):
                if p.check(x.state):
                    out.witnessed.add(p.name)
                    out.witness_keys[p.name] = (x.prank, x.aidx)
                    wanted.remove(p)
    return out


def count_until(model: Any, rows: Iterable[tuple[int, int, Any]], cutoff: Key) -> tuple[int, Counter[str]]:
    """Transitions and coverage of the steps a Checker takes in this level before stopping at
    ``cutoff``: every step with a smaller key, and the cutoff step itself unless it faulted.
    ``rows`` must hold every state of the level with ``rank <= cutoff[0]`` (others are ignored)."""
    coverage: Counter[str] = Counter()
    transitions = 0
    for _fp, rank, s in rows:
        if rank > cutoff[0]:
            continue
        for i, a in enumerate(model.actions(s)):
            if (rank, i) > cutoff:
                break
            try:
                model.next_state(s, a)
            except ModelFault:
                continue
            transitions += 1
            coverage[_action_name(a)] += 1
    return transitions, coverage


def first_event_key(events: Iterable[Event], new: Iterable[Successor]) -> Key | None:
    """The smallest key of a violation: an event, or a new state that breaks an always-property."""
    keys = [e.key for e in events]
    keys += [s.key for s in new if s.broken]
    return min(keys) if keys else None


def nth_action(model: Any, state: Any, aidx: int) -> Any:
    """The ``aidx``-th enabled action of ``state`` (actions come in a fixed order)."""
    acts = list(model.actions(state))
    if not 0 <= aidx < len(acts):
        raise RuntimeError(f"replay: the state has {len(acts)} enabled actions, not {aidx + 1}")
    return acts[aidx]


def sorted_new(expansion: Expansion) -> list[Successor]:
    return sorted(expansion.successors.values(), key=lambda x: (x.prank, x.aidx))


def names(props: Sequence[Property]) -> list[str]:
    return [p.name for p in props]
