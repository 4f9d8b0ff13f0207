"""Traces out of the checker: a model's shortest counterexample, or seeded random sample paths.

:func:`counterexample` runs the checker exactly as ``isrcheck check`` does (the manifest entry's
symmetry and property selection) and turns the first violation into a :class:`~.traces.Trace`.
Counterexample states are concrete even under symmetry reduction (the checker rebuilds them by
replaying actions), so the trace's actions can be driven on the implementation as they are.
:func:`samples` takes random walks (``random.Random(seed)``; the same seed gives the same paths).
:func:`lasso` runs the liveness check (:mod:`isrcheck.engine.liveness`) for one property under the
model's weak-fairness assumptions and turns its counterexample into a trace with ``loop`` set: a
path whose end repeats forever (or, when the loop is the last state alone, stutters there).
:func:`export` is what ``isrcheck traces export`` calls; with ``property`` it writes the
counterexample of that one property, a safety property's shortest one or a liveness property's lasso.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from isrcheck.invariants import ALL_PROPERTIES, build_model
from isrcheck.invariants.liveness import LIVENESS_NAMES
from isrcheck.invariants.liveness import check as check_liveness_of
from isrcheck.engine.checker import Checker, CheckResult, Step
from isrcheck.engine.explore import walk
from isrcheck.model.protocol import Protocol
from isrcheck.model.config import Config, ConfigError
from isrcheck.specs.manifest import Target

from .traces import Trace, trace_from_steps, write_trace

__all__ = ["ExportError", "ExportResult", "counterexample", "export", "lasso", "property_counterexample",
           "random_path", "samples", "sample_paths"]


class ExportError(ValueError):
    """Nothing to export for the property asked for (it holds, or does not apply); one line."""


def _name(target: Target[Config]) -> str | None:
    return target.entry.name if target.entry else None


def _check(target: Target[Config], properties: list[str] | None = None, protocol: Protocol | None = None) -> CheckResult:
    props = properties if properties is not None else (list(target.properties) if target.properties else None)
    model = build_model(target.config, protocol=protocol, symmetry=target.symmetry, properties=props)
    return Checker(model).run()


def counterexample(target: Target[Config], result: CheckResult | None = None,
                   protocol: Protocol | None = None) -> Trace | None:
    """The shortest counterexample of ``target`` as a trace, or None when every property holds."""
    result = result if result is not None else _check(target, protocol=protocol)
    if not result.violations:
        return None
    v = result.violations[0]
    desc = f"shortest counterexample: {v.property} broken after {v.length} step(s)"
    if v.trace and v.trace[-1].state is None:
        desc += f"; the last action {v.trace[-1].action} itself is the violation and is not in the trace"
    return trace_from_steps(v.trace, target.config, kind="counterexample", model=_name(target),
                            property=v.property, description=desc, protocol=protocol)


def property_counterexample(target: Target[Config], property_name: str,
                            protocol: Protocol | None = None) -> Trace | None:
    """The shortest counterexample of the one safety property ``property_name`` (the checker runs
    with only that property, and the target's symmetry), or None when it holds."""
    result = _check(target, [property_name], protocol)
    broken = [v for v in result.violations if v.property == property_name]
    if not broken:
        return None
    result.violations = broken
    return counterexample(target, result, protocol)


def lasso(target: Target[Config], property_name: str, protocol: Protocol | None = None) -> Trace | None:
    """The counterexample to the liveness property ``property_name`` on ``target``'s configuration,
    as a lasso trace (``loop`` set), or None when the property holds under the model's fairness.

    Raises :class:`ExportError` when the property is unknown, does not apply to the configuration,
    or the state graph is too large to decide it.
    """
    if property_name not in LIVENESS_NAMES:
        raise ExportError(f"unknown liveness property {property_name!r} (known: {', '.join(LIVENESS_NAMES)})")
    cfg = target.config
    try:
        result = check_liveness_of(cfg, [property_name], protocol=protocol)
    except ConfigError as e:
        raise ExportError(str(e)) from None
    verdict = result.verdicts[0]
    if verdict.holds is None:
        raise ExportError(f"{property_name}: the state graph of {target.label} was not explored completely; "
                          "no verdict")
    if verdict.holds or verdict.violation is None:
        return None
    v = verdict.violation
    loop = v.loop if v.loop is not None else len(v.trace) - 1
    steps = len(v.trace) - 1
    if loop == steps:
        shape = (f"a stem of {steps} step(s), then the behaviour stutters at the last state forever "
                 "(no fair action is enabled there)")
    else:
        shape = (f"a stem of {loop} step(s), then a loop of {steps - loop} step(s) from step {loop} back to it "
                 "that repeats forever")
    desc = f"liveness counterexample (lasso) to {property_name}: {shape}"
    if verdict.lasso is not None:
        desc += (f"; for {verdict.lasso.instance} the premise holds at step {verdict.lasso.premise_at} "
                 "and the goal never holds after it")
    return trace_from_steps(v.trace, cfg, kind="counterexample", model=_name(target), property=property_name,
                            description=desc, loop=loop, protocol=protocol)


def random_path(config: Config, rng: random.Random, max_depth: int, protocol: Protocol | None = None) -> list[Step]:
    """One random walk through the model (no symmetry), avoiding steps that change nothing."""
    model = build_model(config, protocol=protocol, symmetry=False, properties=[])
    return [ps.step() for ps in walk(model, rng, max_depth, skip_faults=True)]


def sample_paths(config: Config, n: int, seed: int, max_depth: int,
                 protocol: Protocol | None = None) -> list[list[Step]]:
    rng = random.Random(seed)
    return [random_path(config, rng, max_depth, protocol) for _ in range(n)]


def samples(target: Target[Config], n: int, seed: int, max_depth: int,
            protocol: Protocol | None = None) -> list[Trace]:
    name = target.entry.name if target.entry else None
    out = []
    for i, steps in enumerate(sample_paths(target.config, n, seed, max_depth, protocol), start=1):
        out.append(trace_from_steps(steps, target.config, kind="sample", model=name, seed=seed,
                                    description=f"random path {i} of {n} (seed {seed}, at most {max_depth} steps)",
                                    protocol=protocol))
    return out


@dataclass
class ExportResult:
    files: list[str]
    kind: str  # "counterexample" | "lasso" | "sample"
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
           max_depth: int = 30, property: str | None = None, protocol: Protocol | None = None) -> ExportResult:
    """Write the counterexample of ``target``, or (when every property holds) ``n`` sample paths.

    With ``property``: write that property's counterexample only, the lasso of a liveness property
    (one of ``LIVENESS_NAMES``) or the shortest counterexample of a safety property; raise
    :class:`ExportError` when it holds or does not apply (no samples are written then).
    ``protocol``: a variant's Protocol (``--variant``) instead of the configuration's.
    """
    if property is not None:
        return _export_property(target, out, fmt, property, protocol)
    ce = counterexample(target, protocol=protocol)
    if ce is not None:
        write_trace(ce, out, fmt)
        return ExportResult([str(out)], "counterexample", [ce])
    traces = samples(target, n, seed, max_depth, protocol)
    files = []
    for i, t in enumerate(traces, start=1):
        path = out if n == 1 else numbered(out, i)
        write_trace(t, path, fmt)
        files.append(str(path))
    return ExportResult(files, "sample", traces)


def _export_property(target: Target[Config], out: str | Path, fmt: str | None, name: str,
                     protocol: Protocol | None = None) -> ExportResult:
    if name in LIVENESS_NAMES:
        t = lasso(target, name, protocol)
        if t is None:
            raise ExportError(f"{name} holds on {target.label} under the model's fairness assumptions: "
                              "there is no lasso to export")
        write_trace(t, out, fmt)
        return ExportResult([str(out)], "lasso", [t])
    kind = next((p.kind for p in ALL_PROPERTIES if p.name == name), None)
    if kind == "sometimes":
        raise ExportError(f"{name} is a 'sometimes' property: only the absence of a witness breaks it, "
                          "which no trace can show")
    try:
        t = property_counterexample(target, name, protocol)
    except ConfigError as e:  # an unknown name: say that liveness names are accepted too
        raise ExportError(f"{e}; liveness: {', '.join(LIVENESS_NAMES)}") from None
    if t is None:
        raise ExportError(f"{name} holds on {target.label}: there is no counterexample to export")
    write_trace(t, out, fmt)
    return ExportResult([str(out)], "counterexample", [t])
