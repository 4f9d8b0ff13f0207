"""The ``isrcheck`` command line: a thin shell over the manifest, checker, simulator and renderers.

Exit status: 0 when every property holds, 1 when a property is broken or the result proves
nothing (vacuous, incomplete), 2 on bad usage or input. Input errors are one line on stderr,
``error: ...``, never a traceback. With ``--json`` exactly one JSON object goes to stdout.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, NoReturn

import click
from rich.markup import escape

from isrcheck import __version__, manifest, render, resources
from isrcheck import native as _native
from isrcheck.invariants import build_model
from isrcheck.invariants import liveness as live
from isrcheck.engine.liveness import LivenessError
from isrcheck.engine.checker import Checker
from isrcheck.engine.parallel import search
from isrcheck.model.config import ConfigError
from isrcheck.specs.inputs import InputError
from isrcheck.engine.simulate import STRATEGIES, simulate as run_simulation
from isrcheck.invariants.variants import (VariantError, VariantFailure, debug_option, debug_requested, load_variant,
                               report_failure, variant_option)
from isrcheck.model.symmetry import symmetry_allowed
from isrcheck.conformance.traces import TraceError
from isrcheck.scenario import ScenarioError, broken_properties, load_scenario, replay
from isrcheck.tracefile import check_replay, is_trace_file, scenario_of_trace
from isrcheck.specs.actions import ActionSyntaxError
from isrcheck.specs.manifest import ManifestError, select
from isrcheck.specs.properties import descriptions
from isrcheck.specs.protocol import GENERATION_NAMES
from isrcheck.usage import usage_line

USER_ERRORS = (ConfigError, ManifestError, ScenarioError, ActionSyntaxError, VariantError, LivenessError, InputError)

_DESCRIPTIONS = descriptions()  # every property's, safety and liveness (specs/properties.toml)


class _Main(click.Group):
    """Turns the project's input errors and click's usage errors (of every command, in any group)
    into one line ``error: ...`` and exit status 2 (isrcheck/usage.py)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:  # the top level's own options, or no command at all
            click.echo(usage_line(e), err=True)
            ctx.exit(2)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # a subcommand's (or its group's) options and arguments
            click.echo(usage_line(e), err=True)
            ctx.exit(2)
        except VariantFailure as e:  # the variant's code raised while the model ran: not a violation
            report_failure(e, debug_requested(ctx))
            ctx.exit(2)
        except USER_ERRORS as e:
            click.echo(f"error: {' '.join(str(e).split())}", err=True)
            ctx.exit(2)


def _emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2))


def _show_progress(as_json: bool) -> bool:
    return not as_json and render.is_terminal(sys.stderr)


def _exit(code: int) -> NoReturn:
    raise click.exceptions.Exit(code)


def _print(console: Any, items: Sequence[Any]) -> None:
    for item in items:
        console.print(item)


def _warn_symmetry(cfg: Any, symmetry: bool | None) -> None:
    if symmetry and not symmetry_allowed(cfg):
        click.echo("warning: --symmetry forces reduction on a configuration where the model would not use it (no two brokers start out interchangeable)", err=True)


_model_arg = click.argument("name", required=False, metavar="[NAME]")
_config_opt = click.option("--config", "config_file", metavar="FILE",
                           help="A configuration file (TOML) instead of a model NAME.")
_set_opt = click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                        help="Override a configuration key, e.g. --set faults.crashes=1 (repeatable).")
_json_opt = click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
_verbose_opt = click.option("--verbose", "-v", is_flag=True,
                            help="Below each trace table, every field of the state: the initial state in full, "
                                 "then every field each step changed (queues, remote LEOs, controller states, ...).")


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="isrcheck",
                      message="%(prog)s %(version)s, " + _native.describe())
@debug_option
def main() -> None:
    """Model checker for Kafka's ZooKeeper-era controller and ISR replication protocol.

    Exit status: 0 every property holds; 1 a property is broken, or the run proved nothing
    (vacuous or incomplete); 2 bad usage or input, or a --variant's code raised (--debug: also
    the action path to where it raised).
    """


# ---------------------------------------------------------------------------- check
@main.command(short_help="Exhaustively check a model.")
@_model_arg
@_config_opt
@_set_opt
@_json_opt
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
@_verbose_opt
@resources.memory_option
def check(name: str | None, config_file: str | None, overrides: tuple[str, ...], as_json: bool,
          max_depth: int | None, max_states: int | None, symmetry: bool | None, keep_going: bool,
          only: tuple[str, ...], liveness: bool | None, variant: str | None, workers: int, peer: str | None = None,
          replicas: int | None = None, verbose: bool = False, max_memory: str | None = None) -> None:
    """Explore every reachable state of model NAME (see `isrcheck list`) or of --config FILE."""
    ceiling = resources.memory_ceiling(max_memory)  # a bad size: exit 2 before any work
    if peer is not None or replicas is not None:
        if peer is None or name is not None or config_file is not None or overrides or variant or liveness or verbose:
            click.echo("error: --peer MODULE takes no NAME, --config, --set, --variant, --liveness or --verbose; "
                       "--replicas needs --peer", err=True)
            _exit(2)
        from isrcheck.cli_peer import check_peer

        _exit(check_peer(peer, 2 if replicas is None else replicas, bool(symmetry), only, max_depth, max_states,
                         keep_going, workers, as_json, _show_progress(as_json), ceiling))
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
    if as_json:
        out = render.result_to_json(target.label, target.config, result)
        if lres is not None:
            out["liveness"] = render.liveness_to_json(lres)
        _emit_json(out)
    else:
        console = render.make_console()
        console.print(f"[bold]{escape(target.label)}[/bold]  {escape(render.config_line(target.config))}"
                      f"  symmetry={'on' if model.symmetry else 'off'}", highlight=False)
        for v in result.violations:
            render.print_wide(console, render.violation_table(v, _DESCRIPTIONS.get(v.property, "")))
            console.print()
            if verbose:
                render.print_verbose(console, v.trace, v.loop)
        if lres is not None:
            for lv in lres.verdicts:
                if lv.violation is not None:
                    render.print_wide(console, render.violation_table(lv.violation, _DESCRIPTIONS.get(lv.property, "")))
                    console.print()
                    if verbose:
                        render.print_verbose(console, lv.violation.trace, lv.violation.loop)
        _print(console, render.check_summary(target.label, result, safety_selected=not only or bool(safety_only)))
        if lres is not None:
            _print(console, render.liveness_summary(target.label, lres))
    if result.limit_hit == "memory":
        resources.report_limit(ceiling)
    live_ok = lres is None or all(v.holds for v in lres.verdicts)
    _exit(0 if result.outcome == "success" and live_ok else 1)


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


# ---------------------------------------------------------------------------- simulate
@main.command(short_help="Random walks through a model (for large configurations).")
@_model_arg
@_config_opt
@_set_opt
@click.option("--seed", type=int, default=0, metavar="N", show_default=True, help="Random seed; a seed always gives the same run.")
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
@_json_opt
@resources.memory_option
def simulate(name: str | None, config_file: str | None, overrides: tuple[str, ...], seed: int, walks: int,
             max_depth: int, strategy: str, shrink: bool, variant: str | None, as_json: bool,
             max_memory: str | None = None) -> None:
    """Random walks through model NAME or --config FILE: finds bugs, proves nothing.

    The defaults find every weakness of the default gate (specs/models.toml) with seed 0."""
    ceiling = resources.memory_ceiling(max_memory)
    target = manifest.resolve(name, config_file, overrides)
    protocol = load_variant(variant)(target.config) if variant else None
    model = build_model(target.config, protocol=protocol, symmetry=target.symmetry,
                        properties=list(target.properties) if target.properties else None)
    if protocol is not None:
        target = dataclasses.replace(target, label=f"{target.label} [{variant}]")
    with resources.progress(as_json, f"simulating {target.label}", "walks left") as progress:
        result = run_simulation(model, seed=seed, walks=walks, max_depth=max_depth, progress=progress,
                                progress_every=resources.report_every(), max_memory=ceiling.limit, strategy=strategy, shrink=shrink)
    if as_json:
        _emit_json(render.simulation_to_json(target.label, target.config, result) | {"limit_hit": result.limit_hit})
    else:
        console = render.make_console()
        console.print(f"[bold]{escape(target.label)}[/bold]  {escape(render.config_line(target.config))}  seed={seed}",
                      highlight=False)
        for v in result.violations:
            render.print_wide(console, render.violation_table(v, _DESCRIPTIONS.get(v.property, "")))
            console.print()
        _print(console, render.simulation_summary(target.label, result))
    if result.limit_hit == "memory":
        resources.report_limit(ceiling)
    _exit(0 if result.outcome == "success" else 1)


# ---------------------------------------------------------------------------- run
@main.command(short_help="Replay a scenario file and show its states.")
@click.argument("scenario", metavar="SCENARIO")
@variant_option
@_json_opt
@_verbose_opt
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
            check_replay(saved, steps)
        except TraceError as e:
            raise ScenarioError(str(e)) from None
    broken = broken_properties(model, steps)
    if len(steps) <= len(sc.actions):  # the memory ceiling stopped the replay: show no table
        _run_incomplete(scenario, sc, variant, as_json, len(steps) - 1, broken)
        resources.report_limit(ceiling)
        _exit(1)
    if as_json:
        _emit_json({
            "scenario": scenario,
            "description": sc.description,
            "model": sc.model_name,
            "variant": variant,
            "config": sc.config.to_dict(),
            "steps": render.trace_to_json(steps),
            "broken": [{"step": i, "property": name} for i, name in broken],
        })
    else:
        console = render.make_console()
        title = f"Scenario {scenario}" + (f" [{variant}]" if variant else "") + (f": {sc.description}" if sc.description else "")
        render.print_wide(console, render.trace_table(steps, title=title,
                                         caption=f"{render.config_line(sc.config)}\n"
                                                 "yellow: changed since the previous step; red: broker down"))
        if verbose:
            console.print()
            render.print_verbose(console, steps)
        if broken:
            for i, name in broken:
                console.print(f"[bold red]{name}[/bold red] broken at step {i}: {_DESCRIPTIONS.get(name, '')}",
                              highlight=False)
        else:
            console.print(f"[green]every property holds at each of the {len(steps)} states[/green]")
    _exit(1 if broken else 0)


def _run_incomplete(scenario: str, sc: Any, variant: str | None, as_json: bool, replayed: int,
                    broken: list[tuple[int, str]]) -> None:
    """What `run` says when the memory ceiling stopped the replay after ``replayed`` steps: the
    verdict and the properties broken so far, without the states (printing them needs more memory)."""
    if as_json:
        _emit_json({"scenario": scenario, "description": sc.description, "model": sc.model_name, "variant": variant,
                    "config": sc.config.to_dict(), "outcome": "incomplete", "limit_hit": "memory",
                    "steps_replayed": replayed, "steps_total": len(sc.actions), "steps": [],
                    "broken": [{"step": i, "property": name} for i, name in broken]})
        return
    console = render.make_console()
    for i, name in broken:
        console.print(f"[bold red]{name}[/bold red] broken at step {i}: {_DESCRIPTIONS.get(name, '')}", highlight=False)
    console.print(f"Scenario {escape(scenario)}: [bold yellow]INCOMPLETE[/bold yellow] - stopped at the memory limit "
                  f"after {replayed:,} of {len(sc.actions):,} steps; the states are not shown", highlight=False)


# ---------------------------------------------------------------------------- list
@main.command("list", short_help="List the models of specs/models.toml.")
@_json_opt
def list_models(as_json: bool) -> None:
    """The models of specs/models.toml and what checking each must find."""
    entries = manifest.load()
    if as_json:
        _emit_json({"models": [
            {
                "name": e.name, "description": e.description, "gate": e.gate, "expect": e.expect,
                "property": e.property, "length": e.length, "states": e.states, "symmetry": e.symmetry,
                "liveness": {x.property: "holds" if x.holds else {"length": x.length, "loop": x.loop,
                                                                    "expected": x.expected}
                             for x in e.liveness},
                "config": e.config.to_dict(),
            }
            for e in entries
        ]})
        return
    render.print_manifest(render.make_console(), entries)


# ---------------------------------------------------------------------------- gate
def _gate_row_json(row: dict[str, Any]) -> dict[str, Any]:
    e, r = row["entry"], row["result"]
    found = None
    if r is not None:
        v = r.violations[0] if r.violations else None
        found = {
            "outcome": r.outcome, "property": v.property if v else None, "length": v.length if v else None,
            "states": r.distinct_states, "depth": r.depth, "seconds": round(r.seconds, 6),
            "unwitnessed": list(r.unwitnessed),
        }
    lres = row.get("liveness")
    if found is not None and lres is not None:
        found["liveness"] = {
            v.property: ("unknown" if v.holds is None else "holds" if v.holds else
                         {"length": v.violation.length, "loop": v.violation.loop, "instance": v.lasso.instance})
            for v in lres.verdicts}
        found["liveness_graph"] = {"states": lres.states, "edges": lres.edges, "bytes": lres.bytes,
                                   "seconds": round(lres.seconds, 6)}
    expected: dict[str, Any] = {"outcome": e.expect, "property": e.property, "length": e.length, "states": e.states}
    if e.liveness:
        expected["liveness"] = {x.property: "holds" if x.holds else
                                {"length": x.length, "loop": x.loop, "expected": x.expected} for x in e.liveness}
    return {
        "model": e.name,
        "expected": expected,
        "found": found,
        "verdict": "FAIL" if row["mismatches"] else "PASS",
        "mismatches": row["mismatches"],
    }


@main.command(short_help="Check the manifest's models against their expectations.")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--all", "everything", is_flag=True, help="Include the large models (gate = \"all\").")
@click.option("--variant", metavar="MODULE:ATTR",
              help="Check the models with this protocol variant (a Protocol subclass, or a function config -> "
                   "Protocol) and compare with the same pinned expectations: what it breaks shows as FAIL.")
@click.option("--junit", "junit_file", metavar="FILE",
              help="Also write a JUnit XML report to FILE: one testcase per model, the mismatches as its failure.")
@_json_opt
def gate(names: tuple[str, ...], everything: bool, variant: str | None, junit_file: str | None,
         as_json: bool) -> None:
    """Check the manifest's models and compare each with its pinned expectation.

    Runs the default set, or every model with --all, or the NAMEs given. Exits 0 only if all match.
    On a terminal a status line shows the progress; otherwise (CI logs, pipes) one line per model
    goes to stderr as it finishes, also with --json.
    """
    entries = select(manifest.load(), names, everything)
    if not entries:
        raise ManifestError("no models to check")
    factory = load_variant(variant) if variant else None  # a variant that cannot load: exit 2 before any run
    status = _show_progress(as_json)
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    with render.progress_status(status, "gate" + (f" [{variant}]" if variant else "")) as progress:
        for i, e in enumerate(entries):
            counter = f"[{i + 1}/{len(entries)}]"
            if progress is not None:
                progress.set_label(f"gate {counter} {e.name}")
            began = time.perf_counter()
            try:
                protocol = factory(e.config) if factory is not None else None
                model = build_model(e.config, protocol=protocol, symmetry=e.symmetry,
                                    properties=list(e.properties) if e.properties else None)
                result = Checker(model, progress=progress).run()
                mismatches = manifest.compare(e, result)
                lres = None
                if e.liveness:
                    lres = live.check(e.config, [x.property for x in e.liveness], protocol=protocol,
                                      progress=progress)
                    mismatches += manifest.compare_liveness(e, lres)
            except Exception as ex:  # noqa: BLE001 - one broken model must not hide the others
                result = lres = None
                mismatches = [f"crashed: {type(ex).__name__}: {ex} (run `isrcheck check {e.name}` for the traceback)"]
            took = time.perf_counter() - began
            rows.append({"entry": e, "result": result, "liveness": lres, "mismatches": mismatches, "seconds": took})
            if not status:
                render.progress_line(f"gate {counter} {e.name} {'FAIL' if mismatches else 'PASS'} {took:.2f} s")
    seconds = time.perf_counter() - start
    failed = [r for r in rows if r["mismatches"]]
    if junit_file:
        from isrcheck.junit import Case, write_junit

        cases = [Case(r["entry"].name, r["seconds"],
                      failures=r["mismatches"] if r["result"] is not None else [],
                      error="; ".join(r["mismatches"]) if r["result"] is None else None) for r in rows]
        write_junit(junit_file, "isrcheck gate" + (f" [{variant}]" if variant else ""), "isrcheck.gate", cases,
                    seconds)
    if as_json:
        out = {"passed": not failed, "seconds": round(seconds, 6), "models": [_gate_row_json(r) for r in rows]}
        if variant:
            out["variant"] = variant
        _emit_json(out)
    else:
        console = render.make_console()
        console.print(render.gate_table(rows))
        for r in failed:
            for m in r["mismatches"]:
                console.print(f"[bold red]FAIL[/bold red] [bold]{r['entry'].name}[/bold]: {escape(m)}", highlight=False)
        under = f" under variant {escape(variant)}" if variant else ""
        if failed:
            console.print(f"[bold red]gate failed:[/bold red] {len(failed)} of {len(rows)} models differ from "
                          f"specs/models.toml{under} ({seconds:.1f} s)", highlight=False)
        else:
            console.print(f"[bold green]gate passed:[/bold green] all {len(rows)} models as expected{under} "
                          f"({seconds:.1f} s)", highlight=False)
    _exit(1 if failed else 0)


# ---------------------------------------------------------------------------- diff
@main.command(short_help="Compare two protocol variants or configurations of the same bounds.")
@click.argument("a")
@click.argument("b")
@click.option("--model", "base_model", metavar="NAME", help="The bounds: a manifest model (default: replication with one crash).")
@_config_opt
@_set_opt
@click.option("--witnesses", type=click.IntRange(min=0), default=1, show_default=True,
              help="How many shortest witnesses to show for behaviours only one side has.")
@click.option("--max-states", type=click.IntRange(min=1), metavar="N", help="Stop each exploration after N states.")
@debug_option
@_json_opt
def diff(a: str, b: str, base_model: str | None, config_file: str | None, overrides: tuple[str, ...],
         witnesses: int, max_states: int | None, as_json: bool) -> None:
    """Which properties change verdict between A and B, and which behaviours one reaches and the other not.

    A and B are each a protocol generation ({generations}), a variant MODULE:ATTR, a
    configuration file (.toml) or a manifest model. Generations and variants take their bounds
    from --model NAME or --config FILE (with --set overrides).

    Exit status: 0 every property has the same verdict on both sides; 1 some property changes
    verdict; 2 bad usage or input.
    """
    from isrcheck import diff as D

    if base_model or config_file:
        base = manifest.resolve(base_model, config_file, overrides).config
    else:
        base = manifest.resolve("hw-truncation-one-crash", None, overrides).config
    side_a, side_b = D.resolve_side(a, base), D.resolve_side(b, base)
    with render.progress_status(_show_progress(as_json), f"diff {a} {b}"):
        result = D.diff(side_a, side_b, witnesses=witnesses, max_states=max_states)
    incomplete = [e.side.label for e in (result.a, result.b) if e.result.limit_hit]
    if as_json:
        _emit_json({
            "a": a, "b": b, "config": result.a.side.config.to_dict(),
            "outcomes": {a: result.a.result.outcome, b: result.b.result.outcome},
            "distinct_states": {a: result.a.result.distinct_states, b: result.b.result.distinct_states},
            "verdict_changes": [
                {"property": c.property, "broken_in": c.broken_in, "violation": render.violation_to_json(c.violation)}
                for c in result.changes
            ],
            "only_in": {
                a: {"count": result.count_only_a, "witnesses": [render.trace_to_json(t) for _, t in result.only_a]},
                b: {"count": result.count_only_b, "witnesses": [render.trace_to_json(t) for _, t in result.only_b]},
            },
            "incomplete": incomplete,
        })
    else:
        console = render.make_console()
        console.print(f"[bold]diff[/bold] {escape(a)} vs {escape(b)}  {escape(render.config_line(side_a.config))}",
                      highlight=False)
        console.print(escape(f"{a}: {result.a.result.outcome}, {result.a.result.distinct_states:,} states;  "
                             f"{b}: {result.b.result.outcome}, {result.b.result.distinct_states:,} states"),
                      highlight=False)
        if not result.changes:
            console.print("every property has the same verdict on both sides")
        for c in result.changes:
            other = b if c.broken_in == a else a
            console.print(f"[bold red]{c.property}[/bold red] is broken in {escape(c.broken_in)} "
                          f"(shortest counterexample: {c.violation.length} steps) and holds in {other}")
            render.print_wide(console, render.violation_table(c.violation, _DESCRIPTIONS.get(c.property, "")))
        for label, count, shown in ((a, result.count_only_a, result.only_a), (b, result.count_only_b, result.only_b)):
            console.print(f"[bold]{count:,}[/bold] behaviours only {escape(label)} reaches", highlight=False)
            for depth, trace in shown:
                render.print_wide(console, render.trace_table(trace, title=f"only in {label}: shortest witness ({depth} steps)"))
        if incomplete:
            console.print(f"[yellow]incomplete:[/yellow] the state limit stopped {', '.join(incomplete)}; "
                          "differences may be missing")
    _exit(1 if result.changes else 0)


diff.help = (diff.help or "").replace("{generations}", ", ".join(GENERATION_NAMES))  # from specs/protocol.toml


# ---------------------------------------------------------------------------- gallery
@main.command(short_help="Regenerate the known-weakness gallery (specs/10-weaknesses.md) from runs.")
@click.option("--write", "path", metavar="FILE", help="Write the gallery to FILE instead of printing it.")
def gallery(path: str | None) -> None:
    """Run every gallery model and print (or --write) the Markdown write-up with its counterexamples."""
    from isrcheck.gallery import render_gallery

    with render.progress_status(_show_progress(False), "gallery"):
        text = render_gallery()
    if path:
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise ConfigError(f"cannot write {path}: {e.strerror}") from None
    else:
        click.echo(text)


# ---------------------------------------------------------------------------- other command groups
from isrcheck.cli_cluster import cluster  # noqa: E402  (registered after the core commands)
from isrcheck.cli_conform import conform, traces, validate  # noqa: E402
from isrcheck.cli_prove import bmc, prove  # noqa: E402
from isrcheck.cli_spark import spark  # noqa: E402
from isrcheck.cli_graph import graph as graph_cmd, report as report_cmd  # noqa: E402

main.add_command(cluster)
main.add_command(spark)
main.add_command(prove)
main.add_command(bmc)
main.add_command(conform)
main.add_command(validate)
main.add_command(traces)
main.add_command(graph_cmd)
main.add_command(report_cmd)
