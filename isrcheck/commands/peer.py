"""``isrcheck check --peer MODULE``: check the transcription of the public TLA+ specification and
print the result the way ``isrcheck check`` does (the counterexample as a numbered list of actions
with a compact state line per step, since the Kafka trace table does not apply).

The result carries the one verdict as the Kafka model's does (isrcheck/commands/verdict.py), so
its JSON has the same fields (specs/check-result.schema.json):

* pins: the transcription's are TLC's recorded figures (peers/kafka_specification/expected.toml,
  two replicas), compared as ``check`` compares a manifest model with specs/models.toml: a run
  of two replicas with no --property and no limit finds the pinned counterexample lengths (TLC
  counts states, one more than actions), and a complete search the pinned state count and depth;
  the pinned failure of truncate-to-hw or kip-101 is then ``as_pinned`` and exits 0;
* liveness: the TLA+ specification states none (only TypeOk, WeakIsr, StrongIsr), so there is no
  ``liveness`` part and ``--liveness`` is refused in one line;
* vacuity: the transcription's constants are fixed (no fault budget or option that could be
  inert), so ``warnings`` stays empty; a sometimes-property never witnessed would still make the
  run ``vacuous``, and ``--strict`` is accepted.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import click
from rich.markup import escape
from rich.text import Text

from isrcheck.commands import resources
from isrcheck.commands.evaluate import disk_line
from isrcheck.commands.verdict import Verdict, compared, found_outcome
from isrcheck.engine.checker import CheckResult, Violation
from isrcheck.engine.disk import DiskChecker
from isrcheck.engine.parallel import search
from isrcheck.render import tables, terminal

from isrcheck.peers.kafka_specification.expected import expected
from isrcheck.peers.kafka_specification.model import MODULES, PeerModel, PeerModelError, PeerState, state_line

#: where the transcription's pins are kept, as the verdict line names them
PINNED_IN = "peers/kafka_specification/expected.toml (TLC's figures)"


def _peer_state_json(s: PeerState) -> dict[str, Any]:
    return {
        "logs": [[{"id": r & 0xFF, "epoch": r >> 8} for r in log] for log in s.logs],
        "hw": list(s.hw), "leader_epoch": list(s.epoch), "leader": list(s.leader), "isr": list(s.isr),
        "next_record_id": s.next_record, "quorum_leader": s.quorum_leader, "quorum_isr": s.quorum_isr,
        "quorum_leader_epoch": len(s.requests) - 1, "requests": list(s.requests),
    }


#: The specification's constants a peer check may set with ``--set KEY=N`` (TLC's LogSize,
#: MaxRecords and MaxLeaderEpoch), with their defaults: the transcription's own (the values TLC's
#: recorded figures use), read from a model built without them.
PEER_CONSTANTS = {k: getattr(PeerModel("kip-320"), k) for k in ("log_size", "max_records", "max_leader_epoch")}


class PeerConstantError(ValueError):
    """A ``--set`` a peer check cannot take; one sentence."""


def peer_constants(overrides: Sequence[str]) -> dict[str, int]:
    """The constants of ``--set KEY=N`` for a peer check (each of :data:`PEER_CONSTANTS`, an int),
    the others at their defaults; :class:`PeerConstantError` for any other key or value (the model
    checks the ranges)."""
    from isrcheck.model.config import ConfigError, parse_override

    out = dict(PEER_CONSTANTS)
    for text in overrides:
        try:
            path, value = parse_override(text)
        except ConfigError as e:
            raise PeerConstantError(str(e)) from None
        key = ".".join(path)
        if key not in PEER_CONSTANTS:
            raise PeerConstantError(f"--set {key[:40]}: a peer check sets only the specification's constants "
                                    f"({', '.join(PEER_CONSTANTS)})")
        if isinstance(value, bool) or not isinstance(value, int):
            raise PeerConstantError(f"--set {key}: expects an integer, got {str(value)[:40]!r}")
        out[key] = value
    return out


def pin_mismatches(module: str, symmetry: bool, keep_going: bool, result: CheckResult) -> list[str]:
    """How a two-replica run with no --property and no limit differs from TLC's recorded figures
    (TLC's conventions: a counterexample's length and the depth count states, Init included)."""
    figures = expected(module, 2)
    broken = {p: n for p in ("StrongIsr", "WeakIsr") if isinstance(n := figures.get(p), int)}
    out: list[str] = []
    found = {v.property: v.length + 1 for v in result.violations}
    for prop, states in found.items():
        if prop not in broken:
            out.append(f"{prop} broken ({states} states as TLC counts), but TLC finds it holds")
        elif states != broken[prop]:
            out.append(f"{prop}: a {states}-state counterexample, TLC's is {broken[prop]}")
    complete = result.limit_hit is None and (keep_going or not result.violations)
    if complete:
        for prop, states in broken.items():
            if prop not in found:
                out.append(f"{prop} holds here, TLC finds a {states}-state counterexample")
        pinned = figures["states_symmetry" if symmetry else "states_no_symmetry"]
        if result.distinct_states != pinned:
            out.append(f"{result.distinct_states:,} distinct states, TLC's {pinned:,}")
        if result.depth + 1 != figures["depth"]:
            out.append(f"depth {result.depth + 1} as TLC counts, TLC's {figures['depth']}")
    elif not result.violations and result.limit_hit is not None:
        out.append(f"the search stopped at the {result.limit_hit} limit")
    return out


def peer_verdict(module: str, replicas: int, symmetry: bool, only: Sequence[str], keep_going: bool, strict: bool,
                 limited: bool, result: CheckResult, constants: Mapping[str, int] | None = None) -> Verdict:
    """The one verdict of a peer check: the finding, compared with TLC's figures when they apply
    (two replicas, the default constants, every property, no --max-depth or --max-states)."""
    found = found_outcome(result, None, (), strict)
    if replicas != 2 or only or limited or (constants is not None and constants != PEER_CONSTANTS):
        return Verdict(found, found, [], strict=strict)
    return compared(found, pin_mismatches(module, symmetry, keep_going, result), (), strict)


def result_json(label: str, model: PeerModel, result: CheckResult, verdict: Verdict) -> dict[str, Any]:
    return {
        "model": label, "mode": "check", "outcome": verdict.outcome,
        # the one verdict's fields, as check --json has them (no liveness: the specification states none)
        "found": verdict.found, "safety_outcome": result.outcome,
        "exit_status": verdict.exit_status, "strict": verdict.strict, "warnings": [], "pins": verdict.pins_json(),
        "violations": [{
            "property": v.property, "kind": v.kind, "length": v.length,
            "message": v.message or f"{v.property} (the TLA+ specification's invariant) is false at the last state",
            "tlc_length": v.length + 1,
            "trace": [{"step": i, "action": None if st.action is None else str(st.action),
                       "state": None if st.state is None else _peer_state_json(st.state)}
                      for i, st in enumerate(v.trace)],
        } for v in result.violations],
        "distinct_states": result.distinct_states, "depth": result.depth, "tlc_depth": result.depth + 1,
        "seconds": round(result.seconds, 6), "transitions": result.transitions,
        "states_per_second": round(result.states_per_second, 6),
        "collision_probability": result.collision_probability, "coverage": dict(result.coverage),
        "unwitnessed": list(result.unwitnessed), "limit_hit": result.limit_hit,
        "config": {"peer": model.module, "tla_module": model.tla_module, "replicas": model.n,
                   "symmetry": model.symmetry, "log_size": model.log_size, "max_records": model.max_records,
                   "max_leader_epoch": model.max_leader_epoch},
    }


def trace_lines(v: Violation) -> list[str]:
    """The counterexample: one numbered line per step, the action then the state."""
    out = [f"{tables.violation_title(v)} ({v.length + 1} states, Init included, as TLC counts)"]
    for i, st in enumerate(v.trace):
        action = "(initial state)" if st.action is None else str(st.action)
        out.append(f"{i:3d}. {action}")
        if st.state is not None:
            out.append(f"     {state_line(st.state)}")
    return out


def check_peer(module: str, replicas: int, symmetry: bool, only: Sequence[str], max_depth: int | None,
               max_states: int | None, keep_going: bool, workers: int, as_json: bool,
               ceiling: resources.Ceiling | None = None, strict: bool = False,
               disk: Any = None, constants: Mapping[str, int] | None = None) -> int:
    """Run the check and print it; the exit status (0 success or as pinned, 1 otherwise, 2 bad
    arguments).
    ``ceiling``: the memory ceiling (isrcheck/commands/resources.py), reported in one line when it stops the search."""
    try:
        model = PeerModel(module, replicas, symmetry, properties=list(only) if only else None,
                          **(constants or PEER_CONSTANTS))
    except PeerModelError as e:
        click.echo(f"error: {e}", err=True)
        return 2
    label = f"peer {module} ({MODULES[module]})"
    # a live status line on a terminal, plain lines on a pipe or in a CI log (as a model's check)
    with resources.progress(as_json, f"checking {label}",
                            limit=ceiling.limit if ceiling is not None else None) as progress:
        if disk is not None:  # check --disk (a DiskRequest)
            checker = DiskChecker(model, disk.directory, max_depth=max_depth, max_states=max_states,
                                  stop_on_first=not keep_going, progress=progress,
                                  max_memory=ceiling.limit if ceiling is not None else None, keep=disk.keep,
                                  progress_every=resources.report_every())
            result = checker.run()
            disk_line(checker)
        else:
            result = search(model, workers=workers, max_depth=max_depth, max_states=max_states,
                            stop_on_first=not keep_going, progress=progress,
                            max_memory=ceiling.limit if ceiling is not None else None,
                            progress_every=resources.report_every())
    verdict = peer_verdict(module, replicas, symmetry, only, keep_going, strict,
                           max_depth is not None or max_states is not None, result, constants)
    if as_json:
        click.echo(json.dumps(result_json(label, model, result, verdict), indent=2))
    else:
        console = terminal.make_console()
        console.print(f"[bold]{escape(label)}[/bold]  replicas={replicas} log_size={model.log_size} "
                      f"max_records={model.max_records} max_leader_epoch={model.max_leader_epoch}"
                      f"  symmetry={'on' if symmetry else 'off'}", highlight=False)
        for v in result.violations:
            for line in trace_lines(v):
                console.print(Text(line))
            console.print()
        for item in tables.check_summary(label, result):
            console.print(item)
        console.print(Text(f"TLC's conventions: depth {result.depth + 1} (Init counts as 1)"
                           + "".join(f"; {v.property} trace {v.length + 1} states" for v in result.violations),
                           style="dim"))
        vj = {"outcome": verdict.outcome, "found": verdict.found, "warnings": [], "strict": strict,
              "pins": verdict.pins_json()}
        for line in tables.overall_lines(label, vj, result, None, pinned_in=PINNED_IN):
            console.print(line)
    if result.limit_hit == "memory" and ceiling is not None:
        resources.report_limit(ceiling)
    return verdict.exit_status
