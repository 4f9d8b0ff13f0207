"""Traces out of the checker: a model's shortest counterexample, or seeded random sample paths.

:func:`counterexample` runs the checker exactly as ``isrcheck check`` does (the manifest entry's
symmetry and property selection) and turns the first violation into a :class:`~.traces.Trace`.
Counterexample states are concrete even under symmetry reduction (the checker rebuilds them by
replaying actions), so the trace's actions can be driven on the implementation as they are.
:func:`samples` takes random walks (``random.Random(seed)``; the same seed gives the same paths).
:func:`export` is what ``isrcheck traces export`` calls.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from isrcheck.invariants import build_model
from isrcheck.model.checker import Checker, CheckResult, Step
from isrcheck.model.explore import walk
from isrcheck.model.config import Config
from isrcheck.specs.manifest import Target

from .traces import Trace, trace_from_steps, write_trace

__all__ = ["ExportResult", "counterexample", "export", "random_path", "samples", "sample_paths"]


def _check(target: Target[Config]) -> CheckResult:
    props = list(target.properties) if target.properties else None
    model = build_model(target.config, symmetry=target.symmetry, properties=props)
    return Checker(model).run()


def counterexample(target: Target[Config], result: CheckResult | None = None) -> Trace | None:
    """The shortest counterexample of ``target`` as a trace, or None when every property holds."""
    result = result if result is not None else _check(target)
    if not result.violations:
        return None
    v = result.violations[0]
    desc = f"shortest counterexample: {v.property} broken after {v.length} step(s)"
    if v.trace and v.trace[-1].state is None:
        desc += f"; the last action {v.trace[-1].action} itself is the violation and is not in the trace"
    return trace_from_steps(v.trace, target.config, kind="counterexample", model=target.entry.name if target.entry else None,
                            property=v.property, description=desc)


def random_path(config: Config, rng: random.Random, max_depth: int) -> list[Step]:
    """One random walk through the model (no symmetry), avoiding steps that change nothing."""
    model = build_model(config, symmetry=False, properties=[])
    return [ps.step() for ps in walk(model, rng, max_depth, skip_faults=True)]


def sample_paths(config: Config, n: int, seed: int, max_depth: int) -> list[list[Step]]:
    rng = random.Random(seed)
    return [random_path(config, rng, max_depth) for _ in range(n)]


def samples(target: Target[Config], n: int, seed: int, max_depth: int) -> list[Trace]:
    name = target.entry.name if target.entry else None
    out = []
    for i, steps in enumerate(sample_paths(target.config, n, seed, max_depth), start=1):
        out.append(trace_from_steps(steps, target.config, kind="sample", model=name, seed=seed,
                                    description=f"random path {i} of {n} (seed {seed}, at most {max_depth} steps)"))
    return out


@dataclass
class ExportResult:
    files: list[str]
    kind: str  # "counterexample" | "sample"
    traces: list[Trace]


def numbered(path: str | Path, i: int) -> Path:
    """``out.jsonl`` -> ``out-3.jsonl``; ``out.itf.json`` -> ``out-3.itf.json``."""
    p = Path(path)
    name = p.name
    for suffix in (".itf.json", ".jsonl", ".json"):
        if name.endswith(suffix):
            return p.with_name(f"{name[: -len(suffix)]}-{i}{suffix}")
    return p.with_name(f"{name}-{i}")


def export(target: Target[Config], out: str | Path, fmt: str | None = None, n: int = 1, seed: int = 0,
           max_depth: int = 30) -> ExportResult:
    """Write the counterexample of ``target``, or (when every property holds) ``n`` sample paths."""
    ce = counterexample(target)
    if ce is not None:
        write_trace(ce, out, fmt)
        return ExportResult([str(out)], "counterexample", [ce])
    traces = samples(target, n, seed, max_depth)
    files = []
    for i, t in enumerate(traces, start=1):
        path = out if n == 1 else numbered(out, i)
        write_trace(t, path, fmt)
        files.append(str(path))
    return ExportResult(files, "sample", traces)
