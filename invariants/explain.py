"""What broke, in one line: the offending values of a safety violation, for its ``message``.

The properties (:mod:`.properties`) answer only yes or no, on the hot path of every search, and
are compiled; a reader of a counterexample wants to know *which* partition, broker, record or epoch
broke it. This module looks again, once, at the last state (and, for a ``transition`` property, the
step into it) of a violation's trace and names the values, so ``check --json`` and the tables can say
"partition 0: acknowledged write m1 is missing from the log of broker 3 (an ISR member)" instead of
nothing. It is not on any search's path, so it is written for clarity, not speed.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from isrcheck.model.brokersets import members, render as render_set
from isrcheck.engine.core import Violation
from isrcheck.model.records import ids_in, render_log
from isrcheck.model.state import NO_LEADER, State

from .properties import ALL_PROPERTIES, _acting_leader  # the same notion of the acting leader

__all__ = ["describe", "detail"]


def _ids(mask: int) -> str:
    return ", ".join(f"m{i}" for i in range(mask.bit_length()) if mask >> i & 1)


def _leader_in_isr(s: State) -> list[str]:
    return [f"partition {p}: leader {zp.leader} is not in its ISR {render_set(zp.isr)}"
            for p, zp in enumerate(s.zk.partitions)
            if zp.replicas and zp.leader != NO_LEADER and not zp.isr >> zp.leader & 1]


def _isr_subset_of_replicas(s: State) -> list[str]:
    out = []
    for p, zp in enumerate(s.zk.partitions):
        extra = [b for b in members(zp.isr) if b not in zp.replicas]
        if zp.replicas and extra:
            out.append(f"partition {p}: ISR {render_set(zp.isr)} holds {', '.join(map(str, extra))}, "
                       f"not in AR {list(zp.replicas)}")
    return out


def _hw_below_log_end(s: State) -> list[str]:
    return [f"replica {b} of partition {p}: HW {r.hw} beyond its log end offset {len(r.log)}"
            for b, br in enumerate(s.brokers, start=1) for p, r in enumerate(br.replicas)
            if r is not None and r.hw > len(r.log)]


def _strong_isr(s: State) -> list[str]:
    out = []
    for p, zp in enumerate(s.zk.partitions):
        acting = _acting_leader(s, p)
        if not zp.replicas or s.zk.deleting >> p & 1 or acting is None:
            continue
        leader, log, hw = acting
        for b in members(zp.isr):
            br = s.brokers[b - 1]
            r = br.replicas[p]
            mine = r.log[:hw] if r is not None else ()
            if b != leader and br.alive and mine != log[:hw]:
                out.append(f"partition {p}: below the leader's HW {hw} leader {leader} has {render_log(log[:hw])}, "
                           f"ISR member {b} has {render_log(mine)}")
    return out


def _no_committed_write_lost(s: State) -> list[str]:
    out = []
    for p, zp in enumerate(s.zk.partitions):
        acked = s.ghost[p].acked
        if not acked or not zp.replicas or s.zk.deleting >> p & 1:
            continue
        holders = zp.isr | (1 << zp.leader if zp.leader != NO_LEADER else 0)
        for b in members(holders):
            br = s.brokers[b - 1]
            r = br.replicas[p]
            lost = acked & ~ids_in(r.log) if r is not None else acked
            if br.alive and lost:
                role = "the leader" if b == zp.leader else "an ISR member"
                out.append(f"partition {p}: acknowledged write(s) {_ids(lost)} missing from the log of broker {b} "
                           f"({role}), which holds {render_log(r.log if r is not None else ())}")
    return out


def _log_matching(s: State) -> list[str]:
    out = []
    for p, zp in enumerate(s.zk.partitions):
        if not zp.replicas:
            continue
        insync = zp.isr | (1 << zp.leader if zp.leader else 0)
        reps = [(b, s.brokers[b - 1].replicas[p]) for b in members(insync)
                if s.brokers[b - 1].alive and s.brokers[b - 1].replicas[p] is not None]
        for i, (a, ra) in enumerate(reps):
            for c, rc in reps[i + 1:]:
                n = min(ra.hw, rc.hw)
                if n and ra.log[:n] != rc.log[:n]:
                    out.append(f"partition {p}: below offset {n} in-sync replicas {a} and {c} disagree: "
                               f"{render_log(ra.log[:n])} and {render_log(rc.log[:n])}")
    return out


def _consistent_read(s: State) -> list[str]:
    out = []
    for p, g in enumerate(s.ghost):
        for b, br in enumerate(s.brokers, start=1):
            r = br.replicas[p]
            if br.alive and r is not None and r.leader == b:
                n = min(r.hw, len(g.exposed))
                if r.log[:n] != g.exposed[:n]:
                    out.append(f"partition {p}: leader {b} exposes {render_log(r.log[:n])} below its HW where "
                               f"{render_log(g.exposed[:n])} was exposed before")
    return out


def _one_leader_per_epoch(s: State) -> list[str]:
    out = []
    for p in range(len(s.zk.partitions)):
        by_epoch: dict[int, list[int]] = {}
        for b, br in enumerate(s.brokers, start=1):
            r = br.replicas[p]
            if br.alive and r is not None and r.leader == b:
                by_epoch.setdefault(r.leader_epoch, []).append(b)
        out += [f"partition {p}: brokers {' and '.join(map(str, bs))} both act as leader in leader epoch {e}"
                for e, bs in by_epoch.items() if len(bs) > 1]
    return out


def _reassignment_recoverable(s: State) -> list[str]:
    out = []
    for p, zp in enumerate(s.zk.partitions):
        target, origin = s.zk.reassign[p], s.ghost[p].reassign_origin
        gone = [b for b in origin or () if b not in zp.replicas]
        if target and origin and zp.replicas != target and gone:
            out.append(f"partition {p}: AR {list(zp.replicas)} has lost original replica(s) "
                       f"{', '.join(map(str, gone))} of {list(origin)} while the reassignment to {list(target)} "
                       f"is pending")
    return out


def _epochs_monotonic(s: State, t: State) -> list[str]:
    out = []
    if t.zk.controller_epoch < s.zk.controller_epoch:
        out.append(f"the controller epoch in ZooKeeper went from {s.zk.controller_epoch} to {t.zk.controller_epoch}")
    for p, (a, b) in enumerate(zip(s.zk.partitions, t.zk.partitions)):
        if b.replicas and b.leader_epoch < a.leader_epoch:
            out.append(f"partition {p}: the leader epoch in ZooKeeper went from {a.leader_epoch} to {b.leader_epoch}")
    for n, (x, y) in enumerate(zip(s.brokers, t.brokers), start=1):
        if not (x.alive and y.alive):
            continue
        if y.controller_epoch < x.controller_epoch:
            out.append(f"broker {n}: its controller epoch went from {x.controller_epoch} to {y.controller_epoch}")
        for p, (rx, ry) in enumerate(zip(x.replicas, y.replicas)):
            if rx is not None and ry is not None and ry.leader_epoch < rx.leader_epoch:
                out.append(f"broker {n}, partition {p}: its leader epoch went from {rx.leader_epoch} "
                           f"to {ry.leader_epoch}")
    return out


_ALWAYS: Mapping[str, Callable[[State], list[str]]] = {
    "LeaderInIsr": _leader_in_isr,
    "IsrSubsetOfReplicas": _isr_subset_of_replicas,
    "HighWatermarkBelowLogEnd": _hw_below_log_end,
    "StrongIsr": _strong_isr,
    "NoCommittedWriteLost": _no_committed_write_lost,
    "LogMatching": _log_matching,
    "ConsistentRead": _consistent_read,
    "OneLeaderPerEpoch": _one_leader_per_epoch,
    "ReassignmentRecoverable": _reassignment_recoverable,
}
_TRANSITION: Mapping[str, Callable[[State, State], list[str]]] = {"EpochsMonotonic": _epochs_monotonic}


def detail(v: Violation) -> str:
    """The offending values of a safety violation of one of the project's properties, joined with
    "; " ("" for a property this module does not know, e.g. a variant's, or a trace of other states)."""
    if not v.trace or v.trace[-1].state is None:
        return ""
    last = v.trace[-1].state
    try:
        if v.property in _ALWAYS:
            found = _ALWAYS[v.property](last)
        elif v.property in _TRANSITION and len(v.trace) > 1 and v.trace[-2].state is not None:
            found = _TRANSITION[v.property](v.trace[-2].state, last)
        else:
            return ""
    except (AttributeError, IndexError, TypeError):  # not a state of the Kafka model (a peer's, a toy's)
        return ""
    return "; ".join(found)


_DESCRIPTIONS = {p.name: p.description for p in ALL_PROPERTIES}


def describe(v: Violation, description: str | None = None) -> str:
    """A one-line ``message`` for ``v``: its own when it has one (an illegal transition, a lasso),
    else the property's ``description`` (by default the project's, for its name) followed by what
    broke it, where known."""
    if v.message:
        return v.message
    if description is None:
        description = _DESCRIPTIONS.get(v.property, "")
    what = detail(v)
    if description and what:
        return f"{description} Broken: {what}."
    if what:
        return f"{v.property} broken: {what}."
    if description:
        return f"{description} Broken after {v.length} step(s)."
    return f"{v.property} broken after {v.length} step(s)."
