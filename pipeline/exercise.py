"""When a property is *exercised*: the state (or step) gives it something to check.

An ``always`` property holds vacuously in a state where its subject does not exist (no write was
acknowledged, so ``NoCommittedWriteLost`` has nothing to protect). The corpus records, per step,
which properties were exercised — checked on a state where they could have failed — so that
``isrcheck spark analyze`` can say which properties a corpus really tests and which it never does.
The predicates read model states, like the properties themselves; a property without a predicate
here counts as exercised at every step.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from isrcheck.model.state import NO_LEADER


def _any_leader(s: Any) -> bool:
    return any(zp.replicas and zp.leader != NO_LEADER for zp in s.zk.partitions)


def _any_partition(s: Any) -> bool:
    return any(zp.replicas for zp in s.zk.partitions)


def _any_hw(s: Any) -> bool:
    return any(r is not None and r.hw > 0 for br in s.brokers for r in br.replicas)


def _any_acked(s: Any) -> bool:
    return any(g.acked for g in s.ghost)


def _two_with_hw(s: Any) -> bool:
    for p in range(len(s.zk.partitions)):
        n = sum(1 for br in s.brokers if br.alive and br.replicas[p] is not None and br.replicas[p].hw > 0)
        if n >= 2:
            return True
    return False


def _any_exposed(s: Any) -> bool:
    return any(g.exposed for g in s.ghost)


def _acting_leaders(s: Any) -> bool:
    return any(br.alive and r is not None and r.leader == i + 1
               for i, br in enumerate(s.brokers) for r in br.replicas)


def _reassigning(s: Any) -> bool:
    return any(t for t in s.zk.reassign)


#: always-property name -> does this state give it something to check
STATE_PREDICATES: dict[str, Callable[[Any], bool]] = {
    "LeaderInIsr": _any_leader,
    "IsrSubsetOfReplicas": _any_partition,
    "HighWatermarkBelowLogEnd": _any_hw,
    "StrongIsr": _any_hw,
    "NoCommittedWriteLost": _any_acked,
    "LogMatching": _two_with_hw,
    "ConsistentRead": _any_exposed,
    "OneLeaderPerEpoch": _acting_leaders,
    "ReassignmentRecoverable": _reassigning,
}


def _epochs_changed(s: Any, t: Any) -> bool:
    if s.zk.controller_epoch != t.zk.controller_epoch:
        return True
    if any(a.leader_epoch != b.leader_epoch for a, b in zip(s.zk.partitions, t.zk.partitions)):
        return True
    return any(x.controller_epoch != y.controller_epoch for x, y in zip(s.brokers, t.brokers))


def _machines_moved(s: Any, t: Any) -> bool:
    a, b = s.controller, t.controller
    return a.partition_states != b.partition_states or a.replica_states != b.replica_states


#: transition-property name -> does this step give it something to check
STEP_PREDICATES: dict[str, Callable[[Any, Any], bool]] = {
    "EpochsMonotonic": _epochs_changed,
    "OnlyValidTransitions": _machines_moved,
}


def exercised(props: Any, before: Any | None, after: Any) -> list[str]:
    """Names of the always- and transition-properties this step exercises (``before`` is None for
    an initial state)."""
    out = []
    for p in props.always:
        pred = STATE_PREDICATES.get(p.name)
        if pred is None or pred(after):
            out.append(p.name)
    if before is not None:
        for p in props.transition:
            pred2 = STEP_PREDICATES.get(p.name)
            if pred2 is None or pred2(before, after):
                out.append(p.name)
    return out
