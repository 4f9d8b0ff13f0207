"""``isrcheck spark swarm``: many seeded random walks over Spark tasks, for models too large to
exhaust.

The walks are split over a fixed number of tasks (``--tasks``, 8 by default, independent of the
cluster, so that a seed gives the same run anywhere); task ``i`` runs
:func:`isrcheck.engine.simulate.simulate` with the seed :func:`.paths.derived_seed` ``(seed, i)``.
The driver aggregates: violations found (the shortest first, ties to the lowest task), distinct
states over all tasks (fingerprints are process-independent, :mod:`.fingerprint`), action coverage
and witnessed properties.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from isrcheck.model.action_text import parse
from isrcheck.engine.core import Violation
from isrcheck.engine.explore import replay
from isrcheck.engine.simulate import simulate

from .paths import derived_seed
from .spec import ModelSpec

DEFAULT_TASKS = 8


class _Recording:
    """The model, remembering every fingerprint the simulation asks for (the states it saw)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.seen: set[int] = set()

    def init_states(self) -> Any:
        return self.model.init_states()

    def actions(self, state: Any) -> Any:
        return self.model.actions(state)

    def next_state(self, state: Any, action: Any) -> Any:
        return self.model.next_state(state, action)

    def properties(self) -> Any:
        return self.model.properties()

    def fingerprint(self, state: Any) -> int:
        fp = self.model.fingerprint(state)
        self.seen.add(fp)
        return fp


def split(walks: int, tasks: int) -> list[int]:
    base, extra = divmod(walks, tasks)
    return [base + (1 if i < extra else 0) for i in range(tasks)]


def run_task(task: str) -> dict[str, Any]:
    """One task's walks (runs in a Spark worker)."""
    from .spec import model_for

    t = json.loads(task)
    model = _Recording(model_for(t["spec"]))
    r = simulate(model, seed=t["seed"], walks=t["walks"], max_depth=t["max_depth"])
    v = r.violations[0] if r.violations else None
    violation = None
    if v is not None:
        violation = {
            "property": v.property, "kind": v.kind, "message": v.message, "length": v.length,
            "init": model.model.fingerprint(v.trace[0].state),
            "actions": [str(s.action) for s in v.trace[1:]],
            "fault": v.trace[-1].state is None,
        }
    return {
        "task": t["index"], "seed": t["seed"], "walks": r.walks, "steps": r.steps, "deepest": r.deepest,
        "dead_ends": r.dead_ends, "seconds": r.seconds, "coverage": r.coverage, "witnessed": r.witnessed,
        "violation": violation, "fingerprints": sorted(model.seen),
    }


@dataclass
class SwarmResult:
    seed: int
    walks: int  # walks completed
    tasks: list[dict[str, Any]]
    distinct_states: int
    steps: int
    coverage: dict[str, int]
    witnessed: list[str]
    unwitnessed: list[str]
    violations: list[Violation] = field(default_factory=list)  # the shortest first; one per task that found one
    seconds: float = 0.0

    @property
    def outcome(self) -> str:
        if self.violations:
            return "safety_failure"
        return "vacuous" if self.unwitnessed else "success"


def rebuild(model: Any, v: dict[str, Any]) -> Violation:
    """A task's violation as a trace of real states (replayed from its action texts)."""
    init = next(s for s in model.init_states() if model.fingerprint(s) == v["init"])
    steps = replay(model, [parse(text) for text in v["actions"]], init).steps
    return Violation(v["property"], v["kind"], steps, v["message"])


def run_swarm(spark: Any, spec: ModelSpec, *, walks: int, seed: int, tasks: int = DEFAULT_TASKS,
              max_depth: int = 100) -> SwarmResult:
    import time

    start = time.perf_counter()
    tasks = max(1, min(tasks, walks))
    spec_json = spec.to_json()
    work = [json.dumps({"spec": spec_json, "index": i, "seed": derived_seed(seed, i, "swarm"), "walks": n,
                        "max_depth": max_depth})
            for i, n in enumerate(split(walks, tasks))]
    results = spark.sparkContext.parallelize(work, len(work)).map(run_task).persist()
    try:
        summaries = results.map(lambda r: {k: v for k, v in r.items() if k != "fingerprints"}).collect()
        distinct = results.flatMap(lambda r: r["fingerprints"]).distinct().count()
    finally:
        results.unpersist()
    summaries.sort(key=lambda r: r["task"])
    coverage: Counter[str] = Counter()
    witnessed: set[str] = set()
    for r in summaries:
        coverage.update(r["coverage"])
        witnessed.update(r["witnessed"])
    model = spec.build()
    found = sorted((r for r in summaries if r["violation"]), key=lambda r: (r["violation"]["length"], r["task"]))
    violations = [rebuild(model, r["violation"]) for r in found]
    sometimes = [p.name for p in model.properties() if p.kind == "sometimes"]
    return SwarmResult(
        seed=seed, walks=sum(r["walks"] for r in summaries), tasks=summaries, distinct_states=distinct,
        steps=sum(r["steps"] for r in summaries), coverage=dict(sorted(coverage.items())),
        witnessed=sorted(witnessed), unwitnessed=sorted(set(sometimes) - witnessed), violations=violations,
        seconds=time.perf_counter() - start,
    )
