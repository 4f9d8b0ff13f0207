"""The committed prefix under kip-320: strengthening candidates for StrongIsr, LogMatching and
ConsistentRead (specs/08-symbolic.md#the-committed-prefix).

Every HW a replica holds or has checkpointed, and the exposed log, mark a prefix of the partition's
log that is **committed**: every member of the znode's ISR and the znode's leader, down or not,
holds the same records there. The facts below say so, and say why no step undoes it: a live leader's
HW or the start of its current epoch bounds every mark (so a follower that joins the ISR under
KAFKA-7128 holds the whole prefix), and a pending OffsetsForLeaderEpoch answer never cuts a
replica below its own HW, nor an ISR member below any mark. Each is a predicate over a symbolic
state, in the shape of the pool of :mod:`.candidates` (:mod:`.epoch_candidates` adds them to its families).
"""
from __future__ import annotations

import z3

from .epochs import last as epoch_last
from .instance import Encoder
from .types import SymLog, SymReplica, SymState


def _imax(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a >= b, a, b)


def _rec_eq(a: SymLog, b: SymLog, i: int) -> z3.BoolRef:
    return z3.And(a.ids[i] == b.ids[i], a.epochs[i] == b.epochs[i])


def _holders(s: SymState, U: tuple[int, ...], p: int) -> list[tuple[int, z3.BoolRef]]:
    """(broker, whether it is a member of the znode's ISR or the znode's leader) for p's replicas."""
    z = s.zk[p]
    return [(m, z3.Or(z.isr[m], z.leader == m)) for m in U]


def _marks(s: SymState, p: int) -> list[z3.ArithRef]:
    """Every replica's HW and HW checkpoint."""
    return [h for r in s.replicas[p].values() for h in (r.hw, r.checkpoint)]


def _held_below(enc: Encoder, x: SymLog, y: SymLog, h: z3.ArithRef) -> z3.BoolRef:
    """``y`` has at least ``h`` records, and those of ``x`` below ``h`` (as many as ``x`` has) are ``y``'s."""
    return z3.And(h <= y.length, *[z3.Implies(z3.And(h > i, x.length > i), _rec_eq(x, y, i)) for i in range(enc.K)])


def _holders_agree_below(enc: Encoder, s: SymState, p: int, h: z3.ArithRef) -> list[z3.BoolRef]:
    """Any two holders (members of the znode's ISR or its leader) have the same records below ``h``."""
    reps = s.replicas[p]
    hs = _holders(s, enc.U[p], p)
    out = []
    for a in range(len(hs)):
        for c in range(a + 1, len(hs)):
            (m, hm), (n, hn) = hs[a], hs[c]
            out.append(z3.Implies(z3.And(hm, hn), z3.And(
                *[z3.Implies(h > i, _rec_eq(reps[m].log, reps[n].log, i)) for i in range(enc.K)])))
    return out


def high_watermarks_held_by_isr(enc: Encoder, s: SymState) -> z3.BoolRef:
    """Every member of the znode's ISR and its leader, down or not, holds at least as many records
    as any replica's HW or HW checkpoint, the members agree with each other below it, and the
    replica's own records below it are theirs: a HW only counts records every ISR member has, a
    crash keeps the log (no lossy crash), a follower joins the ISR only past the leader's HW and its
    epoch's start, and kip-320 truncates no ISR member below a mark."""
    out: list[z3.BoolRef] = []
    for p in range(enc.P):
        reps = s.replicas[p]
        for m, holder in _holders(s, enc.U[p], p):
            for rx in reps.values():
                for h in (rx.hw, rx.checkpoint):
                    out.append(z3.Implies(holder, _held_below(enc, rx.log, reps[m].log, h)))
        for h in _marks(s, p):
            out += _holders_agree_below(enc, s, p, h)
    return z3.And(out) if out else z3.BoolVal(True)


def exposed_held_by_isr(enc: Encoder, s: SymState) -> z3.BoolRef:
    """The exposed log (what any leader made readable) is a prefix of every ISR member's and the
    znode leader's log, down or not."""
    out: list[z3.BoolRef] = []
    for p in range(enc.P):
        g = s.ghost[p]
        out += _holders_agree_below(enc, s, p, g.exposed.length)
        for m, holder in _holders(s, enc.U[p], p):
            out.append(z3.Implies(holder, _held_below(enc, g.exposed, s.replicas[p][m].log, g.exposed.length)))
    return z3.And(out) if out else z3.BoolVal(True)


def marks_below_leader_epoch_start(enc: Encoder, s: SymState) -> z3.BoolRef:
    """No replica's HW or checkpoint, nor the exposed log, is beyond a live leader's HW or the start
    of its current epoch (its log end when it took the epoch, when it held every mark): so a
    follower admitted to the ISR under KAFKA-7128 (past both) holds every mark."""
    out: list[z3.BoolRef] = []
    for p in range(enc.P):
        reps = s.replicas[p]
        for L, rl in reps.items():
            if rl.ep is None:
                continue
            bound = _imax(rl.hw, epoch_last(rl.ep, rl.ep.starts))
            leads = z3.And(s.alive[L], rl.leader == L)
            out += [z3.Implies(leads, v <= bound) for v in [s.ghost[p].exposed.length, *_marks(s, p)]]
    return z3.And(out) if out else z3.BoolVal(True)


def _answer_covers(r: SymReplica, h: z3.ArithRef, K: int) -> z3.BoolRef:
    """The pending answer of replica ``r`` names an epoch at least that of ``r``'s record before
    ``h`` and ends at or after ``h``: applying it (kip-279's walk-back included) cuts nothing below
    ``h``."""
    ep = r.ep
    assert ep is not None
    last = [z3.Implies(h == i + 1, ep.answer_epoch >= r.log.epochs[i]) for i in range(K)]
    return z3.And(ep.answer_end >= h, *last)


def answers_cover_high_watermark(enc: Encoder, s: SymState) -> z3.BoolRef:
    """A pending OffsetsForLeaderEpoch answer that names an epoch never cuts its replica below its
    own HW (an UNDEFINED answer falls back to the HW): the leader that answered held the replica's
    records below it, with their epochs."""
    out: list[z3.BoolRef] = []
    for p in range(enc.P):
        for r in s.replicas[p].values():
            if r.ep is None:
                continue
            cond = z3.And(r.ep.answered, r.ep.answer_epoch != -1, r.hw > 0)
            out.append(z3.Implies(cond, _answer_covers(r, r.hw, enc.K)))
    return z3.And(out) if out else z3.BoolVal(True)


def answers_of_isr_cover_marks(enc: Encoder, s: SymState) -> z3.BoolRef:
    """A pending answer of a member of the znode's ISR (or its leader) names an epoch and cuts it
    below no replica's HW or checkpoint, nor the exposed log: it came from a leader holding the
    committed prefix, and that prefix grows only past what leaders record of the member's LEO."""
    out: list[z3.BoolRef] = []
    for p in range(enc.P):
        marks = [*_marks(s, p), s.ghost[p].exposed.length]
        for b, holder in _holders(s, enc.U[p], p):
            r = s.replicas[p][b]
            if r.ep is None:
                continue
            for h in marks:
                out.append(z3.Implies(z3.And(holder, r.ep.answered, h > 0),
                                      z3.And(r.ep.answer_epoch != -1, _answer_covers(r, h, enc.K))))
    return z3.And(out) if out else z3.BoolVal(True)


COMMITTED_PREFIX_CANDIDATES = (
    ("HighWatermarksHeldByIsr", high_watermarks_held_by_isr),
    ("ExposedHeldByIsr", exposed_held_by_isr),
    ("MarksBelowLeaderEpochStart", marks_below_leader_epoch_start),
    ("AnswersCoverHighWatermark", answers_cover_high_watermark),
    ("AnswersOfIsrCoverMarks", answers_of_isr_cover_marks),
)
"""The committed-prefix facts, in the pool's shape ((name, predicate) pairs)."""

KIP_320_COMMITTED_PREFIX = tuple(n for n, _ in COMMITTED_PREFIX_CANDIDATES)

__all__ = ["COMMITTED_PREFIX_CANDIDATES", "KIP_320_COMMITTED_PREFIX", "answers_cover_high_watermark",
           "answers_of_isr_cover_marks", "exposed_held_by_isr", "high_watermarks_held_by_isr",
           "marks_below_leader_epoch_start"]
