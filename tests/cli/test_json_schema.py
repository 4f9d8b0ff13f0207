"""`check --json` and `gate --json` follow specs/check-result.schema.json (issue 31): real output of
each outcome is validated with jsonschema, and the schema refuses the old contradiction, an
`outcome` of success beside a non-zero exit status."""
from __future__ import annotations

import json
import dataclasses
from pathlib import Path

import jsonschema
import pytest
from shared import to_toml

from isrcheck.inputs import manifest




ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "specs" / "check-result.schema.json").read_text())


def _validator(ref: str) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator({**SCHEMA, "$ref": f"#/$defs/{ref}"})


CHECK = _validator("CheckResult")
GATE = _validator("GateResult")


def _check(cli, *args: str) -> dict:
    code, doc = cli.json("check", *args, "--json")
    CHECK.validate(doc)
    assert doc["exit_status"] == code
    return doc


def test_check_outcomes_validate(cli, fake_manifest, crash_config, small_config):
    assert _check(cli, "tiny")["outcome"] == "success"
    doc = _check(cli, "tiny-crash")
    assert (doc["outcome"], doc["found"], doc["pins"]["as_pinned"]) == ("as_pinned", "safety_failure", True)
    assert _check(cli, "--config", str(crash_config))["outcome"] == "safety_failure"
    assert _check(cli, "--config", str(small_config), "--max-depth", "1")["outcome"] == "incomplete"


def test_check_peer_validates(cli):
    doc = _check(cli, "--peer", "truncate-to-hw", "--property", "StrongIsr")
    assert doc["outcome"] == "safety_failure" and doc["exit_status"] == 1


def test_a_liveness_failure_is_the_outcome(cli):
    """The issue's first example: `check undetected-restart --liveness --json` exited 1 with
    outcome success and no violations."""
    doc = _check(cli, "undetected-restart", "--liveness")
    assert doc["outcome"] == "liveness_failure" and doc["exit_status"] == 1
    assert doc["violations"] and {v["kind"] for v in doc["violations"]} == {"liveness"}
    assert all(isinstance(v["loop"], int) for v in doc["violations"])


def test_a_vacuous_strict_check_validates(cli, tmp_path):
    p = tmp_path / "v.toml"
    p.write_text(to_toml({"brokers": 2, "replication_factor": 2, "max_records": 1,
                          "faults": {"undetected_restarts": 1}}))
    doc = _check(cli, "--config", str(p), "--strict")
    assert doc["outcome"] == "vacuous" and doc["warnings"]


def test_the_schema_refuses_success_with_a_failing_exit(cli, fake_manifest):
    doc = _check(cli, "tiny")
    with pytest.raises(jsonschema.ValidationError):
        CHECK.validate({**doc, "exit_status": 1})
    with pytest.raises(jsonschema.ValidationError):
        CHECK.validate({**doc, "outcome": "broken"})


def test_gate_json_validates_passing_and_failing(cli, fake_manifest, monkeypatch):
    code, doc = cli.json("gate", "--json")
    GATE.validate(doc)
    assert code == 0 and doc["outcome"] == "as_pinned"
    assert [m["outcome"] for m in doc["models"]] == ["success", "as_pinned"]
    patched = [dataclasses.replace(e, states=e.states + 1) if e.name == "tiny" else e for e in fake_manifest]
    monkeypatch.setattr(manifest, "load", lambda: list(patched))
    code, doc = cli.json("gate", "--json")
    GATE.validate(doc)
    assert code == 1 and doc["outcome"] == "not_as_pinned"
    assert doc["models"][0]["outcome"] == "not_as_pinned" and doc["models"][0]["verdict"] == "FAIL"
