"""The controller's partition and replica state machines, as data.

Each table maps a target state to the states it may be entered from (the controller's
"valid previous states"). A move that is not in its table raises :class:`IllegalTransition`;
the checker turns that into a violation of the ``OnlyValidTransitions`` property with the trace
that led there. specs/02-state-machines.md is drawn from these same tables.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import IntEnum
from typing import Final


class PartitionState(IntEnum):
    NON_EXISTENT = 0
    NEW = 1
    ONLINE = 2
    OFFLINE = 3

    @property
    def label(self) -> str:
        return _PARTITION_LABELS[self]


class ReplicaState(IntEnum):
    NON_EXISTENT = 0
    NEW = 1
    ONLINE = 2
    OFFLINE = 3
    DELETION_STARTED = 4
    DELETION_SUCCESSFUL = 5
    DELETION_INELIGIBLE = 6

    @property
    def label(self) -> str:
        return _REPLICA_LABELS[self]


_PARTITION_LABELS = {
    PartitionState.NON_EXISTENT: "NonExistentPartition",
    PartitionState.NEW: "NewPartition",
    PartitionState.ONLINE: "OnlinePartition",
    PartitionState.OFFLINE: "OfflinePartition",
}
_REPLICA_LABELS = {
    ReplicaState.NON_EXISTENT: "NonExistentReplica",
    ReplicaState.NEW: "NewReplica",
    ReplicaState.ONLINE: "OnlineReplica",
    ReplicaState.OFFLINE: "OfflineReplica",
    ReplicaState.DELETION_STARTED: "ReplicaDeletionStarted",
    ReplicaState.DELETION_SUCCESSFUL: "ReplicaDeletionSuccessful",
    ReplicaState.DELETION_INELIGIBLE: "ReplicaDeletionIneligible",
}

P = PartitionState
R = ReplicaState

#: target partition state -> the states it may be entered from
PARTITION_VALID_PREVIOUS: dict[PartitionState, frozenset[PartitionState]] = {
    P.NEW: frozenset({P.NON_EXISTENT}),
    P.ONLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.OFFLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.NON_EXISTENT: frozenset({P.OFFLINE}),
}

#: target replica state -> the states it may be entered from
REPLICA_VALID_PREVIOUS: dict[ReplicaState, frozenset[ReplicaState]] = {
    R.NEW: frozenset({R.NON_EXISTENT}),
    R.ONLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.OFFLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.DELETION_STARTED: frozenset({R.OFFLINE}),
    R.DELETION_SUCCESSFUL: frozenset({R.DELETION_STARTED}),
    R.DELETION_INELIGIBLE: frozenset({R.DELETION_STARTED, R.OFFLINE}),
    R.NON_EXISTENT: frozenset({R.DELETION_SUCCESSFUL}),
}


# The same tables indexed by the target's int value, as bitmasks of the allowed sources: the checker
# asks them on every controller step, and building an enum member from an int (``ReplicaState(t)``)
# runs interpreted code in enum.py even in the compiled build.
_PARTITION_PREVIOUS_MASK: Final[tuple[int, ...]] = tuple(
    sum(1 << int(s) for s in PARTITION_VALID_PREVIOUS[t]) for t in sorted(PartitionState))
_REPLICA_PREVIOUS_MASK: Final[tuple[int, ...]] = tuple(
    sum(1 << int(s) for s in REPLICA_VALID_PREVIOUS[t]) for t in sorted(ReplicaState))


class IllegalTransition(Exception):
    """A state machine was asked for a move its table does not allow."""

    def __init__(self, machine: str, subject: str, source: str, target: str) -> None:
        super().__init__(f"illegal {machine} transition of {subject}: {source} -> {target}")
        self.machine = machine
        self.subject = subject
        self.source = source
        self.target = target


#: A move seen by :func:`recording_moves`: (machine, partition, broker or None, source, target).
Move = tuple[str, int, "int | None", int, int]
_recorders: list[Callable[[Move], None]] = []


@contextmanager
def recording_moves() -> Iterator[list[Move]]:
    """Collect every state-machine move checked while the block runs (for tests and tools that
    compare the moves a step makes with a symbolic account of them). Works on the compiled build
    too, where the modules' functions cannot be patched from outside."""
    moves: list[Move] = []
    _recorders.append(moves.append)
    try:
        yield moves
    finally:
        _recorders.remove(moves.append)


def check_partition_move(partition: int, source: int, target: int) -> None:
    if _recorders:
        for record in _recorders:
            record(("partition", partition, None, int(source), int(target)))
    if not (_PARTITION_PREVIOUS_MASK[target] >> source) & 1:
        raise IllegalTransition(
            "partition", f"partition {partition}",
            PartitionState(source).label, PartitionState(target).label,
        )


def check_replica_move(partition: int, broker: int, source: int, target: int) -> None:
    if _recorders:
        for record in _recorders:
            record(("replica", partition, broker, int(source), int(target)))
    if not (_REPLICA_PREVIOUS_MASK[target] >> source) & 1:
        raise IllegalTransition(
            "replica", f"replica {broker} of partition {partition}",
            ReplicaState(source).label, ReplicaState(target).label,
        )
