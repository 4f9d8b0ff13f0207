"""``isrcheck conform``, ``isrcheck validate`` and ``isrcheck traces``: the conformance commands.

    isrcheck traces export MODEL --out FILE [--format jsonl|itf] [--samples N --seed S --max-depth D]
    isrcheck traces export MODEL --out FILE --property NAME   (a safety counterexample or a liveness lasso)
    isrcheck traces show TRACE [--verbose] [--variant MODULE:ATTR]
    isrcheck conform TRACE... [--against trace|model|both] [--ignore PATH] [--junit FILE]
    isrcheck conform --model NAME [--model NAME ...] [--cover edges|states|depth --depth K] [--junit FILE]
    isrcheck validate LOG | DIR | FILE... [--merged FILE]
    isrcheck validate --record FILE (--model NAME | --config FILE) [--set K=V] [--seed S --steps N --anonymous]

Exit status: 0 the implementation conforms (every step matched, every event explained); 1 a
difference (or nothing could be checked: every trace skipped); 2 bad usage or input, one line
``error: ...`` on stderr. ``--json`` prints exactly one JSON object on stdout.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from isrcheck.commands.options import Inputs, emit_json, input_options, json_opt, protocol_for
from isrcheck.commands.usage import OneLineErrors, errors_as_lines
from isrcheck.conformance import report
from isrcheck.conformance.cover import GraphTooLarge, cover
from isrcheck.conformance.eventlog import EventLogError, load_log, record_simulator, validate_log, write_log
from isrcheck.conformance.export import ExportError, export
from isrcheck.conformance.replay import conform_trace
from isrcheck.conformance.selflog import validate_selflogs
from isrcheck.conformance.traces import TraceError, load_trace, trace_from_steps, write_trace
from isrcheck.engine.liveness import LivenessError
from isrcheck.engine.checker import Checker
from isrcheck.inputs import targets as target_forms
from isrcheck.invariants import build_model
from isrcheck.inputs.tracefile import replay_trace
from isrcheck.invariants.variants import load_variant, variant_option
from isrcheck.model.config import ConfigError
from isrcheck.render import changes, json_form, tablefit, tables, terminal
from isrcheck.specs.actions import VocabularyError, action_text
from isrcheck.specs.inputs import InputError, Kind, read_head
from isrcheck.specs.manifest import ManifestError

__all__ = ["conform", "traces", "validate"]

_ERRORS = (TraceError, EventLogError, VocabularyError, ConfigError, ManifestError, GraphTooLarge, ExportError,
           LivenessError, InputError)


#: a command's input errors: one line ``error: ...``, exit status 2
_user_errors = errors_as_lines(*_ERRORS)


class _Group(OneLineErrors):
    errors = _ERRORS


def _usage(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(2)


# ---------------------------------------------------------------------------- conform
@click.command(short_help="Replay traces (or a model's covering paths) on the implementation.")
@click.argument("trace_files", nargs=-1, metavar="[TRACE]...")
@input_options(target="--model",
               refuse={"--property": "conform compares every observation, not properties; `isrcheck check "
                                     "--property NAME` checks one",
                       "--strict": "conform gives no vacuity verdict; `isrcheck check --strict` fails on vacuity",
                       "--peer": "the implementation is compared with the model, not with the TLA+ transcription; "
                                 "`isrcheck check --peer MODULE` checks it"},
               explain={"--model": "Replay paths covering this manifest model's state graph instead (repeatable; "
                                   "a scenario or trace FILE's configuration too).",
                        "--config": "A configuration file instead of --model.",
                        "--keep-going": "With --model: replay every path even after a divergence."})
@click.option("--cover", "mode", type=click.Choice(["edges", "states", "depth"]), default="edges", show_default=True,
              help="Path set for --model: cover every edge, every state, or every path up to --depth.")
@click.option("--depth", type=click.IntRange(min=1, max=12), default=3, show_default=True, metavar="K",
              help="Path length for --cover depth.")
@click.option("--against", type=click.Choice(["trace", "model", "both"]), default="trace", show_default=True,
              help="Compare with the trace's stored observations, a replay of the model, or both.")
@click.option("--ignore", multiple=True, metavar="PATH",
              help="Leave a field out of the comparison, e.g. 'replicas[*].hw' (repeatable).")
@click.option("--save-failure", metavar="FILE", help="Write the path to the first divergence as a trace.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the implementation's simulator.")
@json_opt
@click.option("--junit", "junit_file", metavar="FILE",
              help="Also write a JUnit XML report to FILE: one testcase per trace (or per --model).")
@_user_errors
def conform(trace_files: tuple[str, ...], inputs: Inputs, mode: str, depth: int, against: str,
            ignore: tuple[str, ...], save_failure: str | None, seed: int, as_json: bool,
            junit_file: str | None = None) -> None:
    """Drive the implementation through every action of each TRACE (JSON lines or ITF, as written by
    `isrcheck traces export`) and compare its observation with the model's after every step; or,
    with --model NAME, through a set of paths covering that model's state graph.

    The model side takes the one input group (--model, --config, --set, --variant, --keep-going);
    what it cannot use (--property, --strict, --peer) is refused in one line."""
    models, config_file, overrides, variant = inputs.names, inputs.config_file, inputs.overrides, inputs.variant
    keep_going = inputs.keep_going
    if trace_files and overrides:
        _usage("--set changes the configuration of --model/--config: a TRACE carries its own")
    if trace_files and keep_going:
        _usage("--keep-going applies to --model: each TRACE is replayed to its end or its first divergence")
    if trace_files and (models or config_file):
        _usage("give TRACE files or --model/--config, not both")
    if not trace_files and not models and not config_file:
        _usage("give TRACE files to replay, or --model NAME to cover a model's state graph")
    if variant and trace_files and against == "trace":
        _usage("--variant changes the model side: with TRACE files give --against model or --against both")
    factory = load_variant(variant) if variant else None  # the implementation side stays
    console = terminal.make_console()
    if trace_files:
        traces = [load_trace(f) for f in trace_files]  # every file is validated before anything runs
        results = [conform_trace(t, against=against, ignore=ignore, seed=seed,
                                 protocol=factory(t.config) if factory else None) for t in traces]
        failed = [r for r in results if r.divergence is not None]
        if save_failure and failed:
            t = next(t for t, r in zip(traces, results) if r.divergence is not None)
            _save(t.config, failed[0].actions[: failed[0].divergence.index], save_failure, t.label,  # type: ignore[union-attr]
                  factory)
        if junit_file:
            extra = (f" --against {against}" if against != "trace" else "") + (f" --variant {variant}" if variant else "")
            _junit(junit_file, "traces", [(r.label, r.seconds, r.divergence, r.skipped, r.steps) for r in results],
                   [f"isrcheck conform {f}{extra}" for f in trace_files])
        if as_json:
            emit_json({"mode": "traces", "ok": not failed and any(r.ok for r in results),
                   "results": [report.conform_json(r) for r in results]})
        else:
            for r in results:
                if r.skipped:
                    console.print(f"[yellow]skipped[/yellow] {escape(r.label)}: {escape(r.skipped)}", highlight=False)
                elif r.divergence is None:
                    console.print(f"[green]conforms[/green] {escape(r.label)}: {r.steps} step(s), every observation "
                                  f"matches ({r.steps_per_second:,.0f} steps/s)", highlight=False)
                else:
                    console.print(f"[bold red]diverges[/bold red] {escape(r.label)} at step {r.divergence.index} "
                                  f"of {r.steps}: {escape(r.divergence.action_text)}", highlight=False)
                    tablefit.print_wide(console, report.divergence_table(r.divergence))
        raise click.exceptions.Exit(1 if failed or not any(r.ok for r in results) else 0)
    if models and config_file:
        _usage("give --model NAME or --config FILE, not both")
    targets = [target_forms.resolve(m, None, overrides) for m in models] if models else \
        [target_forms.resolve(None, config_file, overrides)]
    reports = []
    for tg in targets:
        with terminal.progress_status(not as_json and terminal.is_terminal(console.file), f"covering {tg.label}"):
            rep = cover(tg.config, mode, depth=depth, label=tg.label, seed=seed, keep_going=keep_going,
                        ignore=ignore, protocol=factory(tg.config) if factory else None)
        reports.append(rep)
        if save_failure and rep.divergence is not None:
            _save(tg.config, rep.failing_path, save_failure, tg.label, factory)
    if junit_file:
        _junit(junit_file, f"cover {mode}", [(r.label, r.build_seconds + r.seconds, r.divergence, r.skipped, None)
                                             for r in reports],
               [f"isrcheck conform {f'--model {m}' if models else f'--config {config_file}'} --cover {mode}"
                + "".join(f" --set {o}" for o in overrides) + (f" --variant {variant}" if variant else "")
                for m in (models or (None,))])
    if as_json:
        emit_json({"mode": "cover", "ok": all(r.ok for r in reports), "results": [report.cover_json(r) for r in reports]})
    else:
        tablefit.print_wide(console, report.cover_table(reports))
        for r in reports:
            if r.skipped:
                console.print(f"[yellow]skipped[/yellow] {escape(r.label)}: {escape(r.skipped)}", highlight=False)
            if r.divergence is not None:
                path = " ".join(action_text(n, a) for n, a in r.failing_path)
                console.print(f"[bold red]{escape(r.label)}[/bold red]: the implementation diverges at step "
                              f"{r.divergence.index} of the path {escape(path) or '(initial state)'}", highlight=False)
                tablefit.print_wide(console, report.divergence_table(r.divergence))
    raise click.exceptions.Exit(0 if all(r.ok for r in reports) else 1)


def _junit(path: str, what: str, rows: list[tuple[str, float, Any, str | None, int | None]],
           commands: list[str]) -> None:
    """The JUnit report of a conform run: ``rows`` are (label, seconds, divergence, skipped, steps),
    ``commands`` the command that reruns each row; a divergence's body is that command and the
    divergence table as `conform` prints it."""
    from isrcheck.render.junit import Case, write_junit

    cases = []
    for (label, seconds, div, skipped, steps), command in zip(rows, commands):
        failures = []
        body = ""
        if div is not None:
            of = f" of {steps}" if steps is not None else ""
            failures = [f"diverges at {div.summary()}".replace(f"at step {div.index} ", f"at step {div.index}{of} ", 1)]
            failures += [f"{d.path}: model {d.expected!r}, implementation {d.actual!r}" for d in div.differences]
            body = f"reproduce: {command}\n\n" + tables.plain_text(report.divergence_table(div))
        cases.append(Case(label, seconds, failures=failures, skipped=skipped, body=body))
    write_junit(path, f"isrcheck conform ({what})", "isrcheck.conform", cases)


def _save(config: Any, actions: list[tuple[str, tuple]], path: str, label: str, factory: Any = None) -> None:
    from isrcheck.invariants import build_model
    from isrcheck.model.actions import Action
    from isrcheck.engine.checker import replay_actions

    protocol = factory(config) if factory else None
    model = build_model(config, protocol=protocol, symmetry=False, properties=[])
    steps = replay_actions(model, [Action(n, tuple(a)) for n, a in actions])
    write_trace(trace_from_steps(steps, config, kind="regression", model=label, protocol=protocol,
                                 description=f"the path to the first divergence of {label}"), path)
    click.echo(f"the path to the first divergence is saved in {path}", err=True)


# ---------------------------------------------------------------------------- validate
@click.command(short_help="Check that an implementation's event log is a behaviour of the model.")
@click.argument("log_files", nargs=-1, metavar="LOG...")
@click.option("--record", "record_to", metavar="FILE",
              help="Instead: run the implementation's simulator and write its event log to FILE.")
@input_options(target="--model",
               refuse={"--variant": "the implementation's simulator runs the implementation, not a variant of the "
                                    "model; `isrcheck check --variant` checks one",
                       "--property": "validate explains every event, not properties; `isrcheck check --property "
                                     "NAME` checks one",
                       "--keep-going": "validate stops at the first event the model cannot explain",
                       "--strict": "validate gives no vacuity verdict; `isrcheck check --strict` fails on vacuity",
                       "--peer": "event logs are in the model's vocabulary, not the TLA+ transcription's"},
               explain={"--model": "With --record: the manifest model whose configuration the simulator runs "
                                   "(a scenario or trace FILE's configuration too).",
                        "--config": "With --record: a configuration file instead of --model.",
                        "--set": "With --record: override a key of that configuration."})
@click.option("--seed", type=int, default=0, show_default=True, help="With --record: the scheduler's seed.")
@click.option("--steps", type=click.IntRange(min=1), default=100, show_default=True, help="With --record: steps.")
@click.option("--anonymous", is_flag=True, help="With --record: leave the actions unnamed in the log.")
@click.option("--merged", "merged_to", metavar="FILE",
              help="With the implementation's own logs: also write the merged event log to FILE.")
@json_opt
@_user_errors
def validate(log_files: tuple[str, ...], record_to: str | None, inputs: Inputs, seed: int, steps: int,
             anonymous: bool, merged_to: str | None, as_json: bool) -> None:
    """Check that the run recorded in LOG (an isrcheck event log, JSON lines) is a behaviour of the
    model: every event must be explained by model steps, and the first that cannot is named.

    LOG may also be the implementation's own logs of one run (``isrcheck cluster up --event-log
    DIR``): the directory, or its files; they are merged by their clock and validated as one log.

    With --record, the target takes the one input group's forms (--model NAME or a scenario or trace
    FILE, --config FILE, --set); what validate cannot use is refused in one line."""
    if record_to:
        if log_files:
            _usage("give LOG to validate, or --record FILE, not both")
        if len(inputs.names) > 1:
            _usage("--record runs one configuration: give one --model NAME")
        if not inputs.names and not inputs.config_file:
            _usage("--record needs --model NAME or --config FILE")
        tg = target_forms.resolve(inputs.names[0] if inputs.names else None, inputs.config_file, inputs.overrides)
        log = record_simulator(tg.config, seed=seed, steps=steps, anonymous=anonymous)
        write_log(log, record_to)
        click.echo(f"wrote {len(log.events)} event(s) to {record_to}", err=True)
        return
    if not log_files:
        _usage("give an event LOG to validate")
    if inputs.names or inputs.config_file or inputs.overrides:
        _usage("--model, --config and --set go with --record: an event LOG states its own configuration")
    notes: list[str] = []
    selflog = not (len(log_files) == 1 and not _is_selflog(log_files[0]))
    if not selflog:
        log_file = log_files[0]
        log = load_log(log_file)
        res = validate_log(log)
    else:
        log_file = " ".join(log_files)
        merged, res = validate_selflogs(log_files)
        log, notes = merged.log, merged.notes
        if merged_to:
            write_log(log, merged_to)
        notes = [f"merged {merged.lines} line(s) of {merged.files} file(s); the first {merged.folded} "
                 f"(start-up) make the initial state, {len(log.events)} event(s) follow"] + notes
    if as_json:
        ev = res.failed_event
        emit_json({"log": log_file, "ok": res.ok, "events": res.events, "explained": res.explained,
               "seconds": round(res.seconds, 6), "events_per_second": round(res.events_per_second, 1),
               "max_candidates": res.max_candidates, "reason": res.reason, "details": res.details,
               "notes": notes,
               "failed_event": None if res.ok else {"seq": ev.seq if ev else 0, "line": ev.line if ev else 1,
                                                    **({"process": ev.actor} if selflog and ev else {})}})
    else:
        console = terminal.make_console()
        for n in notes:
            console.print(f"note: {escape(n)}", highlight=False)
        if res.ok:
            console.print(f"[green]valid[/green] {escape(log_file)}: {escape(res.summary())} "
                          f"({res.events_per_second:,.0f} events/s; at most {res.max_candidates} candidate "
                          f"state(s) at once)", highlight=False)
        else:
            where = f" (line {res.failed_event.line})" if res.failed_event is not None and res.failed_event.line else ""
            console.print(f"[bold red]not a model behaviour[/bold red] {escape(log_file)}{where}: "
                          f"{escape(res.reason)}", highlight=False)
            for d in res.details:
                console.print(f"  {escape(d)}", highlight=False)
    raise click.exceptions.Exit(0 if res.ok else 1)


def _is_selflog(path: str) -> bool:
    """A directory, or a file whose header is the implementation's own log format (not an event log)."""
    p = Path(path)
    if p.is_dir():
        return True
    try:  # never blocks: a FIFO or device is refused here (and named by the reader that follows)
        head = read_head(p, Kind.EVENT_LOG, 1 << 20).split(b"\n", 1)[0]
    except InputError:
        return False
    return b'"isrcheck-selflog"' in head


# ---------------------------------------------------------------------------- traces
@click.group(cls=_Group, short_help="Write and inspect trace files (JSON lines, ITF).")
def traces() -> None:
    """Trace files: the checker's counterexamples and sample paths, as JSON lines or ITF JSON."""


@traces.command("export", short_help="Write a model's counterexample (or sample paths) to a file.")
@input_options(refuse={"--peer": "the TLA+ transcription's traces are not in the model's vocabulary; "
                                 "`isrcheck check --peer MODULE` prints them",
                       "--strict": "traces export writes paths and gives no verdict; `isrcheck check --strict` "
                                   "fails on vacuity"},
               explain={"--keep-going": "Write one file per broken property (FILE-PROPERTY.jsonl)."})
@click.option("--out", "out", required=True, metavar="FILE", help="Where to write (samples: FILE-1, FILE-2, ...).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "itf"]), default=None,
              help="Default: itf for names ending in .itf.json, otherwise jsonl.")
@click.option("--samples", type=click.IntRange(min=1, max=10_000), default=1, show_default=True,
              help="For a model where every property holds: how many random paths to write.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random paths.")
@click.option("--max-depth", type=click.IntRange(min=1, max=10_000), default=30, show_default=True,
              help="Longest random path, in actions.")
@_user_errors
def export_cmd(inputs: Inputs, out: str, fmt: str | None, samples: int, seed: int, max_depth: int) -> None:
    """Write NAME's shortest counterexample to --out (NAME: a model, a scenario or trace file, or
    --config FILE); when every property holds, write --samples seeded random paths instead. With
    --property NAME, write NAME's counterexample (for a liveness property a lasso: a path whose end
    repeats forever); exit 2 when NAME holds. --keep-going writes one file per broken property."""
    if len(inputs.only) > 1:
        raise ConfigError("traces export writes one property's trace: give one --property NAME "
                          "(or --keep-going for every broken property)")
    tg = target_forms.resolve(inputs.name, inputs.config_file, inputs.overrides)
    protocol, variant = protocol_for(tg, inputs.variant)  # --variant, else the manifest entry's own
    props: list[str | None] = list(inputs.only) or [None]
    if inputs.keep_going and not inputs.only:
        model = build_model(tg.config, protocol=protocol, symmetry=tg.symmetry,
                            properties=list(tg.properties) if tg.properties else None)
        found = Checker(model, stop_on_first=False).run()
        props = list(dict.fromkeys(v.property for v in found.violations)) or [None]
    for i, prop in enumerate(props):
        path = out if len(props) == 1 else _numbered(out, prop or str(i))
        _export_one(tg, path, fmt, samples, seed, max_depth, prop, protocol)


def _numbered(out: str, tag: str) -> str:
    """``trace.jsonl`` -> ``trace-NoCommittedWriteLost.jsonl`` (one file per property)."""
    for suffix in (".itf.json", ".jsonl", ".json"):
        if out.endswith(suffix):
            return f"{out[:-len(suffix)]}-{tag}{suffix}"
    return f"{out}-{tag}"


def _export_one(tg: Any, out: str, fmt: str | None, samples: int, seed: int, max_depth: int, prop: str | None,
                protocol: Any) -> None:
    res = export(tg, out, fmt, n=samples, seed=seed, max_depth=max_depth, property=prop, protocol=protocol)
    for f, t in zip(res.files, res.traces):
        if res.kind == "lasso":
            what = f"{t.prop} lasso, {_loop_text(t)}"
        elif res.kind == "counterexample":
            what = f"{t.prop} counterexample"
        else:
            what = "sample path"
        click.echo(f"wrote {f}: {what}, {len(t.steps) - 1} step(s)")


def _loop_text(t: Any) -> str:
    """How a lasso trace goes on forever: ``loop back to step N`` or ``stutters at the last state``."""
    if t.stutters:
        return "stutters at the last state"
    return f"loop back to step {t.loop}" + (" (the initial state)" if t.loop == 0 else "")


@traces.command("show", short_help="Validate a trace file and show it as check shows a counterexample.")
@click.argument("path", metavar="TRACE")
@json_opt
@click.option("--verbose", "-v", is_flag=True,
              help="Below the table, every field of the state: the initial state in full, then every field each "
                   "step changed.")
@variant_option
@_user_errors
def show_cmd(path: str, as_json: bool, verbose: bool = False, variant: str | None = None) -> None:
    """Validate TRACE (its schema, actions and observations), replay its actions on the model of its
    configuration (or on --variant) and show it as `isrcheck check` shows a counterexample: its header,
    then the trace table (and with --verbose every field of every state). Every replayed state must
    observe as the file stores it; otherwise exit 2 naming the step and field."""
    t = load_trace(path)
    protocol = load_variant(variant)(t.config) if variant else None
    steps = replay_trace(t, protocol).steps
    if as_json:
        emit_json({**t.header(), "actions": [action_text(n, a) for n, a in t.actions],
               "trace": json_form.trace_to_json(steps, protocol.extension if protocol is not None else None)})
        return
    console = terminal.make_console()
    click.echo(f"{path}: {t.kind} of {t.model or 'a configuration'}, generation {t.generation}, "
               f"{len(t.steps) - 1} step(s)" + (f", breaks {t.prop}" if t.prop else "")
               + (f", a lasso: {_loop_text(t)}" if t.loop is not None else ""))
    caption = tables.config_line(t.config)
    if t.description:
        caption = f"{t.description}\n{caption}"
    caption += "\nyellow: changed since the previous step; red: broker down"
    if t.loop is not None:
        caption += f"; {tables.LOOP_MARK}: where the loop starts"
    title = f"Trace {path}" + (f" [{variant}]" if variant else "")
    tablefit.print_wide(console, tables.trace_table(steps, title=title, caption=caption, loop=t.loop,
                                                   extension=protocol.extension if protocol else None))
    if verbose:
        console.print()
        changes.print_verbose(console, steps, t.loop, protocol.extension if protocol is not None else None)
