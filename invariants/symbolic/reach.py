"""Is a counterexample to induction reachable? An explicit breadth-first search for its pre-state.

``prove inductive`` reports a property whose counterexample to induction (CTI) starts in a
reachable state as REFUTED (the step from it breaks the property in a real run), and as NOT
INDUCTIVE otherwise: when the search of the configuration's reachable states ends without meeting
the pre-state, or is stopped at ``max_states`` (then nothing is known either way).
The search uses the model's own fingerprints (with symmetry reduction where it is sound, so a
pre-state equal to a reachable one up to renaming brokers is found).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MAX_STATES = 200_000


@dataclass
class Reach:
    found: dict[int, int] = field(default_factory=dict)  # index of a wanted state -> its BFS depth
    searched: int = 0
    complete: bool = False  # every reachable state was visited

    def reachable(self, i: int) -> bool | None:
        """True: reached; False: the whole reachable space was searched without it; None: unknown."""
        if i in self.found:
            return True
        return False if self.complete else None


def search_for(cfg: Any, wanted: list[Any], max_states: int = DEFAULT_MAX_STATES) -> Reach:
    """Search the reachable states of ``cfg`` for each state of ``wanted`` (model States)."""
    from isrcheck.invariants import build_model
    from isrcheck.model.checker import ModelFault

    model = build_model(cfg, properties=[])
    fp = model.fingerprint
    targets: dict[int, list[int]] = {}
    for i, s in enumerate(wanted):
        targets.setdefault(fp(s), []).append(i)
    out = Reach()
    seen: set[int] = set()
    queue: deque[tuple[Any, int]] = deque()
    for s in model.init_states():
        f = fp(s)
        if f not in seen:
            seen.add(f)
            queue.append((s, 0))
    while queue:
        s, d = queue.popleft()
        f = fp(s)
        for i in targets.get(f, ()):
            out.found.setdefault(i, d)
        if len(out.found) == len(wanted):
            break
        for a in model.actions(s):
            try:
                t = model.next_state(s, a)
            except ModelFault:
                continue
            g = fp(t)
            if g not in seen:
                if len(seen) >= max_states:
                    out.searched = len(seen)
                    return out
                seen.add(g)
                queue.append((t, d + 1))
    out.searched = len(seen)
    out.complete = not queue
    return out


__all__ = ["Reach", "search_for", "DEFAULT_MAX_STATES"]
