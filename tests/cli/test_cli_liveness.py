"""Liveness on the command line: `check` (pinned by default, --liveness, --no-liveness, --property),
its text (lasso tables) and JSON, `gate` with pinned liveness verdicts, compare_liveness, and the
``[model.liveness]`` tables of the manifest."""
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from isrcheck.inputs import manifest
from isrcheck.invariants import liveness as live
from isrcheck.engine.liveness import LivenessResult, LivenessVerdict
from isrcheck.render.tables import LOOP_MARK
from isrcheck.specs.manifest import LivenessExpect, ManifestError, parse_manifest

BOUNCE = "undetected-restart"


@pytest.fixture(scope="module")
def bounce_entry():
    return manifest.get(BOUNCE)


@pytest.fixture(scope="module")
def bounce_result(bounce_entry):
    """The real liveness result of undetected-restart: all three properties broken."""
    return live.check(bounce_entry.config, [x.property for x in bounce_entry.liveness])


@pytest.fixture(scope="module")
def failover_result():
    """controller-failover: every applicable property holds."""
    return live.check(manifest.get("controller-failover").config)


# ---------------------------------------------------------------------------- check
def test_check_checks_the_pinned_liveness_by_default(cli, bounce_entry):
    assert bounce_entry.liveness  # the test relies on the pins
    result = cli("check", BOUNCE)
    assert result.exit_code == 0, result.output  # every lasso is the one pinned: as gate, it passes
    out = result.stdout
    assert f"{BOUNCE}: verdict LIVENESS FAILURE as pinned" in out
    assert "every safety property holds" in out
    assert "Lasso:" in out and LOOP_MARK in out
    assert "stutters" in out  # every lasso of the bounce stutters at its last state
    assert "QuickRestart(1)" in out
    assert "LIVENESS FAILURE" in out
    for x in bounce_entry.liveness:
        assert f"Lasso: {x.property} broken" in out
    assert "weak fairness of every instance of" in out


def test_check_no_liveness_checks_safety_only(cli):
    result = cli("check", BOUNCE, "--no-liveness")
    assert result.exit_code == 0, result.output
    assert "Lasso:" not in result.stdout and "LIVENESS" not in result.stdout and "fairness" not in result.stdout
    code, doc = cli.json("check", BOUNCE, "--no-liveness", "--json")
    assert code == 0 and "liveness" not in doc and doc["outcome"] == "success"


def test_check_json_has_the_pinned_liveness_verdicts(cli, bounce_entry):
    code, doc = cli.json("check", BOUNCE, "--json")
    # the one verdict: liveness broken, exactly as pinned (exit 0, as gate); safety's own is apart
    assert code == 0 and doc["exit_status"] == 0
    assert (doc["outcome"], doc["found"], doc["safety_outcome"]) == ("as_pinned", "liveness_failure", "success")
    assert doc["pins"] == {"as_pinned": True, "mismatches": []}
    assert [(v["property"], v["kind"]) for v in doc["violations"]] == [
        (x.property, "liveness") for x in bounce_entry.liveness]
    assert [v["loop"] for v in doc["violations"]] == [x.loop for x in bounce_entry.liveness]
    lv = doc["liveness"]
    assert lv["complete"] is True
    assert lv["states"] > 1 and lv["edges"] > 0 and lv["bytes"] > 0 and lv["seconds"] >= 0
    assert lv["fairness"] and lv["fairness"][0].startswith("weak fairness of every instance of")
    pinned = {x.property: x for x in bounce_entry.liveness}
    assert [v["property"] for v in lv["verdicts"]] == list(pinned)
    for v in lv["verdicts"]:
        want = pinned[v["property"]]
        assert v["verdict"] == "broken" and v["instance"]
        vio = v["violation"]
        assert vio["kind"] == "liveness" and vio["property"] == v["property"]
        assert (vio["length"], vio["loop"]) == (want.length, want.loop)
        assert len(vio["trace"]) == vio["length"] + 1
        assert vio["trace"][0]["action"] is None
        assert v["instance"] in vio["message"]
    led = next(v for v in lv["verdicts"] if v["property"] == "PartitionEventuallyLed")
    assert (led["violation"]["length"], led["violation"]["loop"]) == (2, 2)
    assert [s["action"]["name"] for s in led["violation"]["trace"][1:]] == ["Crash", "QuickRestart"]


def test_check_property_checks_only_that_liveness_property(cli):
    code, doc = cli.json("check", BOUNCE, "--property", "IsrHeals", "--json")
    assert code == 1 and doc["outcome"] == "liveness_failure"  # --property: the pins do not apply
    assert [v["property"] for v in doc["liveness"]["verdicts"]] == ["IsrHeals"]
    assert doc["liveness"]["verdicts"][0]["verdict"] == "broken"
    assert [(v["property"], v["kind"]) for v in doc["violations"]] == [("IsrHeals", "liveness")]
    result = cli("check", BOUNCE, "--property", "IsrHeals")
    assert result.exit_code == 1
    assert result.stdout.count("Lasso:") == 1 and "Lasso: IsrHeals broken" in result.stdout


def test_check_property_with_no_liveness_is_a_contradiction(cli, assert_input_error):
    assert_input_error(cli("check", BOUNCE, "--property", "IsrHeals", "--no-liveness"), "--no-liveness", "IsrHeals")


def test_check_property_that_does_not_apply_is_an_input_error(cli, assert_input_error):
    assert_input_error(cli("check", BOUNCE, "--property", "ReassignmentCompletes"),
                       "ReassignmentCompletes", "does not apply")


def test_check_safety_property_only_skips_the_pinned_liveness(cli):
    code, doc = cli.json("check", BOUNCE, "--property", "LeaderInIsr", "--json")
    assert code == 0 and "liveness" not in doc


def test_check_set_unfair_breaks_the_pinned_deposed_controller(cli):
    code, doc = cli.json("check", "controller-failover", "--set", 'unfair=["ResignController"]', "--json")
    assert code == 1 and doc["outcome"] == "liveness_failure" and doc["safety_outcome"] == "success"
    assert doc["config"]["unfair"] == ["ResignController"]
    verdicts = {v["property"]: v["verdict"] for v in doc["liveness"]["verdicts"]}
    assert verdicts == {"PartitionEventuallyLed": "holds", "IsrHeals": "holds", "WriteEventuallyCommitted": "holds",
                        "DeposedControllerStops": "broken"}
    assert any("not assumed for ResignController" in f for f in doc["liveness"]["fairness"])


def test_check_set_unfair_with_an_unfair_action_is_an_input_error(cli, assert_input_error):
    assert_input_error(cli("check", "controller-failover", "--set", 'unfair=["Crash"]'),
                       "controller-failover", "'Crash' is not a fair action")
    assert_input_error(cli("check", "controller-failover", "--set", 'unfair=["Restart(9)"]'), "1..3")


@pytest.mark.parametrize("override", ["max_records=0", "faults.controller_failovers=0"])
def test_check_pinned_liveness_skips_what_an_override_makes_inapplicable(cli, override):
    """BUG (isrcheck/commands/check.py, _liveness_wanted): by default `check NAME` checks the liveness pinned for
    NAME, even when --set makes a pinned property meaningless (no write left for
    WriteEventuallyCommitted, no failover for DeposedControllerStops): applicable_liveness then
    refuses it and a plain safety check that worked before liveness existed now exits 2. The
    default (pinned) list should keep only the properties that apply to the overridden config."""
    assert cli("check", "controller-failover", "--set", override, "--no-liveness").exit_code == 0
    result = cli("check", "controller-failover", "--set", override)
    assert result.exit_code == 0, result.stderr
    assert "does not apply" not in result.stderr


@pytest.fixture
def unfair_config(tmp_path: Path) -> Path:
    p = tmp_path / "unfair.toml"
    p.write_text('brokers = 3\nmax_records = 1\nunfair = ["Fetch(2, 0)"]\n')
    return p


def test_check_config_with_liveness_all_hold(cli, small_config):
    result = cli("check", "--config", str(small_config), "--liveness")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "weak fairness of every instance of" in out and "Fetch" in out and "Restart" in out
    for name in ("PartitionEventuallyLed", "IsrHeals", "WriteEventuallyCommitted"):
        assert f"HOLDS - {name}" in out
    assert "Lasso:" not in out and "LIVENESS FAILURE" not in out
    code, doc = cli.json("check", "--config", str(small_config), "--liveness", "--json")
    assert code == 0
    assert [v["verdict"] for v in doc["liveness"]["verdicts"]] == ["holds"] * 3
    assert all(v["violation"] is None and v["instance"] is None for v in doc["liveness"]["verdicts"])


def test_check_config_without_liveness_flag_checks_none(cli, small_config):
    code, doc = cli.json("check", "--config", str(small_config), "--json")
    assert code == 0 and "liveness" not in doc


def test_check_config_names_the_fairness_dropped(cli, unfair_config):
    code, doc = cli.json("check", "--config", str(unfair_config), "--liveness", "--json")
    assert doc["config"]["unfair"] == ["Fetch(2, 0)"]
    assert any("Fetch(2, 0)" in f and "not assumed" in f for f in doc["liveness"]["fairness"])
    # broker 2 need never fetch: an acks=all write waits for it forever (it stays in the ISR: no
    # shrink is budgeted, so IsrHeals still holds)
    verdicts = {v["property"]: v for v in doc["liveness"]["verdicts"]}
    assert code == 1
    assert verdicts["IsrHeals"]["verdict"] == "holds"
    write = verdicts["WriteEventuallyCommitted"]
    assert write["verdict"] == "broken" and write["instance"] == "partition 0 record 1"
    vio = write["violation"]
    assert vio["loop"] == vio["length"]  # it stutters where only broker 2's fetch could help
    assert {"name": "Fetch", "args": [2, 0]} not in [s["action"] for s in vio["trace"]]


def test_check_liveness_with_a_depth_limit_proves_nothing(cli, small_config):
    code, doc = cli.json("check", "--config", str(small_config), "--liveness", "--max-depth", "2", "--json")
    assert code == 1
    lv = doc["liveness"]
    assert lv["complete"] is False
    assert [v["verdict"] for v in lv["verdicts"]] == ["unknown"] * 3
    assert all(v["violation"] is None for v in lv["verdicts"])
    result = cli("check", "--config", str(small_config), "--liveness", "--max-depth", "2")
    assert result.exit_code == 1
    assert result.stdout.count("LIVENESS UNKNOWN") == 3 and "nothing is proved" in result.stdout


def test_check_liveness_unknown_fails_even_when_safety_succeeds(cli, tmp_path):
    """The safety search is symmetry-reduced, the liveness graph is not: a state limit between the
    two sizes leaves safety proved and liveness unknown, which must not pass."""
    p = tmp_path / "sym.toml"
    p.write_text("brokers = 4\nreplication_factor = 2\nmax_records = 1\n[faults]\ncrashes = 1\n")
    code, full = cli.json("check", "--config", str(p), "--liveness", "--json")
    assert code == 0
    safety, graph = full["distinct_states"], full["liveness"]["states"]
    assert safety < graph
    limit = (safety + graph) // 2
    code, doc = cli.json("check", "--config", str(p), "--liveness", "--max-states", str(limit), "--json")
    assert doc["outcome"] == "incomplete" and doc["safety_outcome"] == "success"
    assert doc["liveness"]["complete"] is False
    assert {v["verdict"] for v in doc["liveness"]["verdicts"]} == {"unknown"}
    assert code == 1


# ---------------------------------------------------------------------------- gate
def test_gate_passes_on_the_pinned_liveness(cli):
    code, doc = cli.json("gate", BOUNCE, "reassignment-target-never-returns", "--json")
    assert code == 0, doc
    assert doc["passed"] is True
    rows = {m["model"]: m for m in doc["models"]}
    assert all(r["verdict"] == "PASS" and r["mismatches"] == [] for r in rows.values())
    found = rows[BOUNCE]["found"]["liveness"]
    assert found["PartitionEventuallyLed"]["length"] == 2 and found["PartitionEventuallyLed"]["loop"] == 2
    assert rows[BOUNCE]["expected"]["liveness"]["PartitionEventuallyLed"]["length"] == 2
    target = rows["reassignment-target-never-returns"]
    assert target["found"]["liveness"]["PartitionEventuallyLed"] == "holds"
    assert target["found"]["liveness"]["ReassignmentCompletes"]["instance"] == "partition 0"
    assert target["expected"]["liveness"]["ReassignmentCompletes"]["expected"]


def test_gate_fails_on_a_wrong_liveness_pin(cli, monkeypatch):
    entries = manifest.load()
    wrong = (LivenessExpect("PartitionEventuallyLed", True),)
    patched = [dataclasses.replace(e, liveness=wrong) if e.name == BOUNCE else e for e in entries]
    monkeypatch.setattr(manifest, "load", lambda: list(patched))
    code, doc = cli.json("gate", BOUNCE, "--json")
    assert code == 1 and doc["passed"] is False
    (row,) = doc["models"]
    assert row["verdict"] == "FAIL"
    assert len(row["mismatches"]) == 1 and "PartitionEventuallyLed" in row["mismatches"][0]
    assert "expected to hold" in row["mismatches"][0]


# ---------------------------------------------------------------------------- compare_liveness
def with_pins(entry, *pins):
    return dataclasses.replace(entry, liveness=tuple(pins))


def test_compare_liveness_agrees_with_the_manifest(bounce_entry, bounce_result):
    assert manifest.compare_liveness(bounce_entry, bounce_result) == []


def test_compare_liveness_expected_holds_found_broken(bounce_entry, bounce_result):
    out = manifest.compare_liveness(with_pins(bounce_entry, LivenessExpect("IsrHeals", True)), bounce_result)
    assert len(out) == 1
    assert "IsrHeals" in out[0] and "expected to hold, found broken" in out[0]
    assert "broker 1 partition 0" in out[0] and "2 steps" in out[0]


def test_compare_liveness_expected_broken_found_holds(bounce_entry, failover_result):
    entry = with_pins(bounce_entry, LivenessExpect("IsrHeals", False, 2, 2))
    out = manifest.compare_liveness(entry, failover_result)
    assert len(out) == 1 and "IsrHeals" in out[0] and "found it holds" in out[0]


def test_compare_liveness_wrong_length(bounce_entry, bounce_result):
    entry = with_pins(bounce_entry, LivenessExpect("PartitionEventuallyLed", False, 3, 2))
    out = manifest.compare_liveness(entry, bounce_result)
    assert len(out) == 1
    assert "expected a lasso of 3 steps looping from 2, found 2 looping from 2" in out[0]


def test_compare_liveness_wrong_loop(bounce_entry, bounce_result):
    entry = with_pins(bounce_entry, LivenessExpect("WriteEventuallyCommitted", False, 3, 1))
    out = manifest.compare_liveness(entry, bounce_result)
    assert len(out) == 1
    assert "expected a lasso of 3 steps looping from 1, found 3 looping from 3" in out[0]


def test_compare_liveness_reports_every_mismatch(bounce_entry, bounce_result):
    entry = with_pins(bounce_entry, LivenessExpect("PartitionEventuallyLed", True),
                      LivenessExpect("IsrHeals", False, 2, 2), LivenessExpect("WriteEventuallyCommitted", False, 4, 4))
    out = manifest.compare_liveness(entry, bounce_result)
    assert len(out) == 2
    assert out[0].startswith("liveness PartitionEventuallyLed") and out[1].startswith("liveness WriteEventuallyCommitted")


def test_compare_liveness_without_a_verdict(bounce_entry):
    incomplete = LivenessResult([LivenessVerdict("IsrHeals", None)], 1, 0, 0, 0.0, [], False)
    out = manifest.compare_liveness(with_pins(bounce_entry, LivenessExpect("IsrHeals", True)), incomplete)
    assert len(out) == 1 and "no verdict" in out[0]
    out = manifest.compare_liveness(with_pins(bounce_entry, LivenessExpect("PartitionEventuallyLed", True)), incomplete)
    assert len(out) == 1 and "PartitionEventuallyLed" in out[0] and "no verdict" in out[0]


def test_compare_liveness_expected_reason_does_not_matter(bounce_entry, bounce_result):
    entry = with_pins(bounce_entry, LivenessExpect("PartitionEventuallyLed", False, 2, 2, "a reason"))
    assert manifest.compare_liveness(entry, bounce_result) == []


# ---------------------------------------------------------------------------- [model.liveness] tables
def doc_with(liveness) -> dict:
    model = {"name": "m", "description": "d", "gate": "default", "expect": "success",
             "config": {"brokers": 3, "max_records": 1}}
    if liveness is not None:
        model["liveness"] = liveness
    return {"model": [model]}


def parse(liveness):
    (entry,) = parse_manifest(doc_with(liveness), manifest.MODEL_READER, "t.toml")
    return entry


def test_manifest_liveness_table_parses():
    text = '''
[[model]]
name = "m"
description = "d"
gate = "default"
expect = "success"
[model.liveness]
PartitionEventuallyLed = "holds"
IsrHeals = { length = 2, loop = 2 }
WriteEventuallyCommitted = { length = 5, loop = 1, expected = "a broker that never returns" }
[model.config]
brokers = 3
'''
    (entry,) = parse_manifest(tomllib.loads(text), manifest.MODEL_READER, "t.toml")
    assert entry.liveness == (
        LivenessExpect("PartitionEventuallyLed", True),
        LivenessExpect("IsrHeals", False, 2, 2),
        LivenessExpect("WriteEventuallyCommitted", False, 5, 1, "a broker that never returns"),
    )
    assert [x.text() for x in entry.liveness] == [
        "PartitionEventuallyLed holds", "IsrHeals broken in 2 (stutters)",
        "WriteEventuallyCommitted broken in 5 (loop from 1) [expected]"]


def test_manifest_without_liveness_has_none():
    assert parse(None).liveness == ()


def test_manifest_loop_zero_and_length_zero_are_allowed():
    assert parse({"IsrHeals": {"length": 0, "loop": 0}}).liveness == (LivenessExpect("IsrHeals", False, 0, 0),)


@pytest.mark.parametrize("liveness, fragments", [
    ({"IsrHeal": "holds"}, ["unknown liveness property 'IsrHeal'", "did you mean 'IsrHeals'?"]),
    ({"Nothing": "holds"}, ["unknown liveness property 'Nothing'", "known: ReassignmentCompletes"]),
    ("holds", ["liveness must be a table"]),
    (["IsrHeals"], ["liveness must be a table"]),
    ({}, ["liveness must be a table"]),
    ({"IsrHeals": "broken"}, ["liveness.IsrHeals must be \"holds\""]),
    ({"IsrHeals": 3}, ["liveness.IsrHeals must be \"holds\""]),
    ({"IsrHeals": {"length": 2}}, ["liveness.IsrHeals needs length and loop"]),
    ({"IsrHeals": {"loop": 2}}, ["liveness.IsrHeals needs length and loop"]),
    ({"IsrHeals": {"length": 2, "loop": 1, "why": "x"}}, ["liveness.IsrHeals needs length and loop", "why"]),
    ({"IsrHeals": {"length": 2, "loop": 3}}, ["liveness.IsrHeals.loop must be an integer in 0..2, got 3"]),
    ({"IsrHeals": {"length": 2, "loop": -1}}, ["liveness.IsrHeals.loop"]),
    ({"IsrHeals": {"length": 2, "loop": True}}, ["liveness.IsrHeals.loop"]),
    ({"IsrHeals": {"length": True, "loop": 1}}, ["liveness.IsrHeals.length must be an integer >= 0, got True"]),
    ({"IsrHeals": {"length": -1, "loop": 0}}, ["liveness.IsrHeals.length"]),
    ({"IsrHeals": {"length": "2", "loop": 0}}, ["liveness.IsrHeals.length"]),
    ({"IsrHeals": {"length": 2, "loop": 2, "expected": ""}}, ["liveness.IsrHeals.expected must be a non-empty reason"]),
    ({"IsrHeals": {"length": 2, "loop": 2, "expected": "   "}}, ["liveness.IsrHeals.expected"]),
    ({"IsrHeals": {"length": 2, "loop": 2, "expected": 1}}, ["liveness.IsrHeals.expected"]),
])
def test_manifest_liveness_errors_are_one_line(liveness, fragments):
    with pytest.raises(ManifestError) as e:
        parse(liveness)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("t.toml: model 'm': ")
    for f in fragments:
        assert f in msg, (f, msg)


def test_packaged_manifest_pins_are_well_formed():
    entries = manifest.load()
    pinned = {e.name: e for e in entries if e.liveness}
    for name in ("undetected-restart", "undetected-restart-detected", "reassignment-broker-crash",
                 "reassignment-target-never-returns", "controller-failover", "failover-misses-crash-kip-320",
                 "failover-misses-crash-kip-320-fenced", "leader-crash-kip-320", "replication", "clean-election"):
        assert name in pinned, name
    for e in pinned.values():
        # every pinned property applies to the model's configuration
        assert [p.name for p in live.applicable_liveness(e.config, [x.property for x in e.liveness])] == [
            x.property for x in e.liveness]
    target = pinned["reassignment-target-never-returns"].liveness
    assert next(x for x in target if x.property == "ReassignmentCompletes").expected
