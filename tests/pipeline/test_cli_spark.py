"""The `isrcheck spark` commands: results, tables, determinism, and one-line errors on bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from spark_helpers import assert_one_line_error

from isrcheck.inputs import manifest

# ---------------------------------------------------------------------------- bad input (no Spark job)


def test_unknown_model_is_one_line(cli):
    assert_one_line_error(cli("spark", "explore", "unclean-electio"), "unknown model", "unclean-election")
    assert_one_line_error(cli("spark", "swarm", "no-such-model", "--walks", "3"), "unknown model")
    assert_one_line_error(cli("spark", "traces", "nope", "--count", "1", "--out", "x"), "unknown model")


def test_bad_options_are_one_line(cli, tmp_path):
    assert_one_line_error(cli("spark", "explore", "replication", "--resume"), "--resume needs --out")
    assert_one_line_error(cli("spark", "explore", "replication", "--set", "brokers=99"), "brokers")
    # a bad master URL is refused before any level runs or a JVM starts
    assert_one_line_error(cli("spark", "explore", "replication", "--master", "bogus"), "not a Spark master URL")
    (tmp_path / "g.toml").write_text("[grid]\nbrokers = [2]\n")
    assert_one_line_error(cli("spark", "sweep", "--grid", str(tmp_path / "g.toml"), "--master", "local[two]"),
                          "not a Spark master URL")
    assert_one_line_error(cli("spark", "explore", "replication", "--partitions", "0"), "--partitions")


@pytest.mark.parametrize("text, fragment", [
    ("this is [not toml", "not valid TOML"),
    ("[base]\nbrokers = 3\n", "needs a [grid] table"),
    ("[grid]\nbrokers = 3\n", "grid.brokers must be a non-empty list"),
    ("[grid]\nbrokers = []\n", "non-empty list"),
    ("[grid]\nbrokers = [2, 3]\n[check]\nmax_states = -1\n", "check.max_states"),
    ("[grid]\nbrokers = [2, 3]\nextra = 1\n", "grid.extra must be"),
    ("color = 1\n[grid]\nbrokers = [2]\n", "unknown key 'color'"),
    ("[grid]\nbrokers = [1, 2]\nreplication_factor = [2]\n", "point brokers=1"),
    ("[grid]\nwarp_speed = [1, 2]\n", "unknown key 'warp_speed'"),
    ("model = \"nope\"\n[grid]\nbrokers = [3]\n", "unknown model"),
])
def test_bad_grid_files_are_one_line(cli, tmp_path, text, fragment):
    g = tmp_path / "grid.toml"
    g.write_text(text)
    assert_one_line_error(cli("spark", "sweep", "--grid", str(g)), fragment)


def test_missing_grid_file_is_one_line(cli, tmp_path):
    assert_one_line_error(cli("spark", "sweep", "--grid", str(tmp_path / "none.toml")), "no such file")


def test_non_corpus_directories_are_one_line(cli, tmp_path):
    (tmp_path / "junk.txt").write_text("x")
    for cmd in (["analyze", str(tmp_path)], ["query", str(tmp_path), "SELECT 1"]):
        assert_one_line_error(cli("spark", *cmd), "not a trace corpus")
    assert_one_line_error(cli("spark", "analyze", str(tmp_path / "missing")), "no such directory")
    assert_one_line_error(cli("spark", "analyze", str(tmp_path / "junk.txt")), "not a directory")


def test_explore_in_process_json(cli, tmp_path):
    """A small model never reaches the Spark threshold: no JVM is started, the verdict is the gate's."""
    code, obj = cli.json("spark", "explore", "unclean-election", "--out", str(tmp_path / "run"))
    e = manifest.get("unclean-election")
    assert code == 1 and obj["outcome"] == "safety_failure"
    assert obj["violations"][0]["property"] == e.property and obj["violations"][0]["length"] == e.length
    assert obj["spark_levels"] == 0 and [lv["depth"] for lv in obj["levels"]] == [0, 1, 2, 3]
    code, again = cli.json("spark", "explore", "unclean-election", "--out", str(tmp_path / "run"), "--resume")
    assert again["distinct_states"] == obj["distinct_states"] and again["resumed_at"] == 4
    assert_one_line_error(cli("spark", "explore", "unclean-election", "--out", str(tmp_path / "run")),
                          "already holds an exploration run")


# ---------------------------------------------------------------------------- Spark jobs


@pytest.mark.spark
def test_sweep_table(cli, spark_session, tmp_path):
    g = tmp_path / "grid.toml"
    g.write_text('[base]\nmax_records = 1\nreplication_factor = 2\n'
                 '[grid]\nbrokers = [2, 3]\n"faults.crashes" = [1]\n')
    r = cli("spark", "sweep", "--grid", str(g), "--out", str(tmp_path / "sweep"), "--json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert [x["values"] for x in rows] == [{"brokers": 2, "faults.crashes": 1}, {"brokers": 3, "faults.crashes": 1}]
    from isrcheck.invariants import build_model
    from isrcheck.engine.checker import Checker
    from isrcheck.model.config import from_mapping

    for x in rows:
        raw = {"max_records": 1, "replication_factor": 2, "brokers": x["values"]["brokers"],
               "faults": {"crashes": x["values"]["faults.crashes"]}}
        want = Checker(build_model(from_mapping(raw))).run()
        assert (x["outcome"], x["states"], x["depth"]) == (want.outcome, want.distinct_states, want.depth)
    table = spark_session.read.parquet(str(tmp_path / "sweep")).orderBy("index").collect()
    assert [t["states"] for t in table] == [x["states"] for x in rows]
    assert table[1]["brokers"] == "3" and table[1]["faults.crashes"] == "1"


@pytest.mark.spark
def test_swarm_is_deterministic_for_a_seed(cli, spark_session):
    args = ("spark", "swarm", "unclean-election", "--walks", "40", "--seed", "5", "--tasks", "3", "--max-depth", "15")
    code1, a = cli.json(*args)
    code2, b = cli.json(*args)
    for x in (a, b):
        x.pop("seconds")
    assert a == b and code1 == code2
    assert a["tasks"] == 3 and a["distinct_states"] > 1
    if a["violations_found"]:
        assert code1 == 1 and a["shortest"]["property"] == "NoCommittedWriteLost"
        assert a["shortest"]["length"] == min(t["length"] for t in a["task_results"] if t["length"])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, spark_session):
    from spark_helpers import Cli

    cli = Cli()
    out = tmp_path_factory.mktemp("corpus") / "corpus"
    r1 = cli("spark", "traces", "unclean-election", "--count", "12", "--out", str(out), "--seed", "3",
             "--max-depth", "12", "--json")
    r2 = cli("spark", "traces", "controlled-shutdown", "--count", "5", "--mode", "exhaustive", "--out", str(out),
             "--set", "generation=kip-320", "--json")
    assert r1.exit_code == 0 and r2.exit_code == 0, (r1.stderr, r2.stderr)
    return out, json.loads(r1.stdout), json.loads(r2.stdout)


@pytest.mark.spark
def test_traces_schema_and_counts(corpus, spark_session):
    from isrcheck.pipeline.traces import CORPUS_SCHEMA, MARKER

    out, random_run, exhaustive_run = corpus
    assert (out / MARKER).exists()
    assert random_run["traces"] == 12 and exhaustive_run["traces"] == 5
    assert exhaustive_run["search_complete"] and exhaustive_run["generation"] == "kip-320"
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["generation=high-watermark", "generation=kip-320"]
    df = spark_session.read.parquet(str(out))
    assert set(df.columns) == set(CORPUS_SCHEMA.names)
    rows = df.collect()
    assert len(rows) == random_run["steps"] + exhaustive_run["steps"]
    by_trace: dict[str, list] = {}
    for r in rows:
        by_trace.setdefault(r["trace_id"], []).append(r)
    assert len(by_trace) == 17
    for steps in by_trace.values():
        steps.sort(key=lambda r: r["step"])
        assert [r["step"] for r in steps] == list(range(len(steps)))
        assert steps[0]["action"] is None and all(r["action"] for r in steps[1:])
        assert all(r["trace_length"] == len(steps) - 1 for r in steps)
        assert steps[0]["tool_version"] and json.loads(steps[0]["config"])["brokers"] == 3
        for r in steps:
            if r["observation"] is not None:
                from isrcheck.specs.observation import validate as validate_observation

                validate_observation(json.loads(r["observation"]))
    exhaustive = [s for s in by_trace.values() if s[0]["mode"] == "exhaustive"]
    assert {s[0]["seed"] for s in exhaustive} == {None}
    from isrcheck.invariants import build_model
    from isrcheck.engine.checker import Checker

    cfg = manifest.get("controlled-shutdown").config_with(["generation=kip-320"])
    deepest = Checker(build_model(cfg)).run().depth
    assert max(len(s) for s in exhaustive) - 1 == deepest  # shortest paths to the deepest states
    broken = [r for r in rows if r["broken"]]
    assert all(r["mode"] == "random" and r["step"] == r["trace_length"] for r in broken)
    assert random_run["violating_traces"] == len({r["trace_id"] for r in broken})


@pytest.mark.spark
def test_analyze_and_query(corpus, cli, tmp_path):
    out, random_run, exhaustive_run = corpus
    code, a = cli.json("spark", "analyze", str(out), "--out", str(tmp_path / "analysis"))
    assert code == 0
    assert a["traces"] == 17 and a["steps"] == random_run["steps"] + exhaustive_run["steps"]
    actions = {x["action"]: x for x in a["actions"]}
    assert actions["Produce"]["steps"] > 0 and actions["ControlledShutdown"]["steps"] > 0
    assert actions["CreateTopic"]["steps"] == 0  # never taken: listed with 0
    props = {x["property"]: x for x in a["properties"]}
    assert 0 < props["LeaderInIsr"]["exercised_steps"] <= a["steps"]
    assert props["ReassignmentRecoverable"]["exercised_steps"] == 0  # no reassignment in these models
    assert props["NoCommittedWriteLost"]["broken_traces"] == random_run["violating_traces"]
    moves = {(m["machine"], m["source"], m["target"]): m for m in a["transitions"]}
    assert moves[("replica", "OnlineReplica", "OfflineReplica")]["count"] > 0
    assert moves[("replica", "ReplicaDeletionStarted", "ReplicaDeletionSuccessful")]["count"] == 0
    assert all(m["in_table"] for m in a["transitions"])
    assert sum(d["traces"] for d in a["depths"]) == 17
    gens = {g["generation"]: g for g in a["generations"]}
    assert set(gens) == {"high-watermark", "kip-320"} and gens["kip-320"]["traces"] == 5
    for name in ("actions", "transitions", "properties", "depths", "generations"):
        assert any((tmp_path / "analysis" / name).glob("*.parquet"))
    assert "never taken" in (tmp_path / "analysis" / "summary.txt").read_text()

    from isrcheck.pipeline.analyze import HW_ABOVE_ISR_LEO

    code, q = cli.json("spark", "query", str(out), HW_ABOVE_ISR_LEO)
    assert code == 0 and q["columns"] == ["model", "fingerprint", "partition", "leader_hw", "min_isr_leo"]
    code, q = cli.json("spark", "query", str(out), "SELECT generation, count(*) AS n FROM states GROUP BY generation "
                                                   "ORDER BY generation")
    assert [r[0] for r in q["rows"]] == ["high-watermark", "kip-320"]
    assert_one_line_error(cli("spark", "query", str(out), "SELEC nonsense"), "query failed")
    assert_one_line_error(cli("spark", "query", str(out), "SELECT no_such_column FROM states"), "query failed")


@pytest.mark.spark
def test_query_over_an_exploration_run(cli, spark_session, tmp_path):
    run = tmp_path / "run"
    cli("spark", "explore", "unclean-election", "--out", str(run))
    code, q = cli.json("spark", "query", str(run), "SELECT count(*) AS n, max(size(obs.replicas)) AS r FROM states")
    assert code == 0 and q["rows"] == [[1 + 5 + 13 + 33, 3]]
    assert Path(run / "run.json").exists()
