"""The properties, each named as in specs/06-properties.md and in the test ids.

``always`` properties are checked on every reachable state, ``transition`` ones on every step,
``sometimes`` ones must be witnessed by at least one reachable state (so a model that cannot do
anything does not pass). ``OnlyValidTransitions`` is checked inside the steps themselves: the
state-machine tables raise, and the checker reports the step that tried the illegal move.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from isrcheck.engine.checker import Property
from isrcheck.model.config import Config, ConfigError
from isrcheck.model.kafka import KafkaModel
from isrcheck.model.protocol import Protocol
from isrcheck.model.records import ids_in
from isrcheck.model.state import NO_LEADER, State


def _leader_in_isr(s: State) -> bool:
    for zp in s.zk.partitions:
        if zp.replicas and zp.leader != NO_LEADER and not zp.isr >> zp.leader & 1:
            return False
    return True


def _isr_subset_of_replicas(s: State) -> bool:
    for zp in s.zk.partitions:
        if zp.replicas:
            ar = 0
            for b in zp.replicas:
                ar |= 1 << b
            if zp.isr & ~ar:
                return False
    return True


def _hw_below_log_end(s: State) -> bool:
    for br in s.brokers:
        for r in br.replicas:
            if r is not None and r.hw > len(r.log):
                return False
    return True


def _acting_leader(s: State, p: int) -> tuple[int, tuple[int, ...], int] | None:
    """The ZooKeeper leader of ``p`` if it is up and acting on the current leader epoch."""
    zp = s.zk.partitions[p]
    if zp.leader == NO_LEADER:
        return None
    br = s.brokers[zp.leader - 1]
    r = br.replicas[p]
    if not br.alive or r is None or r.leader != zp.leader or r.leader_epoch != zp.leader_epoch:
        return None
    return zp.leader, r.log, r.hw


def _strong_isr(s: State) -> bool:
    for p, zp in enumerate(s.zk.partitions):
        if not zp.replicas or s.zk.deleting >> p & 1:
            continue
        acting = _acting_leader(s, p)
        if acting is None:
            continue
        leader, log, hw = acting
        prefix = log[:hw]
        isr = zp.isr
        b = 0
        while isr:
            if isr & 1 and b != leader:
                br = s.brokers[b - 1]
                if br.alive:
                    r = br.replicas[p]
                    if (r.log[:hw] if r is not None else ()) != prefix:
                        return False
            isr >>= 1
            b += 1
    return True


def _no_committed_write_lost(s: State) -> bool:
    for p, zp in enumerate(s.zk.partitions):
        acked = s.ghost[p].acked
        if not acked or not zp.replicas or s.zk.deleting >> p & 1:
            continue
        holders = zp.isr
        if zp.leader != NO_LEADER:
            holders |= 1 << zp.leader
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


def _log_matching(s: State) -> bool:
    """Live in-sync replicas (the ZooKeeper ISR, and the leader) agree below both of their HWs.

    Replicas outside the ISR may hold a stale or diverging suffix until they reconcile; what a
    protocol must prevent is such a replica counting as in sync again.
    """
    for p, zp in enumerate(s.zk.partitions):
        if not zp.replicas:
            continue
        members_ = zp.isr | (1 << zp.leader if zp.leader else 0)
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


def _consistent_read(s: State) -> bool:
    for p, g in enumerate(s.ghost):
        exposed = g.exposed
        for i, br in enumerate(s.brokers):
            r = br.replicas[p]
            if br.alive and r is not None and r.leader == i + 1:
                n = min(r.hw, len(exposed))
                if r.log[:n] != exposed[:n]:
                    return False
    return True


def _one_leader_per_epoch(s: State) -> bool:
    for p in range(len(s.zk.partitions)):
        seen: set[int] = set()
        for i, br in enumerate(s.brokers):
            r = br.replicas[p]
            if br.alive and r is not None and r.leader == i + 1:
                if r.leader_epoch in seen:
                    return False
                seen.add(r.leader_epoch)
    return True


def _reassignment_recoverable(s: State) -> bool:
    for p, zp in enumerate(s.zk.partitions):
        target = s.zk.reassign[p]
        origin = s.ghost[p].reassign_origin
        if target and origin and zp.replicas != target:
            if any(b not in zp.replicas for b in origin):
                return False
    return True


def _epochs_monotonic(s: State, t: State) -> bool:
    if s.zk is not t.zk:
        if t.zk.controller_epoch < s.zk.controller_epoch:
            return False
        for a, b in zip(s.zk.partitions, t.zk.partitions):
            if a is not b and b.replicas and b.leader_epoch < a.leader_epoch:
                return False
    if s.brokers is not t.brokers:
        for x, y in zip(s.brokers, t.brokers):
            if x is y or not (x.alive and y.alive):
                continue
            if y.controller_epoch < x.controller_epoch:
                return False
            for rx, ry in zip(x.replicas, y.replicas):
                if rx is not None and ry is not None and ry.leader_epoch < rx.leader_epoch:
                    return False
    return True


def _no_check(s: State, t: State) -> bool:  # pragma: no cover - reported through ModelFault instead
    return True


def _write_committed(s: State) -> bool:
    return any(g.acked for g in s.ghost)


def _controller_failover_happens(s: State) -> bool:
    return s.zk.controller_epoch > 1


def _make_reassignment_completes(cfg: Config) -> Callable[[State], bool]:
    wanted = [(r.partition, r.target) for r in cfg.operations.reassignments]

    def reassignment_completes(s: State) -> bool:
        return any(
            s.zk.partitions[p].replicas == target and not s.zk.reassign[p]
            and (p, target) not in s.reassignments
            for p, target in wanted
        )

    return reassignment_completes


def _topic_deleted(s: State) -> bool:
    return all(not zp.replicas for zp in s.zk.partitions)


ALL_PROPERTIES: tuple[Property, ...] = (
    Property("LeaderInIsr", "always", _leader_in_isr, "06-properties.md#leaderinisr",
             "A partition's leader in ZooKeeper is a member of its ISR."),
    Property("IsrSubsetOfReplicas", "always", _isr_subset_of_replicas, "06-properties.md#isrsubsetofreplicas",
             "The ISR in ZooKeeper contains only assigned replicas."),
    Property("HighWatermarkBelowLogEnd", "always", _hw_below_log_end, "06-properties.md#highwatermarkbelowlogend",
             "No replica's high watermark is beyond its log end offset."),
    Property("StrongIsr", "always", _strong_isr, "06-properties.md#strongisr",
             "Everything below the acting leader's HW is on every live member of the ISR in ZooKeeper."),
    Property("NoCommittedWriteLost", "always", _no_committed_write_lost, "06-properties.md#nocommittedwritelost",
             "Every acknowledged write is in the log of the leader and of every live ISR member."),
    Property("LogMatching", "always", _log_matching, "06-properties.md#logmatching",
             "Two live in-sync replicas agree on every offset below both of their high watermarks."),
    Property("ConsistentRead", "always", _consistent_read, "06-properties.md#consistentread",
             "What a leader exposes below its HW never contradicts what was exposed before."),
    Property("OneLeaderPerEpoch", "always", _one_leader_per_epoch, "06-properties.md#oneleaderperepoch",
             "No two live brokers act as leader of a partition in the same leader epoch."),
    Property("ReassignmentRecoverable", "always", _reassignment_recoverable,
             "06-properties.md#reassignmentrecoverable",
             "While a reassignment is pending, AR in ZooKeeper keeps every original replica until step 10."),
    Property("EpochsMonotonic", "transition", _epochs_monotonic, "06-properties.md#epochsmonotonic",
             "Controller and leader epochs never decrease (in ZooKeeper, and on a broker while it is up)."),
    Property("OnlyValidTransitions", "transition", _no_check, "06-properties.md#onlyvalidtransitions",
             "Every partition and replica state change is in its state machine's table."),
    Property("WriteCommitted", "sometimes", _write_committed, "06-properties.md#writecommitted",
             "Some write is acknowledged."),
    Property("ReassignmentCanComplete", "sometimes", _make_reassignment_completes(Config()),
             "06-properties.md#reassignmentcancomplete",
             "A requested reassignment finishes with AR equal to its target."),
    Property("ControllerFailoverHappens", "sometimes", _controller_failover_happens,
             "06-properties.md#controllerfailoverhappens", "A new controller takes over."),
    Property("TopicDeleted", "sometimes", _topic_deleted, "06-properties.md#topicdeleted",
             "A requested topic deletion completes."),
)

_BY_NAME = {p.name: p for p in ALL_PROPERTIES}


def property_names() -> list[str]:
    return [p.name for p in ALL_PROPERTIES]


def applicable_properties(cfg: Config) -> list[Property]:
    """All safety properties; the ``sometimes`` ones only where the configuration makes them possible."""
    out: list[Property] = []
    for p in ALL_PROPERTIES:
        if p.kind != "sometimes":
            out.append(p)
    if cfg.max_records > 0:
        out.append(_BY_NAME["WriteCommitted"])
    if any(r.target != cfg.replicas_of(r.partition) for r in cfg.operations.reassignments):
        out.append(_BY_NAME["ReassignmentCanComplete"]._replace(check=_make_reassignment_completes(cfg)))
    if cfg.faults.controller_failovers > 0:
        out.append(_BY_NAME["ControllerFailoverHappens"])
    if cfg.operations.topic_deletions > 0:
        out.append(_BY_NAME["TopicDeleted"])
    return out


def build_model(cfg: Config, protocol: Protocol | None = None, symmetry: bool | None = None,
                properties: Sequence[str] | None = None) -> KafkaModel:
    """The checkable model for ``cfg``: protocol, applicable properties, symmetry where sound.

    ``properties`` restricts the safety properties checked to those names (the ``sometimes``
    properties always stay, so a restricted check cannot pass vacuously).
    """
    from isrcheck.model.symmetry import symmetry_allowed

    protocol = protocol or Protocol(cfg)
    if symmetry is None:
        symmetry = symmetry_allowed(cfg)
    props = applicable_properties(cfg) + protocol.extra_properties()
    if properties is not None:  # a variant's properties are named and chosen like the model's own
        known = property_names() + [p.name for p in props if p.name not in property_names()]
        unknown = sorted(set(properties) - set(known))
        if unknown:
            raise ConfigError(f"unknown property {unknown[0]!r} (known: {', '.join(known)})")
        props = [p for p in props if p.kind == "sometimes" or p.name in properties]
    return KafkaModel(protocol, props, symmetry=symmetry)
