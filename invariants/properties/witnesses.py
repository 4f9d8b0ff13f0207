"""The ``sometimes`` properties: WriteCommitted, ReassignmentCanComplete, ControllerFailoverHappens,
TopicDeleted.

Each must be witnessed by some reachable state, where the configuration makes it possible, so that
a model that cannot do the interesting thing does not pass every ``always`` property vacuously.
Each property's definition (:mod:`.kinds`) sits after the functions it names; specs/06-properties.md
says when each applies.
"""
from __future__ import annotations

from collections.abc import Callable

from isrcheck.model.config import Config
from isrcheck.model.state import State
from isrcheck.specs.properties import NAMES

from .common import any_acked
from .kinds import Sometimes, fixed_witness


# ---------------------------------------------------------------------------- WriteCommitted
def _with_writes(cfg: Config) -> bool:
    return cfg.max_records > 0


WRITE_COMMITTED = Sometimes(NAMES.WriteCommitted, _with_writes, fixed_witness(any_acked))


# ---------------------------------------------------------------------------- ReassignmentCanComplete
def reassignment_completes(cfg: Config) -> Callable[[State], bool]:
    """Some reassignment of ``cfg`` has finished: AR equals its target, and no request is pending
    or queued for the partition."""
    wanted = [(r.partition, r.target) for r in cfg.operations.reassignments]

    def reassignment_completes(s: State) -> bool:
        return any(
            s.zk.partitions[p].replicas == target and not s.zk.reassign[p]
            and (p, target) not in s.reassignments
            for p, target in wanted
        )

    return reassignment_completes


def _with_a_move(cfg: Config) -> bool:
    """Some configured reassignment's target differs from the partition's initial assignment."""
    return any(r.target != cfg.replicas_of(r.partition) for r in cfg.operations.reassignments)


REASSIGNMENT_CAN_COMPLETE = Sometimes(NAMES.ReassignmentCanComplete, _with_a_move, reassignment_completes)


# ---------------------------------------------------------------------------- ControllerFailoverHappens
def _controller_failover_happens(s: State) -> bool:
    return s.zk.controller_epoch > 1


def _with_failovers(cfg: Config) -> bool:
    return cfg.faults.controller_failovers > 0


CONTROLLER_FAILOVER_HAPPENS = Sometimes(NAMES.ControllerFailoverHappens, _with_failovers,
                                        fixed_witness(_controller_failover_happens))


# ---------------------------------------------------------------------------- TopicDeleted
def _topic_deleted(s: State) -> bool:
    return all(not zp.replicas for zp in s.zk.partitions)


def _with_deletions(cfg: Config) -> bool:
    return cfg.operations.topic_deletions > 0


TOPIC_DELETED = Sometimes(NAMES.TopicDeleted, _with_deletions, fixed_witness(_topic_deleted))


DEFINITIONS = (WRITE_COMMITTED, REASSIGNMENT_CAN_COMPLETE, CONTROLLER_FAILOVER_HAPPENS, TOPIC_DELETED)
