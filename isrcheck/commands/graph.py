"""``isrcheck graph`` and ``isrcheck report``: a model's state graph as a file, and a review page.

    isrcheck graph NAME|FILE|--config FILE [--set K=V] [--variant M:A] [--property P] [--keep-going]
                   [--format dot|graphml|json] [-o FILE] [--max-states N] [--max-depth N] [--truncate]
    isrcheck report NAME|--config FILE|TRACE|SCENARIO -o report.html [--set K=V] [--variant M:A]
                   [--property P] [--keep-going] [--strict] [--liveness/--no-liveness]

Exit status of ``graph``: 0 the file was written; 2 bad usage or input, or a graph larger than
--max-states without --truncate, one line ``error: ...`` on stderr.

Exit status of ``report``: its verdict's, as ``check``'s (a CI job that writes the page as its
artifact still fails on a failure): 0 success or as pinned; 1 a failure not as pinned, incomplete,
or vacuous under --strict (for a TRACE or SCENARIO: a property broken along it, or a lasso); 2 bad
usage or input. The page is written in every case but 2.

The inputs are ``check``'s one option group (:func:`isrcheck.commands.options.input_options`).
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import click

from isrcheck.analyses import vacuity
from isrcheck.commands.evaluate import evaluate, resolve_target, verdict_json, with_untaken
from isrcheck.commands.options import DESCRIPTIONS, Inputs, descriptions_for, exit_with, input_options, protocol_for
from isrcheck.invariants.liveness import LIVENESS_NAMES
from isrcheck.commands.usage import errors_as_lines
from isrcheck.conformance.traces import TraceError, load_trace
from isrcheck.engine.checker import Checker
from isrcheck.engine.core import Checks, Step
from isrcheck.engine.explore import replay, verdicts
from isrcheck.inputs.scenario import load_scenario
from isrcheck.inputs.targets import is_file_target
from isrcheck.inputs.tracefile import check_replay, is_trace_file
from isrcheck.invariants.properties import describe
from isrcheck.invariants import build_model
from isrcheck.invariants.variants import load_variant, variant_source
from isrcheck.model.actions import Action
from isrcheck.model.config import ConfigError
from isrcheck.render import tables
from isrcheck.render.graph_export import (DEFAULT_MAX_STATES, FORMATS, READABLE_STATES, GraphTooLarge, build_state_graph,
                                          counterexamples_of, format_for, mark_counterexample, render_graph)
from isrcheck.render.html_report import Report, render_report, trace_coverage

__all__ = ["graph", "report"]

#: this module's input errors (the main group handles the configuration's own)
_user_errors = errors_as_lines(GraphTooLarge, TraceError)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror or e}") from None


def _model(inputs: Inputs, symmetry: bool | None) -> tuple[Any, Any]:
    """(target, model) as ``check`` builds them, from the one input group."""
    live_named = [n for n in inputs.only if n in LIVENESS_NAMES]
    if live_named:
        raise ConfigError(f"--property {live_named[0]}: a liveness property has a lasso, not a counterexample path; "
                          f"`isrcheck traces export NAME --property {live_named[0]}` writes it")
    target = resolve_target(inputs)
    protocol, variant = protocol_for(target, inputs.variant)  # --variant, else the manifest entry's own
    properties = list(inputs.only) if inputs.only else (list(target.properties) if target.properties else None)
    model = build_model(target.config, protocol=protocol,
                        symmetry=target.symmetry if symmetry is None else symmetry, properties=properties)
    if protocol is not None:
        target = dataclasses.replace(target, label=f"{target.label} [{variant}]")
    return target, model


_symmetry_opt = click.option("--symmetry/--no-symmetry", default=None,
                             help="Force broker-symmetry reduction on or off (default: the model's choice, as check).")


# ---------------------------------------------------------------------------- graph
@click.command(short_help="Export a model's reachable state graph (DOT, GraphML, JSON).")
@input_options(refuse={"--peer": "the TLA+ transcription has no state graph export; `isrcheck check --peer MODULE` "
                                 "checks it",
                       "--strict": "graph exports the state graph and gives no verdict; `isrcheck check --strict` "
                                   "and `isrcheck report --strict` fail on vacuity"})
@_symmetry_opt
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
def graph(inputs: Inputs, symmetry: bool | None, fmt: str | None, out: str | None, max_states: int, truncate: bool,
          max_depth: int | None) -> None:
    """Write the reachable state graph of NAME (a model, a scenario or trace file, or --config FILE):
    a node per distinct state (per orbit of brokers under symmetry), an edge per transition
    labelled with its action, and the counterexample `check` prints (if any; with --keep-going one
    per property) marked counterexample=true (red in DOT)."""
    target, model = _model(inputs, symmetry)
    fmt = format_for(out, fmt)
    found = counterexamples_of(model, max_depth=max_depth, max_states=max_states, keep_going=inputs.keep_going)
    sg = build_state_graph(model, target.label, max_states=max_states, max_depth=max_depth, truncate=truncate,
                           counterexample=found[0] if found else None)
    for v in found[1:]:
        mark_counterexample(sg, model, v)
    text = render_graph(sg.graph, fmt)
    g = sg.graph.graph
    if not sg.complete:
        click.echo(f"warning: the graph is truncated by the {g['truncated_by']} limit: {g['states']:,} states "
                   "exported, not every reachable one", err=True)
    if fmt == "dot" and g["states"] > READABLE_STATES:
        click.echo(f"warning: {g['states']:,} states are too many to read as a drawing (Graphviz lays them out "
                   f"thousands of pixels wide); `isrcheck report {target.label}` shows the counterexample step by "
                   f"step, and --max-depth N draws only the first levels", err=True)
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


def _model_report(inputs: Inputs, symmetry: bool | None, liveness: bool | None,
                  max_states: int | None) -> tuple[Report, int]:
    """The page of a check, run as ``check`` runs it (commands/evaluate.py): the one verdict,
    every broken property with the line naming the offending values, and the first trace; and
    the verdict's exit status, which ``report`` exits with as ``check`` does."""
    ev = evaluate(inputs, max_states=max_states, symmetry=symmetry, liveness=liveness)
    target, result, lres, verdict = ev.target, ev.result, ev.lres, ev.verdict
    vj = verdict_json(verdict)
    overall = tables.overall_lines(target.label, vj, result, lres)
    line = (overall or tables.check_summary(target.label, result, safety_selected=ev.safety_selected))[-1]
    figures = [("distinct states", f"{result.distinct_states:,}"), ("depth", str(result.depth)),
               ("transitions", f"{result.transitions:,}"), ("time", f"{result.seconds:.2f} s"),
               ("symmetry", "on (states counted as orbits of brokers)" if ev.model.symmetry else "off")]
    if result.limit_hit:
        figures.append(("limit hit", result.limit_hit))
    if result.unwitnessed:
        figures.append(("never witnessed", ", ".join(result.unwitnessed)))
    if lres is not None:
        figures.append(("liveness", "; ".join(f"{v.property} " + ("unknown" if v.holds is None else
                                                                  "holds" if v.holds else "broken")
                                              for v in lres.verdicts)))
    traces = list(result.violations) + [v.violation for v in (lres.verdicts if lres else []) if v.violation]
    details = [f"{v.property} ({'liveness' if v.kind == 'liveness' else 'safety'}, {v.length} steps): {describe(v)}"
               for v in traces]
    details += [f"warning: {w.message}" for w in verdict.warnings]
    details += [f"differs from specs/models.toml: {m}" for m in verdict.mismatches]
    steps: list[Step] = []
    bad = loop = None
    title = ""
    if traces:
        v = traces[0]
        steps, title, loop = v.trace, tables.violation_title(v), v.loop
        bad = len(v.trace) - 1 if v.kind != "liveness" else None
        if len(traces) > 1:
            title += f" (the first of {len(traces)} broken properties listed above)"
    # the page's colour is the protocol's: a pinned failure is still a counterexample (red)
    cls = ("fail" if verdict.found in ("safety_failure", "liveness_failure") or verdict.exit_status else
           "ok" if not verdict.warnings else "unknown")
    return Report(target.label, line.plain, cls, target.config, list(steps), trace_title=title, violation_step=bad,
                  loop=loop, details=details, figures=figures,
                  coverage=with_untaken(target.config, dict(result.coverage)),
                  coverage_title="Coverage: how often each action was taken (as check reports it)",
                  variant=variant_source(ev.model.protocol), extension=ev.model.protocol.extension), \
        verdict.exit_status


def _replay(model: Any, actions: list[Action], source: str) -> list[Step]:
    """The trace's actions run on the model from its initial state; a last step that breaks a state
    machine has no state (as in a counterexample)."""
    r = replay(model, actions)
    if r.stopped_at is not None:
        raise TraceError(f"{source}: step {r.stopped_at}: {actions[r.stopped_at - 1]} is not enabled in the model "
                         "(a trace of another variant? give --variant)")
    return r.steps


def _scenario_report(path: str, variant: str | None) -> Report:
    """A scenario file's steps replayed on the model, reported as a trace file is."""
    sc = load_scenario(path)
    protocol = load_variant(variant)(sc.config) if variant else None
    model = build_model(sc.config, protocol=protocol, symmetry=False)
    steps = _replay(model, list(sc.actions), path)
    checked = verdicts(steps, Checks.of(model))
    broken = [(i, ps.broken) for i, ps in enumerate(checked) if ps.broken]
    label = sc.model_name or Path(path).name
    details = [f"scenario {path}: {len(steps) - 1} step(s), replayed on the model"
               + (f" with variant {variant}" if variant else "")]
    bad = None
    if broken:
        bad, names = broken[0]
        verdict = f"{label}: {', '.join(names)} broken at step {bad} of the scenario"
        details += [f"{n}: {descriptions_for(model).get(n, '')}" for n in names]
        cls = "fail"
    else:
        verdict, cls = f"{label}: no safety property is broken along this scenario", "ok"
    return Report(label, verdict, cls, sc.config, steps, trace_title=f"{len(steps) - 1} step(s) from {path}",
                  violation_step=bad, details=details, coverage=trace_coverage(steps),
                  coverage_title="Coverage: the actions this scenario takes")


def _with_vacuity(rep: Report, strict: bool) -> Report:
    """A replayed file's page with the vacuity pass `run` makes on the same file: what its
    configuration can never use (before the replay) and each budgeted action its path never takes
    (after), as ``warning:`` lines on stderr and on the page; under --strict a path that passes
    with warnings is VACUOUS (exit 1), as `run --strict` says of it."""
    taken = Counter(st.action.name for st in rep.steps[1:] if st.action is not None)
    warnings = vacuity.static_warnings(rep.config) + vacuity.unused_budgets(rep.config, taken, what="replay")
    for w in warnings:
        click.echo(f"warning: {w.message}", err=True)
    if not warnings:
        return rep
    details = rep.details + [f"warning: {w.message}" for w in warnings]
    if rep.verdict_class == "fail":
        return dataclasses.replace(rep, details=details)
    verdict = (f"{rep.title}: VACUOUS - {len(warnings)} warning(s) under --strict" if strict else rep.verdict)
    return dataclasses.replace(rep, verdict=verdict, verdict_class="unknown", details=details)


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
@input_options(refuse={"--peer": "the TLA+ transcription has no page; `isrcheck check --peer MODULE` checks it"})
@click.option("--symmetry/--no-symmetry", default=None,
              help="Force broker-symmetry reduction on or off (default: the model's choice, as check).")
@click.option("--liveness/--no-liveness", "liveness", default=None,
              help="As check: also every liveness property that applies (default: the model's pinned ones).")
@click.option("-o", "--out", "out", required=True, metavar="FILE", help="The HTML file to write.")
@click.option("--max-states", type=click.IntRange(min=1), metavar="N", help="Stop the check after N states.")
@_user_errors
def report(inputs: Inputs, symmetry: bool | None, liveness: bool | None, out: str, max_states: int | None) -> None:
    """Check NAME (a model, or --config FILE) as `check` does and write one HTML page: the verdict
    (safety, liveness and the manifest's pins), every broken property with its message, the
    configuration, the first counterexample as a message sequence diagram and as the state at every
    step, and the coverage. Given a TRACE file (`traces export`) or a SCENARIO file, replay it on
    the model and report that path instead."""
    if is_file_target(inputs.name):
        if inputs.config_file or inputs.overrides or symmetry is not None or max_states is not None \
                or inputs.only or liveness is not None or inputs.keep_going:
            raise ConfigError("a TRACE carries its configuration (a SCENARIO too) and its path: --config, --set, "
                              "--symmetry, --liveness, --property, --keep-going and --max-states apply to a MODEL")
        path = str(inputs.name)
        rep = _trace_report(path, inputs.variant) if is_trace_file(path) else _scenario_report(path, inputs.variant)
        rep = _with_vacuity(rep, inputs.strict)
        # as `run` exits on the same file: 1 a broken property, or vacuity under --strict
        status = 1 if rep.verdict_class == "fail" or (inputs.strict and rep.verdict_class == "unknown") else 0
    else:
        rep, status = _model_report(inputs, symmetry, liveness, max_states)
    _write(out, render_report(rep))
    click.echo(f"wrote {out}: {rep.verdict}")
    exit_with(status)
