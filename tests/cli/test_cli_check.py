"""`isrcheck check`: outcomes, exit codes, the JSON report, and replaying its counterexample."""
from __future__ import annotations

import json

from isrcheck.invariants import build_model
from isrcheck.model.action_text import from_json
from isrcheck.engine.checker import replay_actions
from isrcheck.model.config import from_mapping
from isrcheck.render.json_form import state_to_json
from isrcheck.inputs.scenario import run_scenario

SMALL = {"brokers": 3, "max_records": 1}
SMALL_CRASH = {"brokers": 3, "max_records": 1, "faults": {"crashes": 1}}

REQUIRED_KEYS = {
    "model", "outcome", "violations", "distinct_states", "depth", "seconds", "transitions",
    "states_per_second", "collision_probability", "coverage", "unwitnessed", "config",
}


def test_check_success_exits_0_and_prints_a_summary(cli, small_config):
    result = cli("check", "--config", str(small_config))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "SUCCESS" in out
    assert "distinct states" in out
    assert "Produce" in out and "Fetch" in out  # the coverage table
    assert "Counterexample" not in out


def test_check_json_has_the_required_keys(cli, small_config):
    code, doc = cli.json("check", "--config", str(small_config), "--json")
    assert code == 0
    assert REQUIRED_KEYS <= set(doc)
    assert doc["outcome"] == "success"
    assert doc["violations"] == []
    assert doc["distinct_states"] > 1
    assert doc["coverage"]["Produce"] >= 1
    assert doc["config"]["brokers"] == 3 and doc["config"]["max_records"] == 1
    assert 0 <= doc["collision_probability"] < 1e-9


def test_check_violation_exits_1_and_prints_the_trace(cli, crash_config):
    result = cli("check", "--config", str(crash_config))
    assert result.exit_code == 1
    out = result.stdout
    assert "SAFETY FAILURE" in out
    assert "Counterexample" in out
    assert "Crash(1)" in out
    assert "(initial state)" in out
    assert "b1 log" in out and "ISR" in out and "LEO" in out


def test_violation_json_trace_is_replayable(cli, crash_config, tmp_path):
    code, doc = cli.json("check", "--config", str(crash_config), "--json")
    assert code == 1
    assert doc["outcome"] == "safety_failure"
    v = doc["violations"][0]
    assert {"property", "kind", "message", "length", "trace"} <= set(v)
    trace = v["trace"]
    assert len(trace) == v["length"] + 1
    assert trace[0]["action"] is None
    assert [t["step"] for t in trace] == list(range(len(trace)))
    actions = [from_json(t["action"]) for t in trace[1:]]

    # 1. through the checker's replay
    model = build_model(from_mapping(SMALL_CRASH))
    steps = replay_actions(model, actions)
    assert state_to_json(steps[-1].state) == trace[-1]["state"]
    broken = {p.name for p in model.properties() if p.kind == "always" and not p.check(steps[-1].state)}
    assert v["property"] in broken

    # 2. through a scenario file, as a user would
    scenario = tmp_path / "replay.toml"
    scenario.write_text(
        "steps = " + json.dumps([str(a) for a in actions]) + "\n"
        + "[config]\nbrokers = 3\nmax_records = 1\n[config.faults]\ncrashes = 1\n"
    )
    _, replayed = run_scenario(scenario)
    assert state_to_json(replayed[-1].state) == trace[-1]["state"]


def test_set_overrides_reach_the_model(cli, small_config):
    code, doc = cli.json("check", "--config", str(small_config), "--set", "faults.crashes=1", "--json")
    assert code == 1
    assert doc["config"]["faults"]["crashes"] == 1
    assert doc["outcome"] == "safety_failure"


def test_set_overrides_on_a_manifest_model(cli, fake_manifest):
    code, doc = cli.json("check", "tiny", "--set", "faults.crashes=1", "--json")
    assert code == 1 and doc["model"] == "tiny"
    assert doc["config"]["faults"]["crashes"] == 1
    code, doc = cli.json("check", "tiny", "--json")
    assert code == 0 and doc["config"]["faults"]["crashes"] == 0


def test_max_depth_gives_incomplete_and_exit_1(cli, small_config):
    code, doc = cli.json("check", "--config", str(small_config), "--max-depth", "2", "--json")
    assert code == 1
    assert doc["outcome"] == "incomplete"
    assert doc["depth"] <= 2
    result = cli("check", "--config", str(small_config), "--max-depth", "2")
    assert result.exit_code == 1 and "INCOMPLETE" in result.stdout


def test_max_states_gives_incomplete(cli, small_config):
    code, doc = cli.json("check", "--config", str(small_config), "--max-states", "3", "--json")
    assert code == 1 and doc["outcome"] == "incomplete" and doc["distinct_states"] <= 3


def test_keep_going_reports_violations_of_several_properties(cli, crash_config):
    _, first = cli.json("check", "--config", str(crash_config), "--json")
    _, all_ = cli.json("check", "--config", str(crash_config), "--keep-going", "--json")
    assert len(first["violations"]) == 1
    assert len(all_["violations"]) >= 1
    assert all_["distinct_states"] >= first["distinct_states"]
    names = [v["property"] for v in all_["violations"]]
    assert len(names) == len(set(names))


def test_symmetry_flags_are_accepted(cli, small_config):
    for flag in ("--symmetry", "--no-symmetry"):
        result = cli("check", "--config", str(small_config), flag, "--json")
        assert result.exit_code == 0
        json.loads(result.stdout)


def test_json_stdout_is_exactly_one_object(cli, crash_config):
    result = cli("check", "--config", str(crash_config), "--json")
    doc = json.loads(result.stdout)  # fails on any extra output
    assert isinstance(doc, dict)
    assert "Counterexample" not in result.stdout


def test_version(cli):
    from isrcheck import __version__

    result = cli("--version")
    assert result.exit_code == 0 and __version__ in result.stdout


def test_manifest_model_by_name(cli, fake_manifest):
    # the manifest pins tiny-crash's failure: check compares the pins as gate does and passes it
    result = cli("check", "tiny-crash")
    assert result.exit_code == 0, result.output
    assert "tiny-crash" in result.stdout and "Counterexample" in result.stdout
    assert "verdict SAFETY FAILURE as pinned" in result.stdout
    # changed by --set, the pins no longer apply: the failure fails the run
    assert cli("check", "tiny-crash", "--set", "max_records=1").exit_code == 1


def test_real_manifest_models_run_by_name(cli):
    # the smallest safety-failure model of the packaged manifest, whatever it is called
    from isrcheck.inputs import manifest

    entries = [e for e in manifest.load() if e.gate == "default"]
    assert entries
    e = min(entries, key=lambda e: (e.config.max_records, e.config.brokers))
    code, doc = cli.json("check", e.name, "--max-states", "200", "--json")
    assert doc["model"] == e.name and code in (0, 1)

