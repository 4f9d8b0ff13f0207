"""Exploration with a Spark job per level (``resident=False``, ``spark explore --per-level``) equals
the single-process Checker (states, depth, outcome, counterexample length, transitions, coverage),
including across an interruption; test_resident.py covers the wide levels as one job."""
from __future__ import annotations

import pytest
from _explore_helpers import assert_same, checker, explorer

from isrcheck.pipeline.session import LazySession

pytestmark = pytest.mark.spark


def test_violation_found_on_spark_equals_the_checker(spark_session, tmp_path):
    """unclean-election: levels 0-2 in-process, then the frontiers of 13 and 33 states on Spark,
    where the violation is found (in the middle of the last level)."""
    res = explorer("unclean-election", tmp_path / "run", spark_threshold=13, session=LazySession(), resident=False).run()
    assert [x.engine for x in res.levels] == ["init", "local", "local", "spark"]
    assert_same(res.result, checker("unclean-election"))
    assert res.result.outcome == "safety_failure"


def test_sharded_levels_equal_the_checker_and_stay_on_disk(spark_session, tmp_path):
    """Three shards, every level after the first few on Spark: each Spark level is one job, its
    states are one Parquet file per shard and its seen sets one sorted array per shard, which
    together hold every state visited so far (nothing of it went through the driver)."""
    import numpy as np
    import pyarrow.parquet as pq

    from isrcheck.pipeline.shards import shard_of

    out = tmp_path / "run"
    res = explorer("lossy-undetected-restart", out, spark_threshold=9, partitions=3, session=LazySession(), resident=False).run()
    assert_same(res.result, checker("lossy-undetected-restart"))
    spark = [x for x in res.levels if x.engine == "spark"]
    assert spark and all(x.jobs == 1 for x in spark)
    last = out / "levels" / f"{spark[-1].depth:05d}"
    assert sorted(p.name for p in last.iterdir()) == [
        "_seen-00000.npy", "_seen-00001.npy", "_seen-00002.npy",
        "part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    seen = [np.load(last / f"_seen-{p:05d}.npy") for p in range(3)]
    assert sum(len(a) for a in seen) == spark[-1].visited
    for p, a in enumerate(seen):
        assert (np.diff(a) > 0).all() and (shard_of(a, 3) == p).all()
        fps = pq.read_table(last / f"part-{p:05d}.parquet").column("fingerprint").to_numpy()
        assert (shard_of(fps, 3) == p).all() and np.isin(fps, a).all()


def test_hybrid_success_resumed_across_spark_levels(spark_session, tmp_path):
    """replication: levels 0-9 in-process, 10-11 on Spark (frontier >= 50), the tail in-process;
    interrupted after the first Spark level and resumed."""
    out = tmp_path / "run"
    ex = explorer("replication", out, spark_threshold=50, stop_after_levels=11, session=LazySession(), resident=False)
    first = ex.run()
    assert not first.finished and [x.engine for x in first.levels][-1] == "spark"
    # a level that goes on costs one Spark job (expansion, shuffle by fingerprint, dedup and write)
    from isrcheck.pipeline.explore_spark import level_group

    assert len(spark_session.sparkContext.statusTracker().getJobIdsForGroup(level_group(10, ex.run_id))) == 1
    assert first.levels[-1].jobs == 1
    (out / "levels" / "00011.staging").mkdir()  # an interrupted Spark write
    second = explorer("replication", out, spark_threshold=50, resume=True, session=LazySession(), resident=False).run()
    assert second.finished
    engines = [x.engine for x in second.levels]
    assert engines.count("spark") == 2 and engines[-1] == "local"
    assert_same(second.result, checker("replication"))
    assert second.result.distinct_states == 289


def test_max_states_inside_a_spark_level_equals_the_checker(spark_session, tmp_path):
    """replication holds 188 states after level 9; the 230th is found while Spark computes level 10."""
    res = explorer("replication", tmp_path / "run", spark_threshold=50, max_states=230, session=LazySession(), resident=False).run()
    want = checker("replication", max_states=230)
    assert_same(res.result, want)
    assert res.result.outcome == "incomplete" and res.result.limit_hit == "states" == want.limit_hit
    assert res.result.distinct_states == 230 and res.result.unwitnessed == want.unwitnessed
    assert res.levels[-1].visited == 188  # level 10 was never committed: the Checker stopped inside it


def _finish_some_map_shards(out, tamper: bool) -> list[int]:
    """As a run killed in the middle of a Spark level leaves it: the map output of some frontier
    shards written (by the code the map tasks run, here in-process), the level not committed.
    ``tamper`` adds 1000 to a finished shard's coverage, so that a reuse shows in the result."""
    import json

    from isrcheck.pipeline import explore_spark as es

    ex = explorer("replication", out, spark_threshold=50, resume=True, session=LazySession(), resident=False)
    ex._progress = progress = ex.store.read_progress()
    d, frontier = progress["levels"][-1]["depth"], progress["levels"][-1]["new"]
    ctx = es._context(ex, d, frontier, ex._unwitnessed(progress))
    done = [p for p in range(ctx.parts) if p % 2 == 0]
    for p in done:
        list(es.expand_shard(ctx, p))
    if tamper:
        f = es.summary_file(ctx.maps_dir, done[0])
        summary = json.loads(f.read_text())
        action = sorted(summary["coverage"])[0]
        summary["coverage"][action] += 1000
        f.write_text(json.dumps(summary))
    return done


def test_a_spark_level_killed_in_the_middle_resumes_from_its_finished_map_shards(spark_session, tmp_path):
    """`spark explore --resume` after a kill inside a Spark level: the frontier shards whose map
    output was finished are not expanded again (the level counts them), the others are, and the
    result is the Checker's; the map output goes once the level is committed."""
    import shutil

    out = tmp_path / "run"
    first = explorer("replication", out, spark_threshold=50, stop_after_levels=11, session=LazySession(), resident=False).run()
    assert not first.finished and first.levels[-1].engine == "spark"
    shutil.copytree(out, tmp_path / "tampered")
    done = _finish_some_map_shards(out, tamper=False)
    resumed = explorer("replication", out, spark_threshold=50, resume=True, session=LazySession(), resident=False).run()
    assert_same(resumed.result, checker("replication"))
    level = next(x for x in resumed.levels if x.depth == first.levels[-1].depth + 1)
    assert level.engine == "spark" and level.reused_map_shards == len(done) >= 1
    assert not list((out / "levels").glob("*.maps"))

    # the proof that the finished shards were read, not recomputed: a shard's summary altered
    # while the run was down shows in the resumed level's transitions
    _finish_some_map_shards(tmp_path / "tampered", tamper=True)
    again = explorer("replication", tmp_path / "tampered", spark_threshold=50, resume=True,
                     session=LazySession(), resident=False).run()
    altered = next(x for x in again.levels if x.depth == level.depth)
    assert altered.transitions == level.transitions + 1000


def test_map_output_of_another_level_or_run_is_not_reused(spark_session, tmp_path):
    """A map directory whose marker names other inputs (here: another sometimes-property still to
    witness) is emptied, not read."""
    import json

    out = tmp_path / "run"
    first = explorer("replication", out, spark_threshold=50, stop_after_levels=11, session=LazySession(), resident=False).run()
    _finish_some_map_shards(out, tamper=True)
    maps = next((out / "levels").glob("*.maps"))
    marker = json.loads((maps / "_level.json").read_text())
    marker["unwitnessed"] = marker["unwitnessed"] + ["SomethingElse"]
    (maps / "_level.json").write_text(json.dumps(marker))
    resumed = explorer("replication", out, spark_threshold=50, resume=True, session=LazySession(), resident=False).run()
    assert_same(resumed.result, checker("replication"))
    level = next(x for x in resumed.levels if x.depth == first.levels[-1].depth + 1)
    assert level.reused_map_shards == 0
