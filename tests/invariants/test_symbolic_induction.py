"""Inductive invariants of the replication encoding (invariants/symbolic/houdini.py, its pool in
candidates.py, epoch_candidates.py and pool.py).

- without faults, every safety property is proved inductive (with the strengthening Houdini keeps);
- under the seeds' high-watermark truncation, NoCommittedWriteLost is not inductive: the
  counterexample to induction is a follower in the ISR that holds an acknowledged record above its
  HW and truncates it away on a LeaderAndIsr naming a new leader (the known weakness);
- the pinned strengthening set holds on every sampled reachable state (it would be useless, and
  Houdini's result wrong, otherwise).
- kip-320 (leader-crash-kip-320): every candidate of the epoch pool holds on reachable states; the
  high-watermark CTI's action (becoming follower) preserves durability; with the former pool a CTI
  went through becoming leader, and with the durability facts (KIP_320_DURABILITY) every action
  preserves NoCommittedWriteLost from the candidates that hold on reachable states; with the
  reconciliation facts (KIP_320_RECONCILIATION, each checked on reachable states) the whole epoch
  pool is inductive and Houdini proves NoCommittedWriteLost (specs/08-symbolic.md#the-kip-320-gap);
  without KIP-320's fetch fencing (the mutant of tests/guards/mutants.py) the invariant is broken.
The full Houdini runs on the three-replica configurations take minutes: ISRCHECK_SLOW=1.
"""
from __future__ import annotations

import os

import pytest

from isrcheck.invariants.symbolic.candidates import CANDIDATES
from isrcheck.invariants.symbolic.epoch_candidates import EPOCH_CANDIDATES
from isrcheck.invariants.symbolic.houdini import check_preserved, prove_inductive
from isrcheck.invariants.symbolic.pool import (
    HIGH_WATERMARK_STRENGTHENING,
    KIP_320_DURABILITY,
    KIP_320_RECONCILIATION,
    KIP_320_STRENGTHENING,
    candidates_for,
)
from isrcheck.invariants.symbolic.replication import Encoding
from isrcheck.invariants.symbolic.verdicts import Verdict
from isrcheck.model.config import from_mapping
from isrcheck.model.records import ids_in
from z3_compare import BY_NAME, assert_hold, picked
from z3_states import reachable

HW = {"brokers": 3, "replication_factor": 3, "max_records": 2, "faults": {"crashes": 1}}
slow = pytest.mark.skipif(not os.environ.get("ISRCHECK_SLOW"),
                          reason="slow z3 run (about a minute): set ISRCHECK_SLOW=1")


def test_without_faults_every_property_is_inductive():
    res = prove_inductive(from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1}))
    verdicts = {o.property: o.verdict for o in res.obligations}
    assert set(verdicts.values()) == {Verdict.PROVED}, verdicts
    assert {"StrongIsr", "NoCommittedWriteLost", "LeaderInIsr", "HighWatermarkBelowLogEnd", "LogMatching",
            "EpochsMonotonic"} <= set(verdicts)
    assert "FollowersArePrefixesOfTheirLeader" in res.kept


def test_high_watermark_truncation_breaks_durability_inductively():
    """The counterexample to induction of NoCommittedWriteLost goes through a follower's truncation."""
    cfg = from_mapping(HW)
    [ob] = check_preserved(cfg, "NoCommittedWriteLost", ("DeliverRequest: LeaderAndIsr, becomes follower",))
    assert ob.verdict == Verdict.REFUTED
    cti = ob.cti
    assert cti.action.startswith("DeliverRequest(")
    b = int(cti.action[len("DeliverRequest("):-1])
    before, after = cti.before, cti.after
    prop = BY_NAME["NoCommittedWriteLost"]
    assert prop.check(before) and not prop.check(after)  # judged by the model's own property
    acked = before.ghost[0].acked
    r0, r1 = before.brokers[b - 1].replicas[0], after.brokers[b - 1].replicas[0]
    assert len(r1.log) < len(r0.log) and acked & ids_in(r0.log) & ~ids_in(r1.log)  # truncated away
    assert before.zk.partitions[0].isr >> b & 1  # while in the ISR
    assert any(line.startswith("action: DeliverRequest") for line in ob.lines)


def test_the_replication_path_preserves_leader_in_isr_and_hw_below_leo():
    cfg = from_mapping(HW)
    kinds = ("Produce", "Fetch", "DeliverRequest: LeaderAndIsr, becomes follower", "Crash")
    for prop in ("LeaderInIsr", "HighWatermarkBelowLogEnd"):
        obs = check_preserved(cfg, prop, kinds)
        assert {o.verdict for o in obs} == {Verdict.PROVED}, [(o.property, o.lines) for o in obs]


def test_the_pinned_strengthening_holds_on_reachable_states():
    cfg = from_mapping(HW)
    enc = Encoding(cfg)
    states = reachable(cfg, 1500)
    assert_hold(enc, HIGH_WATERMARK_STRENGTHENING, states[:: max(1, len(states) // 25)], dict(CANDIDATES))


def test_unknown_generation_and_scope_errors():
    from isrcheck.invariants.symbolic.instance import Unsupported

    # reassignments are taken (tests/invariants/test_symbolic_induction_operations.py), not with topic creation
    with pytest.raises(Unsupported, match="reassignments only without topic creation"):
        prove_inductive(from_mapping({"operations": {"reassignments": [{"partition": 0, "target": [2, 3]}],
                                                     "topic_creation": True}}))
    with pytest.raises(Unsupported, match="unknown generation"):
        prove_inductive(from_mapping({}), generation_name="kip-999")


def houdini_on(raw: dict):
    """Houdini on the configuration ``raw``: the result and its obligations by property, once the
    four properties every generation proves with one crash are checked proved."""
    res = prove_inductive(from_mapping(raw))
    v = {o.property: o for o in res.obligations}
    for name in ("LeaderInIsr", "HighWatermarkBelowLogEnd", "OneLeaderPerEpoch", "EpochsMonotonic"):
        assert v[name].verdict == Verdict.PROVED, name
    return res, v


@pytest.mark.slow
@slow
def test_houdini_on_three_replicas_with_a_crash():
    res, v = houdini_on(HW)
    ncwl = v["NoCommittedWriteLost"]
    assert ncwl.verdict == Verdict.REFUTED and "becomes follower" in ncwl.detail
    assert set(res.kept) == set(HIGH_WATERMARK_STRENGTHENING)


# ---------------------------------------------------------------------------- leader-epoch generations
KIP320 = {**HW, "generation": "kip-320"}  # leader-crash-kip-320


def test_epoch_candidates_hold_on_reachable_kip_320_states():
    """Every candidate of the epoch pool, and the pinned kip-320 strengthening, holds on sampled
    reachable states (states where the OffsetsForLeaderEpoch exchange is under way included): a
    candidate false on a reachable state would be useless to Houdini."""
    from isrcheck.model.state import FETCHING

    cfg = from_mapping(KIP320)
    enc = Encoding(cfg)
    states = reachable(cfg, 12000)
    reconciling = [s for s in states if any(r is not None and r.fetch_state != FETCHING
                                            for br in s.brokers for r in br.replicas)]
    assert reconciling
    names = [n for n, _ in EPOCH_CANDIDATES] + list(KIP_320_STRENGTHENING)
    assert_hold(enc, names, states[:: max(1, len(states) // 20)] + reconciling[:: max(1, len(reconciling) // 20)])
    assert candidates_for(Encoding(from_mapping(HW))) == CANDIDATES  # high-watermark's pool is unchanged


# what Houdini kept for kip-320 before the durability facts: high-watermark's 13 and 9 of the epoch machinery
KIP_320_WITHOUT_DURABILITY = HIGH_WATERMARK_STRENGTHENING + (
    "EpochCacheWellFormed", "LeadersFetchNormally", "SameEpochSamePrefix", "CacheEpochsBounded",
    "QueuedRequestsOrdered", "UnledEpochsHaveNoRecords", "LeaderCompleteForItsEpoch", "ControllerDeadAreNotLeaders",
    "ControllerDeadAreBlank")

# every candidate of the kip-320 pool that holds on reachable states (the fault-free ones do not)
KIP_320_REACHABLE_POOL = KIP_320_STRENGTHENING + (
    "CheckpointBelowLogEnd", "EpochCacheCoversLog", "LeaderCacheEndsWithItsEpoch", "AnswersCoverCommitted",
    "CommittedHeldByLeader", "ReconciledFollowersArePrefixes", "RemoteLeoSound", "QueuedRequestsNotBehind",
    "AnswerFromLeader", "CommittedHeldByIsrEvenIfDown", "RemoteLeoSoundEvenIfDown", "AnswersCoverRecordedLeo")


def test_kip_320_closes_the_high_watermark_cti_and_the_gap_through_becoming_leader():
    """Under kip-320 a follower no longer truncates on becoming follower, so the high-watermark CTI's
    action preserves durability. Without the durability facts a CTI remains through a leader applying
    a newer LeaderAndIsr: it keeps its pending records and remote LEOs, and its new ISR lets its HW
    acknowledge a record that a member of the znode's ISR lacks. From every candidate that holds on
    reachable states (the durability facts among them) every action preserves NoCommittedWriteLost:
    durability is inductive relative to that pool, though the pool itself is not yet inductive."""
    cfg = from_mapping(KIP320)
    kinds = ("DeliverRequest: LeaderAndIsr, becomes follower", "DeliverRequest: LeaderAndIsr, becomes leader")
    obs = {o.property.rsplit(" by ", 1)[1]: o
           for o in check_preserved(cfg, "NoCommittedWriteLost", kinds, assume=KIP_320_WITHOUT_DURABILITY)}
    assert obs[kinds[0]].verdict == Verdict.PROVED
    ob = obs[kinds[1]]
    assert ob.verdict == Verdict.REFUTED
    cti = ob.cti
    prop = BY_NAME["NoCommittedWriteLost"]
    assert prop.check(cti.before) and not prop.check(cti.after)
    b = int(cti.action[len("DeliverRequest("):-1])
    assert cti.before.brokers[b - 1].replicas[0].leader == b  # it led already (pending records, remote LEOs)
    assert cti.after.ghost[0].acked & ~cti.before.ghost[0].acked  # and acknowledges a record on taking the epoch

    assert set(KIP_320_DURABILITY) <= set(KIP_320_REACHABLE_POOL)
    obs = check_preserved(cfg, "NoCommittedWriteLost", None, assume=KIP_320_REACHABLE_POOL)
    assert len(obs) > 10 and {o.verdict for o in obs} == {Verdict.PROVED}, \
        [(o.property, o.lines) for o in obs if o.verdict != Verdict.PROVED]


def test_durability_facts_hold_on_reachable_kip_320_states():
    """Each durability fact holds on states spread over the whole reachable space of
    leader-crash-kip-320 (not only its first states), and on the states where it says something: a
    LeaderAndIsr naming its receiver leader is queued, a follower holds an answer, an ISR member is
    down."""
    from isrcheck.model.state import LeaderAndIsr

    cfg = from_mapping(KIP320)
    enc = Encoding(cfg)
    states = reachable(cfg, 10 ** 6)
    assert len(states) > 30000  # the whole space (36,471 states)

    def queued_leadership(s):
        return any(isinstance(q, LeaderAndIsr) and q.leader == i + 1 for i, qs in enumerate(s.inbox) for q in qs)

    def answered(s):
        return any(br.replicas[0] is not None and br.replicas[0].answer for br in s.brokers)

    def isr_member_down(s):
        return any(not br.alive and s.zk.partitions[0].isr >> (i + 1) & 1 for i, br in enumerate(s.brokers))

    assert_hold(enc, KIP_320_DURABILITY, picked(states, (queued_leadership, answered, isr_member_down), 12))


@pytest.mark.slow
@slow
def test_houdini_on_kip_320_with_a_crash():
    res, v = houdini_on(KIP320)
    # specs/08-symbolic.md#the-kip-320-gap: durability is proved with the reconciliation facts
    assert v["NoCommittedWriteLost"].verdict == Verdict.PROVED, v["NoCommittedWriteLost"].detail
    # specs/08-symbolic.md#the-committed-prefix: and with the committed-prefix facts the other three
    for name in ("StrongIsr", "LogMatching", "ConsistentRead"):
        assert v[name].verdict == Verdict.PROVED, v[name].detail
    assert set(KIP_320_RECONCILIATION) <= set(res.kept)
    assert set(res.kept) == set(KIP_320_STRENGTHENING)


def test_reconciliation_facts_hold_on_reachable_kip_320_states():
    """Each reconciliation fact (KIP_320_RECONCILIATION) holds on states spread over the whole
    reachable space of leader-crash-kip-320, and on the states where it says something: a promotion
    is queued, a follower with an empty log, a follower reconciling, a replica blanked by a crash, a
    leader with an epoch without records."""
    from isrcheck.model.state import FETCHING, LeaderAndIsr

    cfg = from_mapping(KIP320)
    enc = Encoding(cfg)
    states = reachable(cfg, 10 ** 6)
    assert len(states) > 30000

    def promotion_queued(s):
        return any(isinstance(q, LeaderAndIsr) and q.leader == i + 1
                   and q.leader_epoch > s.brokers[i].replicas[0].leader_epoch
                   for i, qs in enumerate(s.inbox) for q in qs)

    def empty_follower(s):
        return any(br.alive and not br.replicas[0].log and br.replicas[0].leader not in (0, i + 1)
                   for i, br in enumerate(s.brokers))

    def reconciling(s):
        return any(br.replicas[0].fetch_state != FETCHING for br in s.brokers)

    def blanked(s):
        return any(br.replicas[0].leader_epoch == -1 for br in s.brokers)

    def empty_epoch(s):
        return any(br.replicas[0].epochs and br.replicas[0].epochs[-1][1] == len(br.replicas[0].log)
                   and br.replicas[0].epochs[-1][0] > 0 for br in s.brokers)

    specials = (promotion_queued, empty_follower, reconciling, blanked, empty_epoch)
    assert_hold(enc, KIP_320_RECONCILIATION, picked(states, specials, 12))


def test_kip_320_reconciliation_closes_the_gap():
    """The fast half of the kip-320 durability proof: from the pinned kip-320 strengthening (the
    reconciliation facts among it), the steps that used to break the pool (becoming leader or
    follower, truncating to an epoch's end, fetching) preserve what a fetching follower holds
    relative to its leader, and durability. The slow test runs Houdini itself."""
    cfg = from_mapping(KIP320)
    assert set(KIP_320_RECONCILIATION) | {"ReconciledFollowersArePrefixes", "EpochCacheCoversLog",
                                          "CommittedHeldByIsrEvenIfDown"} <= set(KIP_320_STRENGTHENING)
    kinds = ("DeliverRequest: LeaderAndIsr, becomes leader", "DeliverRequest: LeaderAndIsr, becomes follower",
             "TruncateToEpochEndOffset", "Fetch")
    for prop in ("ReconciledFollowersArePrefixes", "FollowersWaitForTheirLeader", "NoCommittedWriteLost"):
        obs = check_preserved(cfg, prop, kinds, assume=KIP_320_STRENGTHENING)
        assert len(obs) == len(kinds) and {o.verdict for o in obs} == {Verdict.PROVED}, \
            [(o.property, o.lines) for o in obs if o.verdict != Verdict.PROVED]


def _without_fetch_fencing(monkeypatch):
    """kip-320 without its fencing of fetches and epoch queries by leader epoch (the mutant
    NoLeaderEpochFencingOfFetch of tests/guards/mutants.py, as an encoding rule)."""
    import z3

    from isrcheck.invariants.symbolic import replication
    from isrcheck.invariants.symbolic.generations import EpochTruncation, generation

    class Unfenced(EpochTruncation):
        def epoch_matches(self, rf, rl):
            return z3.BoolVal(True)

    monkeypatch.setattr(replication, "generation", lambda name: Unfenced(generation(name).generation))


def test_kip_320_without_fetch_fencing_breaks_the_invariant(monkeypatch):
    """Remove KIP-320's fencing and the pinned invariant is no longer inductive: a follower fetches
    from, or asks, a leader that has not taken its epoch yet (a counterexample to induction)."""
    _without_fetch_fencing(monkeypatch)
    cfg = from_mapping(KIP320)
    obs = check_preserved(cfg, "FollowersWaitForTheirLeader", ("Fetch", "OffsetsForLeaderEpoch"),
                          assume=KIP_320_STRENGTHENING)
    assert {o.verdict for o in obs} == {Verdict.REFUTED}
    for o in obs:
        cti = o.cti
        assert cti is not None and cti.action.startswith(("Fetch(", "OffsetsForLeaderEpoch("))
        f = int(cti.action.split("(")[1].split(",")[0])
        rf = cti.before.brokers[f - 1].replicas[0]
        rl = cti.before.brokers[rf.leader - 1].replicas[0]
        assert rl.leader == rf.leader and rl.leader_epoch < rf.leader_epoch  # its leader is behind its epoch


@pytest.mark.slow
@slow
def test_houdini_on_kip_320_without_fetch_fencing(monkeypatch):
    """Without KIP-320's fencing Houdini no longer proves durability: FollowersWaitForTheirLeader goes
    first, the reconciliation it supported follows, and NoCommittedWriteLost gets a counterexample to
    induction (about six minutes on a loaded machine)."""
    _without_fetch_fencing(monkeypatch)
    res = prove_inductive(from_mapping(KIP320))
    v = {o.property: o for o in res.obligations}
    ncwl = v["NoCommittedWriteLost"]
    assert ncwl.verdict == Verdict.REFUTED and ncwl.cti is not None, ncwl.detail
    assert {"FollowersWaitForTheirLeader", "ReconciledFollowersArePrefixes"} <= set(res.dropped)
