"""Resident levels: a stretch of wide levels as one Spark job, each task keeping its states in
memory from one level to the next.

Why: a level as a job of its own (:mod:`.explore_spark`) reads its frontier from files and decodes
it, asks the seen files which successors are old, encodes and hands the rest to their shard's
reduce task, and pays Spark's scheduling of two stages. On the 6,994,032-state configuration of
specs/09-pipeline.md that was about 41 us of a core per frontier state and 1.4 s per level, where
the parallel Checker spends 11 us. A resident task works as a parallel Checker's worker does: its
successors stay the objects the model made (sharing every unchanged part with their parent), the
seen set is in memory, and what passes between tasks is a fingerprint and a key per candidate.

How (``T`` tasks of one barrier-mode job, which Spark starts together; task ``t``):

1. At the start, it reads the frontier shards ``p`` with ``p % T == t`` of the last committed
   level, decoded once, and every fingerprint seen so far (the last seen files and the levels
   since) into one set: each task holds the whole seen set.
2. Per level, it expands its states in key order, dropping the successors the seen set holds, and
   writes its candidates (fingerprint and key, :mod:`.shards`) with a summary (transitions,
   coverage, the smallest key of an event, of a broken state and of each witness) to the stretch
   directory; then it waits for every task's.
3. From all the candidates, every task finds the same level: the new states are the distinct
   fingerprints, each won by its smallest key, and a task drops its candidates that another task
   reached at a smaller key. The totals decide, identically in every task, whether the stretch
   goes on. A violation, or the ``--max-states`` state, inside the level ends it *before* the
   level is written: the driver then computes that level again as one job of
   :mod:`.explore_spark`, which finds where the Checker stops in it. A level narrower than the
   threshold, or the last one (nothing new), ends it after.
4. It writes the states it won as ``task-TTTTT.parquet`` into the level's staging directory (the
   level it knows will be the stretch's last as ``part-PPPPP-TTTTT.parquet``, a file per shard
   ``P``). Task 0 commits the level (the rename, then ``progress.json``) once every task has
   written, after its own next expansion so as not to wait for them; a killed run resumes from the
   last committed level, as after any other level.
5. When the stretch ends after such a last level, the tasks write the shards' seen files into it
   (shard 0's last: its file is the mark that they are all there), for the levels after it.

Tasks wait for each other through files in the stretch directory, polled every millisecond or so:
Spark's own ``barrier()`` answers in steps of a second here, which 30 levels would turn into a
minute. A task that fails leaves ``failed-T`` there, and the others stop instead of waiting. Spark
would run a failed barrier stage again from its start; a task refuses to start twice, so the job
fails and the run is continued with ``--resume``, from the last committed level.
"""
from __future__ import annotations

import json
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from isrcheck.engine.core import Checks
from isrcheck.engine.explore import Successor, expand
from isrcheck.engine.parentmap import new_fingerprint_set
from isrcheck.model.statecodec import kafka_state_codec

from .errors import PipelineError
from .levels import LevelStats, gc_paused
from .shards import (LEVEL_SCHEMA, level_dataset, read_shard, replace_file, seen_path, shard_of, sort_by_key,
                     step_key, temporary_name, write_parquet, write_seen)
from .spec import model_for
from .store import RunStore

#: how long a waiting task sleeps between looks at the stretch directory, at most (it starts at a
#: tenth of a millisecond and doubles: a level's tasks usually finish within milliseconds of each other)
POLL_MAX_SECONDS = 0.005

#: how often the driver reads progress.json for the levels the stretch has committed (its level lines)
DRIVER_POLL_SECONDS = 0.25

CAND_SCHEMA = pa.schema([("fingerprint", pa.int64()), ("key", pa.binary())])

END_STOP = "stop"  # a violation or the --max-states state inside the next level: computed per level
END_NARROW = "narrow"  # the last level is narrower than the threshold: the next runs in-process
END_DONE = "done"  # the last expansion found nothing new: the search is complete
END_DEPTH = "depth"  # --max-depth or the levels this run may compute (--stop-after-levels)


@dataclass
class StretchContext:
    """What every task of a stretch needs (small, pickled once into the job's closure); where it
    starts, each task reads from ``progress.json``: the last committed level."""

    spec_json: str
    out: str
    tasks: int
    parts: int
    threshold: int
    last_depth: int  # the deepest level the stretch may commit (--max-depth, the run's level budget)
    max_states: int | None
    name: str  # the stretch's directory (:func:`stretch_dir`): new for every stretch
    first_jobs: int = 1  # the Spark jobs counted on the stretch's first level (LevelStats.jobs)


@dataclass
class StretchEnd:
    """How a stretch ended, and what its last expansion counted when it found nothing new."""

    end: str
    depth: int  # the last committed level
    levels: int  # levels the stretch committed
    transitions: int = 0  # END_DONE: the last expansion's
    coverage: dict[str, int] = field(default_factory=dict)
    witnessed: list[str] = field(default_factory=list)


class StretchFailed(PipelineError):
    """Another task of the stretch failed: this one stops instead of waiting for it."""


# ---------------------------------------------------------------------------- files of a stretch
def stretch_dir(store: RunStore, name: str) -> Path:
    """Where the tasks of the stretch ``name`` meet (removed when it ends; not a level's name, so
    ``--resume`` removes what a killed run left)."""
    return store.levels_dir / f"stretch-{name}"


def _cand_file(sd: Path, depth: int, t: int) -> Path:
    return sd / f"{depth:05d}-cand-{t:05d}.arrow"


def _summary_file(sd: Path, depth: int, t: int) -> Path:
    return sd / f"{depth:05d}-summary-{t:05d}.json"


def _mark(sd: Path, name: str) -> None:
    final = sd / name
    tmp = temporary_name(final)
    tmp.write_bytes(b"")
    replace_file(tmp, final)


def wait_for(sd: Path, paths: list[Path]) -> None:
    """Return once every file of ``paths`` exists; :class:`StretchFailed` as soon as a task of the
    stretch has left its failure there."""
    delay = 0.0001
    looks = 0
    while True:
        if all(p.exists() for p in paths):
            return
        looks += 1
        if looks % 16 == 0:
            for f in sd.glob("failed-*"):
                raise StretchFailed(f"a task of the resident stretch failed: "
                                    f"{f.read_text(encoding='utf-8', errors='replace').strip()}")
        time.sleep(delay)
        delay = min(delay * 2, POLL_MAX_SECONDS)


def _write_candidates(sd: Path, depth: int, t: int, fps: np.ndarray, keys: list[bytes], summary: dict[str, Any]) -> None:
    """Task ``t``'s candidates for level ``depth`` and its summary; the candidates file is renamed
    into place last, so its presence says both are there."""
    s = _summary_file(sd, depth, t)
    tmp = temporary_name(s)
    tmp.write_text(json.dumps(summary), encoding="utf-8")
    replace_file(tmp, s)
    final = _cand_file(sd, depth, t)
    tmp = temporary_name(final)
    table = pa.table({"fingerprint": pa.array(fps, type=pa.int64()), "key": pa.array(keys, type=pa.binary())},
                     schema=CAND_SCHEMA)
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, CAND_SCHEMA) as w:
        w.write_table(table)
    replace_file(tmp, final)


def _read_candidates(path: Path) -> pa.Table:
    with pa.memory_map(str(path), "r") as source:
        return pa.ipc.open_file(source).read_all()


# ---------------------------------------------------------------------------- one level's totals
def _min_key(a: str | None, b: str | None) -> str | None:
    return b if a is None or (b is not None and bytes.fromhex(b) < bytes.fromhex(a)) else a


@dataclass
class LevelTotals:
    """A level as every task finds it from all the summaries (the same in each)."""

    transitions: int = 0
    coverage: Counter[str] = field(default_factory=Counter)
    event_key: str | None = None
    broken_key: str | None = None
    witnessed: set[str] = field(default_factory=set)

    def add(self, s: dict[str, Any]) -> None:
        self.transitions += s["transitions"]
        self.coverage.update(s["coverage"])
        self.event_key = _min_key(self.event_key, s["event_key"])
        self.broken_key = _min_key(self.broken_key, s["broken_key"])
        self.witnessed.update(s["witnessed"])


def losers(own_fps: np.ndarray, own_keys: list[bytes], others: list[pa.Table]) -> np.ndarray:
    """Which of this task's candidates another task reached at a smaller key (a boolean mask): the
    same state, found from a state the other task holds, earlier in the Checker's order."""
    lose = np.zeros(len(own_fps), dtype=bool)
    for table in others:
        if table.num_rows == 0 or len(own_fps) == 0:
            continue
        theirs = table.column("fingerprint").to_numpy()
        _, mine, at = np.intersect1d(own_fps, theirs, assume_unique=True, return_indices=True)
        if len(mine) == 0:
            continue
        their_keys = table.column("key").take(pa.array(at)).to_pylist()
        for i, k in zip(mine.tolist(), their_keys):
            if k < own_keys[i]:
                lose[i] = True
    return lose


# ---------------------------------------------------------------------------- a task
class _Task:
    """Task ``t`` of a stretch: its frontier, the whole seen set, and the loop over levels."""

    def __init__(self, ctx: StretchContext, t: int) -> None:
        self.ctx, self.t = ctx, t
        self.store = RunStore(ctx.out)
        progress = self.store.read_progress()
        self.levels = progress["levels"]
        self.start = self.levels[-1]["depth"]
        self.sd = stretch_dir(self.store, ctx.name)
        self.sd.mkdir(parents=True, exist_ok=True)
        self.model = model_for(ctx.spec_json)
        self.checks = Checks.of(self.model)
        self.codec = kafka_state_codec()
        witnessed = {n for lv in self.levels for n in lv.get("witnessed", [])}
        self.pending = {p.name for p in self.checks.sometimes} - witnessed
        self.last_by_shard = False  # whether the last level written is in files by shard (it gets the seen files)
        self.unsettled: LevelStats | None = None  # task 0: the level written and not yet committed

    def begin(self) -> None:
        """Mark this task started; refuse a second start. Spark runs a failed barrier stage again
        from the start, but the files of the first attempt are there: a task of the retry stops,
        and the run resumes from its last committed level (``--resume``), as after a kill."""
        started = self.sd / f"started-{self.t:05d}"
        if started.exists():
            raise StretchFailed("the resident stretch was started again after a failure of one of its tasks; "
                                "continue the run with --resume")
        _mark(self.sd, started.name)

    def run(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        with gc_paused():
            rows, keys = self._frontier()
            seen, chunks = self._seen()
            end = self._levels(rows, keys, seen, chunks, t0)
            self._settle()
            self._finish(end, chunks)
        return asdict(end)

    def _frontier(self) -> tuple[list[tuple[int, int, Any]], list[bytes]]:
        """This task's shards of the last committed level, in key order, decoded."""
        ctx, d = self.ctx, self.start
        tables = [read_shard(self.store.level_dir(d), p, ctx.parts, ["fingerprint", "key", "state"])
                  for p in range(self.t, ctx.parts, ctx.tasks)]
        table = sort_by_key(pa.concat_tables(tables)) if tables else LEVEL_SCHEMA.empty_table()
        decode = self.codec.decode
        fps = table.column("fingerprint").to_pylist()
        states = table.column("state").to_pylist()
        return [(f, r, decode(s)) for r, (f, s) in enumerate(zip(fps, states))], table.column("key").to_pylist()

    def _seen(self) -> tuple[Any, list[np.ndarray]]:
        """Every fingerprint of the run so far: the last seen files and the levels since (as
        :func:`.shards.seen_shard` reads them, for every shard at once)."""
        store, d = self.store, self.start
        s = store.seen_level(d)
        chunks: list[np.ndarray] = []
        if s is not None:
            chunks += [np.load(seen_path(store.level_dir(s), p)) for p in range(self.ctx.parts)]
        for x in range((s + 1) if s is not None else 0, d + 1):
            chunks.append(level_dataset(store.level_dir(x)).to_table(columns=["fingerprint"])
                          .column("fingerprint").to_numpy())
        seen = new_fingerprint_set()
        for c in chunks:
            _add_all(seen, c)
        return seen, chunks

    def _levels(self, rows: list[tuple[int, int, Any]], keys: list[bytes], seen: Any, chunks: list[np.ndarray],
                t0: float) -> StretchEnd:
        ctx, sd, t = self.ctx, self.sd, self.t
        d = self.start
        visited = self.levels[-1]["visited"]
        frontier_n = self.levels[-1]["new"]
        committed = 0
        while True:
            if d >= ctx.last_depth:
                return StretchEnd(END_DEPTH, d, committed)
            exp = expand(self.model, _released(rows), skip=seen, unwitnessed=self.pending, checks=self.checks)
            self._settle()
            own = list(exp.successors.values())
            own_keys = [step_key(keys[s.prank], s.aidx) for s in own]  # type: ignore[index]
            own_fps = np.fromiter((s.fingerprint for s in own), dtype=np.int64, count=len(own))
            _write_candidates(sd, d + 1, t, own_fps, own_keys, self._summary(exp, own, own_keys, keys))
            wait_for(sd, [_cand_file(sd, d + 1, u) for u in range(ctx.tasks)])
            totals = LevelTotals()
            others: list[pa.Table] = []
            level_fps = [own_fps]
            for u in range(ctx.tasks):
                totals.add(json.loads(_summary_file(sd, d + 1, u).read_text(encoding="utf-8")))
                if u != t:
                    other = _read_candidates(_cand_file(sd, d + 1, u))
                    others.append(other)
                    level_fps.append(other.column("fingerprint").to_numpy())
            new_fps = np.unique(np.concatenate(level_fps))
            new_n = len(new_fps)
            if totals.event_key is not None or totals.broken_key is not None or (
                    ctx.max_states is not None and new_n and visited + new_n >= ctx.max_states):
                return StretchEnd(END_STOP, d, committed)
            if new_n == 0:
                return StretchEnd(END_DONE, d, committed, totals.transitions, dict(totals.coverage),
                                  sorted(totals.witnessed))
            lose = losers(own_fps, own_keys, others)
            # already in key order: expand() keeps each successor where it first met it, and it
            # meets them in key order (its states by rank, each one's actions in order)
            won = [(x, k) for x, k, lost in zip(own, own_keys, lose.tolist()) if not lost]
            last = new_n < ctx.threshold or d + 1 >= ctx.last_depth
            self._write_level(d + 1, won, by_shard=last)
            self.last_by_shard = last
            _add_all(seen, new_fps)
            chunks.append(new_fps)
            self.pending -= totals.witnessed
            visited += new_n
            if t == 0:  # committed once every task has written it: after the next expansion, or at the end
                now = time.perf_counter()
                self.unsettled = LevelStats(d + 1, frontier_n, new_n, visited, totals.transitions, "spark", now - t0,
                                            dict(sorted(totals.coverage.items())), sorted(totals.witnessed),
                                            ctx.first_jobs if committed == 0 else 0, resident=True)
                t0 = now
            committed += 1
            d += 1
            frontier_n = new_n
            rows = [(x.fingerprint, r, x.state) for r, (x, _k) in enumerate(won)]
            keys = [k for _x, k in won]
            del exp, own, won  # the next level's states are held by rows alone (released one by one)
            if new_n < ctx.threshold:
                return StretchEnd(END_NARROW, d, committed)

    def _summary(self, exp: Any, own: list[Successor], own_keys: list[bytes], keys: list[bytes]) -> dict[str, Any]:
        events = [step_key(keys[e.prank], e.aidx) for e in exp.events]
        broken = [k for x, k in zip(own, own_keys) if x.broken]
        return {"transitions": exp.transitions, "coverage": dict(exp.coverage),
                "event_key": min(events).hex() if events else None,
                "broken_key": min(broken).hex() if broken else None,
                "witnessed": sorted(exp.witness_keys)}

    def _write_level(self, depth: int, won: list[tuple[Successor, bytes]], by_shard: bool) -> None:
        """The states this task won into the level's staging directory, then its mark that it has
        written them: one file (``task-TTTTT.parquet``), or one per shard when the level will be
        the stretch's last, which gets the seen files (a level with seen files is read by shard)."""
        ctx = self.ctx
        staging = self.store.staging_dir(depth)
        staging.mkdir(parents=True, exist_ok=True)
        encode = self.codec.encode
        n = len(won)
        fps = np.fromiter((x.fingerprint for x, _k in won), dtype=np.int64, count=n)
        table = pa.Table.from_pydict({
            "fingerprint": fps, "parent": [x.parent for x, _k in won], "prank": pa.nulls(n, pa.int64()),
            "aidx": [x.aidx for x, _k in won], "action": [x.action for x, _k in won],
            "depth": pa.array(np.full(n, depth, dtype=np.int32)), "rank": pa.nulls(n, pa.int64()),
            "state": [encode(x.state) for x, _k in won],
            # none: a state that breaks a property ends the stretch before its level is written
            "broken": pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], pa.string())),
            "key": [k for _x, k in won]}, schema=LEVEL_SCHEMA)
        if by_shard:
            dest = shard_of(fps, ctx.parts)
            for q in np.unique(dest).tolist():
                write_parquet(table.filter(pa.array(dest == q)), shard_file(staging, q, self.t))
        else:
            write_parquet(table, staging / f"task-{self.t:05d}.parquet")
        _mark(self.sd, f"{depth:05d}-written-{self.t:05d}")

    def _settle(self) -> None:
        """Task 0: commit the level it wrote last, once every task has written its part. Done after
        the next level's expansion, not at once: the other tasks have written theirs by then, and
        task 0 does not hold the level up waiting for them (they would then wait for it)."""
        stats = self.unsettled
        if stats is None:
            return
        sd = self.sd
        wait_for(sd, [sd / f"{stats.depth:05d}-written-{u:05d}" for u in range(1, self.ctx.tasks)])
        self._commit(stats)
        self.unsettled = None

    def _commit(self, stats: LevelStats) -> None:
        """Task 0: level ``stats.depth`` is complete; commit it as the driver commits a level."""
        store = self.store
        store.commit_staging(stats.depth)
        progress = store.read_progress()
        progress["levels"].append(asdict(stats))
        store.write_progress(progress)
        _mark(self.sd, _committed_mark(self.sd, stats.depth).name)

    def _finish(self, end: StretchEnd, chunks: list[np.ndarray]) -> None:
        """The seen files of the stretch's last committed level (when it committed one), shard 0's
        last; then task 0 removes the stretch directory."""
        ctx, sd, t = self.ctx, self.sd, self.t
        if end.levels and self.last_by_shard:
            wait_for(sd, [_committed_mark(sd, end.depth)])
            level = self.store.level_dir(end.depth)
            everything = np.concatenate(chunks)
            where = shard_of(everything, ctx.parts)

            def shard(p: int) -> np.ndarray:
                mine = everything[where == p]
                mine.sort()
                return mine

            for p in range(t, ctx.parts, ctx.tasks):
                if p != 0:
                    write_seen(shard(p), seen_path(level, p))
            _mark(sd, f"seen-{t:05d}")
            if t == 0:
                wait_for(sd, [sd / f"seen-{u:05d}" for u in range(ctx.tasks)])
                write_seen(shard(0), seen_path(level, 0))
        if t == 0:
            _mark(sd, "done")


def _released(rows: list[Any]) -> Iterator[Any]:
    """The frontier's rows, each let go as the next is asked for: a state is freed right after its
    expansion, while it is in the cache (as the parallel workers free theirs), not with the level."""
    for i in range(len(rows)):
        row = rows[i]
        rows[i] = None
        yield row


def _committed_mark(sd: Path, depth: int) -> Path:
    return sd / f"{depth:05d}-committed"


def _add_all(seen: Any, fps: np.ndarray) -> None:
    """Add an int64 array to the seen set: the C set straight from its buffer, a dict (the pure
    build's set) one by one."""
    if isinstance(seen, dict):
        seen.update(dict.fromkeys(fps.tolist()))
    else:
        seen.update(np.ascontiguousarray(fps, dtype=np.int64).tobytes())


def shard_file(level_dir: str | Path, p: int, t: int) -> Path:
    """The states of shard ``p`` that task ``t`` of a resident stretch won (:func:`.shards.shard_files`)."""
    return Path(level_dir) / f"part-{p:05d}-{t:05d}.parquet"


def stretch_task(ctx: StretchContext, index: int, items: Iterator[Any]) -> Iterator[dict[str, Any]]:
    """The body of task ``index`` (a barrier task: every task of the job runs at once)."""
    from pyspark import BarrierTaskContext

    for _ in items:
        pass
    BarrierTaskContext.get()  # a barrier task: Spark starts the stretch's tasks together, or not at all
    task = _Task(ctx, index)
    try:
        task.begin()
        end = task.run()
    except BaseException as e:
        if not isinstance(e, StretchFailed):  # the first cause only: not a peer's stop, nor a refused restart
            try:
                final = task.sd / f"failed-{index:05d}"
                tmp = temporary_name(final)
                tmp.write_text(f"task {index}: {type(e).__name__}: {e}"[:2000], encoding="utf-8")
                replace_file(tmp, final)
            except OSError:
                pass
        raise
    if index == 0:
        yield end


# ---------------------------------------------------------------------------- the driver
def run_stretch(session: Any, ctx: StretchContext, store: RunStore, job_group: str,
                on_level: Callable[[LevelStats], None] | None) -> StretchEnd:
    """Run a stretch as one barrier job, calling ``on_level`` for each level it commits as they
    come (the driver reads ``progress.json``); the committed levels are in ``progress.json``."""
    sc = session.sparkContext
    known = len(store.read_progress()["levels"])
    result: dict[str, Any] = {}

    def job() -> None:
        try:
            sc.setJobGroup(job_group, f"isrcheck explore: resident levels after level {known - 1}")
            rdd = sc.parallelize(range(ctx.tasks), ctx.tasks).barrier()
            result["ends"] = rdd.mapPartitionsWithIndex(lambda i, it: stretch_task(ctx, i, it)).collect()
        except BaseException as e:  # noqa: BLE001 - handed to the driver's thread below
            result["error"] = e

    worker = threading.Thread(target=job, name="isrcheck-resident-stretch", daemon=True)
    worker.start()
    while True:
        worker.join(DRIVER_POLL_SECONDS)
        done = not worker.is_alive()
        levels = store.read_progress()["levels"]
        for x in levels[known:]:
            if on_level is not None:
                on_level(LevelStats(**x))
        known = len(levels)
        if done:
            break
    sd = stretch_dir(store, ctx.name)
    failures = sorted(sd.glob("failed-*")) if "error" in result else []
    causes = [" ".join(f.read_text(encoding="utf-8", errors="replace").split()) for f in failures]  # one line each
    shutil.rmtree(sd, ignore_errors=True)
    if "error" in result:
        if causes:  # the task that failed first said why; Spark's own report is of its last attempt
            raise PipelineError(f"a task of the resident stretch failed ({causes[0]}); the levels it committed are "
                                f"kept: continue with --resume (--per-level runs a job per level)") from None
        raise result["error"]
    ends = result["ends"]
    if len(ends) != 1:
        raise PipelineError(f"a resident stretch returned {len(ends)} results, not one")
    return StretchEnd(**ends[0])


__all__ = ["StretchContext", "StretchEnd", "StretchFailed", "LevelTotals", "losers", "run_stretch", "shard_file",
           "stretch_dir", "stretch_task", "wait_for", "END_DEPTH", "END_DONE", "END_NARROW", "END_STOP"]
