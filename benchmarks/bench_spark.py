"""Spark exploration against the single-process checker, on the same models; prints figures.

1. The per-level cost of Spark: every level of `replication` on Spark (frontiers of 1 to 60
   states, so the work is nil and the time is the fixed cost), with the number of Spark jobs per
   level (from the level's job group) next to the same levels in-process.
2. For each model (smallest first): the Checker's time, the level-synchronous explorer in-process
   (every level written as Parquet), on Spark for every level (--spark-threshold 0) and hybrid
   (Spark only for frontiers of at least --threshold states); the ratio to the Checker, and how it
   changes with the model's size: the all-Spark time split into its fixed part (levels x fixed cost)
   and the rest, per state.
3. A scale-out estimate from two measured quantities, the fixed cost of a level and the Python
   work per frontier state in a worker (decode, expand, check, fingerprint, encode, measured
   in-process on the code the workers run):

     T(W cores) ~= spark_levels x fixed + states x work_per_state / W

   and the model size from which W cores beat the Checker.

Usage: python benchmarks/bench_spark.py [--models a,b,c] [--threshold N] [--master local[2]] [--skip-all-spark]
       python benchmarks/bench_spark.py --worker-only [--models a,b,c]   (no Spark: section 3's two
       per-state figures, the worker's and the Checker's, in microseconds)
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.model.statecodec import kafka_state_codec
from isrcheck.engine.core import Checks
from isrcheck.engine.explore import expand
from isrcheck.pipeline.explore import Explorer
from isrcheck.pipeline.explore_spark import level_group
from isrcheck.pipeline.levels import gc_paused
from isrcheck.pipeline.session import LazySession, create_session
from isrcheck.pipeline.spec import ModelSpec

DEFAULT_MODELS = "replication,clean-election,two-partitions,leader-crash-kip-320"
CORES = (2, 8, 32, 128)


def spec_of(name: str) -> ModelSpec:
    e = manifest.get(name)
    return ModelSpec.of(name, e.config, e.symmetry)


def run_explorer(spec: ModelSpec, threshold: int) -> tuple[float, Any]:
    out = Path(tempfile.mkdtemp(prefix="bench-spark-")) / "run"
    try:
        t = time.perf_counter()
        ex = Explorer(spec, out, spark_threshold=threshold, session=LazySession())
        res = ex.run()
        res.run_id = ex.run_id
        return time.perf_counter() - t, res
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)


def worker_cost(spec: ModelSpec, sample: int = 3000, skip_visited: bool = True) -> float:
    """Seconds of worker Python per frontier state: decode, expand (with property checks and stable
    fingerprints), encode of the kept successors — what a Spark level's map task (explore_spark.expand_shard) does per row.

    The rows are the first ``sample`` states in breadth-first order. With ``skip_visited`` the
    expansion drops the successors already among them, as a real level drops those of earlier levels
    (the broadcast skip set) before encoding; without it every distinct successor is encoded."""
    model = spec.build()
    codec = kafka_state_codec()
    checks = Checks.of(model)
    frontier = [(model.fingerprint(s), 0, s) for s in model.init_states()]
    rows = []
    visited: list[int] = []
    seen: set[int] = set()
    while frontier and len(rows) < sample:
        exp = expand(model, frontier, skip=seen, checks=checks)
        rows.extend(codec.encode(s) for _, _, s in frontier)
        visited.extend(f for f, _, _ in frontier)
        seen.update(f for f, _, _ in frontier)
        seen.update(exp.successors)
        frontier = [(x.fingerprint, i, x.state) for i, x in enumerate(exp.successors.values())]
    rows = rows[:sample]
    skip = frozenset(visited[:sample]) if skip_visited else frozenset()
    with gc_paused():  # as expand_shard runs a batch
        t = time.perf_counter()
        batch = [(i, i, codec.decode(b)) for i, b in enumerate(rows)]
        exp = expand(model, batch, skip=skip, checks=checks)
        for x in exp.successors.values():
            codec.encode(x.state)
        return (time.perf_counter() - t) / len(rows)


def worker_figures(models: list[str], reps: int = 3) -> None:
    """Per state: the worker's Python work (best of ``reps``) next to the in-process Checker's."""
    print(f"{'model':26} {'states':>8} {'worker/state':>13} {'(no skip)':>10} {'checker/state':>14} {'ratio':>6}")
    for name in models:
        e = manifest.get(name)
        t = time.perf_counter()
        want = Checker(build_model(e.config, symmetry=e.symmetry)).run()
        per_state = (time.perf_counter() - t) / want.distinct_states
        w = min(worker_cost(spec_of(name)) for _ in range(reps))
        w_all = min(worker_cost(spec_of(name), skip_visited=False) for _ in range(reps))
        print(f"{name:26} {want.distinct_states:>8,} {w * 1e6:11.0f}us {w_all * 1e6:8.0f}us {per_state * 1e6:12.0f}us "
              f"{w / per_state:5.1f}x")
        sys.stdout.flush()
    print("(worker: decode the frontier state, expand it with every property check and stable fingerprint, "
          "encode the kept successors; (no skip): every distinct successor encoded, also those visited before)")


def per_level_cost(spark: Any) -> float:
    """Section 1; returns the fixed cost of a Spark level (median over the levels)."""
    spec = spec_of("replication")
    run_explorer(spec, 0)  # warms the JVM and the Python workers
    _, local = run_explorer(spec, 10**12)
    _, res = run_explorer(spec, 0)
    tracker = spark.sparkContext.statusTracker()
    print("Per-level cost: every level of replication on Spark (frontiers of 1-60 states)")
    print(f"{'level':>5} {'frontier':>8} {'new':>5} {'spark s':>8} {'jobs':>5} {'in-process s':>13}")
    local_s = {x.depth: x.seconds for x in local.levels}
    spark_levels = [x for x in res.levels if x.engine == "spark"]
    for x in spark_levels:
        jobs = len(tracker.getJobIdsForGroup(level_group(x.depth, res.run_id)))
        print(f"{x.depth:>5} {x.frontier:>8} {x.new:>5} {x.seconds:>8.2f} {jobs:>5} {local_s.get(x.depth, 0):>13.4f}")
    fixed = statistics.median(x.seconds for x in spark_levels)
    print(f"fixed cost of one Spark level: median {fixed:.2f} s, min {min(x.seconds for x in spark_levels):.2f} s "
          f"(in-process: {statistics.median(local_s.values()) * 1000:.1f} ms)\n")
    return fixed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--threshold", type=int, default=2000, help="hybrid: Spark for frontiers of at least N states")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--skip-all-spark", action="store_true", help="do not run every level on Spark")
    ap.add_argument("--worker-only", action="store_true",
                    help="no Spark: only the per-state work of a worker against the Checker's")
    args = ap.parse_args()
    if args.worker_only:
        worker_figures(sorted(args.models.split(","), key=lambda n: manifest.get(n).states or 0))
        return

    t = time.perf_counter()
    spark = create_session(args.master, app_name="isrcheck-bench")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Spark session ({args.master}; this machine has {os.cpu_count()} cores, load average {load:.1f}): "
          f"{time.perf_counter() - t:.1f} s to start\n")
    fixed = per_level_cost(spark)

    header = (f"{'model':26} {'states':>8} {'levels':>6} {'checker':>9} {'in-proc':>9} {'all-spark':>10} "
              f"{'ratio':>7} {'hybrid':>9} {'spark lv':>8} {'ratio':>7} {'var/state':>10} {'chk/state':>10}")
    print("Spark against the Checker, by model size")
    print(header)
    print("-" * len(header))
    rows = []
    models = sorted(args.models.split(","), key=lambda n: manifest.get(n).states or 0)
    for name in models:
        e = manifest.get(name)
        spec = spec_of(name)
        t = time.perf_counter()
        want = Checker(build_model(e.config, symmetry=e.symmetry)).run()
        t_checker = time.perf_counter() - t
        t_local, local = run_explorer(spec, 10**12)
        n_levels = len(local.levels)
        t_all = None
        var = float("nan")
        if not args.skip_all_spark:
            t_all, everything = run_explorer(spec, 0)
            assert everything.result.distinct_states == want.distinct_states, name
            var = max(0.0, t_all - (n_levels - 1) * fixed) / want.distinct_states
        t_hybrid, hybrid = run_explorer(spec, args.threshold)
        assert hybrid.result.distinct_states == want.distinct_states == local.result.distinct_states, name
        w = worker_cost(spec)
        sl = hybrid.spark_levels
        all_text = f"{t_all:9.1f}s {t_all / t_checker:6.0f}x" if t_all is not None else f"{'-':>10} {'-':>7}"
        print(f"{name:26} {want.distinct_states:>8,} {n_levels:>6} {t_checker:8.2f}s {t_local:8.2f}s {all_text} "
              f"{t_hybrid:8.1f}s {sl:>8} {t_hybrid / t_checker:6.1f}x {var * 1e6:8.0f}us "
              f"{t_checker / want.distinct_states * 1e6:8.0f}us")
        rows.append((name, want.distinct_states, n_levels, t_checker, w))
        sys.stdout.flush()
    print("(ratio: time / the Checker's; var/state: all-Spark time less levels x fixed cost, per state; "
          "chk/state: the Checker's time per state)")

    print(f"\nScale-out estimate, all levels on Spark (fixed cost {fixed:.2f} s per level as measured; "
          "work per state in a worker as measured):")
    print(f"{'model':26} {'work/state':>10} {'checker':>9} " + " ".join(f"{f'W={c}':>9}" for c in CORES))
    for name, n, levels, t_checker, w in rows:
        est = [levels * fixed + n * w / c for c in CORES]
        print(f"{name:26} {w * 1e6:8.0f}us {t_checker:8.2f}s " + " ".join(f"{x:8.1f}s" for x in est))
    name, n, levels, t_checker, w = rows[-1]
    per_state = t_checker / n
    print(f"\nAt {name}'s per-state costs (Checker {per_state * 1e6:.0f} us/state, worker {w * 1e6:.0f} us/state) "
          "and 60 levels, W cores beat the single-process Checker from about:")
    for c in CORES[1:]:
        gain = per_state - w / c
        print(f"  W={c:>3}: " + (f"{60 * fixed / gain:,.0f} states" if gain > 0 else "never (the worker is slower)"))
    big = 10_000_000
    print(f"Extrapolated to {big:,} states and 60 levels:")
    print(f"  checker (one core): {big * per_state / 3600:.1f} h")
    for c in CORES[1:]:
        print(f"  Spark, {c:>3} cores: {(60 * fixed + big * w / c) / 3600:.2f} h")
    spark.stop()


if __name__ == "__main__":
    main()
