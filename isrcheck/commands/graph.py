"""``isrcheck graph`` and ``isrcheck report``: a model's state graph as a file, and a review page.

    isrcheck graph MODEL|--config FILE [--set K=V] [--variant M:A] [--format dot|graphml|json] [-o FILE]
                   [--max-states N] [--max-depth N] [--truncate] [--symmetry/--no-symmetry]
    isrcheck report MODEL|--config FILE|TRACE -o report.html [--set K=V] [--variant M:A]

Exit status: 0 the file was written (whatever the verdict it shows); 2 bad usage or input, or a
graph larger than --max-states without --truncate, one line ``error: ...`` on stderr.

The options mirror ``check``'s (:mod:`isrcheck.commands.options`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from isrcheck.commands.options import config_opt, description_of, descriptions_for, protocol_for, set_opt
from isrcheck.commands.usage import errors_as_lines
from isrcheck.conformance.traces import TraceError, load_trace
from isrcheck.engine.checker import Checker
from isrcheck.engine.core import Checks, Step
from isrcheck.engine.explore import replay, verdicts
from isrcheck.inputs import manifest
from isrcheck.inputs.tracefile import check_replay
from isrcheck.invariants import build_model
from isrcheck.invariants.properties import detail
from isrcheck.invariants.variants import load_variant, variant_option, variant_source
from isrcheck.model.actions import Action
from isrcheck.model.config import ConfigError
from isrcheck.render import tables
from isrcheck.render.graph_export import (DEFAULT_MAX_STATES, FORMATS, GraphTooLarge, build_state_graph,
                                          counterexample_of, format_for, render_graph)
from isrcheck.render.html_report import Report, render_report, trace_coverage

__all__ = ["graph", "report"]

#: this module's input errors (the main group handles the configuration's own)
_user_errors = errors_as_lines(GraphTooLarge, TraceError)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror or e}") from None


def _model(name: str | None, config_file: str | None, overrides: tuple[str, ...], variant: str | None,
           symmetry: bool | None) -> tuple[Any, Any]:
    """(target, model) as ``check`` builds them."""
    target = manifest.resolve(name, config_file, overrides)
    protocol, variant = protocol_for(target, variant)
    model = build_model(target.config, protocol=protocol,
                        symmetry=target.symmetry if symmetry is None else symmetry,
                        properties=list(target.properties) if target.properties else None)
    if protocol is not None:
        target = dataclasses.replace(target, label=f"{target.label} [{variant}]")
    return target, model


_common = [
    config_opt,
    set_opt,
    click.option("--symmetry/--no-symmetry", default=None,
                 help="Force broker-symmetry reduction on or off (default: the model's choice, as check)."),
    variant_option,
]


def _with_common(fn: Callable[..., Any]) -> Callable[..., Any]:
    for deco in reversed(_common):
        fn = deco(fn)
    return fn


# ---------------------------------------------------------------------------- graph
@click.command(short_help="Export a model's reachable state graph (DOT, GraphML, JSON).")
@click.argument("name", required=False, metavar="[MODEL]")
@_with_common
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Default: from the -o file's suffix (.graphml, .json), else dot.")
@click.option("-o", "--out", "out", metavar="FILE", help="Write to FILE (default: stdout).")
@click.option("--max-states", type=click.IntRange(min=1), default=DEFAULT_MAX_STATES, show_default=True, metavar="N",
              help="Refuse a graph with more states (exit 2), unless --truncate.")
@click.option("--truncate", is_flag=True, help="Past --max-states, export the first N states (breadth first) "
                                               "and mark the graph truncated.")
@click.option("--max-depth", type=click.IntRange(min=0), metavar="N",
              help="Only states up to N steps from the initial state (the graph is marked truncated).")
@_user_errors
def graph(name: str | None, config_file: str | None, overrides: tuple[str, ...], symmetry: bool | None,
          variant: str | None, fmt: str | None, out: str | None, max_states: int, truncate: bool,
          max_depth: int | None) -> None:
    """Write the reachable state graph of MODEL (or --config FILE): a node per distinct state (per
    orbit of brokers under symmetry), an edge per transition labelled with its action, and the
    counterexample `check` prints (if any) marked counterexample=true (red in DOT)."""
    target, model = _model(name, config_file, overrides, variant, symmetry)
    fmt = format_for(out, fmt)
    cx = counterexample_of(model, max_depth=max_depth, max_states=max_states)
    sg = build_state_graph(model, target.label, max_states=max_states, max_depth=max_depth, truncate=truncate,
                           counterexample=cx)
    text = render_graph(sg.graph, fmt)
    g = sg.graph.graph
    if not sg.complete:
        click.echo(f"warning: the graph is truncated by the {g['truncated_by']} limit: {g['states']:,} states "
                   "exported, not every reachable one", err=True)
    if out is None:
        click.echo(text, nl=False)
        return
    _write(out, text)
    cx_text = f"; counterexample: {g['counterexample']}" if g["counterexample"] else ""
    click.echo(f"wrote {out}: {g['states']:,} states, {g['transitions']:,} transitions ({fmt}; symmetry "
               f"{'on' if model.symmetry else 'off'}){cx_text}")


# ---------------------------------------------------------------------------- report
def _is_trace(arg: str | None) -> bool:
    return arg is not None and (Path(arg).is_file() or arg.endswith((".json", ".jsonl")) or "/" in arg)


def _model_report(name: str | None, config_file: str | None, overrides: tuple[str, ...], variant: str | None,
                  symmetry: bool | None, max_states: int | None) -> Report:
    target, model = _model(name, config_file, overrides, variant, symmetry)
    result = Checker(model, max_states=max_states, stop_on_first=False).run()  # every broken property
    verdict = tables.check_summary(target.label, result)[-1].plain
    figures = [("distinct states", f"{result.distinct_states:,}"), ("depth", str(result.depth)),
               ("transitions", f"{result.transitions:,}"), ("time", f"{result.seconds:.2f} s"),
               ("symmetry", "on (states counted as orbits of brokers)" if model.symmetry else "off")]
    if result.limit_hit:
        figures.append(("limit hit", result.limit_hit))
    if result.unwitnessed:
        figures.append(("never witnessed", ", ".join(result.unwitnessed)))
    steps: list[Step] = []
    details: list[str] = []
    bad = None
    title = ""
    if result.violations:
        v = result.violations[0]
        steps, bad = v.trace, len(v.trace) - 1
        title = tables.violation_title(v)
        for w in result.violations:  # every property broken, shortest counterexample first
            why = w.message or detail(w)
            details.append(f"{w.property} (broken after {w.length} step(s)): {description_of(w)}"
                           + (f" Broken: {why}." if why else ""))
    cls = "ok" if result.outcome == "success" else "fail" if result.outcome == "safety_failure" else "unknown"
    return Report(target.label, verdict, cls, target.config, list(steps), trace_title=title, violation_step=bad,
                  details=details, figures=figures, coverage=dict(result.coverage),
                  coverage_title="Coverage: how often each action was taken (as check reports it)",
                  variant=variant_source(model.protocol), extension=model.protocol.extension)


def _replay(model: Any, actions: list[Action], source: str) -> list[Step]:
    """The trace's actions run on the model from its initial state; a last step that breaks a state
    machine has no state (as in a counterexample)."""
    r = replay(model, actions)
    if r.stopped_at is not None:
        raise TraceError(f"{source}: step {r.stopped_at}: {actions[r.stopped_at - 1]} is not enabled in the model "
                         "(a trace of another variant? give --variant)")
    return r.steps


def _trace_report(path: str, variant: str | None) -> Report:
    tr = load_trace(path)
    protocol = load_variant(variant)(tr.config) if variant else None
    model = build_model(tr.config, protocol=protocol, symmetry=False)
    described = descriptions_for(model)
    acts = [Action(st.action[0], tuple(st.action[1])) for st in tr.steps if st.action is not None]
    steps = _replay(model, acts, path)
    check_replay(tr, [st for st in steps if st.state is not None], protocol)  # a tampered or foreign file is refused
    checked = verdicts(steps, Checks.of(model))
    broken = [(i, ps.broken) for i, ps in enumerate(checked) if ps.broken]
    label = tr.model or Path(path).name
    what = (f"a counterexample of {tr.prop}" if tr.kind == "counterexample" and tr.prop else
            f"a lasso of {tr.prop}" if tr.loop is not None and tr.prop else f"a {tr.kind}")
    details = [f"trace file {path}: {what}, {len(steps) - 1} step(s), replayed on the model"
               + (f" with variant {variant}" if variant else "")]
    bad = None
    if broken:
        bad, names = broken[0]
        verdict = f"{label}: {', '.join(names)} broken at step {bad} of the trace"
        details += [f"{n}: {described.get(n, '')}" for n in names]
        cls = "fail"
    elif tr.loop is not None and tr.prop:
        stem = "stutters forever" if tr.loop == len(steps) - 1 else f"loops back to step {tr.loop} forever"
        verdict = f"{label}: LIVENESS FAILURE - {tr.prop}: the behaviour {stem}"
        details.append(f"{tr.prop}: {described.get(tr.prop, '')}")
        cls = "fail"
    else:
        verdict = f"{label}: no safety property is broken along this trace"
        cls = "ok"
    return Report(label, verdict, cls, tr.config, steps, trace_title=f"{len(steps) - 1} step(s) from {path}",
                  violation_step=bad, loop=tr.loop, details=details, coverage=trace_coverage(steps),
                  coverage_title="Coverage: the actions this trace takes", variant=variant_source(protocol),
                  extension=model.protocol.extension)


@click.command(short_help="Write a self-contained HTML report of a check or a trace.")
@click.argument("target", required=False, metavar="[MODEL|TRACE]")
@_with_common
@click.option("-o", "--out", "out", required=True, metavar="FILE", help="The HTML file to write.")
@click.option("--max-states", type=click.IntRange(min=1), metavar="N", help="Stop the check after N states.")
@_user_errors
def report(target: str | None, config_file: str | None, overrides: tuple[str, ...], symmetry: bool | None,
           variant: str | None, out: str, max_states: int | None) -> None:
    """Check MODEL (or --config FILE) and write one HTML page: the verdict, the configuration, the
    counterexample as a message sequence diagram and as the state at every step, and the coverage.
    Given a TRACE file (`traces export`), replay it on the model and report that path instead."""
    if _is_trace(target):
        if config_file or overrides or symmetry is not None or max_states is not None:
            raise ConfigError("a TRACE carries its configuration: --config, --set, --symmetry and --max-states "
                              "apply to a MODEL")
        rep = _trace_report(str(target), variant)
    else:
        rep = _model_report(target, config_file, overrides, variant, symmetry, max_states)
    _write(out, render_report(rep))
    click.echo(f"wrote {out}: {rep.verdict}")
