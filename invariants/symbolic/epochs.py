"""The leader-epoch generations (kip-101, kip-279, kip-320) as z3 terms (specs/08-symbolic.md#generations).

``model/epochs.py`` transcribed function by function over a :class:`~.types.SymEpochs` (a cache of a
fixed number of (epoch, start) slots with a symbolic length), and :class:`LeaderEpochTruncation`, the
:class:`~.instance.TruncationRule` of those generations (a plug-in of the encoding, registered in
:data:`~.generations.GENERATIONS`): what ``model/broker.py`` does with the
cache when a replica becomes leader or follower, appends, fetches, is cut back by OffsetOutOfRange or a
crash, and the two steps of the OffsetsForLeaderEpoch exchange (the model's actions
``OffsetsForLeaderEpoch`` and ``TruncateToEpochEndOffset``), plus KIP-320's fencing of fetches and
epoch queries and the KAFKA-7128 rule for joining the ISR.

The cache capacity is a bound like the request queues': an entry that would not fit sets the state's
``overflow`` (bounded model checking reports it, induction excludes it). The default capacity,
``max_records + 1`` plus the leader-epoch bumps a leader can see without appending, holds every cache
the model reaches in the manifest's generation models (a test checks it on four of them).
"""
from __future__ import annotations

from typing import Any

import z3

from isrcheck.model.protocol import Protocol
from isrcheck.model.state import ASK_EPOCH_END, FETCHING, TRUNCATE_PENDING
from isrcheck.specs.protocol import EpochAnswer, Generation, Traits

from .instance import Encoder, Instance, TruncationRule
from .types import SymEpochs, SymLog, SymReplica, SymRequest, SymState, numval

I = numval  # noqa: E741
B = z3.BoolVal
UNDEFINED = -1


def _imin(a: Any, b: Any) -> Any:
    return z3.If(a <= b, a, b)


def _ite(c: Any, a: Any, b: Any) -> Any:
    if isinstance(a, z3.ExprRef) and isinstance(b, z3.ExprRef) and a.eq(b):
        return a
    return z3.If(c, a, b)


def ep_ite(c: z3.BoolRef, a: SymEpochs, b: SymEpochs) -> SymEpochs:
    return SymEpochs.of_leaves([_ite(c, x, y) for x, y in zip(a.leaves(), b.leaves())], len(a.epochs))


# ============================================================================ model/epochs.py
def last(ep: SymEpochs, which: tuple[z3.ArithRef, ...]) -> z3.ArithRef:
    """The last entry's epoch or start (UNDEFINED for an empty cache)."""
    out: z3.ArithRef = I(UNDEFINED)
    for i, x in enumerate(which):
        out = z3.If(ep.length == i + 1, x, out)
    return out


def latest(ep: SymEpochs) -> z3.ArithRef:
    return last(ep, ep.epochs)


def assign(ep: SymEpochs, epoch: z3.ArithRef, start: z3.ArithRef, cond: Any = True) -> tuple[SymEpochs, Any]:
    """epochs.assign when ``cond``: (the cache after, the condition under which it overflows)."""
    do = z3.And(cond, z3.Or(ep.length == 0, latest(ep) < epoch))
    n = len(ep.epochs)
    es = tuple(z3.If(z3.And(do, ep.length == i), epoch, ep.epochs[i]) for i in range(n))
    ss = tuple(z3.If(z3.And(do, ep.length == i), start, ep.starts[i]) for i in range(n))
    out = SymEpochs(z3.If(do, ep.length + 1, ep.length), es, ss, ep.fetch_state, ep.answered, ep.answer_epoch,
                    ep.answer_end)
    return out, z3.And(do, ep.length >= n)


def after_append(ep: SymEpochs, log: SymLog, first_new: z3.ArithRef) -> tuple[SymEpochs, Any]:
    """epochs.after_append: an entry for each record's epoch from offset ``first_new`` on."""
    over: list[Any] = []
    for i in range(len(log.ids)):
        ep, o = assign(ep, log.epochs[i], I(i), z3.And(first_new <= i, log.length > i))
        over.append(o)
    return ep, z3.Or(over) if over else B(False)


def truncate(ep: SymEpochs, end: z3.ArithRef) -> SymEpochs:
    """epochs.truncate: drop the entries starting at or after ``end`` (kept as is when the last one
    starts before it, exactly as the model's shortcut)."""
    n = len(ep.epochs)
    kept = [z3.And(ep.length > i, ep.starts[i] < end) for i in range(n)]
    pos: list[z3.ArithRef] = []
    acc: z3.ArithRef = I(0)
    for k in kept:
        pos.append(acc)
        acc = acc + z3.If(k, I(1), I(0))
    es = tuple(z3.Sum([z3.If(z3.And(kept[i], pos[i] == j), ep.epochs[i], I(0)) for i in range(j, n)])
               for j in range(n))
    ss = tuple(z3.Sum([z3.If(z3.And(kept[i], pos[i] == j), ep.starts[i], I(0)) for i in range(j, n)])
               for j in range(n))
    filtered = SymEpochs(acc, es, ss, ep.fetch_state, ep.answered, ep.answer_epoch, ep.answer_end)
    keep_all = z3.Or(ep.length == 0, last(ep, ep.starts) < end)
    return ep_ite(keep_all, ep, filtered)


def start_of(ep: SymEpochs, epoch: z3.ArithRef) -> z3.ArithRef:
    out: z3.ArithRef = I(UNDEFINED)
    for i in reversed(range(len(ep.epochs))):
        out = z3.If(z3.And(ep.length > i, ep.epochs[i] == epoch), ep.starts[i], out)
    return out


def end_offset_kip101(ep: SymEpochs, leo: z3.ArithRef, asked: z3.ArithRef) -> tuple[z3.ArithRef, z3.ArithRef]:
    u = I(UNDEFINED)
    e_out, o_out = u, u  # no larger epoch known
    for i in reversed(range(len(ep.epochs))):
        c = z3.And(ep.length > i, ep.epochs[i] > asked)
        e_out, o_out = z3.If(c, asked, e_out), z3.If(c, ep.starts[i], o_out)
    older = asked < ep.epochs[0] if ep.epochs else B(True)
    e_out, o_out = z3.If(older, u, e_out), z3.If(older, u, o_out)
    cur = asked == latest(ep)
    e_out, o_out = z3.If(cur, asked, e_out), z3.If(cur, leo, o_out)
    none = z3.Or(asked == UNDEFINED, ep.length == 0)
    return z3.If(none, u, e_out), z3.If(none, u, o_out)


def end_offset_kip279(ep: SymEpochs, leo: z3.ArithRef, asked: z3.ArithRef) -> tuple[z3.ArithRef, z3.ArithRef]:
    u = I(UNDEFINED)
    e_out, o_out = u, u
    for i in reversed(range(len(ep.epochs))):
        c = z3.And(ep.length > i, ep.epochs[i] > asked)
        prev = ep.epochs[i - 1] if i else u
        e_out = z3.If(c, z3.If(prev == UNDEFINED, asked, prev), e_out)
        o_out = z3.If(c, ep.starts[i], o_out)
    cur = asked == latest(ep)
    e_out, o_out = z3.If(cur, asked, e_out), z3.If(cur, leo, o_out)
    none = z3.Or(asked == UNDEFINED, ep.length == 0)
    return z3.If(none, u, e_out), z3.If(none, u, o_out)


def answer_function(traits: Traits) -> Any:
    """The leader's answer to OffsetsForLeaderEpoch under a generation with ``traits``:
    :func:`end_offset_kip101` (an end offset) or :func:`end_offset_kip279` (an epoch and its end)."""
    if traits.epoch_answer is EpochAnswer.END_OFFSET:
        return end_offset_kip101
    if traits.epoch_answer is EpochAnswer.EPOCH_AND_END_OFFSET:
        return end_offset_kip279
    raise ValueError(f"no OffsetsForLeaderEpoch without leader epochs (epoch_answer {traits.epoch_answer})")


def trunc_log(log: SymLog, n: z3.ArithRef) -> SymLog:
    L = _imin(n, log.length)
    return SymLog(L, tuple(z3.If(L > i, log.ids[i], 0) for i in range(len(log.ids))),
                  tuple(z3.If(L > i, log.epochs[i], 0) for i in range(len(log.ids))))


# ============================================================================ the rule
class LeaderEpochTruncation(TruncationRule):
    """A generation with leader epochs: kip-101 / kip-279 / kip-320 (model/protocol.py with
    ``generation`` = the name), deciding by the generation's traits as ``Protocol`` does.

    The hooks below are called by :class:`~.replication.Encoding` where ``model/broker.py`` touches
    the epoch cache or the reconciliation state.
    """

    def __init__(self, generation: Generation) -> None:
        super().__init__(generation)
        t = self.traits
        assert t.leader_epochs, f"{generation} keeps no leader epochs"
        #: OffsetsForLeaderEpoch answers with an epoch and its end (KIP-279), not only an end offset (KIP-101)
        self.answers_with_epoch = t.epoch_answer is EpochAnswer.EPOCH_AND_END_OFFSET
        self.answer = answer_function(t)

    # -------------------------------------------------------------- Protocol methods
    def epoch_matches(self, rf: SymReplica, rl: SymReplica) -> Any:
        """Protocol.epoch_matches: fetches and epoch queries are fenced by leader epoch (KIP-320)."""
        return rf.leader_epoch == rl.leader_epoch if self.traits.fenced_by_leader_epoch else B(True)

    def fetch_allowed(self, enc: Encoder, rf: SymReplica, rl: SymReplica) -> z3.BoolRef:
        assert rf.ep is not None
        return z3.And(rf.ep.fetch_state == FETCHING, self.epoch_matches(rf, rl))

    def may_join_isr(self, enc: Encoder, rl: SymReplica, offset: z3.ArithRef) -> z3.BoolRef:
        if not self.traits.isr_join_needs_epoch_start:
            return offset >= rl.hw
        assert rl.ep is not None
        return z3.And(offset >= rl.hw, offset >= start_of(rl.ep, rl.leader_epoch))

    def become_follower(self, enc: Encoder, r: SymReplica, req: SymRequest) -> SymReplica:
        """become_follower_reconciling_by_epoch: keep the log, ask on a leader change (with
        ``reconcile_on_epoch_change``, kip-320: on a leader-epoch change)."""
        ep = r.ep
        assert ep is not None
        changed = r.leader != req.leader
        if self.traits.reconcile_on_epoch_change:
            changed = z3.Or(changed, r.leader_epoch != req.leader_epoch)
        state = z3.If(changed, z3.If(r.log.length > 0, I(ASK_EPOCH_END), I(FETCHING)), ep.fetch_state)
        nep = SymEpochs(ep.length, ep.epochs, ep.starts, state, z3.And(z3.Not(changed), ep.answered),
                        z3.If(changed, I(0), ep.answer_epoch), z3.If(changed, I(0), ep.answer_end))
        out = enc.follower_replica(r.log, r.hw, r.checkpoint, req.leader, req.leader_epoch)
        out.ep = nep
        return out

    def matches(self, protocol: Protocol) -> bool:
        t = type(protocol)
        return (protocol.config.generation == self.name
                and all(getattr(t, m) is getattr(Protocol, m)
                        for m in ("become_follower", "may_join_isr", "epoch_matches", "isr_removal_receivers")))

    # -------------------------------------------------------------- hooks of the encoding
    def initial_slots(self, cfg: Any) -> int:
        """Epoch-cache entries: one per record's epoch, plus one per leader-epoch bump a leader can see
        without appending (its election; each reassignment's steps bump-epoch and leader; an ISR removal
        after a fault).
        A cache that would outgrow this sets ``overflow``, which BMC reports as UNKNOWN, never hides."""
        f, o = cfg.faults, cfg.operations
        bumps = (2 * len(o.reassignments) + f.crashes + f.lossy_crashes + f.isr_shrinks + f.controller_failovers
                 + o.preferred_elections + o.controlled_shutdowns)
        return cfg.max_records + 1 + min(bumps, 4)

    def on_become_leader(self, enc: Encoder, t: SymState, old: SymReplica, new: SymReplica,
                         req: SymRequest, was: z3.BoolRef) -> None:
        """_become_leader: record the new epoch at the log end; a new leader fetches nothing."""
        assert old.ep is not None
        ep, over = assign(old.ep, req.leader_epoch, old.log.length)
        reset = SymEpochs(ep.length, ep.epochs, ep.starts, I(FETCHING), B(False), I(0), I(0))
        new.ep = ep_ite(was, ep, reset)
        t.overflow = z3.Or(t.overflow, over)

    def on_produce(self, enc: Encoder, t: SymState, old: SymReplica, new: SymReplica) -> None:
        assert old.ep is not None
        new.ep, over = assign(old.ep, old.leader_epoch, old.log.length)
        t.overflow = z3.Or(t.overflow, over)

    def on_fetch(self, enc: Encoder, t: SymState, old: SymReplica, new: SymReplica, offset: z3.ArithRef) -> None:
        assert old.ep is not None
        new.ep, over = after_append(old.ep, new.log, offset)
        t.overflow = z3.Or(t.overflow, over)

    def on_cut(self, enc: Encoder, old: SymReplica, new: SymReplica, crashed: bool) -> None:
        """The log was cut to ``new.log`` (OffsetOutOfRange, a crash); a crash also forgets the
        reconciliation (a restarted follower starts from FETCHING)."""
        assert old.ep is not None
        ep = truncate(old.ep, new.log.length)
        if crashed:
            ep = SymEpochs(ep.length, ep.epochs, ep.starts, I(FETCHING), B(False), I(0), I(0))
        new.ep = ep

    def extra_instances(self, enc: Encoder, s: SymState, b: int, p: int) -> list[Instance]:
        return self.query_instances(enc, s, b, p) + [self.truncate_instance(enc, s, b, p)]

    def query_instances(self, enc: Encoder, s: SymState, f: int, p: int) -> list[Instance]:
        """OffsetsForLeaderEpoch(f, p): one case per possible leader (exclusive guards)."""
        out = []
        rf = s.replicas[p][f]
        assert rf.ep is not None
        for L in enc.U[p]:
            if L == f:
                continue
            rl = s.replicas[p][L]
            assert rl.ep is not None
            guard = z3.And(s.alive[f], rf.leader == L, rf.ep.fetch_state == ASK_EPOCH_END, s.alive[L],
                           rl.leader == L, self.epoch_matches(rf, rl))
            e, o = self.answer(rl.ep, rl.log.length, latest(rf.ep))
            t = s.clone()
            ep = rf.ep
            t.replicas[p][f].ep = SymEpochs(ep.length, ep.epochs, ep.starts, I(TRUNCATE_PENDING), B(True), e, o)
            out.append(Instance("OffsetsForLeaderEpoch", (f, p), "OffsetsForLeaderEpoch", guard, t))
        return out

    def truncate_instance(self, enc: Encoder, s: SymState, f: int, p: int) -> Instance:
        """TruncateToEpochEndOffset(f, p): apply the answer (cut once at the end offset; with an
        epoch in the answer, kip-279 on, cut where both agree and maybe ask again)."""
        r = s.replicas[p][f]
        ep = r.ep
        assert ep is not None
        guard = z3.And(s.alive[f], ep.fetch_state == TRUNCATE_PENDING)
        epoch, end = ep.answer_epoch, ep.answer_end
        leo = r.log.length
        undefined = epoch == UNDEFINED
        at_hw = _imin(r.hw, leo)
        if not self.answers_with_epoch:
            cut, done = z3.If(undefined, at_hw, _imin(end, leo)), B(True)
        else:
            mine, my_end = end_offset_kip279(ep, leo, epoch)
            unknown = z3.Or(undefined, mine == UNDEFINED)
            cut = z3.If(unknown, at_hw, _imin(end, my_end))
            done = z3.Or(unknown, mine == epoch)
        t = s.clone()
        rt = t.replicas[p][f]
        rt.log = trunc_log(r.log, cut)
        rt.hw = _imin(r.hw, cut)
        cut_ep = truncate(ep, cut)
        state = z3.If(z3.Or(done, rt.log.length == 0), I(FETCHING), I(ASK_EPOCH_END))
        rt.ep = SymEpochs(cut_ep.length, cut_ep.epochs, cut_ep.starts, state, B(False), I(0), I(0))
        return Instance("TruncateToEpochEndOffset", (f, p), "TruncateToEpochEndOffset", guard, t)


__all__ = ["LeaderEpochTruncation", "assign", "after_append", "truncate", "start_of", "latest",
           "end_offset_kip101", "end_offset_kip279", "answer_function"]
