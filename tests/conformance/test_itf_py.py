"""Our ITF traces load with a real ITF client, itf-py: a counterexample and a lasso written by
`isrcheck traces export`, with the states, the loop, variants, tuples and sets as ITF has them.
Our own reader reads the new encoding and the first one (files written before it), strictly."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from isrcheck.cli import main
from isrcheck.conformance.traces import TraceError, dumps_itf, load_trace, loads_trace

itf_py = pytest.importorskip("itf_py")  # the test extra pins itf-py==0.5.0


def _export(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / f"{name}.itf.json"
    res = CliRunner().invoke(main, ["traces", "export", name, "--out", str(out), *args], prog_name="isrcheck")
    assert res.exit_code == 0, (res.output, res.exception)
    return out


def _itf(path: Path):
    return itf_py.trace_from_json(json.loads(path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def ce_file(tmp_path_factory) -> Path:
    return _export(tmp_path_factory.mktemp("itf"), "hw-truncation-one-crash")


@pytest.fixture(scope="module")
def lasso_file(tmp_path_factory) -> Path:
    return _export(tmp_path_factory.mktemp("itf"), "undetected-restart", "--property", "PartitionEventuallyLed")


def test_itf_py_loads_a_counterexample(ce_file):
    ours = load_trace(ce_file)
    t = _itf(ce_file)
    assert len(t.states) == len(ours.steps) == ours.header()["steps"] + 1
    assert t.loop is None and t.vars == ["mbt::actionTaken", "action", "observation", "acked"]
    assert t.meta["format"] == "ITF" and t.meta["isrcheck"]["property"] == "NoCommittedWriteLost"
    first = t.states[0].values
    assert first["mbt::actionTaken"] == "init" and type(first["action"]).__name__ == "Init"
    for st, step in zip(t.states[1:], ours.steps[1:]):
        act = st.values["action"]
        assert type(act).__name__ == "Step" and st.values["mbt::actionTaken"] == act.name == step.action[0]
        assert act.args == tuple(step.action[1])  # the arguments are an ITF tuple
    for st, step in zip(t.states, ours.steps):
        assert [s.meta["index"] for s in t.states] == list(range(len(t.states)))
        obs = st.values["observation"]
        isr = obs.partitions[0].isr
        assert isinstance(isr, frozenset) and isr == frozenset(step.observation["partitions"][0]["isr"])
        assert isinstance(obs.controller.live_brokers, frozenset)
        assert obs.controller.live_brokers == frozenset(step.observation["controller"]["live_brokers"])
        assert list(obs.partitions[0].replicas) == step.observation["partitions"][0]["replicas"]  # ordered: a list
        assert [set(a) for a in st.values["acked"]] == [set(a) for a in step.acked]
        assert obs.controller.epoch == step.observation["controller"]["epoch"]  # #bigint -> int


def test_itf_py_loads_a_lasso_with_its_loop(lasso_file):
    ours = load_trace(lasso_file)
    t = _itf(lasso_file)
    assert ours.loop is not None and t.loop == ours.loop
    assert len(t.states) == len(ours.steps)
    assert t.states[-1].values["observation"] == t.states[t.loop].values["observation"]
    assert t.meta["isrcheck"]["loop"] == ours.loop


def test_itf_py_round_trips_to_the_same_json(ce_file):
    """itf-py's own writer gives back our values (variants, tuples, sets, integers)."""
    doc = json.loads(ce_file.read_text())
    t = itf_py.trace_from_json(doc)
    for raw, st in zip(doc["states"], t.states):
        for var in ("action", "observation", "acked"):
            again = itf_py.value_to_json(st.values[var])
            assert _canon(again) == _canon(raw[var]), var


def _canon(v):
    """Sets compare without order."""
    if isinstance(v, dict):
        if set(v) == {"#set"}:
            return ("#set", sorted(json.dumps(_canon(x), sort_keys=True) for x in v["#set"]))
        return {k: _canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_canon(x) for x in v]
    return v


# ---------------------------------------------------------------------------- our reader, both encodings
def _first_encoding(doc: dict) -> dict:
    """The same trace as the first ITF encoding wrote it: None/Some, arrays for sets and tuples."""

    def plain(v):
        if isinstance(v, dict):
            if set(v) in ({"#set"}, {"#tup"}):
                return [plain(x) for x in next(iter(v.values()))]
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    doc = json.loads(json.dumps(doc))
    del doc["#meta"]["isrcheck-itf"]
    for st in doc["states"]:
        act = st["action"]
        st["action"] = ({"tag": "None", "value": {}} if act["tag"] == "Init"
                        else {"tag": "Some", "value": plain(act["value"])})
        st["observation"], st["acked"] = plain(st["observation"]), plain(st["acked"])
    return doc


def _same(a, b) -> bool:
    return [(s.action, s.observation, s.acked) for s in a.steps] == [(s.action, s.observation, s.acked) for s in b.steps]


def test_our_reader_reads_the_first_encoding_too(ce_file, lasso_file):
    for f in (ce_file, lasso_file):
        new = load_trace(f)
        old = loads_trace(json.dumps(_first_encoding(json.loads(f.read_text()))), "old.itf.json")
        assert _same(new, old) and old.loop == new.loop


def test_itf_sets_come_back_in_ascending_order(ce_file):
    doc = json.loads(ce_file.read_text())
    for st in doc["states"]:
        st["observation"]["partitions"][0]["isr"]["#set"].reverse()
        st["acked"][0]["#set"].reverse()
    assert _same(loads_trace(json.dumps(doc)), load_trace(ce_file))


@pytest.mark.parametrize("change, words", [
    (lambda d: d["states"][0].__setitem__("action", {"tag": "None", "value": {}}), "Init"),
    (lambda d: d["states"][1]["action"].__setitem__("tag", "Some"), "Init"),
    (lambda d: d["states"][0]["action"].__setitem__("value", {}), "U_OF_UNIT"),
    (lambda d: d["states"][1]["action"]["value"].__setitem__("args", [{"#bigint": "1"}, {"#bigint": "0"}]), "#tup"),
    (lambda d: d["states"][1].__setitem__("acked", [[]]), "acked[0]: a set must be"),
    (lambda d: d["states"][1]["observation"]["partitions"][0].__setitem__("isr", [{"#bigint": "1"}]), "isr: a set"),
    (lambda d: d["states"][1]["observation"]["partitions"][0]["isr"]["#set"].append({"#bigint": "1"}), "distinct"),
    (lambda d: d["states"][1]["observation"]["brokers"][0].__setitem__("alive", {"#set": []}), "#set"),
    (lambda d: d["#meta"].__setitem__("isrcheck-itf", 3), "isrcheck-itf must be 2"),
    (lambda d: _first_encoding_in_place(d), "need #meta.isrcheck-itf = 2"),
])
def test_each_encoding_is_read_strictly(ce_file, change, words):
    doc = json.loads(ce_file.read_text())
    change(doc)
    with pytest.raises(TraceError) as e:
        loads_trace(json.dumps(doc), "x.itf.json")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("x.itf.json: ") and words in msg, msg


def _first_encoding_in_place(doc: dict) -> None:
    """The new encoding without its marker: read as the first encoding, which has no Init tag."""
    del doc["#meta"]["isrcheck-itf"]
    doc["states"][0]["action"] = {"tag": "Init", "value": "U_OF_UNIT"}


def test_the_first_encoding_refuses_the_new_forms(ce_file):
    old = _first_encoding(json.loads(ce_file.read_text()))
    old["states"][1]["observation"]["partitions"][0]["isr"] = {"#set": [{"#bigint": "1"}]}
    with pytest.raises(TraceError, match="'#set' is not used"):
        loads_trace(json.dumps(old))


def test_dumps_itf_marks_the_encoding(ce_file):
    assert json.loads(dumps_itf(load_trace(ce_file)))["#meta"]["isrcheck-itf"] == 2
