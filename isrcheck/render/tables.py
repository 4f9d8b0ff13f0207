"""What the user reads on the terminal: the configuration line, trace tables, result summaries,
the manifest and the gate table (JSON is :mod:`isrcheck.render.as_json`, consoles and progress
:mod:`isrcheck.render.terminal`). Nothing here decides a verdict.
"""
from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from isrcheck.engine.checker import CheckResult, Step, Violation
from isrcheck.invariants.properties import detail
from isrcheck.model.brokersets import members
from isrcheck.model.brokersets import render as render_set
from isrcheck.model.config import Config, settings
from isrcheck.model.extension import Extension, Scope
from isrcheck.model.records import render_log
from isrcheck.model.state import NO_LEADER, State
from isrcheck.render.statefields import variant_text
from isrcheck.render.tablefit import fit_width, print_wide

CHANGED = "bold yellow"
LOOP_MARK = "\u21ba"  # the row where a lasso's loop starts
DEAD = "red"
OUTCOME_STYLE = {
    "success": "bold green",
    "as_pinned": "bold green",
    "liveness_failure": "bold red",
    "not_as_pinned": "bold red",
    "safety_failure": "bold red",
    "vacuous": "bold magenta",
    "incomplete": "bold yellow",
}
OUTCOME_TEXT = {
    "success": "SUCCESS",
    "as_pinned": "AS PINNED",
    "liveness_failure": "LIVENESS FAILURE",
    "not_as_pinned": "NOT AS PINNED",
    "safety_failure": "SAFETY FAILURE",
    "vacuous": "VACUOUS",
    "incomplete": "INCOMPLETE",
}


# ============================================================================ configuration
def config_line(cfg: Config, shared_with: Config | None = None) -> str:
    """The configuration in one line, ``key=value`` for every key its metadata shows
    (model/config.py, KeyInfo.shown): the main bounds and the protocol generation always, every
    other key where it differs from the default; a reassignment as ``reassign:p0->[2,3]``.
    ``shared_with``: only the keys both configurations hold alike (``diff``'s header, whose two
    sides are named before it: ``diff kip-101 vs kip-279`` shows no generation of one side)."""
    other = None if shared_with is None else {s.name: s.value for s in settings(shared_with)}
    parts: list[str] = []
    for s in settings(cfg):
        if s.info.shown == "never" or (s.info.shown == "changed" and not s.changed):
            continue
        if other is not None and other[s.name] != s.value:
            continue
        if s.name == "operations.reassignments":
            parts += [f"reassign:p{r['partition']}->[{','.join(map(str, r['target']))}]" for r in s.value]
        else:
            parts.append(f"{s.name}={str(s.value).lower() if isinstance(s.value, bool) else s.value}")
    return " ".join(parts)


# ============================================================================ trace table
def _partition_fields(extension: Extension | None) -> list[Any]:
    """The variant's partition fields: a column each, beside the partition's own (an ELR set)."""
    return [] if extension is None else extension.of(Scope.PARTITION)


def state_cells(s: State, extension: Extension | None = None) -> tuple[list[str], list[bool]]:
    """Cell texts for one state, and for each cell whether it belongs to a dead broker."""
    cells: list[str] = []
    dead: list[bool] = []
    extra = _partition_fields(extension)
    for p, zp in enumerate(s.zk.partitions):
        if not zp.replicas:
            cells += ["-", "-", "-", "-"]
        else:
            cells += ["[" + ",".join(map(str, zp.replicas)) + "]",
                      str(zp.leader) if zp.leader != NO_LEADER else "none", render_set(zp.isr), str(zp.leader_epoch)]
        acked = list(members(s.ghost[p].acked))
        cells.append(",".join(f"m{i}" for i in acked) if acked else "-")
        cells += [variant_text(f, v) for f, v in zip(extra, zp.ext)]
        dead += [False] * (5 + len(extra))
    for br in s.brokers:
        for r in br.replicas:
            if r is None:
                cells += ["-", "-", "-"] if br.alive else ["down", "-", "-"]
            else:
                log = render_log(r.log)
                cells += [log if br.alive else f"{log} down", str(len(r.log)), str(r.hw)]
            dead += [not br.alive] * 3
    return cells, dead


def state_headers(s: State, extension: Extension | None = None) -> list[str]:
    multi = len(s.zk.partitions) > 1
    heads: list[str] = []
    extra = _partition_fields(extension)
    for p in range(len(s.zk.partitions)):
        pre = f"p{p} " if multi else ""
        heads += [f"{pre}AR", f"{pre}leader", f"{pre}ISR", f"{pre}epoch", f"{pre}acked"]
        heads += [f"{pre}{f.name}" for f in extra]
    for i, br in enumerate(s.brokers):
        for p in range(len(br.replicas)):
            pre = f"b{i + 1}/p{p}" if multi else f"b{i + 1}"
            heads += [f"{pre} log", "LEO", "HW"]
    return heads


def trace_table(trace: Sequence[Step], title: str = "", caption: str = "", loop: int | None = None,
                extension: Extension | None = None) -> Table:
    """One row per step: the action, each partition's AR/leader/ISR/epoch/acknowledged writes (from
    ZooKeeper and the ghost), and each replica's log, LEO and HW. Changed cells are highlighted,
    a dead broker's cells are red. ``loop`` (a lasso's): the row where the loop starts is marked,
    and a last row says the behaviour goes back there, or stutters, forever."""
    first = next(st.state for st in trace if st.state is not None)
    heads = state_headers(first, extension)
    # Text, not str: a title or caption is plain text ("[examples/v.py:X]" is a variant, not markup)
    table = Table(title=Text(title) if title else None, caption=Text(caption) if caption else None,
                  box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", caption_justify="left",
                  header_style="bold")
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
        cells, dead = state_cells(st.state, extension)
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


def violation_title(v: Violation) -> str:
    if v.kind == "liveness" and v.loop is not None:
        stem = v.loop
        cycle = v.length - v.loop
        shape = ("then it stutters forever" if cycle == 0
                 else f"then a loop of {cycle} step{'s' if cycle != 1 else ''} repeats forever")
        return f"Lasso: {v.property} broken: a stem of {stem} step{'s' if stem != 1 else ''}, {shape}"
    what = "illegal transition" if v.kind == "transition" and v.trace and v.trace[-1].state is None else "violated"
    return f"Counterexample: {v.property} {what} after {v.length} step{'s' if v.length != 1 else ''}"


def violation_table(v: Violation, description: str = "", extension: Extension | None = None) -> Table:
    caption = f"{v.property}: {description}" if description else ""
    why = v.message or detail(v)  # an illegal move's own message, else the values that broke the property
    if why:
        caption = f"{caption}\n{why}" if caption else why
    caption = (caption + "\n" if caption else "") + "yellow: changed since the previous step; red: broker down"
    if v.kind == "liveness":
        caption += f"; {LOOP_MARK}: where the loop starts"
    return trace_table(v.trace, title=violation_title(v), caption=caption, loop=v.loop, extension=extension)


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
        if count:
            table.add_row(name, f"{count:,}")
        else:  # a budgeted action never taken: the budget proved nothing
            table.add_row(Text(name, style="magenta"), Text("0 (never taken)", style="magenta"))
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


def overall_lines(label: str, verdict: dict[str, Any], result: Any, lres: Any = None,
                  pinned_in: str = "specs/models.toml") -> list[RenderableType]:
    """The last line of a check: the one verdict (safety, liveness, vacuity and the manifest's pins
    together; ``verdict`` as isrcheck/commands/verdict.py words it in JSON). With no liveness, no
    warning and no pin that changes the reading, the safety line above already says it all and
    nothing is added."""
    broken_live = [v.property for v in (lres.verdicts if lres is not None else []) if v.holds is False]
    found, outcome, pins = verdict["found"], verdict["outcome"], verdict.get("pins")
    if lres is None and not verdict["warnings"] and pins is None and found == result.outcome:
        return []
    line = Text(f"{label}: verdict ")
    line.append_text(outcome_text(found if outcome == "as_pinned" else outcome))
    if outcome == "as_pinned":
        line.append(" as pinned", style="bold green")
    parts = []
    if found == "safety_failure" and result.violations:
        parts.append(", ".join(dict.fromkeys(v.property for v in result.violations)) + " broken")
    if broken_live:
        parts.append(", ".join(broken_live) + " broken (liveness)")
    if found == "vacuous" and verdict["warnings"] and verdict.get("strict"):
        parts.append(f"{len(verdict['warnings'])} part(s) of the configuration never took effect (--strict)")
    if found == "success":
        parts.append("safety" + (" and liveness" if lres is not None else "") + " hold")
    if outcome == "as_pinned":
        parts.append(f"as {pinned_in} expects it")
    elif pins is not None and pins["mismatches"]:
        parts.append(f"differs from {pinned_in}: " + "; ".join(pins["mismatches"]))
    if verdict["warnings"] and not verdict.get("strict"):
        parts.append(f"{len(verdict['warnings'])} warning(s) above (--strict: fail on them)")
    if parts:
        line.append(" - " + "; ".join(parts))
    return [line]


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


def plain_text(renderable: RenderableType, width: int = 120) -> str:
    """A renderable as plain text at ``width`` columns (a trace table stacked to fit, as on a pipe):
    for files that are not a terminal, such as a JUnit failure's body."""
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False, soft_wrap=False)
    print_wide(console, renderable)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines())  # type: ignore[attr-defined]


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
