"""``--verbose``: the whole state in view, step by step.

The trace table (isrcheck.render.tables.trace_table) shows the few columns that tell most
stories; a step that changes only something else (a request queue, the leader's view of a
follower's log end offset, the controller's replica states, the budget) looks there as if nothing
happened. These tables show every field (isrcheck.render.statefields derives them from the state's
structure): the initial state in full, then for each step every field that changed, grouped by
partition, broker, controller, queues, store and budget. Values fold rather than widen the table,
so it fits the console's width.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from isrcheck.engine.checker import Step
from isrcheck.model.extension import Extension
from isrcheck.render.statefields import ABSENT, changes, fields, group_rank
from isrcheck.render.tablefit import fit_width
from isrcheck.render.tables import LOOP_MARK

__all__ = ["changes_table", "initial_state_table", "print_verbose", "verbose_tables"]

NO_CHANGE = "(no change)"
LEGEND = ("b1: broker 1, p0: partition 0; requests: ce controller epoch, p partition, le leader epoch, "
          "zkv znode version, AR assigned replicas; " + ABSENT + ": the state has no such field")


def initial_state_table(state: object, title: str = "Initial state, every field",
                        extension: Extension | None = None) -> Table:
    """One row per group: its fields as ``name=value``, folded to the width available."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", header_style="bold")
    table.add_column("where", style="bold", no_wrap=True)
    table.add_column("fields", overflow="fold", ratio=1)
    rows = sorted(fields(state, extension), key=lambda f: group_rank(f.group))  # stable: structure order within a group
    for group, items in groupby(rows, key=lambda f: f.group):
        text = Text()
        for i, f in enumerate(items):
            if i:
                text.append("  ")
            text.append(f"{f.name}=", style="dim")
            text.append(f.value)
        table.add_row(Text(group), text)
    return table


def changes_table(trace: Sequence[Step], title: str = "Every change, step by step", loop: int | None = None,
                  extension: Extension | None = None) -> Table:
    """For each step after the first, a row with its action, then every field that changed (where it
    lives, its name, ``before`` and ``after``), grouped. A step that changed nothing (a stutter, or a
    lasso's step back into an equal state) says so; a step with no successor state (an illegal
    transition) says that."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left", header_style="bold")
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("action / where", overflow="fold")
    table.add_column("field", no_wrap=True)
    table.add_column("before", overflow="fold", ratio=1)
    table.add_column("after", overflow="fold", ratio=1)
    prev = None
    for n, st in enumerate(trace):
        number = f"{LOOP_MARK} {n}" if loop is not None and n == loop else str(n)
        if st.state is None:
            table.add_row(number, Text(str(st.action), style="bold"), "",
                          Text("illegal transition: no successor state", style="bold red"), "", end_section=True)
            continue
        if prev is None:
            prev = st.state
            continue
        found = changes(prev, st.state, extension)
        prev = st.state
        if not found:
            table.add_row(number, Text(str(st.action), style="bold"), Text(NO_CHANGE, style="dim"), "", "",
                          end_section=True)
            continue
        table.add_row(number, Text(str(st.action), style="bold"), "", "", "")
        last_group = None
        for i, c in enumerate(found):
            table.add_row(
                "",
                Text("  " + c.group, style="cyan") if c.group != last_group else "",
                Text(c.name),  # Text, not a str: "[p0]" is not rich markup
                Text(c.before, style="dim" if c.before == ABSENT else ""),
                Text(c.after, style="dim" if c.after == ABSENT else "bold yellow"),
                end_section=i == len(found) - 1,
            )
            last_group = c.group
    return table


def verbose_tables(trace: Sequence[Step], loop: int | None = None,
                   extension: Extension | None = None) -> list[RenderableType]:
    """What ``--verbose`` adds below a trace table: the initial state in full, then the changes (a
    variant's fields by the names its ``extension`` declares)."""
    first = next((st.state for st in trace if st.state is not None), None)
    if first is None:
        return []
    return [initial_state_table(first, extension=extension), changes_table(trace, loop=loop, extension=extension),
            Text(LEGEND, style="dim")]


def print_verbose(console: Console, trace: Sequence[Step], loop: int | None = None,
                  extension: Extension | None = None) -> None:
    """``--verbose``: below a trace table, every field of the initial state and every field each
    step changed (verbose_tables), folded to fit_width."""
    for item in verbose_tables(trace, loop=loop, extension=extension):
        console.print(item, width=fit_width(console))
    console.print()
