"""Partition reassignment: ReassignmentRecoverable, ReassignmentCompletes.

(ReassignmentCanComplete, the guard that some reassignment finishes at all, is a witness:
:mod:`.witnesses`.) Each property's definition (:mod:`.kinds`) sits after the functions it names;
specs/06-properties.md says what each means and what breaks it.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from isrcheck.model.config import Config
from isrcheck.model.state import State, ZkPartition
from isrcheck.specs.properties import NAMES

from .kinds import Always, Liveness, Masks


# ---------------------------------------------------------------------------- ReassignmentRecoverable
def _pending_move(zp: ZkPartition, target: tuple[int, ...], origin: tuple[int, ...]) -> bool:
    """A request is pending, its origin is known, and AR in ZooKeeper is not yet its target."""
    return bool(target) and bool(origin) and zp.replicas != target


def reassignment_recoverable(s: State) -> bool:
    for p, zp in enumerate(s.zk.partitions):
        target = s.zk.reassign[p]
        origin = s.ghost[p].reassign_origin
        if _pending_move(zp, target, origin):
            if any(b not in zp.replicas for b in origin):
                return False
    return True


def reassignment_recoverable_offences(s: State) -> Iterator[str]:
    for p, zp in enumerate(s.zk.partitions):
        target, origin = s.zk.reassign[p], s.ghost[p].reassign_origin
        gone = [b for b in origin if b not in zp.replicas]
        if _pending_move(zp, target, origin) and gone:
            yield (f"partition {p}: AR {list(zp.replicas)} has lost original replica(s) "
                   f"{', '.join(map(str, gone))} of {list(origin)} while the reassignment to {list(target)} "
                   f"is pending")


def _reassigning(s: Any) -> bool:
    return any(t for t in s.zk.reassign)


# No observation form: the observation shows a pending request, not the assignment the partition had
# when it was made (a history variable of the model).
REASSIGNMENT_RECOVERABLE = Always(NAMES.ReassignmentRecoverable, reassignment_recoverable,
                                  reassignment_recoverable_offences, exercised=_reassigning)


# ---------------------------------------------------------------------------- ReassignmentCompletes
def _reassignment_completes(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    parts = sorted({r.partition for r in cfg.operations.reassignments})

    def masks(s: State) -> tuple[int, int]:
        premise = goal = 0
        for i, p in enumerate(parts):
            if s.zk.reassign[p]:
                premise |= 1 << i
            else:
                goal |= 1 << i
        return premise, goal

    return tuple(f"partition {p}" for p in parts), masks


def _with_reassignments(cfg: Config) -> bool:
    return bool(cfg.operations.reassignments)


REASSIGNMENT_COMPLETES = Liveness(NAMES.ReassignmentCompletes, _with_reassignments, _reassignment_completes)


DEFINITIONS = (REASSIGNMENT_RECOVERABLE, REASSIGNMENT_COMPLETES)
