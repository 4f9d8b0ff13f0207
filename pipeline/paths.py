"""Paths through a model, as pure functions: seeded random walks, shortest paths out of a
breadth-first search, and the corpus rows of a path (no Spark here).

Walks and replays are the engine's (:mod:`isrcheck.engine.explore`): at each step the enabled
actions are shuffled and the first one that changes the state is taken; a walk ends when no action
changes the state, after ``max_depth`` steps, or at the first step that breaks a property (that
step is the walk's last row). The walk is a function of its seed alone.
"""
from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from typing import Any

from isrcheck.model.action_text import to_json as action_json
from isrcheck.engine.checker import Checker
from isrcheck.engine.core import Checks, Property, action_name
from isrcheck.engine.explore import PathStep, replay_checked, walk
from isrcheck.invariants.properties import exercised
from isrcheck.model.observe import observe


def derived_seed(seed: int, index: int, salt: str = "walk") -> int:
    """A 63-bit seed for task or trace ``index`` of a run seeded with ``seed``, the same on every
    machine and in every process (BLAKE2b, not Python's salted ``hash``)."""
    digest = hashlib.blake2b(f"isrcheck:{salt}:{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def random_walk(model: Any, seed: int, max_depth: int) -> list[PathStep]:
    """One seeded walk (:func:`isrcheck.engine.explore.walk`)."""
    return list(walk(model, random.Random(seed), max_depth))


def replay_path(model: Any, chain: Sequence[int]) -> list[PathStep]:
    """The path through the states with fingerprints ``chain`` (a shortest path from a search)."""
    return replay_checked(model, chain)


class _StateGraph:
    """A model seen without its properties: the search below wants the reachable states only."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.init_states = model.init_states
        self.actions = model.actions
        self.next_state = model.next_state
        self.fingerprint = model.fingerprint

    def properties(self) -> list[Property]:
        return []


def bfs_targets(model: Any, count: int, max_states: int) -> tuple[list[list[int]], int, bool]:
    """Shortest paths (as fingerprint chains) to ``count`` states of a breadth-first search: the
    deepest states first, ties in search order. Returns (chains, states searched, complete), where
    complete is false when ``max_states`` cut the search."""
    depth: dict[int, int] = {}
    order: list[int] = []

    def seen(_state: Any, fp: int, d: int) -> None:
        depth[fp] = d
        order.append(fp)

    checker = Checker(_StateGraph(model), max_states=max_states, stop_on_first=False, observer=seen)
    result = checker.run()
    position = {fp: i for i, fp in enumerate(order)}
    chosen = sorted(order, key=lambda f: (-depth[f], position[f]))[:count]
    return [checker.chain_to(fp) for fp in chosen], result.distinct_states, result.limit_hit is None


def path_rows(model: Any, path: list[PathStep], *, trace_id: str, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The corpus rows of one path (schema in specs/09-pipeline.md)."""
    props = Checks.of(model)
    rows = []
    prev = None
    length = len(path) - 1
    for i, st in enumerate(path):
        a = st.action
        if st.state is not None:
            obs = json.dumps(observe(st.state), separators=(",", ":"), sort_keys=True)
            fp = model.fingerprint(st.state)
            ex = exercised(props, prev, st.state)
            wit = props.witnessed(st.state, props.sometimes_names())
        else:
            obs, fp, ex, wit = None, None, [], []
        rows.append({
            "trace_id": trace_id,
            **meta,
            "trace_length": length,
            "step": i,
            "action": None if a is None else action_name(a),
            "action_text": None if a is None else str(a),
            "args": None if a is None else json.dumps(action_json(a)["args"], separators=(",", ":")),
            "observation": obs,
            "fingerprint": fp,
            "broken": list(st.broken),
            "exercised": ex,
            "witnessed": wit,
            "fault": st.fault or None,
        })
        prev = st.state
    return rows
