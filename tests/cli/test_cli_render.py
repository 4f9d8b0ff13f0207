"""isrcheck.render (json_form, tables): JSON of states and results, and the trace table."""
from __future__ import annotations

import io
import json

from rich.console import Console

from isrcheck.render import json_form, tables
from isrcheck.invariants import build_model
from isrcheck.model.action_text import parse_all
from isrcheck.model.actions import Action
from isrcheck.engine.checker import Checker, CheckResult, Step, Violation, replay_actions
from isrcheck.model.config import from_mapping

SMALL = {"brokers": 3, "max_records": 1}
SMALL_CRASH = {"brokers": 3, "max_records": 1, "faults": {"crashes": 1}}


def _trace(raw, steps):
    model = build_model(from_mapping(raw))
    return replay_actions(model, parse_all(steps))


def _plain(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def test_state_to_json_is_plain_and_readable():
    steps = _trace(SMALL_CRASH, ["Produce(1, 0)", "Fetch(2, 0)", "Crash(1)", "ProcessBrokerChange(1)"])
    doc = json_form.state_to_json(steps[-1].state)
    assert _plain(doc)
    text = json.dumps(doc)
    for repr_fragment in ("State(", "Replica(", "PartitionState", "<", "(("):
        assert repr_fragment not in text
    zk = doc["zk"]
    assert zk["live"] == [2, 3]
    part = zk["partitions"][0]
    assert part["replicas"] == [1, 2, 3] and part["leader"] in (2, 3) and 1 not in part["isr"]
    assert doc["controller"]["partition_states"]["0"] == "OnlinePartition"
    assert doc["controller"]["replica_states"]["0"]["1"] == "OfflineReplica"
    b1, b2 = doc["brokers"][0], doc["brokers"][1]
    assert b1["id"] == 1 and b1["alive"] is False
    assert b2["replicas"]["0"]["log"] == [{"id": 1, "epoch": 0}]
    assert b2["replicas"]["0"]["leo"] == 1
    assert any(r["type"] == "LeaderAndIsr" for b in doc["brokers"] for r in b["inbox"])
    assert doc["budget"]["crashes"] == 0


def test_result_to_json_with_an_illegal_transition():
    # a ModelFault violation ends with a step that has no state
    model = build_model(from_mapping(SMALL))
    s0 = model.init_states()[0]
    v = Violation("OnlyValidTransitions", "transition", [Step(None, s0), Step(Action("Crash", (1,)), None)],
                  "illegal partition transition")
    result = CheckResult("safety_failure", 1, 0, 0.0, 0, violations=[v])
    doc = json_form.result_to_json("x", model.config, result)
    json.dumps(doc)
    assert doc["violations"][0]["trace"][1] == {"step": 1, "action": {"name": "Crash", "args": [1]}, "state": None}
    assert doc["violations"][0]["length"] == 1
    out = _render(tables.violation_table(v, "desc"))
    assert "illegal transition" in out and "Crash(1)" in out


def _render(renderable) -> str:
    buf = io.StringIO()
    Console(file=buf, width=250, color_system=None).print(renderable)
    return buf.getvalue()


def _column(table, header):
    col = next(c for c in table.columns if c.header == header)
    return list(col.cells)


def test_trace_table_highlights_changes_and_dead_brokers():
    steps = _trace(SMALL_CRASH, ["Produce(1, 0)", "Fetch(2, 0)", "Crash(1)"])
    table = tables.trace_table(steps)
    b1 = _column(table, "b1 log")
    b2 = _column(table, "b2 log")
    assert [c.plain for c in b1] == ["[]", "[m1@e0]", "[m1@e0]", "[m1@e0] down"]
    assert b1[0].style == ""  # nothing to compare the first row with
    assert b1[1].style == tables.CHANGED  # Produce appended on broker 1
    assert b2[1].style == ""  # broker 2 unchanged by Produce
    assert b2[2].style == tables.CHANGED  # ... and changed by Fetch
    assert b1[3].style == tables.CHANGED  # the crash changes broker 1's cell
    leo = _column(table, "LEO")  # the first LEO column is broker 1's
    assert [c.plain for c in leo] == ["0", "1", "1", "1"]
    assert leo[3].style == tables.DEAD  # unchanged, but broker 1 is down
    actions = [c.plain for c in table.columns[1].cells]
    assert actions == ["(initial state)", "Produce(1, 0)", "Fetch(2, 0)", "Crash(1)"]


def test_trace_table_multi_partition_headers():
    steps = _trace({"brokers": 3, "partitions": 2, "replication_factor": 2, "max_records": 1}, ["Produce(1, 0)"])
    out = _render(tables.trace_table(steps))
    assert "p0 leader" in out and "p1 ISR" in out and "b1/p0 log" in out


def test_check_summary_mentions_unwitnessed_properties():
    result = CheckResult("vacuous", 10, 2, 0.01, 20, unwitnessed=["WriteCommitted"], coverage={"Fetch": 3})
    out = "\n".join(_render(r) for r in tables.check_summary("m", result))
    assert "VACUOUS" in out and "WriteCommitted" in out and "Fetch" in out


def test_summary_of_a_real_run():
    result = Checker(build_model(from_mapping(SMALL))).run()
    out = "\n".join(_render(r) for r in tables.check_summary("small", result))
    assert f"{result.distinct_states:,}" in out and "SUCCESS" in out and "states/s" in out


def test_config_line():
    line = tables.config_line(from_mapping({**SMALL, "faults": {"crashes": 1}, "unclean_leader_election": True}))
    assert "brokers=3" in line and "faults.crashes=1" in line and "unclean_leader_election=true" in line


def test_config_line_names_the_generation_and_every_protocol_option_that_differs():
    """The header reads the configuration's metadata: the generation always, then each option that
    differs from its default, which it did not print before (acks, the fenced options, ...)."""
    default = tables.config_line(from_mapping(SMALL))
    assert "generation=high-watermark" in default
    assert "acks=" not in default and "fenced_controller_writes" not in default
    line = tables.config_line(from_mapping({**SMALL, "generation": "kip-320", "acks": "1",
                                            "fenced_controller_writes": True, "detect_restarts": True,
                                            "controller_connections": "per-controller", "max_fetch_records": 1}))
    for shown in ("generation=kip-320", "acks=1", "fenced_controller_writes=true", "detect_restarts=true",
                  "controller_connections=per-controller", "max_fetch_records=1"):
        assert shown in line, (shown, line)
    assert line.startswith("brokers=3 partitions=1 replication_factor=3 max_records=1 ")


def test_config_line_shared_with_leaves_out_what_the_sides_do_not_share():
    a = from_mapping({**SMALL, "generation": "kip-101"})
    b = from_mapping({**SMALL, "generation": "kip-279"})
    assert "generation" not in tables.config_line(a, shared_with=b)
    assert tables.config_line(a, shared_with=a) == tables.config_line(a)
