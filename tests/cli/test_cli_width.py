"""Tables fit 80 and 120 columns without losing a value: trace tables stack their broker groups,
the verbose tables fold values, `isrcheck list` falls back to one block per model."""
from __future__ import annotations

import io
from collections import Counter

import pytest
from isrcheck.invariants import build_model
from isrcheck.model.action_text import parse_all
from isrcheck.engine.checker import Checker, replay_actions
from isrcheck.model.config import from_mapping
from rich.console import Console

from isrcheck.inputs import manifest
from isrcheck.render import changes, tablefit, tables
from isrcheck.render.statefields import fields
from isrcheck.render.tablefit import measure

WIDTHS = [80, 120]


def _console(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, color_system=None, highlight=False)


def _text(console: Console) -> str:
    return console.file.getvalue()  # type: ignore[attr-defined]


def _counterexample(name: str) -> list:
    e = manifest.get(name)
    return Checker(build_model(e.config, symmetry=e.symmetry)).run().violations[0].trace


def _replayed(raw: dict, steps: list[str]) -> list:
    return replay_actions(build_model(from_mapping(raw), symmetry=False), parse_all(steps))


TRACES = {
    "three brokers": lambda: _counterexample("hw-truncation-one-crash"),
    "five brokers": lambda: _replayed({"brokers": 5, "replication_factor": 5, "max_records": 2,
                                       "faults": {"crashes": 1}},
                                      ["Produce(1, 0)", "Fetch(2, 0)", "Fetch(5, 0)", "Crash(1)",
                                       "ProcessBrokerChange(1)"]),
    "two partitions": lambda: _replayed({"brokers": 3, "partitions": 2, "replication_factor": 3, "max_records": 1},
                                        ["Produce(1, 0)", "Produce(2, 1)", "Fetch(3, 0)"]),
}


def _cell_text(cell) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", list(TRACES))
def test_trace_tables_fit_and_keep_every_cell(which, width):
    trace = TRACES[which]()
    table = tables.trace_table(trace, title="a title", caption="a caption")
    assert measure(_console(width), table) > 120  # wide enough to need folding at both widths
    console = _console(width)
    tablefit.print_wide(console, table)
    out = _text(console)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    rows = list(zip(*[[_cell_text(c) for c in col.cells] for col in table.columns]))
    for n, row in enumerate(rows):  # row by row: each cell once, the step and action once per panel
        got = [line for line in lines if line.split()[:1] == [str(n)]]
        panels = len(got)
        assert panels >= 1
        expected = Counter(" ".join(row[:2]).split() * panels) + Counter(" ".join(row[2:]).split())
        assert Counter(" ".join(got).split()) == expected, (which, width, n)
    for col in table.columns[2:]:  # every header is printed (LEO/HW once per broker)
        assert str(col.header) in out
    assert "a title" in out and "a caption" in out


def test_a_table_that_fits_is_printed_as_before():
    trace = TRACES["three brokers"]()
    table = tables.trace_table(trace)
    wide, plain = _console(200), Console(file=io.StringIO(), width=200, color_system=None, highlight=False)
    plain.print(table)
    tablefit.print_wide(wide, table)
    assert _text(wide) != _text(plain)  # 141 columns: folded to 120 when the console is not a terminal
    assert max(len(line) for line in _text(wide).splitlines()) <= tablefit.TABLE_WIDTH
    small = tables.trace_table(_replayed({"brokers": 2, "replication_factor": 2, "max_records": 1}, ["Produce(1, 0)"]))
    c1, c2 = _console(120), _console(120)
    tablefit.print_wide(c1, small)
    c2.print(small)
    assert _text(c1) == _text(c2)


@pytest.mark.parametrize("width", WIDTHS)
def test_verbose_tables_fit_and_name_every_changed_field(width):
    trace = _counterexample("deposed-controller-reassignment")
    console = _console(width)
    changes.print_verbose(console, trace)
    out = _text(console)
    assert max(len(line) for line in out.splitlines()) <= width
    names = {f.name for st in trace if st.state is not None for f in fields(st.state)}
    shown = set(out.split())
    assert {"reassign_step[p0]", "replica_states[p0][b2]", "inbox[b1]"} <= names & shown


def _tokens(*texts: str) -> Counter:
    return Counter(" ".join(texts).split())


@pytest.mark.parametrize("width", WIDTHS)
def test_list_fits_and_keeps_every_value(width):
    entries = manifest.load()
    console = _console(width)
    tables.print_manifest(console, entries)
    out = _text(console)
    assert max(len(line) for line in out.splitlines()) <= width
    for e in entries:
        assert e.name in out
    want: Counter = Counter()
    for e in entries:
        want += _tokens(e.name, e.gate, e.expect, e.description, e.property or "",
                        "" if e.length is None else str(e.length), "" if e.states is None else f"{e.states:,}")
    got = Counter(out.replace(":", " ").split()) + Counter(out.split())
    assert not want - got, want - got
    if width == 80:  # the table needs more: one block per model, and a line saying so
        assert "one model per block" in out and "--json" in out
    else:
        assert "name / description" in out


def test_list_on_an_80_column_terminal(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = cli("list").stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    assert all(e.name in out for e in manifest.load())


@pytest.mark.parametrize("width", WIDTHS)
def test_check_fits_the_terminal(cli, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    res = cli("check", "hw-truncation-one-crash", "--verbose")
    assert res.exit_code == 0  # the pinned failure, as pinned
    lines = res.stdout.splitlines()
    table_lines = lines[: lines.index(next(x for x in lines if x.startswith("Coverage")))]
    assert max(len(line) for line in table_lines) <= width
    assert "b3 log" in res.stdout and "replicas[p0].remote_leo[b2]" in res.stdout


# ---------------------------------------------------------------------------- whole commands (issue 31)
@pytest.mark.parametrize("columns", [None, "80"])
def test_check_and_gate_output_fit_the_width(cli, monkeypatch, columns):
    """Piped, the gate table was 177 columns and the `fairness` and `liveness graph` lines about
    200; every line now fits 120 columns on a pipe, or the terminal's width (COLUMNS)."""
    limit = 120
    if columns is not None:
        monkeypatch.setenv("COLUMNS", columns)
        limit = int(columns)
    for args in (["check", "undetected-restart"], ["gate", "undetected-restart"]):
        res = cli(*args)
        assert res.exit_code == 0, res.output
        wide = [line for line in res.stdout.splitlines() if len(line) > limit]
        assert not wide, (args, wide)
    # folded, not cut: every word is still there
    out = " ".join(cli("check", "undetected-restart").stdout.split())
    assert "fairness weak fairness of every instance of DeliverRequest" in out and "Reregister" in out
    gate = cli("gate", "undetected-restart").stdout
    if columns is None:  # at 80 the cells fold inside words, side by side
        assert "WriteEventuallyCommitted broken in 3 (stutters)" in " ".join(gate.split())
    assert "lyCommitted" in gate and "gate passed" in gate
