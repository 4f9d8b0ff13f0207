"""Partition reassignment: ReassignmentRecoverable, ReassignmentRequestHonoured, ReassignmentCompletes.

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

from .kinds import Always, Liveness, Masks, Transition


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


# ---------------------------------------------------------------------------- ReassignmentRequestHonoured
def _dishonoured(before: State, after: State) -> Iterator[tuple[int, tuple[int, ...], tuple[int, ...]]]:
    """(partition, target, AR after) of each request the step removed without honouring it. A step
    of a deposed controller (its context changed) is not judged: what an unfenced deposed controller
    does to requests is the subject of the deposed-controller models and their properties."""
    if before.stale is not None and after.stale is not None and after.stale != before.stale:
        return
    for p, target in enumerate(before.zk.reassign):
        if not target or after.zk.reassign[p]:
            continue
        ar = after.zk.partitions[p].replicas
        if ar == target or not ar or before.zk.deleting >> p & 1 or after.zk.deleting >> p & 1:
            continue  # honoured, or the topic is being (or was) deleted
        views = [before.zk.live, before.controller.live] + ([before.stale.live] if before.stale is not None else [])
        if any(not v >> b & 1 for v in views for b in target):
            continue  # a start refusing a target with a broker some controller believes dead
        yield p, target, ar


def reassignment_request_honoured(before: State, after: State) -> bool:
    for _ in _dishonoured(before, after):
        return False
    return True


def reassignment_request_honoured_offences(before: State, after: State) -> Iterator[str]:
    for p, target, ar in _dishonoured(before, after):
        yield (f"partition {p}: the request to move it to {list(target)} was removed while AR is {list(ar)}")


def _removes_request(before: Any, after: Any) -> bool:
    return any(t and not u for t, u in zip(before.zk.reassign, after.zk.reassign))


REASSIGNMENT_REQUEST_HONOURED = Transition(NAMES.ReassignmentRequestHonoured, reassignment_request_honoured,
                                           reassignment_request_honoured_offences, exercised=_removes_request)


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


DEFINITIONS = (REASSIGNMENT_RECOVERABLE, REASSIGNMENT_REQUEST_HONOURED, REASSIGNMENT_COMPLETES)
