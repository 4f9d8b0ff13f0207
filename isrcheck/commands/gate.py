"""``isrcheck list`` and ``isrcheck gate``: the manifest's models, and each checked against its
expectation (``make check``).
"""
from __future__ import annotations

import time
from typing import Any

import click
from rich.markup import escape

from isrcheck.analyses import vacuity
from isrcheck.commands.options import (DESCRIPTIONS, emit_json, exit_with, json_opt, protocol_for, show_progress,
                                       strict_opt)
from isrcheck.commands.verdict import decide
from isrcheck.engine.checker import Checker
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants import liveness as live
from isrcheck.invariants.variants import load_variant
from isrcheck.render import tables, terminal
from isrcheck.render.tablefit import fit_width
from isrcheck.specs.manifest import ManifestError, select


@click.command("list", short_help="List the models of specs/models.toml.")
@json_opt
def list_models(as_json: bool) -> None:
    """The models of specs/models.toml and what checking each must find."""
    entries = manifest.load()
    if as_json:
        emit_json({"models": [
            {
                "name": e.name, "description": e.description, "gate": e.gate, "expect": e.expect,
                "property": e.property, "length": e.length, "states": e.states, "symmetry": e.symmetry,
                "liveness": {x.property: "holds" if x.holds else {"length": x.length, "loop": x.loop,
                                                                    "expected": x.expected}
                             for x in e.liveness},
                "variant": e.variant,
                "config": e.config.to_dict(),
            }
            for e in entries
        ]})
        return
    tables.print_manifest(terminal.make_console(), entries)


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
    verdict = row.get("verdict")
    return {
        "model": e.name,
        "outcome": verdict.outcome if verdict is not None else "crashed",
        "warnings": [w.to_json() for w in verdict.warnings] if verdict is not None else [],
        "expected": expected,
        "found": found,
        "verdict": "FAIL" if row["mismatches"] else "PASS",
        "mismatches": row["mismatches"],
    }


def _junit_body(row: dict[str, Any], variant: str | None) -> str:
    """A failing model's JUnit body: the command that reproduces it, then every trace it found
    (safety counterexamples, liveness lassos) as the plain-text tables `check` prints."""
    command = f"isrcheck check {row['entry'].name}" + (f" --variant {variant}" if variant else "")
    traces = list(row["result"].violations)
    if row.get("liveness") is not None:
        traces += [v.violation for v in row["liveness"].verdicts if v.violation is not None]
    parts = [f"reproduce: {command}"]
    for v in traces:
        parts.append(tables.plain_text(tables.violation_table(v, DESCRIPTIONS.get(v.property, ""))))
    return "\n\n".join(parts)


@click.command(short_help="Check the manifest's models against their expectations.")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--all", "everything", is_flag=True, help="Include the large models (gate = \"all\").")
@click.option("--variant", metavar="MODULE:ATTR",
              help="Check the models with this protocol variant (a Protocol subclass, or a function config -> "
                   "Protocol) instead of the variant an entry names, and compare with the same pinned expectations: "
                   "what it breaks shows as FAIL.")
@click.option("--junit", "junit_file", metavar="FILE",
              help="Also write a JUnit XML report to FILE: one testcase per model, the mismatches as its failure.")
@json_opt
@strict_opt
def gate(names: tuple[str, ...], everything: bool, variant: str | None, junit_file: str | None,
         as_json: bool, strict: bool = False) -> None:
    """Check the manifest's models and compare each with its pinned expectation.

    Runs the default set, or every model with --all, or the NAMEs given. Exits 0 only if all match.
    On a terminal a status line shows the progress; otherwise (CI logs, pipes) one line per model
    goes to stderr as it finishes, also with --json.
    """
    entries = select(manifest.load(), names, everything)
    if not entries:
        raise ManifestError("no models to check")
    factory = load_variant(variant) if variant else None  # a variant that cannot load: exit 2 before any run
    status = show_progress(as_json)
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    with terminal.progress_status(status, "gate" + (f" [{variant}]" if variant else "")) as progress:
        for i, e in enumerate(entries):
            counter = f"[{i + 1}/{len(entries)}]"
            if progress is not None:
                progress.set_label(f"gate {counter} {e.name}")
            began = time.perf_counter()
            try:
                if factory is not None:
                    protocol = factory(e.config)
                else:  # the variant the entry itself names, if any (its pinned verdicts are that variant's)
                    protocol, _ = protocol_for(e.target(), None)
                model = build_model(e.config, protocol=protocol, symmetry=e.symmetry,
                                    properties=list(e.properties) if e.properties else None)
                result = Checker(model, progress=progress).run()
                lres = None
                if e.liveness:
                    lres = live.check(e.config, [x.property for x in e.liveness], protocol=protocol,
                                      progress=progress)
                warnings = vacuity.static_warnings(e.config)
                if result.outcome in ("success", "vacuous"):
                    warnings += vacuity.unused_budgets(e.config, result.coverage)
                verdict = decide(result, lres, warnings, strict, e)  # the verdict check gives
                mismatches = verdict.mismatches
            except Exception as ex:  # noqa: BLE001 - one broken model must not hide the others
                result = lres = verdict = None
                mismatches = [f"crashed: {type(ex).__name__}: {ex} (run `isrcheck check {e.name}` for the traceback)"]
            took = time.perf_counter() - began
            rows.append({"entry": e, "result": result, "liveness": lres, "mismatches": mismatches, "seconds": took,
                         "verdict": verdict})
            if not status:
                terminal.progress_line(f"gate {counter} {e.name} {'FAIL' if mismatches else 'PASS'} {took:.2f} s")
    seconds = time.perf_counter() - start
    failed = [r for r in rows if r["mismatches"]]
    if junit_file:
        from isrcheck.render.junit import Case, write_junit

        cases = [Case(r["entry"].name, r["seconds"],
                      failures=r["mismatches"] if r["result"] is not None else [],
                      error="; ".join(r["mismatches"]) if r["result"] is None else None,
                      body=_junit_body(r, variant) if r["mismatches"] and r["result"] is not None else "")
                 for r in rows]
        write_junit(junit_file, "isrcheck gate" + (f" [{variant}]" if variant else ""), "isrcheck.gate", cases,
                    seconds)
    if as_json:
        out = {"outcome": "not_as_pinned" if failed else "as_pinned", "exit_status": 1 if failed else 0,
               "passed": not failed, "seconds": round(seconds, 6), "models": [_gate_row_json(r) for r in rows]}
        if variant:
            out["variant"] = variant
        emit_json(out)
    else:
        console = terminal.make_console()
        width = fit_width(console)  # the terminal's, else 120 columns: the table folds its cells to fit
        console.print(tables.gate_table(rows), width=width)
        for r in rows:
            for w in (r["verdict"].warnings if r["verdict"] is not None else []):
                click.echo(f"warning: {r['entry'].name}: {w.message}", err=True)
        for r in failed:
            for m in r["mismatches"]:
                console.print(f"[bold red]FAIL[/bold red] [bold]{r['entry'].name}[/bold]: {escape(m)}", highlight=False, width=width)
        under = f" under variant {escape(variant)}" if variant else ""
        if failed:
            console.print(f"[bold red]gate failed:[/bold red] {len(failed)} of {len(rows)} models differ from "
                          f"specs/models.toml{under} ({seconds:.1f} s)", highlight=False, width=width)
        else:
            console.print(f"[bold green]gate passed:[/bold green] all {len(rows)} models as expected{under} "
                          f"({seconds:.1f} s)", highlight=False, width=width)
    exit_with(1 if failed else 0)
