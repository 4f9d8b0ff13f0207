"""Lockstep random testing with hypothesis: model and implementation side by side."""
from __future__ import annotations

import pytest

from isrcheck.inputs import manifest
from isrcheck.conformance.lockstep import LockstepFailure, run_lockstep
from isrcheck.conformance.replay import conform_trace
from isrcheck.conformance.sides import impl_support
from isrcheck.conformance.traces import load_trace

import conform_mutants as M

MODELS = ["clean-election-isr-shrink", "two-partitions", "controller-failover", "reassignment-broker-crash",
          "topic-deletion", "lossy-undetected-restart", "delayed-requests", "undetected-restart",
          "deposed-controller-requests",  # one connection per controller
          "partial-fetch-isr-shrink", "partial-fetch-lossy-leader-kip-320",  # one record per fetch
          # later protocol generations: run when the implementation accepts them (asked of impl)
          "clean-election-isr-shrink-kip-320", "lossy-crash-kip-320", "controller-failover-kip-320",
          "reassignment-with-data-kip-101", "lossy-divergence-kip-279"]


@pytest.mark.parametrize("name", MODELS)
def test_model_and_implementation_agree_in_lockstep(name, tmp_path):
    cfg = manifest.get(name).config
    reason = impl_support(cfg)
    if reason is not None:
        pytest.skip(reason)
    run_lockstep(cfg, name=name, max_examples=40, steps=40, save_dir=tmp_path)
    assert not list(tmp_path.iterdir())  # nothing failed, nothing saved


def test_a_planted_bug_is_found_shrunk_and_saved_as_a_regression_trace(tmp_path):
    cfg = manifest.get("replication").config
    with M.fetch_answers_new_hw(), pytest.raises(LockstepFailure) as e:
        run_lockstep(cfg, name="replication", max_examples=60, steps=25, save_dir=tmp_path)
    assert "replicas[" in str(e.value) and ".hw" in str(e.value)
    saved = list(tmp_path.iterdir())
    assert len(saved) == 1
    trace = load_trace(saved[0])
    assert trace.kind == "regression" and "lockstep" in trace.description
    # shrunk: a produce and a few fetches (the minimum to make a follower learn a HW is 5 steps)
    assert 3 <= len(trace.actions) <= 8, trace.actions
    assert conform_trace(trace).ok  # the healthy implementation passes it
    with M.fetch_answers_new_hw():
        r = conform_trace(trace)
    assert r.divergence is not None and r.divergence.index == len(trace.actions)  # it fails at the last step
