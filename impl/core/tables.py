"""The controller's two state machines, declared as data (specs/02-state-machines.md).

Each table maps a target state to the states it may be entered from (Kafka's
``validPreviousStates``). :class:`StateMachine` holds one table and one state per key; every move
goes through :meth:`StateMachine.move`, which raises :class:`IllegalTransition` for a move the table
does not list. The labels are the observation schema's (specs/observation.toml); a test checks both
tables against the chapter's rendered tables and the schema's lists.
"""
from __future__ import annotations

from typing import Generic, Hashable, Mapping, TypeVar

# Partition states
NON_EXISTENT_PARTITION = "NonExistentPartition"
NEW_PARTITION = "NewPartition"
ONLINE_PARTITION = "OnlinePartition"
OFFLINE_PARTITION = "OfflinePartition"

# Replica states
NEW_REPLICA = "NewReplica"
ONLINE_REPLICA = "OnlineReplica"
OFFLINE_REPLICA = "OfflineReplica"
DELETION_STARTED = "ReplicaDeletionStarted"
DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
NON_EXISTENT_REPLICA = "NonExistentReplica"

PARTITION_STATES = (NON_EXISTENT_PARTITION, NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION)
REPLICA_STATES = (NON_EXISTENT_REPLICA, NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, DELETION_STARTED,
                  DELETION_SUCCESSFUL, DELETION_INELIGIBLE)

#: target partition state -> valid previous states
PARTITION_TRANSITIONS: Mapping[str, frozenset[str]] = {
    NEW_PARTITION: frozenset({NON_EXISTENT_PARTITION}),
    ONLINE_PARTITION: frozenset({NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION}),
    OFFLINE_PARTITION: frozenset({NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION}),
    NON_EXISTENT_PARTITION: frozenset({OFFLINE_PARTITION}),
}

#: target replica state -> valid previous states (the 2.x Offline -> DeletionIneligible included)
REPLICA_TRANSITIONS: Mapping[str, frozenset[str]] = {
    NEW_REPLICA: frozenset({NON_EXISTENT_REPLICA}),
    ONLINE_REPLICA: frozenset({NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, DELETION_INELIGIBLE}),
    OFFLINE_REPLICA: frozenset({NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, DELETION_INELIGIBLE}),
    DELETION_STARTED: frozenset({OFFLINE_REPLICA}),
    DELETION_SUCCESSFUL: frozenset({DELETION_STARTED}),
    DELETION_INELIGIBLE: frozenset({OFFLINE_REPLICA, DELETION_STARTED}),
    NON_EXISTENT_REPLICA: frozenset({DELETION_SUCCESSFUL}),
}


class IllegalTransition(Exception):
    """A state machine was asked for a move its table does not allow."""

    def __init__(self, machine: str, key: object, source: str, target: str) -> None:
        super().__init__(f"{machine} {key}: illegal move {source} -> {target}")
        self.machine, self.key, self.source, self.target = machine, key, source, target


K = TypeVar("K", bound=Hashable)


class StateMachine(Generic[K]):
    """States per key, moved only along the table. Unknown keys are in ``initial``."""

    def __init__(self, name: str, table: Mapping[str, frozenset[str]], initial: str) -> None:
        self.name = name
        self.table = table
        self.initial = initial
        self.states: dict[K, str] = {}

    def __getitem__(self, key: K) -> str:
        return self.states.get(key, self.initial)

    def check(self, key: K, target: str) -> str:
        source = self[key]
        if source not in self.table.get(target, frozenset()):
            raise IllegalTransition(self.name, key, source, target)
        return source

    def move(self, key: K, target: str) -> str:
        """Move ``key`` to ``target``; returns the previous state; raises IllegalTransition."""
        source = self.check(key, target)
        self.states[key] = target
        return source

    def set(self, key: K, state: str) -> None:
        """Set a state without a move (a new controller rebuilding its context from the store)."""
        if state not in (*self.table, self.initial):
            raise ValueError(f"{self.name}: unknown state {state!r}")
        self.states[key] = state

    def copy(self) -> StateMachine[K]:
        c: StateMachine[K] = StateMachine(self.name, self.table, self.initial)
        c.states = dict(self.states)
        return c


def partition_machine() -> StateMachine[int]:
    return StateMachine("partition", PARTITION_TRANSITIONS, NON_EXISTENT_PARTITION)


def replica_machine() -> StateMachine[tuple[int, int]]:
    return StateMachine("replica", REPLICA_TRANSITIONS, NON_EXISTENT_REPLICA)
