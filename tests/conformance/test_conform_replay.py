"""Model -> implementation: traces replayed on the step-mode simulator, compared step by step."""
from __future__ import annotations

import copy

import pytest

from isrcheck.inputs import manifest
from isrcheck.conformance.export import samples
from isrcheck.conformance.replay import conform_actions, conform_trace
from isrcheck.conformance.sides import impl_support, supported_generations
from isrcheck.specs.protocol import GENERATIONS

from conform_helpers import acts

from isrcheck.specs.weaknesses import load_weaknesses

#: the gallery's failing models (one counterexample per weakness and generation) and one more: the
#: counterexamples every other test of this folder also uses, each found by the checker in seconds
FAILING = sorted({n for w in load_weaknesses() for n in w.generations if manifest.get(n).expect == "safety_failure"}
                 | {"lossy-undetected-restart"})


@pytest.mark.parametrize("name", FAILING)
@pytest.mark.parametrize("against", ["trace", "both"])
def test_gallery_counterexamples_replay_on_the_implementation(ce_trace, name, against):
    trace = ce_trace(name)
    r = conform_trace(trace, against=against)
    if impl_support(trace.config) is not None:
        assert r.skipped and "does not accept" in r.skipped
        pytest.skip(r.skipped)
    assert r.ok, r.divergence.summary() if r.divergence else r.skipped
    assert r.matched == len(trace.steps)


@pytest.mark.parametrize("name", ["replication", "clean-election", "controller-failover", "lossy-crash",
                                  "undetected-restart", "topic-deletion", "reassignment-broker-crash",
                                  "deposed-controller-requests", "failover-misses-crash-kip-320-per-controller",
                                  "partial-fetch-isr-shrink", "partial-fetch-lossy-leader-kip-320"])
def test_seeded_sample_paths_replay(name):
    for t in samples(manifest.resolve(name, None), n=6, seed=11, max_depth=40):
        r = conform_trace(t, against="both")
        assert r.ok, r.divergence.summary()


def test_supported_generations_come_from_the_implementation():
    gens = supported_generations()
    assert "high-watermark" in gens and set(gens) <= set(GENERATIONS)
    for g in GENERATIONS:
        assert (g in gens) == (impl_support({"generation": g.value}) is None)
        assert impl_support({"truncation": g.value}) == impl_support({"generation": g.value})  # the alias


def test_a_tampered_observation_is_reported_at_its_step_with_the_field(ce_trace):
    trace = copy.deepcopy(ce_trace("hw-truncation-one-crash"))
    trace.steps[5].observation["replicas"][2]["hw"] = 1  # broker 3's replica: a value neither side has
    r = conform_trace(trace, against="trace")
    d = r.divergence
    assert d is not None and d.index == 5 and d.action == ("Fetch", (3, 0)) and r.matched == 5
    assert [x.path for x in d.differences] == ["replicas[3,0].hw"]
    assert d.differences[0].expected == 1 and d.differences[0].actual == 0
    # against the model too: the trace itself is stale, and that is what is reported
    r = conform_trace(trace, against="both")
    assert r.divergence.reason == "stale-trace" and r.divergence.index == 5
    assert conform_trace(trace, against="model").ok


def test_an_action_the_implementation_refuses_is_reported():
    cfg = manifest.get("replication").config
    r = conform_actions(cfg, acts("Produce(1, 0)", "Produce(2, 0)"), against="model")
    assert r.divergence.reason == "model-refused" and r.divergence.index == 2
    # against a stored expectation (no model): the implementation itself refuses
    from isrcheck.conformance.sides import ModelSide

    m = ModelSide(cfg)
    expected = [(m.observation(), m.acked())] * 3
    r = conform_actions(cfg, acts("Produce(1, 0)", "Produce(2, 0)"), expected=expected, against="trace")
    assert r.divergence.index == 1 and r.divergence.reason == "observation"
    r = conform_actions(cfg, acts("Produce(2, 0)"), expected=expected[:2], against="trace")
    assert r.divergence.reason == "impl-refused" and "does not lead" in r.divergence.message


def test_ignore_leaves_fields_out(ce_trace):
    trace = copy.deepcopy(ce_trace("hw-truncation-one-crash"))
    trace.steps[5].observation["replicas"][2]["hw"] = 1
    assert conform_trace(trace, ignore=("replicas[*].hw",)).ok
    assert not conform_trace(trace, ignore=("replicas[2,0].hw",)).ok


def test_an_implementation_observation_breaking_the_schema_is_reported(monkeypatch):
    from isrcheck.impl.rigs import simulator

    original = simulator.Simulator.observe

    def bad(self):
        o = original(self)
        o["replicas"][0]["hw"] = True  # a bool where the schema wants an int (True == 1 in Python)
        return o

    cfg = manifest.get("replication").config
    monkeypatch.setattr(simulator.Simulator, "observe", bad)
    r = conform_actions(cfg, acts("Produce(1, 0)"))
    assert r.divergence.index == 0 and r.divergence.reason in ("impl-invalid", "observation")
    assert "replicas[0].hw" in r.divergence.message or r.divergence.differences


def test_a_configuration_the_implementation_refuses_is_skipped(monkeypatch):
    from isrcheck.conformance import replay as R

    cfg = manifest.get("replication").config
    monkeypatch.setattr(R, "impl_support", lambda c: "truncation 'x' is not implemented yet")
    r = conform_actions(cfg, acts("Produce(1, 0)"))
    assert r.skipped and not r.ok and r.divergence is None
