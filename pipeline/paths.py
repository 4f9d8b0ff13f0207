"""Paths through a model, as pure functions: seeded random walks, shortest paths out of a
breadth-first search, and the corpus rows of a path (no Spark here).

A walk follows the rules of :func:`isrcheck.model.simulate.simulate`: at each step the enabled
actions are shuffled and the first one that changes the state is taken; a walk ends when no action
changes the state, after ``max_depth`` steps, or at the first step that breaks a property (that
step is the walk's last row). The walk is a function of its seed alone.
"""
from __future__ import annotations

import hashlib
import json
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from isrcheck.model.action_text import to_json as action_json
from isrcheck.model.checker import ModelFault, Step, _action_name
from isrcheck.model.observe import observe

from .exercise import exercised
from .expand import PropertySets


def derived_seed(seed: int, index: int, salt: str = "walk") -> int:
    """A 63-bit seed for task or trace ``index`` of a run seeded with ``seed``, the same on every
    machine and in every process (BLAKE2b, not Python's salted ``hash``)."""
    digest = hashlib.blake2b(f"isrcheck:{salt}:{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass
class PathStep:
    action: Any  # None for the initial state
    state: Any  # None when the action raised ModelFault
    broken: list[str]
    fault: str = ""  # the ModelFault message


def random_walk(model: Any, seed: int, max_depth: int) -> list[PathStep]:
    """One seeded walk (see the module docstring)."""
    props = PropertySets.of(model)
    rng = random.Random(seed)
    inits = list(model.init_states())
    state = inits[0] if len(inits) == 1 else rng.choice(inits)
    steps = [PathStep(None, state, [p.name for p in props.always if not p.check(state)])]
    if steps[0].broken:
        return steps
    while len(steps) - 1 < max_depth:
        enabled = list(model.actions(state))
        rng.shuffle(enabled)
        taken: PathStep | None = None
        for a in enabled:
            try:
                t = model.next_state(state, a)
            except ModelFault as e:
                taken = PathStep(a, None, [e.property_name], str(e))
                break
            bad = [p.name for p in props.transition if not p.check(state, t)]
            if bad:
                taken = PathStep(a, t, bad + [p.name for p in props.always if not p.check(t)])
                break
            if t != state:
                taken = PathStep(a, t, [p.name for p in props.always if not p.check(t)])
                break
        if taken is None:
            break
        steps.append(taken)
        if taken.broken:
            break
        state = taken.state
    return steps


def replay_path(model: Any, chain: Sequence[int]) -> list[PathStep]:
    """The path through the states with fingerprints ``chain`` (a shortest path from a search)."""
    from isrcheck.model.checker import replay_fingerprints

    props = PropertySets.of(model)
    out: list[PathStep] = []
    prev = None
    for st in replay_fingerprints(model, list(chain)):
        broken = [p.name for p in props.always if not p.check(st.state)]
        if prev is not None:
            broken = [p.name for p in props.transition if not p.check(prev, st.state)] + broken
        out.append(PathStep(st.action, st.state, broken))
        prev = st.state
    return out


def bfs_targets(model: Any, count: int, max_states: int) -> tuple[list[list[int]], int, bool]:
    """Shortest paths (as fingerprint chains) to ``count`` states of a breadth-first search: the
    deepest states first, ties in search order. Returns (chains, states searched, complete)."""
    fingerprint = model.fingerprint
    parents: dict[int, int | None] = {}
    depth: dict[int, int] = {}
    order: list[int] = []
    queue: deque[tuple[Any, int]] = deque()
    for s in model.init_states():
        fp = fingerprint(s)
        if fp not in parents:
            parents[fp] = None
            depth[fp] = 0
            order.append(fp)
            queue.append((s, fp))
    complete = True
    while queue:
        s, fp = queue.popleft()
        for a in model.actions(s):
            try:
                t = model.next_state(s, a)
            except ModelFault:
                continue
            tfp = fingerprint(t)
            if tfp in parents:
                continue
            if len(parents) >= max_states:
                complete = False
                queue.clear()
                break
            parents[tfp] = fp
            depth[tfp] = depth[fp] + 1
            order.append(tfp)
            queue.append((t, tfp))
    position = {fp: i for i, fp in enumerate(order)}
    chosen = sorted(order, key=lambda f: (-depth[f], position[f]))[:count]
    chains = []
    for fp in chosen:
        chain = []
        cur: int | None = fp
        while cur is not None:
            chain.append(cur)
            cur = parents[cur]
        chains.append(chain[::-1])
    return chains, len(parents), complete


def path_rows(model: Any, path: list[PathStep], *, trace_id: str, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The corpus rows of one path (schema in specs/09-pipeline.md)."""
    props = PropertySets.of(model)
    rows = []
    prev = None
    length = len(path) - 1
    for i, st in enumerate(path):
        a = st.action
        if st.state is not None:
            obs = json.dumps(observe(st.state), separators=(",", ":"), sort_keys=True)
            fp = model.fingerprint(st.state)
            ex = exercised(props, prev, st.state)
            wit = [p.name for p in props.sometimes if p.check(st.state)]
        else:
            obs, fp, ex, wit = None, None, [], []
        rows.append({
            "trace_id": trace_id,
            **meta,
            "trace_length": length,
            "step": i,
            "action": None if a is None else _action_name(a),
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
