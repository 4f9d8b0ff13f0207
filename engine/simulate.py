"""Seeded random simulation, for configurations too large to exhaust.

Each walk starts from an initial state and takes random enabled actions until none is left
that changes the state or ``max_depth`` actions were taken. Steps that leave the state as it is
(a follower fetching when there is nothing new) are checked but not taken, so walks do not
spin in place; they end when the system is quiescent. Every state is checked against the
``always`` properties, every step against the ``transition`` properties (and a step that raises
:class:`~isrcheck.engine.checker.ModelFault` is a violation), and ``sometimes`` properties are
recorded when witnessed. The walk is a function of the seed alone: the same seed, model and
bounds give the same result, in any process.

By default the walks are swarm walks (:mod:`.swarm`: each walk weights the actions at random and
prefers states no walk has reached), and the first violation is followed by a bounded search for a
shorter one (``shrink``); ``strategy="uniform"`` and ``shrink=False`` give the plain walk that stops
at the first violation.

Simulation finds bugs; it never proves their absence. Its traces are not shortest ones (though
shrinking makes them shorter).
"""
from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .core import Checks, Model, Progress, Step, Violation, action_name, explained
from .explore import TRANSITION, FAULT, walk
from .swarm import swarm_walk
from .memory import CHECK_EVERY, resident_bytes

__all__ = ["STRATEGIES", "SimulationResult", "simulate"]

#: how a walk chooses its next action: "swarm" (engine/swarm.py: per-walk random weights and a
#: preference for states not reached before; the default) or "uniform" (engine/explore.py's walk)
STRATEGIES = ("swarm", "uniform")

SimOutcome = Literal["success", "safety_failure", "vacuous", "incomplete"]


@dataclass
class SimulationResult:
    """What a simulation saw. ``outcome`` is ``success`` when no property broke and every
    ``sometimes`` property was witnessed (which, unlike a check, proves nothing)."""

    outcome: SimOutcome
    seed: int
    walks: int  # walks run (fewer than asked when a violation, and its shrinking, ended the run)
    max_depth: int
    steps: int  # actions taken over all walks
    distinct_states: int
    deepest: int  # the longest walk, in actions
    dead_ends: int  # walks that ended before max_depth: no enabled action changes the state
    seconds: float
    violations: list[Violation] = field(default_factory=list)
    witnessed: list[str] = field(default_factory=list)
    unwitnessed: list[str] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)
    limit_hit: str | None = None  # "memory" when the memory ceiling stopped the run (incomplete)
    strategy: str = "swarm"
    first_found: int | None = None  # the walk (1, 2, ...) that found the first violation

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    @property
    def transitions(self) -> int:
        return self.steps


def simulate(
    model: Model[Any, Any],
    *,
    seed: int,
    walks: int,
    max_depth: int,
    progress: Callable[[Progress], None] | None = None,
    progress_every: float = 0.5,
    max_memory: int | None = None,
    strategy: str = "swarm",
    shrink: bool = True,
) -> SimulationResult:
    """Run ``walks`` random walks of at most ``max_depth`` actions; stop at the first violation,
    or, with ``shrink``, look for a shorter one first.

    ``strategy`` chooses the walks (:data:`STRATEGIES`). A violation is reported for every property
    its step breaks. With ``shrink`` (the default) the run does not end at the first violation,
    found at walk ``i``: it goes on for ``max(i, walks // 10)`` more walks (within ``walks``), each
    at most one step shorter than the shortest violation so far, and reports the shortest it found
    (``first_found`` says when the first came). Violations of the shortest kind are the likeliest
    to be the checker's answer, and a shorter trace is a clearer one.

    With ``max_memory`` (bytes), resident memory is read before the first walk, every
    ``CHECK_EVERY`` steps and after the last walk; past it the
    run stops with outcome ``incomplete`` and ``limit_hit = "memory"`` (a walk's trace and the
    set of states seen are what grow).

    ``progress`` receives a :class:`Progress` whose ``states`` are the distinct states seen so
    far, ``depth`` the deepest walk, and ``queue`` the walks still to run.
    """
    if walks < 0 or max_depth < 0:
        raise ValueError("walks and max_depth must not be negative")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    rng = random.Random(seed)
    checks = Checks.of(model)
    unseen = set(checks.sometimes_names())
    witnessed: list[str] = []
    fingerprint = model.fingerprint

    seen: set[int] = set()
    coverage: Counter[str] = Counter()
    violations: list[Violation] = []  # the shortest violating step so far, one per property it breaks
    first_found: int | None = None
    cap = max_depth  # the longest walk now: max_depth, then shorter than the shortest violation
    budget = walks  # walks to run: all of them, or, once a violation is found, the shrinking's share
    steps_taken = 0
    deepest = 0
    dead_ends = 0
    done = 0
    start = time.perf_counter()
    last_report = start
    limit_hit: str | None = None
    memory_due = CHECK_EVERY
    # read before the first walk and after the last as well: a run shorter than CHECK_EVERY steps
    # would otherwise end without a single reading, its ceiling never enforced
    if max_memory is not None and resident_bytes() > max_memory:
        limit_hit = "memory"
        budget = 0

    while done < budget:
        trace: list[Step] = []
        depth = 0  # actions taken in this walk
        violation: list[Violation] = []
        path = (walk(model, rng, cap, checks) if strategy == "uniform"
                else swarm_walk(model, rng, cap, checks, seen))
        for ps in path:
            trace.append(ps.step())
            if ps.kind in (FAULT, TRANSITION):  # the step itself is the violation: not taken
                violation = [Violation(name, "transition", trace, ps.fault) for name in ps.broken]
                break
            if ps.action is not None:
                depth += 1
                steps_taken += 1
                coverage[action_name(ps.action)] += 1
                if max_memory is not None and steps_taken >= memory_due:
                    memory_due = steps_taken + CHECK_EVERY
                    if resident_bytes() > max_memory:
                        limit_hit = "memory"
                        break
            fp = fingerprint(ps.state)
            if ps.broken:  # checked on every state taken: a shorter path to a known bad state counts
                seen.add(fp)
                violation = [Violation(name, "always", trace) for name in ps.broken]
                break
            if fp not in seen:
                seen.add(fp)
                if unseen:
                    now_seen = checks.witnessed(ps.state, unseen)
                    unseen.difference_update(now_seen)
                    witnessed.extend(now_seen)
        deepest = max(deepest, depth)
        if limit_hit is not None:
            break
        done += 1
        if violation:  # shorter than any before: walks are capped below the shortest
            violations = violation
            if first_found is None:
                first_found = done
                budget = min(walks, done + max(done, walks // 10)) if shrink else done
            cap = violation[0].length - 1
            if cap < 1:  # nothing shorter to find: the initial state, or one step
                break
        elif depth < cap:  # nothing enabled, or only steps that leave the state as it is
            dead_ends += 1
        if progress is not None:
            now = time.perf_counter()
            if now - last_report >= progress_every:
                last_report = now
                progress(Progress(len(seen), deepest, budget - done, now - start))

    if max_memory is not None and limit_hit is None and resident_bytes() > max_memory:
        limit_hit = "memory"  # the walks finished, but past the ceiling: the run did not keep it
    seconds = time.perf_counter() - start
    if progress is not None:
        progress(Progress(len(seen), deepest, budget - done, seconds))
    if violations:
        outcome: SimOutcome = "safety_failure"
    elif limit_hit is not None:
        outcome = "incomplete"
    elif unseen:
        outcome = "vacuous"
    else:
        outcome = "success"
    return SimulationResult(
        outcome=outcome,
        seed=seed,
        walks=done,
        max_depth=max_depth,
        steps=steps_taken,
        distinct_states=len(seen),
        deepest=deepest,
        dead_ends=dead_ends,
        seconds=seconds,
        violations=explained(violations, model.properties()),
        witnessed=sorted(witnessed),
        unwitnessed=sorted(unseen),
        coverage=dict(sorted(coverage.items())),
        limit_hit=limit_hit,
        strategy=strategy,
        first_found=first_found,
    )
