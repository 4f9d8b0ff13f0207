"""``isrcheck spark traces``: a corpus of regression traces as a partitioned Parquet dataset.

One row per step of a trace (schema :data:`CORPUS_SCHEMA`, documented in specs/09-pipeline.md),
partitioned by ``generation``, ``model`` and ``mode``. Traces are either the shortest paths to the
deepest states of an exhaustive search (``exhaustive``) or seeded random walks (``random``, one seed
per trace derived from the run's seed). The paths are built in Spark tasks, each rebuilding the
model from its JSON spec; a corpus directory carries ``_isrcheck_corpus.json`` so that other jobs
can tell it from any other directory. Writing a (generation, model, mode) partition again replaces
it and leaves the others.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from isrcheck import __version__
from isrcheck.specs.inputs import Kind, check_json_depth, read_text

from .errors import PipelineError
from .fingerprint import SCHEME
from .paths import bfs_targets, derived_seed, path_rows, random_walk, replay_path
from .spec import ModelSpec, model_for

MARKER = "_isrcheck_corpus.json"
CORPUS_FORMAT = 1
PARTITION_COLUMNS = ("generation", "model", "mode")
MODES = ("exhaustive", "random")

CORPUS_SCHEMA = pa.schema([
    ("trace_id", pa.string()),
    ("model", pa.string()),
    ("config", pa.string()),
    ("generation", pa.string()),
    ("mode", pa.string()),
    ("seed", pa.int64()),
    ("tool_version", pa.string()),
    ("trace_length", pa.int32()),
    ("step", pa.int32()),
    ("action", pa.string()),
    ("action_text", pa.string()),
    ("args", pa.string()),
    ("observation", pa.string()),
    ("fingerprint", pa.int64()),
    ("broken", pa.list_(pa.string())),
    ("exercised", pa.list_(pa.string())),
    ("witnessed", pa.list_(pa.string())),
    ("fault", pa.string()),
])
CORPUS_DDL = ", ".join(
    f"{f.name} {'array<string>' if pa.types.is_list(f.type) else {'string': 'string', 'int64': 'bigint', 'int32': 'int'}[str(f.type)]}"
    for f in CORPUS_SCHEMA
)


@dataclass
class TracesResult:
    out: Path
    traces: int
    steps: int
    violating: int
    searched: int | None  # exhaustive: states searched
    complete: bool | None  # exhaustive: whether the search covered the whole state space
    seconds: float


def _meta(spec: ModelSpec, mode: str) -> dict[str, Any]:
    return {
        "model": spec.label,
        "config": json.dumps(spec.config, sort_keys=True, separators=(",", ":")),
        "generation": spec.generation,
        "mode": mode,
        "tool_version": __version__,
    }


def _rows_to_batch(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=CORPUS_SCHEMA)


def walk_task(spec_json: str, mode: str, max_depth: int, batches: Any) -> Any:
    """mapInArrow over task rows (index, seed, chain): the corpus rows of each trace."""
    model = model_for(spec_json)
    spec = ModelSpec.from_json(spec_json)
    meta = _meta(spec, mode)
    for batch in batches:
        rows: list[dict[str, Any]] = []
        for index, seed, chain in zip(batch.column("index").to_pylist(), batch.column("seed").to_pylist(),
                                      batch.column("chain").to_pylist()):
            if mode == "random":
                path = random_walk(model, seed, max_depth)
                trace_id = f"{spec.label}:random:{seed}"
            else:
                path = replay_path(model, chain)
                trace_id = f"{spec.label}:exhaustive:{index:06d}"
            rows.extend(path_rows(model, path, trace_id=trace_id, meta={**meta, "seed": seed}))
        if rows:
            yield _rows_to_batch(rows)


def write_marker(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text(json.dumps({
        "format": CORPUS_FORMAT, "tool_version": __version__, "fingerprint": SCHEME,
        "partitioned_by": list(PARTITION_COLUMNS), "schema": CORPUS_DDL,
    }, indent=1), encoding="utf-8")


def check_corpus(path: str | Path) -> Path:
    """``path`` as a corpus directory, or a one-line :class:`PipelineError`."""
    p = Path(path)
    if not p.exists():
        raise PipelineError(f"{path}: no such directory")
    if not p.is_dir():
        raise PipelineError(f"{path}: not a directory")
    marker = p / MARKER
    if not marker.exists():
        raise PipelineError(f"{path}: not a trace corpus (no {MARKER}; create one with `isrcheck spark traces`)")
    try:
        meta = json.loads(_marker_text(marker))
    except (OSError, ValueError) as e:
        raise PipelineError(f"{marker}: unreadable: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != CORPUS_FORMAT:
        raise PipelineError(f"{path}: a corpus of another format (expected format {CORPUS_FORMAT})")
    if meta.get("fingerprint") != SCHEME:
        raise PipelineError(f"{path}: fingerprints of scheme {meta.get('fingerprint')!r}, this Python uses {SCHEME!r}")
    return p


def generate(spark: Any, spec: ModelSpec, out: str | Path, *, count: int, mode: str = "random", seed: int = 0,
             max_depth: int = 50, max_states: int = 200_000, tasks: int | None = None) -> TracesResult:
    import time

    from pyspark.sql import functions as F

    if mode not in MODES:
        raise PipelineError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    if count < 1:
        raise PipelineError("--count must be at least 1")
    start = time.perf_counter()
    out_path = Path(out)
    if out_path.exists() and not out_path.is_dir():
        raise PipelineError(f"{out}: exists and is not a directory")
    if out_path.exists() and any(out_path.iterdir()) and not (out_path / MARKER).exists():
        raise PipelineError(f"{out}: directory is not empty and is not a trace corpus")
    searched = complete = None
    if mode == "random":
        work = [(i, derived_seed(seed, i), []) for i in range(count)]
    else:
        chains, searched, complete = bfs_targets(spec.build(), count, max_states)
        work = [(i, None, chain) for i, chain in enumerate(chains)]
    sc = spark.sparkContext
    n_tasks = tasks or max(1, min(len(work), 4 * sc.defaultParallelism))
    n_tasks = max(1, min(n_tasks, len(work)))
    task_df = spark.createDataFrame(work, "index int, seed long, chain array<long>").repartition(n_tasks)
    import functools

    rows = task_df.mapInArrow(functools.partial(walk_task, spec.to_json(), mode, max_depth), CORPUS_DDL)
    (rows.write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
     .partitionBy(*PARTITION_COLUMNS).parquet(str(out_path)))
    write_marker(out_path)
    mine = (spark.read.parquet(str(out_path))
            .filter((F.col("model") == spec.label) & (F.col("mode") == mode) & (F.col("generation") == spec.generation)))
    stats = mine.agg(F.countDistinct("trace_id").alias("traces"), F.count(F.lit(1)).alias("steps"),
                     F.countDistinct(F.when(F.size("broken") > 0, F.col("trace_id"))).alias("violating")).collect()[0]
    return TracesResult(out_path, int(stats["traces"]), int(stats["steps"]), int(stats["violating"]),
                        searched, complete, time.perf_counter() - start)


def _marker_text(marker: Path) -> str:
    """The corpus marker's text, through the bounded reader (regular file, size and nesting capped)."""
    text = read_text(marker, Kind.PIPELINE)
    check_json_depth(text, str(marker))
    return text
