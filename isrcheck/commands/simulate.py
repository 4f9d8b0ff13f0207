"""``isrcheck simulate``: seeded random walks through a model too large to exhaust.
"""
from __future__ import annotations

import dataclasses

import click
from rich.markup import escape

from isrcheck.commands import resources
from isrcheck.analyses import vacuity
from isrcheck.commands.options import (SEED, Inputs, description_of, emit_json, exit_with, input_options, json_opt,
                                       print_all, protocol_for)
from isrcheck.engine.simulate import STRATEGIES, simulate as run_simulation
from isrcheck.inputs import targets
from isrcheck.invariants import build_model
from isrcheck.invariants.liveness import LIVENESS_NAMES
from isrcheck.model.config import ConfigError
from isrcheck.render import json_form, tablefit, tables, terminal


@click.command(short_help="Random walks through a model (for large configurations).")
@input_options(refuse={"--peer": "simulate walks the model; `isrcheck check --peer MODULE` checks the transcription"},
               explain={"--keep-going": "Accepted: simulate always reports every property its walks break."})
@click.option("--seed", type=SEED, default=0, metavar="N", show_default=True,
              help="Random seed (0 to 2^63-1); a seed always gives the same run.")
@click.option("--walks", type=click.IntRange(min=1), default=10_000, metavar="N", show_default=True,
              help="At most this many random walks.")
@click.option("--max-depth", type=click.IntRange(min=1), default=100, metavar="N", show_default=True,
              help="At most this many steps per walk.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="swarm", show_default=True,
              help="swarm: each walk weights the actions at random and prefers states not reached before; "
                   "uniform: every state-changing action equally likely.")
@click.option("--shrink/--no-shrink", default=True, show_default=True,
              help="After the first violation (found at walk i), walk max(i, N/10) more times, each shorter than "
                   "the shortest violation so far, and report the shortest.")
@json_opt
@resources.memory_option
def simulate(inputs: Inputs, seed: int, walks: int, max_depth: int, strategy: str, shrink: bool, as_json: bool,
             max_memory: str | None = None) -> None:
    """Random walks through NAME (a model, a scenario or trace file, or --config FILE): finds bugs,
    proves nothing. Every property the walks break is reported (--keep-going is how simulate
    always works); --strict fails on the configuration's vacuity warnings.

    The defaults find every weakness of the default gate (specs/models.toml) with seed 0."""
    ceiling = resources.memory_ceiling(max_memory)
    live_named = [n for n in inputs.only if n in LIVENESS_NAMES]
    if live_named:
        raise ConfigError(f"--property {live_named[0]}: a random walk cannot break a liveness property; "
                          f"`isrcheck check NAME --property {live_named[0]}` checks it")
    target = targets.resolve(inputs.name, inputs.config_file, inputs.overrides)
    protocol, variant = protocol_for(target, inputs.variant)  # --variant, else the manifest entry's own
    properties = list(inputs.only) if inputs.only else (list(target.properties) if target.properties else None)
    model = build_model(target.config, protocol=protocol, symmetry=target.symmetry, properties=properties)
    if protocol is not None:
        target = dataclasses.replace(target, label=f"{target.label} [{variant}]")
    warnings = vacuity.static_warnings(target.config)
    if not as_json:
        for w in warnings:
            click.echo(f"warning: {w.message}", err=True)
    with resources.progress(as_json, f"simulating {target.label}", "walks left", ceiling.limit) as progress:
        result = run_simulation(model, seed=seed, walks=walks, max_depth=max_depth, progress=progress,
                                progress_every=resources.report_every(), max_memory=ceiling.limit, strategy=strategy, shrink=shrink)
    # --strict: a part of the configuration that never takes effect fails the run, as in check
    vacuous = inputs.strict and bool(warnings) and result.outcome == "success"
    outcome = "vacuous" if vacuous else result.outcome
    if as_json:
        emit_json(json_form.simulation_to_json(target.label, target.config, result, model.protocol.extension)
                  | {"outcome": outcome, "limit_hit": result.limit_hit, "strict": inputs.strict,
                     "warnings": [w.to_json() for w in warnings]})
    else:
        console = terminal.make_console()
        console.print(f"[bold]{escape(target.label)}[/bold]  {escape(tables.config_line(target.config))}  seed={seed}",
                      highlight=False, width=tablefit.fit_width(console))
        for v in result.violations:
            tablefit.print_wide(console, tables.violation_table(v, description_of(v), model.protocol.extension))
            console.print()
        print_all(console, tables.simulation_summary(target.label, result))
        if vacuous:
            print_all(console, [f"{target.label}: VACUOUS - {len(warnings)} part(s) of the configuration never "
                                "take effect (--strict)"])
    if result.limit_hit == "memory":
        resources.report_limit(ceiling)
    exit_with(0 if outcome == "success" else 1)
