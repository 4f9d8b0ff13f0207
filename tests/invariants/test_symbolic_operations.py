"""Controller operations and controller failover in the z3 replication encoding (invariants/symbolic/operations.py).

- one step: on sampled reachable states of the manifest models preferred-election, controlled-shutdown,
  controller-failover and failover-misses-crash, and of two mixed configurations (fenced controller
  writes, no stale controller, two partitions, two failovers), the encoding enables exactly the model's
  actions and each leads to exactly the model's successor, field by field (controller epochs of
  ZooKeeper, znodes, brokers and queued requests, the deposed controller's context, the shutting-down
  set, the preferred-election flags and the budgets included); each sample must exercise the paths
  named in REQUIRED_KINDS (a deposed controller acting, a rejected request, ...);
- properties: the encoded properties agree with invariants/properties.py on reachable states of
  failover-misses-crash, violating ones included;
- bounded model checking agrees with the explicit checker (shortest violation per property, or none in
  both) on each newly covered model, and finds failover-misses-crash's NoCommittedWriteLost in 5 steps
  from the state after the follower's crash (the full 9 steps from the start with ISRCHECK_SLOW=1).
"""
from __future__ import annotations

import dataclasses
import os
from collections import Counter

import pytest

from isrcheck.inputs import manifest
from isrcheck.invariants.symbolic.bmc import bmc
from isrcheck.invariants.symbolic.instance import Unsupported
from isrcheck.invariants.symbolic.operations import needs_operations
from isrcheck.invariants.symbolic.replication import ALWAYS, Encoding, concrete, evaluate, unsupported_reason
from isrcheck.invariants.symbolic.verdicts import Verdict
from isrcheck.model.action_text import parse_all
from isrcheck.model.actions import apply
from isrcheck.model.config import from_mapping
from z3_compare import BY_NAME, AtStates, assert_one_step_agrees, bmc_lengths, explicit_lengths, model_of
from z3_states import reachable, sample
slow = pytest.mark.skipif(not os.environ.get("ISRCHECK_SLOW"),
                          reason="slow z3 run (a minute or more): set ISRCHECK_SLOW=1")

MANIFEST = ("preferred-election", "controlled-shutdown", "controller-failover", "failover-misses-crash")

MIXED = {
    "fenced-two-partitions": {
        "brokers": 3, "partitions": 2, "replication_factor": 2, "max_records": 1, "fenced_controller_writes": True,
        "hw_checkpoint": "every-change",
        "faults": {"controller_failovers": 1, "crashes": 1},
        "operations": {"preferred_elections": 1, "controlled_shutdowns": 1}},
    "no-stale-two-failovers": {
        "brokers": 3, "replication_factor": 3, "max_records": 1, "stale_controller": False,
        "unclean_leader_election": True,
        "faults": {"controller_failovers": 2, "crashes": 1, "isr_shrinks": 1},
        "operations": {"controlled_shutdowns": 1, "preferred_elections": 1}},
}

# name -> (reachable states to explore, states sampled, queue capacity, instance kinds the sample must
# exercise); the manifest models with the encoding's default capacity, which their queues never exceed
STEP = {
    "preferred-election": (2000, 12, None, {"ElectPreferredLeader", "RequestPreferredElection"}),
    "controlled-shutdown": (600, 12, None, {"ControlledShutdown"}),
    "controller-failover": (700, 12, None, {"ControllerFailover", "ResignController"}),
    "failover-misses-crash": (40000, 14, None, {"ControllerFailover", "ResignController",
                                                "DeliverRequest: from a deposed controller",
                                                "ProcessBrokerChange (deposed controller)"}),
    "fenced-two-partitions": (6000, 3, 5, {"ControlledShutdown", "ElectPreferredLeader (deposed controller)",
                                            "ProcessBrokerChange (deposed controller)"}),
    "no-stale-two-failovers": (6000, 6, 5, {"ControllerFailover", "ControlledShutdown", "ElectPreferredLeader"}),
}


def config_of(name: str):
    return from_mapping(MIXED[name]) if name in MIXED else manifest.get(name).config


@pytest.mark.parametrize("name", sorted(STEP))
def test_one_step_agrees_with_the_model(name):
    cfg = config_of(name)
    limit, n, queue, required = STEP[name]
    enc = Encoding(cfg, queue=queue)
    assert enc.ops is not None
    shape = enc.fresh("shape")
    kinds: Counter[str] = Counter()
    states = reachable(cfg, limit)
    # spread over the reachable states, plus the first state of each kind where an operation is under way
    # (a deposed controller with a preferred election requested or with a broker change to notice, a
    # broker shutting down)
    busy = [next((s for s in states if pred(s)), None) for pred in (
        lambda s: s.stale is not None and s.zk.preferred,
        lambda s: s.stale is not None and s.stale.live != s.zk.live,
        lambda s: s.controller.shutting_down)]
    for s in sample(states, n) + [s for s in busy if s is not None]:
        assert_one_step_agrees(enc, s, name, shape, kinds)
    assert required <= set(kinds), required - set(kinds)


def test_encoded_properties_agree_on_failover_misses_crash():
    cfg = manifest.get("failover-misses-crash").config
    enc = Encoding(cfg, queue=8)
    states = reachable(cfg, 40000)
    bad = [s for s in states if not all(BY_NAME[n].check(s) for n in ALWAYS)]
    seen_false = set()
    at = AtStates(enc, lambda sym: [enc.properties(sym)[n] for n in ALWAYS])
    for s in sample(bad, 20) + sample(states, 20):
        got = at.values(s)
        for n, g in zip(ALWAYS, got):
            assert g == BY_NAME[n].check(s), n
            if not g:
                seen_false.add(n)
    assert "NoCommittedWriteLost" in seen_false


def test_decode_gives_back_the_controller_side():
    """A z3 model of a state decodes into the model's State: controller epochs, the deposed
    controller, the preferred-election flags and the budgets included."""
    cfg = config_of("fenced-two-partitions")
    enc = Encoding(cfg, queue=8)
    states = reachable(cfg, 20000)
    chosen = [s for s in states if s.stale is not None and s.zk.preferred and any(s.inbox)][:3]
    assert chosen
    for s in chosen:
        sym = enc.fresh("d")
        back = sym.decode(model_of(sym.pin(s)), enc.init_state)
        assert back.zk.controller_epoch == s.zk.controller_epoch and back.zk.preferred == s.zk.preferred
        assert [zp.controller_epoch for zp in back.zk.partitions] == [zp.controller_epoch for zp in s.zk.partitions]
        assert [b.controller_epoch for b in back.brokers] == [b.controller_epoch for b in s.brokers]
        assert back.inbox == s.inbox and back.budget == s.budget
        assert back.stale.epoch == s.stale.epoch and back.stale.live == s.stale.live
        assert back.stale.partition_states == s.stale.partition_states
        assert back.controller.shutting_down == s.controller.shutting_down


# ---------------------------------------------------------------------------- bounded model checking
@pytest.mark.parametrize("name, depth", [("preferred-election", 4), ("controlled-shutdown", 4),
                                         ("controller-failover", 4), ("failover-misses-crash", 4)])
def test_bmc_agrees_with_the_explicit_checker(name, depth):
    cfg = manifest.get(name).config
    assert bmc_lengths(cfg, depth) == explicit_lengths(cfg, depth)


FAILOVER_PREFIX = ["Produce(1, 0)", "Fetch(2, 0)", "Fetch(2, 0)", "Crash(2)"]


def test_bmc_finds_failover_misses_crash_after_the_crash():
    """The known weakness, quickly: from the state after the follower's crash, both checkers find the
    acknowledged record lost 5 steps later (failover, restart, the new controller's broker change,
    two LeaderAndIsr deliveries), and the trace is replayed by the model."""
    cfg = manifest.get("failover-misses-crash").config
    enc = Encoding(cfg)
    s = enc.init_state
    for a in parse_all(FAILOVER_PREFIX):
        s = apply(enc.protocol, s, a)
    res = bmc(cfg, 5, init_state=s)
    ob = next(o for o in res.obligations if o.property == "NoCommittedWriteLost")
    assert ob.verdict == Verdict.REFUTED and ob.counterexample["length"] == 5
    assert "ControllerFailover()" in ob.counterexample["actions"]
    assert not BY_NAME["NoCommittedWriteLost"].check(ob.trace[-1][1])  # replayed by the model itself
    got = {o.property: o.counterexample["length"] for o in res.obligations if o.verdict == Verdict.REFUTED}
    assert got == explicit_lengths(cfg, 5, start=s)


@pytest.mark.slow
@slow
def test_bmc_finds_failover_misses_crash_in_nine_steps():
    """From the start (about 3 minutes): nothing within 8 steps, a violation in 9 whose replayed final
    state loses the acknowledged write, as the explicit checker's shortest counterexample does."""
    cfg = manifest.get("failover-misses-crash").config
    res = bmc(cfg, 9, stop_at_first=True)
    refuted = [o for o in res.obligations if o.verdict == Verdict.REFUTED]
    assert len(refuted) == 1 and refuted[0].counterexample["length"] == 9
    assert all(o.verdict == Verdict.PROVED for o in res.obligations if o is not refuted[0])
    assert not BY_NAME["NoCommittedWriteLost"].check(refuted[0].trace[-1][1])
    explicit = explicit_lengths(cfg, 9, first=True)  # the first violating state breaks StrongIsr too
    assert explicit["NoCommittedWriteLost"] == 9 and explicit[refuted[0].property] == 9


@pytest.mark.slow
@slow
@pytest.mark.parametrize("name, depth", [("preferred-election", 7), ("controlled-shutdown", 7),
                                         ("controller-failover", 7)])
def test_bmc_agrees_on_deeper_runs(name, depth):
    cfg = manifest.get(name).config
    assert bmc_lengths(cfg, depth) == explicit_lengths(cfg, depth)


# ---------------------------------------------------------------------------- scope
def test_scope_of_the_operations():
    for name in MANIFEST:
        cfg = manifest.get(name).config
        assert unsupported_reason(cfg) == "" and needs_operations(cfg), name
    assert not needs_operations(manifest.get("clean-election").config)
    assert Encoding(manifest.get("clean-election").config).ops is None  # the base encoding is unchanged
    reassign = manifest.get("reassignment").config
    mixed = dataclasses.replace(reassign, operations=dataclasses.replace(reassign.operations, controlled_shutdowns=1))
    with pytest.raises(Unsupported, match="reassignments only without"):
        Encoding(mixed)


def test_failover_models_get_a_longer_queue():
    """Two controllers' requests interleave: failover-misses-crash queues 4 requests for one broker."""
    assert Encoding(manifest.get("failover-misses-crash").config).Q == 4
    assert Encoding(manifest.get("controlled-shutdown").config).Q == 3
    cfg = manifest.get("failover-misses-crash").config
    assert max(len(q) for s in reachable(cfg, 40000) for q in s.inbox) == 4
