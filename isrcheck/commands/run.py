"""``isrcheck run``: a scenario (or trace) file replayed on the model, every state shown.
"""
from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

from isrcheck.commands import resources
from isrcheck.commands.options import descriptions_for, emit_json, exit_with, json_opt, verbose_opt
from isrcheck.conformance.traces import TraceError
from isrcheck.inputs.scenario import ScenarioError, broken_properties, load_scenario, replay
from isrcheck.inputs.tracefile import check_replay, is_trace_file, scenario_of_trace
from isrcheck.invariants import build_model
from isrcheck.invariants.variants import load_variant, variant_option
from isrcheck.render import changes, json_form, tablefit, tables, terminal


@click.command(short_help="Replay a scenario file and show its states.")
@click.argument("scenario", metavar="SCENARIO")
@variant_option
@json_opt
@verbose_opt
@resources.memory_option
@resources.steps_option
def run(scenario: str, variant: str | None, as_json: bool, verbose: bool = False, max_memory: str | None = None,
        max_steps: int | None = None) -> None:
    """Replay the steps of a SCENARIO file and show every state it passes through.

    SCENARIO may also be a trace file (.jsonl or .itf.json, from `isrcheck traces export`): its
    actions are replayed and every state must observe as the file stores it. With --variant the
    steps run on the variant. Exits 1 if a property breaks along the way, or if the memory
    ceiling stopped the replay (incomplete).
    """
    ceiling = resources.memory_ceiling(max_memory)
    cap = resources.step_cap(max_steps)
    saved = None
    if is_trace_file(scenario):
        sc, saved = scenario_of_trace(scenario)
    else:
        sc = load_scenario(scenario)
    if cap is not None and len(sc.actions) > cap:
        raise ScenarioError(f"{scenario}: {len(sc.actions):,} steps, more than the limit of {cap:,} (raise it with "
                            f"--max-steps N or {resources.STEPS_ENV}=N; 0: no limit)")
    protocol = load_variant(variant)(sc.config) if variant else None
    model = build_model(sc.config, protocol=protocol, symmetry=False)
    steps = replay(model, sc.actions, scenario, max_memory=ceiling.limit)
    if saved is not None:
        try:
            check_replay(saved, steps, protocol)
        except TraceError as e:
            raise ScenarioError(str(e)) from None
    broken = broken_properties(model, steps)
    described = descriptions_for(model)
    if len(steps) <= len(sc.actions):  # the memory ceiling stopped the replay: show no table
        _run_incomplete(scenario, sc, variant, as_json, len(steps) - 1, broken, described)
        resources.report_limit(ceiling)
        exit_with(1)
    if as_json:
        emit_json({
            "scenario": scenario,
            "description": sc.description,
            "model": sc.model_name,
            "variant": variant,
            "config": sc.config.to_dict(),
            "steps": json_form.trace_to_json(steps, model.protocol.extension),
            "broken": [{"step": i, "property": name} for i, name in broken],
        })
    else:
        console = terminal.make_console()
        title = f"Scenario {scenario}" + (f" [{variant}]" if variant else "") + (f": {sc.description}" if sc.description else "")
        tablefit.print_wide(console, tables.trace_table(steps, title=title,
                                         caption=f"{tables.config_line(sc.config)}\n"
                                                 "yellow: changed since the previous step; red: broker down",
                                         extension=model.protocol.extension))
        if verbose:
            console.print()
            changes.print_verbose(console, steps, extension=model.protocol.extension)
        if broken:
            for i, name in broken:
                console.print(f"[bold red]{name}[/bold red] broken at step {i}: {described.get(name, '')}",
                              highlight=False)
        else:
            console.print(f"[green]every property holds at each of the {len(steps)} states[/green]")
    exit_with(1 if broken else 0)


def _run_incomplete(scenario: str, sc: Any, variant: str | None, as_json: bool, replayed: int,
                    broken: list[tuple[int, str]], described: dict[str, str]) -> None:
    """What `run` says when the memory ceiling stopped the replay after ``replayed`` steps: the
    verdict and the properties broken so far, without the states (printing them needs more memory)."""
    if as_json:
        emit_json({"scenario": scenario, "description": sc.description, "model": sc.model_name, "variant": variant,
                    "config": sc.config.to_dict(), "outcome": "incomplete", "limit_hit": "memory",
                    "steps_replayed": replayed, "steps_total": len(sc.actions), "steps": [],
                    "broken": [{"step": i, "property": name} for i, name in broken]})
        return
    console = terminal.make_console()
    for i, name in broken:
        console.print(f"[bold red]{name}[/bold red] broken at step {i}: {described.get(name, '')}", highlight=False)
    console.print(f"Scenario {escape(scenario)}: [bold yellow]INCOMPLETE[/bold yellow] - stopped at the memory limit "
                  f"after {replayed:,} of {len(sc.actions):,} steps; the states are not shown", highlight=False)
