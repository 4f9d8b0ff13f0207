"""The committed prefix under kip-320 (invariants/symbolic/committed.py,
specs/08-symbolic.md#the-committed-prefix).

- each committed-prefix fact holds on states spread over the whole reachable space of
  leader-crash-kip-320 and on the states where it says something (an ISR member down, a checkpoint
  above the HW, a pending answer above a positive HW, a live leader whose HW is below its epoch's
  start): a fact false on a reachable state must never be in the pool;
- the fast half of the proof: from the pinned kip-320 strengthening (these facts among it) and the
  safety properties, every action preserves StrongIsr, LogMatching and ConsistentRead, and each of
  the five facts. With Houdini's result for the rest of the pool (the slow test of
  test_symbolic_induction.py, `prove inductive leader-crash-kip-320`, benchmarks/bench_z3.py) this
  is the whole proof.
"""
from __future__ import annotations

import pytest

from isrcheck.invariants.symbolic.committed import KIP_320_COMMITTED_PREFIX
from isrcheck.invariants.symbolic.houdini import check_preserved
from isrcheck.invariants.symbolic.pool import KIP_320_STRENGTHENING
from isrcheck.invariants.symbolic.replication import Encoding
from isrcheck.invariants.symbolic.verdicts import Verdict
from isrcheck.model.config import from_mapping
from isrcheck.model.state import TRUNCATE_PENDING
from z3_compare import assert_hold, picked
from z3_states import reachable

KIP320 = {"brokers": 3, "replication_factor": 3, "max_records": 2, "faults": {"crashes": 1},
          "generation": "kip-320"}  # leader-crash-kip-320


def test_committed_prefix_facts_hold_on_reachable_kip_320_states():
    cfg = from_mapping(KIP320)
    enc = Encoding(cfg)
    states = reachable(cfg, 10 ** 6)
    assert len(states) > 30000  # the whole space (36,471 states)

    def reps(s):
        return [(i + 1, br, br.replicas[0]) for i, br in enumerate(s.brokers)]

    def isr_member_down(s):
        return any(not br.alive and s.zk.partitions[0].isr >> b & 1 and r.log for b, br, r in reps(s))

    def checkpoint_above_hw(s):
        return any(r.checkpoint > r.hw for _, _, r in reps(s))

    def answered_above_hw(s):
        return any(r.fetch_state == TRUNCATE_PENDING and r.hw > 0 for _, _, r in reps(s))

    def leader_hw_below_epoch_start(s):
        return any(br.alive and r.leader == b and r.epochs and r.hw < r.epochs[-1][1] for b, br, r in reps(s))

    specials = (isr_member_down, checkpoint_above_hw, answered_above_hw, leader_hw_below_epoch_start)
    assert_hold(enc, KIP_320_COMMITTED_PREFIX, picked(states, specials, 15))


@pytest.mark.parametrize("props", [("StrongIsr", "LogMatching"), ("ConsistentRead", KIP_320_COMMITTED_PREFIX[0]),
                                   KIP_320_COMMITTED_PREFIX[1:3], KIP_320_COMMITTED_PREFIX[3:]])
def test_committed_prefix_makes_strong_isr_and_log_matching_inductive(props):
    assert set(KIP_320_COMMITTED_PREFIX) <= set(KIP_320_STRENGTHENING)
    cfg = from_mapping(KIP320)
    for prop in props:
        obs = check_preserved(cfg, prop, None, assume=KIP_320_STRENGTHENING, timeout=300.0)
        assert len(obs) > 10 and {o.verdict for o in obs} == {Verdict.PROVED}, \
            [(o.property, o.lines) for o in obs if o.verdict != Verdict.PROVED]


# controller-failover under kip-320 with fenced controller writes: what Houdini keeps (every property
# proved, `prove inductive controller-failover --generation kip-320 --set fenced_controller_writes=true`,
# benchmarks/bench_z3.py); without broker faults the fault-free facts stay in
FAILOVER_KIP320 = {"brokers": 3, "replication_factor": 2, "max_records": 2, "generation": "kip-320",
                   "fenced_controller_writes": True, "faults": {"controller_failovers": 1}}
FAILOVER_KIP_320_KEPT = KIP_320_STRENGTHENING + (
    "AllBrokersAlive", "ControllerSeesRegistrations", "ZkLeaderLeads", "CommittedBelowLeaderHighWatermark")


def test_controller_failover_preserves_strong_isr_and_log_matching():
    """The fast half of the failover proof: from what Houdini keeps, every action (ControllerFailover,
    the deposed controller's and ResignController included) preserves StrongIsr and LogMatching, and
    NoCommittedWriteLost and ConsistentRead."""
    cfg = from_mapping(FAILOVER_KIP320)
    for prop in ("StrongIsr", "LogMatching", "NoCommittedWriteLost", "ConsistentRead"):
        obs = check_preserved(cfg, prop, None, assume=FAILOVER_KIP_320_KEPT, timeout=300.0)
        kinds = {o.property.rsplit(" by ", 1)[1] for o in obs}
        assert any("ControllerFailover" in k for k in kinds), kinds
        assert {o.verdict for o in obs} == {Verdict.PROVED}, \
            [(o.property, o.lines) for o in obs if o.verdict != Verdict.PROVED]
