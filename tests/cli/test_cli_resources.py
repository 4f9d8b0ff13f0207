"""Resource guards of `check`, `simulate` and `run` (isrcheck/commands/resources.py): the memory ceiling
(--max-memory, ISRCHECK_MAX_MEMORY) stops a run with the incomplete verdict, exit 1 and one line
naming the limit; bad sizes are input errors; progress lines reach a piped stderr; a scenario
longer than the step cap is refused.

The ceilings used here (1 MiB) are far below any Python process's resident memory, so the first
reading trips them; the same runs without a ceiling complete, which shows the ceiling is what
stopped them. The model (clean-election-isr-shrink, 9,222 states) is larger than one reading's
interval (1,024 states), so the single-process checker stops part of the way through.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from isrcheck.commands import resources
from isrcheck.model.config import ConfigError

MODEL = "clean-election-isr-shrink"
FULL_STATES = 9222
SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "failover.toml"


def _limit_line(stderr: str, source: str) -> str:
    """The one line saying the memory ceiling stopped the run (and how to raise it)."""
    lines = [x for x in stderr.splitlines() if x.strip()]
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("stopped: resident memory passed the ceiling of 1.0 MiB"), line
    assert f"({source})" in line and "--max-memory SIZE" in line and "ISRCHECK_MAX_MEMORY=SIZE" in line, line
    return line


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    """No progress lines unless a test asks for them, and no ceiling from the environment."""
    monkeypatch.setenv(resources.PROGRESS_ENV, "3600")
    monkeypatch.delenv(resources.MEMORY_ENV, raising=False)
    monkeypatch.delenv(resources.STEPS_ENV, raising=False)


# ---------------------------------------------------------------------------- the ceiling
@pytest.mark.parametrize("workers", ["1", "2"])
def test_check_stops_at_the_memory_ceiling_incomplete_with_one_line(cli, workers):
    res = cli("check", MODEL, "--max-memory", "1M", "--workers", workers, "--json")
    assert res.exit_code == 1, (res.stdout, res.stderr)
    doc = json.loads(res.stdout)
    assert doc["outcome"] == "incomplete" and doc["limit_hit"] == "memory"
    assert doc["distinct_states"] < FULL_STATES
    if workers == "1":  # the first reading comes before the first state is expanded
        assert doc["distinct_states"] == 1
    _limit_line(res.stderr, "--max-memory")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_model_that_ends_before_a_periodic_reading_still_fails_at_the_ceiling(cli, workers):
    """replication has 289 states, fewer than the 1,024 between two periodic readings: the
    readings at the start and the end of the search hold it to the ceiling."""
    free = cli("check", "replication", "--max-memory", "none", "--workers", workers, "--json")
    assert free.exit_code == 0 and json.loads(free.stdout)["distinct_states"] < 1024
    res = cli("check", "replication", "--max-memory", "1M", "--workers", workers, "--json")
    assert res.exit_code == 1, (res.stdout, res.stderr)
    doc = json.loads(res.stdout)
    assert doc["outcome"] == "incomplete" and doc["limit_hit"] == "memory"
    _limit_line(res.stderr, "--max-memory")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_without_a_ceiling_the_same_check_completes(cli, workers):
    res = cli("check", MODEL, "--max-memory", "none", "--workers", workers, "--json")
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and doc["outcome"] == "success" and doc["limit_hit"] is None
    assert doc["distinct_states"] == FULL_STATES and res.stderr == ""


def test_the_text_verdict_says_incomplete_at_the_memory_limit(cli):
    res = cli("check", MODEL, "--max-memory", "1M")
    assert res.exit_code == 1
    assert f"{MODEL}: INCOMPLETE - stopped at the memory limit" in res.stdout
    _limit_line(res.stderr, "--max-memory")


def test_the_environment_sets_the_ceiling_and_the_option_wins(cli, monkeypatch):
    monkeypatch.setenv(resources.MEMORY_ENV, "1M")
    res = cli("check", MODEL, "--json")
    assert res.exit_code == 1 and json.loads(res.stdout)["limit_hit"] == "memory"
    _limit_line(res.stderr, resources.MEMORY_ENV)
    res = cli("check", MODEL, "--json", "--max-memory", "0")
    assert res.exit_code == 0 and json.loads(res.stdout)["outcome"] == "success"


def test_simulate_stops_at_the_memory_ceiling(cli):
    res = cli("simulate", "replication", "--walks", "500", "--max-memory", "1M", "--json")
    assert res.exit_code == 1, (res.stdout, res.stderr)
    doc = json.loads(res.stdout)
    assert doc["outcome"] == "incomplete" and doc["limit_hit"] == "memory" and doc["walks"] < 500
    _limit_line(res.stderr, "--max-memory")
    text = cli("simulate", "replication", "--walks", "500", "--max-memory", "1M")
    assert text.exit_code == 1 and "replication: INCOMPLETE - stopped at the memory limit" in text.stdout


def test_simulate_without_a_ceiling_is_not_stopped(cli):
    res = cli("simulate", "replication", "--walks", "50", "--max-memory", "none", "--json")
    doc = json.loads(res.stdout)
    assert doc["limit_hit"] is None and doc["walks"] == 50 and doc["outcome"] != "incomplete"


def test_run_stops_at_the_memory_ceiling_without_the_table(cli):
    res = cli("run", str(SCENARIO), "--max-memory", "1M", "--json")
    assert res.exit_code == 1, (res.stdout, res.stderr)
    doc = json.loads(res.stdout)
    assert doc["outcome"] == "incomplete" and doc["limit_hit"] == "memory"
    assert doc["steps_replayed"] < doc["steps_total"] == 18 and doc["steps"] == []
    _limit_line(res.stderr, "--max-memory")
    text = cli("run", str(SCENARIO), "--max-memory", "1M")
    assert text.exit_code == 1 and "INCOMPLETE - stopped at the memory limit after 0 of 18 steps" in text.stdout
    whole = cli("run", str(SCENARIO), "--max-memory", "none", "--json")
    assert whole.exit_code == 0 and len(json.loads(whole.stdout)["steps"]) == 19


# ---------------------------------------------------------------------------- bad sizes
@pytest.mark.parametrize("size", ["abc", "12X", "-1", "1.2.3", "", "4 GB extra", "0.0000001K"])
@pytest.mark.parametrize("command", [["check", MODEL], ["simulate", "replication"], ["run", str(SCENARIO)]])
def test_a_bad_max_memory_is_one_error_line(cli, assert_input_error, command, size):
    res = cli(*command, "--max-memory", size)
    assert_input_error(res, "--max-memory")


def test_a_bad_environment_ceiling_is_one_error_line(cli, assert_input_error, monkeypatch):
    monkeypatch.setenv(resources.MEMORY_ENV, "lots")
    assert_input_error(cli("check", MODEL), resources.MEMORY_ENV, "'lots'")


def test_sizes_parse_in_binary_units():
    assert resources.parse_size("4G", "x") == 4 << 30
    assert resources.parse_size("512M", "x") == 512 << 20
    assert resources.parse_size("1.5GiB", "x") == 3 << 29
    assert resources.parse_size("1024k", "x") == 1 << 20
    assert resources.parse_size("1048576", "x") == 1 << 20
    for tiny in ("64k", "65536"):  # below 1 MiB: less than any run uses, so a unit was left off
        with pytest.raises(ConfigError, match="at least 1 MiB"):
            resources.parse_size(tiny, "x")
    for none in ("0", "none", "NONE", "off", "unlimited", " 0 "):
        assert resources.parse_size(none, "x") is None


def test_the_default_ceiling_is_the_smaller_of_three_quarters_of_memory_and_8_gib(monkeypatch):
    monkeypatch.setattr(resources, "_cgroup_limit", lambda: None)
    pages = {"SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(resources.os, "sysconf", lambda name: pages[name] if name in pages else pages["phys"])
    pages["phys"] = (4 << 30) // 4096  # 4 GiB of RAM: 3 GiB
    assert resources.default_memory_ceiling() == 3 << 30
    pages["phys"] = (64 << 30) // 4096  # 64 GiB: the 8 GiB cap
    assert resources.default_memory_ceiling() == 8 << 30
    monkeypatch.setattr(resources, "_cgroup_limit", lambda: 2 << 30)  # a container's 2 GiB limit
    assert resources.default_memory_ceiling() == 3 << 29
    assert resources.memory_ceiling(None).limit == 3 << 29


# ---------------------------------------------------------------------------- progress in a pipe
_PROGRESS = re.compile(r"^(checking|simulating) (\S+|peer \S+ \(\w+\)): [\d,]+ states  depth \d+  (queue|walks left) [\d,]+  "
                       r"[\d,]+/s  \d+ s  mem \d+\.\d [KMGT]iB (of \d+\.\d [KMGT]iB|\(no ceiling\))$")


def test_check_prints_progress_lines_on_a_piped_stderr(cli, monkeypatch):
    monkeypatch.setenv(resources.PROGRESS_ENV, "0")  # every report of the checker, not every 5 s
    res = cli("check", MODEL, "--json")
    assert res.exit_code == 0
    lines = res.stderr.splitlines()
    assert len(lines) >= 2 and all(_PROGRESS.match(x) for x in lines), res.stderr
    assert lines[-1].startswith(f"checking {MODEL}: {FULL_STATES:,} states")
    json.loads(res.stdout)  # stdout stays one JSON object


@pytest.mark.parametrize("disk", [False, True], ids=["memory", "disk"])
def test_a_peer_check_prints_progress_lines_on_a_piped_stderr(cli, monkeypatch, tmp_path, disk):
    """The transcription of the TLA+ specification reports as a model's check does, in memory and
    with --disk (it printed nothing on a pipe)."""
    monkeypatch.setenv(resources.PROGRESS_ENV, "0")
    res = cli("check", "--peer", "kip-320", "--json", *(["--disk", str(tmp_path / "d")] if disk else []))
    assert res.exit_code == 0, res.stderr
    lines = res.stderr.splitlines()
    if disk:  # and the one line saying what the files took
        assert lines[-1].startswith("disk: 22 levels, "), res.stderr
        lines = lines[:-1]
    assert len(lines) >= 2 and all(_PROGRESS.match(x) for x in lines), res.stderr
    assert lines[-1].startswith(f"checking peer kip-320 (Kip320): {json.loads(res.stdout)['distinct_states']:,} states")


def test_simulate_prints_progress_lines_on_a_piped_stderr(cli, monkeypatch):
    monkeypatch.setenv(resources.PROGRESS_ENV, "0")
    res = cli("simulate", "replication", "--walks", "200")
    lines = res.stderr.splitlines()
    assert lines and all(_PROGRESS.match(x) for x in lines), res.stderr
    assert "walks left 0" in lines[-1]


def test_progress_lines_show_memory_against_the_ceiling(cli, monkeypatch):
    monkeypatch.setenv(resources.PROGRESS_ENV, "0")
    res = cli("check", MODEL, "--max-memory", "3G")
    assert res.exit_code == 0
    lines = res.stderr.splitlines()
    assert lines and all(re.search(r"  mem \d+\.\d [KMG]iB of 3\.0 GiB$", x) for x in lines), res.stderr
    res = cli("check", MODEL, "--max-memory", "0")
    assert res.stderr.splitlines() and all(x.endswith("(no ceiling)") for x in res.stderr.splitlines())


def test_no_progress_line_before_the_interval(cli):
    res = cli("check", MODEL)  # the interval is an hour here (the fixture)
    assert res.exit_code == 0 and res.stderr == ""


def test_a_bad_progress_interval_is_one_error_line(cli, assert_input_error, monkeypatch):
    monkeypatch.setenv(resources.PROGRESS_ENV, "soon")
    assert_input_error(cli("check", MODEL), resources.PROGRESS_ENV)


# ---------------------------------------------------------------------------- the step cap
def _scenario(tmp_path: Path, steps: int) -> Path:
    p = tmp_path / "long.toml"
    p.write_text('model = "replication"\nsteps = [' + ", ".join(['"Fetch(2, 0)"'] * steps) + "]\n")
    return p


def test_a_scenario_beyond_the_step_cap_is_refused(cli, assert_input_error, tmp_path):
    path = _scenario(tmp_path, 6)
    assert_input_error(cli("run", str(path), "--max-steps", "5"), "6 steps, more than the limit of 5", "--max-steps")
    assert cli("run", str(path), "--max-steps", "6").exit_code != 2  # at the cap: replayed


def test_the_default_step_cap_and_its_environment_variable(cli, assert_input_error, monkeypatch, tmp_path):
    long = _scenario(tmp_path, resources.DEFAULT_MAX_STEPS + 1)
    assert_input_error(cli("run", str(long)), f"more than the limit of {resources.DEFAULT_MAX_STEPS:,}")
    monkeypatch.setenv(resources.STEPS_ENV, "3")
    assert_input_error(cli("run", str(SCENARIO)), "18 steps, more than the limit of 3", resources.STEPS_ENV)
    monkeypatch.setenv(resources.STEPS_ENV, "0")  # no cap
    assert cli("run", str(SCENARIO)).exit_code == 0
    monkeypatch.setenv(resources.STEPS_ENV, "many")
    assert_input_error(cli("run", str(SCENARIO)), resources.STEPS_ENV)


def test_check_peer_stops_at_the_memory_ceiling_too(cli):
    res = cli("check", "--peer", "kip-320", "--max-memory", "1M", "--json")
    assert res.exit_code == 1, (res.stdout, res.stderr)
    doc = json.loads(res.stdout)
    assert doc["outcome"] == "incomplete" and doc["limit_hit"] == "memory"
    _limit_line(res.stderr, "--max-memory")
