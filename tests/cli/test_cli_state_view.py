"""The whole state in view: `check --verbose`, every field derived from the state's structure, and
no step of a counterexample that changed the state rendered as "no change"."""
from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.model.state import (
    Broker,
    Budget,
    Controller,
    Ghost,
    Replica,
    State,
    Zk,
    ZkPartition,
)
from rich.table import Table

from isrcheck.inputs import manifest
from isrcheck.render.changes import NO_CHANGE, changes_table, initial_state_table
from isrcheck.render.statefields import ABSENT, REQUEST_ABBREVIATIONS, changes, fields

from shared import reachable_states

MODELS = ["hw-truncation-one-crash", "deposed-controller-reassignment", "unclean-election", "failover-misses-crash",
          "lossy-undetected-restart", "reassignment-target-crash"]


def _counterexample(name: str) -> list[Any]:
    e = manifest.get(name)
    model = build_model(e.config, symmetry=e.symmetry, properties=list(e.properties) if e.properties else None)
    result = Checker(model).run()
    assert result.outcome == "safety_failure" and result.violations, name
    return result.violations[0].trace


@pytest.fixture(scope="module")
def traces() -> dict[str, list[Any]]:
    return {name: _counterexample(name) for name in MODELS}


def _step_rows(table: Table) -> dict[int, list[tuple[str, ...]]]:
    """The changes table's rows by step: (where, field, before, after) of each row after the action's."""
    cols = [[c.plain if hasattr(c, "plain") else str(c) for c in col.cells] for col in table.columns]
    rows = list(zip(*cols))
    out: dict[int, list[tuple[str, ...]]] = {}
    step = -1
    where = ""
    for number, action, field, before, after in rows:
        if number.strip():
            step = int(number.split()[-1])
            out[step] = []
            if field or before:  # "(no change)" or the illegal transition sit on the action's row
                out[step].append(("", field, before, after))
            continue
        where = action.strip() or where
        out[step].append((where, field, before, after))
    return out


# ---------------------------------------------------------------------------- every step shows its change
@pytest.mark.parametrize("name", MODELS)
def test_every_step_that_changes_the_state_renders_a_changed_field(traces, name):
    trace = traces[name]
    rows = _step_rows(changes_table(trace))
    for n in range(1, len(trace)):
        before, after = trace[n - 1].state, trace[n].state
        if after is None:  # the illegal transition that ends an OnlyValidTransitions counterexample
            assert "illegal transition" in rows[n][0][2]
            continue
        found = changes(before, after)
        if before != after:
            assert found, f"{name} step {n} ({trace[n].action}) changed the state but renders no field"
            assert rows[n] and all(r[1] and r[1] != NO_CHANGE for r in rows[n]), (name, n, rows[n])
            assert [(c.group, c.name, c.before, c.after) for c in found] == rows[n]
        else:
            assert not found and rows[n] == [("", NO_CHANGE, "", "")]


def test_hw_truncation_step_3_shows_the_leaders_view_of_the_follower(traces):
    trace = traces["hw-truncation-one-crash"]
    assert str(trace[3].action) == "Fetch(2, 0)"
    rows = _step_rows(changes_table(trace))
    assert ("broker 1", "replicas[p0].remote_leo[b2]", "0", "1") in rows[3]


def test_deposed_controller_steps_15_and_16_show_the_stale_controllers_steps(traces):
    trace = traces["deposed-controller-reassignment"]
    rows = _step_rows(changes_table(trace))
    for n, (old, new) in ((15, ("3", "4")), (16, ("4", "5"))):
        assert str(trace[n].action).startswith("ReassignPartition(1, 0, ")
        assert ("stale controller", "reassign_step[p0]", old, new) in rows[n]
    # the failover's requests are in the queues, one request per line
    queued = [r for n in rows for r in rows[n] if r[0] == "queues" and r[1].startswith("inbox[")]
    assert any("LeaderAndIsr(ce=2 p=0" in r[3] for r in queued)


def test_no_two_states_of_a_model_render_alike():
    """Not only counterexamples: over every reachable state of a small model (lossy crashes and
    undetected restarts, so queues, checkpoints and remote LEOs all move), two different states
    never render alike, so no change between any two of them can render as none."""
    e = manifest.get("lossy-undetected-restart")
    model = build_model(e.config, symmetry=False)
    seen = reachable_states(model)
    rendered: dict[tuple[tuple[str, str, str], ...], Any] = {}
    for s in seen:
        key = tuple((f.group, f.name, f.value) for f in fields(s))
        assert rendered.setdefault(key, s) == s, "two different states render alike"
    assert len(seen) > 2000 and len(rendered) == len(seen)


# ---------------------------------------------------------------------------- fields come from the structure
def _named(state: State) -> set[str]:
    """The last field name of every leaf's name: ``replicas[p0].remote_leo[b2]`` -> ``remote_leo``."""
    out = set()
    for f in fields(state):
        out.add(f.name.split(".")[-1].split("[")[0])
    return out


def test_every_field_of_every_state_type_is_shown(traces):
    names: set[str] = set()
    values: list[str] = []
    for trace in traces.values():
        for st in trace:
            if st.state is not None:
                names |= _named(st.state)
                values += [f.value for f in fields(st.state)]
    for cls in (Zk, ZkPartition, Controller, Replica, Broker, Ghost, Budget):
        # containers are expanded; ``ext`` holds a variant's values, shown by their declared names when
        # a variant has fields (tests/cli/test_variant_state.py) and nothing for the model's own ()
        missing = set(cls._fields) - names - {"partitions", "replicas", "brokers", "ext"}
        assert not missing, (cls.__name__, missing)
    assert {"inbox", "reassignments", "stale"} <= names
    requests = [v for v in values if v.startswith("LeaderAndIsr(")]
    assert requests
    for short in REQUEST_ABBREVIATIONS.values():
        assert any(f"{short}=" in v for v in requests), short


class _BudgetWithMore(NamedTuple):
    crashes: int
    brand_new_budget: tuple[int, ...]


def test_a_new_field_is_never_silently_hidden(traces):
    s = traces["hw-truncation-one-crash"][0].state
    grown = s._replace(budget=_BudgetWithMore(1, (4, 5)))
    assert ("budget", "brand_new_budget", "[4,5]") in [(f.group, f.name, f.value) for f in fields(grown)]
    # a new top-level field of State, too
    wider = NamedTuple("State", [(f, object) for f in State._fields] + [("novel_thing", int)])  # type: ignore[misc]
    w0, w1 = wider(*s, 7), wider(*s, 8)
    assert [(c.group, c.name, c.before, c.after) for c in changes(w0, w1)] == [("novel_thing", "novel_thing", "7", "8")]


def test_fields_missing_on_one_side_change_from_or_to_absent(traces):
    trace = traces["deposed-controller-reassignment"]
    failover = next(n for n, st in enumerate(trace) if str(st.action) == "ControllerFailover()")
    found = changes(trace[failover - 1].state, trace[failover].state)
    stale = [c for c in found if c.group == "stale controller"]
    assert ("stale", "none", ABSENT) in [(c.name, c.before, c.after) for c in stale]
    assert ("epoch", ABSENT, "1") in [(c.name, c.before, c.after) for c in stale]


def test_initial_state_table_lists_every_field(traces):
    s = traces["hw-truncation-one-crash"][0].state
    table = initial_state_table(s)
    groups = [c.plain for c in table.columns[0].cells]
    assert groups[:3] == ["partition 0", "broker 1", "broker 2"]
    text = " ".join(c.plain for c in table.columns[1].cells)
    for f in fields(s):
        assert f"{f.name}={f.value}" in text
