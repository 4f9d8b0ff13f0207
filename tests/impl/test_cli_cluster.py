"""``isrcheck cluster``: the command group over a real loopback cluster, and its input errors."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from isrcheck.commands.cluster import cluster


def run(*args: str):
    return CliRunner().invoke(cluster, list(args), catch_exceptions=False)


@pytest.mark.parametrize("args, message", [
    (["kill"], "give exactly one of --broker N or --controller"),
    (["reassign", "--replicas", "a,b"], "--replicas must be comma-separated broker ids"),
    (["reassign", "--replicas", "1,1"], "distinct"),
    (["up", "--brokers", "0"], "0 is not in the range"),
    (["produce", "--acks", "2", "x"], "'2' is not one of"),
    (["status"], "no cluster in"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    r = run(*args, "--dir", str(tmp_path / "none"))
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], r.output


@pytest.mark.cluster
def test_up_produce_consume_kill_status_down(tmp_path):
    d = str(tmp_path / "c")
    try:
        r = run("up", "--brokers", "3", "--dir", d)
        assert r.exit_code == 0, r.output
        assert "controller: controller-1 (epoch 1)" in r.output
        r = run("create-topic", "--partitions", "1", "--replication-factor", "3", "--dir", d)
        assert r.exit_code == 0 and "0: [1, 2, 3]" in r.output, r.output
        r = run("produce", "--partition", "0", "one", "two", "three", "--dir", d)
        assert r.exit_code == 0 and r.output.count("offset") == 3, r.output
        r = run("kill", "--broker", "1", "--dir", d)
        assert r.exit_code == 0 and "broker-1 killed" in r.output
        r = run("produce", "--partition", "0", "four", "--dir", d)  # waits for the new leader
        assert r.exit_code == 0, r.output
        r = run("consume", "--partition", "0", "--dir", d)
        assert [line.split("\t")[-1] for line in r.output.strip().splitlines()] == ["one", "two", "three", "four"]
        r = run("status", "--json", "--dir", d)
        st = json.loads(r.output)
        part = st["partitions"][0]
        assert part["leader"] in (2, 3) and part["isr"] == [2, 3] and part["hw"] == 4
        assert st["processes"]["broker-1"]["alive"] is False
        r = run("status", "--dir", d)
        assert "leader" in r.output and "isr" in r.output and "hw" in r.output and "(down)" in r.output
        r = run("kill", "--broker", "1", "--dir", d)
        assert r.exit_code == 2 and "not running" in r.output
        r = run("produce", "--partition", "3", "x", "--timeout", "1", "--dir", d)
        assert r.exit_code == 2 and "does not exist" in r.output
    finally:
        r = run("down", "--dir", d)
        assert r.exit_code == 0
