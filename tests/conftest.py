"""Shared helpers for the model tests: build small configurations and drive the model step by step.

Nothing here is autouse; tests ask for the ``kafka`` fixture (a factory of :class:`Driver`) and the
``edit`` fixture (the state-editing helpers below, for hand-built states).
"""
from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

from isrcheck.model.actions import Action, apply, enabled_actions
from isrcheck.model.config import Config, from_mapping
from isrcheck.model.kafka import initial_state
from isrcheck.model.history import configured_protocol
from isrcheck.model.state import State

# The CLI sizes its output by COLUMNS when it is set (render.make_console, render.fit_width), and the
# tests read that output as a pipe would give it. A COLUMNS exported by the invoking shell, or the
# COLUMNS=80 that pytest-xdist's workers are started with, would wrap it: the tests that want a
# width set one with monkeypatch.
for _var in ("COLUMNS", "LINES"):
    os.environ.pop(_var, None)


def make_config(**raw: Any) -> Config:
    """A validated configuration from keyword arguments shaped like the TOML file."""
    return from_mapping(raw)


# ------------------------------------------------------------------------------------------ state edits
def with_replica(s: State, b: int, p: int, **changes: Any) -> State:
    """``s`` with broker ``b``'s replica of partition ``p`` changed (``b`` is a broker id)."""
    br = s.brokers[b - 1]
    reps = list(br.replicas)
    assert reps[p] is not None, f"broker {b} hosts no replica of partition {p}"
    reps[p] = reps[p]._replace(**changes)
    brokers = list(s.brokers)
    brokers[b - 1] = br._replace(replicas=tuple(reps))
    return s._replace(brokers=tuple(brokers))


def with_broker(s: State, b: int, **changes: Any) -> State:
    brokers = list(s.brokers)
    brokers[b - 1] = brokers[b - 1]._replace(**changes)
    return s._replace(brokers=tuple(brokers))


def with_zk_partition(s: State, p: int, **changes: Any) -> State:
    parts = list(s.zk.partitions)
    parts[p] = parts[p]._replace(**changes)
    return s._replace(zk=s.zk._replace(partitions=tuple(parts)))


def with_ghost(s: State, p: int, **changes: Any) -> State:
    ghost = list(s.ghost)
    ghost[p] = ghost[p]._replace(**changes)
    return s._replace(ghost=tuple(ghost))


def with_inbox(s: State, b: int, *requests: Any) -> State:
    inbox = list(s.inbox)
    inbox[b - 1] = tuple(requests)
    return s._replace(inbox=tuple(inbox))


def replica(s: State, b: int, p: int = 0):
    return s.brokers[b - 1].replicas[p]


def mask(*brokers: int) -> int:
    m = 0
    for b in brokers:
        m |= 1 << b
    return m


# ------------------------------------------------------------------------------------------ driver
class Driver:
    """A protocol and a current state; ``do`` insists the action is enabled before applying it."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.protocol = configured_protocol(cfg)  # isr_change and reintroduce select the protocol's class
        self.state: State = initial_state(self.protocol)
        self.history: list[Action] = []

    @property
    def s(self) -> State:
        return self.state

    def enabled(self, state: State | None = None) -> list[Action]:
        return enabled_actions(self.protocol, self.state if state is None else state)

    def names(self) -> set[str]:
        return {a.name for a in self.enabled()}

    def is_enabled(self, name: str, *args: Any) -> bool:
        return Action(name, tuple(args)) in self.enabled()

    def do(self, name: str, *args: Any) -> State:
        a = Action(name, tuple(args))
        enabled = self.enabled()
        assert a in enabled, f"{a} is not enabled; enabled: {[str(x) for x in enabled]}"
        self.state = apply(self.protocol, self.state, a)
        self.history.append(a)
        return self.state

    def force(self, name: str, *args: Any) -> State:
        """Apply without checking enabledness (for hand-built states)."""
        self.state = apply(self.protocol, self.state, Action(name, tuple(args)))
        return self.state

    def deliver_all(self, *brokers: int) -> None:
        """Deliver every queued controller request to each broker in turn, oldest first."""
        for b in brokers:
            while self.state.inbox[b - 1]:
                self.do("DeliverRequest", b)

    def reassign_step(self) -> Action:
        """Perform the single enabled ReassignPartition action; return it."""
        steps = [a for a in self.enabled() if a.name == "ReassignPartition"]
        assert len(steps) == 1, steps
        self.do(steps[0].name, *steps[0].args)
        return steps[0]


@pytest.fixture
def kafka():
    """``kafka(brokers=2, replication_factor=2, ...)`` -> a :class:`Driver` at the initial state."""

    def factory(**raw: Any) -> Driver:
        return Driver(make_config(**raw))

    return factory


@pytest.fixture
def edit():
    """The state-editing helpers, as attributes (``edit.with_replica(s, b, p, hw=1)``)."""
    return SimpleNamespace(
        with_replica=with_replica, with_broker=with_broker, with_zk_partition=with_zk_partition,
        with_ghost=with_ghost, with_inbox=with_inbox, replica=replica, mask=mask, config=make_config,
    )
