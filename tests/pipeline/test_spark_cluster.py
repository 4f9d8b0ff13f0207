"""`spark explore` and `spark sweep` on a real multi-process Spark cluster: a ``local-cluster``
master (a standalone master and two workers inside the driver's JVM, each executor its own JVM
with its own Python workers), given with --master, must give the local checker's results. Both
commands run in one child process on one session of that master (cluster_run.py), so the
executors start once; the JSON of each command says where its jobs ran."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

MASTER = "local-cluster[2,1,2048]"  # 2 workers, 1 core and 2 GiB each


def test_explore_and_sweep_on_a_local_cluster(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text('[base]\nmax_records = 1\nreplication_factor = 2\n[grid]\nbrokers = [2, 3]\n'
                    '"faults.crashes" = [1]\n')
    commands = [
        ["spark", "explore", "unclean-election", "--master", MASTER, "--spark-threshold", "0", "--per-level",
         "--out", str(tmp_path / "run"), "--json"],
        ["spark", "sweep", "--grid", str(grid), "--master", MASTER, "--json"],
        ["spark", "explore", "clean-election", "--master", MASTER, "--spark-threshold", "0", "--out",
         str(tmp_path / "run2"), "--json"],
    ]
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("cluster_run.py")), MASTER,
                           *[json.dumps(c) for c in commands]], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (code_e, out_e, err_e), (code_s, out_s, err_s), (code_c, out_c, err_c) = json.loads(proc.stdout.splitlines()[-1])

    e = manifest.get("unclean-election")
    want = Checker(build_model(e.config, symmetry=e.symmetry)).run()
    assert code_e == 1, err_e
    got = json.loads(out_e)
    assert got["spark"] == {"master": MASTER, "executors": 2}  # tasks ran in two executor processes
    assert got["spark_levels"] == len(got["levels"]) - 1  # every level but the initial one on Spark
    assert all(lv["jobs"] == 1 and not lv["resident"] for lv in got["levels"] if lv["engine"] == "spark")
    assert (got["outcome"], got["distinct_states"], got["depth"], got["transitions"]) == \
        (want.outcome, want.distinct_states, want.depth, want.transitions)
    assert [(v["property"], v["length"]) for v in got["violations"]] == \
        [(v.property, v.length) for v in want.violations]

    # a model that holds (2,954 states, 20-odd levels): every level on the two executors as one
    # resident job (a task in each executor, the two meeting through the run directory), and the
    # Checker's counts
    c = manifest.get("clean-election")
    want_c = Checker(build_model(c.config, symmetry=c.symmetry)).run()
    assert code_c == 0, err_c
    got_c = json.loads(out_c)
    assert got_c["spark"] == {"master": MASTER, "executors": 2}
    assert got_c["spark_levels"] == len(got_c["levels"]) - 1
    spark_levels = [lv for lv in got_c["levels"] if lv["engine"] == "spark"]
    assert all(lv["resident"] for lv in spark_levels)
    assert [lv["jobs"] for lv in spark_levels] == [1] + [0] * (len(spark_levels) - 1)
    assert (got_c["outcome"], got_c["distinct_states"], got_c["depth"], got_c["transitions"], got_c["coverage"]) == \
        (want_c.outcome, want_c.distinct_states, want_c.depth, want_c.transitions, want_c.coverage)

    assert code_s == 0, err_s
    sweep = json.loads(out_s)
    assert sweep["spark"] == {"master": MASTER, "executors": 2}
    for row in sweep["rows"]:
        raw = {"max_records": 1, "replication_factor": 2, "brokers": row["values"]["brokers"],
               "faults": {"crashes": row["values"]["faults.crashes"]}}
        w = Checker(build_model(from_mapping(raw))).run()
        assert (row["outcome"], row["states"], row["depth"], row["transitions"]) == \
            (w.outcome, w.distinct_states, w.depth, w.transitions)
