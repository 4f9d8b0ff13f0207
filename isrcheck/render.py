"""Everything the user reads: trace tables, result summaries, the gate table, and JSON.

Terminal output is built with rich; JSON output is plain data (``json.dumps`` works on every
value returned here, and no Python repr ever leaks into it). Nothing here decides a verdict.
"""
from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from isrcheck.invariants.properties import describe, detail
from isrcheck.model.action_text import to_json as action_to_json
from isrcheck.model.brokersets import members
from isrcheck.model.brokersets import render as render_set
from isrcheck.engine.checker import CheckResult, Progress, Step, Violation
from isrcheck.model.config import Config
from isrcheck.model.records import record_epoch, record_id, render_log
from isrcheck.model.state import (
    LEADER_AND_ISR,
    NO_LEADER,
    STOP_REPLICA,
    Controller,
    Replica,
    Request,
    State,
)
from isrcheck.model.tables import PartitionState, ReplicaState
from isrcheck.render_changes import verbose_tables
from isrcheck.tablefit import split_columns

CHANGED = "bold yellow"
TABLE_WIDTH = 120  # trace tables fit this when the console is not a terminal (see fit_width)
LOOP_MARK = "\u21ba"  # the row where a lasso's loop starts
DEAD = "red"
OUTCOME_STYLE = {
    "success": "bold green",
    "safety_failure": "bold red",
    "vacuous": "bold magenta",
    "incomplete": "bold yellow",
}
OUTCOME_TEXT = {
    "success": "SUCCESS",
    "safety_failure": "SAFETY FAILURE",
    "vacuous": "VACUOUS",
    "incomplete": "INCOMPLETE",
}


# ============================================================================ consoles
def make_console(stderr: bool = False) -> Console:
    """A console; when the stream is not a terminal, wide enough that trace tables do not wrap."""
    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not (hasattr(stream, "isatty") and stream.isatty()) and "COLUMNS" not in os.environ:
        width = 200
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class StatusLine:
    """The checker's progress callback, drawing on a rich status line; ``label`` may change."""

    def __init__(self, status: Any, label: str) -> None:
        self._status = status
        self.label = label

    def set_label(self, label: str) -> None:
        self.label = label
        self._status.update(f"{label}: starting")

    def __call__(self, p: Progress) -> None:
        self._status.update(
            f"{self.label}: {p.states:,} states  depth {p.depth}  queue {p.queue:,}  "
            f"{p.rate:,.0f}/s  {p.seconds:.0f}s"
        )


@contextmanager
def progress_status(enabled: bool, label: str) -> Iterator[StatusLine | None]:
    """A live, transient status line on stderr; yields the checker's progress callback (or None)."""
    if not enabled:
        yield None
        return
    console = Console(stderr=True, highlight=False)
    with console.status(f"{label}: starting") as status:
        yield StatusLine(status, label)


def progress_line(text: str) -> None:
    """One plain progress line on stderr, flushed at once: what a terminal's status line shows,
    for CI logs and pipes (stderr not a terminal), where a status line would print nothing."""
    stream = sys.stderr
    stream.write(text + "\n")
    stream.flush()


def config_line(cfg: Config) -> str:
    """The configuration in one line: the main bounds, then whatever differs from the defaults."""
    parts = [f"brokers={cfg.brokers}", f"partitions={cfg.partitions}",
             f"replication_factor={cfg.replication_factor}", f"max_records={cfg.max_records}"]
    default = Config()
    for key in ("min_insync_replicas", "unclean_leader_election", "hw_checkpoint", "stale_controller"):
        value = getattr(cfg, key)
        if value != getattr(default, key):
            parts.append(f"{key}={str(value).lower() if isinstance(value, bool) else value}")
    for key, value in cfg.to_dict()["faults"].items():
        if value:
            parts.append(f"faults.{key}={value}")
    ops = cfg.to_dict()["operations"]
    for key, value in ops.items():
        if key == "reassignments":
            for r in value:
                parts.append(f"reassign:p{r['partition']}->[{','.join(map(str, r['target']))}]")
        elif value:
            parts.append(f"operations.{key}={str(value).lower() if isinstance(value, bool) else value}")
    return " ".join(parts)


# ============================================================================ JSON
def _ids(mask: int) -> list[int]:
    return list(members(mask))


def _by_broker(values: Sequence[int]) -> dict[str, int]:
    return {str(i + 1): v for i, v in enumerate(values)}


def _leader(b: int) -> int | None:
    return None if b == NO_LEADER else b


def _records(log: Sequence[int]) -> list[dict[str, int]]:
    return [{"id": record_id(r), "epoch": record_epoch(r)} for r in log]


def request_to_json(req: Request) -> dict[str, Any]:
    if req[0] == LEADER_AND_ISR:
        return {
            "type": "LeaderAndIsr", "controller_epoch": req[1], "partition": req[2],
            "leader": _leader(req[3]), "isr": _ids(req[4]), "leader_epoch": req[5],
            "zk_version": req[6], "replicas": list(req[7]),
        }
    if req[0] == STOP_REPLICA:
        return {"type": "StopReplica", "controller_epoch": req[1], "partition": req[2], "delete": bool(req[3])}
    return {"type": "UpdateMetadata", "controller_epoch": req[1]}


def _controller_to_json(c: Controller | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "epoch": c.epoch,
        "live": _ids(c.live),
        "registrations": _by_broker(c.registrations),
        "partition_states": {str(p): PartitionState(s).label for p, s in enumerate(c.partition_states)},
        "replica_states": {
            str(p): {str(b + 1): ReplicaState(s).label for b, s in enumerate(row)}
            for p, row in enumerate(c.replica_states)
        },
        "reassign_step": {str(p): s for p, s in enumerate(c.reassign_step)},
        "reassign_old": {str(p): list(r) for p, r in enumerate(c.reassign_old)},
        "reassign_new": {str(p): list(r) for p, r in enumerate(c.reassign_new)},
        "shutting_down": _ids(c.shutting_down),
    }


def _replica_to_json(r: Replica | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "log": _records(r.log),
        "leo": len(r.log),
        "hw": r.hw,
        "checkpoint": r.checkpoint,
        "leader": _leader(r.leader),
        "leader_epoch": r.leader_epoch,
        "isr": _ids(r.isr),
        "zk_version": r.zk_version,
        "remote_leo": _by_broker(r.remote_leo),
        "pending": _ids(r.pending),
    }


def state_to_json(s: State) -> dict[str, Any]:
    """The state as plain JSON: broker sets as sorted id lists, records as {id, epoch},
    controller state machines by their labels, per-broker maps keyed by broker id."""
    zk = s.zk
    return {
        "zk": {
            "live": _ids(zk.live),
            "registrations": _by_broker(zk.registrations),
            "controller_epoch": zk.controller_epoch,
            "partitions": [
                {
                    "partition": p, "replicas": list(zp.replicas), "leader": _leader(zp.leader),
                    "isr": _ids(zp.isr), "leader_epoch": zp.leader_epoch, "version": zp.version,
                    "controller_epoch": zp.controller_epoch,
                }
                for p, zp in enumerate(zk.partitions)
            ],
            "reassign": {str(p): list(t) for p, t in enumerate(zk.reassign) if t},
            "preferred": _ids(zk.preferred),
            "deleting": _ids(zk.deleting),
        },
        "controller": _controller_to_json(s.controller),
        "stale_controller": _controller_to_json(s.stale),
        "brokers": [
            {
                "id": i + 1, "alive": br.alive, "controller_epoch": br.controller_epoch,
                "replicas": {str(p): _replica_to_json(r) for p, r in enumerate(br.replicas)},
                "inbox": [request_to_json(q) for q in s.inbox[i]],
            }
            for i, br in enumerate(s.brokers)
        ],
        "ghost": [
            {
                "partition": p, "produced": g.produced, "acked": _ids(g.acked),
                "exposed": _records(g.exposed), "reassign_origin": list(g.reassign_origin),
            }
            for p, g in enumerate(s.ghost)
        ],
        "budget": dict(s.budget._asdict()),
        "pending_reassignments": [{"partition": p, "target": list(t)} for p, t in s.reassignments],
    }


def trace_to_json(trace: Sequence[Step]) -> list[dict[str, Any]]:
    return [
        {
            "step": i,
            "action": None if st.action is None else action_to_json(st.action),
            "state": None if st.state is None else state_to_json(st.state),
        }
        for i, st in enumerate(trace)
    ]


def violation_to_json(v: Violation) -> dict[str, Any]:
    out = {
        "property": v.property,
        "kind": v.kind,
        "message": describe(v),  # never empty: the property and the values that broke it
        "length": v.length,
        "trace": trace_to_json(v.trace),
    }
    if v.kind == "liveness":
        out["loop"] = v.loop  # the step the last one goes back to (== length: it stutters there)
    return out


def liveness_to_json(result: Any) -> dict[str, Any]:
    """A LivenessResult as plain data (the ``liveness`` object of ``check --json``)."""
    return {
        "fairness": list(result.fairness),
        "complete": result.complete,
        "states": result.states,
        "edges": result.edges,
        "bytes": result.bytes,
        "seconds": _round(result.seconds),
        "verdicts": [
            {"property": v.property,
             "verdict": "unknown" if v.holds is None else ("holds" if v.holds else "broken"),
             "instance": v.lasso.instance if v.lasso is not None else None,
             "violation": violation_to_json(v.violation) if v.violation is not None else None}
            for v in result.verdicts
        ],
    }


def _round(x: float) -> float:
    return round(x, 6)


def result_to_json(model_name: str, config: Config, result: CheckResult) -> dict[str, Any]:
    """A CheckResult as one JSON object (what ``isrcheck check --json`` prints)."""
    return {
        "model": model_name,
        "mode": "check",
        "outcome": result.outcome,
        "violations": [violation_to_json(v) for v in result.violations],
        "distinct_states": result.distinct_states,
        "depth": result.depth,
        "seconds": _round(result.seconds),
        "transitions": result.transitions,
        "states_per_second": _round(result.states_per_second),
        "collision_probability": result.collision_probability,
        "coverage": dict(result.coverage),
        "unwitnessed": list(result.unwitnessed),
        "limit_hit": result.limit_hit,
        "config": config.to_dict(),
    }


def simulation_to_json(model_name: str, config: Config, result: Any) -> dict[str, Any]:
    """A SimulationResult as one JSON object (what ``isrcheck simulate --json`` prints)."""
    return {
        "model": model_name,
        "mode": "simulate",
        "outcome": result.outcome,
        "seed": result.seed,
        "strategy": result.strategy,
        "walks": result.walks,
        "first_found": result.first_found,  # the walk that found the first violation (then: shrinking)
        "max_depth": result.max_depth,
        "violations": [violation_to_json(v) for v in result.violations],
        "distinct_states": result.distinct_states,
        "depth": result.deepest,
        "dead_ends": result.dead_ends,
        "seconds": _round(result.seconds),
        "transitions": result.steps,
        "steps_per_second": _round(result.steps_per_second),
        "coverage": dict(result.coverage),
        "witnessed": list(result.witnessed),
        "unwitnessed": list(result.unwitnessed),
        "config": config.to_dict(),
    }


# ============================================================================ trace table
def state_cells(s: State) -> tuple[list[str], list[bool]]:
    """Cell texts for one state, and for each cell whether it belongs to a dead broker."""
    cells: list[str] = []
    dead: list[bool] = []
    for p, zp in enumerate(s.zk.partitions):
        if not zp.replicas:
            cells += ["-", "-", "-", "-"]
        else:
            cells += ["[" + ",".join(map(str, zp.replicas)) + "]",
                      str(zp.leader) if zp.leader != NO_LEADER else "none", render_set(zp.isr), str(zp.leader_epoch)]
        acked = _ids(s.ghost[p].acked)
        cells.append(",".join(f"m{i}" for i in acked) if acked else "-")
        dead += [False] * 5
    for br in s.brokers:
        for r in br.replicas:
            if r is None:
                cells += ["-", "-", "-"] if br.alive else ["down", "-", "-"]
            else:
                log = render_log(r.log)
                cells += [log if br.alive else f"{log} down", str(len(r.log)), str(r.hw)]
            dead += [not br.alive] * 3
    return cells, dead


def state_headers(s: State) -> list[str]:
    multi = len(s.zk.partitions) > 1
    heads: list[str] = []
    for p in range(len(s.zk.partitions)):
        pre = f"p{p} " if multi else ""
        heads += [f"{pre}AR", f"{pre}leader", f"{pre}ISR", f"{pre}epoch", f"{pre}acked"]
    for i, br in enumerate(s.brokers):
        for p in range(len(br.replicas)):
            pre = f"b{i + 1}/p{p}" if multi else f"b{i + 1}"
            heads += [f"{pre} log", "LEO", "HW"]
    return heads


def trace_table(trace: Sequence[Step], title: str = "", caption: str = "", loop: int | None = None) -> Table:
    """One row per step: the action, each partition's AR/leader/ISR/epoch/acknowledged writes (from
    ZooKeeper and the ghost), and each replica's log, LEO and HW. Changed cells are highlighted,
    a dead broker's cells are red. ``loop`` (a lasso's): the row where the loop starts is marked,
    and a last row says the behaviour goes back there, or stutters, forever."""
    first = next(st.state for st in trace if st.state is not None)
    heads = state_headers(first)
    table = Table(title=title or None, caption=caption or None, box=box.SIMPLE_HEAD, pad_edge=False,
                  title_justify="left", caption_justify="left", header_style="bold")
    table.add_column("#", justify="right", style="dim")
    table.add_column("action", no_wrap=True)
    nparts = len(first.zk.partitions)
    for i, h in enumerate(heads):
        right = h in ("LEO", "HW") or h.endswith("epoch")
        table.add_column(h, justify="right" if right else "left", no_wrap=True,
                         style="cyan" if i < 4 * nparts else None)
    prev: list[str] | None = None
    for n, st in enumerate(trace):
        action = Text("(initial state)", style="dim") if st.action is None else Text(str(st.action), style="bold")
        if st.state is None:  # a step that broke a state machine: it has no successor state
            action.append("\nillegal transition", style="bold red")  # under the action: no column widens
            table.add_row(str(n), action)
            continue
        cells, dead = state_cells(st.state)
        row: list[RenderableType] = []
        for i, c in enumerate(cells):
            style = ""
            if prev is not None and prev[i] != c:
                style = CHANGED
            elif dead[i]:
                style = DEAD
            row.append(Text(c, style=style))
        number = str(n)
        if loop is not None and n == loop:
            number = f"{LOOP_MARK} {n}"
        table.add_row(Text(number, style="bold magenta" if loop is not None and n == loop else ""), action, *row)
        prev = cells
    if loop is not None:
        last = len(trace) - 1
        what = "(stutters forever)" if loop == last else f"(back to step {loop}, forever)"
        table.add_row(Text(LOOP_MARK, style="bold magenta"), Text(what, style="bold magenta"))
    return table


def fit_width(console: Console) -> int:
    """The width tables are fitted to: the terminal's (or COLUMNS), else at most TABLE_WIDTH (a
    pipe or CI log, where make_console's wide default only keeps other output from wrapping)."""
    if console.is_terminal or "COLUMNS" in os.environ:
        return console.width
    return min(console.width, TABLE_WIDTH)


def _is_trace_table(renderable: RenderableType) -> bool:
    if not isinstance(renderable, Table) or len(renderable.columns) < 2:
        return False
    return [str(c.header) for c in renderable.columns[:2]] == ["#", "action"]


def print_wide(console: Console, renderable: RenderableType) -> None:
    """Print a wide table whole. A trace table wider than fit_width is stacked: panels of whole
    partition and broker column groups, each repeating the step and action (isrcheck.tablefit).
    Anything else, or a single group still too wide, lets lines run past the edge rather than
    truncating cells (a counterexample with elided cells would be worse than one that wraps)."""
    limit = fit_width(console)
    if isinstance(renderable, Table) and _is_trace_table(renderable):
        panels = split_columns(console, renderable, limit)
        if len(panels) > 1:  # title and caption span the panels, at the fitted width
            if renderable.title:
                console.print(Text(str(renderable.title), style="table.title"), width=limit)
            for panel in panels:
                panel.title = panel.title if panel is not panels[0] else None
                panel.caption = None
                _print_whole(console, panel)
                console.print()
            if renderable.caption:
                console.print(Text(str(renderable.caption)), width=limit)
            return
    _print_whole(console, renderable)


def print_verbose(console: Console, trace: Sequence[Step], loop: int | None = None) -> None:
    """``--verbose``: below a trace table, every field of the initial state and every field each
    step changed (isrcheck.render_changes), folded to fit_width."""
    for item in verbose_tables(trace, loop=loop):
        console.print(item, width=fit_width(console))
    console.print()


def _print_whole(console: Console, renderable: RenderableType) -> None:
    need = console.measure(renderable, options=console.options.update(width=10_000)).maximum
    width = console.width
    if need <= width:
        console.print(renderable)
        return
    console.width = need
    try:
        console.print(renderable, crop=False)
    finally:
        console.width = width


def violation_title(v: Violation) -> str:
    if v.kind == "liveness" and v.loop is not None:
        stem = v.loop
        cycle = v.length - v.loop
        shape = ("then it stutters forever" if cycle == 0
                 else f"then a loop of {cycle} step{'s' if cycle != 1 else ''} repeats forever")
        return f"Lasso: {v.property} broken: a stem of {stem} step{'s' if stem != 1 else ''}, {shape}"
    what = "illegal transition" if v.kind == "transition" and v.trace and v.trace[-1].state is None else "violated"
    return f"Counterexample: {v.property} {what} after {v.length} step{'s' if v.length != 1 else ''}"


def violation_table(v: Violation, description: str = "") -> Table:
    caption = f"{v.property}: {description}" if description else ""
    why = v.message or detail(v)  # an illegal move's own message, else the values that broke the property
    if why:
        caption = f"{caption}\n{why}" if caption else why
    caption = (caption + "\n" if caption else "") + "yellow: changed since the previous step; red: broker down"
    if v.kind == "liveness":
        caption += f"; {LOOP_MARK}: where the loop starts"
    return trace_table(v.trace, title=violation_title(v), caption=caption, loop=v.loop)


# ============================================================================ summaries
def outcome_text(outcome: str, simulated: bool = False) -> Text:
    text = OUTCOME_TEXT.get(outcome, outcome.upper())
    if simulated and outcome == "success":
        text = "NO VIOLATION FOUND"
    return Text(text, style=OUTCOME_STYLE.get(outcome, "bold"))


def coverage_table(coverage: dict[str, int], title: str = "Coverage") -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    table.add_column("action")
    table.add_column("times taken", justify="right")
    for name, count in sorted(coverage.items()):
        table.add_row(name, f"{count:,}")
    if not coverage:
        table.add_row(Text("(no action was taken)", style="dim"), "")
    return table


def _grid() -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    return grid


def _verdict_line(label: str, result: Any, simulated: bool, safety_selected: bool = True) -> Text:
    line = Text(f"{label}: ")
    line.append_text(outcome_text(result.outcome, simulated))
    if result.outcome == "safety_failure" and result.violations:
        v = result.violations[0]
        line.append(f" - {v.property} broken after {v.length} steps")
        if len(result.violations) > 1:
            line.append(f" (and {len(result.violations) - 1} more propert{'ies' if len(result.violations) > 2 else 'y'})")
    elif result.outcome == "vacuous":
        line.append(f" - never witnessed: {', '.join(result.unwitnessed)}")
    elif result.outcome == "incomplete":
        line.append(f" - stopped at the {getattr(result, 'limit_hit', None) or 'search'} limit; nothing is proved")
    elif simulated:
        line.append(" (simulation: this proves nothing)")
    elif not safety_selected:
        line.append(" - no safety property was selected; the sometimes-properties were witnessed")
    else:
        line.append(" - every safety property holds")
    return line


def depth_text(result: CheckResult) -> str:
    """``depth`` is the deepest breadth-first level the search took states from. A violation's last
    step is found while expanding the level above it, so a search that stops there reports a depth
    one less than the counterexample's length: where they differ, the row says so, and the two cannot
    be read as a disagreement."""
    deeper = [v.length for v in result.violations if v.length > result.depth]
    if not deeper:
        return str(result.depth)
    return f"{result.depth} (violation found at depth {min(deeper)}, while expanding depth {min(deeper) - 1})"


def check_summary(label: str, result: CheckResult, safety_selected: bool = True) -> list[RenderableType]:
    """Coverage, figures and the verdict (last, so it is the line a user sees). ``safety_selected``
    False: --property named only liveness properties, so no safety verdict is claimed."""
    out: list[RenderableType] = [coverage_table(result.coverage)]
    grid = _grid()
    grid.add_row("distinct states", f"{result.distinct_states:,}")
    grid.add_row("depth searched", depth_text(result))
    grid.add_row("transitions", f"{result.transitions:,}")
    grid.add_row("time", f"{result.seconds:.2f} s ({result.states_per_second:,.0f} states/s)")
    grid.add_row("collision probability", f"{result.collision_probability:.1e}")
    if result.limit_hit:
        grid.add_row("limit hit", Text(result.limit_hit, style="yellow"))
    if result.unwitnessed:
        grid.add_row("never witnessed", Text(", ".join(result.unwitnessed), style="magenta"))
    out.append(grid)
    out.append(Text())
    out.append(_verdict_line(label, result, simulated=False, safety_selected=safety_selected))
    return out


def liveness_summary(label: str, result: Any) -> list[RenderableType]:
    """The fairness assumed, the graph's cost and one line per liveness property."""
    out: list[RenderableType] = []
    grid = _grid()
    grid.add_row("fairness", "; ".join(result.fairness) or "none")
    per_gib = (2**30 / (result.bytes / max(result.states, 1))) if result.bytes else 0
    grid.add_row("liveness graph", f"{result.states:,} states, {result.edges:,} edges, "
                 f"{result.bytes / 2**20:.1f} MiB (~{per_gib / 1e6:.1f} M states/GiB), {result.seconds:.2f} s")
    out.append(grid)
    for v in result.verdicts:
        line = Text(f"{label}: ")
        if v.holds is None:
            line.append("LIVENESS UNKNOWN", style="bold yellow")
            line.append(f" - {v.property}: the graph was cut by a limit; nothing is proved")
        elif v.holds:
            line.append("HOLDS", style="bold green")
            line.append(f" - {v.property}")
        else:
            line.append("LIVENESS FAILURE", style="bold red")
            line.append(f" - {v.property} broken ({v.lasso.instance}), lasso of {v.violation.length} steps")
        out.append(line)
    return out


def simulation_summary(label: str, result: Any) -> list[RenderableType]:
    out: list[RenderableType] = [coverage_table(result.coverage)]
    grid = _grid()
    grid.add_row("seed", f"{result.seed} ({result.strategy} walks)")
    grid.add_row("walks", f"{result.walks:,} (at most {result.max_depth} steps each; "
                 f"{result.dead_ends:,} ended quiescent)")
    if result.first_found is not None:
        grid.add_row("first violation", f"in walk {result.first_found:,}; the rest looked for a shorter one")
    grid.add_row("steps", f"{result.steps:,} (longest walk {result.deepest})")
    grid.add_row("distinct states", f"{result.distinct_states:,}")
    grid.add_row("time", f"{result.seconds:.2f} s ({result.steps_per_second:,.0f} steps/s)")
    if result.witnessed:
        grid.add_row("witnessed", ", ".join(result.witnessed))
    if result.unwitnessed:
        grid.add_row("never witnessed", Text(", ".join(result.unwitnessed), style="magenta"))
    out.append(grid)
    out.append(Text())
    out.append(_verdict_line(label, result, simulated=True))
    return out


# ============================================================================ manifest and gate
def _pinned(e: Any) -> str:
    """What a manifest entry pins besides its outcome: ``NoCommittedWriteLost in 8``, ``289 states``."""
    if e.property:
        return f"{e.property} in {e.length}" if e.length is not None else e.property
    return "" if e.states is None else f"{e.states:,} states"


def _liveness_pins(e: Any) -> Text:
    pins = getattr(e, "liveness", ())
    held = sum(1 for x in pins if x.holds)
    live = Text(f"{held} hold" if held else "", style="green")
    if len(pins) - held:
        live.append((", " if held else "") + f"{len(pins) - held} broken", style="red")
    return live


def manifest_table(entries: Sequence[Any]) -> Table:
    """The manifest, one row per model: its name with the description below it (the one column that
    takes the width left over and wraps), then the gate, the expected outcome with what it pins,
    and the pinned liveness verdicts. About 100 columns at least; see print_manifest for less."""
    table = Table(title="Models (specs/models.toml)", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False,
                  leading=1)
    table.add_column("name / description", ratio=1, overflow="fold")
    table.add_column("gate", no_wrap=True)
    table.add_column("expect", no_wrap=True)
    table.add_column("liveness")
    for e in entries:
        cell = Text(e.name, style="bold")
        cell.append("\n" + e.description, style="dim")
        expect = Text(e.expect, style="green" if e.expect == "success" else "red")
        if _pinned(e):
            expect.append("\n" + _pinned(e))
        table.add_row(cell, e.gate, expect, _liveness_pins(e))
    return table


def manifest_blocks(entries: Sequence[Any]) -> list[RenderableType]:
    """The manifest for a narrow console: one block of wrapped lines per model, nothing cut."""
    out: list[RenderableType] = [Text("Models (specs/models.toml)", style="italic")]
    for e in entries:
        head = Text(e.name, style="bold")
        head.append(f"  gate {e.gate}  ")
        head.append(e.expect, style="green" if e.expect == "success" else "red")
        if _pinned(e):
            head.append(f": {_pinned(e)}")
        live = _liveness_pins(e)
        if live.plain:
            head.append("  liveness ")
            head.append_text(live)
        out.append(head)
        out.append(Padding(Text(e.description, style="dim"), (0, 0, 0, 4)))
    return out


def print_manifest(console: Console, entries: Sequence[Any]) -> None:
    """``isrcheck list``: the table where its columns fit whole (every name on one line), else one
    block per model, with a line saying so."""
    table = manifest_table(entries)
    width = fit_width(console)
    trial = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    trial.print(table)
    text = trial.file.getvalue()  # type: ignore[attr-defined]
    if all(e.name in text for e in entries) and max(map(len, text.splitlines()), default=0) <= width:
        console.print(table, width=width)
        return
    for item in manifest_blocks(entries):
        console.print(item, width=width)
    console.print(Text("(narrower than the table needs: one model per block; `isrcheck list --json` has "
                       "every field)", style="dim"), width=width)


def expectation(entry: Any) -> str:
    """A manifest entry's expectation, short: ``success``, ``success, 245 states``, ``NoCommittedWriteLost in 8``,
    then one line per pinned liveness verdict."""
    if entry.expect == "safety_failure":
        text = f"{entry.property} in {entry.length}"
    else:
        text = "success" if entry.states is None else f"success, {entry.states:,} states"
    for x in getattr(entry, "liveness", ()):
        text += "\n" + x.text()
    return text


def _liveness_found(lres: Any) -> str:
    out = []
    for v in lres.verdicts:
        if v.holds is None:
            out.append(f"{v.property} unknown")
        elif v.holds:
            out.append(f"{v.property} holds")
        else:
            n, loop = v.violation.length, v.violation.loop
            out.append(f"{v.property} broken in {n} ({'stutters' if loop == n else f'loop from {loop}'})")
    return "\n".join(out)


def found_text(result: Any) -> Text:
    if result is None:
        return Text("crashed", style="bold red")
    if result.outcome == "safety_failure" and result.violations:
        v = result.violations[0]
        return Text(f"{v.property} in {v.length}", style="red")
    if result.outcome == "success":
        return Text("success", style="green")
    return outcome_text(result.outcome)


def gate_table(rows: Sequence[dict[str, Any]]) -> Table:
    """``rows``: dicts with entry, result (or None if the run crashed), mismatches."""
    table = Table(title="Gate", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    table.add_column("model", style="bold", no_wrap=True)
    table.add_column("expected", overflow="fold")
    table.add_column("found", overflow="fold")
    table.add_column("states", justify="right")
    table.add_column("seconds", justify="right", no_wrap=True)
    table.add_column("verdict", justify="center", no_wrap=True)
    unpinned = False
    for row in rows:
        entry, result = row["entry"], row["result"]
        states = Text("-")
        if result is not None:
            states = Text(f"{result.distinct_states:,}")
            if entry.expect == "success" and entry.states is None and result.outcome == "success":
                states.append("*", style="dim")
                unpinned = True
        found = found_text(result)
        if row.get("liveness") is not None:
            found.append("\n" + _liveness_found(row["liveness"]))
        table.add_row(
            entry.name,
            expectation(entry),
            found,
            states,
            "-" if result is None else f"{result.seconds:.2f}",
            Text("PASS", style="bold green") if not row["mismatches"] else Text("FAIL", style="bold red"),
        )
    if unpinned:
        table.caption = "* not pinned in specs/models.toml"
        table.caption_justify = "left"
        table.caption_style = "dim"
    return table
