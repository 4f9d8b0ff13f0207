"""Resident levels (pipeline/resident.py): consecutive wide levels as one Spark job whose tasks keep
their states in memory equal the single-process Checker (states, depth, outcome, transitions,
coverage, counterexamples), with the tasks finding each other's duplicates (two tasks on local[2]),
and a stretch stopped between levels resumes like any run."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _explore_helpers import assert_same, checker, explorer

from isrcheck.pipeline.resident import (LevelTotals, StretchContext, StretchFailed, _Task, losers,
                                        stretch_dir, wait_for)
from isrcheck.pipeline.session import LazySession, task_slots
from isrcheck.pipeline.shards import shard_of
from isrcheck.pipeline.store import RunStore

spark = pytest.mark.spark


def _stretch_levels(res):
    return [x for x in res.levels if x.resident]


@spark
@pytest.mark.parametrize("name, threshold, kw, outcome", [
    ("replication", 50, {}, "success"),  # levels 10-11 in a stretch, the tail in-process
    ("replication", 0, {}, "success"),  # every level after the first in one stretch, to the end
    ("unclean-election", 13, {}, "safety_failure"),  # the violation inside the stretch's second level
    ("lossy-undetected-restart", 9, {"partitions": 3}, "safety_failure"),
    ("replication", 50, {"max_states": 260}, "incomplete"),  # the 260th state inside the stretch's second level
])
def test_a_resident_stretch_equals_the_checker(spark_session, tmp_path, name, threshold, kw, outcome):
    res = explorer(name, tmp_path / "run", spark_threshold=threshold, session=LazySession(), **kw).run()
    want = checker(name, **({"max_states": kw["max_states"]} if "max_states" in kw else {}))
    assert_same(res.result, want)
    assert res.result.outcome == outcome
    stretch = _stretch_levels(res)
    assert stretch, "no level ran resident"
    # one job for the stretch, counted on its first level
    assert stretch[0].jobs == 1 and all(x.jobs == 0 for x in stretch[1:])
    assert not list((tmp_path / "run" / "levels").glob("stretch-*")), "the stretch directory stays behind"


@spark
def test_a_stretch_writes_a_file_per_task_and_its_last_level_by_shard_with_the_seen_files(spark_session, tmp_path):
    out = tmp_path / "run"
    res = explorer("replication", out, spark_threshold=20, partitions=3, session=LazySession()).run()
    assert_same(res.result, checker("replication"))
    stretch = _stretch_levels(res)
    assert [x.depth for x in stretch] == [8, 9, 10, 11, 12]  # from the first frontier of 20 states to a narrow level
    tasks = task_slots("local[2]", 4)
    inner = out / "levels" / f"{stretch[0].depth:05d}"
    assert sorted(p.name for p in inner.iterdir()) == [f"task-{t:05d}.parquet" for t in range(tasks)]
    last = out / "levels" / f"{stretch[-1].depth:05d}"
    names = sorted(p.name for p in last.iterdir())
    assert [n for n in names if n.startswith("_seen-")] == [f"_seen-{p:05d}.npy" for p in range(3)]
    seen = [np.load(last / f"_seen-{p:05d}.npy") for p in range(3)]
    assert sum(len(a) for a in seen) == stretch[-1].visited  # every state so far, once
    for p, a in enumerate(seen):
        assert (np.diff(a) > 0).all() and (shard_of(a, 3) == p).all()
    import pyarrow.parquet as pq

    for n in names:
        if n.startswith("part-"):
            p = int(n[5:10])
            fps = pq.read_table(last / n).column("fingerprint").to_numpy()
            assert (shard_of(fps, 3) == p).all()


@spark
def test_a_stretch_stopped_between_levels_resumes_to_the_checkers_result(spark_session, tmp_path):
    """--stop-after-levels ends the stretch at a level boundary, as a kill after a commit does; what
    a killed stretch leaves (its directory, a staging level) is removed on --resume."""
    out = tmp_path / "run"
    first = explorer("replication", out, spark_threshold=20, stop_after_levels=10, session=LazySession()).run()
    assert not first.finished and first.levels[-1].resident
    store = RunStore(out)
    (store.levels_dir / "stretch-00009-deadbeef").mkdir()
    store.staging_dir(first.levels[-1].depth + 1).mkdir()
    second = explorer("replication", out, spark_threshold=20, resume=True, session=LazySession()).run()
    assert second.finished
    assert_same(second.result, checker("replication"))
    assert not list(store.levels_dir.glob("stretch-*")) and not list(store.levels_dir.glob("*.staging"))
    resumed = [x for x in second.levels if x.depth > first.levels[-1].depth and x.resident]
    assert resumed and resumed[0].jobs == 1  # a new stretch, from the last committed level


@spark
def test_per_level_mode_runs_a_job_per_level(spark_session, tmp_path):
    res = explorer("replication", tmp_path / "run", spark_threshold=50, session=LazySession(), resident=False).run()
    assert_same(res.result, checker("replication"))
    spark_levels = [x for x in res.levels if x.engine == "spark"]
    assert spark_levels and all(x.jobs == 1 and not x.resident for x in spark_levels)


def test_losers_are_the_candidates_another_task_reached_at_a_smaller_key():
    own_fps = np.array([5, 7, 9, 11], dtype=np.int64)
    own_keys = [b"\x00\x02", b"\x00\x05", b"\x00\x01", b"\x00\x09"]
    other = pa.table({"fingerprint": pa.array([9, 7, 3], type=pa.int64()),
                      "key": pa.array([b"\x00\x00", b"\x00\x06", b"\x00\x01"], type=pa.binary())})
    third = pa.table({"fingerprint": pa.array([11], type=pa.int64()), "key": pa.array([b"\x00\x08"], type=pa.binary())})
    assert losers(own_fps, own_keys, [other, third]).tolist() == [False, False, True, True]
    assert losers(own_fps, own_keys, []).tolist() == [False] * 4


def test_level_totals_take_the_smallest_keys_of_all_the_tasks():
    totals = LevelTotals()
    totals.add({"transitions": 3, "coverage": {"Fetch": 2, "Produce": 1}, "event_key": None, "broken_key": "0002",
                "witnessed": ["a"]})
    totals.add({"transitions": 4, "coverage": {"Fetch": 4}, "event_key": "0003", "broken_key": "0001",
                "witnessed": ["b"]})
    assert totals.transitions == 7 and totals.coverage == {"Fetch": 6, "Produce": 1}
    assert totals.event_key == "0003" and totals.broken_key == "0001" and totals.witnessed == {"a", "b"}


def test_a_waiting_task_stops_when_another_failed(tmp_path):
    (tmp_path / "failed-00001").write_text("task 1: MemoryError: ", encoding="utf-8")
    with pytest.raises(StretchFailed, match="task 1: MemoryError"):
        wait_for(tmp_path, [tmp_path / "never"])
    (tmp_path / "there").write_bytes(b"")
    wait_for(tmp_path, [tmp_path / "there"])  # present: returns at once, failure or not


def test_a_task_does_not_start_twice(tmp_path):
    """Spark runs a failed barrier stage again; its tasks refuse, so the run is resumed instead."""
    from isrcheck.inputs import manifest
    from isrcheck.pipeline.spec import ModelSpec

    spec = ModelSpec.of("replication", manifest.get("replication").config, None)
    store = RunStore(tmp_path / "run")
    store.create({"model": "replication"})
    store.write_progress({"levels": [{"depth": 0, "frontier": 0, "new": 1, "visited": 1, "transitions": 0,
                                      "engine": "init", "seconds": 0.0}], "finished": False})
    ctx = StretchContext(spec.to_json(), str(store.out), 2, 4, 10, 5, None, "once")
    _Task(ctx, 1).begin()
    assert (stretch_dir(store, "once") / "started-00001").exists()
    with pytest.raises(StretchFailed, match="--resume"):
        _Task(ctx, 1).begin()


def test_task_slots_are_the_cores_that_run_at_once():
    assert task_slots("local[2]", 4) == 2
    assert task_slots("local", 2) == 1
    assert task_slots("local-cluster[2,1,2048]", 4) == 2
    assert task_slots("local-cluster[3,2,1024]", 12, task_cpus=2) == 3
    assert task_slots("spark://host:7077", 16) == 16
    assert task_slots("yarn", 0) == 1


@spark
def test_a_task_that_fails_ends_the_run_in_one_line_naming_its_cause(spark_session, tmp_path):
    """A frontier state that does not decode fails its task; the other stops instead of waiting,
    Spark's retries of the stage are refused, and the run says why in one line, its committed
    levels kept for --resume."""
    from isrcheck.pipeline.errors import PipelineError

    out = tmp_path / "run"
    first = _a_run_with_a_broken_frontier(out)
    with pytest.raises(PipelineError, match=r"a task of the resident stretch failed \(task \d: .*--resume"):
        explorer("replication", out, spark_threshold=50, resume=True, session=LazySession()).run()
    assert len(RunStore(out).read_progress()["levels"]) == len(first.levels)  # nothing lost, nothing half-done
    assert not list((out / "levels").glob("stretch-*"))


def _a_run_with_a_broken_frontier(out):
    """replication stopped after its 10 in-process levels (the next is the first wide one), the
    first state of its last level's file replaced by bytes that are no state."""
    import pyarrow.parquet as pq

    first = explorer("replication", out, spark_threshold=50, stop_after_levels=10, session=LazySession()).run()
    assert first.levels[-1].engine == "local" and first.levels[-1].new >= 50
    part = out / "levels" / f"{first.levels[-1].depth:05d}" / "part-00000.parquet"
    table = pq.read_table(part)
    states = table.column("state").to_pylist()
    states[0] = b"not a state"
    pq.write_table(table.set_column(table.schema.get_field_index("state"), "state",
                                    pa.array(states, type=pa.binary())), part)
    return first


@spark
def test_the_command_line_says_a_failed_stretch_in_one_line(tmp_path):
    """The command's own stderr (Spark's JVM writes there too): the error line, and no executor
    log or traceback before it."""
    import subprocess
    import sys

    out = tmp_path / "run"
    _a_run_with_a_broken_frontier(out)
    r = subprocess.run([sys.executable, "-m", "isrcheck", "spark", "explore", "replication", "--spark-threshold", "50",
                        "--master", "local[2]", "--resume", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "ERROR" not in r.stderr, r.stderr[-2000:]
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "CodecError" in errors[0] and "--resume" in errors[0]
