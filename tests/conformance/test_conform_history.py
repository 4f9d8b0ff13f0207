"""Kafka's bugs put back in the implementation (``reintroduce``), replayed against the model's.

For every bug of specs/history.toml the implementation can put back (its ``impl`` key), the checker
finds the manifest pair's property broken on the pair's first model (the bug back); the
implementation, configured the same, must follow every step of that counterexample with the model's
observations, the violating step included, and its own observation must break the same property.
Without the bug (the same configuration, ``reintroduce`` emptied: the pair's second model) the same
schedule must not break it on the implementation: so the test fails if a switch does nothing, and
if the fixed rule is lost. The others are refused in one line naming what the implementation lacks.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from isrcheck.conformance.replay import conform_actions, conform_trace
from isrcheck.conformance.traces import load_trace
from isrcheck.conformance.sides import ImplRefused, ImplSide
from isrcheck.engine.checker import Checker
from isrcheck.impl.core.config import ConfigError
from isrcheck.impl.core.config import from_mapping as impl_config
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants.properties import OBSERVATION_PROPERTIES
from isrcheck.specs.history import bug, in_impl, reproduced

IN_IMPL = [b.id for b in in_impl()]
#: those whose pair is a safety verdict (the with-bug model fails a safety property); KAFKA-10706's is a
#: liveness lasso, replayed from a stored trace below
SAFETY = [i for i in IN_IMPL if manifest.get(bug(i).models[0]).expect == "safety_failure"]
LASSO = Path(__file__).parent / "history" / "history-kafka-10706--IsrHeals-lasso.jsonl"
REFUSED = [b for b in reproduced() if b.impl is None]


def _epoch_cache_covers_log(obs: dict, acked: list) -> bool:
    """EpochCacheCoversLog over an observation: every record's epoch is the cache's entry at its offset
    (the model's property has no observation form; this is its definition, specs/06)."""
    for r in obs["replicas"]:
        if not r.get("present", True):
            continue
        cache = sorted((e["start_offset"], e["epoch"]) for e in r.get("epochs", []))
        for offset, rec in enumerate(r["log"]):
            named = [e for s, e in cache if s <= offset]
            if not named or named[-1] != rec["epoch"]:
                return False
    return True


_HOLDS = {**OBSERVATION_PROPERTIES, "EpochCacheCoversLog": _epoch_cache_covers_log}


@lru_cache(maxsize=None)
def _counterexample(name: str):
    """The manifest model's shortest counterexample as actions (checked once per session: KAFKA-7164's
    model, of the large set, takes a few seconds)."""
    e = manifest.get(name)
    r = Checker(build_model(e.config, symmetry=e.symmetry, properties=e.properties)).run()
    assert r.outcome == "safety_failure", (name, r.outcome)
    v = r.violations[0]
    assert (v.property, v.length) == (e.property, e.length)
    return e, tuple((s.action.name, s.action.args) for s in v.trace[1:])


def test_the_history_says_which_bugs_the_implementation_puts_back():
    assert set(IN_IMPL) == {"KAFKA-708", "KAFKA-1097", "KAFKA-1188", "KAFKA-10432", "KAFKA-7164", "KAFKA-10706"}
    assert set(IN_IMPL) - set(SAFETY) == {"KAFKA-10706"}
    assert all(b.impl_lacks for b in REFUSED)


@pytest.mark.parametrize("bug_id", SAFETY)
def test_the_implementation_with_the_bug_replays_the_models_counterexample(bug_id):
    b = bug(bug_id)
    e, steps = _counterexample(b.models[0])
    res = conform_actions(e.config, steps, label=b.models[0])
    assert res.skipped is None, res.skipped
    assert res.ok, res.divergence.summary() if res.divergence else res
    impl = ImplSide(e.config)
    for n, a in steps:
        impl.step(n, a)
    assert not _HOLDS[b.property](impl.observation(), impl.acked()), f"{bug_id}: {b.property} holds on the implementation"


#: where the fixed implementation parts from the counterexample: None, it takes every step and keeps the
#: property; else the step (1-based) it refuses, the very move the fix forbids
_FIXED_REFUSES = {"KAFKA-708": None, "KAFKA-1188": None, "KAFKA-10432": None,
                  "KAFKA-1097": 16,  # Fetch(2, 0) of the broker the reassignment removed: UnknownReplica
                  "KAFKA-7164": 19}  # Fetch(2, 0): the follower reconciles first (ask-epoch-end), m1 is cut


@pytest.mark.parametrize("bug_id", SAFETY)
def test_the_implementation_without_the_bug_keeps_the_property_on_the_same_schedule(bug_id):
    b = bug(bug_id)
    e, steps = _counterexample(b.models[0])
    fixed = manifest.get(b.models[1]).config  # the pair's second model: the same bounds, no reintroduce
    assert {**e.config.to_dict(), "reintroduce": []} == fixed.to_dict()
    refused_at = _FIXED_REFUSES[bug_id]
    taken = list(steps if refused_at is None else steps[:refused_at - 1])
    res = conform_actions(fixed, taken, label=b.models[1])  # the fixed implementation follows the fixed model
    assert res.ok, res.divergence.summary() if res.divergence else res
    impl = ImplSide(fixed)
    for n, a in taken:
        impl.step(n, a)
        assert _HOLDS[b.property](impl.observation(), impl.acked()), f"{bug_id}: {b.property} broken without the bug"
    if refused_at is not None:
        with pytest.raises(ImplRefused):
            impl.step(*steps[refused_at - 1])


@pytest.mark.parametrize("b", REFUSED, ids=lambda b: b.id)
def test_a_bug_the_implementation_lacks_is_refused_in_one_line(b):
    with pytest.raises(ConfigError) as err:
        impl_config({"reintroduce": [b.id]})
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"reintroduce: the reference implementation has no {b.impl_lacks}, so {b.id} cannot")


def test_a_bug_the_configuration_lacks_the_mechanism_of_is_refused():
    with pytest.raises(ConfigError, match=r"KAFKA-1188 needs leader_epochs = false"):
        impl_config({"reintroduce": ["KAFKA-1188"], "generation": "kip-320"})
    with pytest.raises(ConfigError, match=r"unknown bug 'KAFKA-1'"):
        impl_config({"reintroduce": ["KAFKA-1"]})
    with pytest.raises(ConfigError, match=r"KAFKA-532 is not reproduced"):
        impl_config({"reintroduce": ["KAFKA-532"]})
    cfg = impl_config({"reintroduce": ["KAFKA-708", "KAFKA-1097"]})
    assert cfg.reintroduces("KAFKA-708") and not cfg.reintroduces("KAFKA-1188")
    from isrcheck.impl.core.config import to_mapping

    assert to_mapping(cfg)["reintroduce"] == ["KAFKA-708", "KAFKA-1097"]
    assert impl_config(to_mapping(cfg)) == cfg


@pytest.mark.parametrize("b", REFUSED, ids=lambda b: b.id)
def test_the_pairs_model_of_a_bug_the_implementation_lacks_is_refused_naming_the_bug(b):
    """What `cluster up history-kafka-<id>` and `conform --model` print: the bug named, not a growth key."""
    from isrcheck.conformance.sides import impl_support

    reason = impl_support(manifest.get(b.models[0]).config)
    assert reason is not None and reason.startswith(f"reintroduce: the reference implementation has no {b.impl_lacks}")
    assert f"so {b.id} cannot be put back" in reason


@pytest.mark.parametrize("bug_id", IN_IMPL)
def test_both_models_of_a_pair_the_implementation_puts_back_are_accepted(bug_id):
    from isrcheck.conformance.sides import impl_support
    assert [impl_support(manifest.get(m).config) for m in bug(bug_id).models] == [None, None]


@pytest.mark.parametrize("bug_id", ["KAFKA-708", "KAFKA-1097", "KAFKA-10432"])
def test_conform_covers_the_pre_fix_models_whole_state_graph(bug_id, run_cli):
    """`isrcheck conform --model history-kafka-<id>`: paths covering every state and edge of the model
    with the bug, each replayed on the implementation with the bug. (KAFKA-1188's takes about 17 s and
    KAFKA-7164's, of the large set, about 8 minutes: both conformed, 3,424 and 93,577 states, when the
    switches were written; left out here to keep the test fast.)"""
    import json

    res = run_cli("conform", "--model", bug(bug_id).models[0], "--json")
    doc = json.loads(res.output)
    assert res.exit_code == 0 and doc["ok"], res.output[-2000:]
    r = doc["results"][0]
    assert r["edges"]["covered"] == r["edges"]["total"] > 0 and r["states"]["ratio"] == 1.0


def test_kafka_10706_the_implementation_with_the_bug_runs_the_models_lasso_forever():
    """KAFKA-10706's pair is a liveness verdict (117,642 states, of the large set): its IsrHeals lasso,
    written by `isrcheck traces export history-kafka-10706 --property IsrHeals` and kept here, replays on
    the implementation with the bug against its stored observations and a fresh model replay; the loop,
    taken twice more, comes back to the same observation, with broker 2 out of the ISR and asking the same
    OffsetsForLeaderEpoch question (it is never offered a Fetch). Without the bug the same steps conform
    to the fixed model, end elsewhere, and the follower fetches and rejoins the ISR."""
    trace = load_trace(LASSO)
    assert (trace.model, trace.prop, trace.loop) == ("history-kafka-10706", "IsrHeals", 28)
    assert trace.config == manifest.get("history-kafka-10706").config  # not a stale file
    r = conform_trace(trace, against="both")
    assert r.ok and r.matched == len(trace.steps), r.divergence.summary() if r.divergence else r.skipped
    actions, loop = trace.actions, trace.actions[trace.loop:]
    r = conform_actions(trace.config, actions + loop + loop)
    assert r.ok, r.divergence.summary() if r.divergence else r.skipped
    impl = ImplSide(trace.config)
    for n, a in actions:
        impl.step(n, a)
    stuck = impl.observation()
    for n, a in loop:
        impl.step(n, a)
    assert impl.observation() == stuck and impl.sim.isr_of(0) == (1,)
    with pytest.raises(ImplRefused, match="ask-epoch-end"):
        impl.step("Fetch", (2, 0))

    fixed = manifest.get("history-kafka-10706-fixed").config
    assert {**trace.config.to_dict(), "reintroduce": []} == fixed.to_dict()
    r = conform_actions(fixed, actions)
    assert r.ok, r.divergence.summary() if r.divergence else r.skipped
    impl = ImplSide(fixed)
    for n, a in actions:
        impl.step(n, a)
    assert impl.observation() != stuck
    impl.step("Fetch", (2, 0))
    assert impl.sim.isr_of(0) == (1, 2)
