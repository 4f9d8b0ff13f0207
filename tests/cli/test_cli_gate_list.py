"""`isrcheck gate` and `isrcheck list` over a controlled manifest."""
from __future__ import annotations

import dataclasses

from isrcheck.inputs import manifest


def test_gate_passes_on_matching_models(cli, fake_manifest):
    result = cli("gate")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "tiny" in out and "tiny-crash" in out
    assert "tiny-rf2" not in out  # gate = "all" only runs with --all
    assert out.count("PASS") == 2 and "FAIL" not in out
    assert "gate passed" in out


def test_gate_all_includes_the_large_models(cli, fake_manifest):
    code, doc = cli.json("gate", "--all", "--json")
    assert code == 0 and doc["passed"] is True
    assert [m["model"] for m in doc["models"]] == ["tiny", "tiny-crash", "tiny-rf2"]


def test_gate_named_models(cli, fake_manifest):
    code, doc = cli.json("gate", "tiny-rf2", "--json")
    assert code == 0 and [m["model"] for m in doc["models"]] == ["tiny-rf2"]


def test_gate_json_shape(cli, fake_manifest):
    code, doc = cli.json("gate", "--json")
    assert code == 0
    assert set(doc) >= {"passed", "seconds", "models"}
    crash = next(m for m in doc["models"] if m["model"] == "tiny-crash")
    assert crash["verdict"] == "PASS" and crash["mismatches"] == []
    assert crash["expected"]["outcome"] == "safety_failure"
    assert crash["found"]["property"] == crash["expected"]["property"]
    assert crash["found"]["length"] == crash["expected"]["length"]


def _patch(monkeypatch, entries, name, **changes):
    patched = [dataclasses.replace(e, **changes) if e.name == name else e for e in entries]
    monkeypatch.setattr(manifest, "load", lambda: list(patched))


def test_gate_fails_when_pinned_states_differ(cli, fake_manifest, monkeypatch):
    tiny = next(e for e in fake_manifest if e.name == "tiny")
    _patch(monkeypatch, fake_manifest, "tiny", states=tiny.states + 1)
    result = cli("gate")
    assert result.exit_code == 1
    out = result.stdout
    assert "FAIL" in out and "gate failed" in out
    assert f"pinned {tiny.states + 1:,}, found {tiny.states:,}" in out
    assert "update" in out and "reason" in out


def test_gate_fails_when_length_differs(cli, fake_manifest, monkeypatch):
    crash = next(e for e in fake_manifest if e.name == "tiny-crash")
    _patch(monkeypatch, fake_manifest, "tiny-crash", length=crash.length + 3)
    code, doc = cli.json("gate", "--json")
    assert code == 1 and doc["passed"] is False
    m = next(m for m in doc["models"] if m["model"] == "tiny-crash")
    assert m["verdict"] == "FAIL" and any("length" in x for x in m["mismatches"])
    other = next(m for m in doc["models"] if m["model"] == "tiny")
    assert other["verdict"] == "PASS"


def test_gate_fails_when_outcome_differs(cli, fake_manifest, monkeypatch):
    _patch(monkeypatch, fake_manifest, "tiny-crash", expect="success", property=None, length=None)
    result = cli("gate", "tiny-crash")
    assert result.exit_code == 1
    assert "expected success" in result.stdout


def test_gate_reports_a_crashing_model_and_carries_on(cli, fake_manifest, crashing_rf2):
    code, doc = cli.json("gate", "--all", "--json")
    assert code == 1
    verdicts = {m["model"]: m["verdict"] for m in doc["models"]}
    assert verdicts == {"tiny": "PASS", "tiny-crash": "PASS", "tiny-rf2": "FAIL"}
    bad = next(m for m in doc["models"] if m["model"] == "tiny-rf2")
    assert bad["found"] is None and "boom" in bad["mismatches"][0]


def test_list_table(cli, fake_manifest):
    result = cli("list")
    assert result.exit_code == 0
    for e in fake_manifest:
        assert e.name in result.stdout
    assert "safety_failure" in result.stdout


def test_list_json(cli, fake_manifest):
    code, doc = cli.json("list", "--json")
    assert code == 0
    assert [m["name"] for m in doc["models"]] == [e.name for e in fake_manifest]
    crash = doc["models"][1]
    assert crash["expect"] == "safety_failure" and crash["length"] >= 1
    assert crash["config"]["faults"]["crashes"] == 1


def test_list_real_manifest(cli):
    code, doc = cli.json("list", "--json")
    assert code == 0 and doc["models"]
    assert {m["gate"] for m in doc["models"]} <= {"default", "all"}
