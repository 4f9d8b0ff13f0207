"""``isrcheck run``: a scenario (or trace) file replayed on the model, every state shown.

Its inputs are the one input group (:func:`isrcheck.commands.options.input_options`), as
``check``'s: the FILE, ``--set`` (applied to the file's configuration), ``--variant``,
``--property`` (only these properties are watched along the replay), ``--keep-going`` (accepted:
a replay always goes to its end and names every broken property) and ``--strict``. A manifest
NAME, ``--config`` and ``--peer`` carry no steps to replay and are refused in one line.

The vacuity pass runs as in ``check``: before the replay, every part of the configuration that
can never take effect; after it, every budgeted action the replay never took (a scenario that
budgets a crash and never crashes). Both are ``warning:`` lines (and ``warnings`` in JSON);
``--strict`` makes them fail the run (``outcome: vacuous``, exit 1).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import click
from rich.markup import escape

from isrcheck.analyses import vacuity
from isrcheck.commands import resources
from isrcheck.commands.options import Inputs, descriptions_for, emit_json, exit_with, input_options, json_opt, verbose_opt
from isrcheck.conformance.traces import TraceError
from isrcheck.inputs import targets
from isrcheck.inputs.scenario import ScenarioError, broken_properties, load_scenario, replay
from isrcheck.inputs.tracefile import check_replay, is_trace_file, scenario_of_trace
from isrcheck.invariants import build_model
from isrcheck.invariants.liveness import LIVENESS_NAMES
from isrcheck.invariants.variants import load_variant
from isrcheck.model.config import ConfigError
from isrcheck.render import changes, json_form, tablefit, tables, terminal

_NO_STEPS = "run replays the steps of a scenario or trace FILE, which carries its configuration"


@click.command(short_help="Replay a scenario file and show its states.")
@input_options(refuse={"--config": f"{_NO_STEPS}; `isrcheck check --config FILE` checks a configuration",
                       "--peer": f"{_NO_STEPS}; `isrcheck check --peer MODULE` checks the TLA+ transcription"},
               explain={"--keep-going": "Accepted: a replay always goes to its end and names every broken property.",
                        "--property": "Watch only this property along the replay (repeatable)."})
@json_opt
@verbose_opt
@resources.memory_option
@resources.steps_option
def run(inputs: Inputs, as_json: bool, verbose: bool = False, max_memory: str | None = None,
        max_steps: int | None = None) -> None:
    """Replay the steps of a SCENARIO file and show every state it passes through.

    SCENARIO may also be a trace file (.jsonl or .itf.json, from `isrcheck traces export`): its
    actions are replayed and every state must observe as the file stores it. With --variant the
    steps run on the variant; --set changes the file's configuration. Exits 1 if a property
    breaks along the way, if the memory ceiling stopped the replay (incomplete), or with --strict
    if a part of the configuration never takes effect (the warning: lines).
    """
    ceiling = resources.memory_ceiling(max_memory)
    cap = resources.step_cap(max_steps)
    scenario = inputs.name
    if scenario is None:
        raise ConfigError("give a scenario or trace FILE to replay (`isrcheck run examples/reassignment-seed.toml`)")
    if not targets.is_file_target(scenario):
        raise ConfigError(f"{scenario}: {_NO_STEPS}, not a model NAME; `isrcheck check {scenario}` checks the model")
    live_named = [n for n in inputs.only if n in LIVENESS_NAMES]
    if live_named:
        raise ConfigError(f"--property {live_named[0]}: a replay is one finite path and cannot break a liveness "
                          f"property; `isrcheck check NAME --property {live_named[0]}` checks it")
    saved = None
    if is_trace_file(scenario):
        sc, saved = scenario_of_trace(scenario)
    else:
        sc = load_scenario(scenario)
    config = targets.with_overrides(sc.config, inputs.overrides, scenario)
    if cap is not None and len(sc.actions) > cap:
        raise ScenarioError(f"{scenario}: {len(sc.actions):,} steps, more than the limit of {cap:,} (raise it with "
                            f"--max-steps N or {resources.STEPS_ENV}=N; 0: no limit)")
    variant = inputs.variant
    protocol = load_variant(variant)(config) if variant else None
    model = build_model(config, protocol=protocol, symmetry=False, properties=list(inputs.only) or None)
    warnings = vacuity.static_warnings(config)
    if not as_json:
        for w in warnings:
            click.echo(f"warning: {w.message}", err=True)
    steps = replay(model, sc.actions, scenario, max_memory=ceiling.limit)
    if saved is not None:
        try:
            check_replay(saved, steps, protocol)
        except TraceError as e:
            raise ScenarioError(str(e)) from None
    broken = broken_properties(model, steps)
    described = descriptions_for(model)
    if len(steps) <= len(sc.actions):  # the memory ceiling stopped the replay: show no table
        _run_incomplete(scenario, sc, config, variant, as_json, len(steps) - 1, broken, described, inputs.strict,
                        warnings)
        resources.report_limit(ceiling)
        exit_with(1)
    taken = Counter(st.action.name for st in steps[1:] if st.action is not None)
    after = vacuity.unused_budgets(config, taken, what="replay")
    if not as_json:
        for w in after:
            click.echo(f"warning: {w.message}", err=True)
    warnings += after
    outcome = "safety_failure" if broken else "vacuous" if inputs.strict and warnings else "success"
    if as_json:
        emit_json({
            "scenario": scenario,
            "description": sc.description,
            "model": sc.model_name,
            "variant": variant,
            "config": config.to_dict(),
            "outcome": outcome,
            "strict": inputs.strict,
            "warnings": [w.to_json() for w in warnings],
            "steps": json_form.trace_to_json(steps, model.protocol.extension),
            "broken": [{"step": i, "property": name} for i, name in broken],
        })
    else:
        console = terminal.make_console()
        title = f"Scenario {scenario}" + (f" [{variant}]" if variant else "") + (f": {sc.description}" if sc.description else "")
        tablefit.print_wide(console, tables.trace_table(steps, title=title,
                                         caption=f"{tables.config_line(config)}\n"
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
        if outcome == "vacuous":
            console.print(f"Scenario {escape(scenario)}: [bold yellow]VACUOUS[/bold yellow] - {len(warnings)} part(s) "
                          "of the configuration never take effect (--strict)", highlight=False)
    exit_with(0 if outcome == "success" else 1)


def _run_incomplete(scenario: str, sc: Any, config: Any, variant: str | None, as_json: bool, replayed: int,
                    broken: list[tuple[int, str]], described: dict[str, str], strict: bool,
                    warnings: list[vacuity.VacuityWarning]) -> None:
    """What `run` says when the memory ceiling stopped the replay after ``replayed`` steps: the
    verdict and the properties broken so far, without the states (printing them needs more memory)."""
    if as_json:
        emit_json({"scenario": scenario, "description": sc.description, "model": sc.model_name, "variant": variant,
                   "config": config.to_dict(), "outcome": "incomplete", "strict": strict,
                   "warnings": [w.to_json() for w in warnings], "limit_hit": "memory",
                   "steps_replayed": replayed, "steps_total": len(sc.actions), "steps": [],
                   "broken": [{"step": i, "property": name} for i, name in broken]})
        return
    console = terminal.make_console()
    for i, name in broken:
        console.print(f"[bold red]{name}[/bold red] broken at step {i}: {described.get(name, '')}", highlight=False)
    console.print(f"Scenario {escape(scenario)}: [bold yellow]INCOMPLETE[/bold yellow] - stopped at the memory limit "
                  f"after {replayed:,} of {len(sc.actions):,} steps; the states are not shown", highlight=False)
