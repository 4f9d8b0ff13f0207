"""Properties of a step: EpochsMonotonic, OnlyValidTransitions.

Each property's definition (:mod:`.kinds`) sits after the functions it names; specs/06-properties.md
says what each means and what breaks it.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from isrcheck.model.state import State
from isrcheck.specs.properties import NAMES

from .kinds import Transition


# ---------------------------------------------------------------------------- EpochsMonotonic
def epochs_monotonic(s: State, t: State) -> bool:
    # parts a step left alone are the same objects (model/world.py): skipped by identity
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


def epochs_monotonic_offences(s: State, t: State) -> Iterator[str]:
    if t.zk.controller_epoch < s.zk.controller_epoch:
        yield f"the controller epoch in ZooKeeper went from {s.zk.controller_epoch} to {t.zk.controller_epoch}"
    for p, (a, b) in enumerate(zip(s.zk.partitions, t.zk.partitions)):
        if b.replicas and b.leader_epoch < a.leader_epoch:
            yield f"partition {p}: the leader epoch in ZooKeeper went from {a.leader_epoch} to {b.leader_epoch}"
    for n, (x, y) in enumerate(zip(s.brokers, t.brokers), start=1):
        if not (x.alive and y.alive):
            continue
        if y.controller_epoch < x.controller_epoch:
            yield f"broker {n}: its controller epoch went from {x.controller_epoch} to {y.controller_epoch}"
        for p, (rx, ry) in enumerate(zip(x.replicas, y.replicas)):
            if rx is not None and ry is not None and ry.leader_epoch < rx.leader_epoch:
                yield f"broker {n}, partition {p}: its leader epoch went from {rx.leader_epoch} to {ry.leader_epoch}"


def _epochs_changed(s: Any, t: Any) -> bool:
    if s.zk.controller_epoch != t.zk.controller_epoch:
        return True
    if any(a.leader_epoch != b.leader_epoch for a, b in zip(s.zk.partitions, t.zk.partitions)):
        return True
    return any(x.controller_epoch != y.controller_epoch for x, y in zip(s.brokers, t.brokers))


EPOCHS_MONOTONIC = Transition(NAMES.EpochsMonotonic, epochs_monotonic, epochs_monotonic_offences,
                              exercised=_epochs_changed)


# ---------------------------------------------------------------------------- OnlyValidTransitions
def _checked_in_the_step(s: State, t: State) -> bool:  # pragma: no cover - reported through ModelFault instead
    """The state-machine tables raise inside the step (model/tables.py), and the model reports the
    step as a ModelFault of this property: there is no successor state to check."""
    return True


def _machines_moved(s: Any, t: Any) -> bool:
    a, b = s.controller, t.controller
    return a.partition_states != b.partition_states or a.replica_states != b.replica_states


# No offences: the step's own message (the illegal move) says what broke it.
ONLY_VALID_TRANSITIONS = Transition(NAMES.OnlyValidTransitions, _checked_in_the_step, exercised=_machines_moved)


DEFINITIONS = (EPOCHS_MONOTONIC, ONLY_VALID_TRANSITIONS)
