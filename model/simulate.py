"""Seeded random simulation, for configurations too large to exhaust.

Each walk starts from an initial state and takes random enabled actions until none is left
that changes the state or ``max_depth`` actions were taken. Steps that leave the state as it is
(a follower fetching when there is nothing new) are checked but not taken, so walks do not
spin in place; they end when the system is quiescent. Every state is checked against the
``always`` properties, every step against the ``transition`` properties (and a step that raises
:class:`~isrcheck.model.checker.ModelFault` is a violation), and ``sometimes`` properties are
recorded when witnessed. The walk is a function of the seed alone: the same seed, model and
bounds give the same result, in any process.

Simulation finds bugs; it never proves their absence. Its traces are not shortest ones.
"""
from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .engine import Checks, Model, Progress, Step, Violation, action_name
from .explore import TRANSITION, FAULT, walk

__all__ = ["SimulationResult", "simulate"]

SimOutcome = Literal["success", "safety_failure", "vacuous"]


@dataclass
class SimulationResult:
    """What a simulation saw. ``outcome`` is ``success`` when no property broke and every
    ``sometimes`` property was witnessed (which, unlike a check, proves nothing)."""

    outcome: SimOutcome
    seed: int
    walks: int  # walks completed (fewer than asked when a violation stopped the run)
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
) -> SimulationResult:
    """Run ``walks`` random walks of at most ``max_depth`` actions; stop at the first violation.

    ``progress`` receives a :class:`Progress` whose ``states`` are the distinct states seen so
    far, ``depth`` the deepest walk, and ``queue`` the walks still to run.
    """
    if walks < 0 or max_depth < 0:
        raise ValueError("walks and max_depth must not be negative")
    rng = random.Random(seed)
    checks = Checks.of(model)
    unseen = set(checks.sometimes_names())
    witnessed: list[str] = []
    fingerprint = model.fingerprint

    seen: set[int] = set()
    coverage: Counter[str] = Counter()
    violation: Violation | None = None
    steps_taken = 0
    deepest = 0
    dead_ends = 0
    done = 0
    start = time.perf_counter()
    last_report = start

    for _ in range(walks):
        trace: list[Step] = []
        depth = 0  # actions taken in this walk
        for ps in walk(model, rng, max_depth, checks):
            trace.append(ps.step())
            if ps.kind in (FAULT, TRANSITION):  # the step itself is the violation: not taken
                violation = Violation(ps.broken[0], "transition", trace, ps.fault)
                break
            if ps.action is not None:
                depth += 1
                steps_taken += 1
                coverage[action_name(ps.action)] += 1
            fp = fingerprint(ps.state)
            if fp not in seen:
                seen.add(fp)
                if ps.broken:
                    violation = Violation(ps.broken[0], "always", trace)
                    break
                if unseen:
                    now_seen = checks.witnessed(ps.state, unseen)
                    unseen.difference_update(now_seen)
                    witnessed.extend(now_seen)
        deepest = max(deepest, depth)
        if violation is not None:
            break
        if depth < max_depth:  # nothing enabled, or only steps that leave the state as it is
            dead_ends += 1
        done += 1
        if progress is not None:
            now = time.perf_counter()
            if now - last_report >= progress_every:
                last_report = now
                progress(Progress(len(seen), deepest, walks - done, now - start))

    seconds = time.perf_counter() - start
    if progress is not None:
        progress(Progress(len(seen), deepest, walks - done, seconds))
    if violation is not None:
        outcome: SimOutcome = "safety_failure"
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
        violations=[violation] if violation is not None else [],
        witnessed=sorted(witnessed),
        unwitnessed=sorted(unseen),
        coverage=dict(sorted(coverage.items())),
    )
