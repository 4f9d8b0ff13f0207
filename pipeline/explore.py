"""Hybrid level-synchronous breadth-first exploration: in-process while the frontier is small,
on Spark for the wide levels, in-process again for the tail.

Every level is written as Parquet under the run directory (:mod:`.store`), whichever engine
computed it, so a run can be interrupted and resumed at any level boundary. Both engines compute a
level with :func:`isrcheck.engine.explore.expand` and reduce it with the same rules (:mod:`isrcheck.engine.explore` explains the
keys), so the result — distinct states, depth, outcome, counterexample length, transitions and
coverage — equals the single-process :class:`~isrcheck.engine.checker.Checker`'s. Counterexamples
are rebuilt from the parent links stored in the levels with
:func:`~isrcheck.engine.explore.replay_fingerprints`, so only real states are printed.
"""
from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from isrcheck import __version__
from isrcheck.engine.core import Checks, CheckResult, ModelFault, Step, Violation, outcome_of
from isrcheck.engine.explore import (Successor, count_until, expand, first_event_key, initial_level, nth_action,
                                    replay, replay_fingerprints, sorted_new)
from isrcheck.model.statecodec import kafka_state_codec

from .errors import PipelineError
from .explore_spark import level_group, spark_level
from .levels import LevelOutcome, LevelStats, Stop, descriptor, gc_paused, states_limit, stop_from
from .resident import END_DONE, END_STOP, StretchContext, StretchEnd, run_stretch
from .session import LazySession, task_slots
from .shards import SeenSet, initial_key, step_key
from .spec import FINGERPRINT_SCHEME, ModelSpec
from .store import RunStore, codec_id

#: frontier size from which a level runs on Spark (a Spark level has a fixed cost of about a second,
#: specs/09-pipeline.md "Costs"; in-process a narrow level takes milliseconds)
DEFAULT_SPARK_THRESHOLD = 20_000


@dataclass
class ExploreResult:
    result: CheckResult
    levels: list[LevelStats]
    out: Path
    spark_levels: int
    resumed_at: int | None  # committed levels found on --resume
    finished: bool


class Explorer:
    """One exploration run in ``out``; :meth:`run` returns an :class:`ExploreResult`."""

    def __init__(
        self,
        spec: ModelSpec,
        out: str | Path,
        *,
        spark_threshold: int = DEFAULT_SPARK_THRESHOLD,
        session: LazySession | None = None,
        resume: bool = False,
        max_depth: int | None = None,
        max_states: int | None = None,
        stop_after_levels: int | None = None,
        on_level: Callable[[LevelStats], None] | None = None,
        partitions: int | None = None,
        resident: bool = True,
    ) -> None:
        self.spec = spec
        self.spec_json = spec.to_json()
        self.run_id = uuid.uuid4().hex[:12]  # names this process's Spark job groups (explore_spark.level_group)
        self.store = RunStore(out)
        self.spark_threshold = spark_threshold
        self.session = session or LazySession()
        self.resume = resume
        self.max_depth = max_depth
        self.max_states = max_states
        self.stop_after_levels = stop_after_levels
        self.on_level = on_level
        self.partitions = partitions
        self.resident = resident
        self._progress: dict[str, Any] = {}
        self.model = spec.build()
        self.props = Checks.of(self.model)
        self.codec = kafka_state_codec()
        # in-process working set, valid only while consecutive levels run in-process
        self._frontier: list[tuple[int, int, Any]] | None = None
        self._keys: list[bytes] | None = None  # the frontier's keys (shards.py), by rank
        self._visited: set[int] | SeenSet | None = None

    # ------------------------------------------------------------------ metadata
    def _meta(self) -> dict[str, Any]:
        return {
            "model": self.spec.label,
            "config": self.spec.config,
            "symmetry": self.spec.symmetry,
            "generation": self.spec.generation,
            "codec": codec_id(),
            "fingerprint": FINGERPRINT_SCHEME,
            "properties": [p.name for p in self.model.properties()],
            "max_depth": self.max_depth,
            "max_states": self.max_states,
            "tool_version": __version__,
        }

    def _open(self) -> tuple[dict[str, Any], int | None]:
        store = self.store
        if self.resume:
            meta = store.load_meta()
            want = self._meta()
            for key in ("config", "symmetry", "codec", "fingerprint", "properties", "max_depth", "max_states"):
                if meta.get(key) != want[key]:
                    shown = f" ({meta.get(key)!r}, now {want[key]!r})" if key in ("codec", "fingerprint") else ""
                    raise PipelineError(f"{store.out}: holds a run with a different {key}{shown}; "
                                        "it cannot be resumed with these options")
            progress = store.read_progress()
            committed = len(progress["levels"])
            store.clean_uncommitted(committed)
            return progress, committed
        store.create(self._meta())
        return store.read_progress(), None

    def parts(self) -> int:
        """The run's number of shards: fixed by its first Spark level (kept in progress.json, so a
        resumed run reads the same shard files); ``partitions``, else twice Spark's default
        parallelism (two tasks per core, so a slow shard does not idle a core)."""
        parts = self._progress.get("partitions")
        if parts is None:
            parts = self.partitions or max(2, 2 * self.session.get().sparkContext.defaultParallelism)
            self._progress["partitions"] = parts
        return int(parts)

    # ------------------------------------------------------------------ run
    def run(self) -> ExploreResult:
        start = time.perf_counter()
        progress, resumed_at = self._open()
        self._progress = progress
        levels = [LevelStats(**x) for x in progress["levels"]]
        if progress.get("finished"):
            return self._finished(progress, levels, resumed_at)
        try:
            return self._run(progress, levels, resumed_at, start)
        finally:
            self.session.stop()

    def _elapsed(self, progress: dict[str, Any], start: float) -> float:
        return progress.get("seconds_before", 0.0) + time.perf_counter() - start

    def _run(self, progress: dict[str, Any], levels: list[LevelStats], resumed_at: int | None,
             start: float) -> ExploreResult:
        store = self.store
        seconds_before = sum(x.seconds for x in levels)
        progress["seconds_before"] = seconds_before
        computed = 0
        per_level = False  # the next wide level as a job of its own (a stretch stopped before it)
        if not levels:
            stop = self._init_level(levels, progress)
            computed += 1
            if stop is not None:
                return self._finish(progress, levels, resumed_at, stop, depth=0, start=start)
        while True:
            d = levels[-1].depth
            frontier = levels[-1].new
            visited = levels[-1].visited
            if self.max_depth is not None and d >= self.max_depth:
                return self._finish(progress, levels, resumed_at, None, depth=d, start=start, limit="depth")
            if self.stop_after_levels is not None and computed >= self.stop_after_levels:
                return self._interrupted(progress, levels, resumed_at, d, start)
            t0 = time.perf_counter()
            unwitnessed = self._unwitnessed(progress)
            jobs = 0
            if frontier >= self.spark_threshold and self.resident and not per_level:
                self._frontier = self._visited = self._keys = None
                end = self._stretch(d, computed)
                progress.update(store.read_progress())  # the levels the stretch committed
                levels[:] = [LevelStats(**x) for x in progress["levels"]]
                computed += end.levels
                per_level = end.end == END_STOP  # the Checker stops inside the next level: found per level
                if end.end == END_DONE:
                    self._add_counts(progress, LevelOutcome(0, end.transitions, Counter(end.coverage),
                                                            set(end.witnessed)))
                    return self._finish(progress, levels, resumed_at, None, depth=end.depth, start=start)
                continue
            per_level = False
            if frontier >= self.spark_threshold:
                engine = "spark"
                self._frontier = self._visited = self._keys = None
                outcome = spark_level(self, d, frontier, visited, unwitnessed)
                jobs = len(self.session.get().sparkContext.statusTracker().getJobIdsForGroup(
                    level_group(d + 1, self.run_id)))
            else:
                engine = "local"
                with gc_paused():
                    outcome = self._local_level(d, visited, unwitnessed)
            computed += 1
            if outcome.stop is not None:
                return self._finish(progress, levels, resumed_at, outcome.stop, depth=d, start=start)
            if outcome.new == 0:
                # nothing new: the search is complete; the last level's expansion still counts
                self._add_counts(progress, outcome)
                return self._finish(progress, levels, resumed_at, None, depth=d, start=start)
            stats = LevelStats(d + 1, frontier, outcome.new, visited + outcome.new, outcome.transitions, engine,
                               time.perf_counter() - t0, dict(sorted(outcome.coverage.items())),
                               sorted(outcome.witnessed), jobs, outcome.reused_map_shards)
            levels.append(stats)
            progress["levels"].append(asdict(stats))
            store.write_progress(progress)
            if self.on_level is not None:
                self.on_level(stats)

    def _stretch(self, d: int, computed: int) -> StretchEnd:
        """The wide levels from level ``d`` on as one Spark job whose tasks keep their states
        (:mod:`.resident`): until a level is narrower than the threshold, the search ends, or the
        Checker would stop inside the next level."""
        spark = self.session.get()
        parts = self.parts()
        self.store.write_progress(self._progress)  # the shards, for the tasks that read it
        last = d + (self.stop_after_levels - computed) if self.stop_after_levels is not None else 1 << 62
        if self.max_depth is not None:
            last = min(last, self.max_depth)
        sc = spark.sparkContext
        slots = task_slots(sc.master, sc.defaultParallelism, int(sc.getConf().get("spark.task.cpus", "1")))
        tasks = min(slots, parts)
        ctx = StretchContext(self.spec_json, str(self.store.out), tasks, parts, self.spark_threshold, last,
                             self.max_states, f"{d:05d}-{uuid.uuid4().hex[:12]}")
        return run_stretch(spark, ctx, self.store, level_group(d + 1, self.run_id), self.on_level)

    def _unwitnessed(self, progress: dict[str, Any]) -> set[str]:
        seen = {n for lv in progress["levels"] for n in lv.get("witnessed", [])}
        return {p.name for p in self.props.sometimes} - seen

    def _add_counts(self, progress: dict[str, Any], outcome: LevelOutcome) -> None:
        progress["tail"] = {"transitions": outcome.transitions, "coverage": dict(outcome.coverage),
                            "witnessed": sorted(outcome.witnessed)}

    # ------------------------------------------------------------------ level 0
    def _init_level(self, levels: list[LevelStats], progress: dict[str, Any]) -> Stop | None:
        t0 = time.perf_counter()
        rows, witnessed = initial_level(self.model, self.props)
        violations = [descriptor(name, "always", "", None, fingerprint=s.fingerprint) for s in rows for name in s.broken]
        if violations:
            return Stop((-1, -1), len(rows), violations, 0, Counter())
        keys = [initial_key(i) for i in range(len(rows))]
        self._write_local_level(0, rows, keys)
        self._keys = keys
        self._frontier = [(s.fingerprint, i, s.state) for i, s in enumerate(rows)]
        self._visited = {s.fingerprint for s in rows}
        stats = LevelStats(0, 0, len(rows), len(rows), 0, "init", time.perf_counter() - t0, {}, sorted(witnessed))
        levels.append(stats)
        progress["levels"].append(asdict(stats))
        self.store.write_progress(progress)
        if self.on_level is not None:
            self.on_level(stats)
        return None

    def _write_local_level(self, depth: int, rows: list[Successor], keys: list[bytes]) -> None:
        enc = self.codec.encode
        self.store.write_level(depth, {
            "fingerprint": [s.fingerprint for s in rows],
            "parent": [s.parent for s in rows],
            "prank": [s.prank for s in rows],
            "aidx": [s.aidx for s in rows],
            "action": [s.action for s in rows],
            "depth": [depth] * len(rows),
            "rank": list(range(len(rows))),
            "state": [enc(s.state) for s in rows],
            "broken": [s.broken for s in rows],
            "key": keys,
        })

    # ------------------------------------------------------------------ in-process level
    def _local_level(self, d: int, visited_count: int, unwitnessed: set[str]) -> LevelOutcome:
        store = self.store
        if self._frontier is None or self._keys is None:
            self._frontier, self._keys = store.read_frontier(d, self.codec.decode)
        if self._visited is None:
            self._visited = self._seen_set(d)
        frontier, visited, keys = self._frontier, self._visited, self._keys
        exp = expand(self.model, frontier, skip=visited, unwitnessed=unwitnessed, checks=self.props)
        new = sorted_new(exp)
        cutoff = first_event_key(exp.events, new)
        limit = None
        idx = states_limit(self.max_states, visited_count, len(new))
        if idx is not None and (cutoff is None or new[idx].key < cutoff):  # a violation at the same key wins
            cutoff, limit = new[idx].key, "states"
        if cutoff is not None:
            counted = count_until(self.model, frontier, cutoff)
            before = sum(1 for s in new if s.key < cutoff)
            at = [s for s in new if s.key == cutoff]
            witnessed = {n for n, k in exp.witness_keys.items() if k <= cutoff}
            return LevelOutcome(0, 0, Counter(), set(), stop_from(before, at, exp.events, cutoff, visited_count, counted,
                                                                  witnessed, limit))
        new_keys = [step_key(keys[s.prank], s.aidx) for s in new]  # type: ignore[index]
        if new:
            self._write_local_level(d + 1, new, new_keys)
        visited.update(s.fingerprint for s in new)
        self._frontier = [(s.fingerprint, i, s.state) for i, s in enumerate(new)]
        self._keys = new_keys
        return LevelOutcome(len(new), exp.transitions, exp.coverage, exp.witnessed)

    def _seen_set(self, d: int) -> set[int] | SeenSet:
        """The visited set of an in-process level: every fingerprint in memory while no level ran on
        Spark; after one, the shards' seen files of the last Spark level (memory-mapped, not read
        whole) and the in-process levels since, so the driver does not gather the seen set."""
        store = self.store
        s = store.seen_level(d)
        if s is None:
            return set(store.fingerprints(range(d + 1)).to_pylist())
        return SeenSet(store.level_dir(s), self.parts(), store.fingerprints(range(s + 1, d + 1)).to_pylist())

    # ------------------------------------------------------------------ results
    def _totals(self, progress: dict[str, Any], levels: list[LevelStats]) -> tuple[int, Counter[str]]:
        transitions = sum(x.transitions for x in levels)
        coverage: Counter[str] = Counter()
        for x in levels:
            coverage.update(x.coverage)
        tail = progress.get("tail")
        if tail:
            transitions += tail["transitions"]
            coverage.update(tail["coverage"])
        return transitions, coverage

    def _finish(self, progress: dict[str, Any], levels: list[LevelStats], resumed_at: int | None,
                stop: Stop | None, *, depth: int, start: float, limit: str | None = None) -> ExploreResult:
        transitions, coverage = self._totals(progress, levels)
        witnessed = {n for x in levels for n in x.witnessed}
        if progress.get("tail"):
            witnessed |= set(progress["tail"]["witnessed"])
        if stop is not None:
            distinct = stop.counted_new
            transitions += stop.transitions
            coverage.update(stop.coverage)
            witnessed |= stop.witnessed
            limit = stop.limit or limit
            violations = []
            seen_props: set[str] = set()
            order = {p.name: i for i, p in enumerate(self.model.properties())}
            ranked = sorted(stop.violations, key=lambda v: (v["kind"] == "always", order.get(v["property"], 1 << 30)))
            for v in ranked:  # the Checker keeps the first violation of each property
                if v["property"] not in seen_props:
                    seen_props.add(v["property"])
                    violations.append(v)
        else:
            distinct = levels[-1].visited if levels else 0
            violations = []
        unwitnessed = sorted({p.name for p in self.props.sometimes} - witnessed)
        outcome = outcome_of(bool(violations), limit, bool(unwitnessed))
        seconds = self._elapsed(progress, start)
        progress["finished"] = True
        progress["result"] = {
            "outcome": outcome, "distinct_states": distinct, "depth": depth, "transitions": transitions,
            "coverage": dict(sorted(coverage.items())), "unwitnessed": unwitnessed, "limit_hit": limit,
            "violations": violations, "seconds": seconds,
        }
        self.store.write_progress(progress)
        return self._finished(progress, levels, resumed_at)

    def _interrupted(self, progress: dict[str, Any], levels: list[LevelStats], resumed_at: int | None,
                     depth: int, start: float) -> ExploreResult:
        transitions, coverage = self._totals(progress, levels)
        result = CheckResult(
            outcome="incomplete", distinct_states=levels[-1].visited, depth=depth,
            seconds=self._elapsed(progress, start), transitions=transitions,
            coverage=dict(sorted(coverage.items())), limit_hit="levels",
            unwitnessed=sorted(self._unwitnessed(progress)),
        )
        return ExploreResult(result, levels, self.store.out, sum(x.engine == "spark" for x in levels), resumed_at, False)

    def _finished(self, progress: dict[str, Any], levels: list[LevelStats], resumed_at: int | None) -> ExploreResult:
        r = progress["result"]
        depth = r["depth"]
        violations = [self.rebuild_violation(v, depth) for v in r["violations"]]
        result = CheckResult(
            outcome=r["outcome"], distinct_states=r["distinct_states"], depth=depth, seconds=r["seconds"],
            transitions=r["transitions"], violations=sorted(violations, key=lambda v: (v.length, v.property)),
            unwitnessed=list(r["unwitnessed"]), coverage=dict(r["coverage"]), limit_hit=r["limit_hit"],
        )
        return ExploreResult(result, levels, self.store.out, sum(x.engine == "spark" for x in levels), resumed_at, True)

    def rebuild_violation(self, v: dict[str, Any], depth: int) -> Violation:
        """Replay a violation descriptor found while expanding level ``depth`` into a trace."""
        model = self.model
        if v["parent"] is None:  # an initial state
            steps = replay_fingerprints(model, [v["fingerprint"]])
        elif v["kind"] == "always":
            steps = replay_fingerprints(model, self.store.chain_to(depth, v["parent"]) + [v["fingerprint"]])
        else:
            steps = replay_fingerprints(model, self.store.chain_to(depth, v["parent"]))
            last = steps[-1].state
            a = nth_action(model, last, v["aidx"])
            if v["fault"]:
                steps.append(Step(a, None))
            else:
                steps += replay(model, [a], last).steps[1:]
        return Violation(v["property"], v["kind"], steps, v["message"])
