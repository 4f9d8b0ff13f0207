"""One exploration level on Spark: one job, nothing but counts and violations back to the driver.

The states are sharded by fingerprint (:mod:`.shards`). The job has two stages:

1. map task ``p`` reads shard ``p`` of level ``d`` (its own file, or its rows of an in-process
   level's file), sorts it by key, rebuilds the model from the :class:`~.spec.ModelSpec` JSON (once
   per Python worker), runs :func:`isrcheck.engine.explore.expand` per batch and writes each
   distinct successor the last Spark level's seen files do not hold (fingerprint, parent, key,
   action, encoded state, the always-properties it breaks) to the file of its fingerprint's shard
   (``levels/NNNNN.maps/PPPPP-QQQQQ.arrow``, Arrow IPC), then shard ``p``'s summary: the coverage
   counts, the events (faulting or transition-breaking steps) at the task's smallest event key,
   and the smallest key of a witness of each unwitnessed sometimes-property. Spark's shuffle
   carries only which files each reduce task reads, and the summary to reduce task ``p``; a
   resumed run does not expand again a shard whose summary a killed run wrote;
2. reduce task ``p`` keeps each fingerprint at its smallest key, drops the fingerprints of shard
   ``p``'s seen set, writes the new states as ``part-p.parquet`` and the grown seen set as
   ``_seen-p.npy`` into the staging directory of level ``d + 1``, and returns one small record:
   how many new states, the new state breaking an always-property at the smallest key (if any),
   and the map summary it received.

The driver merges the ``parts`` records, and commits the staging directory when the level has no
violation and no ``--max-states`` stop; the counterexample's parent pointers are the levels'
``parent`` columns, walked back on the driver one shard file per level (:meth:`.store.RunStore.chain_to`).
Only a level where the run stops needs more jobs: the count of new states before the stop's key,
the new state at that key, the coverage up to it (:func:`count_until` per shard) and, for
``--max-states``, the key of the n-th new state (a sort of the keys alone).
"""
from __future__ import annotations

import functools
import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from isrcheck import __version__
from isrcheck.engine.core import Checks
from isrcheck.engine.explore import FAULT, count_until, expand
from isrcheck.model.statecodec import kafka_state_codec

from .levels import LevelJob, LevelOutcome, Stop, descriptor, gc_paused, states_limit
from .shards import (contains_sorted, has_seen, part_path, read_shard, replace_file, seen_path, seen_shard, shard_of,
                     sort_by_key, step_key, temporary_name, write_parquet, write_seen)
from .spec import model_for

#: below this many frontier states a level runs as one map and one reduce task, each over every
#: shard: a task costs a fixed 0.1-0.7 s (more on a loaded machine), more than the work of a small level
SMALL_FRONTIER = 2_000

#: frontier states expanded at once in a map task (bounds a worker's memory; the garbage collector
#: is paused per batch, as the Checker pauses it)
BATCH_ROWS = 4_000

#: the map side's file format (``NNNNN.maps/``: per frontier shard, a file per destination shard and
#: a summary); a resumed run recomputes what another format wrote
MAPS_FORMAT = 1

SHUFFLE_SCHEMA = pa.schema([
    ("fingerprint", pa.int64()), ("parent", pa.int64()), ("key", pa.binary()), ("aidx", pa.int32()),
    ("action", pa.string()), ("state", pa.binary()), ("broken", pa.list_(pa.string())),
])


@dataclass
class ShardContext:
    """What every task of a level needs (small, pickled once into the job's closure)."""

    spec_json: str
    depth: int  # the level expanded; the job writes level depth + 1
    parts: int
    frontier_dir: str
    staging_dir: str
    seen_dir: str | None  # the last level directory with seen files, or None
    local_dirs: list[str]  # in-process levels after seen_dir, up to depth (their states are seen too)
    unwitnessed: list[str]
    tasks: int = 0  # tasks per stage; task t handles shards t, t + tasks, ... (0: one per shard)

    def shards_of(self, t: int) -> range:
        return range(t, self.parts, self.tasks or self.parts)

    @property
    def maps_dir(self) -> Path:
        """Where the map side writes its output: ``levels/NNNNN.maps`` beside the staging directory."""
        return Path(self.staging_dir).with_suffix(".maps")


@dataclass
class MapSummary:
    """A map task's counts: coverage, the events at its smallest event key, its witnesses' keys."""

    transitions: int = 0
    coverage: Counter[str] = field(default_factory=Counter)
    event_key: bytes | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    witness_keys: dict[str, bytes] = field(default_factory=dict)


def _identity(k: int) -> int:
    return k


def _frontier(ctx: ShardContext, p: int) -> pa.Table:
    return sort_by_key(read_shard(ctx.frontier_dir, p, ctx.parts, ["fingerprint", "key", "state"]))


def map_file(maps_dir: Path, p: int, q: int) -> Path:
    """Frontier shard ``p``'s successors that belong to shard ``q`` (Arrow IPC stream)."""
    return maps_dir / f"{p:05d}-{q:05d}.arrow"


def summary_file(maps_dir: Path, p: int) -> Path:
    """Frontier shard ``p``'s summary, written after its map files: its presence says they are all there."""
    return maps_dir / f"{p:05d}.summary.json"


def _summary_json(summary: MapSummary, dests: list[int]) -> dict[str, Any]:
    return {"format": MAPS_FORMAT, "dests": dests, "transitions": summary.transitions,
            "coverage": dict(summary.coverage), "event_key": None if summary.event_key is None else summary.event_key.hex(),
            "events": summary.events, "witness_keys": {k: v.hex() for k, v in summary.witness_keys.items()}}


def read_summary(maps_dir: Path, p: int) -> tuple[MapSummary, list[int]] | None:
    """Shard ``p``'s finished map output (its summary and the shards it has files for), or None when
    a map task has not finished it (or what is there is not ours: it is computed again)."""
    try:
        d = json.loads(summary_file(maps_dir, p).read_text(encoding="utf-8"))
        if d.get("format") != MAPS_FORMAT:
            return None
        dests = [int(q) for q in d["dests"]]
        if not all(map_file(maps_dir, p, q).is_file() for q in dests):
            return None
        summary = MapSummary(int(d["transitions"]), Counter({str(k): int(v) for k, v in d["coverage"].items()}),
                             None if d["event_key"] is None else bytes.fromhex(d["event_key"]), list(d["events"]),
                             {str(k): bytes.fromhex(v) for k, v in d["witness_keys"].items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return summary, dests


def _read_map_file(path: Path) -> pa.Table:
    with pa.OSFile(str(path), "rb") as f:
        return pa.ipc.open_stream(f).read_all()


def _drain(items: Iterator[Any]) -> None:
    """Read a task's input to its end: PySpark reuses a Python worker only when the task consumed
    its whole input, and a new worker re-imports isrcheck and rebuilds the model (seconds in the
    pure build: a level of eight tasks cost 15 s before this, under 1 s after)."""
    for _ in items:
        pass


def expand_task(ctx: ShardContext, t: int, items: Iterator[Any]) -> Iterator[tuple[int, tuple[str, Any]]]:
    """Map task ``t``: its shards of the frontier, one after the other."""
    _drain(items)
    for p in ctx.shards_of(t):
        yield from expand_shard(ctx, p)


def reduce_task(ctx: ShardContext, t: int, items: Iterator[tuple[int, tuple[str, Any]]]) -> Iterator[dict[str, Any]]:
    """Reduce task ``t``: what the map tasks sent to each of its shards, shard by shard."""
    groups: dict[int, list[tuple[str, Any]]] = {}
    for p, item in items:
        groups.setdefault(p, []).append(item)
    for p in ctx.shards_of(t):
        yield from reduce_shard(ctx, p, groups.pop(p, []))


def count_task(ctx: ShardContext, cutoff: bytes, t: int, items: Iterator[Any]) -> Iterator[Counter[str]]:
    _drain(items)
    for p in ctx.shards_of(t):
        yield from count_shard(ctx, cutoff, p)


def _seen_among(ctx: ShardContext) -> Callable[[list[int]], list[int]] | None:
    """For a map task: which of a batch's successors are states the last Spark level's seen files
    hold (every shard's file, memory-mapped: only the pages a lookup touches are read). Most of a
    wide level's successors are old; dropped here, they are not judged, encoded or shuffled. The
    reduce side still drops what this misses (the states of in-process levels since)."""
    if ctx.seen_dir is None or not has_seen(ctx.seen_dir):
        return None
    files = [seen_path(ctx.seen_dir, q) for q in range(ctx.parts)]
    seen = [np.load(f, mmap_mode="r") if f.exists() else np.empty(0, dtype=np.int64) for f in files]
    parts = ctx.parts

    def among(fps: list[int]) -> list[int]:
        a = np.fromiter(fps, dtype=np.int64, count=len(fps))
        dest = shard_of(a, parts)
        old = np.zeros(len(a), dtype=bool)
        for q in np.unique(dest):
            mine = dest == q
            old[mine] = contains_sorted(seen[q], a[mine])
        return a[old].tolist()

    return among


def expand_shard(ctx: ShardContext, p: int) -> Iterator[tuple[int, tuple[str, Any]]]:
    """The map side: expand shard ``p`` of the frontier into one file per shard its successors
    belong to, then its summary; to Spark, a record per file (for that shard's reduce task) and the
    summary. A shard whose files a killed run finished (``--resume``) is not expanded again."""
    maps = ctx.maps_dir
    done = read_summary(maps, p)
    if done is None:
        done = _write_shard(ctx, p, maps)
    summary, dests = done
    for q in dests:
        yield q, ("rows", p)
    yield p, ("summary", summary)


def _write_shard(ctx: ShardContext, p: int, maps: Path) -> tuple[MapSummary, list[int]]:
    writers: dict[int, tuple[Any, Any, Path]] = {}
    try:
        summary = _expand_into(ctx, p, maps, writers)
    except BaseException:  # nothing half-written stays behind (a retried task starts the shard again)
        for w, sink, tmp in writers.values():
            sink.close()
            tmp.unlink(missing_ok=True)
        raise
    for w, sink, _tmp in writers.values():
        w.close()
        sink.close()
    dests = sorted(writers)
    for q in dests:
        replace_file(writers[q][2], map_file(maps, p, q))
    final = summary_file(maps, p)
    tmp = temporary_name(final)
    tmp.write_text(json.dumps(_summary_json(summary, dests)), encoding="utf-8")
    replace_file(tmp, final)
    return summary, dests


def _expand_into(ctx: ShardContext, p: int, maps: Path, writers: dict[int, tuple[Any, Any, Path]]) -> MapSummary:
    """Expand shard ``p``; every batch's successors appended to the file of their shard (``writers``)."""
    model = model_for(ctx.spec_json)
    codec = kafka_state_codec()
    checks = Checks.of(model)
    decode, encode = codec.decode, codec.encode
    frontier = _frontier(ctx, p)
    fps = frontier.column("fingerprint").to_pylist()
    keys = frontier.column("key").to_pylist()
    blobs = frontier.column("state")
    summary = MapSummary()
    pending = list(ctx.unwitnessed)
    seen_among = _seen_among(ctx)
    # The collector stays paused for the whole shard, as the Checker pauses it for its search:
    # re-enabled after every batch, its first collection walked the batch's surviving states
    # (about 40 ms a batch, an eighth of a wide level's map time).
    with gc_paused():
        for lo in range(0, len(fps), BATCH_ROWS):
            hi = min(lo + BATCH_ROWS, len(fps))
            states = blobs.slice(lo, hi - lo).to_pylist()
            rows = [(fps[i], i, decode(states[i - lo])) for i in range(lo, hi)]
            exp = expand(model, rows, unwitnessed=pending, checks=checks, seen_among=seen_among)
            summary.transitions += exp.transitions
            summary.coverage.update(exp.coverage)
            for e in exp.events:
                k = step_key(keys[e.prank], e.aidx)
                if summary.event_key is None or k < summary.event_key:
                    summary.event_key, summary.events = k, []
                if k == summary.event_key:
                    summary.events.append({"kind": e.kind, "prop": e.prop, "message": e.message, "parent": e.parent,
                                           "aidx": e.aidx, "action": e.action})
            for name, (prank, aidx) in exp.witness_keys.items():
                k = step_key(keys[prank], aidx)
                if name not in summary.witness_keys or k < summary.witness_keys[name]:
                    summary.witness_keys[name] = k
            succ = list(exp.successors.values())
            if not succ:
                continue
            table = pa.Table.from_pydict({
                "fingerprint": [s.fingerprint for s in succ], "parent": [s.parent for s in succ],
                "key": [step_key(keys[s.prank], s.aidx) for s in succ], "aidx": [s.aidx for s in succ],
                "action": [s.action for s in succ], "state": [encode(s.state) for s in succ],
                "broken": [s.broken for s in succ]}, schema=SHUFFLE_SCHEMA)
            dest = shard_of(table.column("fingerprint").to_numpy(), ctx.parts)
            for q in np.unique(dest).tolist():
                if q not in writers:
                    final = map_file(maps, p, q)
                    tmp = temporary_name(final)
                    sink = pa.OSFile(str(tmp), "wb")
                    writers[q] = (pa.ipc.new_stream(sink, SHUFFLE_SCHEMA), sink, tmp)
                writers[q][0].write_table(table.filter(pa.array(dest == q)))
    return summary


def reduce_shard(ctx: ShardContext, p: int, items: list[tuple[str, Any]]) -> Iterator[dict[str, Any]]:
    """The reduce side: shard ``p``'s new states and seen set, written; one record returned."""
    from .store import LEVEL_SCHEMA

    tables: list[pa.Table] = []
    summaries: list[MapSummary] = []
    for kind, payload in items:
        if kind == "rows":  # payload: the frontier shard whose map file for p holds the rows
            tables.append(_read_map_file(map_file(ctx.maps_dir, payload, p)))
        else:
            summaries.append(payload)
    table = pa.concat_tables(tables) if tables else SHUFFLE_SCHEMA.empty_table()
    if table.num_rows:  # each fingerprint at its smallest key
        table = table.take(pc.sort_indices(table, sort_keys=[("fingerprint", "ascending"), ("key", "ascending")]))
        fps = table.column("fingerprint").to_numpy()
        first = np.ones(len(fps), dtype=bool)
        first[1:] = fps[1:] != fps[:-1]
        table = table.filter(pa.array(first))
    seen = seen_shard(ctx.local_dirs, ctx.seen_dir, p, ctx.parts)
    fps = table.column("fingerprint").to_numpy()
    new = table.filter(pa.array(~contains_sorted(seen, fps)))
    n = new.num_rows
    out = pa.Table.from_pydict({
        "fingerprint": new.column("fingerprint"), "parent": new.column("parent"),
        "prank": pa.nulls(n, pa.int64()), "aidx": new.column("aidx"), "action": new.column("action"),
        "depth": pa.array(np.full(n, ctx.depth + 1, dtype=np.int32)), "rank": pa.nulls(n, pa.int64()),
        "state": new.column("state"), "broken": new.column("broken"), "key": new.column("key"),
    }, schema=LEVEL_SCHEMA)
    staging = Path(ctx.staging_dir)
    write_parquet(out, part_path(staging, p))
    grown = np.concatenate([seen, new.column("fingerprint").to_numpy()])
    grown.sort()
    write_seen(grown, seen_path(staging, p))
    broken = None
    has_broken = pc.greater(pc.list_value_length(new.column("broken")), 0) if n else None
    if n and pc.any(has_broken).as_py():
        b = sort_by_key(new.filter(has_broken)).slice(0, 1).to_pylist()[0]
        broken = {k: b[k] for k in ("key", "fingerprint", "parent", "aidx", "action", "broken")}
    yield {"shard": p, "new": n, "seen": int(len(grown)), "broken": broken, "maps": summaries}


def count_shard(ctx: ShardContext, cutoff: bytes, p: int) -> Iterator[Counter[str]]:
    """Coverage of the steps of shard ``p`` that the Checker takes before it stops at ``cutoff``."""
    model = model_for(ctx.spec_json)
    decode = kafka_state_codec().decode
    frontier = _frontier(ctx, p)
    parent_key, aidx = cutoff[:-2], int.from_bytes(cutoff[-2:], "big")
    keys = frontier.column("key").to_pylist()
    below = sum(1 for k in keys if k < parent_key)
    at = below < len(keys) and keys[below] == parent_key
    local = (below, aidx) if at else (below - 1, 1 << 30)  # every step of the states before it
    with gc_paused():
        rows = [(f, i, decode(s)) for i, (f, s) in enumerate(zip(frontier.column("fingerprint").to_pylist(),
                                                                  frontier.column("state").to_pylist()[:below + 1]))]
        yield count_until(model, rows, local)[1]


def level_group(depth: int, run_id: str) -> str:
    """The Spark job group of the jobs computing level ``depth`` in the explorer ``run_id`` (visible
    in the Spark UI, counted by the tests and the benchmark)."""
    return f"isrcheck-{run_id}-level-{depth:05d}"


def spark_level(ex: LevelJob, d: int, frontier_n: int, visited_n: int, unwitnessed: set[str]) -> LevelOutcome:
    """Compute level ``d + 1`` from level ``d`` on Spark (see the module docstring)."""
    spark = ex.session.get()
    sc = spark.sparkContext
    sc.setJobGroup(level_group(d + 1, ex.run_id), f"isrcheck explore: level {d + 1} from {frontier_n:,} states")
    try:
        return _spark_level(spark, ex, d, frontier_n, visited_n, unwitnessed)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]


def _context(ex: LevelJob, d: int, frontier_n: int, unwitnessed: set[str]) -> ShardContext:
    store = ex.store
    seen_level = store.seen_level(d)
    staging = store.staging_dir(d + 1)
    store.discard_staging(d + 1)
    staging.mkdir(parents=True)
    parts = ex.parts()
    ctx = ShardContext(
        spec_json=ex.spec_json, depth=d, parts=parts, tasks=1 if frontier_n < SMALL_FRONTIER else parts, frontier_dir=str(store.level_dir(d)),
        staging_dir=str(staging), seen_dir=None if seen_level is None else str(store.level_dir(seen_level)),
        local_dirs=[str(store.level_dir(i)) for i in range((seen_level + 1) if seen_level is not None else 0, d + 1)],
        unwitnessed=sorted(unwitnessed))
    _open_maps(ctx)
    return ctx


def _maps_identity(ctx: ShardContext) -> dict[str, Any]:
    """What a level's map output depends on besides the committed levels it reads: kept beside it,
    so that a resumed run reuses it only for the same level of the same run."""
    return {"format": MAPS_FORMAT, "tool_version": __version__, "depth": ctx.depth, "parts": ctx.parts,
            "unwitnessed": ctx.unwitnessed,
            "spec": hashlib.sha256(ctx.spec_json.encode("utf-8")).hexdigest(),
            "seen_dir": None if ctx.seen_dir is None else Path(ctx.seen_dir).name,
            "local_dirs": [Path(x).name for x in ctx.local_dirs]}


def _open_maps(ctx: ShardContext) -> None:
    """The level's map directory: kept when a killed run of the same level left it (its finished
    shards are not expanded again), else made empty."""
    maps = ctx.maps_dir
    marker = maps / "_level.json"
    want = _maps_identity(ctx)
    try:
        if json.loads(marker.read_text(encoding="utf-8")) == want:
            return
    except (OSError, ValueError):
        pass
    shutil.rmtree(maps, ignore_errors=True)
    maps.mkdir(parents=True)
    marker.write_text(json.dumps(want), encoding="utf-8")


def finished_map_shards(ctx: ShardContext) -> int:
    """How many frontier shards' map output is already there (reused by this level's job)."""
    return sum(read_summary(ctx.maps_dir, p) is not None for p in range(ctx.parts))


def _spark_level(spark: Any, ex: LevelJob, d: int, frontier_n: int, visited_n: int,
                 unwitnessed: set[str]) -> LevelOutcome:
    sc = spark.sparkContext
    ctx = _context(ex, d, frontier_n, unwitnessed)
    reused = finished_map_shards(ctx)
    tasks = ctx.tasks
    records = (sc.parallelize(range(tasks), tasks)
               .mapPartitionsWithIndex(functools.partial(expand_task, ctx))
               .partitionBy(tasks, _identity)
               .mapPartitionsWithIndex(functools.partial(reduce_task, ctx))
               .collect())
    count = sum(r["new"] for r in records)
    coverage: Counter[str] = Counter()
    witness_keys: dict[str, bytes] = {}
    event_key: bytes | None = None
    events: list[dict[str, Any]] = []
    broken: dict[str, Any] | None = None
    for r in records:
        b = r["broken"]
        if b is not None and (broken is None or b["key"] < broken["key"]):
            broken = b
        for m in r["maps"]:
            coverage.update(m.coverage)
            for name, k in m.witness_keys.items():
                if name not in witness_keys or k < witness_keys[name]:
                    witness_keys[name] = k
            if m.event_key is not None and (event_key is None or m.event_key < event_key):
                event_key, events = m.event_key, list(m.events)
    transitions = sum(coverage.values())
    candidates = [k for k in (event_key, None if broken is None else broken["key"]) if k is not None]
    cutoff = min(candidates) if candidates else None
    store = ex.store
    limit = None
    idx = states_limit(ex.max_states, visited_n, count)
    staged = lambda: spark.read.parquet(ctx.staging_dir)  # noqa: E731 - read only when the run stops here
    if idx is not None:  # the key of the idx-th new state: a sort of the keys alone
        k = bytes(staged().select("key").orderBy("key").offset(idx).limit(1).collect()[0]["key"])
        if cutoff is None or k < cutoff:  # a violation at the same key wins
            cutoff, limit = k, "states"
    if cutoff is None:
        store.commit_staging(d + 1)
        shutil.rmtree(ctx.maps_dir, ignore_errors=True)  # after the commit: a kill before it reuses them
        return LevelOutcome(count, transitions, coverage, set(witness_keys), reused_map_shards=reused)
    outcome = _stop(spark, ex, ctx, cutoff, limit, idx, events if event_key == cutoff else [], visited_n,
                    witness_keys, staged)
    shutil.rmtree(ctx.maps_dir, ignore_errors=True)
    outcome.reused_map_shards = reused
    return outcome


def _stop(spark: Any, ex: LevelJob, ctx: ShardContext, cutoff: bytes, limit: str | None, idx: int | None,
          events: list[dict[str, Any]], visited_n: int, witness_keys: dict[str, bytes], staged: Any) -> LevelOutcome:
    """The Checker stops inside this level at ``cutoff``: what had it counted by then?"""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    lit = F.lit(bytearray(cutoff))
    before = idx if limit else staged().filter(F.col("key") < lit).count()
    at = [r.asDict() for r in staged().filter(F.col("key") == lit).collect()]
    cov: Counter[str] = Counter()
    for c in (sc.parallelize(range(ctx.tasks), ctx.tasks)
              .mapPartitionsWithIndex(functools.partial(count_task, ctx, cutoff)).collect()):
        cov.update(c)
    ex.store.discard_staging(ctx.depth + 1)
    violations = []
    if not limit:
        for e in events:
            violations.append(descriptor(e["prop"], "transition", e["message"], e["parent"], aidx=e["aidx"],
                                         fault=e["kind"] == FAULT))
    for s in at:
        for name in s["broken"] or []:
            violations.append(descriptor(name, "always", "", s["parent"], fingerprint=s["fingerprint"]))
    witnessed = {n for n, k in witness_keys.items() if k <= cutoff}
    stop = Stop((-1, -1), visited_n + int(before) + len(at), violations, sum(cov.values()), cov, witnessed, limit)
    return LevelOutcome(0, 0, Counter(), set(), stop)



