"""`isrcheck spark conform`: a corpus replayed on the implementation in Spark tasks gives, trace by
trace, the verdict and first diverging step of the in-process replay; a planted bug named by
--mutant reaches the workers."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from spark_helpers import assert_one_line_error

from isrcheck.inputs import manifest

MUTANTS_FILE = Path(__file__).resolve().parents[1] / "conformance" / "conform_mutants.py"
MUTANT = f"{MUTANTS_FILE}:fetch_answers_new_hw"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, spark_session) -> Path:
    from isrcheck.pipeline.spec import ModelSpec
    from isrcheck.pipeline.traces import generate

    out = tmp_path_factory.mktemp("conform") / "corpus"
    e = manifest.get("replication")
    generate(spark_session, ModelSpec.of("replication", e.config, e.symmetry), out, count=16, seed=4, max_depth=14)
    return out


def _traces(corpus: Path) -> dict[str, list[dict]]:
    rows = ds.dataset(str(corpus), format="parquet", partitioning="hive").to_table().to_pylist()
    out: dict[str, list[dict]] = {}
    for r in sorted(rows, key=lambda r: (r["trace_id"], r["step"])):
        out.setdefault(r["trace_id"], []).append(r)
    return out


def _in_process(rows: list[dict]) -> tuple[str, int | None, str | None]:
    """The same trace replayed in this process with conform_actions (no Spark)."""
    from isrcheck.conformance.replay import conform_actions
    from isrcheck.specs.actions import check_action
    from isrcheck.model.config import from_mapping

    cfg = from_mapping(json.loads(rows[0]["config"]))
    acts = [check_action({"name": r["action"], "args": json.loads(r["args"])}) for r in rows[1:]
            if r["observation"] is not None]
    r = conform_actions(cfg, acts)
    d = r.divergence
    return ("conforms", None, None) if d is None else ("diverges", d.index, d.action_text)


@pytest.mark.spark
def test_healthy_implementation_conforms_with_results_and_batches(corpus, spark_session, tmp_path):
    from isrcheck.pipeline.conform import RESULT_SCHEMA, run_conform

    seen = []
    run = run_conform(spark_session, corpus, out=tmp_path / "res", batch_size=10, on_batch=seen.append)
    traces = _traces(corpus)
    assert run.ok and run.traces == 16 and run.verdicts == {"conforms": 16}
    assert [(b.batch, b.batches, b.traces) for b in seen] == [(1, 2, 10), (2, 2, 6)]
    assert run.steps == sum(len(t) - 1 for t in traces.values())
    table = ds.dataset(str(tmp_path / "res" / "results"), format="parquet").to_table()
    assert table.schema == RESULT_SCHEMA and sorted(table.column("trace_id").to_pylist()) == sorted(traces)
    assert "every replayed trace conforms" in (tmp_path / "res" / "summary.txt").read_text()


@pytest.mark.spark
def test_a_planted_bug_reaches_the_workers_and_is_reported_at_its_first_step(corpus, spark_session):
    """Each trace's verdict and first diverging step equal the in-process replay under the same bug."""
    sys.path.insert(0, str(MUTANTS_FILE.parent))
    try:
        import conform_mutants as M
    finally:
        sys.path.remove(str(MUTANTS_FILE.parent))
    from isrcheck.pipeline.conform import run_conform

    run = run_conform(spark_session, corpus, mutant=MUTANT, keep=100)
    assert not run.ok and run.verdicts.get("diverges", 0) > 0
    got = {d["trace_id"]: ("diverges", d["step"], d["action"]) for d in run.divergences}
    traces = _traces(corpus)
    with M.fetch_answers_new_hw():
        want = {tid: _in_process(rows) for tid, rows in traces.items()}
    assert {t: w for t, w in want.items() if w[0] == "diverges"} == got
    assert any(step > 1 for _, step, _ in got.values())  # not only at the first step
    d = run.divergences[0]
    assert d["reason"] == "observation" and "hw" in d["diff"] and "implementation" in d["diff"]
    # the driver's implementation was never patched: a replay here conforms again
    assert all(_in_process(rows)[0] == "conforms" for rows in traces.values())


@pytest.mark.spark
def test_cli_exit_status_and_summary(cli, corpus, tmp_path):
    r = cli("spark", "conform", str(corpus), "--mutant", MUTANT, "--model", "replication", "--mode", "random")
    assert r.exit_code == 1, r.stderr
    assert "diverges replication:random:" in r.stdout and " at step " in r.stdout
    assert "do not conform" in r.stdout.splitlines()[-1]


def test_conform_bad_input_is_one_line(cli, tmp_path):
    assert_one_line_error(cli("spark", "conform", str(tmp_path)), "not a trace corpus")
    assert_one_line_error(cli("spark", "conform", str(tmp_path / "missing")), "no such directory")


@pytest.mark.spark
def test_conform_bad_mutant_and_filter_are_one_line(cli, corpus, tmp_path):
    assert_one_line_error(cli("spark", "conform", str(corpus), "--mutant", "nocolon"), "MODULE:ATTR")
    assert_one_line_error(cli("spark", "conform", str(corpus), "--mutant", f"{MUTANTS_FILE}:nothing"), "nothing")
    assert_one_line_error(cli("spark", "conform", str(corpus), "--mutant", "no/such/file.py:x"), "does not exist")
    assert_one_line_error(cli("spark", "conform", str(corpus), "--model", "nope"), "no traces match")


def _rows(name: str = "replication", seed: int = 9) -> list[dict]:
    """Corpus rows of one random walk, built in-process as `spark traces` builds them."""
    from isrcheck.pipeline.paths import path_rows, random_walk
    from isrcheck.pipeline.spec import ModelSpec

    e = manifest.get(name)
    spec = ModelSpec.of(name, e.config, e.symmetry)
    model = spec.build()
    meta = {"model": name, "config": json.dumps(spec.config, sort_keys=True), "generation": spec.generation,
            "mode": "random", "tool_version": "test", "seed": seed}
    return path_rows(model, random_walk(model, seed, 8), trace_id=f"{name}:random:{seed}", meta=meta)


def test_replay_trace_verdicts_without_spark():
    """The per-row work is pure: conforms; a corpus observation the model does not produce is
    stale (not blamed on the implementation); rows that are not a trace are invalid."""
    from isrcheck.pipeline.conform import replay_trace

    rows = _rows()
    assert len(rows) > 3
    ok = replay_trace(rows)
    assert ok["verdict"] == "conforms" and ok["steps"] == len(rows) - 1 and ok["matched"] == len(rows)

    stale = [dict(r) for r in rows]
    obs = json.loads(stale[2]["observation"])
    obs["controller"]["epoch"] += 7
    stale[2]["observation"] = json.dumps(obs)
    r = replay_trace(stale)
    assert (r["verdict"], r["step"], r["reason"]) == ("stale", 2, "stale")

    bad_action = [dict(r) for r in rows]
    bad_action[1]["action"] = "Teleport"
    assert replay_trace(bad_action)["verdict"] == "invalid" and "Teleport" in replay_trace(bad_action)["message"]
    gap = rows[:1] + rows[2:]
    assert replay_trace(gap)["verdict"] == "invalid"
