"""The z3 replication encoding against the model it transcribes (invariants/symbolic/replication.py).

- one step: on reachable states of several configurations, the encoding enables exactly the model's
  actions and each action leads to exactly the model's successor (every field compared);
- properties: the encoded properties agree with invariants/properties.py on reachable states,
  including violating ones;
- bounded model checking agrees with the explicit checker: for each property, the shortest
  violation within the depth has the same length (or there is none in both), including the known
  weaknesses (unclean election in 4 steps; high-watermark truncation in 8, with `-m slow`).
"""
from __future__ import annotations

import os

import pytest
import z3

from isrcheck.engine.checker import Checker
from isrcheck.invariants import build_model
from isrcheck.invariants.symbolic.bmc import bmc
from isrcheck.invariants.symbolic.generations import GENERATIONS, PLANNED_GENERATIONS, generation
from isrcheck.invariants.symbolic.instance import Unsupported
from isrcheck.invariants.symbolic.replication import ALWAYS, Encoding, concrete, evaluate, unsupported_reason
from isrcheck.invariants.symbolic.types import numval
from isrcheck.invariants.symbolic.verdicts import Verdict
from isrcheck.model.actions import Action, apply, enabled_actions
from isrcheck.model.config import from_mapping
from z3_compare import BY_NAME, assert_one_step_agrees, bmc_lengths, explicit_lengths
from z3_states import reachable, sample

slow = pytest.mark.skipif(not os.environ.get("ISRCHECK_SLOW"),
                          reason="slow z3 run (tens of seconds): set ISRCHECK_SLOW=1")

STEP_CONFIGS = {
    "unclean": {"brokers": 3, "replication_factor": 2, "max_records": 2, "unclean_leader_election": True,
                "faults": {"crashes": 1, "isr_shrinks": 1}},
    "hw-truncation": {"brokers": 3, "replication_factor": 3, "max_records": 2, "faults": {"crashes": 1}},
    "lossy-undetected": {"brokers": 3, "replication_factor": 2, "max_records": 2,
                         "faults": {"lossy_crashes": 1, "undetected_restarts": 1}},
    "delayed": {"brokers": 3, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 1, "delayed_requests": 1}},
    "two-partitions": {"brokers": 3, "partitions": 2, "replication_factor": 2, "max_records": 1,
                       "faults": {"crashes": 1}},
    "every-change-min-isr": {"brokers": 3, "replication_factor": 3, "max_records": 2, "min_insync_replicas": 2,
                             "hw_checkpoint": "every-change", "faults": {"crashes": 1, "isr_shrinks": 1}},
}


@pytest.mark.parametrize("name", sorted(STEP_CONFIGS))
def test_one_step_agrees_with_the_model(name):
    cfg = from_mapping(STEP_CONFIGS[name])
    enc = Encoding(cfg)
    for s in sample(reachable(cfg, 1500), 4):
        assert_one_step_agrees(enc, s, name)
    # the encoding also refuses what the model refuses: LossyCrash only with a shorter log
    assert all(unsupported_reason(cfg) == "" for _ in [0])


@pytest.mark.parametrize("name", ["unclean", "hw-truncation"])
def test_encoded_properties_agree_with_the_python_ones(name):
    cfg = from_mapping(STEP_CONFIGS[name])
    enc = Encoding(cfg)
    states = reachable(cfg, 4000)
    # violating states, and a sample of the others
    bad = [s for s in states if not all(BY_NAME[n].check(s) for n in ALWAYS)]
    chosen = sample(bad, 20) + sample(states, 20)
    seen_false = set()
    for s in chosen:
        props = enc.properties(concrete(enc, s))
        got = evaluate([props[n] for n in ALWAYS])
        for n, g in zip(ALWAYS, got):
            assert g == BY_NAME[n].check(s), (name, n)
            if not g:
                seen_false.add(n)
    assert seen_false, "the sample should contain violating states"


def test_epochs_monotonic_agrees_on_steps():
    cfg = from_mapping(STEP_CONFIGS["unclean"])
    enc = Encoding(cfg)
    for s in sample(reachable(cfg), 20):
        for a in enabled_actions(enc.protocol, s):
            t = apply(enc.protocol, s, a)
            got = evaluate([enc.step_properties(concrete(enc, s), concrete(enc, t))["EpochsMonotonic"]])[0]
            assert got == BY_NAME["EpochsMonotonic"].check(s, t)


# ---------------------------------------------------------------------------- bounded model checking
AGREEMENT = [
    ({"brokers": 2, "replication_factor": 2, "max_records": 1}, 6),
    ({"brokers": 2, "replication_factor": 2, "max_records": 1, "unclean_leader_election": True,
      "faults": {"crashes": 1, "isr_shrinks": 1}}, 5),
    # the known weakness of unclean election, from the issue: NoCommittedWriteLost in 4
    ({"brokers": 3, "replication_factor": 2, "max_records": 2, "unclean_leader_election": True,
      "faults": {"crashes": 1, "isr_shrinks": 1}}, 4),
]


@pytest.mark.parametrize("raw, depth", AGREEMENT, ids=[f"cfg{i}-d{d}" for i, (_, d) in enumerate(AGREEMENT)])
def test_bmc_agrees_with_the_explicit_checker(raw, depth):
    cfg = from_mapping(raw)
    assert bmc_lengths(cfg, depth) == explicit_lengths(cfg, depth)


def test_bmc_finds_the_unclean_election_weakness_in_four_steps():
    cfg = from_mapping(AGREEMENT[-1][0])
    res = bmc(cfg, 4)
    ob = next(o for o in res.obligations if o.property == "NoCommittedWriteLost")
    assert ob.verdict == Verdict.REFUTED and ob.counterexample["length"] == 4
    states = [st for _, st in ob.trace]
    assert not BY_NAME["NoCommittedWriteLost"].check(states[-1])  # replayed by the model itself
    assert [str(a) for a, _ in ob.trace[1:]][-2:] == ["Crash(1)", "ProcessBrokerChange(1)"]


def test_bmc_from_a_reachable_state_finds_the_truncation_loss():
    """The high-watermark weakness, quickly: from the state after m1 reached both followers, both
    checkers find the acknowledged record lost 4 steps later (crash, election, truncation)."""
    cfg = from_mapping(STEP_CONFIGS["hw-truncation"])
    enc = Encoding(cfg)
    s = enc.init_state
    for a in [Action("Produce", (1, 0)), Action("Fetch", (2, 0)), Action("Fetch", (3, 0)), Action("Fetch", (2, 0))]:
        s = apply(enc.protocol, s, a)
    res = bmc(cfg, 4, stop_at_first=True, init_state=s)
    ob = next(o for o in res.obligations if o.verdict == Verdict.REFUTED)
    assert ob.property == "NoCommittedWriteLost" and ob.counterexample["length"] == 4
    model = build_model(cfg, symmetry=False)

    class From:
        def init_states(self):
            return [s]

        def __getattr__(self, k):
            return getattr(model, k)

    explicit = Checker(From()).run()
    assert [(v.property, v.length) for v in explicit.violations] == [("NoCommittedWriteLost", 4)]


@pytest.mark.slow
@slow
def test_bmc_finds_the_high_watermark_weakness_in_eight_steps():
    raw = {"brokers": 3, "replication_factor": 3, "max_records": 2, "faults": {"crashes": 1}}
    cfg = from_mapping(raw)
    assert bmc_lengths(cfg, 8, first=True) == explicit_lengths(cfg, 8, first=True) == {"NoCommittedWriteLost": 8}


@pytest.mark.slow
@slow
@pytest.mark.parametrize("name, depth", [("clean-election", 7), ("lossy-undetected-restart", 5),
                                         ("delayed-requests", 6), ("spare-brokers", 5)])
def test_bmc_agrees_on_manifest_models(name, depth):
    from isrcheck.inputs import manifest

    cfg = manifest.get(name).config
    assert bmc_lengths(cfg, depth) == explicit_lengths(cfg, depth)


# ---------------------------------------------------------------------------- scope
@pytest.mark.parametrize("raw, fragment", [
    ({"operations": {"reassignments": [{"partition": 0, "target": [2, 3]}], "preferred_elections": 1}},
     "reassignments only without"),  # a reassignment alone or with failover: encoded
    ({"detect_restarts": True, "faults": {"undetected_restarts": 1}}, "bounce detection"),
    ({"operations": {"topic_creation": True, "preferred_elections": 1}}, "topic creation"),  # alone: encoded
    ({"operations": {"topic_deletions": 1, "controlled_shutdowns": 1}}, "topic deletion"),  # alone: encoded
])
def test_unsupported_configurations_are_refused_in_one_line(raw, fragment):
    cfg = from_mapping(raw)
    with pytest.raises(Unsupported) as info:
        Encoding(cfg)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_generations():
    """Every generation is encoded (tests/invariants/test_symbolic_generations.py checks the epoch ones);
    high-watermark replicas carry no epoch cache, so its encoding is what it was."""
    assert set(GENERATIONS) == {"high-watermark", "kip-101", "kip-279", "kip-320"} and not PLANNED_GENERATIONS
    enc = Encoding(from_mapping({}))
    assert enc.E == 0 and all(r.ep is None for reps in enc.fresh("s").replicas for r in reps.values())
    with pytest.raises(Unsupported, match="unknown generation"):
        generation("kip-999")
    from isrcheck.model.protocol import Protocol

    assert generation("high-watermark").matches(Protocol(from_mapping({})))


def test_evaluate_reads_booleans_and_signed_numbers():
    assert evaluate([z3.BoolVal(True), numval(-1), numval(5), z3.BoolVal(False)]) == [True, -1, 5, False]


def test_queue_overflow_is_reported_not_hidden():
    cfg = from_mapping(STEP_CONFIGS["unclean"])
    res = bmc(cfg, 4, queue=1)
    assert res.overflow_depth is not None
    assert any(o.verdict == Verdict.UNKNOWN and "overflow" in o.detail for o in res.obligations)
