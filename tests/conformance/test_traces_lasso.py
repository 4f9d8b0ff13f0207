"""Lasso traces: a liveness counterexample's loop index in JSON lines and ITF, written by
``isrcheck traces export --property`` and read back strictly."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from conform_helpers import REGRESSIONS
from isrcheck.inputs import manifest
from isrcheck.cli import main
from isrcheck.conformance.export import ExportError, export, lasso, samples
from isrcheck.conformance.traces import TraceError, dumps_itf, dumps_jsonl, load_trace, loads_trace
from isrcheck.invariants import build_model
from isrcheck.invariants.liveness import applicable_liveness
from isrcheck.engine.liveness import check_liveness

MODEL, PROP = "undetected-restart", "PartitionEventuallyLed"


def _cli(*args: str) -> Result:
    res = CliRunner().invoke(main, list(args), prog_name="isrcheck")
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"isrcheck {' '.join(args)} raised {res.exception!r}") from res.exception
    return res


def _input_error(res: Result, *words: str) -> str:
    """Exit 2, nothing on stdout, exactly one line on stderr starting with ``error:``."""
    assert res.exit_code == 2, (res.exit_code, res.stdout, res.stderr)
    assert res.stdout == "" and "Traceback" not in res.stderr
    lines = res.stderr.strip("\n").splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def ce():
    t = lasso(manifest.resolve(MODEL, None), PROP)
    assert t is not None
    return t


@pytest.fixture(scope="module")
def looped():
    """A trace with a real loop (loop < steps): a sample path cut where its observation repeats."""
    t = samples(manifest.resolve("replication", None), 1, 1, 15)[0]
    obs = [(s.observation, s.acked) for s in t.steps]
    i, j = next((i, j) for j in range(len(obs)) for i in range(j) if obs[i] == obs[j])
    return replace(t, steps=t.steps[: j + 1], kind="counterexample", loop=i)


def _steps(t):
    return [(s.index, s.action, s.observation, s.acked) for s in t.steps]


# ---------------------------------------------------------------------------- the lasso itself
def test_lasso_is_the_liveness_checkers_counterexample(ce):
    cfg = manifest.resolve(MODEL, None).config
    model = build_model(cfg, symmetry=False, properties=[])
    v = check_liveness(model, applicable_liveness(cfg, [PROP]), fairness=model.fairness_assumptions()).verdicts[0]
    assert v.holds is False and v.violation.loop is not None
    assert ce.loop == v.violation.loop and len(ce.steps) == len(v.violation.trace)
    assert [a for a in ce.actions] == [(s.action.name, tuple(s.action.args)) for s in v.violation.trace[1:]]
    assert ce.kind == "counterexample" and ce.prop == PROP and ce.model == MODEL
    assert ce.stutters and "stutters at the last state forever" in ce.description
    assert f"a stem of {len(ce.steps) - 1} step(s)" in ce.description


@pytest.mark.parametrize("fmt", ["jsonl", "itf"])
def test_lasso_round_trip_keeps_the_loop(ce, fmt):
    text = dumps_itf(ce) if fmt == "itf" else dumps_jsonl(ce)
    head = json.loads(text)["#meta"]["isrcheck"] if fmt == "itf" else json.loads(text.split("\n")[0])
    assert head["loop"] == ce.loop == len(ce.steps) - 1
    if fmt == "itf":
        assert json.loads(text)["loop"] == ce.loop  # ADR-015's top-level field
    back = loads_trace(text, "t")
    assert back.loop == ce.loop and back.prop == PROP and back.description == ce.description
    assert _steps(back) == _steps(ce)


@pytest.mark.parametrize("fmt", ["jsonl", "itf"])
def test_a_real_loop_round_trips(looped, fmt):
    assert looped.loop < len(looped.steps) - 1 and not looped.stutters
    text = dumps_itf(looped) if fmt == "itf" else dumps_jsonl(looped)
    back = loads_trace(text, "t")
    assert back.loop == looped.loop and _steps(back) == _steps(looped)


def test_traces_that_are_not_lassos_have_a_null_loop_and_no_itf_loop():
    t = samples(manifest.resolve("replication", None), 1, 0, 5)[0]
    assert json.loads(dumps_jsonl(t).split("\n")[0])["loop"] is None
    doc = json.loads(dumps_itf(t))
    assert "loop" not in doc and doc["#meta"]["isrcheck"]["loop"] is None
    assert loads_trace(dumps_itf(t)).loop is None


def test_an_old_header_without_loop_still_loads(ce, tmp_path):
    lines = dumps_jsonl(ce).strip().split("\n")
    head = json.loads(lines[0])
    del head["loop"]
    f = tmp_path / "old.jsonl"
    f.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    assert load_trace(f).loop is None
    doc = json.loads(dumps_itf(ce))
    del doc["loop"], doc["#meta"]["isrcheck"]["loop"]
    assert loads_trace(json.dumps(doc)).loop is None
    old = min(REGRESSIONS.glob("*.jsonl"))  # written before traces had a loop
    assert '"loop"' not in old.read_text().split("\n")[0] and load_trace(old).loop is None


# ---------------------------------------------------------------------------- rejection, through the CLI
def _edit_jsonl(ce, tmp_path: Path, loop) -> Path:
    lines = dumps_jsonl(ce).strip().split("\n")
    head = json.loads(lines[0])
    head["loop"] = loop
    f = tmp_path / "edited.jsonl"
    f.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    return f


@pytest.mark.parametrize("loop", [3, 99, -1])
def test_show_rejects_a_loop_out_of_range(ce, tmp_path, loop):
    assert len(ce.steps) - 1 == 2
    line = _input_error(_cli("traces", "show", str(_edit_jsonl(ce, tmp_path, loop))), "line 1", f"loop {loop}",
                        "out of range", "0..2")
    assert "edited.jsonl" in line


@pytest.mark.parametrize("loop", ["2", 1.5, True, [2]])
def test_show_rejects_a_loop_that_is_not_an_integer(ce, tmp_path, loop):
    _input_error(_cli("traces", "show", str(_edit_jsonl(ce, tmp_path, loop))), "loop must be an integer or null")


def test_show_rejects_a_loop_whose_observation_does_not_match(ce, looped, tmp_path):
    assert ce.steps[0].observation != ce.steps[-1].observation
    _input_error(_cli("traces", "show", str(_edit_jsonl(ce, tmp_path, 0))), "not a lasso",
                 "differs from the observation at loop 0", "(at ")
    # a real loop whose last observation was tampered with
    lines = dumps_jsonl(looped).strip().split("\n")
    last = json.loads(lines[-1])
    last["observation"]["partitions"][0]["leader_epoch"] += 7
    f = tmp_path / "tampered.jsonl"
    f.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    _input_error(_cli("traces", "show", str(f)), "not a lasso", f"loop {looped.loop}",
                 "partitions[0].leader_epoch")


def test_show_rejects_itf_loops_that_disagree_or_are_malformed(ce, tmp_path):
    f = tmp_path / "t.itf.json"
    for edit, words in [
        (lambda d: d.__setitem__("loop", 0), ("ITF loop 0 disagrees",)),
        (lambda d: d.__setitem__("loop", {"#bigint": "2"}), ("ITF loop must be an integer",)),
        (lambda d: d.pop("loop"), ("no top-level loop",)),
        (lambda d: (d.__setitem__("loop", 0), d["#meta"]["isrcheck"].__setitem__("loop", 0)),
         ("not a lasso", "loop 0")),
    ]:
        doc = json.loads(dumps_itf(ce))
        edit(doc)
        f.write_text(json.dumps(doc))
        _input_error(_cli("traces", "show", str(f)), *words)


def test_loading_errors_are_trace_errors(ce):
    with pytest.raises(TraceError, match="loop 5 is out of range"):
        lines = dumps_jsonl(ce).strip().split("\n")
        head = json.loads(lines[0])
        head["loop"] = 5
        loads_trace("\n".join([json.dumps(head), *lines[1:]]) + "\n")


# ---------------------------------------------------------------------------- traces export --property
@pytest.mark.parametrize("name", ["lasso.jsonl", "lasso.itf.json"])
def test_export_property_writes_the_lasso_and_show_prints_it(tmp_path, name):
    f = tmp_path / name
    res = _cli("traces", "export", MODEL, "--out", str(f), "--property", PROP)
    assert res.exit_code == 0, res.output
    assert f"{PROP} lasso, stutters at the last state, 2 step(s)" in res.stdout
    t = load_trace(f)
    assert t.loop == 2 and t.prop == PROP and t.kind == "counterexample"
    if name.endswith(".itf.json"):
        assert json.loads(f.read_text())["loop"] == 2
    res = _cli("traces", "show", str(f))
    assert res.exit_code == 0 and "a lasso: stutters at the last state" in res.stdout
    assert "Crash(1)" in res.stdout and f"breaks {PROP}" in res.stdout
    doc = json.loads(_cli("traces", "show", "--json", str(f)).stdout)
    assert doc["loop"] == 2 and doc["property"] == PROP


def test_show_prints_loop_back_to_step_for_a_real_loop(looped, tmp_path):
    f = tmp_path / "loop.jsonl"
    f.write_text(dumps_jsonl(looped))
    res = _cli("traces", "show", str(f))
    assert res.exit_code == 0 and f"loop back to step {looped.loop}" in res.stdout
    assert json.loads(_cli("traces", "show", "--json", str(f)).stdout)["loop"] == looped.loop


def test_export_property_for_a_liveness_property_that_holds_is_an_error(tmp_path):
    f = tmp_path / "none.jsonl"
    _input_error(_cli("traces", "export", "replication", "--out", str(f), "--property", PROP),
                 f"{PROP} holds on replication", "no lasso")
    assert not f.exists()
    _input_error(_cli("traces", "export", "replication", "--out", str(f), "--property", "ReassignmentCompletes"),
                 "does not apply")
    _input_error(_cli("traces", "export", "replication", "--out", str(f), "--property", "Nope"),
                 "unknown property 'Nope'", "PartitionEventuallyLed")
    assert not f.exists()


def test_export_property_for_a_safety_property(tmp_path):
    tg = manifest.resolve("hw-truncation-one-crash", None)
    res = export(tg, tmp_path / "s.jsonl", property="NoCommittedWriteLost")
    assert res.kind == "counterexample" and res.traces[0].prop == "NoCommittedWriteLost"
    assert res.traces[0].loop is None and load_trace(res.files[0]).loop is None
    with pytest.raises(ExportError, match="NoCommittedWriteLost holds on replication"):
        export(manifest.resolve("replication", None), tmp_path / "x.jsonl", property="NoCommittedWriteLost")
    with pytest.raises(ExportError, match="sometimes"):
        export(manifest.resolve("replication", None), tmp_path / "x.jsonl", property="WriteCommitted")
    assert not (tmp_path / "x.jsonl").exists()
