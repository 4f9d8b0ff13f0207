"""``isrcheck simulate``: seeded random walks through a model too large to exhaust.
"""
from __future__ import annotations

import dataclasses

import click
from rich.markup import escape

from isrcheck.commands import resources
from isrcheck.commands.options import (SEED, config_opt, description_of, emit_json, exit_with, json_opt, model_arg,
                                       print_all, protocol_for, set_opt)
from isrcheck.engine.simulate import STRATEGIES, simulate as run_simulation
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants.variants import variant_option
from isrcheck.render import json_form, tablefit, tables, terminal


@click.command(short_help="Random walks through a model (for large configurations).")
@model_arg
@config_opt
@set_opt
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
@variant_option
@json_opt
@resources.memory_option
def simulate(name: str | None, config_file: str | None, overrides: tuple[str, ...], seed: int, walks: int,
             max_depth: int, strategy: str, shrink: bool, variant: str | None, as_json: bool,
             max_memory: str | None = None) -> None:
    """Random walks through model NAME or --config FILE: finds bugs, proves nothing.

    The defaults find every weakness of the default gate (specs/models.toml) with seed 0."""
    ceiling = resources.memory_ceiling(max_memory)
    target = manifest.resolve(name, config_file, overrides)
    protocol, variant = protocol_for(target, variant)
    model = build_model(target.config, protocol=protocol, symmetry=target.symmetry,
                        properties=list(target.properties) if target.properties else None)
    if protocol is not None:
        target = dataclasses.replace(target, label=f"{target.label} [{variant}]")
    with resources.progress(as_json, f"simulating {target.label}", "walks left") as progress:
        result = run_simulation(model, seed=seed, walks=walks, max_depth=max_depth, progress=progress,
                                progress_every=resources.report_every(), max_memory=ceiling.limit, strategy=strategy, shrink=shrink)
    if as_json:
        emit_json(json_form.simulation_to_json(target.label, target.config, result, model.protocol.extension) | {"limit_hit": result.limit_hit})
    else:
        console = terminal.make_console()
        console.print(f"[bold]{escape(target.label)}[/bold]  {escape(tables.config_line(target.config))}  seed={seed}",
                      highlight=False)
        for v in result.violations:
            tablefit.print_wide(console, tables.violation_table(v, description_of(v), model.protocol.extension))
            console.print()
        print_all(console, tables.simulation_summary(target.label, result))
    if result.limit_hit == "memory":
        resources.report_limit(ceiling)
    exit_with(0 if result.outcome == "success" else 1)
