"""Mutation check: break the implementation on purpose, one function per test, and assert that
conformance reports the break at the first step where the implementation departs from the model.

Each planted bug (conform_mutants.py) is driven through a path chosen to exercise it (found with
the model: the counterexample of a gallery model, or the shortest path to the situation the broken
code guards against); the expected step and field are stated, and the steps before must all match.
Then the same bug must be found blind: by the covering paths of a small model, and by the shrunk
lockstep regression trace saved for it.
"""
from __future__ import annotations

import pytest

from isrcheck.inputs import manifest
from isrcheck.conformance.cover import cover
from isrcheck.conformance.replay import conform_actions, conform_trace
from isrcheck.conformance.traces import load_trace, write_trace
from isrcheck.model.config import from_mapping

import conform_mutants as M
from conform_helpers import REGRESSIONS, acts

CRASH_TWO_DELAYED = {"brokers": 3, "replication_factor": 3, "max_records": 0,
                     "faults": {"crashes": 2, "delayed_requests": 1}}

#: mutant -> (configuration, path, expected step, expected action, a field that must differ)
CASES = {
    "no-truncation-on-become-follower": (
        "hw-truncation-one-crash", None, 8, "DeliverRequest(3)", "replicas[3,0].log"),
    "no-leader-epoch-fencing": (
        CRASH_TWO_DELAYED, acts("Crash(2)", "Crash(3)", "ProcessBrokerChange(1)", "DeliverDelayedRequest(1, 1)",
                                "DeliverRequest(1)"), 5, "DeliverRequest(1)", "replicas[1,0].leader_epoch"),
    "no-controller-epoch-fencing": (
        "failover-misses-crash", acts("ControllerFailover()", "DeliverRequest(1)", "Crash(2)",
                                      "ProcessBrokerChange(1)", "DeliverRequest(1)"),
        5, "DeliverRequest(1)", "replicas[1,0].leader_epoch"),
    "elect-outside-isr": (
        "clean-election-isr-shrink", acts("ShrinkIsr(1, 0, 2)", "Crash(1)", "ProcessBrokerChange(1)"),
        3, "ProcessBrokerChange(1)", "partitions[0].leader"),
    "fetch-answers-new-hw": (
        "replication", acts("Produce(1, 0)", "Fetch(2, 0)", "Fetch(2, 0)", "Fetch(3, 0)", "Fetch(3, 0)",
                            "Fetch(2, 0)"), 5, "Fetch(3, 0)", "replicas[3,0].hw"),
    "hw-ignores-isr": (
        "replication", acts("Produce(1, 0)", "Fetch(2, 0)"), 1, "Produce(1, 0)", "replicas[1,0].hw"),
}


def _config(spec):
    return manifest.get(spec).config if isinstance(spec, str) else from_mapping(spec)


@pytest.mark.parametrize("mutant", sorted(CASES))
def test_a_planted_bug_is_reported_at_the_first_diverging_step(mutant, ce_trace):
    spec, path, step, action, field = CASES[mutant]
    cfg = _config(spec)
    if path is None:
        path = ce_trace(spec).actions
    healthy = conform_actions(cfg, path)
    assert healthy.ok, healthy.divergence.summary()  # the path itself conforms on the real code
    with M.MUTANTS[mutant]():
        r = conform_actions(cfg, path)
    d = r.divergence
    assert d is not None, f"{mutant} went unnoticed"
    assert d.reason == "observation"
    assert d.index == step and d.action_text == action, d.summary()
    assert r.matched == step  # the initial state and every step before it matched
    assert field in [x.path for x in d.differences], d.summary()


@pytest.mark.parametrize("mutant,model", [("hw-ignores-isr", "replication"),
                                          ("fetch-answers-new-hw", "replication"),
                                          ("no-truncation-on-become-follower", "clean-election"),
                                          ("elect-outside-isr", "clean-election-isr-shrink")])
def test_covering_paths_find_a_planted_bug_blind(mutant, model):
    cfg = manifest.get(model).config
    with M.MUTANTS[mutant]():
        rep = cover(cfg, "edges", label=model)
    assert rep.divergence is not None, f"{mutant} went unnoticed by the covering paths of {model}"
    # the failing path ends at the divergence, and its prefix conforms on the mutant: the first step
    assert rep.divergence.index == len(rep.failing_path)
    with M.MUTANTS[mutant]():
        assert conform_actions(cfg, rep.failing_path[:-1]).ok
    assert rep.edges_covered < rep.edges_total


@pytest.mark.parametrize("path", sorted(REGRESSIONS.glob("*--*.jsonl")), ids=lambda p: p.name)
def test_each_saved_regression_catches_the_bug_it_was_found_with(path):
    mutant = path.name.split("--", 1)[1].rsplit("-", 1)[0]
    trace = load_trace(path)
    assert conform_trace(trace).ok
    with M.MUTANTS[mutant]():
        r = conform_trace(trace)
    assert r.divergence is not None and r.divergence.index == len(trace.actions), mutant


def test_the_command_line_reports_the_step_the_action_and_the_fields(tmp_path, run_cli, ce_trace):
    trace = ce_trace("hw-truncation-one-crash")
    f = tmp_path / "ce.jsonl"
    write_trace(trace, f)
    with M.no_truncation_on_become_follower():
        res = run_cli("conform", str(f), "--save-failure", str(tmp_path / "fail.jsonl"))
    assert res.exit_code == 1
    out = res.output
    assert "diverges" in out and "step 8" in out and "DeliverRequest(3)" in out
    assert "replicas[3,0].log" in out and "replicas[3,0].leo" in out and "m1@e0" in out
    saved = load_trace(tmp_path / "fail.jsonl")
    assert len(saved.actions) == 8 and saved.kind == "regression"
    assert run_cli("conform", str(f)).exit_code == 0
