"""The leader-epoch generations (kip-101, kip-279, kip-320) in the z3 replication encoding.

- one step: on sampled reachable states of manifest configurations of each generation (states where
  OffsetsForLeaderEpoch or TruncateToEpochEndOffset is enabled included), the encoding enables exactly
  the model's actions and each leads to exactly the model's successor, field by field (epoch cache,
  fetch state and OffsetsForLeaderEpoch answer included); KIP-279's walk-back is among them;
- properties: the encoded properties agree with invariants/properties.py, violating states included;
- the same with controller operations under kip-320 (controlled shutdown, preferred election,
  controller failover);
- bounded model checking agrees with the explicit checker (shortest violation per property, or none in
  both): small configurations from the initial state, and lossy-divergence from a reachable state four
  steps before LogMatching breaks under kip-101 and kip-279 and does not under kip-320; with
  ISRCHECK_SLOW=1, leader-crash-kip-* at depth 8 and lossy-divergence from before the lossy crash.

Configurations are those of specs/models.toml (test_configurations_are_the_manifests checks it).
"""
from __future__ import annotations

import os
import random

import pytest

from isrcheck.invariants.symbolic.generations import GENERATIONS, generation
from isrcheck.invariants.symbolic.replication import ALWAYS, Encoding, concrete, evaluate, unsupported_reason
from isrcheck.model.action_text import parse_all
from isrcheck.model.actions import apply, enabled_actions
from isrcheck.model.config import from_mapping
from isrcheck.model.protocol import Protocol
from isrcheck.model.records import make_record
from isrcheck.model.state import ASK_EPOCH_END, FETCHING
from z3_compare import BY_NAME, assert_one_step_agrees, bmc_lengths, explicit_lengths
from z3_states import reachable
KIPS = ("kip-101", "kip-279", "kip-320")
EPOCH_ACTIONS = ("OffsetsForLeaderEpoch", "TruncateToEpochEndOffset")
slow = pytest.mark.skipif(not os.environ.get("ISRCHECK_SLOW"),
                          reason="slow z3 run (minutes): set ISRCHECK_SLOW=1")


def _leader_crash(g: str) -> dict:
    return {"brokers": 3, "replication_factor": 3, "max_records": 2, "generation": g, "faults": {"crashes": 1}}


def _lossy_divergence(g: str) -> dict:
    return {"brokers": 2, "replication_factor": 2, "max_records": 2, "generation": g,
            "faults": {"lossy_crashes": 1, "crashes": 1}}


MODELS: dict[str, dict] = {f"leader-crash-{g}": _leader_crash(g) for g in KIPS}
MODELS.update({f"lossy-divergence-{g}": _lossy_divergence(g) for g in KIPS})
MODELS["unclean-election-kip-320"] = {"brokers": 3, "replication_factor": 2, "max_records": 2,
                                      "unclean_leader_election": True, "generation": "kip-320",
                                      "faults": {"crashes": 1, "isr_shrinks": 1}}
MODELS["two-partitions-kip-320"] = {"brokers": 3, "partitions": 2, "replication_factor": 2, "max_records": 1,
                                    "generation": "kip-320", "faults": {"crashes": 1}}
MODELS["clean-election-isr-shrink-kip-320"] = {"brokers": 3, "replication_factor": 2, "max_records": 2,
                                               "generation": "kip-320", "faults": {"crashes": 1, "isr_shrinks": 1}}
QUEUE = 4  # lossy-divergence queues four requests at a broker (the default capacity is 3)


def config(name: str):
    return from_mapping(MODELS[name])


def test_configurations_are_the_manifests():
    from isrcheck.inputs import manifest

    for name in MODELS:
        assert manifest.get(name).config == config(name), name


def _epoch_states(enc, states, n: int, seed: int = 0):
    """``n`` states (seeded choice) where an action of the epoch exchange is enabled."""
    hits = [s for s in states if any(a.name in EPOCH_ACTIONS for a in enabled_actions(enc.protocol, s))]
    return random.Random(seed).sample(hits, min(n, len(hits)))


STEP_MODELS = ["leader-crash-kip-101", "leader-crash-kip-279", "leader-crash-kip-320", "lossy-divergence-kip-101",
               "lossy-divergence-kip-279", "lossy-divergence-kip-320", "unclean-election-kip-320",
               "two-partitions-kip-320"]


@pytest.mark.parametrize("name", STEP_MODELS)
def test_one_step_agrees_with_the_model(name):
    cfg = config(name)
    enc = Encoding(cfg, queue=QUEUE)
    states = reachable(cfg, 6000)
    uniform = states[:: max(1, len(states) // 4)][:4]
    compared: set[str] = set()
    for s in uniform + _epoch_states(enc, states, 6):
        compared |= set(assert_one_step_agrees(enc, s, name))
    assert {"OffsetsForLeaderEpoch", "TruncateToEpochEndOffset", "Fetch", "DeliverRequest"} <= compared, compared


@pytest.mark.parametrize("name", ["controlled-shutdown-kip-320", "preferred-election-kip-320",
                                  "failover-misses-crash-kip-320"])
def test_one_step_agrees_with_operations_under_kip_320(name):
    """The epoch machinery composes with the controller operations (invariants/symbolic/operations.py): a
    graceful stop forgets the reconciliation like a crash, elections make followers ask."""
    from isrcheck.inputs import manifest

    cfg = manifest.get(name).config
    enc = Encoding(cfg, queue=QUEUE)
    states = reachable(cfg, 3000)
    for s in states[:: max(1, len(states) // 5)][:5] + _epoch_states(enc, states, 3):
        assert_one_step_agrees(enc, s, name)


def test_kip_279_walks_back_where_kip_101_stops():
    """KIP-279's walk-back, on a reachable state edited so that the follower holds m1@e0, m2@e2 and
    the leader answered (1, 1) — it knows epoch 1, not 2 (the small models do not reach three
    epochs with data). kip-279: the follower's own end of epoch 0 is 1, so it cuts there and asks
    again; kip-101: it cuts at 1 and fetches. The encoding does exactly what the model does."""
    cfg = config("lossy-divergence-kip-279")
    enc = Encoding(cfg, queue=QUEUE)
    s = next(s for s in reachable(cfg, 40000)
             if any(a.name == "TruncateToEpochEndOffset" for a in enabled_actions(enc.protocol, s)))
    a = next(a for a in enabled_actions(enc.protocol, s) if a.name == "TruncateToEpochEndOffset")
    f, p = a.args
    s = with_replica(s, f, p, log=(make_record(1, 0), make_record(2, 2)), hw=0, epochs=((0, 0), (2, 1)),
                     answer=(1, 1))
    t = apply(enc.protocol, s, a)
    r = t.brokers[f - 1].replicas[p]
    assert r.fetch_state == ASK_EPOCH_END and len(r.log) == 1 and r.epochs == ((0, 0),)  # walks back
    assert_one_step_agrees(enc, s, "kip-279 walk-back")
    enc101 = Encoding(config("lossy-divergence-kip-101"), queue=QUEUE)
    r = apply(enc101.protocol, s, a).brokers[f - 1].replicas[p]
    assert r.fetch_state == FETCHING and len(r.log) == 1
    assert_one_step_agrees(enc101, s, "kip-101 on the walk-back state")


def with_replica(s, b: int, p: int, **changes):
    br = s.brokers[b - 1]
    reps = list(br.replicas)
    reps[p] = reps[p]._replace(**changes)
    brokers = list(s.brokers)
    brokers[b - 1] = br._replace(replicas=tuple(reps))
    return s._replace(brokers=tuple(brokers))


@pytest.mark.parametrize("name", ["unclean-election-kip-320", "lossy-divergence-kip-101"])
def test_encoded_properties_agree_with_the_python_ones(name):
    cfg = config(name)
    enc = Encoding(cfg, queue=QUEUE)
    states = reachable(cfg, 40000)
    chosen = states[:: max(1, len(states) // 15)]
    for n in ALWAYS:  # up to three violating states of each property
        chosen += [s for s in states if not BY_NAME[n].check(s)][:3]
    seen_false = set()
    for s in chosen:
        props = enc.properties(concrete(enc, s))
        for n, g in zip(ALWAYS, evaluate([props[n] for n in ALWAYS])):
            assert g == BY_NAME[n].check(s), (name, n)
            if not g:
                seen_false.add(n)
    assert "NoCommittedWriteLost" in seen_false
    if name.startswith("lossy"):
        assert "LogMatching" in seen_false


@pytest.mark.parametrize("name", ["lossy-divergence-kip-101", "leader-crash-kip-320", "reassignment-broker-crash-kip-320",
                                  "reassignment-with-data-kip-320"])
def test_the_default_cache_capacity_holds_every_reachable_cache(name):
    """E = max_records + 1 entries plus the leader-epoch bumps (at most 4): every reachable state fits.
    Records alone are not enough: without a single record, reassignment-broker-crash-kip-320 reaches a
    cache of 4 entries (elections and reassignment epoch bumps)."""
    from isrcheck.inputs import manifest

    cfg = manifest.get(name).config
    enc = Encoding(cfg)
    longest = max(len(r.epochs) for s in reachable(cfg, 10 ** 6) for br in s.brokers for r in br.replicas if r)
    assert longest <= enc.E <= cfg.max_records + 5
    if name == "reassignment-broker-crash-kip-320":
        assert longest == enc.E > cfg.max_records + 1


def test_every_generation_is_encoded():
    assert set(GENERATIONS) == {"high-watermark", *KIPS}
    for g in KIPS:
        assert unsupported_reason(from_mapping({"generation": g})) == ""
        enc = Encoding(from_mapping({}), g)
        assert enc.rule.name == g and enc.cfg.generation == g and enc.E == 3
        assert generation(g).matches(Protocol(from_mapping({"generation": g})))
        assert not generation(g).matches(Protocol(from_mapping({})))

    class Variant(Protocol):
        def may_join_isr(self, leader_replica, fetch_offset):
            return True

    assert not generation("kip-320").matches(Variant(from_mapping({"generation": "kip-320"})))


# ---------------------------------------------------------------------------- bounded model checking
SMALL = [({"brokers": 2, "replication_factor": 2, "max_records": 1, "generation": g, "faults": {"crashes": 1}}, 6)
         for g in KIPS]
SMALL.append((MODELS["unclean-election-kip-320"], 4))  # NoCommittedWriteLost in 4, as under high-watermark


@pytest.mark.parametrize("raw, depth", SMALL, ids=[f"{r['generation']}-{r['brokers']}b-d{d}" for r, d in SMALL])
def test_bmc_agrees_with_the_explicit_checker(raw, depth):
    cfg = from_mapping(raw)
    assert bmc_lengths(cfg, depth) == explicit_lengths(cfg, depth, bounded=True)


# lossy-divergence: the explicit counterexample of kip-101 and kip-279 (LogMatching in 17). The leader
# loses m1 in a lossy crash and leads again in a new epoch; the follower that holds m1 is not told
# to reconcile (the leader did not change) and appends m2 after it.
DIVERGENCE = ["Produce(1, 0)", "Crash(2)", "ProcessBrokerChange(1)", "Restart(2)", "ProcessBrokerChange(1)",
              "DeliverRequest(2)", "DeliverRequest(2)", "Fetch(2, 0)", "LossyCrash(1, [0])", "ProcessBrokerChange(1)",
              "Restart(1)", "ProcessBrokerChange(1)", "DeliverRequest(1)", "DeliverRequest(1)", "DeliverRequest(1)",
              "Produce(1, 0)", "Fetch(2, 0)"]
# kip-320: the same story; the follower is fenced (epoch 1 against the leader's 0) until the leader
# has applied its LeaderAndIsr, so one DeliverRequest(1) comes earlier
DIVERGENCE_320 = DIVERGENCE[:7] + ["DeliverRequest(1)"] + DIVERGENCE[7:13]


def _after(cfg, texts):
    enc = Encoding(cfg, queue=QUEUE)
    s = enc.init_state
    for a in parse_all(texts):
        assert a in enabled_actions(enc.protocol, s), a
        s = apply(enc.protocol, s, a)
    return s


@pytest.mark.parametrize("g", ["kip-101", "kip-279"])
def test_bmc_finds_the_lossy_divergence_from_a_reachable_state(g):
    cfg = config(f"lossy-divergence-{g}")
    s = _after(cfg, DIVERGENCE[:13])
    got = bmc_lengths(cfg, 4, queue=QUEUE, init_state=s)
    assert got == explicit_lengths(cfg, 4, start=s, bounded=True)
    assert got["LogMatching"] == 4


def test_bmc_kip_320_does_not_diverge_from_the_same_point():
    cfg = config("lossy-divergence-kip-320")
    s = _after(cfg, DIVERGENCE_320)
    got = bmc_lengths(cfg, 5, queue=QUEUE, init_state=s)
    assert got == explicit_lengths(cfg, 5, start=s, bounded=True)
    assert "LogMatching" not in got
    # the lossy crash lost the acknowledged m1 in every generation (why the manifest checks LogMatching only)
    assert got["NoCommittedWriteLost"] == 0


@pytest.mark.slow
@slow
@pytest.mark.parametrize("g", KIPS)
def test_bmc_agrees_on_leader_crash(g):
    cfg = config(f"leader-crash-{g}")
    assert bmc_lengths(cfg, 8) == explicit_lengths(cfg, 8, bounded=True) == {}


@pytest.mark.slow
@slow
@pytest.mark.parametrize("g", ["kip-101", "kip-279"])
def test_bmc_lossy_divergence_from_the_leaders_loss(g):
    """From the state before the lossy crash (8 steps in), LogMatching breaks 9 steps later in both
    checkers: the whole counterexample is the manifest's 17 steps."""
    cfg = config(f"lossy-divergence-{g}")
    s = _after(cfg, DIVERGENCE[:8])
    got = bmc_lengths(cfg, 9, queue=QUEUE, init_state=s)
    assert got == explicit_lengths(cfg, 9, start=s, bounded=True)
    assert got["LogMatching"] == 9
