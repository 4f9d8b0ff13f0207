"""``isrcheck check --peer MODULE``: check the transcription of the public TLA+ specification and
print the result the way ``isrcheck check`` does (the counterexample as a numbered list of actions
with a compact state line per step, since the Kafka trace table does not apply)."""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click
from rich.markup import escape
from rich.text import Text

from isrcheck.commands import resources
from isrcheck.engine.checker import CheckResult, Violation
from isrcheck.engine.parallel import search
from isrcheck.render import tables, terminal

from isrcheck.peers.kafka_specification.model import MODULES, PeerModel, PeerModelError, PeerState, state_line


def _peer_state_json(s: PeerState) -> dict[str, Any]:
    return {
        "logs": [[{"id": r & 0xFF, "epoch": r >> 8} for r in log] for log in s.logs],
        "hw": list(s.hw), "leader_epoch": list(s.epoch), "leader": list(s.leader), "isr": list(s.isr),
        "next_record_id": s.next_record, "quorum_leader": s.quorum_leader, "quorum_isr": s.quorum_isr,
        "quorum_leader_epoch": len(s.requests) - 1, "requests": list(s.requests),
    }


def result_json(label: str, model: PeerModel, result: CheckResult) -> dict[str, Any]:
    return {
        "model": label, "mode": "check", "outcome": result.outcome,
        # the one verdict's fields, as check --json has them (no liveness, vacuity pass or pins here)
        "found": result.outcome, "safety_outcome": result.outcome,
        "exit_status": 0 if result.outcome == "success" else 1, "strict": False, "warnings": [], "pins": None,
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
               show_progress: bool, ceiling: resources.Ceiling | None = None) -> int:
    """Run the check and print it; the exit status (0 success, 1 otherwise, 2 bad arguments).
    ``ceiling``: the memory ceiling (isrcheck/commands/resources.py), reported in one line when it stops the search."""
    try:
        model = PeerModel(module, replicas, symmetry, properties=list(only) if only else None)
    except PeerModelError as e:
        click.echo(f"error: {e}", err=True)
        return 2
    label = f"peer {module} ({MODULES[module]})"
    with terminal.progress_status(show_progress, f"checking {label}") as progress:
        result = search(model, workers=workers, max_depth=max_depth, max_states=max_states,
                        stop_on_first=not keep_going, progress=progress,
                        max_memory=ceiling.limit if ceiling is not None else None)
    if as_json:
        click.echo(json.dumps(result_json(label, model, result), indent=2))
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
    if result.limit_hit == "memory" and ceiling is not None:
        resources.report_limit(ceiling)
    return 0 if result.outcome == "success" else 1
