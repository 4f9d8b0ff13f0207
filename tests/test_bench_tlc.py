"""benchmarks/bench_tlc.py: TLC and isrcheck side by side. TLC itself is not installed here, so a
stand-in `java` plays it (it prints TLC's summary line); the isrcheck side runs for real. What is
checked is the benchmark's own work: the wrapper written for the module, the states compared, the
ratio printed, and bad arguments refused in one line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_tlc.py"


def _specs(tmp_path: Path) -> Path:
    specs = tmp_path / "specs"
    (specs / "tlc").mkdir(parents=True)
    for module in ("Kip320", "KafkaTruncateToHighWatermark"):
        (specs / f"{module}.tla").write_text(f"---- MODULE {module} ----\n====\n")
    (specs / "tlc" / "MC_Kip320.tla").write_text("---- MODULE MC_Kip320 ----\nEXTENDS Kip320, TLC\n====\n")
    (specs / "tlc" / "MC_R3_Sym_StrongIsr.cfg").write_text(
        "CONSTANTS\n    Replicas = {r1, r2, r3}\nSYMMETRY Perms\nINVARIANT StrongIsr\n")
    return specs


def _java(tmp_path: Path, states: str) -> Path:
    """A stand-in for java that checks the wrapper it is given, then reports ``states``."""
    fake = tmp_path / "java"
    fake.write_text("#!/bin/sh\n"
                    "for last; do :; done\n"  # the module name is the last argument
                    "grep -q \"EXTENDS KafkaTruncateToHighWatermark, TLC\" \"$last.tla\" || exit 3\n"
                    "grep -q 'INVARIANT TypeOkTLC' *.cfg || exit 4\n"
                    "grep -q 'Replicas = {r1, r2}' *.cfg || exit 5\n"
                    f"echo 'Model checking completed.'; echo '99 states generated, {states} distinct states found'\n")
    fake.chmod(0o755)
    return fake


def _run(tmp_path: Path, states: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--tlc", "unused.jar", "--specs", str(_specs(tmp_path)),
                           "--java", str(_java(tmp_path, states)), "--replicas", "2", *extra], capture_output=True, text=True,
                          timeout=300)


def test_a_row_runs_both_sides_and_prints_the_ratio(tmp_path: Path) -> None:
    r = _run(tmp_path, "31,428", "--rows", "truncate-sym")
    assert r.returncode == 0, r.stderr
    row = [ln for ln in r.stdout.splitlines() if ln.startswith("KafkaTruncateToHighWatermark")]
    assert len(row) == 1 and "31,428" in row[0] and row[0].rstrip().endswith("x")


def test_different_counts_are_an_error(tmp_path: Path) -> None:
    r = _run(tmp_path, "31,429", "--rows", "truncate-sym")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "error: KafkaTruncateToHighWatermark, SYMMETRY, TypeOk: TLC found 31,429 states, isrcheck 31,428"]


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    r = _run(tmp_path, "1", "--rows", "nonsense")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: --rows: no row nonsense (kip-320-sym, truncate-sym, kip-320)"]
    r = subprocess.run([sys.executable, str(SCRIPT), "--tlc", "x", "--specs", str(tmp_path / "none"), "--rows",
                        "kip-320-sym"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.strip().startswith("error: --specs: no ")
