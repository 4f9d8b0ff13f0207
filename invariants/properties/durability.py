"""Committed data: HighWatermarkBelowLogEnd, NoCommittedWriteLost, LogMatching, ConsistentRead,
ConsistentFollowerRead, EpochCacheCoversLog, WriteEventuallyCommitted.

Each property's definition (:mod:`.kinds`) sits after the functions it names; specs/06-properties.md
says what each means and what breaks it.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from isrcheck.model.config import Config
from isrcheck.model.records import ids_in, record_epoch, render_log
from isrcheck.model.state import State
from isrcheck.specs.properties import NAMES

from .common import (alive_mask, any_acked, any_hw, gone, in_sync_holders, live_members, obs_alive, obs_holders,
                     obs_ids, obs_replicas)
from .kinds import Acked, Always, Liveness, Masks, Obs


# ---------------------------------------------------------------------------- HighWatermarkBelowLogEnd
def hw_below_log_end(s: State) -> bool:
    for br in s.brokers:
        for r in br.replicas:
            if r is not None and r.hw > len(r.log):
                return False
    return True


def hw_below_log_end_offences(s: State) -> Iterator[str]:
    for b, br in enumerate(s.brokers, start=1):
        for p, r in enumerate(br.replicas):
            if r is not None and r.hw > len(r.log):
                yield f"replica {b} of partition {p}: HW {r.hw} beyond its log end offset {len(r.log)}"


def hw_below_log_end_observed(obs: Obs, acked: Acked) -> bool:
    return all(not r["present"] or r["hw"] <= len(r["log"]) for r in obs["replicas"])


HIGH_WATERMARK_BELOW_LOG_END = Always(NAMES.HighWatermarkBelowLogEnd, hw_below_log_end, hw_below_log_end_offences,
                                      exercised=any_hw, observed=hw_below_log_end_observed)


# ---------------------------------------------------------------------------- NoCommittedWriteLost
def no_committed_write_lost(s: State) -> bool:
    for p, zp in enumerate(s.zk.partitions):
        acked = s.ghost[p].acked
        if not acked or not zp.replicas or s.zk.deleting >> p & 1:
            continue
        holders = in_sync_holders(zp)
        b = 0
        while holders:
            if holders & 1:
                br = s.brokers[b - 1]
                if br.alive:
                    r = br.replicas[p]
                    if r is None or acked & ~ids_in(r.log):
                        return False
            holders >>= 1
            b += 1
    return True


def _ids(mask: int) -> str:
    return ", ".join(f"m{i}" for i in range(mask.bit_length()) if mask >> i & 1)


def no_committed_write_lost_offences(s: State) -> Iterator[str]:
    for p, zp in enumerate(s.zk.partitions):
        acked = s.ghost[p].acked
        if not acked or gone(s, p):
            continue
        for b, r in live_members(s, p, in_sync_holders(zp)):
            lost = acked & ~ids_in(r.log) if r is not None else acked
            if lost:
                role = "the leader" if b == zp.leader else "an ISR member"
                yield (f"partition {p}: acknowledged write(s) {_ids(lost)} missing from the log of broker {b} "
                       f"({role}), which holds {render_log(r.log if r is not None else ())}")


def no_committed_write_lost_observed(obs: Obs, acked: Acked) -> bool:
    reps, alive = obs_replicas(obs), obs_alive(obs)
    for p in obs["partitions"]:
        ids = set(acked[p["index"]])
        if not ids or not p["exists"] or p["deleting"]:
            continue
        for b in obs_holders(p):
            if alive.get(b):
                r = reps[(b, p["index"])]
                if not r["present"] or not ids <= {x["id"] for x in r["log"]}:
                    return False
    return True


NO_COMMITTED_WRITE_LOST = Always(NAMES.NoCommittedWriteLost, no_committed_write_lost, no_committed_write_lost_offences,
                                 exercised=any_acked, observed=no_committed_write_lost_observed)


# ---------------------------------------------------------------------------- LogMatching
def log_matching(s: State) -> bool:
    """Live in-sync replicas (the ZooKeeper ISR, and the leader) agree below both of their HWs.

    Replicas outside the ISR may hold a stale or diverging suffix until they reconcile; what a
    protocol must prevent is such a replica counting as in sync again.
    """
    for p, zp in enumerate(s.zk.partitions):
        if not zp.replicas:
            continue
        members_ = in_sync_holders(zp)
        reps = []
        b = 0
        while members_:
            if members_ & 1:
                br = s.brokers[b - 1]
                r = br.replicas[p]
                if br.alive and r is not None:
                    reps.append(r)
            members_ >>= 1
            b += 1
        for i in range(len(reps)):
            a = reps[i]
            for j in range(i + 1, len(reps)):
                c = reps[j]
                n = min(a.hw, c.hw)
                if n and a.log[:n] != c.log[:n]:
                    return False
    return True


def log_matching_offences(s: State) -> Iterator[str]:
    for p, zp in enumerate(s.zk.partitions):
        if not zp.replicas:
            continue
        reps = [(b, r) for b, r in live_members(s, p, in_sync_holders(zp)) if r is not None]
        for i, (a, ra) in enumerate(reps):
            for c, rc in reps[i + 1:]:
                n = min(ra.hw, rc.hw)
                if n and ra.log[:n] != rc.log[:n]:
                    yield (f"partition {p}: below offset {n} in-sync replicas {a} and {c} disagree: "
                           f"{render_log(ra.log[:n])} and {render_log(rc.log[:n])}")


def _two_with_hw(s: Any) -> bool:
    for p in range(len(s.zk.partitions)):
        n = sum(1 for br in s.brokers if br.alive and br.replicas[p] is not None and br.replicas[p].hw > 0)
        if n >= 2:
            return True
    return False


def log_matching_observed(obs: Obs, acked: Acked) -> bool:
    reps, alive = obs_replicas(obs), obs_alive(obs)
    for p in obs["partitions"]:
        if not p["exists"]:
            continue
        in_sync = [reps[(b, p["index"])] for b in sorted(obs_holders(p))
                   if alive.get(b) and reps[(b, p["index"])]["present"]]
        for i in range(len(in_sync)):
            for j in range(i + 1, len(in_sync)):
                a, c = in_sync[i], in_sync[j]
                n = min(a["hw"], c["hw"])
                if n and obs_ids(a["log"][:n]) != obs_ids(c["log"][:n]):
                    return False
    return True


LOG_MATCHING = Always(NAMES.LogMatching, log_matching, log_matching_offences,
                      exercised=_two_with_hw, observed=log_matching_observed)


# ---------------------------------------------------------------------------- ConsistentRead
# ConsistentRead (leaders) and ConsistentFollowerRead (followers) ask the same of different readers:
# below its HW, a live replica agrees with the longest prefix any leader exposed.
def _reads_agree(s: State, leaders: bool) -> bool:
    for p, g in enumerate(s.ghost):
        exposed = g.exposed
        for i, br in enumerate(s.brokers):
            r = br.replicas[p]
            if br.alive and r is not None and (r.leader == i + 1) == leaders:
                n = min(r.hw, len(exposed))
                if r.log[:n] != exposed[:n]:
                    return False
    return True


def _disagreeing_reads(s: State, leaders: bool) -> Iterator[tuple[int, int, str, str]]:
    """(partition, broker, its log below its HW, what was exposed there) for each reader that disagrees."""
    for p, g in enumerate(s.ghost):
        for b, br in enumerate(s.brokers, start=1):
            r = br.replicas[p]
            if br.alive and r is not None and (r.leader == b) == leaders:
                n = min(r.hw, len(g.exposed))
                if r.log[:n] != g.exposed[:n]:
                    yield p, b, render_log(r.log[:n]), render_log(g.exposed[:n])


def consistent_read(s: State) -> bool:
    return _reads_agree(s, True)


def consistent_read_offences(s: State) -> Iterator[str]:
    for p, b, mine, exposed in _disagreeing_reads(s, True):
        yield f"partition {p}: leader {b} exposes {mine} below its HW where {exposed} was exposed before"


def _any_exposed(s: Any) -> bool:
    return any(g.exposed for g in s.ghost)


# No observation form: it needs the longest prefix any leader ever exposed, a history the
# observation does not carry.
CONSISTENT_READ = Always(NAMES.ConsistentRead, consistent_read, consistent_read_offences, exercised=_any_exposed)


# ---------------------------------------------------------------------------- ConsistentFollowerRead
def consistent_follower_read(s: State) -> bool:
    return _reads_agree(s, False)


def consistent_follower_read_offences(s: State) -> Iterator[str]:
    for p, b, mine, exposed in _disagreeing_reads(s, False):
        yield f"partition {p}: follower {b} has {mine} below its HW where {exposed} was exposed"


def _follower_reads(cfg: Config) -> bool:
    """Consumers read from followers from 2.4 (KIP-392), all with leader-epoch fencing (kip-320)."""
    return cfg.generation.traits.fenced_by_leader_epoch


# No observation form, as ConsistentRead.
CONSISTENT_FOLLOWER_READ = Always(NAMES.ConsistentFollowerRead, consistent_follower_read,
                                  consistent_follower_read_offences, exercised=_any_exposed, applies=_follower_reads)


# ---------------------------------------------------------------------------- EpochCacheCoversLog
def _covering_epoch(epochs: tuple[tuple[int, int], ...], offset: int) -> int:
    """The epoch of the cache entry covering ``offset`` (the largest start at or below it); -1: none."""
    epoch = -1
    for e, start in epochs:
        if start <= offset:
            epoch = e
    return epoch


def epoch_cache_covers_log(s: State) -> bool:
    """On every replica, up or down, the cache entry covering each record's offset names the epoch
    the record was appended in (entries starting beyond the log end are allowed)."""
    for br in s.brokers:
        for r in br.replicas:
            if r is None:
                continue
            for i, rec in enumerate(r.log):
                if _covering_epoch(r.epochs, i) != record_epoch(rec):
                    return False
    return True


def epoch_cache_covers_log_offences(s: State) -> Iterator[str]:
    for b, br in enumerate(s.brokers, start=1):
        for p, r in enumerate(br.replicas):
            if r is None:
                continue
            for i, rec in enumerate(r.log):
                e = _covering_epoch(r.epochs, i)
                if e != record_epoch(rec):
                    covered = f"epoch {e}" if e >= 0 else "no entry"
                    yield (f"partition {p}: broker {b} holds {render_log((rec,))} at offset {i} where its "
                           f"epoch cache {list(r.epochs)} gives {covered}")


def _any_log(s: Any) -> bool:
    return any(r is not None and r.log for br in s.brokers for r in br.replicas)


def _uses_leader_epochs(cfg: Config) -> bool:
    return cfg.generation.traits.leader_epochs


# No observation form: the observation does not carry the epoch caches.
EPOCH_CACHE_COVERS_LOG = Always(NAMES.EpochCacheCoversLog, epoch_cache_covers_log, epoch_cache_covers_log_offences,
                                exercised=_any_log, applies=_uses_leader_epochs)


# ---------------------------------------------------------------------------- WriteEventuallyCommitted
def _write_eventually_committed(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    pairs = [(p, rid) for p in range(cfg.partitions) for rid in range(1, cfg.max_records + 1)]
    min_isr = cfg.min_insync_replicas

    def masks(s: State) -> tuple[int, int]:
        premise = goal = 0
        alive = alive_mask(s)
        for i, (p, rid) in enumerate(pairs):
            bit = 1 << rid
            if s.ghost[p].acked & bit or gone(s, p) or (s.zk.partitions[p].isr & alive).bit_count() < min_isr:
                goal |= 1 << i
                continue
            waiting = False
            for br in s.brokers:
                r = br.replicas[p]
                if br.alive and r is not None and r.pending & bit:
                    waiting = True
                    break
            if waiting:
                premise |= 1 << i
            else:
                goal |= 1 << i  # answered: acknowledged, or the producer was told it failed
        return premise, goal

    return tuple(f"partition {p} record {rid}" for p, rid in pairs), masks


def _acks_all_writes(cfg: Config) -> bool:
    return cfg.acks == "all" and cfg.max_records > 0


WRITE_EVENTUALLY_COMMITTED = Liveness(NAMES.WriteEventuallyCommitted, _acks_all_writes, _write_eventually_committed)


DEFINITIONS = (HIGH_WATERMARK_BELOW_LOG_END, NO_COMMITTED_WRITE_LOST, LOG_MATCHING, CONSISTENT_READ,
               CONSISTENT_FOLLOWER_READ, EPOCH_CACHE_COVERS_LOG, WRITE_EVENTUALLY_COMMITTED)
