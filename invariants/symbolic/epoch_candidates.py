"""The strengthening candidates of the leader-epoch generations (specs/08-symbolic.md#the-kip-320-gap).

Added to the pool of :mod:`.candidates` for kip-101, kip-279 and kip-320 only (under high-watermark
a replica has no epoch cache, and these families would be ``True`` by construction): the epoch
cache and the OffsetsForLeaderEpoch exchange, the Raft-style facts a durability proof through
OffsetsForLeaderEpoch needs, kip-320's reconciliation (what a fetching follower's log and cache hold
relative to its leader's), and, from :mod:`.committed`, the committed prefix.
"""
from __future__ import annotations

import itertools
from typing import Any

import z3

from isrcheck.model.state import ASK_EPOCH_END, FETCHING, TRUNCATE_PENDING

from .candidates import Pred, blank_unless, every_replica, history_points, is_prefix, replica_pairs
from .committed import COMMITTED_PREFIX_CANDIDATES
from .epochs import answer_function, last as epoch_last, latest as cache_latest
from .replication import Encoding
from .types import REQ_LAI, SymState


# ---------------------------------------------------------------------------- leader-epoch generations
# (true by construction, i.e. ``True``, under high-watermark, whose replicas have no epoch cache)
def _epoch_replicas(enc: Encoding, s: SymState) -> list[tuple[int, int, Any]]:
    return [(p, b, r) for p, b, r in every_replica(enc, s) if r.ep is not None]


def _epoch_cache_well_formed(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Entries in increasing epochs with non-decreasing starts within the log, blank slots beyond the
    length; an answer is held exactly while TRUNCATE_PENDING, and it is UNDEFINED or an offset."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        ep = r.ep
        n = len(ep.epochs)
        out += [ep.length >= 0, ep.length <= n, z3.Or(ep.fetch_state == FETCHING, ep.fetch_state == ASK_EPOCH_END,
                                                      ep.fetch_state == TRUNCATE_PENDING),
                ep.answered == (ep.fetch_state == TRUNCATE_PENDING),
                z3.Implies(z3.Not(ep.answered), z3.And(ep.answer_epoch == 0, ep.answer_end == 0)),
                z3.Implies(ep.answered, z3.Or(z3.And(ep.answer_epoch == -1, ep.answer_end == -1),
                                              z3.And(ep.answer_epoch >= 0, ep.answer_end >= 0,
                                                     ep.answer_end <= enc.K)))]
        for k in range(n):
            inside = ep.length > k
            out.append(z3.If(inside, z3.And(ep.epochs[k] >= 0, ep.starts[k] >= 0, ep.starts[k] <= r.log.length),
                             z3.And(ep.epochs[k] == 0, ep.starts[k] == 0)))
            if k + 1 < n:
                out.append(z3.Implies(ep.length > k + 1, z3.And(ep.epochs[k] < ep.epochs[k + 1],
                                                                 ep.starts[k] <= ep.starts[k + 1])))
    return z3.And(out) if out else z3.BoolVal(True)


def _epoch_cache_covers_log(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A non-empty log has a cache starting at 0, and each record's epoch is that of the last entry
    starting at or before it (so OffsetsForLeaderEpoch answers describe the log)."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        ep = r.ep
        n = len(ep.epochs)
        out.append(z3.Implies(r.log.length > 0, z3.And(ep.length > 0, ep.starts[0] == 0)))
        for i in range(enc.K):
            for k in range(n):
                covers = z3.And(ep.length > k, ep.starts[k] <= i,
                                z3.Or(ep.length <= k + 1, *([ep.starts[k + 1] > i] if k + 1 < n else [])))
                out.append(z3.Implies(z3.And(r.log.length > i, covers), r.log.epochs[i] == ep.epochs[k]))
    return z3.And(out) if out else z3.BoolVal(True)


def _leaders_fetch_normally(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A leader and a dead replica are not reconciling; a reconciling follower has a log."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        ep = r.ep
        out.append(z3.Implies(z3.Or(r.leader == b, z3.Not(s.alive[b])), ep.fetch_state == FETCHING))
        out.append(z3.Implies(ep.fetch_state != FETCHING, r.log.length > 0))
    return z3.And(out) if out else z3.BoolVal(True)


def _leader_cache_ends_with_its_epoch(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A leader's latest cache entry is its own epoch; no live replica's cache is ahead of the epoch
    it believes in (kip-320 fences fetches, so a follower only copies records of its own epoch)."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        last = cache_latest(r.ep)
        out.append(z3.Implies(z3.And(s.alive[b], r.leader == b), last == r.leader_epoch))
        out.append(z3.Implies(z3.And(s.alive[b], r.leader != 0), last <= r.leader_epoch))
    return z3.And(out) if out else z3.BoolVal(True)


def _answers_cover_committed(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A pending OffsetsForLeaderEpoch answer of a live ISR member never cuts an acknowledged record
    it holds: it names an epoch (not UNDEFINED) and ends after that record."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        g = s.ghost[p]
        for j in range(1, enc.K + 1):
            held = z3.And(s.alive[b], s.zk[p].isr[b], r.ep.answered, g.acked[j], enc.holds_id(r.log, j))
            out.append(z3.Implies(held, z3.And(r.ep.answer_epoch >= g.epoch[j], r.ep.answer_end > g.position[j])))
    return z3.And(out) if out else z3.BoolVal(True)


def _committed_held_by_leaders(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A live leader of the znode's epoch holds every acknowledged record (below its HW)."""
    out = []
    for p in range(enc.P):
        g = s.ghost[p]
        for L in enc.U[p]:
            leads = enc.acting_leader(s, p, L)
            rl = s.replicas[p][L]
            for j in range(1, enc.K + 1):
                out.append(z3.Implies(z3.And(leads, g.acked[j]), enc.holds_id(rl.log, j)))
    return z3.And(out) if out else z3.BoolVal(True)


def _cache_epochs_bounded(enc: Encoding, s: SymState) -> z3.BoolRef:
    """No cached or answered epoch is ahead of the znode's."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        z = s.zk[p]
        out += [z3.Implies(r.ep.length > k, r.ep.epochs[k] <= z.leader_epoch) for k in range(len(r.ep.epochs))]
        out.append(r.ep.answer_epoch <= z.leader_epoch)
    return z3.And(out) if out else z3.BoolVal(True)


def _queued_requests_not_behind(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Every LeaderAndIsr queued at a broker is at least as new as the epoch it is on and as its
    cache (requests are sent in epoch order and delivered in order; a crash empties the queue)."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        q = s.inbox[b]
        for i, sl in enumerate(q.slots):
            lai = z3.And(q.length > i, sl.kind == REQ_LAI, sl.partition == p)
            out.append(z3.Implies(lai, z3.And(sl.leader_epoch >= r.leader_epoch, sl.leader_epoch >= cache_latest(r.ep))))
    return z3.And(out) if out else z3.BoolVal(True)


def _queued_requests_ordered(enc: Encoding, s: SymState) -> z3.BoolRef:
    """The LeaderAndIsr requests for one partition in a queue are in epoch order."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for b, q in s.inbox.items():
        for i, a in enumerate(q.slots):
            for j in range(i + 1, len(q.slots)):
                c = q.slots[j]
                both = z3.And(q.length > j, a.kind == REQ_LAI, c.kind == REQ_LAI, a.partition == c.partition)
                out.append(z3.Implies(both, a.leader_epoch <= c.leader_epoch))
    return z3.And(out) if out else z3.BoolVal(True)


def _queued_promotions(enc: Encoding, s: SymState, p: int) -> list[tuple[z3.BoolRef, Any]]:
    """(queued, slot) for every request slot of ``p`` that, when queued, is a LeaderAndIsr naming its
    receiver leader in an epoch newer than the receiver's."""
    out = []
    for b, q in s.inbox.items():
        if b not in s.replicas[p]:
            continue
        r = s.replicas[p][b]
        for i, sl in enumerate(q.slots):
            out.append((z3.And(q.length > i, sl.kind == REQ_LAI, sl.partition == p, sl.leader == b,
                               sl.leader_epoch > r.leader_epoch), sl))
    return out


def _unled_epochs_have_no_records(enc: Encoding, s: SymState) -> z3.BoolRef:
    """No log holds a record of an epoch whose leader has not taken over yet (a queued LeaderAndIsr
    naming its receiver as leader in an epoch newer than the receiver's)."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        logs = [r.log for r in s.replicas[p].values()]
        for new, sl in _queued_promotions(enc, s, p):
            for lg in logs:
                out += [z3.Implies(z3.And(new, lg.length > k), lg.epochs[k] != sl.leader_epoch)
                        for k in range(enc.K)]
    return z3.And(out) if out else z3.BoolVal(True)


def _leader_complete_for_its_epoch(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A live leader holds every record of its own epoch that any log holds, at the same offset."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        reps = s.replicas[p]
        for L, rl in reps.items():
            leads = z3.And(s.alive[L], rl.leader == L)
            for m, rm in reps.items():
                if m == L:
                    continue
                for k in range(enc.K):
                    mine = z3.And(leads, rm.log.length > k, rm.log.epochs[k] == rl.leader_epoch)
                    out.append(z3.Implies(mine, z3.And(rl.log.length > k, enc.rec_eq(rm.log, rl.log, k))))
    return z3.And(out) if out else z3.BoolVal(True)


def _answer_from_leader(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A pending answer of a follower whose leader still leads in its epoch is the leader's answer
    to the follower's latest epoch (its end only grows while the leader appends in its own epoch).
    Only where epoch queries are fenced by leader epoch (kip-320): an answer was given in the epoch
    the follower still has."""
    if not enc.rule.traits.fenced_by_leader_epoch:
        return z3.BoolVal(True)
    answer = answer_function(enc.rule.traits)
    out = []
    for p in range(enc.P):
        reps = s.replicas[p]
        for L, rl in reps.items():
            for f, rf in reps.items():
                if f == L or rf.ep is None or rl.ep is None:
                    continue
                cond = z3.And(s.alive[f], s.alive[L], rf.leader == L, rl.leader == L,
                              rf.leader_epoch == rl.leader_epoch, rf.ep.answered)
                e, o = answer(rl.ep, rl.log.length, cache_latest(rf.ep))
                out.append(z3.Implies(cond, z3.And(rf.ep.answer_epoch == e, z3.If(
                    e == rl.leader_epoch, rf.ep.answer_end <= o,
                    rf.ep.answer_end == o))))
    return z3.And(out) if out else z3.BoolVal(True)


def _controller_dead_are_not_leaders(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A broker the controller believes dead is not the znode's leader (its leave moved leadership)."""
    if not enc.E:
        return z3.BoolVal(True)
    return z3.And([z3.Implies(z3.Not(s.c_live[b]), s.zk[p].leader != b)
                   for p in range(enc.P) for b in enc.U[p]])


def _controller_dead_are_blank(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A broker the controller believes dead (dead, or restarted unnoticed) has no requests and leads
    or follows nobody: the controller sends only to brokers it believes alive."""
    if not enc.E:
        return z3.BoolVal(True)
    return blank_unless(enc, s, s.c_live)


def _same_epoch_same_prefix(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Raft's log matching: two logs holding a record of the same epoch at the same offset agree on
    everything up to it (one leader per epoch appends, followers copy prefixes)."""
    out = []
    for p in range(enc.P):
        reps = list(s.replicas[p].values())
        for x in range(len(reps)):
            for y in range(x + 1, len(reps)):
                a, b = reps[x].log, reps[y].log
                for i in range(enc.K):
                    same = z3.And(a.length > i, b.length > i, a.epochs[i] == b.epochs[i])
                    out.append(z3.Implies(same, z3.And([enc.rec_eq(a, b, k) for k in range(i + 1)])))
    return z3.And(out) if out else z3.BoolVal(True)


def _reconciled_followers_are_prefixes(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A live follower that fetches from the live leader in the leader's epoch holds a prefix of the
    leader's log, and the leader's record of its LEO is not beyond it (kip-320: it reconciled when
    the epoch changed)."""
    out = []
    for L, rl, f, rf in _epoch_pairs(enc, s):
        cond = z3.And(s.alive[f], s.alive[L], rf.leader == L, rl.leader == L,
                      rf.leader_epoch == rl.leader_epoch, rf.ep.fetch_state == FETCHING)
        above = [z3.Implies(z3.And(rl.log.length > i, rf.log.length <= i), rl.log.epochs[i] >= cache_latest(rf.ep))
                 for i in range(enc.K)]
        out.append(z3.Implies(cond, z3.And(is_prefix(enc, rf.log, rl.log), rl.remote_leo[f] <= rf.log.length, *above)))
    return z3.And(out) if out else z3.BoolVal(True)


def _epoch_pairs(enc: Encoding, s: SymState) -> list[tuple[int, Any, int, Any]]:
    """(L, replica of L, f, replica of f) for every two replicas of a partition, f's with an epoch
    state (the leader-epoch generations)."""
    return [(L, rl, f, rf) for p in range(enc.P) for L, rl in s.replicas[p].items()
            for f, rf in s.replicas[p].items() if f != L and rf.ep is not None]


def _remote_leo_held(enc: Encoding, s: SymState, down_too: bool) -> z3.BoolRef:
    """What a live leader records of a replica's LEO (a live one, or ``down_too`` any) is held by that
    replica, in the same records as the leader's own."""
    out = [z3.Implies(z3.And(s.alive[L], rl.leader == L) if down_too
                      else z3.And(s.alive[L], rl.leader == L, s.alive[m]),
                      z3.And(rl.remote_leo[m] <= rm.log.length, enc.prefix_eq(rm.log, rl.log, rl.remote_leo[m])))
           for p, L, rl, m, rm in replica_pairs(enc, s)]
    return z3.And(out) if out else z3.BoolVal(True)


def _remote_leo_sound(enc: Encoding, s: SymState) -> z3.BoolRef:
    """What a live leader records of a live replica's LEO is really held by that replica, in the same
    records as its own (so an HW computed from remote LEOs never counts records a follower lacks)."""
    return _remote_leo_held(enc, s, down_too=False)


def _versions_follow_epochs(enc: Encoding, s: SymState) -> z3.BoolRef:
    """The znode, every queued LeaderAndIsr and every leader's (epoch, version) are points of the
    znode's history, where the version grows with every write and the epoch never falls: a newer
    epoch always comes with a newer version."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        for (ci, ei, vi), (cj, ej, vj) in itertools.permutations(history_points(enc, s, p, "zk_version"), 2):
            out.append(z3.Implies(z3.And(ci, cj, ei < ej), vi < vj))
    return z3.And(out) if out else z3.BoolVal(True)


def _znode_isr_within_queued_leadership(enc: Encoding, s: SymState) -> z3.BoolRef:
    """While a LeaderAndIsr naming its receiver leader in a newer epoch than the receiver's waits in
    its queue, the znode still names that leader and its ISR stays within the request's: only the
    controller writes the znode meanwhile (the leader's conditional write needs the newer version),
    and the controller only shrinks an ISR."""
    if not enc.E:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        z, ar = s.zk[p], enc.U[p]
        for mine, sl in _queued_promotions(enc, s, p):
            out.append(z3.Implies(mine, z3.And(z.leader == sl.leader, *[z3.Implies(z.isr[m], sl.isr[m]) for m in ar])))
    return z3.And(out) if out else z3.BoolVal(True)


def _live_leaders_lead_the_znode(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A live replica that leads is the znode's leader, and the znode's ISR is within its own view:
    the controller moves leadership only away from a broker it saw leave (which left it blank), only
    shrinks an ISR, and a leader's own ISR writes set the znode's ISR to its view."""
    if not enc.E:
        return z3.BoolVal(True)
    out = [z3.Implies(z3.And(s.alive[b], r.leader == b),
                      z3.And(s.zk[p].leader == b, *[z3.Implies(s.zk[p].isr[m], r.isr[m]) for m in enc.U[p]]))
           for p, b, r in every_replica(enc, s)]
    return z3.And(out) if out else z3.BoolVal(True)


def _committed_held_by_isr_even_if_down(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Every member of the znode's ISR and its leader holds every acknowledged record, down or not:
    a crash keeps the log (no lossy crash), so a broker that restarts still in the ISR holds them."""
    if not enc.E:
        return z3.BoolVal(True)
    out = [z3.Implies(z3.And(z3.Or(s.zk[p].isr[b], s.zk[p].leader == b), s.ghost[p].acked[j]), enc.holds_id(r.log, j))
           for p, b, r in every_replica(enc, s) for j in range(1, enc.K + 1)]
    return z3.And(out) if out else z3.BoolVal(True)


def _remote_leo_sound_even_if_down(enc: Encoding, s: SymState) -> z3.BoolRef:
    """*RemoteLeoSound* for down replicas too: what a live leader records of a replica's LEO is held
    by that replica even while it is down (its log survives the crash)."""
    if not enc.E:
        return z3.BoolVal(True)
    return _remote_leo_held(enc, s, down_too=True)


def _answers_not_ahead_of_cache(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A pending OffsetsForLeaderEpoch answer names no epoch newer than the follower's latest cached
    one: the leader answers with an epoch at most the one asked, and the follower's cache does not
    change while the answer waits."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        out.append(z3.Implies(z3.And(r.ep.answered, r.ep.answer_epoch != -1), r.ep.answer_epoch <= cache_latest(r.ep)))
    return z3.And(out) if out else z3.BoolVal(True)


def _answers_cover_recorded_leo(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A pending answer never cuts below what a live leader records of that follower's LEO: it names
    an epoch (not UNDEFINED) at least that of the follower's record before it, and ends at or after
    it (so truncating keeps the records the leader counts on for its HW)."""
    out = []
    for L, rl, f, rf in _epoch_pairs(enc, s):
        v = rl.remote_leo[f]
        cond = z3.And(s.alive[L], rl.leader == L, rf.ep.answered, v > 0)
        last = [z3.Implies(v == i + 1, rf.ep.answer_epoch >= rf.log.epochs[i]) for i in range(enc.K)]
        out.append(z3.Implies(cond, z3.And(rf.ep.answer_epoch >= 0, rf.ep.answer_end >= v, *last)))
    return z3.And(out) if out else z3.BoolVal(True)


def _offline_means_leaderless(enc: Encoding, s: SymState) -> z3.BoolRef:
    """The controller holds a partition Offline only while its znode names no leader (it goes
    Offline when no leader can be elected), so a broker coming back never re-elects over a leader."""
    if not enc.E:
        return z3.BoolVal(True)
    return z3.And([z3.Or(s.partition_online[p], s.zk[p].leader == 0) for p in range(enc.P)])


# ---------------------------------------------------------------------------- kip-320 reconciliation
# (specs/08-symbolic.md#the-kip-320-gap: what a fetching follower's log and cache hold relative to its leader's)
def _cache_last_start(ep: Any) -> z3.ArithRef:
    return epoch_last(ep, ep.starts)


def _empty_epochs_only_at_leaders(enc: Encoding, s: SymState) -> z3.BoolRef:
    """Only a live leader has a latest cache entry without records (one starting at its log end),
    apart from the initial ``[e0@0]`` of an empty log: a leader records its epoch before appending,
    a follower only for records it appends, a truncation or a crash drops entries starting at or
    beyond the new end, and (with the OfflinePartition selector alone) a live leader is never made a
    follower. So a follower's latest epoch is that of its last record."""
    out = []
    for p, b, r in _epoch_replicas(enc, s):
        ep = r.ep
        out.append(z3.Implies(z3.Not(z3.And(s.alive[b], r.leader == b)), z3.Or(
            ep.length == 0, _cache_last_start(ep) < r.log.length,
            z3.And(r.log.length == 0, ep.length == 1, ep.epochs[0] == 0))))
    return z3.And(out) if out else z3.BoolVal(True)


def _queued_requests_keep_live_leaders(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A LeaderAndIsr queued at a live leader for a newer epoch than its own, or queued behind a
    promotion of its receiver, names the receiver leader too: the controller moves leadership only
    away from a broker it saw leave, and leaving empties the queue."""
    out = []
    for p in range(enc.P):
        for b, r in s.replicas[p].items():
            q = s.inbox[b]
            lai = [z3.And(q.length > i, sl.kind == REQ_LAI, sl.partition == p) for i, sl in enumerate(q.slots)]
            for j, sl in enumerate(q.slots):
                behind = [z3.And(lai[i], q.slots[i].leader == b, q.slots[i].leader_epoch > r.leader_epoch)
                          for i in range(j)]
                c = z3.And(lai[j], z3.Or(z3.And(s.alive[b], r.leader == b, sl.leader_epoch > r.leader_epoch), *behind))
                out.append(z3.Implies(c, sl.leader == b))
    return z3.And(out) if out else z3.BoolVal(True)


def _followers_wait_for_their_leader(enc: Encoding, s: SymState) -> z3.BoolRef:
    """While a promotion of L to epoch E waits in L's queue, a live follower of L in epoch E has not
    reconciled or fetched yet: it must ask its epoch's end, or it has an empty log (kip-320 fences
    epoch queries and fetches by the leader's epoch, which L does not have yet)."""
    if not enc.rule.traits.fenced_by_leader_epoch:
        return z3.BoolVal(True)
    out = []
    for p in range(enc.P):
        for new, sl in _queued_promotions(enc, s, p):
            for f, rf in s.replicas[p].items():
                if rf.ep is None:
                    continue
                c = z3.And(new, s.alive[f], rf.leader == sl.leader, rf.leader_epoch == sl.leader_epoch)
                out.append(z3.Implies(c, z3.Or(rf.ep.fetch_state == ASK_EPOCH_END,
                                               z3.And(rf.ep.fetch_state == FETCHING, rf.log.length == 0))))
    return z3.And(out) if out else z3.BoolVal(True)


def _records_not_before_their_epoch_start(enc: Encoding, s: SymState) -> z3.BoolRef:
    """No log holds a record of epoch e at an offset before where any cache says e starts: the
    leader of e starts it at its log end and appends from there, followers copy at the same offsets."""
    out = []
    for p in range(enc.P):
        logs = [r.log for r in s.replicas[p].values()]
        for r in s.replicas[p].values():
            if r.ep is None:
                continue
            ep = r.ep
            for k in range(len(ep.epochs)):
                for x in logs:
                    for i in range(enc.K):
                        out.append(z3.Implies(z3.And(ep.length > k, x.length > i, x.epochs[i] == ep.epochs[k]),
                                              ep.starts[k] <= i))
    return z3.And(out) if out else z3.BoolVal(True)


def _blank_replicas_fetch_normally(enc: Encoding, s: SymState) -> z3.BoolRef:
    """A replica blanked by a crash (leader epoch -1) is not reconciling and holds no answer."""
    return z3.And([z3.Implies(r.leader_epoch == -1, r.ep.fetch_state == FETCHING)
                   for p, b, r in _epoch_replicas(enc, s)] or [z3.BoolVal(True)])


EPOCH_CANDIDATES: tuple[tuple[str, Pred], ...] = (
    ("EpochCacheWellFormed", _epoch_cache_well_formed),
    ("EpochCacheCoversLog", _epoch_cache_covers_log),
    ("LeadersFetchNormally", _leaders_fetch_normally),
    ("LeaderCacheEndsWithItsEpoch", _leader_cache_ends_with_its_epoch),
    ("AnswersCoverCommitted", _answers_cover_committed),
    ("CommittedHeldByLeader", _committed_held_by_leaders),
    ("SameEpochSamePrefix", _same_epoch_same_prefix),
    ("ReconciledFollowersArePrefixes", _reconciled_followers_are_prefixes),
    ("RemoteLeoSound", _remote_leo_sound),
    ("CacheEpochsBounded", _cache_epochs_bounded),
    ("QueuedRequestsNotBehind", _queued_requests_not_behind),
    ("QueuedRequestsOrdered", _queued_requests_ordered),
    ("UnledEpochsHaveNoRecords", _unled_epochs_have_no_records),
    ("LeaderCompleteForItsEpoch", _leader_complete_for_its_epoch),
    ("AnswerFromLeader", _answer_from_leader),
    ("ControllerDeadAreNotLeaders", _controller_dead_are_not_leaders),
    ("ControllerDeadAreBlank", _controller_dead_are_blank),
    ("VersionsFollowEpochs", _versions_follow_epochs),
    ("ZnodeIsrWithinQueuedLeadership", _znode_isr_within_queued_leadership),
    ("LiveLeadersLeadTheZnode", _live_leaders_lead_the_znode),
    ("CommittedHeldByIsrEvenIfDown", _committed_held_by_isr_even_if_down),
    ("RemoteLeoSoundEvenIfDown", _remote_leo_sound_even_if_down),
    ("AnswersNotAheadOfCache", _answers_not_ahead_of_cache),
    ("AnswersCoverRecordedLeo", _answers_cover_recorded_leo),
    ("OfflineMeansLeaderless", _offline_means_leaderless),
    ("EmptyEpochsOnlyAtLeaders", _empty_epochs_only_at_leaders),
    ("QueuedRequestsKeepLiveLeaders", _queued_requests_keep_live_leaders),
    ("FollowersWaitForTheirLeader", _followers_wait_for_their_leader),
    ("RecordsNotBeforeTheirEpochStart", _records_not_before_their_epoch_start),
    ("BlankReplicasFetchNormally", _blank_replicas_fetch_normally),
) + COMMITTED_PREFIX_CANDIDATES  # .committed: the committed prefix (specs/08-symbolic.md#the-committed-prefix)
"""Added to the pool for the leader-epoch generations only: the epoch cache and reconciliation, and
the Raft-style facts a durability proof through OffsetsForLeaderEpoch needs (specs/08-symbolic.md).
The high-watermark pool is :data:`.candidates.CANDIDATES` alone, so its results are what they were."""


__all__ = ["EPOCH_CANDIDATES"]
