"""Spark exploration against the single-process checker, on the same models; prints figures.

For each model: the Checker's time, the level-synchronous explorer in-process (every level written
as Parquet), on Spark for every level (--spark-threshold 0) and hybrid (Spark only for frontiers of
at least --threshold states). Then a scale-out estimate from two measured quantities:

- the fixed cost of one Spark level (a level with a one-state frontier), and
- the Python work per frontier state in a worker (decode, expand, check, fingerprint, encode),
  measured in-process on the same code the workers run,

  T(W cores) ~= spark_levels x fixed + frontier_states x work_per_state / W

Usage: python benchmarks/bench_spark.py [--models a,b,c] [--threshold N] [--master local[2]] [--skip-all-spark]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from isrcheck import manifest
from isrcheck.invariants import build_model
from isrcheck.model.checker import Checker
from isrcheck.pipeline.codec import kafka_codec
from isrcheck.pipeline.expand import PropertySets, expand
from isrcheck.pipeline.explore import Explorer
from isrcheck.pipeline.session import LazySession, create_session
from isrcheck.pipeline.spec import ModelSpec

DEFAULT_MODELS = "replication,clean-election,clean-election-isr-shrink,two-partitions"


def run_explorer(spec: ModelSpec, threshold: int) -> tuple[float, object]:
    out = Path(tempfile.mkdtemp(prefix="bench-spark-")) / "run"
    try:
        t = time.perf_counter()
        res = Explorer(spec, out, spark_threshold=threshold, session=LazySession()).run()
        return time.perf_counter() - t, res
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)


def worker_cost(spec: ModelSpec, sample: int = 3000) -> float:
    """Seconds of worker Python per frontier state: decode, expand (with property checks and stable
    fingerprints), encode of the kept successors — what expand_arrow does per row."""
    model = spec.build()
    codec = kafka_codec()
    props = PropertySets.of(model)
    # a sample of reachable states, as encoded rows
    frontier = [(model.fingerprint(s), 0, s) for s in model.init_states()]
    rows = []
    seen = set()
    while frontier and len(rows) < sample:
        exp = expand(model, frontier, skip=seen, props=props)
        rows.extend(codec.encode(s) for _, _, s in frontier)
        seen.update(exp.successors)
        frontier = [(x.fingerprint, i, x.state) for i, x in enumerate(exp.successors.values())]
    rows = rows[:sample]
    t = time.perf_counter()
    batch = [(i, i, codec.decode(b)) for i, b in enumerate(rows)]
    exp = expand(model, batch, props=props)
    for x in exp.successors.values():
        codec.encode(x.state)
    return (time.perf_counter() - t) / len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--threshold", type=int, default=2000, help="hybrid: Spark for frontiers of at least N states")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--skip-all-spark", action="store_true", help="do not run every level on Spark")
    args = ap.parse_args()

    t = time.perf_counter()
    spark = create_session(args.master, app_name="isrcheck-bench")
    print(f"Spark session ({args.master}; this machine has {os.cpu_count()} cores): "
          f"{time.perf_counter() - t:.1f} s to start")

    # fixed cost of one Spark level: a model whose first levels are one state wide
    spec0 = ModelSpec.of("replication", manifest.get("replication").config, None)
    out = Path(tempfile.mkdtemp(prefix="bench-spark-")) / "run"
    ex = Explorer(spec0, out, spark_threshold=0, session=LazySession(), max_depth=4)
    ex.run()  # warms the JVM and the Python workers
    shutil.rmtree(out.parent, ignore_errors=True)
    _, res = run_explorer(ModelSpec.of("replication", manifest.get("replication").config, None), 10**12)
    out = Path(tempfile.mkdtemp(prefix="bench-spark-")) / "run"
    ex = Explorer(spec0, out, spark_threshold=0, session=LazySession(), max_depth=3)
    r = ex.run()
    shutil.rmtree(out.parent, ignore_errors=True)
    fixed = sum(x.seconds for x in r.levels if x.engine == "spark") / max(1, sum(x.engine == "spark" for x in r.levels))
    print(f"fixed cost of one Spark level (frontier of 1-3 states): {fixed:.2f} s\n")

    header = (f"{'model':28} {'states':>8} {'levels':>6} {'checker':>9} {'in-proc':>9} {'all-spark':>10} "
              f"{'ratio':>7} {'hybrid':>9} {'(spark lv)':>10} {'ratio':>7} {'work/state':>11}")
    print(header)
    print("-" * len(header))
    rows = []
    for name in args.models.split(","):
        e = manifest.get(name)
        spec = ModelSpec.of(name, e.config, e.symmetry)
        t = time.perf_counter()
        want = Checker(build_model(e.config, symmetry=e.symmetry)).run()
        t_checker = time.perf_counter() - t
        t_local, local = run_explorer(spec, 10**12)
        t_all = None
        if not args.skip_all_spark:
            t_all, everything = run_explorer(spec, 0)
            assert everything.result.distinct_states == want.distinct_states, name
        t_hybrid, hybrid = run_explorer(spec, args.threshold)
        assert hybrid.result.distinct_states == want.distinct_states == local.result.distinct_states, name
        w = worker_cost(spec)
        n_levels = len(local.levels)
        sl = hybrid.spark_levels
        all_text = f"{t_all:9.1f}s {t_all / t_checker:6.0f}x" if t_all is not None else f"{'-':>10} {'-':>7}"
        print(f"{name:28} {want.distinct_states:>8,} {n_levels:>6} {t_checker:8.2f}s {t_local:8.2f}s {all_text} "
              f"{t_hybrid:8.1f}s {sl:>10} {t_hybrid / t_checker:6.1f}x {w * 1e6:9.0f}us")
        rows.append((name, want.distinct_states, n_levels, t_checker, w))
        sys.stdout.flush()

    print("\nScale-out estimate for a model of the size of each (all levels on Spark; fixed cost as measured):")
    print(f"{'model':28} {'checker':>9} " + " ".join(f"{f'W={w}':>9}" for w in (2, 8, 32, 128)))
    for name, n, levels, t_checker, w in rows:
        est = [levels * fixed + n * w / cores_ for cores_ in (2, 8, 32, 128)]
        print(f"{name:28} {t_checker:8.2f}s " + " ".join(f"{x:8.1f}s" for x in est))
    big = 10_000_000
    _, _, levels, t_checker, w = rows[-1]
    rate = rows[-1][1] / t_checker
    print(f"\nExtrapolated to {big:,} states and 60 levels at the last model's per-state costs:")
    print(f"  checker (one core): {big / rate / 3600:.1f} h")
    for cores_ in (8, 32, 128):
        print(f"  Spark, {cores_:>3} cores: {(60 * fixed + big * w / cores_) / 3600:.2f} h")
    spark.stop()


if __name__ == "__main__":
    main()
