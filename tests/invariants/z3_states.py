"""Reachable model states for the z3 transcription tests, shared under a name unique across tests/.

The tests compare the encoding with the model on states the model really reaches; these are the
first ``limit`` of them in breadth-first order (symmetry off, so broker ids are the encoding's).
"""
from __future__ import annotations

from collections import deque
from typing import Any

from isrcheck.invariants import build_model
from isrcheck.engine.checker import ModelFault


def reachable_with_model(cfg: Any, limit: int = 4000) -> tuple[Any, list[Any]]:
    """The model of ``cfg`` and its first ``limit`` reachable states, breadth first (a step the model
    refuses with an illegal move leads nowhere)."""
    model = build_model(cfg, symmetry=False)
    s0 = model.init_states()[0]
    seen = {s0}
    queue = deque([s0])
    out = [s0]
    while queue and len(out) < limit:
        s = queue.popleft()
        for a in model.actions(s):
            try:
                t = model.next_state(s, a)
            except ModelFault:  # an illegal move (OnlyValidTransitions): no successor
                continue
            if t not in seen:
                seen.add(t)
                out.append(t)
                queue.append(t)
    return model, out


def reachable(cfg: Any, limit: int = 4000) -> list[Any]:
    """The first ``limit`` reachable states of ``cfg``'s model, breadth first."""
    return reachable_with_model(cfg, limit)[1]


def sample(states: list[Any], n: int) -> list[Any]:
    """``n`` states spread evenly over ``states``."""
    step = max(1, len(states) // n)
    return states[::step][:n]
