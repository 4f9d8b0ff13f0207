"""`isrcheck check --workers N` gives the single-process answer, trace included."""
from __future__ import annotations


def _summary(doc):
    return (doc["outcome"], doc["distinct_states"], doc["depth"],
            [(v["property"], v["length"], [s["action"] for s in v["trace"]]) for v in doc["violations"]])


def test_two_workers_give_the_same_result_and_trace(cli, crash_config):
    code1, one = cli.json("check", "--config", str(crash_config), "--json")
    code2, two = cli.json("check", "--config", str(crash_config), "--workers", "2", "--json")
    assert code1 == code2 == 1
    assert _summary(one) == _summary(two)


def test_two_workers_on_a_passing_model(cli, small_config):
    code, doc = cli.json("check", "--config", str(small_config), "--workers", "2", "--json")
    code1, one = cli.json("check", "--config", str(small_config), "--json")
    assert code == code1 == 0 and _summary(doc) == _summary(one)


def test_workers_must_be_positive(cli):
    assert cli("check", "replication", "--workers", "0").exit_code == 2
