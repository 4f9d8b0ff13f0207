"""What Houdini starts from (specs/08-symbolic.md#inductive-invariants): the bounded state space, the
pool of candidates an encoding gets, and the pool's pinned results.

- :func:`bounds`: the states an induction query ranges over (sizes within the encoding's
  capacities, numbers within range, ids typed); the proofs are for states within them;
- :func:`candidates_for`: the families of :mod:`.candidates`, plus those of :mod:`.epoch_candidates`
  for the leader-epoch generations; :func:`member_term` a member's term by name;
- the pinned results (:data:`HIGH_WATERMARK_STRENGTHENING`, :data:`KIP_320_STRENGTHENING` and its
  durability and reconciliation facts): what Houdini keeps on two manifest models, pinned so that one
  action can be checked quickly against them (:func:`.houdini.check_preserved`) and tested against
  Houdini's own result and the reachable states.
"""
from __future__ import annotations

import z3

from .candidates import CANDIDATES, Pred
from .committed import KIP_320_COMMITTED_PREFIX
from .epoch_candidates import EPOCH_CANDIDATES
from .replication import ALWAYS, Encoding
from .types import NUM_MAX, SymLog, SymState, budget_limit


# ============================================================================ the bounded state space
def bounds(enc: Encoding, s: SymState) -> z3.BoolRef:
    """The bounded state space: sizes within the capacities, numbers within range, ids typed."""
    K, Q = enc.K, enc.Q
    out: list[z3.BoolRef] = [z3.Not(s.overflow)]

    def lg(x: SymLog) -> None:
        out.append(z3.And(x.length >= 0, x.length <= K))

    # a topic not created yet, or deleted, has no znode: version 0 (topic creation and deletion)
    unborn = enc.ops is not None and enc.ops.admin is not None
    for p in range(enc.P):
        ar = enc.U[p]
        z = s.zk[p]
        out += [z3.Or([z.leader == b for b in (0, *ar)]), z.leader_epoch >= 0, z.leader_epoch <= NUM_MAX,
                z.version >= (0 if unborn else 1), z.version <= NUM_MAX]
        for b, r in s.replicas[p].items():
            lg(r.log)
            out += [r.hw >= 0, r.hw <= K, r.checkpoint >= 0, r.checkpoint <= K,
                    z3.Or([r.leader == m for m in (0, *ar)]), r.leader_epoch >= -1, r.leader_epoch <= NUM_MAX,
                    r.zk_version >= 0, r.zk_version <= NUM_MAX]
            out += [z3.And(v >= 0, v <= K) for v in r.remote_leo.values()]
        g = s.ghost[p]
        lg(g.exposed)
        out += [g.produced >= 0, g.produced <= K]
        out += [z3.And(v >= 0, v < max(K, 1)) for v in g.position.values()]
        out += [z3.And(v >= 0, v <= NUM_MAX) for v in g.epoch.values()]
    for b, q in s.inbox.items():
        out += [q.length >= 0, q.length <= Q]
        for sl in q.slots:
            out += [sl.leader_epoch >= 0, sl.leader_epoch <= NUM_MAX, sl.zk_version >= 0, sl.zk_version <= NUM_MAX,
                    z3.Or([sl.leader == m for m in range(0, enc.N + 1)]), sl.partition >= 0, sl.partition < enc.P]
    for name, v in s.budget.items():
        out += [v >= 0, v <= budget_limit(enc.cfg, name)]
    out += _ops_bounds(enc, s)
    return z3.And(out)


def _ops_bounds(enc: Encoding, s: SymState) -> list[z3.BoolRef]:
    """The controller side's types (operations.py, reassignment.py): budgets within the
    configuration's, controller epochs from 0 to one per failover more, replica states of the
    table, reassignment lists indices into their partition's list table and steps 0..12. Each holds
    on every reachable state (tests/invariants/test_symbolic_induction_operations.py checks them)."""
    ops = s.ops
    if ops is None:
        return []
    cfg = enc.cfg
    out = [z3.And(v >= 0, v <= budget_limit(cfg, n)) for n, v in ops.budget.items()]
    top = 1 + cfg.faults.controller_failovers
    out += [ops.zk_epoch >= 1, ops.zk_epoch <= top]
    out += [z3.And(v >= 0, v <= ops.zk_epoch) for v in (*ops.part_epoch, *ops.broker_epoch.values())]
    out += [z3.And(v >= 0, v <= ops.zk_epoch) for row in ops.req_epoch.values() for v in row]
    r = ops.reassign
    if r is None:
        return out
    tables = r.owner.tables
    widest = max(len(t) for t in tables)
    for p in range(enc.P):
        n = len(tables[p])
        out += [z3.And(x >= 0, x < n) for x in (r.ar[p], r.target[p], r.origin[p], r.old[p], r.new[p],
                                                *r.stale_old[p:p + 1], *r.stale_new[p:p + 1])]
        out += [z3.And(x >= 0, x <= 12) for x in (r.step[p], *r.stale_step[p:p + 1])]
        rows = [r.rstate[p]] + ([r.stale_rstate[p]] if r.stale_rstate else [])
        out += [z3.And(x >= 0, x <= 6) for row in rows for x in row.values()]
    out += [z3.And(r.requested >= 0, r.requested <= len(r.owner.requests))]
    out += [z3.And(x >= 0, x < widest) for xs in (r.req_list or {}).values() for x in xs]
    return out



# ============================================================================ the pool
def candidates_for(enc: Encoding) -> tuple[tuple[str, Pred], ...]:
    """The candidates of ``enc``'s pool: the base families, and the epoch families for the
    leader-epoch generations."""
    return CANDIDATES + EPOCH_CANDIDATES if enc.E else CANDIDATES


def member_term(enc: Encoding, s: SymState, name: str, preds: dict[str, Pred] | None = None) -> z3.BoolRef:
    """The term of a member of the pool, by name: a safety property of the encoding or a candidate
    (of ``preds``, or of the encoding's pool)."""
    if name in ALWAYS:
        return enc.properties(s)[name]
    return (preds or dict(candidates_for(enc)))[name](enc, s)


# ============================================================================ pinned results
HIGH_WATERMARK_STRENGTHENING = (
    "WellFormed", "RecordsKeepTheirPlace", "LogNoLongerThanProduced", "AckedAndPendingWereProduced",
    "VersionsBounded", "EpochsBounded", "CurrentVersionIsCurrentLeader", "CurrentRequestIsCurrentZnode",
    "EpochNamesOneLeader", "DeadBrokersAreBlank", "FollowersHoldNoLeaderState", "RemoteLeoBelowLeaderLeo",
    "DeadBrokersWithinCrashBudget",
)
"""What Houdini keeps for the seeds' protocol with crashes (hw-truncation-one-crash); pinned so that a
single action can be checked quickly (:func:`.houdini.check_preserved`); tests/invariants/test_symbolic_induction.py
checks that it is still what Houdini finds and that it holds on reachable states."""


KIP_320_STRENGTHENING = HIGH_WATERMARK_STRENGTHENING + (
    "LeadersAreInTheirIsr", "PendingAboveHighWatermark",
    "EpochCacheWellFormed", "EpochCacheCoversLog", "LeadersFetchNormally", "LeaderCacheEndsWithItsEpoch",
    "AnswersCoverCommitted", "CommittedHeldByLeader", "SameEpochSamePrefix", "ReconciledFollowersArePrefixes",
    "RemoteLeoSound", "CacheEpochsBounded", "QueuedRequestsNotBehind", "QueuedRequestsOrdered",
    "UnledEpochsHaveNoRecords", "LeaderCompleteForItsEpoch", "AnswerFromLeader", "ControllerDeadAreNotLeaders",
    "ControllerDeadAreBlank", "VersionsFollowEpochs", "ZnodeIsrWithinQueuedLeadership", "LiveLeadersLeadTheZnode",
    "CommittedHeldByIsrEvenIfDown", "RemoteLeoSoundEvenIfDown", "AnswersNotAheadOfCache", "AnswersCoverRecordedLeo",
    "OfflineMeansLeaderless", "EmptyEpochsOnlyAtLeaders", "QueuedRequestsKeepLiveLeaders",
    "FollowersWaitForTheirLeader", "RecordsNotBeforeTheirEpochStart", "BlankReplicasFetchNormally",
    *KIP_320_COMMITTED_PREFIX)
"""What Houdini keeps for kip-320 with one crash and three replicas (leader-crash-kip-320): the
high-watermark set, two more replica facts and every candidate of :data:`.epoch_candidates.EPOCH_CANDIDATES` (the
durability facts :data:`KIP_320_DURABILITY` and the reconciliation facts
:data:`KIP_320_RECONCILIATION` among them); with it NoCommittedWriteLost is proved inductive
(specs/08-symbolic.md#the-kip-320-gap). CheckpointBelowLogEnd holds on reachable states but is not
inductive (truncating to an epoch's end may cut below the checkpoint in an unreachable state). With the
committed-prefix facts (:data:`KIP_320_COMMITTED_PREFIX`, :mod:`.committed`) StrongIsr, LogMatching and
ConsistentRead are proved too (specs/08-symbolic.md#the-committed-prefix)."""


KIP_320_DURABILITY = (
    "VersionsFollowEpochs", "ZnodeIsrWithinQueuedLeadership", "LiveLeadersLeadTheZnode", "OfflineMeansLeaderless",
    "CommittedHeldByIsrEvenIfDown", "RemoteLeoSoundEvenIfDown", "AnswersNotAheadOfCache", "AnswersCoverRecordedLeo")
"""The epoch pool's facts that close the kip-320 durability gap (specs/08-symbolic.md#the-kip-320-gap):
the znode's history orders epochs and versions alike; a queued LeaderAndIsr that will make its
receiver leader bounds the znode's ISR; a live leader is the znode's leader and its ISR view covers
the znode's; an Offline partition has no leader; acknowledged records and recorded follower LEOs are
held even by replicas that are down; a pending OffsetsForLeaderEpoch answer cuts neither."""


KIP_320_RECONCILIATION = (
    "EmptyEpochsOnlyAtLeaders", "QueuedRequestsKeepLiveLeaders", "FollowersWaitForTheirLeader",
    "RecordsNotBeforeTheirEpochStart", "BlankReplicasFetchNormally")
"""The epoch pool's facts about reconciliation that make the kip-320 pool inductive
(specs/08-symbolic.md#the-kip-320-gap): only a live leader has a latest cache entry without records;
a live leader is never sent a request making it a follower; a follower does not reconcile or fetch
before its new leader has taken the epoch; no record sits before its epoch's start in any cache; a
replica blanked by a crash is not reconciling. Each is checked on the reachable states
(tests/invariants/test_symbolic_induction.py)."""



__all__ = ["bounds", "candidates_for", "member_term", "HIGH_WATERMARK_STRENGTHENING", "KIP_320_STRENGTHENING",
           "KIP_320_DURABILITY", "KIP_320_RECONCILIATION"]
