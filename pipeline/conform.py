"""``isrcheck spark conform CORPUS``: replay every trace of a corpus on the implementation, in parallel.

The corpus (``isrcheck spark traces``) stores, per trace, the configuration, every action and the
model's observation after it. The traces are split into batches (one Spark job each, so progress can
be shown between them); inside a job the rows are spread over partitions by ``trace_id`` and sorted
by step, and each Python worker replays its traces one by one with the pure conformance code
(:func:`isrcheck.conformance.replay.conform_actions`, imported inside the task): the implementation's
step-mode simulator takes every action, and its observation is compared with a fresh replay of the
model after every step. The stored observations are checked too: a step where the implementation
agrees with the model but the corpus does not makes the trace ``stale`` (the corpus was written by
another model), never a divergence.

A planted bug reaches the workers by name: ``mutant`` is ``MODULE:ATTR`` (a module importable on the
workers, or a path to a ``.py`` file) naming a context manager that patches the implementation; each
task enters it around its replays and leaves it on exit, so a reused Python worker is clean again.

One result row per trace (:data:`RESULT_SCHEMA`): the verdict (``conforms``, ``diverges``,
``stale``, ``skipped`` when the implementation refuses the configuration, ``invalid`` for a trace
whose rows are not a valid trace), and for a divergence the first diverging step, its action, the
reason and the differing fields as text.
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from .errors import PipelineError

VERDICTS = ("conforms", "diverges", "stale", "skipped", "invalid")

RESULT_SCHEMA = pa.schema([
    ("trace_id", pa.string()),
    ("model", pa.string()),
    ("generation", pa.string()),
    ("mode", pa.string()),
    ("verdict", pa.string()),
    ("step", pa.int32()),        # the first diverging (or stale) step; null when the trace conforms
    ("action", pa.string()),     # that step's action text ("(initial state)" at step 0)
    ("reason", pa.string()),     # observation, impl-refused, impl-failed, impl-invalid, model-refused, stale
    ("message", pa.string()),
    ("diff", pa.string()),       # the differing fields: "path: model X, implementation Y; ..."
    ("steps", pa.int32()),       # actions replayed (a trace's faulting last action is not replayed)
    ("matched", pa.int32()),     # steps that matched, the initial state included
    ("seconds", pa.float64()),
    ("mutant", pa.string()),
])
RESULT_DDL = ("trace_id string, model string, generation string, mode string, verdict string, step int, "
              "action string, reason string, message string, diff string, steps int, matched int, "
              "seconds double, mutant string")
_INPUT = ("trace_id", "model", "generation", "mode", "config", "step", "action", "args", "observation")


# ---------------------------------------------------------------------------- planted bugs
def _import_module(module: str) -> Any:
    # the one loader of user code (invariants/variants.py), here for a planted bug instead of a variant
    from isrcheck.invariants.variants import import_user_module

    return import_user_module(module, prefix="isrcheck_mutant", error=PipelineError, what="--mutant:")


def load_mutant(text: str) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """``MODULE:ATTR`` -> the context-manager factory it names (one-line :class:`PipelineError`)."""
    module, sep, attr = text.rpartition(":")
    if not sep or not module or not attr:
        raise PipelineError(f"--mutant expects MODULE:ATTR (a context manager patching the implementation), got {text!r}")
    try:
        mod = _import_module(module)
    except PipelineError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's module: say why it failed, in one line
        raise PipelineError(f"--mutant: cannot import {module!r}: {type(e).__name__}: {' '.join(str(e).split())}") from None
    obj = getattr(mod, attr, None)
    if obj is None or not callable(obj):
        raise PipelineError(f"--mutant: {module!r} has no callable {attr!r}")
    return obj  # type: ignore[no-any-return]


def resolve_mutant(text: str | None) -> str | None:
    """Check ``text`` on the driver and make a file path absolute, so that the workers find it."""
    if text is None:
        return None
    load_mutant(text)
    from isrcheck.invariants.variants import is_file_path

    module, _, attr = text.rpartition(":")
    if is_file_path(module):
        module = str(Path(module).resolve())
    return f"{module}:{attr}"


# ---------------------------------------------------------------------------- one trace (pure)
def _json(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), sort_keys=True, default=str)


def diff_text(differences: list[Any]) -> str:
    parts = []
    for d in differences:
        model = "(absent)" if d.missing == "expected" else _json(d.expected)
        impl = "(absent)" if d.missing == "actual" else _json(d.actual)
        parts.append(f"{d.path}: model {model}, implementation {impl}")
    return "; ".join(parts)


def replay_trace(rows: list[dict[str, Any]], seed: int = 0, mutant: str | None = None,
                 variant: tuple[str, str] | None = None) -> dict[str, Any]:
    """Replay one trace (its corpus rows, in step order) on the implementation; one result row.
    ``variant`` (``(MODULE:ATTR, search path)``, :func:`isrcheck.invariants.variants.resolve_variant`) is the
    model side's protocol."""
    from isrcheck.conformance.replay import conform_actions
    from isrcheck.model.config import ConfigError, from_mapping
    from isrcheck.specs.actions import VocabularyError, action_text, check_action

    first = rows[0]
    out: dict[str, Any] = {k: first[k] for k in ("trace_id", "model", "generation", "mode")}
    out.update(verdict="conforms", step=None, action=None, reason=None, message=None, diff=None, steps=0, matched=0,
               seconds=0.0, mutant=mutant)
    start = time.perf_counter()
    try:
        if [r["step"] for r in rows] != list(range(len(rows))):
            raise ValueError("its steps are not 0, 1, 2, ...")
        cfg = from_mapping(json.loads(first["config"]))
        stored = []
        actions = []
        for r in rows:
            if r["observation"] is None:  # after a faulting action: the model has no state to compare
                break
            stored.append(json.loads(r["observation"]))
            if r["step"] > 0:
                actions.append(check_action({"name": r["action"], "args": json.loads(r["args"])},
                                            cfg.brokers, cfg.partitions))
    except (ValueError, TypeError, KeyError, ConfigError, VocabularyError) as e:
        out.update(verdict="invalid", message=" ".join(str(e).split()))
        return out
    stale: list[int] = []

    def observer(i: int, obs: dict[str, Any], _acked: list[list[int]]) -> None:
        # here the implementation agrees with the model; the corpus must agree with both
        if not stale and json.loads(_json(obs)) != stored[i]:
            stale.append(i)

    protocol = None
    if variant is not None:
        from isrcheck.invariants.variants import load_variant

        protocol = load_variant(variant[0], search_path=variant[1])(cfg)
    r = conform_actions(cfg, actions, label=first["trace_id"], against="model", seed=seed, observer=observer,
                        protocol=protocol)
    out.update(steps=r.steps, matched=r.matched, seconds=time.perf_counter() - start)
    if r.skipped:
        out.update(verdict="skipped", message=r.skipped)
    elif r.divergence is not None:
        d = r.divergence
        out.update(verdict="diverges", step=d.index, action=d.action_text, reason=d.reason, message=d.message,
                   diff=diff_text(d.differences))
    elif stale:
        i = stale[0]
        out.update(verdict="stale", step=i, action="(initial state)" if i == 0 else action_text(*actions[i - 1]),
                   reason="stale", message="the corpus's stored observation is not the model's (regenerate the corpus)")
    return out


# ---------------------------------------------------------------------------- the Spark task
def _grouped(batches: Iterator[pa.RecordBatch]) -> Iterator[list[dict[str, Any]]]:
    """Rows sorted by (trace_id, step), possibly spanning batches -> one list of rows per trace."""
    current: list[dict[str, Any]] = []
    for batch in batches:
        for row in batch.to_pylist():
            if current and row["trace_id"] != current[0]["trace_id"]:
                yield current
                current = []
            current.append(row)
    if current:
        yield current


def conform_task(seed: int, mutant: str | None, batches: Iterator[pa.RecordBatch],
                 variant: tuple[str, str] | None = None) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` over corpus rows (one partition): the result rows of its traces."""
    patch = load_mutant(mutant)() if mutant else contextlib.nullcontext()
    out: list[dict[str, Any]] = []
    with patch:
        for rows in _grouped(batches):
            out.append(replay_trace(rows, seed, mutant, variant))
            if len(out) >= 256:
                yield pa.RecordBatch.from_pylist(out, schema=RESULT_SCHEMA)
                out = []
    if out:
        yield pa.RecordBatch.from_pylist(out, schema=RESULT_SCHEMA)


# ---------------------------------------------------------------------------- the driver
@dataclass
class BatchProgress:
    batch: int  # 1-based
    batches: int
    traces: int  # in this batch
    verdicts: dict[str, int]  # in this batch
    steps: int
    seconds: float


@dataclass
class ConformRun:
    corpus: Path
    out: Path | None
    traces: int
    steps: int
    verdicts: dict[str, int]
    groups: list[dict[str, Any]]  # per (model, generation, mode): traces, verdicts, steps, seconds
    divergences: list[dict[str, Any]]  # result rows that are not "conforms" (first `keep`, by trace id)
    batches: list[BatchProgress] = field(default_factory=list)
    seconds: float = 0.0
    mutant: str | None = None

    @property
    def ok(self) -> bool:
        v = self.verdicts
        return v.get("conforms", 0) > 0 and not any(v.get(k, 0) for k in ("diverges", "stale", "invalid"))


def trace_ids(corpus: Path, models: tuple[str, ...] = (), generations: tuple[str, ...] = (),
              modes: tuple[str, ...] = ()) -> list[str]:
    """The corpus's trace ids (sorted), read on the driver with pyarrow (only the ``trace_id`` column)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    partitioning = ds.partitioning(pa.schema([(c, pa.string()) for c in ("generation", "model", "mode")]),
                                   flavor="hive")
    dataset = ds.dataset(str(corpus), format="parquet", partitioning=partitioning, ignore_prefixes=[".", "_"])
    flt = None
    for col, values in (("model", models), ("generation", generations), ("mode", modes)):
        if values:
            f = pc.field(col).isin(list(values))
            flt = f if flt is None else flt & f
    table = dataset.to_table(columns=["trace_id"], filter=flt)
    return sorted(pc.unique(table.column("trace_id")).to_pylist())


def run_conform(spark: Any, corpus: str | Path, *, out: str | Path | None = None, seed: int = 0,
                mutant: str | None = None, batch_size: int = 5000, models: tuple[str, ...] = (),
                generations: tuple[str, ...] = (), modes: tuple[str, ...] = (), keep: int = 20,
                on_batch: Callable[[BatchProgress], None] | None = None, variant: str | None = None) -> ConformRun:
    """Replay the traces of ``corpus`` (optionally only some models, generations, modes) in batches of
    ``batch_size`` traces; results as Parquet under ``out/results/`` when ``out`` is given."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    start = time.perf_counter()
    corpus = Path(corpus)
    mutant = resolve_mutant(mutant)
    from isrcheck.invariants.variants import resolve_variant

    shipped = resolve_variant(variant)  # checked here; loaded again on the workers
    ids = trace_ids(corpus, models, generations, modes)
    if not ids:
        raise PipelineError(f"{corpus}: no traces" + (" match the filters" if models or generations or modes else ""))
    out_path = None if out is None else Path(out)
    if out_path is not None:
        if out_path.exists() and (not out_path.is_dir() or any(out_path.iterdir())):
            raise PipelineError(f"{out}: exists and is not an empty directory")
        (out_path / "results").mkdir(parents=True, exist_ok=True)
    n_batches = max(1, math.ceil(len(ids) / batch_size))
    sc = spark.sparkContext
    rows = spark.read.parquet(str(corpus)).select(*_INPUT)
    for col, values in (("model", models), ("generation", generations), ("mode", modes)):
        if values:
            rows = rows.filter(F.col(col).isin(list(values)))
    fn = functools.partial(conform_task, seed, mutant, variant=shipped)
    verdicts: Counter[str] = Counter()
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    divergences: list[dict[str, Any]] = []
    progress: list[BatchProgress] = []
    steps_total = 0
    for b in range(n_batches):
        t0 = time.perf_counter()
        chunk = ids[b * batch_size:(b + 1) * batch_size]
        # a batch is a range of the sorted ids: a cheap range filter, not a list of thousands
        part = rows.filter((F.col("trace_id") >= F.lit(chunk[0])) & (F.col("trace_id") <= F.lit(chunk[-1])))
        parts = max(1, min(len(chunk), 2 * sc.defaultParallelism))
        result = (part.repartition(parts, "trace_id").sortWithinPartitions("trace_id", "step")
                  .mapInArrow(fn, RESULT_DDL).toArrow())
        result = result.cast(RESULT_SCHEMA).sort_by([("trace_id", "ascending")])
        if out_path is not None:
            pq.write_table(result, out_path / "results" / f"batch-{b:05d}.parquet")
        mine: Counter[str] = Counter()
        steps = 0
        for r in result.to_pylist():
            mine[r["verdict"]] += 1
            steps += r["steps"]
            g = groups.setdefault((r["model"], r["generation"], r["mode"]), {
                "model": r["model"], "generation": r["generation"], "mode": r["mode"], "traces": 0, "steps": 0,
                "seconds": 0.0, **{v: 0 for v in VERDICTS}})
            g["traces"] += 1
            g["steps"] += r["steps"]
            g["seconds"] += r["seconds"]
            g[r["verdict"]] += 1
            if r["verdict"] != "conforms" and len(divergences) < keep:
                divergences.append(r)
        verdicts.update(mine)
        steps_total += steps
        bp = BatchProgress(b + 1, n_batches, result.num_rows, dict(mine), steps, time.perf_counter() - t0)
        progress.append(bp)
        if on_batch is not None:
            on_batch(bp)
    run = ConformRun(corpus, out_path, sum(verdicts.values()), steps_total, dict(verdicts),
                     sorted(groups.values(), key=lambda g: (g["model"], g["generation"], g["mode"])),
                     divergences, progress, time.perf_counter() - start, mutant)
    if out_path is not None:
        (out_path / "summary.txt").write_text(summary_text(run), encoding="utf-8")
    return run


def summary_text(run: ConformRun) -> str:
    """The readable summary (also written to ``out/summary.txt``)."""
    lines = [f"corpus {run.corpus}: {run.traces:,} traces, {run.steps:,} steps replayed on the implementation"
             + (f" with the planted bug {run.mutant}" if run.mutant else "") + f" ({run.seconds:.1f} s)", ""]
    head = ["model", "generation", "mode", "traces", *VERDICTS, "steps", "steps/s"]
    body = [[g["model"], g["generation"], g["mode"], str(g["traces"]), *[str(g[v]) for v in VERDICTS], str(g["steps"]),
             f"{g['steps'] / g['seconds']:,.0f}" if g["seconds"] > 0 else "-"] for g in run.groups]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    for r in [head, *body]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append("")
    for d in run.divergences:
        where = "" if d["step"] is None else f" at step {d['step']} {d['action']}"
        lines.append(f"{d['verdict']} {d['trace_id']}{where}: {d['message']}")
        if d["diff"]:
            lines.append(f"    {d['diff']}")
    bad = run.traces - run.verdicts.get("conforms", 0) - run.verdicts.get("skipped", 0)
    lines.append(("every replayed trace conforms" if run.ok else
                  f"{bad} trace(s) do not conform" if bad else "nothing could be checked (every trace skipped)"))
    return "\n".join(lines) + "\n"
