"""``isrcheck diff A B``: which verdicts and behaviours differ between two protocols of the same bounds
(the comparison itself is :mod:`isrcheck.analyses.diff`).
"""
from __future__ import annotations

import click
from rich.markup import escape

from isrcheck.commands.options import (config_opt, description_of, emit_json, exit_with, json_opt, set_opt,
                                       show_progress)
from isrcheck.inputs import manifest
from isrcheck.invariants.variants import debug_option
from isrcheck.render import json_form, tablefit, tables, terminal
from isrcheck.specs.protocol import GENERATION_NAMES


@click.command(short_help="Compare two protocol variants or configurations of the same bounds.")
@click.argument("a")
@click.argument("b")
@click.option("--model", "base_model", metavar="NAME", help="The bounds: a manifest model (default: replication with one crash).")
@config_opt
@set_opt
@click.option("--witnesses", type=click.IntRange(min=0), default=1, show_default=True,
              help="How many shortest witnesses to show for behaviours only one side has.")
@click.option("--max-states", type=click.IntRange(min=1), metavar="N", help="Stop each exploration after N states.")
@debug_option
@json_opt
def diff(a: str, b: str, base_model: str | None, config_file: str | None, overrides: tuple[str, ...],
         witnesses: int, max_states: int | None, as_json: bool) -> None:
    """Which properties change verdict between A and B, and which behaviours one reaches and the other not.

    A and B are each a protocol generation ({generations}), a variant MODULE:ATTR, a
    configuration file (.toml) or a manifest model. Generations and variants take their bounds
    from --model NAME or --config FILE (with --set overrides).

    Exit status: 0 every property has the same verdict on both sides; 1 some property changes
    verdict; 2 bad usage or input.
    """
    from isrcheck.analyses import diff as D

    if base_model or config_file:
        base = manifest.resolve(base_model, config_file, overrides).config
    else:
        base = manifest.resolve("hw-truncation-one-crash", None, overrides).config
    side_a, side_b = D.resolve_side(a, base), D.resolve_side(b, base)
    with terminal.progress_status(show_progress(as_json), f"diff {a} {b}"):
        result = D.diff(side_a, side_b, witnesses=witnesses, max_states=max_states)
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
