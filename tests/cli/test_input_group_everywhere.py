"""The one input group beyond check (issue 31, "one set of inputs"): `run`, `diff`, `conform`,
`prove inductive`, `bmc` and `cluster up` take their model through
isrcheck/commands/options.py's input_options, and refuse in one `error:` line (exit 2) each
option of the group they cannot honour instead of ignoring it (`prove inductive` and `bmc` honour
--property and --strict: tests/cli/test_prove_inputs.py); `run` has the vacuity pass and
--strict; `report` exits with its verdict; `check --peer` carries the one verdict, TLC's figures
compared as its pins."""
from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
from shared import to_toml

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = str(ROOT / "examples" / "failover.toml")
SCHEMA = json.loads((ROOT / "specs" / "check-result.schema.json").read_text())
CHECK = jsonschema.Draft202012Validator({**SCHEMA, "$ref": "#/$defs/CheckResult"})
GROUP = ["--config", "--set", "--variant", "--property", "--keep-going", "--strict", "--peer"]

#: each command that now takes the group, as argv before its options
COMMANDS = {
    "run": ["run"],
    "diff": ["diff", "high-watermark", "kip-101"],
    "conform": ["conform"],
    "prove inductive": ["prove", "inductive"],
    "bmc": ["bmc"],
    "cluster up": ["cluster", "up"],
    "validate": ["validate"],
}

#: (command, option and value): what each command refuses, and a fragment of the line that says so
REFUSED = [
    ("run", ["--config", "x.toml"], "check --config FILE"),
    ("run", ["--peer", "kip-320"], "check --peer MODULE"),
    ("diff", ["--variant", "m:A"], "give the variant MODULE:ATTR as A or B"),
    ("diff", ["--strict"], "no vacuity verdict"),
    ("diff", ["--peer", "kip-320"], "TLA+ transcription"),
    ("conform", ["--property", "LeaderInIsr"], "not properties"),
    ("conform", ["--strict"], "no vacuity verdict"),
    ("conform", ["--peer", "kip-320"], "TLA+ transcription"),
    ("prove inductive", ["--keep-going"], "no first violation"),
    ("prove inductive", ["--peer", "kip-320"], "TLA+ transcription"),
    ("bmc", ["--peer", "kip-320"], "TLA+ transcription"),
    ("cluster up", ["--variant", "m:A"], "no variants"),
    ("cluster up", ["--property", "LeaderInIsr"], "checks no property"),
    ("cluster up", ["--keep-going"], "not a search"),
    ("cluster up", ["--strict"], "no vacuity verdict"),
    ("cluster up", ["--peer", "kip-320"], "TLA+ transcription"),
    ("validate", ["--variant", "m:A"], "not a variant of the model"),
    ("validate", ["--property", "LeaderInIsr"], "not properties"),
    ("validate", ["--keep-going"], "first event"),
    ("validate", ["--strict"], "no vacuity verdict"),
    ("validate", ["--peer", "kip-320"], "TLA+ transcription"),
    ("graph", ["--strict"], "no verdict"),
    ("traces export", ["--strict"], "no verdict"),
]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_lists_the_one_input_group(cli, name):
    res = cli(*COMMANDS[name][:2] if name in ("prove inductive", "cluster up") else COMMANDS[name][:1], "--help")
    assert res.exit_code == 0, res.output
    for option in GROUP:
        assert re.search(rf"(^|\s){re.escape(option)}\b", res.stdout), (name, option)
    if name in ("diff", "conform", "validate"):  # their positional arguments are protocols or traces: the target is --model
        assert re.search(r"(^|\s)--model NAME\b", res.stdout), name


@pytest.mark.parametrize("name, option, fragment", REFUSED, ids=[f"{n} {o[0]}" for n, o, _ in REFUSED])
def test_an_option_a_command_cannot_use_is_one_line_exit_2(cli, tmp_path, assert_input_error, name, option,
                                                             fragment):
    others = {"graph": ["graph", "replication"],
              "traces export": ["traces", "export", "replication", "--out", str(tmp_path / "t.jsonl")]}
    argv = others[name] if name in others else COMMANDS[name]
    extra = ["--dir", str(tmp_path / "c")] if name == "cluster up" else []
    line = assert_input_error(cli(*argv, *option, *extra), option[0], fragment)
    assert line.startswith(f"error: {option[0]}:"), line


@pytest.fixture
def idle_budget(tmp_path: Path) -> Path:
    """A scenario whose configuration budgets a crash that its steps never take."""
    p = tmp_path / "idle.toml"
    p.write_text('steps = ["Produce(1, 0)"]\n[config]\n' + to_toml({"brokers": 2, "replication_factor": 2, "max_records": 1,
                                                          "faults": {"crashes": 1}}, "config."))
    return p


def test_run_names_a_budget_its_steps_never_take_and_strict_fails_on_it(cli, idle_budget):
    res = cli("run", str(idle_budget))
    assert res.exit_code == 0, res.output
    assert "warning: Crash was never taken although faults.crashes = 1" in res.stderr
    assert "no effect on this replay" in res.stderr
    res = cli("run", str(idle_budget), "--strict")
    assert res.exit_code == 1 and "VACUOUS" in res.stdout
    code, doc = cli.json("run", str(idle_budget), "--strict", "--json")
    assert code == 1 and doc["outcome"] == "vacuous" and doc["strict"] is True
    assert [(w["key"], w["kind"]) for w in doc["warnings"]] == [("faults.crashes", "coverage")]


def test_run_warns_before_the_replay_as_check_does(cli, idle_budget):
    res = cli("run", str(idle_budget), "--set", "faults.crashes=0", "--set", "faults.undetected_restarts=1")
    assert res.exit_code == 0, res.output
    assert "warning: faults.undetected_restarts = 1 can never take effect" in res.stderr
    code, doc = cli.json("run", str(idle_budget), "--set", "faults.crashes=0", "--set",
                         "faults.undetected_restarts=1", "--strict", "--json")
    assert code == 1 and doc["outcome"] == "vacuous" and doc["config"]["faults"]["undetected_restarts"] == 1


def test_run_takes_set_and_property(cli, tmp_path):
    code, doc = cli.json("run", SCENARIO, "--json")
    assert code == 0 and doc["outcome"] == "success" and doc["warnings"] == []
    p = tmp_path / "breaks.toml"  # the leader crashes after a write, an unclean election follows
    p.write_text('steps = ["Produce(1, 0)", "Crash(1)"]\n[config]\n'
                 + to_toml({"brokers": 2, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 1}},
                           "config."))
    code, doc = cli.json("run", str(p), "--set", "max_records=2", "--json")
    assert doc["config"]["max_records"] == 2
    code, doc = cli.json("run", str(p), "--property", "LeaderInIsr", "--json")
    assert {b["property"] for b in doc["broken"]} <= {"LeaderInIsr"}
    assert cli("run", str(p), "--keep-going").exit_code in (0, 1)  # accepted: a replay always goes to its end


def test_run_refuses_what_has_no_steps(cli, assert_input_error):
    assert_input_error(cli("run", "replication"), "not a model NAME", "isrcheck check replication")
    assert_input_error(cli("run"), "give a scenario or trace FILE")
    assert_input_error(cli("run", SCENARIO, "--property", "PartitionEventuallyLed"), "liveness")


def test_report_exits_with_its_verdict(cli, fake_manifest, tmp_path, crash_config):
    out = tmp_path / "r.html"
    assert cli("report", "tiny", "-o", str(out)).exit_code == 0  # success
    res = cli("report", "tiny-crash", "-o", str(out))
    assert res.exit_code == 0 and "as pinned" in res.stdout  # the pinned failure, as check and gate pass it
    res = cli("report", "--config", str(crash_config), "-o", str(out))
    assert res.exit_code == 1 and out.is_file()  # a failure, not pinned: exit 1, the page written
    res = cli("report", "tiny", "--set", "faults.undetected_restarts=1", "--strict", "-o", str(out))
    assert res.exit_code == 1 and "VACUOUS" in res.stdout  # vacuous under --strict
    assert cli("report", "tiny", "--set", "faults.undetected_restarts=1", "-o", str(out)).exit_code == 0
    assert cli("report", "nope", "-o", str(out)).exit_code == 2


def test_report_of_a_path_exits_as_run_does(cli, tmp_path):
    out = tmp_path / "r.html"
    assert cli("report", SCENARIO, "-o", str(out)).exit_code == cli("run", SCENARIO).exit_code == 0
    assert cli("report", SCENARIO, "--strict", "-o", str(out)).exit_code == 0  # nothing vacuous on this path
    res = cli("report", SCENARIO, "--set", "max_records=1", "-o", str(out))
    assert res.exit_code == 2 and "apply to a MODEL" in res.stderr


def test_report_of_a_path_has_runs_vacuity_pass(cli, tmp_path, idle_budget):
    out = tmp_path / "r.html"
    res = cli("report", str(idle_budget), "-o", str(out))
    assert res.exit_code == cli("run", str(idle_budget)).exit_code == 0, res.output
    assert "warning: Crash was never taken although faults.crashes = 1" in res.stderr
    assert "Crash was never taken" in out.read_text()  # the page says it too
    res = cli("report", str(idle_budget), "--strict", "-o", str(out))
    assert res.exit_code == cli("run", str(idle_budget), "--strict").exit_code == 1
    assert "VACUOUS" in res.stdout and "VACUOUS" in out.read_text()
    trace = tmp_path / "t.jsonl"  # a trace file too: a one-step sample path of a model budgeting a crash
    for seed in range(20):
        assert cli("traces", "export", "leader-crash-kip-320", "--out", str(trace), "--max-depth", "1",
                   "--seed", str(seed)).exit_code == 0
        if '"Crash"' not in trace.read_text():
            break
    assert '"Crash"' not in trace.read_text(), "twenty seeds, each path's one step a crash"
    res = cli("report", str(trace), "--strict", "-o", str(out))
    assert res.exit_code == 1 and "warning: Crash was never taken although faults.crashes = 1" in res.stderr


def _peer(cli, *args: str) -> dict:
    code, doc = cli.json("check", "--peer", *args, "--json")
    CHECK.validate(doc)
    assert doc["exit_status"] == code
    return doc


def test_check_peer_compares_tlcs_figures_as_its_pins(cli):
    doc = _peer(cli, "truncate-to-hw")  # WeakIsr's 9-state counterexample is what TLC records
    assert (doc["outcome"], doc["found"], doc["exit_status"]) == ("as_pinned", "safety_failure", 0)
    assert doc["pins"] == {"as_pinned": True, "mismatches": []}
    doc = _peer(cli, "kip-320")
    assert doc["outcome"] == "success" and doc["pins"] == {"as_pinned": True, "mismatches": []}
    res = cli("check", "--peer", "truncate-to-hw")
    assert res.exit_code == 0
    assert "verdict SAFETY FAILURE as pinned" in res.stdout and "expected.toml" in res.stdout


def test_check_peer_pins_apply_only_as_recorded(cli):
    doc = _peer(cli, "truncate-to-hw", "--property", "StrongIsr")  # one property: not what TLC recorded
    assert doc["pins"] is None and doc["outcome"] == "safety_failure"
    doc = _peer(cli, "kip-320", "--max-states", "100")
    assert doc["pins"] is None and doc["outcome"] == "incomplete"
    doc = _peer(cli, "kip-320", "--strict")
    assert doc["strict"] is True and doc["warnings"] == [] and doc["outcome"] == "success"
    assert "liveness" not in doc  # the specification states no liveness property


def test_check_peer_sets_the_specifications_constants(cli, assert_input_error):
    """--set log_size/max_records/max_leader_epoch reach the transcription (the count is the
    checker's on the model built with them, not the default's), the pins apply only at the defaults
    TLC was run with, and any other key or value is one error line."""
    from isrcheck.engine.checker import Checker
    from isrcheck.peers.kafka_specification.model import PeerModel

    doc = _peer(cli, "kip-320", "--set", "max_records=1", "--set", "max_leader_epoch=2")
    want = Checker(PeerModel("kip-320", 2, max_records=1, max_leader_epoch=2)).run().distinct_states
    default = _peer(cli, "kip-320")
    assert doc["distinct_states"] == want != default["distinct_states"]
    assert (doc["config"]["max_records"], doc["config"]["max_leader_epoch"], doc["config"]["log_size"]) == (1, 2, 2)
    assert doc["pins"] is None and doc["outcome"] == "success"
    same = _peer(cli, "kip-320", "--set", "max_leader_epoch=3")  # the default, said out loud: pinned still
    assert same["pins"] == {"as_pinned": True, "mismatches": []}
    assert_input_error(cli("check", "--peer", "kip-320", "--set", "faults.crashes=1"), "--set faults.crashes",
                       "only the specification's constants")
    assert_input_error(cli("check", "--peer", "kip-320", "--set", "max_records=two"), "expects an integer")
    assert_input_error(cli("check", "--peer", "kip-320", "--set", "log_size=0"), "log_size >= 1")


def test_check_peer_mismatches_are_named():
    from isrcheck.commands.peer import peer_verdict
    from isrcheck.peers.kafka_specification import expected

    figures = expected("kip-320")
    holds = SimpleNamespace(outcome="success", violations=[], limit_hit=None,
                            distinct_states=figures["states_no_symmetry"] + 1, depth=figures["depth"] - 1)
    v = peer_verdict("kip-320", 2, False, (), False, False, False, holds)
    assert v.outcome == "not_as_pinned" and v.exit_status == 1
    assert v.mismatches == [f"{holds.distinct_states:,} distinct states, TLC's {figures['states_no_symmetry']:,}"]
    broken = SimpleNamespace(outcome="safety_failure", limit_hit=None, distinct_states=1, depth=1,
                             violations=[SimpleNamespace(property="StrongIsr", length=4)])
    v = peer_verdict("kip-320", 2, False, (), False, False, False, broken)
    assert v.outcome == "safety_failure" and "TLC finds it holds" in v.mismatches[0]
    assert peer_verdict("kip-320", 3, False, (), False, False, False, holds).pinned is False


def test_check_peer_refuses_liveness_in_one_line(cli, assert_input_error):
    assert_input_error(cli("check", "--peer", "kip-320", "--liveness"), "--liveness", "no liveness property")


def test_diff_takes_the_bounds_through_the_group(cli, assert_input_error):
    code, doc = cli.json("diff", "high-watermark", "kip-101", "--model", "hw-truncation-one-crash", "--json")
    changed = {c["property"] for c in doc["verdict_changes"]}
    assert code == 1 and len(changed) >= 2
    keep = sorted(changed)[0]
    code, doc = cli.json("diff", "high-watermark", "kip-101", "--model", "hw-truncation-one-crash",
                         "--property", keep, "--json")
    assert code == 1 and [c["property"] for c in doc["verdict_changes"]] == [keep]
    assert_input_error(cli("diff", "high-watermark", "kip-101", "--model", "a", "--model", "b"), "one --model")
    assert_input_error(cli("diff", "high-watermark", "kip-101", "--property", "IsrHeals"), "safety verdicts")


def test_conform_refuses_what_a_trace_carries(cli, tmp_path, assert_input_error):
    trace = tmp_path / "t.jsonl"
    assert cli("traces", "export", "replication", "--out", str(trace), "--max-depth", "3").exit_code == 0
    assert_input_error(cli("conform", str(trace), "--set", "max_records=1"), "--set", "TRACE carries its own")
    assert_input_error(cli("conform", str(trace), "--keep-going"), "--keep-going applies to --model")
    assert_input_error(cli("conform", "--model", "replication", "--config", str(trace)), "not both")


def test_bmc_and_prove_inductive_take_a_scenario_file(cli, assert_input_error):
    code, doc = cli.json("bmc", SCENARIO, "--depth", "1", "--set", "max_records=1", "--json")
    assert code == 0 and doc["model"] == SCENARIO and doc["config"]["max_records"] == 1
    assert_input_error(cli("bmc", "replication", "--keep-going", "--first"), "contradict")


def test_cluster_up_reads_name_config_and_set_through_the_group(tmp_path, crash_config):
    from isrcheck.commands.cluster import _settings, broker_count
    from isrcheck.commands.options import Inputs
    from isrcheck.impl.core.config import ConfigError

    assert _settings(Inputs()) == {}
    named = _settings(Inputs(("hw-truncation-one-crash",), overrides=("min_insync_replicas=2",)))
    assert named["min_insync_replicas"] == 2 and "assignment" not in named
    assert _settings(Inputs(config_file=str(crash_config)))["faults"]["crashes"] == 1
    with pytest.raises(ConfigError, match="not both"):
        _settings(Inputs(("replication",), config_file=str(crash_config)))
    with pytest.raises(ConfigError, match="bogus"):
        _settings(Inputs(config_file=str(crash_config), overrides=("bogus=1",)))
    four = _settings(Inputs(("replication",), overrides=("brokers=4",)))
    assert broker_count(four, None) == 4 and broker_count(four, 5) == 5  # the target's count, unless --brokers
    assert broker_count({}, None) == 3


def test_validate_record_takes_its_target_through_the_group(cli, tmp_path, crash_config, assert_input_error):
    log = tmp_path / "run.jsonl"
    res = cli("validate", "--record", str(log), "--config", str(crash_config), "--set", "max_records=1",
              "--seed", "1", "--steps", "12")
    assert res.exit_code == 0, res.output
    header = json.loads(log.read_text().split("\n", 1)[0])
    assert header["config"]["max_records"] == 1 and header["config"]["faults"]["crashes"] == 1
    assert cli("validate", str(log)).exit_code == 0
    assert_input_error(cli("validate", str(log), "--set", "max_records=2"), "go with --record")
    assert_input_error(cli("validate", "--record", str(log), "--model", "a", "--model", "b"), "one --model")
    assert_input_error(cli("validate", "--record", str(log), "--model", "replication", "--config",
                           str(crash_config)), "not both")
