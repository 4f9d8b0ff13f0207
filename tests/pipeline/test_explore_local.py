"""Level-synchronous exploration in-process (no Spark): the same result as the Checker, resumable."""
from __future__ import annotations

import json

import pytest

from _explore_helpers import assert_same, checker, explorer, summary

from isrcheck.inputs import manifest
from isrcheck.pipeline.errors import PipelineError

MODELS = ["replication", "hw-truncation-one-crash", "unclean-election", "controlled-shutdown", "reassignment",
          "controller-failover", "failover-misses-crash", "lossy-undetected-restart", "delayed-requests",
          "reassignment-target-crash", "topic-creation", "spare-brokers"]


@pytest.mark.parametrize("name", MODELS)
def test_in_process_levels_equal_the_checker(name, tmp_path):
    res = explorer(name, tmp_path / "run").run()
    assert res.finished and res.spark_levels == 0
    assert_same(res.result, checker(name))
    assert res.result.outcome == manifest.get(name).expect


def test_max_depth_matches_the_checker(tmp_path):
    res = explorer("replication", tmp_path / "run", max_depth=5).run()
    assert summary(res.result)[:4] == summary(checker("replication", max_depth=5))[:4]
    assert res.result.outcome == "incomplete" and res.result.limit_hit == "depth"


def test_levels_are_stored_with_parent_links(tmp_path):
    import pyarrow.parquet as pq

    res = explorer("unclean-election", tmp_path / "run").run()
    store = tmp_path / "run"
    meta = json.loads((store / "run.json").read_text())
    assert meta["model"] == "unclean-election" and meta["generation"] == "high-watermark"
    levels = sorted(p.name for p in (store / "levels").iterdir())
    assert levels == ["00000", "00001", "00002", "00003"]
    t = pq.read_table(store / "levels" / "00002")
    assert t.column_names == ["fingerprint", "parent", "prank", "aidx", "action", "depth", "rank", "state", "broken",
                              "key"]
    # the key (initial index, then one action index per step) orders the level as the ranks do
    keys = t.column("key").to_pylist()
    assert all(len(k) == 4 + 2 * 2 for k in keys)
    assert sorted(range(len(keys)), key=keys.__getitem__) == sorted(range(len(keys)), key=t.column("rank").to_pylist().__getitem__)
    parents = set(pq.read_table(store / "levels" / "00001").column("fingerprint").to_pylist())
    assert set(t.column("parent").to_pylist()) <= parents
    assert sum(x.new for x in res.levels) == 1 + 5 + 13 + 33


def test_resume_after_interruption_gives_the_same_result(tmp_path):
    out = tmp_path / "run"
    first = explorer("hw-truncation-one-crash", out, stop_after_levels=4).run()
    assert not first.finished and first.result.outcome == "incomplete" and first.result.limit_hit == "levels"
    assert len(first.levels) == 4
    # debris of a level that was being written when the process died
    (out / "levels" / "00004.staging").mkdir()
    (out / "levels" / "00004.staging" / "part-0.parquet").write_bytes(b"half a file")
    (out / "levels" / "00005").mkdir()
    second = explorer("hw-truncation-one-crash", out, resume=True).run()
    assert second.finished and second.resumed_at == 4
    assert_same(second.result, checker("hw-truncation-one-crash"))
    # resuming a finished run reports it again without exploring
    third = explorer("hw-truncation-one-crash", out, resume=True).run()
    assert summary(third.result) == summary(second.result)


def test_resume_refuses_another_configuration(tmp_path):
    out = tmp_path / "run"
    explorer("unclean-election", out, stop_after_levels=2).run()
    with pytest.raises(PipelineError, match="different config"):
        explorer("replication", out, resume=True).run()
    with pytest.raises(PipelineError, match="already holds an exploration run"):
        explorer("unclean-election", out).run()
    with pytest.raises(PipelineError, match="no exploration run"):
        explorer("unclean-election", tmp_path / "nothing", resume=True).run()


@pytest.mark.parametrize("name, max_states", [("replication", 1), ("replication", 50), ("replication", 289),
                                              ("replication", 290), ("unclean-election", 20),
                                              ("hw-truncation-one-crash", 300), ("hw-truncation-one-crash", 10**6)])
def test_max_states_matches_the_checker(name, max_states, tmp_path):
    """--max-states stops where the Checker does: the same count, verdict, coverage and unwitnessed
    properties (the Checker stops once it holds N states, even when that is all of them)."""
    res = explorer(name, tmp_path / "run", max_states=max_states).run()
    want = checker(name, max_states=max_states)
    assert summary(res.result) == summary(want)
    assert res.result.limit_hit == want.limit_hit
