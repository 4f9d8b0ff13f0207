"""A generic explicit-state checker: breadth-first search over any :class:`Model`.

The engine sees only initial states, enabled actions and next states (Stateright's ``Model``);
it knows nothing about Kafka. Breadth-first order makes every counterexample a shortest one.
States are stored as 64-bit fingerprints (the model's ``fingerprint``; the Kafka model's is in
``statehash``) with the parent's fingerprint, in a flat table (``parentmap``); a trace is rebuilt
by replaying actions from an initial state, so only real, concrete states are ever printed.
"""
from __future__ import annotations

import gc
import itertools
import time
from collections import Counter, deque
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any, Generic

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
from .checkpoint import Checkpoints, Snapshot, SnapshotError, absorb_pairs, pairs_of, prepare_search
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
        checkpoint: Checkpoints | None = None,
        graph: Any = None,
    ) -> None:
        super().__init__(max_depth, max_states, stop_on_first, progress, progress_every, max_memory)
        self.model = model
        #: a liveness graph builder (engine/liveness.py's GraphBuilder) told every distinct state and
        #: every step that changes the state, so that one exploration serves safety and liveness
        self.graph = graph
        #: called as observer(state, fingerprint, depth) for every distinct state, in BFS order
        self.observer = observer
        #: snapshots between levels (engine/checkpoint.py), and the snapshot to resume from
        self.checkpoint = checkpoint

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

        # where each violation was found (the state's fingerprint and the step out of it), which is
        # what a snapshot keeps of it: its trace is rebuilt from the parent map on resume
        origins: dict[str, tuple[int, Step | None]] = {}

        def record(names: list[str], kind: Kind, fp: int, extra: Step | None, message: str) -> None:
            for name in names:
                if name not in violations:
                    violations[name] = Violation(name, kind, self._trace(fp, extra), message)
                    origins[name] = (fp, extra)

        def witness(state: S) -> None:
            unseen.difference_update(witnessed(state, unseen))

        ck = self.checkpoint
        codec: Any = None
        if ck is not None:
            codec = self._checkpoint_codec(ck)
        if ck is not None and ck.resume:
            snap = ck.load()
            absorb_pairs(parents, snap.pairs)
            for raw in snap.frontier:
                state, sfp = self._restored_state(codec, raw, parents)
                queue.append((state, sfp, snap.depth + 1))
            transitions = snap.transitions
            counts = dict(snap.counts)
            unseen.intersection_update(snap.unseen)
            depth = snap.depth
            limit_hit = snap.limit_hit
            start -= snap.seconds  # the run's time is the time of all its parts
            for rec in snap.violations:
                fp0, extra0 = self._restored_violation(rec, parents)
                origins[rec["property"]] = (fp0, extra0)
                violations[rec["property"]] = Violation(rec["property"], rec["kind"], self._trace(fp0, extra0),
                                                        rec["message"])
        graph = self.graph
        if graph is not None and ck is not None:
            raise SnapshotError("a search that records the liveness graph cannot be checkpointed")
        initial: Sequence[S] = model.init_states() if ck is None or not ck.resume else []
        for s in initial:
            fp = fingerprint(s)
            if fp in parents:
                continue
            parents[fp] = None
            if graph is not None:
                graph.initial(s, fp)
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
                if ck is not None and ck.due():
                    # a level boundary: the queue (and s) is the whole next level, a consistent cut
                    self._save(ck, codec, parents, s, queue, depth, transitions, counts, unseen, violations,
                               origins, limit_hit, time.perf_counter() - start)
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
                    if graph is not None and tfp != fp:  # a step that changes nothing is no edge
                        graph.edge(fp, t, tfp, a, False)
                    if stop:
                        break
                    continue
                parents[tfp] = fp
                if graph is not None:
                    graph.edge(fp, t, tfp, a, True)
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

    # ------------------------------------------------------------------ snapshots
    def _checkpoint_codec(self, ck: Checkpoints) -> Any:
        """The model's state codec, which carries the frontier in a snapshot; the identity completed
        with what the engine knows and the directory checked before the search starts."""
        if self.observer is not None:
            raise SnapshotError("a search with an observer cannot be checkpointed")
        return prepare_search(ck, self.model, {"stop_on_first": self.stop_on_first, "max_depth": self.max_depth,
                                               "max_states": self.max_states})

    def _restored_state(self, codec: Any, raw: bytes, parents: Any) -> tuple[Any, int]:
        """A frontier state of a snapshot, decoded and checked to be one the parent map knows."""
        try:
            state = codec.decode(raw)
        except Exception as e:  # the codec's CodecError, or anything a damaged byte string raises
            raise SnapshotError(f"the snapshot {self.checkpoint.path if self.checkpoint else ''} is damaged "
                                f"(a frontier state does not decode: {e})") from None
        fp = self.model.fingerprint(state)
        if fp not in parents:
            raise SnapshotError(f"the snapshot {self.checkpoint.path if self.checkpoint else ''} is damaged "
                                "(a frontier state is not in its parent map)")
        return state, fp

    def _restored_violation(self, rec: dict[str, Any], parents: Any) -> tuple[int, Step | None]:
        """A violation of a snapshot as the search records it: the state's fingerprint and the step
        out of it (the action found again by its index among the state's actions)."""
        fp: int = rec["fp"]
        where = self.checkpoint.path if self.checkpoint else ""
        if fp not in parents:
            raise SnapshotError(f"the snapshot {where} is damaged (a violation's state is not in its parent map)")
        index = rec["action"]
        if index is None:
            return fp, None
        steps = replay_fingerprints(self.model, parent_chain(parents, fp))
        source = steps[-1].state
        acts = list(self.model.actions(source))
        if not 0 <= index < len(acts):
            raise SnapshotError(f"the snapshot {where} is damaged (a violation's action is not one of its state's)")
        a = acts[index]
        if rec["faulted"]:
            return fp, Step(a, None)
        try:
            t = self.model.next_state(source, a)
        except ModelFault:
            return fp, Step(a, None)
        return fp, Step(a, t)

    def _save(self, ck: Checkpoints, codec: Any, parents: Any, first: Any, queue: Any, depth: int,
              transitions: int, counts: dict[str, int], unseen: set[str], violations: dict[str, Violation],
              origins: dict[str, tuple[int, Step | None]], limit_hit: str | None, seconds: float) -> None:
        """Write a snapshot at a level boundary: ``first`` (just taken from the queue) and the queue
        are the next level."""
        records: list[dict[str, Any]] = []
        for name, v in violations.items():
            fp, extra = origins[name]
            index: int | None = None
            if extra is not None:
                source = v.trace[-2].state
                index = list(self.model.actions(source)).index(extra.action)
            records.append({"property": name, "kind": v.kind, "fp": fp, "message": v.message, "action": index,
                            "faulted": extra is not None and extra.state is None})
        snap = Snapshot(identity=ck.identity, depth=depth, transitions=transitions, counts=dict(counts),
                        unseen=sorted(unseen), violations=records, limit_hit=limit_hit, seconds=seconds,
                        states=len(parents), pairs=pairs_of(parents))
        ck.write(snap, itertools.chain((first,), (entry[0] for entry in queue)), codec.encode)

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
