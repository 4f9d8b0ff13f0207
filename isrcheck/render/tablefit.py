"""Fitting wide tables to a width by stacking groups of columns, never by dropping or eliding cells.

A counterexample table has one group of columns per partition and per broker; with three brokers it
is about 140 columns wide, and rich, asked to print it in 120, would shrink cells to ``…`` or let
whole columns vanish. Here the table is cut into *panels*: each repeats the leading columns (the
step number and action) and carries as many whole groups as fit, and the panels are printed one
below the other. Every cell is printed once, whole.
"""
from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable, Sequence

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

__all__ = ["TABLE_WIDTH", "column_groups", "fit_width", "measure", "print_wide", "split_columns",
           "trace_group_start"]

TABLE_WIDTH = 120  # trace tables fit this when the console is not a terminal (see fit_width)

WIDE = 10_000  # a width at which nothing wraps: what a table needs when it may take all it wants


def measure(console: Console, table: Table) -> int:
    """The width ``table`` takes when nothing constrains it."""
    return console.measure(table, options=console.options.update(width=WIDE)).maximum


def trace_group_start(header: str) -> bool:
    """Where a group of the trace table starts: a partition's AR, or a replica's log column."""
    return header.endswith(("AR", " log"))


def column_groups(table: Table, fixed: int, starts: Callable[[str], bool]) -> list[list[int]]:
    """The column indices after the ``fixed`` leading ones, grouped: a group starts at a column
    whose header satisfies ``starts`` (the columns before the first such one form a group too)."""
    groups: list[list[int]] = []
    for i in range(fixed, len(table.columns)):
        header = str(table.columns[i].header)
        if not groups or starts(header):
            groups.append([])
        groups[-1].append(i)
    return groups


def _panel(table: Table, indices: Sequence[int], title: str | None, caption: str | None) -> Table:
    panel = copy.copy(table)
    panel.columns = [dataclasses.replace(table.columns[i], _index=n) for n, i in enumerate(indices)]
    panel.title = title
    panel.caption = caption
    panel.show_edge = False  # the edges of a borderless box are blank columns: two fewer to fit
    return panel


def _group_name(table: Table, group: Sequence[int]) -> str:
    header = str(table.columns[group[0]].header)
    return header.removesuffix(" log")


def split_columns(console: Console, table: Table, width: int, fixed: int = 2,
                  starts: Callable[[str], bool] = trace_group_start) -> list[Table]:
    """``table`` as panels no wider than ``width`` where possible: the ``fixed`` leading columns in
    each, then whole column groups, packed in order. A group too wide on its own gets a panel of its
    own (wider than ``width``: cut, its cells would lie). The first panel keeps the title, the last
    the caption; the others are titled with the groups they continue with. Panels have no edge
    columns (blank in the trace table's box anyway)."""
    if measure(console, table) <= width or len(table.columns) <= fixed:
        return [table]
    head = list(range(fixed))
    packs: list[list[list[int]]] = []
    for group in column_groups(table, fixed, starts):
        if packs:
            trial = head + [i for g in packs[-1] for i in g] + group
            if measure(console, _panel(table, trial, None, None)) <= width:
                packs[-1].append(group)
                continue
        packs.append([group])
    panels = []
    for n, pack in enumerate(packs):
        indices = head + [i for g in pack for i in g]
        title = table.title if n == 0 else f"(continued: {', '.join(_group_name(table, g) for g in pack)})"
        caption = table.caption if n == len(packs) - 1 else None
        panels.append(_panel(table, indices, title, caption))  # type: ignore[arg-type]
    return panels


# ---------------------------------------------------------------------------- printing
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
    partition and broker column groups, each repeating the step and action (split_columns).
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
