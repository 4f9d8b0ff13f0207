"""benchmarks/bench_scale.py (``make bench-scale``) works: its --quick form, on the checkpoint group
only (two ``check`` children of 289 states: seconds, most of it two interpreters starting), prints the table with the ratio
and the load average and gives both runs the same state count; on the one-process liveness group
(clean-election, seconds) the run with liveness reports its graph per state and per edge. The
full-size runs take minutes and are not run here; --only's refusal of an unknown group is one line
with exit status 2.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_scale.py"


def quick(group: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    """``bench_scale.py --quick --only GROUP``, which must succeed: its run and its JSON rows."""
    out = tmp_path / "scale.json"
    r = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", group, "--json", str(out)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return r, json.loads(out.read_text())


def test_quick_checkpoint_rows(tmp_path: Path) -> None:
    r, rows = quick("checkpoint", tmp_path)
    assert "x time" in r.stdout and "load average at the start" in r.stdout
    assert "against the plain run; checkpoint: " in r.stdout and "snapshots written to" in r.stdout
    assert [row["group"] for row in rows] == ["checkpoint", "checkpoint"]
    assert rows[0]["states"] == rows[1]["states"] == 289
    assert rows[1]["snapshot_bytes"] > 0 and rows[0]["snapshot_bytes"] is None
    assert all(row["tree_bytes"] >= row["peak_bytes"] > 0 for row in rows)


def test_an_unknown_group_is_refused() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT), "--only", "nonsense"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: --only: no group nonsense (liveness, liveness-1p, brokers, peer, disk, checkpoint, disk-checkpoint, "
        "checkpoint-workers, spark, disk-200m)"]


def test_quick_liveness_rows_report_the_graph(tmp_path: Path) -> None:
    """The run with liveness reports its graph (issue 32: bytes per state and per edge) from the
    check's JSON; the safety run has none."""
    r, rows = quick("liveness-1p", tmp_path)
    safety, live = rows
    assert safety["graph_bytes"] is None and live["graph_states"] == live["states"] == safety["states"] > 0
    assert live["graph_edges"] > live["graph_states"] and live["graph_bytes"] > 8 * live["graph_edges"]
    per_state = round((live["graph_bytes"] - 8 * live["graph_edges"]) / live["graph_states"])
    assert f"liveness graph: {live['states']:,} states, {live['graph_edges']:,} edges" in r.stdout
    assert f"{per_state:,} B a state (index included) + 8 B an edge" in r.stdout


def test_quick_disk_rows_compare_with_memory(tmp_path: Path) -> None:
    """The --disk row beside the same check in memory: the same states, its speed as a fraction of
    the in-memory run's (issue 32's target: at least half) and the run's own line on its files."""
    r, rows = quick("disk", tmp_path)
    memory, disk = rows
    assert memory["states"] == disk["states"] == 28_939  # the peer's kip-320, two replicas (TLC's count)
    assert memory["checkpoint_line"] is None and disk["checkpoint_line"].startswith("disk: 22 levels, ")
    ratio = (disk["states"] / disk["seconds"]) / (memory["states"] / memory["seconds"])
    assert f"{ratio:.2f}x the in-memory states/s; disk: 22 levels, " in r.stdout


def test_quick_disk_checkpoint_rows(tmp_path: Path) -> None:
    """A --disk run checkpointed at every level beside the same --disk run: the same states, the
    snapshot written, and both of the run's own lines (its snapshots, its files) in the table."""
    r, rows = quick("disk-checkpoint", tmp_path)
    plain, checkpointed = rows
    assert plain["states"] == checkpointed["states"] == 289
    assert plain["snapshot_bytes"] is None and checkpointed["snapshot_bytes"] > 0
    assert checkpointed["checkpoint_line"].startswith("checkpoint: ") and "; disk: " in checkpointed["checkpoint_line"]
    assert "against the plain run; checkpoint: " in r.stdout


def test_quick_checkpoint_workers_rows(tmp_path: Path) -> None:
    """A two-worker run checkpointed at every level beside the same run plain: the same states, the
    snapshot written (the parallel search's, issue 32), and the run's own line on its snapshots."""
    r, rows = quick("checkpoint-workers", tmp_path)
    plain, checkpointed = rows
    assert plain["states"] == checkpointed["states"] == 2954
    assert plain["snapshot_bytes"] is None and checkpointed["snapshot_bytes"] > 0
    assert "against the plain run; checkpoint: " in r.stdout


def test_the_half_hour_group_runs_only_when_named() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import bench_scale
    finally:
        sys.path.remove(str(SCRIPT.parent))
    rows = bench_scale.runs(False)
    assert "disk-200m" not in {r.group for r in bench_scale.selected(rows, None)}
    named = bench_scale.selected(rows, "disk-200m")
    assert {r.group for r in named} == {"disk-200m"} and len(named) == 3
    assert any("205000000" in r.args for r in named) and sum(r.disk for r in named) == 2


def test_quick_spark_rows_compare_spark_with_check(tmp_path: Path) -> None:
    """The spark group: ``spark explore`` on local[2] beside ``check --workers 2`` on the same
    space, the same states, with how many levels ran on Spark and the time ratio."""
    r, rows = quick("spark", tmp_path)
    check, spark = rows
    assert check["states"] == spark["states"] == 289 and check["outcome"] == spark["outcome"] == "success"
    assert spark["spark_levels"] >= 1 and spark["levels"] > spark["spark_levels"]
    assert spark["tree_bytes"] > spark["peak_bytes"]  # the JVM and its Python workers are counted
    ratio = spark["seconds"] / check["seconds"]
    assert f"{spark['spark_levels']} of {spark['levels']} levels on Spark; {ratio:.2f}x the time of `check`" in r.stdout


def test_rounds_interleave_the_runs_and_report_the_median_ratio(tmp_path: Path) -> None:
    """--rounds 2: every row twice, interleaved; median times, the ratio to the group's first row
    round by round (its spread printed), and the disk line's rate from the median of those ratios."""
    import statistics

    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", "disk", "--rounds", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    memory, disk = json.loads(out.read_text())
    assert len(memory["round_seconds"]) == len(disk["round_seconds"]) == 2
    assert memory["seconds"] == statistics.median(memory["round_seconds"])
    ratios = [d / m for d, m in zip(disk["round_seconds"], memory["round_seconds"])]
    assert disk["round_ratios"] == ratios
    assert r.stdout.count("# round ") == 2
    lo, hi = sorted(ratios)
    assert f"2 rounds: time ratio min {lo:.2f}, median {statistics.median(ratios):.2f}, max {hi:.2f}" in r.stdout
    assert f"{1 / statistics.median(ratios):.2f}x the in-memory states/s" in r.stdout


def test_rounds_must_be_positive() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == ["error: --rounds must be at least 1"]
    assert r.stdout == ""
