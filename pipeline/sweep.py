"""``isrcheck spark sweep``: one complete check per configuration of a grid, as Spark tasks.

A grid file (TOML) names a starting configuration and, per key, the values to try::

    model = "clean-election"        # optional: start from a manifest model's configuration
    [base]                          # optional: configuration keys set for every point
    max_records = 1
    [grid]                          # required: a list of values per key (dotted keys reach into tables)
    brokers = [2, 3]
    "faults.crashes" = [0, 1]
    unclean_leader_election = [false, true]
    [check]                         # optional: bounds of each check
    max_states = 200000
    max_depth = 60
    symmetry = true

The grid is the cartesian product, in the order the keys are written. Every point is validated
before anything runs (a bad point is a one-line error naming it). Each point is one task that runs
the single-process :class:`~isrcheck.engine.checker.Checker` (the whole check stays in one process);
the results come back as one table.
"""
from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isrcheck.model.config import Config, ConfigError, from_mapping, set_path
from isrcheck.specs.inputs import InputError, Kind, read_toml

from .errors import PipelineError

_TOP = {"model", "base", "grid", "check"}
_CHECK = {"max_states", "max_depth", "symmetry"}

RESULT_DDL = ("index int, point string, outcome string, property string, length int, states long, depth int, "
              "transitions long, seconds double, unwitnessed array<string>, limit_hit string, config string")


@dataclass
class Grid:
    source: str
    model: str | None
    base: dict[str, Any]
    keys: list[str]
    values: list[list[Any]]
    max_states: int | None = None
    max_depth: int | None = None
    symmetry: bool | None = None
    points: list[dict[str, Any]] = field(default_factory=list)  # filled by validate()
    configs: list[Config] = field(default_factory=list)


def _flatten(prefix: str, table: dict[str, Any], out: dict[str, Any]) -> None:
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            _flatten(key + ".", v, out)
        else:
            out[key] = v


def _set_path(raw: dict[str, Any], dotted: str, value: Any, where: str) -> None:
    try:
        set_path(raw, dotted.split("."), value, where=f"{where}: ")
    except ConfigError as e:
        raise PipelineError(str(e)) from None


def load_grid(path: str | Path, models: Callable[[str], dict[str, Any]] | None = None) -> Grid:
    """Read and validate a grid file; any problem is a one-line :class:`PipelineError`.
    ``models`` maps a model name (``model = "..."``) to its raw configuration (the manifest's)."""
    try:  # the bounded reader (specs/inputs.py): a regular file, a configuration's size and nesting caps
        doc = read_toml(path, Kind.CONFIG)
    except InputError as e:
        raise PipelineError(" ".join(str(e).split())) from None
    extra = sorted(set(doc) - _TOP)
    if extra:
        raise PipelineError(f"{path}: unknown key {extra[0]!r} (a grid file has: {', '.join(sorted(_TOP))})")
    model = doc.get("model")
    if model is not None and not isinstance(model, str):
        raise PipelineError(f"{path}: model must be the name of a manifest model")
    base = doc.get("base", {})
    if not isinstance(base, dict):
        raise PipelineError(f"{path}: [base] must be a table")
    grid = doc.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise PipelineError(f"{path}: needs a [grid] table with a list of values per key")
    flat: dict[str, Any] = {}
    _flatten("", grid, flat)
    for k, v in flat.items():
        if not isinstance(v, list) or not v:
            raise PipelineError(f"{path}: grid.{k} must be a non-empty list of values, got {v!r}")
    check = doc.get("check", {})
    if not isinstance(check, dict):
        raise PipelineError(f"{path}: [check] must be a table")
    extra = sorted(set(check) - _CHECK)
    if extra:
        raise PipelineError(f"{path}: unknown key check.{extra[0]} (known: {', '.join(sorted(_CHECK))})")
    for k in ("max_states", "max_depth"):
        v = check.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise PipelineError(f"{path}: check.{k} must be a positive integer, got {v!r}")
    sym = check.get("symmetry")
    if sym is not None and not isinstance(sym, bool):
        raise PipelineError(f"{path}: check.symmetry must be true or false, got {sym!r}")
    g = Grid(str(path), model, base, list(flat), list(flat.values()), check.get("max_states"),
             check.get("max_depth"), sym)
    start: dict[str, Any] = {}
    if model is not None:
        if models is None:
            raise PipelineError(f"{path}: model = {model!r} needs the manifest (run through `isrcheck spark sweep`)")
        try:
            start = json.loads(json.dumps(models(model)))
        except ValueError as e:
            raise PipelineError(f"{path}: {e}") from None
    validate(g, start)
    return g


def validate(g: Grid, start: dict[str, Any]) -> None:
    """Build every point's configuration from ``start`` (one-line error for the first bad one)."""
    for k, v in _flat_items(g.base):
        _set_path(start, k, v, g.source)
    g.points, g.configs = [], []
    for combo in itertools.product(*g.values):
        raw = json.loads(json.dumps(start))
        point = dict(zip(g.keys, combo))
        for k, v in point.items():
            _set_path(raw, k, v, g.source)
        try:
            cfg = from_mapping(raw)
        except ConfigError as e:
            text = ", ".join(f"{k}={json.dumps(v)}" for k, v in point.items())
            raise PipelineError(f"{g.source}: point {text}: {e}") from None
        g.points.append(point)
        g.configs.append(cfg)


def _flat_items(table: dict[str, Any]) -> list[tuple[str, Any]]:
    out: dict[str, Any] = {}
    _flatten("", table, out)
    return list(out.items())


def point_text(point: dict[str, Any]) -> str:
    return " ".join(f"{k}={json.dumps(v)}" for k, v in point.items())


def run_point(task: str) -> dict[str, Any]:
    """One grid point, checked in this process (a Spark task)."""
    from isrcheck.invariants import build_model
    from isrcheck.engine.checker import Checker

    t = json.loads(task)
    cfg = from_mapping(t["config"])
    protocol = None
    if t.get("variant"):  # a --variant, resolved on the driver (isrcheck.invariants.variants.resolve_variant)
        from isrcheck.invariants.variants import load_variant

        protocol = load_variant(t["variant"], search_path=t.get("variant_path"))(cfg)
    model = build_model(cfg, protocol=protocol, symmetry=t["symmetry"])
    start = time.perf_counter()
    r = Checker(model, max_depth=t["max_depth"], max_states=t["max_states"]).run()
    v = r.violations[0] if r.violations else None
    return {
        "index": t["index"], "point": t["point"], "outcome": r.outcome,
        "property": v.property if v else None, "length": v.length if v else None,
        "states": r.distinct_states, "depth": r.depth, "transitions": r.transitions,
        "seconds": round(time.perf_counter() - start, 6), "unwitnessed": list(r.unwitnessed),
        "limit_hit": r.limit_hit, "config": json.dumps(t["config"], sort_keys=True, separators=(",", ":")),
    }


def tasks(g: Grid, variant: tuple[str, str] | None = None) -> list[str]:
    extra = {} if variant is None else {"variant": variant[0], "variant_path": variant[1]}
    return [json.dumps({
        "index": i, "point": point_text(p), "config": c.to_dict(), "symmetry": g.symmetry,
        "max_states": g.max_states, "max_depth": g.max_depth, **extra,
    }) for i, (p, c) in enumerate(zip(g.points, g.configs))]


def run_sweep(spark: Any, g: Grid, out: str | Path | None = None, variant: str | None = None) -> list[dict[str, Any]]:
    """Run every point as its own Spark task; rows in grid order (and as Parquet under ``out``).
    ``variant``: a ``--variant MODULE:ATTR`` every point is checked with."""
    from isrcheck.invariants.variants import resolve_variant

    ts = tasks(g, resolve_variant(variant))
    rows = spark.sparkContext.parallelize(ts, len(ts)).map(run_point).collect()
    rows.sort(key=lambda r: r["index"])
    for r in rows:
        r["values"] = g.points[r["index"]]
    if out is not None:
        out_path = Path(out)
        if out_path.exists() and not out_path.is_dir():
            raise PipelineError(f"{out}: exists and is not a directory")
        cols = [c.split()[0] for c in RESULT_DDL.split(", ")]
        df = spark.createDataFrame([tuple(r[c] for c in cols) for r in rows], RESULT_DDL)
        for k in g.keys:  # one column per grid key, the value as JSON text
            from pyspark.sql import functions as F

            values = {r["index"]: json.dumps(r["values"][k]) for r in rows}
            mapping = F.create_map(*[x for i, v in values.items() for x in (F.lit(i), F.lit(v))])
            df = df.withColumn(k, mapping[F.col("index")])
        df.coalesce(1).write.mode("overwrite").parquet(str(out_path))
    return rows
