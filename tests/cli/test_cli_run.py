"""`isrcheck run SCENARIO`: replaying a scripted list of actions."""
from __future__ import annotations

import json
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_failover_example_runs(cli):
    result = cli("run", str(EXAMPLES / "failover.toml"))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Crash(1)" in out and "ProcessBrokerChange(1)" in out and "DeliverRequest(2)" in out
    assert "down" in out  # broker 1 is shown dead after the crash
    assert "every property holds" in out


def test_failover_example_json(cli):
    code, doc = cli.json("run", str(EXAMPLES / "failover.toml"), "--json")
    assert code == 0
    steps = doc["steps"]
    assert steps[0]["action"] is None
    names = [s["action"]["name"] for s in steps[1:]]
    assert "Crash" in names and "ProcessBrokerChange" in names and "DeliverRequest" in names
    assert doc["broken"] == []
    # after the failover, broker 2 leads in ZooKeeper with a higher leader epoch
    after = steps[names.index("ProcessBrokerChange") + 1]["state"]["zk"]["partitions"][0]
    assert after["leader"] == 2 and after["leader_epoch"] >= 1
    crashed = steps[names.index("Crash") + 1]["state"]["brokers"][0]
    assert crashed["id"] == 1 and crashed["alive"] is False


def test_scenario_on_a_manifest_model(cli, fake_manifest, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('model = "tiny"\nsteps = ["Produce(1, 0)", "Fetch(2, 0)"]\n')
    code, doc = cli.json("run", str(p), "--json")
    assert code == 0
    assert doc["model"] == "tiny"
    log = doc["steps"][-1]["state"]["brokers"][1]["replicas"]["0"]["log"]
    assert log == [{"id": 1, "epoch": 0}]


def test_scenario_that_breaks_a_property_exits_1(cli, crash_config, tmp_path):
    _, report = cli.json("check", "--config", str(crash_config), "--json")
    v = report["violations"][0]
    steps = [f"{t['action']['name']}({', '.join(_fmt(a) for a in t['action']['args'])})" for t in v["trace"][1:]]
    p = tmp_path / "bug.toml"
    p.write_text("steps = " + json.dumps(steps) + "\n[config]\nbrokers = 3\nmax_records = 1\n"
                 "[config.faults]\ncrashes = 1\n")
    result = cli("run", str(p))
    assert result.exit_code == 1
    assert f"{v['property']} broken at step {v['length']}" in result.stdout
    code, doc = cli.json("run", str(p), "--json")
    assert code == 1 and {"step": v["length"], "property": v["property"]} in doc["broken"]


def _fmt(a):
    return "[" + ",".join(map(str, a)) + "]" if isinstance(a, list) else str(a)
