"""Spark commands on a pipe (issue 31): a 72 s `spark` run printed nothing when stderr was not a
terminal. Now explore prints its level lines there, and every command holding a Spark session
prints a heartbeat line (elapsed time, active stages' task counts) every ISRCHECK_PROGRESS_SECONDS."""
from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from isrcheck.pipeline import session as spark_session_module
from isrcheck.pipeline.session import heartbeat, stage_text


class _Tracker:
    def getActiveStageIds(self):  # noqa: N802 - Spark's name
        return [3]

    def getStageInfo(self, sid):  # noqa: N802
        return SimpleNamespace(numCompletedTasks=5, numTasks=8)


FAKE = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: _Tracker()))


def test_heartbeat_says_how_far_the_stages_are():
    lines: list[str] = []
    two = threading.Event()

    def say(text: str) -> None:
        lines.append(text)
        if len(lines) >= 2:
            two.set()

    with heartbeat(FAKE, "spark swarm", say, 0.01):
        assert two.wait(30)
    assert all(re.fullmatch(r"spark swarm: \d+ s  stage 3: 5/8 tasks", x) for x in lines), lines
    count = len(lines)
    assert two.wait(0) and len(lines) in (count, count + 1)  # stopped with the block (one may be mid-print)


def test_stage_text_of_an_idle_or_broken_context():
    idle = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: SimpleNamespace(
        getActiveStageIds=lambda: [], getStageInfo=lambda sid: None)))
    assert stage_text(idle) == "between Spark stages"
    assert stage_text(SimpleNamespace()) == "Spark starting or stopping"
    assert stage_text(None) == "in-process"  # a lazy session not started yet


def test_explore_prints_its_levels_on_a_pipe(cli, tmp_path):
    """No JVM: a small model never reaches the Spark threshold."""
    res = cli("spark", "explore", "unclean-election", "--out", str(tmp_path / "run"))
    levels = [x for x in res.stderr.splitlines() if x.startswith("level ")]
    assert levels and re.match(r"level +0 \[", levels[0]), res.stderr
    assert all(re.search(r" [\d,]+ states/s$", x) for x in levels), levels  # the rate of every level
    res = cli("spark", "explore", "unclean-election", "--out", str(tmp_path / "run2"), "--json")
    assert any(x.startswith("level ") for x in res.stderr.splitlines())  # piped: with --json too


@pytest.mark.spark
def test_a_spark_command_on_a_pipe_runs_under_a_heartbeat(cli, spark_session, monkeypatch):
    entered: list[tuple[str, float]] = []
    real = spark_session_module.heartbeat

    @contextmanager
    def recording(spark, label, say, every, current=None):
        entered.append((label, every))
        with real(spark, label, say, every, current):
            yield

    monkeypatch.setattr(spark_session_module, "heartbeat", recording)
    monkeypatch.setenv("ISRCHECK_PROGRESS_SECONDS", "2")
    res = cli("spark", "swarm", "unclean-election", "--walks", "10", "--tasks", "2", "--max-depth", "10")
    assert res.exit_code in (0, 1), res.output
    assert entered == [("spark swarm", 2.0)]


def test_explore_heartbeat_between_level_lines(monkeypatch, capsys):
    """A wide level can take minutes: on a pipe a line every ISRCHECK_PROGRESS_SECONDS says how
    long it has run, in-process until Spark has started, then the active stages' task counts."""
    import time

    from isrcheck.commands.spark import _level_heartbeat

    monkeypatch.setenv("ISRCHECK_PROGRESS_SECONDS", "0.5")
    session = SimpleNamespace(current=None)
    with _level_heartbeat(session, True):
        time.sleep(1.2)
        session.current = FAKE
        time.sleep(1.2)
    with _level_heartbeat(session, False):  # a terminal: nothing
        time.sleep(0.7)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith("in-process") and lines[-1].endswith("stage 3: 5/8 tasks"), lines
    assert all(re.fullmatch(r"spark explore: \d+ s  (in-process|stage 3: 5/8 tasks)", x) for x in lines), lines
    assert 3 <= len(lines) <= 5
