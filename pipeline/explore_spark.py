"""One exploration level on Spark.

The frontier (level ``d``) is read from Parquet and spread over partitions; each Python worker
rebuilds the model from its :class:`~.spec.ModelSpec` JSON (once per process), decodes its states,
and runs :func:`isrcheck.engine.explore.expand` per Arrow batch (``mapInArrow``). The workers emit one table of
rows of several kinds (:data:`EXPANSION_SCHEMA`): successors (first occurrence per batch, with the
always-properties they break), violation events, coverage counts and witnessed sometimes-properties
(with the first key of each). The expansion is cached and read by two jobs: one aggregation that
finds the level's counts and first violation (:func:`_aux`), and, when the run goes on, the write:
Spark keeps each successor fingerprint at its smallest key (``groupBy``), drops the states of
earlier levels (a broadcast set in the workers while it is small enough, else an anti-join with
the stored levels), orders the new states by key (their ranks) and writes level ``d + 1``.
"""
from __future__ import annotations

import contextlib
import functools
import math
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from isrcheck.model.statecodec import kafka_state_codec

from isrcheck.engine.core import Checks
from isrcheck.engine.explore import FAULT, TRANSITION, Event, Successor, count_until, expand

from .levels import LevelJob, LevelOutcome, gc_paused, states_limit, stop_from
from .spec import model_for

KIND_SUCCESSOR = 0
KIND_TRANSITION = 1
KIND_FAULT = 2
KIND_COVERAGE = 3
KIND_WITNESS = 4
KIND_BROKEN = 5  # driver-side tag of successors breaking an always-property (see _aux)

EXPANSION_DDL = ("kind int, fingerprint long, parent long, prank long, aidx int, action string, "
                 "state binary, broken array<string>, prop string, message string, count long")
EXPANSION_SCHEMA = pa.schema([
    ("kind", pa.int32()), ("fingerprint", pa.int64()), ("parent", pa.int64()), ("prank", pa.int64()),
    ("aidx", pa.int32()), ("action", pa.string()), ("state", pa.binary()), ("broken", pa.list_(pa.string())),
    ("prop", pa.string()), ("message", pa.string()), ("count", pa.int64()),
])
COUNT_DDL = "action string, count long"
COUNT_SCHEMA = pa.schema([("action", pa.string()), ("count", pa.int64())])

#: below this many states a frontier is expanded in the partitions it is read in (no shuffle)
SMALL_FRONTIER = 2_000
#: below this many frontier states the new level is ranked in one sorted partition (no sampling job)
SINGLE_SORT = 50_000

_SKIP_SETS: dict[str, frozenset[int]] = {}


def _skip_set(skip: tuple[str, Any] | None) -> frozenset[int]:
    """The broadcast fingerprints of earlier levels as a set, built once per worker process and
    level (``skip`` is a token naming the broadcast, and the broadcast)."""
    if skip is None:
        return frozenset()
    token, bc = skip
    s = _SKIP_SETS.get(token)
    if s is None:
        _SKIP_SETS.clear()
        s = _SKIP_SETS[token] = frozenset(bc.value.tolist())
    return s


def _expansion_batch(successors: list[Successor], events: list[Event], coverage: Counter[str],
                     witness_keys: dict[str, tuple[int, int]], encode: Any) -> pa.RecordBatch:
    cols: dict[str, list[Any]] = {name: [] for name in EXPANSION_SCHEMA.names}

    def row(kind: int, fingerprint: Any = None, parent: Any = None, prank: Any = None, aidx: Any = None,
            action: Any = None, state: Any = None, broken: Any = None, prop: Any = None, message: Any = None,
            count: Any = None) -> None:
        for k, v in (("kind", kind), ("fingerprint", fingerprint), ("parent", parent), ("prank", prank),
                     ("aidx", aidx), ("action", action), ("state", state), ("broken", broken), ("prop", prop),
                     ("message", message), ("count", count)):
            cols[k].append(v)

    for s in successors:
        row(KIND_SUCCESSOR, s.fingerprint, s.parent, s.prank, s.aidx, s.action, encode(s.state), s.broken)
    for e in events:
        row(KIND_FAULT if e.kind == FAULT else KIND_TRANSITION, None, e.parent, e.prank, e.aidx, e.action,
            prop=e.prop, message=e.message, count=1)
    for name, n in coverage.items():
        row(KIND_COVERAGE, action=name, count=n)
    for name, (prank, aidx) in witness_keys.items():
        row(KIND_WITNESS, prank=prank, aidx=aidx, prop=name, count=1)
    return pa.RecordBatch.from_pydict(cols, schema=EXPANSION_SCHEMA)


def expand_arrow(spec_json: str, unwitnessed: list[str], skip_bc: tuple[str, Any] | None, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The worker side of a level: ``mapInArrow`` over (fingerprint, rank, state) batches."""
    model = model_for(spec_json)
    codec = kafka_state_codec()
    checks = Checks.of(model)
    skip = _skip_set(skip_bc)
    decode = codec.decode
    for batch in batches:
        with gc_paused():
            fps = batch.column("fingerprint").to_pylist()
            ranks = batch.column("rank").to_pylist()
            blobs = batch.column("state").to_pylist()
            rows = [(f, r, decode(b)) for f, r, b in zip(fps, ranks, blobs)]
            exp = expand(model, rows, skip=skip, unwitnessed=unwitnessed, checks=checks)
            out = _expansion_batch(list(exp.successors.values()), exp.events, exp.coverage, exp.witness_keys,
                                   codec.encode)
        yield out


def count_arrow(spec_json: str, cutoff: tuple[int, int], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Coverage of the steps up to ``cutoff`` (see :func:`isrcheck.engine.explore.count_until`)."""
    model = model_for(spec_json)
    decode = kafka_state_codec().decode
    total: Counter[str] = Counter()
    for batch in batches:
        with gc_paused():
            rows = [(f, r, decode(b)) for f, r, b in zip(batch.column("fingerprint").to_pylist(),
                                                         batch.column("rank").to_pylist(),
                                                         batch.column("state").to_pylist())]
            total.update(count_until(model, rows, cutoff)[1])
    yield pa.RecordBatch.from_pydict({"action": list(total), "count": list(total.values())}, schema=COUNT_SCHEMA)


def _key_lt(F: Any, key: tuple[int, int]) -> Any:
    return (F.col("prank") < F.lit(key[0])) | ((F.col("prank") == F.lit(key[0])) & (F.col("aidx") < F.lit(key[1])))


def _key_eq(F: Any, key: tuple[int, int]) -> Any:
    return (F.col("prank") == F.lit(key[0])) & (F.col("aidx") == F.lit(key[1]))


def _aux(exp: Any, F: Any) -> list[Any]:
    """One job over the expansion: coverage counts, the first key of each witness, of each event
    kind, and of a successor that breaks an always-property (tagged :data:`KIND_BROKEN`). Such a
    successor is always new (a stored state that broke a property would have stopped the run), and
    the smallest key among its rows is where it is kept, so its key is the Checker's."""
    tag = F.when(F.col("kind") == KIND_SUCCESSOR, F.lit(KIND_BROKEN)).otherwise(F.col("kind"))
    return (exp.filter((F.col("kind") > 0) | ((F.col("kind") == KIND_SUCCESSOR) & (F.size("broken") > 0)))
            .groupBy(tag.alias("kind"), "prop", F.when(F.col("kind") == KIND_COVERAGE, F.col("action")).alias("name"))
            .agg(F.sum("count").alias("n"), F.min(F.struct("prank", "aidx")).alias("first"))
            .collect())


def _min_key(a: tuple[int, int] | None, b: tuple[int, int] | None) -> tuple[int, int] | None:
    return b if a is None else a if b is None else min(a, b)


def spark_level(ex: LevelJob, d: int, frontier_n: int, visited_n: int, unwitnessed: set[str]) -> LevelOutcome:
    """Compute level ``d + 1`` from level ``d`` on Spark (see the module docstring).

    A level that goes on costs two Spark jobs: one over the expansion (cached) for its counts and
    its first violation, and the write of the new states, ranked by key (one sorted partition for
    a frontier below :data:`SINGLE_SORT`, else a range-partitioned ``orderBy``). The number written
    comes from the Parquet footers, read on the driver. Only a level where the run stops needs more.
    """
    spark = ex.session.get()
    sc = spark.sparkContext
    sc.setJobGroup(level_group(d + 1, ex.run_id), f"isrcheck explore: level {d + 1} from {frontier_n:,} states")
    try:
        with level_conf(spark, frontier_n, ex.partition_rows):
            return _spark_level(spark, ex, d, frontier_n, visited_n, unwitnessed)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]


def level_group(depth: int, run_id: str) -> str:
    """The Spark job group of the jobs computing level ``depth`` in the explorer ``run_id`` (visible
    in the Spark UI)."""
    return f"isrcheck-{run_id}-level-{depth:05d}"


@contextlib.contextmanager
def level_conf(spark: Any, frontier_n: int, partition_rows: int) -> Iterator[None]:
    """Shuffle settings for one level, restored afterwards (the session may be shared).

    Adaptive query execution is off: with it, every shuffle stage is a job of its own with a
    re-planning round trip: six jobs instead of two for a small level, twice its fixed cost. Shuffles get one
    partition for a small frontier and ``max(2 x cores, frontier / partition_rows)`` otherwise."""
    parts = 1 if frontier_n < SMALL_FRONTIER else max(2 * spark.sparkContext.defaultParallelism,
                                                      math.ceil(frontier_n / partition_rows))
    want = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(parts)}
    saved = {k: spark.conf.get(k, None) for k in want}
    for k, v in want.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _spark_level(spark: Any, ex: LevelJob, d: int, frontier_n: int, visited_n: int,
                 unwitnessed: set[str]) -> LevelOutcome:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from .store import LEVEL_DDL, LEVEL_SCHEMA

    sc = spark.sparkContext
    store = ex.store
    frontier = spark.read.schema(LEVEL_DDL).parquet(str(store.level_dir(d))).select("fingerprint", "rank", "state")
    if frontier_n >= SMALL_FRONTIER:  # spread the work; a small frontier is not worth a shuffle
        frontier = frontier.repartition(max(2 * sc.defaultParallelism, math.ceil(frontier_n / ex.partition_rows)))
    bc = None
    if visited_n <= ex.broadcast_limit:
        bc = sc.broadcast(store.fingerprints(range(d + 1)).to_numpy())
    skip = None if bc is None else (uuid.uuid4().hex, bc)
    fn = functools.partial(expand_arrow, ex.spec_json, sorted(unwitnessed), skip)
    exp = frontier.mapInArrow(fn, EXPANSION_DDL).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        coverage: Counter[str] = Counter()
        witness_keys: dict[str, tuple[int, int]] = {}
        cutoff: tuple[int, int] | None = None
        for r in _aux(exp, F):
            key = None if r["first"]["prank"] is None else (int(r["first"]["prank"]), int(r["first"]["aidx"]))
            if r["kind"] == KIND_COVERAGE:
                coverage[r["name"]] += int(r["n"])
            elif r["kind"] == KIND_WITNESS:
                witness_keys[r["prop"]] = key  # type: ignore[assignment]
            else:  # an event, or a successor breaking an always-property
                cutoff = _min_key(cutoff, key)
        transitions = sum(coverage.values())

        best = (exp.filter(F.col("kind") == KIND_SUCCESSOR)
                .groupBy("fingerprint")
                .agg(F.min(F.struct("prank", "aidx", "parent", "action", "state", "broken")).alias("m"))
                .select("fingerprint", "m.*"))
        if bc is None:
            visited = spark.read.schema(LEVEL_DDL).parquet(*[str(store.level_dir(i)) for i in range(d + 1)])
            best = best.join(visited.select("fingerprint"), "fingerprint", "left_anti")
        limit = None
        idx = None
        source = best  # where the stop is worked out when there is one
        if cutoff is None or ex.max_states is not None:
            ranked = (best.repartition(1).sortWithinPartitions("prank", "aidx") if frontier_n < SINGLE_SORT
                      else best.orderBy("prank", "aidx"))
            new = (ranked.withColumn("rank", F.monotonically_increasing_id())
                   .withColumn("depth", F.lit(d + 1).cast("int"))
                   .select(*LEVEL_SCHEMA.names))
            staging = str(store.staging_dir(d + 1))
            new.write.mode("overwrite").parquet(staging)
            count = store.count_staging(d + 1)
            idx = states_limit(ex.max_states, visited_n, count)
            if idx is not None:
                source = spark.read.schema(LEVEL_DDL).parquet(staging)
                k = source.select("prank", "aidx").orderBy("prank", "aidx").offset(idx).limit(1).collect()[0]
                key = (int(k["prank"]), int(k["aidx"]))
                if cutoff is None or key < cutoff:  # a violation at the same key wins
                    cutoff, limit = key, "states"
            if cutoff is None:
                store.commit_staging(d + 1)
                return LevelOutcome(count, transitions, coverage, set(witness_keys))

        # The Checker stops at `cutoff`: what had it counted by then?
        before = idx if limit else source.filter(_key_lt(F, cutoff)).count()
        at = [Successor(int(r["fingerprint"]), int(r["parent"]), int(r["prank"]), int(r["aidx"]), r["action"], None,
                        list(r["broken"] or []))
              for r in source.filter(_key_eq(F, cutoff)).collect()]
        events = [Event(FAULT if r["kind"] == KIND_FAULT else TRANSITION, r["prop"], r["message"] or "",
                        int(r["parent"]), int(r["prank"]), int(r["aidx"]), r["action"])
                  for r in ([] if limit else
                            exp.filter((F.col("kind").isin(KIND_TRANSITION, KIND_FAULT)) & _key_eq(F, cutoff)).collect())]
        counted = (frontier.filter(F.col("rank") <= F.lit(cutoff[0]))
                   .mapInArrow(functools.partial(count_arrow, ex.spec_json, cutoff), COUNT_DDL)
                   .groupBy("action").agg(F.sum("count").alias("n")).collect())
        cov = Counter({r["action"]: int(r["n"]) for r in counted})
        store.discard_staging(d + 1)
        witnessed = {n for n, k in witness_keys.items() if k <= cutoff}
        stop = stop_from(before, at, events, cutoff, visited_n, (sum(cov.values()), cov), witnessed, limit)
        return LevelOutcome(0, 0, Counter(), set(), stop)
    finally:
        exp.unpersist()
        if bc is not None:
            bc.unpersist()
