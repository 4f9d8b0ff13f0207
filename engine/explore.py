"""The exploration kit: a breadth-first level, a random walk and a replay, over any :class:`Model`.

Every way of moving through a model is built from these pieces, each written once:

- :func:`expand` computes one breadth-first level (or any batch of it): the Spark pipeline runs it
  per Arrow batch and in-process on narrow levels;
- :func:`walk` takes one seeded random walk: the simulator, the pipeline's trace corpus and
  conformance's sample exports;
- :func:`replay_fingerprints`, :func:`replay`, :func:`replay_actions` and :func:`replay_checked`
  rebuild concrete states along a path: every counterexample of every search, scripted scenarios,
  trace files, conformance replay;
- :class:`BreadthFirst` visits the reachable graph with a callback per state and per edge (the
  coverage paths, the graph exports, the variant debugger, z3's explicit side), and
  :func:`successors` gives one state's steps to a search with its own order (event-log validation).

What a violation is comes from :class:`~isrcheck.engine.core.Checks` alone. The two exhaustive
searches, :class:`~isrcheck.engine.checker.Checker` and the parallel workers, keep their innermost
loop written out in place: it is the hot path, and the two settle a new state differently (in one
dictionary, or with its owner among the processes; ARCHITECTURE.md "The exploration kit"). They ask
``Checks`` for every verdict and replay their counterexamples with this module.

**Keys of a level.** The state at position ``rank`` of level ``d`` taking its ``i``-th enabled
action is step ``(rank, i)``; the checker takes the steps of a level in increasing key order. So a
level's new states are the successors not seen before, each kept at its smallest key, in key order;
the checker's first violation is the event with the smallest key (a faulting step, a step that
breaks a ``transition`` property, or a new state that breaks an ``always`` property where it first
appears); and when it stops there it has counted every new state with a smaller key, the state of
that step if new, and the transitions and coverage of every step up to it (:func:`count_until`).
Batches of one level combine by taking the minimum key per fingerprint.
"""
from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .core import Checks, Model, ModelFault, Step, action_name

Key = tuple[int, int]

FAULT = "fault"
TRANSITION = "transition"
ALWAYS = "always"


# --------------------------------------------------------------------------- a level
@dataclass
class Successor:
    fingerprint: int
    parent: int | None  # None for an initial state (and so are prank, aidx and action)
    prank: int | None  # rank of the parent in its level
    aidx: int | None  # index of the action among the parent's enabled actions
    action: Any  # the action; its text once expand() returns
    state: Any
    broken: list[str]  # always-properties the state breaks

    @property
    def key(self) -> Key:
        if self.prank is None or self.aidx is None:
            raise ValueError("an initial state is not reached by a step: it has no key")
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


def initial_level(model: Model[Any, Any], checks: Checks) -> tuple[list[Successor], set[str]]:
    """Level 0: the distinct initial states (in the model's order) with the always-properties each
    breaks, and the sometimes-properties they witness."""
    rows: list[Successor] = []
    seen: set[int] = set()
    witnessed: set[str] = set()
    pending = checks.sometimes_names()
    for s in model.init_states():
        fp = model.fingerprint(s)
        if fp in seen:
            continue
        seen.add(fp)
        witnessed.update(checks.witnessed(s, pending))
        rows.append(Successor(fp, None, None, None, None, s, checks.broken_always(s)))
    return rows, witnessed


def expand(
    model: Model[Any, Any],
    rows: Iterable[tuple[int, int, Any]],
    *,
    skip: Container[int] = (),
    unwitnessed: Iterable[str] = (),
    checks: Checks | None = None,
    action_text: Callable[[Any], str] = str,
    seen_among: Callable[[list[int]], Iterable[int]] | None = None,
) -> Expansion:
    """Expand ``rows`` of ``(fingerprint, rank, state)`` (see the module docstring on keys).

    Successors whose fingerprint is in ``skip`` (states of earlier levels) are dropped; the others
    are kept once each, at their smallest key, with the always-properties they break. Events are
    every faulting step and every (step, transition property) that breaks. ``unwitnessed`` names
    the sometimes-properties still to witness; ``witnessed`` says which of them a kept successor
    satisfies, and ``witness_keys`` the smallest key of such a successor (where a checker that
    stops inside the level has witnessed it by then).

    ``seen_among``, when given, is asked once, after the steps, which of the kept successors'
    fingerprints are states of earlier levels: those are dropped as ``skip`` drops them, before
    they are judged. It is for a caller whose seen set answers many fingerprints at once far
    better than one (a Spark map task's sorted seen files): most successors of a wide level are
    old, and judging them, naming their actions and shipping them cost more than the steps.

    Without ``seen_among`` each successor is judged as it is made, while it is in the cache (as
    the parallel workers judge theirs): judged after the batch, a wide batch's states are cold
    again and the judging costs half as much again. When the rows come in rank order (every
    caller's), a successor is kept where it is first met and the first witness judged is the one
    with the smallest key; rows out of order have their witnesses found again in key order.
    """
    checks = checks or Checks.of(model)
    fingerprint = model.fingerprint
    actions = model.actions
    next_state = model.next_state
    legal = checks.legal
    out = Expansion()
    succ = out.successors
    counts: dict[str, int] = {}  # a plain dict: a Counter's item access is generic in the compiled build
    events = out.events
    transitions = 0
    early = seen_among is None  # judged as made (else after seen_among has dropped the old ones)
    safe, broken_always, witnessed = checks.safe, checks.broken_always, checks.witnessed
    names = set(unwitnessed)
    pending = set(names)
    witness_keys = out.witness_keys
    in_order = True
    last_rank = -1
    for fp, rank, s in rows:
        if rank < last_rank:
            in_order = False
        last_rank = rank
        for i, a in enumerate(actions(s)):
            try:
                t = next_state(s, a)
            except ModelFault as e:
                events.append(Event(FAULT, e.property_name, str(e), fp, rank, i, action_text(a)))
                continue
            transitions += 1
            name = action_name(a)
            counts[name] = counts.get(name, 0) + 1
            if not legal(s, t):
                for name in checks.broken_transition(s, t):
                    events.append(Event(TRANSITION, name, "", fp, rank, i, action_text(a)))
            tfp = fingerprint(t)
            if tfp in skip:
                continue
            prev = succ.get(tfp)
            if prev is not None and prev.key <= (rank, i):
                continue
            x = Successor(tfp, fp, rank, i, a, t, [])  # action text filled in below
            succ[tfp] = x
            if early:
                if not safe(t):
                    x.broken = broken_always(t)
                if pending:
                    for name in witnessed(t, pending):
                        witness_keys[name] = (rank, i)
                        pending.discard(name)
    out.transitions = transitions
    out.coverage.update(counts)
    if seen_among is not None and succ:
        for old in seen_among(list(succ)):
            del succ[old]
    texts: dict[Any, str] = {}  # an action's text, made once per action (many successors share one)
    for x in (sorted_new(out) if pending and not early else succ.values()):
        a = x.action
        try:
            text = texts.get(a)
            if text is None:
                text = texts[a] = action_text(a)
        except TypeError:  # an action that cannot be a dict key: named each time
            text = action_text(a)
        x.action = text
        if early:
            continue
        x.broken = [] if safe(x.state) else broken_always(x.state)
        if pending:
            for name in witnessed(x.state, pending):
                witness_keys[name] = x.key
                pending.discard(name)
    if early and not in_order and witness_keys:  # the first witness met may not be the first in key order
        witness_keys.clear()
        pending = set(names)
        for x in sorted_new(out):
            if not pending:
                break
            for name in witnessed(x.state, pending):
                witness_keys[name] = x.key
                pending.discard(name)
    out.witnessed.update(witness_keys)
    return out


def count_until(model: Model[Any, Any], rows: Iterable[tuple[int, int, Any]], cutoff: Key) -> tuple[int, Counter[str]]:
    """Transitions and coverage of the steps a checker takes in this level before stopping at
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
            coverage[action_name(a)] += 1
    return transitions, coverage


def first_event_key(events: Iterable[Event], new: Iterable[Successor]) -> Key | None:
    """The smallest key of a violation: an event, or a new state that breaks an always-property."""
    keys = [e.key for e in events]
    keys += [s.key for s in new if s.broken]
    return min(keys) if keys else None


def sorted_new(expansion: Expansion) -> list[Successor]:
    """A level's new states in key order (the next level's ranks)."""
    return sorted(expansion.successors.values(), key=lambda x: x.key)


def nth_action(model: Model[Any, Any], state: Any, aidx: int) -> Any:
    """The ``aidx``-th enabled action of ``state`` (actions come in a fixed order)."""
    acts = list(model.actions(state))
    if not 0 <= aidx < len(acts):
        raise RuntimeError(f"replay: the state has {len(acts)} enabled actions, not {aidx + 1}")
    return acts[aidx]


# --------------------------------------------------------------------------- a walk
@dataclass
class PathStep:
    """One step of a path with its verdict: ``broken`` names the properties it breaks, ``kind``
    says which verdict ended the path there (``fault``, ``transition``, ``always``; "" if none)."""

    action: Any  # None for the initial state
    state: Any  # None when the action raised ModelFault
    broken: list[str]
    fault: str = ""  # the ModelFault message
    kind: str = ""

    def step(self) -> Step:
        return Step(self.action, self.state)


def walk_start(model: Model[Any, Any], rng: random.Random, checks: Checks) -> PathStep:
    """A random walk's first step: the initial state (one drawn from ``rng`` when there are
    several), checked; ``kind`` is ALWAYS when it already breaks a property."""
    inits = list(model.init_states())
    state = inits[0] if len(inits) == 1 else rng.choice(inits)
    first = PathStep(None, state, checks.broken_always(state))
    if first.broken:
        first.kind = ALWAYS
    return first


def walk(model: Model[Any, Any], rng: random.Random, max_depth: int, checks: Checks | None = None, *,
         skip_faults: bool = False, order: Callable[[Any, list[Any]], list[Any]] | None = None,
         fresh: Callable[[Any], bool] | None = None) -> Iterator[PathStep]:
    """One random walk, a function of ``rng``'s state: the initial state, then at each step the
    enabled actions in random order and the first one that changes the state.

    A step that leaves the state as it is (a follower fetching when there is nothing new) is
    checked but not taken, so a walk does not spin in place: it ends when no action changes the
    state (quiescence), after ``max_depth`` steps, or at the first step that breaks a property
    (yielded, with ``kind`` set, as the walk's last step). With ``skip_faults`` a faulting action is
    passed over like one that changes nothing (for paths that only need to be legal).

    Other walks are this one with another choice (the swarm walk of :mod:`.swarm`): ``order(state,
    enabled)`` orders the enabled actions instead of a shuffle, and with ``fresh(next_state)`` the
    first action that reaches a fresh state wins, the first that changes the state only failing that.
    """
    checks = checks if checks is not None else Checks.of(model)
    first = walk_start(model, rng, checks)
    yield first
    if first.broken:
        return
    state = first.state
    for _ in range(max_depth):
        enabled = list(model.actions(state))
        if order is None:
            rng.shuffle(enabled)
        else:
            enabled = order(state, enabled)
        taken: PathStep | None = None
        fallback: tuple[Any, Any] | None = None
        for a in enabled:
            try:
                t = model.next_state(state, a)
            except ModelFault as e:
                if skip_faults:
                    continue
                taken = PathStep(a, None, [e.property_name], str(e), FAULT)
                break
            bad = checks.broken_transition(state, t)
            if bad:
                taken = PathStep(a, t, bad + checks.broken_always(t), kind=TRANSITION)
                break
            if t == state:
                continue
            if fresh is None or fresh(t):
                fallback = (a, t)
                break
            if fallback is None:
                fallback = (a, t)
        if taken is None:
            if fallback is None:
                return
            a, t = fallback
            broken = checks.broken_always(t)
            taken = PathStep(a, t, broken, kind=ALWAYS if broken else "")
        yield taken
        if taken.kind:
            return
        state = taken.state


# --------------------------------------------------------------------------- one state's steps
def successors(model: Model[Any, Any], state: Any,
               where: Callable[[Any], bool] | None = None) -> Iterator[tuple[Any, Any]]:
    """Each enabled action of ``state`` (those ``where`` accepts) with the state it leads to, in the
    model's order; a step that raises :class:`ModelFault` is passed over. For the searches that
    choose their own order or their own notion of a visited state (conformance's event-log
    validation), so that no code outside the engine calls ``next_state`` in a loop of its own."""
    for a in model.actions(state):
        if where is not None and not where(a):
            continue
        try:
            t = model.next_state(state, a)
        except ModelFault:
            continue
        yield a, t


# --------------------------------------------------------------------------- a visit of the graph
class BreadthFirst:
    """A breadth-first visit of every reachable state, with a callback per state and per edge.

    For the tools that need the reachable graph itself rather than a verdict: the coverage paths of
    conformance, the graph exports, the debugger of a variant that raises, z3's explicit side. The
    checkers keep their own loop (ARCHITECTURE.md, "The exploration kit"); this one favours
    clarity: it keeps every state's parent and the action into it, so :meth:`path_to` gives a
    shortest path to any state it has met.

    ``on_state(key, state, depth)`` is called once per distinct state as it is expanded;
    ``on_edge(key, action, next_key, next_state, new)`` once per transition (``new``: the
    transition found that state); ``on_fault(key, action, fault)`` for a step that raises
    :class:`ModelFault`. A callback that returns True ends the visit there. Any other exception of
    the model or a callback propagates, and :attr:`current` then says which state (and action) was
    being expanded. ``key`` identifies states (the model's fingerprint by default); ``max_states``
    bounds how many the visit keeps (it stops at the first state past it, or with ``drain`` goes on
    expanding the states it kept without keeping new ones), and ``max_depth`` how deep it expands.
    """

    def __init__(self, model: Model[Any, Any], *, key: Callable[[Any], int] | None = None,
                 max_states: int | None = None, max_depth: int | None = None, drain: bool = False) -> None:
        self.model = model
        self.key = key if key is not None else model.fingerprint
        self.max_states = max_states
        self.max_depth = max_depth
        self.drain = drain
        #: key -> (the parent's key, the action from it) for every state met; (None, None) for an initial state
        self.parents: dict[int, tuple[int | None, Any]] = {}
        #: the key of the state being expanded, and the action being taken (None between actions)
        self.current: tuple[int | None, Any] = (None, None)
        #: whether every reachable state was expanded (False when a bound or a callback stopped it)
        self.complete = False
        self.stopped = False

    def run(self, on_state: Callable[[int, Any, int], bool | None] | None = None,
            on_edge: Callable[[int, Any, int, Any, bool], bool | None] | None = None,
            on_fault: Callable[[int, Any, ModelFault], bool | None] | None = None) -> BreadthFirst:
        model, key, parents = self.model, self.key, self.parents
        queue: deque[tuple[int, Any, int]] = deque()
        for s in model.init_states():
            k = key(s)
            if k not in parents:
                parents[k] = (None, None)
                queue.append((k, s, 0))
        bounded = False
        while queue:
            k, s, depth = queue.popleft()
            self.current = (k, None)
            if on_state is not None and on_state(k, s, depth):
                self.stopped = True
                return self
            if self.max_depth is not None and depth >= self.max_depth:
                bounded = True
                continue
            for a in model.actions(s):
                self.current = (k, a)
                try:
                    t = model.next_state(s, a)
                except ModelFault as e:
                    if on_fault is not None and on_fault(k, a, e):
                        self.stopped = True
                        return self
                    continue
                tk = key(t)
                new = tk not in parents
                if new:
                    if self.max_states is not None and len(parents) >= self.max_states:
                        if not self.drain:
                            return self
                        bounded = True
                        new = False
                        if on_edge is None:
                            continue
                    else:
                        parents[tk] = (k, a)
                        queue.append((tk, t, depth + 1))
                if on_edge is not None and on_edge(k, a, tk, t, new):
                    self.stopped = True
                    return self
            self.current = (k, None)
        self.complete = not bounded
        return self

    def path_to(self, k: int) -> list[Any]:
        """The actions of a shortest path from an initial state to the state with key ``k``."""
        out: list[Any] = []
        cur: int | None = k
        while cur is not None:
            up, a = self.parents[cur]
            if up is not None:
                out.append(a)
            cur = up
        out.reverse()
        return out


# --------------------------------------------------------------------------- a replay
def replay_fingerprints(model: Model[Any, Any], chain: Sequence[int],
                        allowed: Callable[[int, Any], bool] | None = None) -> list[Step]:
    """Rebuild concrete states along a chain of fingerprints by replaying actions.

    ``allowed(i, action)``, if given, says which actions may take step ``i`` (1-based), when
    more than one action leads to the same state and the caller needs a particular one.
    """
    fingerprint = model.fingerprint
    state = next(s for s in model.init_states() if fingerprint(s) == chain[0])
    steps = [Step(None, state)]
    for i in range(1, len(chain)):
        want = chain[i]
        for a in model.actions(state):
            if allowed is not None and not allowed(i, a):
                continue
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


@dataclass
class Replay:
    """A scripted path as far as the model takes it: ``steps`` holds the initial state, then a
    step per action taken (a faulting action's with no state, as in a counterexample). When an
    action was not enabled, ``stopped_at`` is its 1-based position and ``enabled`` what was enabled
    there; when one raised :class:`ModelFault`, ``fault`` holds it and it is the last step."""

    steps: list[Step]
    stopped_at: int | None = None
    enabled: list[Any] = field(default_factory=list)
    fault: ModelFault | None = None

    @property
    def complete(self) -> bool:
        """Every action was taken, none faulted."""
        return self.stopped_at is None and self.fault is None


def replay(model: Model[Any, Any], actions: Iterable[Any], init: Any = None, *,
           stop: Callable[[int], bool] | None = None) -> Replay:
    """Take ``actions`` one after another from ``init`` (the model's first initial state), each
    only if enabled, and say where the path ended: every scripted scenario, trace file and rebuilt
    violation goes through here. ``stop(i)`` (0-based, before action ``i``) ends it early, as a
    memory ceiling does, without marking it stopped."""
    state = init if init is not None else model.init_states()[0]
    out = Replay([Step(None, state)])
    for i, a in enumerate(actions):
        if stop is not None and stop(i):
            break
        enabled = list(model.actions(state))
        if a not in enabled:
            out.stopped_at, out.enabled = i + 1, enabled
            break
        try:
            state = model.next_state(state, a)
        except ModelFault as e:
            out.steps.append(Step(a, None))
            out.fault = e
            break
        out.steps.append(Step(a, state))
    return out


def replay_actions(model: Model[Any, Any], actions: Sequence[Any], init: Any = None) -> list[Step]:
    """Run a scripted list of actions from an initial state; every action must be enabled (a
    ``ValueError`` naming the step otherwise) and a faulting one raises its :class:`ModelFault`."""
    r = replay(model, actions, init)
    if r.stopped_at is not None:
        raise ValueError(f"step {r.stopped_at}: {actions[r.stopped_at - 1]} is not enabled")
    if r.fault is not None:
        raise r.fault
    return r.steps


def replay_checked(model: Model[Any, Any], chain: Sequence[int], checks: Checks | None = None) -> list[PathStep]:
    """The path through the states with fingerprints ``chain``, each step with its verdict."""
    return verdicts(replay_fingerprints(model, chain), checks if checks is not None else Checks.of(model))


def verdicts(steps: Sequence[Step], checks: Checks) -> list[PathStep]:
    """Each step of a concrete path with the properties it breaks: a transition property on the
    step into it, then an always-property of the state reached."""
    out: list[PathStep] = []
    prev = None
    for st in steps:
        if st.state is None:
            out.append(PathStep(st.action, None, [], kind=FAULT))
            break
        broken = checks.broken_always(st.state)
        bad: list[str] = checks.broken_transition(prev, st.state) if prev is not None else []
        kind = TRANSITION if bad else ALWAYS if broken else ""
        out.append(PathStep(st.action, st.state, bad + broken, kind=kind))
        prev = st.state
    return out


def parent_chain(parents: Mapping[int, int | None], fp: int) -> list[int]:
    """The fingerprints from an initial state to ``fp``, following a parent map."""
    chain: list[int] = []
    cur: int | None = fp
    while cur is not None:
        chain.append(cur)
        cur = parents[cur]
    chain.reverse()
    return chain


__all__ = ["Key", "FAULT", "TRANSITION", "ALWAYS", "Successor", "Event", "Expansion", "initial_level", "expand",
           "count_until", "first_event_key", "sorted_new", "nth_action", "PathStep", "walk", "successors", "BreadthFirst",
           "replay_fingerprints", "Replay", "replay", "replay_actions", "replay_checked", "verdicts", "parent_chain"]
