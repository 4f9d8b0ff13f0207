"""Trace files: JSON lines and ITF, written from the checker and read back strictly."""
from __future__ import annotations

import json

import pytest

from isrcheck import __version__
from isrcheck.inputs import manifest
from isrcheck.conformance.export import export, numbered
from isrcheck.conformance.traces import (
    TraceError,
    dumps_itf,
    dumps_jsonl,
    load_trace,
    loads_trace,
)


@pytest.fixture(scope="module")
def ce(ce_trace):
    return ce_trace("hw-truncation-one-crash")


def test_counterexample_header_carries_config_generation_seed_and_version(ce):
    head = json.loads(dumps_jsonl(ce).split("\n")[0])
    assert head["format"] == "isrcheck-trace" and head["version"] == 1
    assert head["tool"] == "isrcheck" and head["tool_version"] == __version__
    assert head["kind"] == "counterexample" and head["model"] == "hw-truncation-one-crash"
    assert head["property"] == "NoCommittedWriteLost" and head["generation"] == "high-watermark"
    assert "seed" in head and head["config"]["faults"]["crashes"] == 1
    assert head["steps"] == 8 == len(ce.steps) - 1


def test_jsonl_has_one_line_per_step_with_index_action_observation(ce):
    lines = dumps_jsonl(ce).strip().split("\n")
    assert len(lines) == 1 + 9
    first, second = json.loads(lines[1]), json.loads(lines[2])
    assert first["index"] == 0 and first["action"] is None
    assert second["index"] == 1 and second["action"] == {"name": "Produce", "args": [1, 0]}
    assert set(second) == {"index", "action", "observation", "acked"}


@pytest.mark.parametrize("fmt", ["jsonl", "itf"])
def test_round_trip(ce, fmt):
    text = dumps_itf(ce) if fmt == "itf" else dumps_jsonl(ce)
    back = loads_trace(text, "t")
    assert back.config == ce.config and back.kind == ce.kind and back.prop == ce.prop
    assert [(s.index, s.action, s.observation, s.acked) for s in back.steps] == \
           [(s.index, s.action, s.observation, s.acked) for s in ce.steps]


def test_itf_uses_the_itf_encodings(ce):
    doc = json.loads(dumps_itf(ce))
    assert doc["#meta"]["format"] == "ITF" and doc["#meta"]["isrcheck"]["generation"] == "high-watermark"
    assert doc["vars"] == ["mbt::actionTaken", "action", "observation", "acked"]
    s0, s1 = doc["states"][0], doc["states"][1]
    assert doc["#meta"]["isrcheck-itf"] == 2
    assert s0["#meta"] == {"index": 0} and s0["mbt::actionTaken"] == "init"
    assert s0["action"] == {"tag": "Init", "value": "U_OF_UNIT"}
    assert s1["action"] == {"tag": "Step", "value": {"name": "Produce",
                                                     "args": {"#tup": [{"#bigint": "1"}, {"#bigint": "0"}]}}}
    assert s1["observation"]["controller"]["epoch"] == {"#bigint": "1"}
    assert s1["observation"]["partitions"][0]["isr"] == {"#set": [{"#bigint": "1"}, {"#bigint": "2"}, {"#bigint": "3"}]}
    assert s1["observation"]["partitions"][0]["replicas"] == [{"#bigint": "1"}, {"#bigint": "2"}, {"#bigint": "3"}]
    assert s1["acked"] == [{"#set": []}]
    assert s1["observation"]["brokers"][0]["alive"] is True


def test_itf_accepts_plain_safe_integers(ce):
    doc = json.loads(dumps_itf(ce))
    doc["states"][1]["observation"]["controller"]["epoch"] = 1
    assert loads_trace(json.dumps(doc)).steps[1].observation["controller"]["epoch"] == 1


def test_export_writes_samples_for_a_passing_model(tmp_path):
    res = export(manifest.resolve("replication", None), tmp_path / "s.itf.json", n=3, seed=4, max_depth=10)
    assert res.kind == "sample" and len(res.files) == 3
    assert res.files[0].endswith("s-1.itf.json")
    t = load_trace(res.files[1])
    assert t.kind == "sample" and t.seed == 4 and 1 <= len(t.steps) - 1 <= 10
    again = export(manifest.resolve("replication", None), tmp_path / "t.jsonl", n=3, seed=4, max_depth=10)
    assert [x.actions for x in again.traces] == [x.actions for x in res.traces]  # seeded


def test_numbered_names():
    assert numbered("a/out.jsonl", 2).name == "out-2.jsonl"
    assert numbered("out.itf.json", 3).name == "out-3.itf.json"
    assert numbered("out", 1).name == "out-1"


# ---------------------------------------------------------------------------- rejection
def _lines(ce):
    return [json.loads(x) for x in dumps_jsonl(ce).strip().split("\n")]


def _text(lines):
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def _reject(text, *words):
    with pytest.raises(TraceError) as e:
        loads_trace(text, "f.jsonl")
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, msg
    return msg


def test_rejects_a_file_that_is_not_ours():
    _reject("hello world\n", "not an isrcheck trace")
    _reject('{"a": 1}\n', "line 1", "not an isrcheck trace")
    _reject('{"format": "other", "version": 1}\n', "not an isrcheck trace", "'other'")
    _reject('{"#meta": {"format": "ITF"}, "vars": ["x"], "states": []}', "no \"isrcheck\" header")
    _reject("", "empty")


def test_rejects_another_version(ce):
    lines = _lines(ce)
    lines[0]["version"] = 2
    _reject(_text(lines), "version 2 is not supported", "reads version 1")


def test_rejects_unknown_action_names_and_wrong_arity(ce):
    lines = _lines(ce)
    lines[2]["action"] = {"name": "Frobnicate", "args": [1]}
    _reject(_text(lines), "line 3", "unknown action", "specs/actions.toml")
    lines = _lines(ce)
    lines[2]["action"] = {"name": "Produce", "args": [1]}
    _reject(_text(lines), "line 3", "Produce takes 2 argument(s)")
    lines = _lines(ce)
    lines[2]["action"] = {"name": "Fetch", "args": [1, 0]}
    lines[3]["action"] = {"name": "Fetch", "args": [9, 0]}
    _reject(_text(lines), "line 4", "broker in 1..3")
    lines = _lines(ce)
    lines[2]["action"] = {"name": "Produce", "args": [True, 0]}
    _reject(_text(lines), "must be an integer")


def test_rejects_an_observation_breaking_the_schema(ce):
    lines = _lines(ce)
    lines[4]["observation"]["partitions"][0]["isr"] = [1, "2"]
    _reject(_text(lines), "line 5", "partitions[0].isr[1]")
    lines = _lines(ce)
    lines[4]["observation"]["controller"]["extra"] = 1
    _reject(_text(lines), "controller.extra", "unknown field")
    lines = _lines(ce)
    del lines[4]["observation"]["brokers"][1]
    _reject(_text(lines), "broker(s)")


def test_rejects_structure_errors(ce):
    lines = _lines(ce)
    lines[3]["index"] = 7
    _reject(_text(lines), "out of sequence")
    lines = _lines(ce)
    lines[1]["action"] = {"name": "Produce", "args": [1, 0]}
    _reject(_text(lines), "initial state")
    lines = _lines(ce)
    lines[0]["generation"] = "kip-320"
    _reject(_text(lines), "disagrees")
    lines = _lines(ce)
    lines[0]["steps"] = 3
    _reject(_text(lines), "announces 3")
    lines = _lines(ce)
    lines[0]["config"]["brokers"] = "three"
    _reject(_text(lines), "config")
    lines = _lines(ce)
    lines[2]["acked"] = [[2, 1]]
    _reject(_text(lines), "acked[0]")
    text = dumps_jsonl(ce).replace('"index":1,', '"index":1,"index":1,', 1)
    _reject(text, "duplicate key")
    _reject(dumps_jsonl(ce).replace('"hw":0', '"hw":NaN', 1), "not JSON")


def test_rejects_itf_values_we_do_not_write(ce):
    doc = json.loads(dumps_itf(ce))
    doc["states"][1]["observation"]["partitions"][0]["replicas"] = {"#set": []}
    _reject(json.dumps(doc), "#set")
    doc = json.loads(dumps_itf(ce))
    doc["states"][1]["observation"]["controller"]["live_brokers"] = []
    _reject(json.dumps(doc), "live_brokers: a set must be")
    doc = json.loads(dumps_itf(ce))
    doc["states"][1]["observation"]["controller"]["epoch"] = {"#bigint": "1x"}
    _reject(json.dumps(doc), "malformed #bigint")
    doc = json.loads(dumps_itf(ce))
    doc["states"][2]["mbt::actionTaken"] = "Crash"
    _reject(json.dumps(doc), "disagrees")
    doc = json.loads(dumps_itf(ce))
    doc["states"][2]["#meta"]["index"] = 5
    _reject(json.dumps(doc), "#meta.index")


def test_load_trace_errors_are_one_line(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        load_trace(tmp_path / "nope.jsonl")
    with pytest.raises(TraceError, match="directory"):
        load_trace(tmp_path)
    p = tmp_path / "bin.jsonl"
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TraceError, match="UTF-8"):
        load_trace(p)
