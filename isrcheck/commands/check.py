"""``isrcheck check``: every reachable state of one model (and its liveness properties under fairness).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import click
from rich.markup import escape

from isrcheck.analyses import vacuity
from isrcheck.commands import resources
from isrcheck.commands.verdict import Verdict, decide
from isrcheck.commands.options import (DESCRIPTIONS, config_opt, exit_with, emit_json, json_opt, model_arg, print_all,
                                       set_opt, show_progress, strict_opt, verbose_opt)
from isrcheck.engine.parallel import search
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants import liveness as live
from isrcheck.invariants.variants import load_variant, variant_option
from isrcheck.model.config import ConfigError
from isrcheck.model.symmetry import symmetry_allowed
from isrcheck.render import changes, json_form, tablefit, tables, terminal


def _warn_symmetry(cfg: Any, symmetry: bool | None) -> None:
    if symmetry and not symmetry_allowed(cfg):
        click.echo("warning: --symmetry forces reduction on a configuration where the model would not use it (no two brokers start out interchangeable)", err=True)


@click.command(short_help="Exhaustively check a model.")
@model_arg
@config_opt
@set_opt
@json_opt
@click.option("--max-depth", type=click.IntRange(min=0), metavar="N", help="Explore at most this many steps deep.")
@click.option("--max-states", type=click.IntRange(min=1), metavar="N", help="Stop after this many distinct states.")
@click.option("--symmetry/--no-symmetry", default=None,
              help="Force broker-symmetry reduction on or off (default: the model's choice, on where sound).")
@click.option("--keep-going", is_flag=True, help="Do not stop at the first violation; report one per property.")
@click.option("--property", "only", multiple=True, metavar="NAME",
              help="Check only this property (repeatable; the sometimes-properties always stay). A liveness "
                   "property's name checks it under fairness.")
@click.option("--liveness/--no-liveness", "liveness", default=None,
              help="Also check every liveness property that applies, under weak fairness of the healing actions "
                   "(default: those pinned for the model in specs/models.toml).")
@variant_option
@click.option("--workers", type=click.IntRange(min=1, max=64), default=1, show_default=True,
              help="Worker processes for the safety search (the result, traces included, is the same as with one).")
@click.option("--peer", metavar="MODULE",
              help="Check the transcription of the public TLA+ specification instead: truncate-to-hw, "
                   "kip-101, kip-279, kip-320-first-try or kip-320.")
@click.option("--replicas", type=int, default=None, metavar="N", help="With --peer: the number of replicas (default 2).")
@verbose_opt
@strict_opt
@resources.memory_option
def check(name: str | None, config_file: str | None, overrides: tuple[str, ...], as_json: bool,
          max_depth: int | None, max_states: int | None, symmetry: bool | None, keep_going: bool,
          only: tuple[str, ...], liveness: bool | None, variant: str | None, workers: int, peer: str | None = None,
          replicas: int | None = None, verbose: bool = False, strict: bool = False,
          max_memory: str | None = None) -> None:
    """Explore every reachable state of model NAME (see `isrcheck list`) or of --config FILE."""
    ceiling = resources.memory_ceiling(max_memory)  # a bad size: exit 2 before any work
    if peer is not None or replicas is not None:
        if peer is None or name is not None or config_file is not None or overrides or variant or liveness or verbose:
            click.echo("error: --peer MODULE takes no NAME, --config, --set, --variant, --liveness or --verbose; "
                       "--replicas needs --peer", err=True)
            exit_with(2)
        from isrcheck.commands.peer import check_peer

        exit_with(check_peer(peer, 2 if replicas is None else replicas, bool(symmetry), only, max_depth, max_states,
                         keep_going, workers, as_json, show_progress(as_json), ceiling))
    target = manifest.resolve(name, config_file, overrides)
    symmetry = target.symmetry if symmetry is None else symmetry
    _warn_symmetry(target.config, symmetry)
    safety_only = [n for n in only if n not in live.LIVENESS_NAMES]
    liveness_only = [n for n in only if n in live.LIVENESS_NAMES]
    if only:
        properties: list[str] | None = safety_only
    else:
        properties = list(target.properties) if target.properties else None
    wanted = _liveness_wanted(target, liveness, liveness_only, bool(only))
    protocol = load_variant(variant)(target.config) if variant else None
    model = build_model(target.config, protocol=protocol, symmetry=symmetry, properties=properties)
    live_props = live.applicable_liveness(target.config, wanted) if wanted != [] else []  # bad names fail early
    if protocol is not None:
        target = dataclasses.replace(target, label=f"{target.label} [{variant}]")
    warnings = vacuity.static_warnings(target.config)
    if not as_json:
        _print_warnings(warnings)
    with resources.progress(as_json, f"checking {target.label}") as progress:
        result = search(model, workers=workers, max_depth=max_depth, max_states=max_states,
                        stop_on_first=not keep_going, progress=progress, max_memory=ceiling.limit,
                        progress_every=resources.report_every())
        lres = None
        if live_props and result.limit_hit != "memory":
            if progress is not None:
                progress.set_label(f"liveness of {target.label}")
            lres = live.check(target.config, [p.name for p in live_props], protocol=protocol, max_states=max_states,
                              max_depth=max_depth, progress=progress)
    after = vacuity.unused_budgets(target.config, result.coverage) if result.outcome in ("success", "vacuous") else []
    if not as_json:
        _print_warnings(after)
    warnings += after
    pins_apply = (target.entry is not None and not overrides and not variant and not only and max_depth is None
                  and max_states is None and liveness is None)
    verdict = decide(result, lres, warnings, strict, target.entry if pins_apply else None)
    if as_json:
        emit_json(json_form.check_to_json(target.label, target.config, result, lres, verdict_json(verdict)))
    else:
        console = terminal.make_console()
        console.print(f"[bold]{escape(target.label)}[/bold]  {escape(tables.config_line(target.config))}"
                      f"  symmetry={'on' if model.symmetry else 'off'}", highlight=False)
        for v in result.violations:
            tablefit.print_wide(console, tables.violation_table(v, DESCRIPTIONS.get(v.property, "")))
            console.print()
            if verbose:
                changes.print_verbose(console, v.trace, v.loop)
        if lres is not None:
            for lv in lres.verdicts:
                if lv.violation is not None:
                    tablefit.print_wide(console, tables.violation_table(lv.violation, DESCRIPTIONS.get(lv.property, "")))
                    console.print()
                    if verbose:
                        changes.print_verbose(console, lv.violation.trace, lv.violation.loop)
        shown = dataclasses.replace(result, coverage=with_untaken(target.config, result.coverage))
        print_all(console, tables.check_summary(target.label, shown, safety_selected=not only or bool(safety_only)))
        if lres is not None:
            print_all(console, tables.liveness_summary(target.label, lres))
        print_all(console, tables.overall_lines(target.label, verdict_json(verdict), result, lres))
    if result.limit_hit == "memory":
        resources.report_limit(ceiling)
    exit_with(verdict.exit_status)


def _print_warnings(warnings: list[vacuity.VacuityWarning]) -> None:
    """Each vacuity warning as one ``warning:`` line on stderr (JSON carries them in ``warnings``)."""
    for w in warnings:
        click.echo(f"warning: {w.message}", err=True)


def with_untaken(cfg: Any, coverage: dict[str, int]) -> dict[str, int]:
    """The coverage with every budgeted action the configuration allows and the search never took
    at 0, so that a missing QuickRestart shows as a row of 0 rather than as no row at all."""
    out = dict(coverage)
    for name in vacuity.budgeted_actions(cfg):
        out.setdefault(name, 0)
    return out


def verdict_json(v: Verdict) -> dict[str, Any]:
    """The verdict's part of the JSON (and what the text headline reads): outcome, found, the
    warnings, the pins and the exit status."""
    return {"outcome": v.outcome, "found": v.found, "exit_status": v.exit_status, "strict": v.strict,
            "warnings": [w.to_json() for w in v.warnings], "pins": v.pins_json()}


def _liveness_wanted(target: Any, flag: bool | None, named: list[str], chosen: bool) -> list[str] | None:
    """Which liveness properties a check asks for: those named with --property, else every
    applicable one (--liveness, returned as None), none (--no-liveness, or --property naming only
    safety properties), or by default those the manifest pins for the model."""
    if named:
        if flag is False:
            raise ConfigError("--no-liveness contradicts --property " + ", ".join(named))
        return named
    if flag is True:
        return None
    if flag is False or target.entry is None or chosen:
        return []
    # the pins of the model, less those an override (--set) made meaningless
    return [e.property for e in target.entry.liveness if live.applies(e.property, target.config)]
