"""Vacuity named (issue 31): each of the five configurations that used to pass silently says which
part never takes effect, as a `warning:` line and in JSON; `--strict` makes that fail the run;
and the coverage table shows a budgeted action never taken instead of leaving it out."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from shared import to_toml

from isrcheck.analyses import vacuity
from isrcheck.model.config import from_mapping




BASE = {"brokers": 2, "replication_factor": 2, "max_records": 1}

#: name -> (configuration, the key its warning names)
CASES = {
    "quick restart without a crash": ({**BASE, "faults": {"undetected_restarts": 1}}, "faults.undetected_restarts"),
    "lossy crash without records": ({**BASE, "max_records": 0, "faults": {"lossy_crashes": 1}}, "faults.lossy_crashes"),
    "ISR shrinks with one replica": ({**BASE, "replication_factor": 1, "faults": {"isr_shrinks": 2}},
                                     "faults.isr_shrinks"),
    "reassignment to the current assignment": (  # TOML text: to_toml writes no array of tables
        to_toml(BASE) + "[operations]\nreassignments = [{ partition = 0, target = [1, 2] }]\n",
        "operations.reassignments[0]"),
    "min ISR with acks=1": ({**BASE, "acks": "1", "min_insync_replicas": 2}, "min_insync_replicas"),
    "lost AlterIsr answers without AlterIsr": ({**BASE, "faults": {"isr_shrinks": 1, "lost_isr_answers": 1}},
                                               "faults.lost_isr_answers"),
    "lost fetch answers with one replica": ({**BASE, "replication_factor": 1, "faults": {"lost_fetch_answers": 1}},
                                            "faults.lost_fetch_answers"),
}


def _write(tmp_path: Path, raw: dict | str) -> str:
    p = tmp_path / "c.toml"
    p.write_text(raw if isinstance(raw, str) else to_toml(raw))
    return str(p)


@pytest.mark.parametrize("case", list(CASES))
def test_each_vacuous_configuration_warns_and_strict_fails(cli, tmp_path, case):
    raw, key = CASES[case]
    path = _write(tmp_path, raw)
    res = cli("check", "--config", path)
    assert res.exit_code == 0, res.output
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and key in warnings[0], res.stderr
    assert "1 warning(s) above" in " ".join(res.stdout.split())  # the verdict line points at them (folded)
    code, doc = cli.json("check", "--config", path, "--json")
    assert code == 0 and doc["outcome"] == "success"
    assert [(w["key"], w["kind"]) for w in doc["warnings"]] == [(key, "static")]
    code, doc = cli.json("check", "--config", path, "--json", "--strict")
    assert code == 1 and doc["outcome"] == doc["found"] == "vacuous" and doc["exit_status"] == 1
    assert cli("check", "--config", path, "--strict").exit_code == 1


def test_a_configuration_where_everything_can_happen_has_no_warning(cli, tmp_path):
    path = _write(tmp_path, {**BASE, "faults": {"crashes": 1, "undetected_restarts": 1}})
    code, doc = cli.json("check", "--config", path, "--json", "--strict")
    assert code == 0 and doc["warnings"] == [] and doc["coverage"]["QuickRestart"] > 0
    assert not vacuity.static_warnings(from_mapping({**BASE, "operations": {"reassignments": [
        {"partition": 0, "target": [2, 1]}, {"partition": 0, "target": [1, 2]}]}}))  # a move back is a move


def test_the_coverage_table_shows_a_budgeted_action_never_taken(cli, tmp_path):
    path = _write(tmp_path, CASES["quick restart without a crash"][0])
    out = cli("check", "--config", path).stdout
    row = next(line for line in out.splitlines() if line.strip().startswith("QuickRestart"))
    assert "0 (never taken)" in row


def test_an_unused_budget_after_the_search_is_named():
    cfg = from_mapping({**BASE, "faults": {"crashes": 1, "controller_failovers": 1}})
    found = vacuity.unused_budgets(cfg, {"Crash": 3})
    assert [(w.key, w.kind) for w in found] == [("faults.controller_failovers", "coverage")]
    assert "ControllerFailover was never taken" in found[0].message
    assert vacuity.unused_budgets(cfg, {"Crash": 3, "ControllerFailover": 1}) == []


def test_simulate_warns_and_strict_fails_with_the_same_outcome(cli, tmp_path):
    path = _write(tmp_path, CASES["min ISR with acks=1"][0])
    res = cli("simulate", "--config", path, "--walks", "20")
    assert res.exit_code == 0 and "warning: min_insync_replicas = 2 is ignored" in res.stderr
    code, doc = cli.json("simulate", "--config", path, "--walks", "20", "--strict", "--json")
    assert code == 1 and doc["outcome"] == "vacuous" and doc["warnings"][0]["key"] == "min_insync_replicas"


def test_gate_strict_fails_a_model_whose_configuration_is_vacuous(cli, fake_manifest, monkeypatch):
    import dataclasses

    from isrcheck.inputs import manifest
    from isrcheck.model.config import Faults

    tiny = next(e for e in fake_manifest if e.name == "tiny")
    bounced = dataclasses.replace(tiny.config, faults=Faults(undetected_restarts=1))
    patched = [dataclasses.replace(e, config=bounced) if e.name == "tiny" else e for e in fake_manifest]
    monkeypatch.setattr(manifest, "load", lambda: list(patched))
    code, doc = cli.json("gate", "tiny", "--json")
    assert code == 0 and doc["models"][0]["warnings"][0]["key"] == "faults.undetected_restarts"
    res = cli("gate", "tiny")
    assert "warning: tiny: faults.undetected_restarts = 1 can never take effect" in res.stderr
    code, doc = cli.json("gate", "tiny", "--json", "--strict")
    assert code == 1 and doc["models"][0]["outcome"] == "vacuous"
    assert any("--strict" in m for m in doc["models"][0]["mismatches"])
