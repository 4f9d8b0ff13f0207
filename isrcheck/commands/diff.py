"""``isrcheck diff A B``: which verdicts and behaviours differ between two protocols of the same bounds
(the comparison itself is :mod:`isrcheck.analyses.diff`).
"""
from __future__ import annotations

import click
from rich.markup import escape

from isrcheck.commands.options import (Inputs, description_of, emit_json, exit_with, input_options, json_opt,
                                       show_progress)
from isrcheck.inputs import targets
from isrcheck.invariants.liveness import LIVENESS_NAMES
from isrcheck.invariants.variants import debug_option
from isrcheck.model.config import ConfigError
from isrcheck.render import json_form, tablefit, tables, terminal
from isrcheck.specs.protocol import GENERATION_NAMES


@click.command(short_help="Compare two protocol variants or configurations of the same bounds.")
@click.argument("a")
@click.argument("b")
@input_options(target="--model",
               refuse={"--variant": "A and B are the protocols diff compares; give the variant MODULE:ATTR as A or B",
                       "--strict": "diff compares two protocols and gives no vacuity verdict; `isrcheck check "
                                   "--strict` fails on vacuity",
                       "--peer": "diff compares protocols of the model; `isrcheck check --peer MODULE` checks the "
                                 "TLA+ transcription"},
               explain={"--model": "The bounds: a manifest model, or a scenario or trace FILE's configuration "
                                   "(default: replication with one crash).",
                        "--config": "The bounds: a configuration file (TOML) instead of --model.",
                        "--property": "Compare only this safety property's verdicts (repeatable).",
                        "--keep-going": "Accepted: diff always explores both sides past every violation."})
@click.option("--witnesses", type=click.IntRange(min=0), default=1, show_default=True,
              help="How many shortest witnesses to show for behaviours only one side has.")
@click.option("--max-states", type=click.IntRange(min=1), metavar="N", help="Stop each exploration after N states.")
@debug_option  # a variant given as A or B may raise: --debug prints the path to where it did
@json_opt
def diff(a: str, b: str, inputs: Inputs, witnesses: int, max_states: int | None, as_json: bool) -> None:
    """Which properties change verdict between A and B, and which behaviours one reaches and the other not.

    A and B are each a protocol generation ({generations}), a variant MODULE:ATTR, a
    configuration file (.toml) or a manifest model. Generations and variants take their bounds
    from --model NAME or --config FILE (with --set overrides).

    Exit status: 0 every property has the same verdict on both sides; 1 some property changes
    verdict; 2 bad usage or input.
    """
    from isrcheck.analyses import diff as D

    live = [n for n in inputs.only if n in LIVENESS_NAMES]
    if live:
        raise ConfigError(f"--property {live[0]}: diff compares safety verdicts; `isrcheck check NAME --variant "
                          f"MODULE:ATTR --property {live[0]}` checks a liveness property on one side")
    name = inputs.name
    if not name and not inputs.config_file:
        name = "hw-truncation-one-crash"
    base = targets.resolve(name, inputs.config_file, inputs.overrides).config
    side_a, side_b = D.resolve_side(a, base), D.resolve_side(b, base)
    if inputs.only:
        from isrcheck.invariants import build_model

        build_model(base, properties=list(inputs.only))  # an unknown property name: one line, before the search
    with terminal.progress_status(show_progress(as_json), f"diff {a} {b}"):
        result = D.diff(side_a, side_b, witnesses=witnesses, max_states=max_states)
    if inputs.only:  # the verdicts compared are those of the named properties
        result.changes = [c for c in result.changes if c.property in inputs.only]
    incomplete = [e.side.label for e in (result.a, result.b) if e.result.limit_hit]
    if as_json:
        emit_json({
            "a": a, "b": b, "config": result.a.side.config.to_dict(),
            "outcomes": {a: result.a.result.outcome, b: result.b.result.outcome},
            "distinct_states": {a: result.a.result.distinct_states, b: result.b.result.distinct_states},
            "verdict_changes": [
                {"property": c.property, "broken_in": c.broken_in, "violation": json_form.violation_to_json(c.violation)}
                for c in result.changes
            ],
            "only_in": {
                a: {"count": result.count_only_a, "witnesses": [json_form.trace_to_json(t) for _, t in result.only_a]},
                b: {"count": result.count_only_b, "witnesses": [json_form.trace_to_json(t) for _, t in result.only_b]},
            },
            "incomplete": incomplete,
        })
    else:
        console = terminal.make_console()
        shared = tables.config_line(side_a.config, shared_with=side_b.config)
        console.print(f"[bold]diff[/bold] {escape(a)} vs {escape(b)}  {escape(shared)}", highlight=False)
        console.print(escape(f"{a}: {result.a.result.outcome}, {result.a.result.distinct_states:,} states;  "
                             f"{b}: {result.b.result.outcome}, {result.b.result.distinct_states:,} states"),
                      highlight=False)
        if not result.changes:
            console.print("every property has the same verdict on both sides")
        for c in result.changes:
            other = b if c.broken_in == a else a
            console.print(f"[bold red]{c.property}[/bold red] is broken in {escape(c.broken_in)} "
                          f"(shortest counterexample: {c.violation.length} steps) and holds in {other}")
            tablefit.print_wide(console, tables.violation_table(c.violation, description_of(c.violation)))
        for label, count, shown in ((a, result.count_only_a, result.only_a), (b, result.count_only_b, result.only_b)):
            console.print(f"[bold]{count:,}[/bold] behaviours only {escape(label)} reaches", highlight=False)
            for depth, trace in shown:
                tablefit.print_wide(console, tables.trace_table(trace, title=f"only in {label}: shortest witness ({depth} steps)"))
        if incomplete:
            console.print(f"[yellow]incomplete:[/yellow] the state limit stopped {', '.join(incomplete)}; "
                          "differences may be missing")
    exit_with(1 if result.changes else 0)


diff.help = (diff.help or "").replace("{generations}", ", ".join(GENERATION_NAMES))  # from specs/protocol.toml
