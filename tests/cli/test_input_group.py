"""One set of inputs (issue 31): every command that runs a model takes the same target forms (a
manifest NAME, a scenario or trace FILE, --config) and the same --set, --variant, --property,
--keep-going, --strict and --peer, declared once (isrcheck/commands/options.py: input_options);
`report` shows every broken property with the line naming the offending values."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = str(ROOT / "examples" / "reassignment-seed.toml")
GROUP = ["--config", "--set", "--variant", "--property", "--keep-going", "--strict", "--peer"]


def _commands(out: Path) -> dict[str, list[str]]:
    """Each command that runs a model, as argv before its target; the extra options it needs."""
    return {
        "check": ["check"],
        "simulate": ["simulate", "--walks", "5"],
        "graph": ["graph", "-o", str(out / "g.dot")],
        "report": ["report", "-o", str(out / "r.html")],
        "traces export": ["traces", "export", "--out", str(out / "t.jsonl")],
    }


@pytest.mark.parametrize("name", ["check", "simulate", "graph", "report", "traces export"])
def test_every_command_lists_the_one_input_group(cli, name):
    res = cli(*name.split(), "--help")
    assert res.exit_code == 0
    for option in GROUP:
        assert re.search(rf"(^|\s){re.escape(option)}\b", res.stdout), (name, option)


@pytest.mark.parametrize("name", ["check", "simulate", "graph", "report", "traces export"])
def test_every_command_takes_each_target_form(cli, tmp_path, small_config, name):
    argv = _commands(tmp_path)[name]
    for target in (["--config", str(small_config)], ["--config", str(small_config), "--set", "max_records=0"]):
        res = cli(*argv, *target)
        assert res.exit_code in (0, 1), (name, target, res.output)
        assert not res.stderr.startswith("error:"), (name, res.stderr)
    scenario = tmp_path / "tiny-scenario.toml"
    scenario.write_text('steps = ["Produce(1, 0)"]\n[config]\nbrokers = 2\nreplication_factor = 2\nmax_records = 1\n')
    res = cli(*argv, str(scenario), *(["--set", "max_records=2"] if name != "report" else []))
    assert res.exit_code in (0, 1), (name, res.output)


def test_check_on_a_scenario_file_checks_its_configuration(cli):
    code, doc = cli.json("check", SCENARIO, "--set", "max_records=0", "--json")
    assert doc["model"] == SCENARIO and doc["config"]["max_records"] == 0 and doc["pins"] is None
    assert code == doc["exit_status"]


def test_traces_export_takes_config_and_keep_going(cli, tmp_path, crash_config):
    res = cli("traces", "export", "--config", str(crash_config), "--keep-going", "--out", str(tmp_path / "t.jsonl"))
    assert res.exit_code == 0, res.output
    written = sorted(p.name for p in tmp_path.glob("t-*.jsonl"))
    assert len(written) >= 2 and "t-NoCommittedWriteLost.jsonl" in written  # one file per broken property


def test_report_shows_every_broken_property_with_its_message(cli, tmp_path):
    out = tmp_path / "r.html"
    res = cli("report", "hw-truncation-one-crash", "--keep-going", "-o", str(out))
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "NoCommittedWriteLost (safety, 8 steps)" in page and "StrongIsr (safety, 10 steps)" in page
    assert "m1 missing from the log of broker 3" in page
    assert "verdict SAFETY FAILURE as pinned" in res.stdout


def test_report_covers_liveness(cli, tmp_path):
    out = tmp_path / "r.html"
    res = cli("report", "undetected-restart", "-o", str(out))
    assert "LIVENESS FAILURE as pinned" in res.stdout, res.stdout
    assert "SUCCESS" not in res.stdout
    page = out.read_text()
    assert "PartitionEventuallyLed (liveness, 2 steps)" in page


def test_report_on_a_scenario_replays_it(cli, tmp_path):
    out = tmp_path / "r.html"
    res = cli("report", SCENARIO, "--property", "LeaderInIsr", "-o", str(out))
    assert res.exit_code == 2 and "carries its configuration" in res.stderr  # a path, not a check
    res = cli("report", SCENARIO, "-o", str(out))
    assert res.exit_code == 0 and "along this scenario" in res.stdout and out.is_file()


def test_peer_is_refused_in_one_line_where_it_cannot_apply(cli, tmp_path, assert_input_error):
    assert_input_error(cli("graph", "--peer", "kip-320"), "--peer")
    assert_input_error(cli("report", "--peer", "kip-320", "-o", str(tmp_path / "r.html")), "--peer")
