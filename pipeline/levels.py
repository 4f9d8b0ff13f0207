"""What a level of a pipeline exploration yields, and where a checker would stop inside it.

Shared by the in-process levels (:mod:`.explore`) and the Spark levels (:mod:`.explore_spark`),
which compute the same :class:`LevelOutcome` by the key rules of :mod:`isrcheck.engine.explore`.
:class:`LevelJob` is what a Spark level needs of the run it belongs to.
"""
from __future__ import annotations

import contextlib
import gc
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from isrcheck.engine.core import paused_gc
from isrcheck.engine.explore import FAULT, Key, Successor

from .session import LazySession
from .store import RunStore


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a level's states are expanded, as the checker does
    (:func:`isrcheck.engine.core.paused_gc`: states are acyclic and freed by reference counting).
    Without it, decoding a batch of states in a Spark worker triggered collections that cost four
    times the decoding itself."""
    resume = paused_gc()
    try:
        yield
    finally:
        if resume:
            gc.enable()


class LevelJob(Protocol):
    """The run a level belongs to (the :class:`~.explore.Explorer`), as a Spark level sees it."""

    spec_json: str
    run_id: str
    store: RunStore
    session: LazySession
    max_states: int | None

    def parts(self) -> int:
        """The run's number of shards (fixed once a level has been sharded)."""
        ...


@dataclass
class LevelStats:
    depth: int  # the level produced
    frontier: int  # states expanded to produce it (the previous level); 0 for level 0
    new: int  # states of this level
    visited: int  # distinct states after it
    transitions: int
    engine: str  # "init" | "local" | "spark"
    seconds: float
    coverage: dict[str, int] = field(default_factory=dict)
    witnessed: list[str] = field(default_factory=list)
    jobs: int = 0  # Spark jobs the level took (its job group's); 0 in-process
    reused_map_shards: int = 0  # Spark: frontier shards not expanded again (a killed run had finished them)
    resident: bool = False  # Spark: a level of a resident stretch (one job for the stretch, counted on its first level)


@dataclass
class Stop:
    """Where the Checker would stop inside a level: the first violation's key and what it counted."""

    key: Key
    counted_new: int  # new states the Checker has added by then
    violations: list[dict[str, Any]]  # descriptors, see _violation
    transitions: int
    coverage: Counter[str]
    witnessed: set[str] = field(default_factory=set)  # sometimes-properties witnessed in the level by then
    limit: str | None = None  # "states": the stop is --max-states, not a violation


@dataclass
class LevelOutcome:
    new: int
    transitions: int
    coverage: Counter[str]
    witnessed: set[str]
    stop: Stop | None = None
    reused_map_shards: int = 0  # frontier shards whose map output a killed run had finished


def descriptor(prop: str, kind: str, message: str, parent: int | None, fingerprint: int | None = None,
               aidx: int | None = None, fault: bool = False) -> dict[str, Any]:
    """A violation as data: replayed into a trace by :func:`rebuild_violation`."""
    return {"property": prop, "kind": kind, "message": message, "parent": parent,
            "fingerprint": fingerprint, "aidx": aidx, "fault": fault}


def stop_from(before: int, at: list[Successor], events: list[Any], cutoff: Key, visited_before: int,
              counted: tuple[int, Counter[str]], witnessed: set[str] | None = None, limit: str | None = None) -> Stop:
    """The :class:`Stop` at ``cutoff``: ``before`` new states have smaller keys, ``at`` holds the
    new state at the cutoff itself (if the step there made one), ``events`` the level's events."""
    violations = []
    for e in events:
        if e.key == cutoff:
            violations.append(descriptor(e.prop, "transition", e.message, e.parent, aidx=e.aidx,
                                         fault=e.kind == FAULT))
    for s in at:
        for name in s.broken:
            violations.append(descriptor(name, "always", "", s.parent, fingerprint=s.fingerprint))
    return Stop(cutoff, visited_before + before + len(at), violations, counted[0], counted[1], witnessed or set(), limit)


def states_limit(max_states: int | None, visited_before: int, new_count: int) -> int | None:
    """The Checker's ``max_states`` stop inside a level: the position (in key order) of the new state
    after which it holds ``max_states`` states, or None when the level ends first."""
    if max_states is None or new_count == 0 or visited_before + new_count < max_states:
        return None
    return max(0, max_states - visited_before - 1)
