"""A generic explicit-state checker: breadth-first search over any :class:`Model`.

The engine sees only initial states, enabled actions and next states (Stateright's ``Model``);
it knows nothing about Kafka. Breadth-first order makes every counterexample a shortest one.
States are stored as 64-bit fingerprints (the model's ``fingerprint``; the Kafka model's is in
``statehash``) with the parent's fingerprint, in a flat table (``parentmap``); a trace is rebuilt
by replaying actions from an initial state, so only real, concrete states are ever printed.
"""
from __future__ import annotations

import gc
import time
from collections import Counter, deque
from collections.abc import Callable, MutableMapping
from typing import Generic

# The engine's vocabulary is defined in .engine; the checker is where users meet it
# (``from isrcheck.engine.checker import Checker, Property``), so it is exported from here too.
from .core import (
    A,
    Checks,
    CheckResult,
    Kind,
    Model,
    ModelFault,
    Outcome,
    Progress,
    Property,
    S,
    Search,
    Step,
    Violation,
    action_name,
    outcome_of,
    paused_gc,
    result_of,
)
from .explore import parent_chain, replay_actions, replay_fingerprints
from .memory import CHECK_EVERY, resident_bytes
from .parentmap import new_parent_map


class Checker(Search, Generic[S, A]):
    """Breadth-first exhaustive search with fingerprints, coverage and limits."""

    def __init__(
        self,
        model: Model[S, A],
        *,
        max_depth: int | None = None,
        max_states: int | None = None,
        stop_on_first: bool = True,
        progress: Callable[[Progress], None] | None = None,
        progress_every: float = 0.5,
        observer: Callable[[S, int, int], None] | None = None,
        max_memory: int | None = None,
    ) -> None:
        super().__init__(max_depth, max_states, stop_on_first, progress, progress_every, max_memory)
        self.model = model
        #: called as observer(state, fingerprint, depth) for every distinct state, in BFS order
        self.observer = observer

    def run(self) -> CheckResult:
        """Explore; the cyclic garbage collector is paused meanwhile (see :func:`paused_gc`)."""
        resume = paused_gc()
        try:
            return self._search()
        finally:
            if resume:
                gc.enable()

    def _search(self) -> CheckResult:
        model = self.model
        checks = Checks.of(model)
        # the verdicts are Checks' (the one definition of a violation), bound once; the names of
        # what broke are asked for only when something did
        safe, legal = checks.safe, checks.legal
        broken_always = checks.broken_always
        broken_transition = checks.broken_transition
        witnessed = checks.witnessed
        fingerprint = model.fingerprint
        actions = model.actions
        next_state = model.next_state

        start = time.perf_counter()
        # fingerprint -> parent's fingerprint (None for an initial state): engine/parentmap.py
        parents: MutableMapping[int, int | None] = new_parent_map()
        self._parents = parents
        # counted in a plain dict: a Counter's item access takes the generic path in the compiled build
        counts: dict[str, int] = {}
        violations: dict[str, Violation] = {}
        unseen: set[str] = set(checks.sometimes_names())
        queue: deque[tuple[S, int, int]] = deque()
        transitions = 0
        depth = 0
        limit_hit: str | None = None
        last_report = start
        # the memory ceiling is read every CHECK_EVERY new states (engine/memory.py: why so cheap)
        max_memory = self.max_memory
        memory_due = CHECK_EVERY if max_memory is not None else -1

        def record(names: list[str], kind: Kind, fp: int, extra: Step | None, message: str) -> None:
            for name in names:
                if name not in violations:
                    violations[name] = Violation(name, kind, self._trace(fp, extra), message)

        def witness(state: S) -> None:
            unseen.difference_update(witnessed(state, unseen))

        for s in model.init_states():
            fp = fingerprint(s)
            if fp in parents:
                continue
            parents[fp] = None
            if self.observer is not None:
                self.observer(s, fp, 0)
            if not safe(s):
                record(broken_always(s), "always", fp, None, "")
            witness(s)
            queue.append((s, fp, 0))

        stop = bool(violations) and self.stop_on_first
        # read the ceiling before the first state is expanded and after the last: a model smaller than
        # CHECK_EVERY states would otherwise finish without a single reading, its ceiling never enforced
        if max_memory is not None and not stop and resident_bytes() > max_memory:
            limit_hit = "memory"
            stop = True
        while queue and not stop:
            s, fp, d = queue.popleft()
            if d > depth:
                depth = d
            if self.max_depth is not None and d >= self.max_depth:
                limit_hit = limit_hit or "depth"
                continue
            for a in actions(s):
                try:
                    t = next_state(s, a)
                except ModelFault as e:
                    record([e.property_name], "transition", fp, Step(a, None), str(e))
                    if self.stop_on_first:
                        stop = True
                        break
                    continue
                transitions += 1
                name = action_name(a)
                counts[name] = counts.get(name, 0) + 1
                if not legal(s, t):
                    record(broken_transition(s, t), "transition", fp, Step(a, t), "")
                    stop = self.stop_on_first
                tfp = fingerprint(t)
                if tfp in parents:
                    if stop:
                        break
                    continue
                parents[tfp] = fp
                if self.observer is not None:
                    self.observer(t, tfp, d + 1)
                if not safe(t):
                    record(broken_always(t), "always", tfp, None, "")
                    stop = self.stop_on_first
                if unseen:
                    witness(t)
                if stop:
                    break
                queue.append((t, tfp, d + 1))
                if self.max_states is not None and len(parents) >= self.max_states:
                    limit_hit = "states"
                    stop = True
                    break
            if max_memory is not None and len(parents) >= memory_due:
                memory_due = len(parents) + CHECK_EVERY
                if resident_bytes() > max_memory:
                    limit_hit = "memory"
                    stop = True
            if self.progress is not None:
                now = time.perf_counter()
                if now - last_report >= self.progress_every:
                    last_report = now
                    self.progress(Progress(len(parents), depth, len(queue), now - start))
        if queue and not limit_hit and not violations:
            limit_hit = "states"
        if max_memory is not None and not limit_hit and resident_bytes() > max_memory:
            limit_hit = "memory"  # the search finished, but past the ceiling: the run did not keep it
        seconds = time.perf_counter() - start
        if self.progress is not None:
            self.progress(Progress(len(parents), depth, len(queue), seconds))

        return result_of(len(parents), depth, seconds, transitions, violations.values(), unseen, Counter(counts),
                         limit_hit, model.properties())

    # ------------------------------------------------------------------ traces
    def chain_to(self, fp: int) -> list[int]:
        """The fingerprints of a shortest path from an initial state to ``fp``."""
        return parent_chain(self._parents, fp)

    def trace_to(self, fp: int) -> list[Step]:
        """A shortest trace to the state with fingerprint ``fp`` (after or during ``run``)."""
        return self._trace(fp, None)

    def _trace(self, fp: int, extra: Step | None) -> list[Step]:
        steps = replay_fingerprints(self.model, self.chain_to(fp))
        if extra is not None:
            steps.append(extra)
        return steps



__all__ = ["Checker", "A", "S", "Kind", "Property", "ModelFault", "Model", "Step", "Violation", "Progress",
           "Outcome", "CheckResult", "outcome_of", "paused_gc", "replay_fingerprints", "replay_actions"]
