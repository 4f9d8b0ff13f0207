"""The seven command lines of issue 30's audit that were not clean, one test each: exit status 2 and
one ``error:`` line on stderr, nothing run (no cluster is started: each is refused at its option),
and the replay command of a torture run keeps a ``--pace`` that is not the default."""
from __future__ import annotations

import subprocess
import sys

import pytest

from isrcheck.commands.cluster_torture import _command
from isrcheck.impl.rigs.torture import TortureSetting

CASES = {
    "torture duration nan": (["cluster", "torture", "--duration", "nan"], "--duration"),
    "torture validate budget inf": (["cluster", "torture", "--validate-budget", "inf"], "--validate-budget"),
    "torture pace nan": (["cluster", "torture", "--pace", "nan"], "--pace"),
    "check max memory 1 byte": (["check", "hw-truncation-one-crash", "--max-memory", "1"], "--max-memory"),
    "simulate seed -1": (["simulate", "replication", "--seed", "-1"], "--seed"),
    "simulate seed 10**100": (["simulate", "replication", "--seed", str(10**100)], "--seed"),
    "torture seed -1": (["cluster", "torture", "--seed", "-1"], "--seed"),
    "cluster simulate seed 10**100": (["cluster", "simulate", "--seed", str(10**100)], "--seed"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_command_line_is_one_error_line_and_exit_2(name):
    argv, option = CASES[name]
    res = subprocess.run([sys.executable, "-m", "isrcheck", *argv], capture_output=True, text=True, timeout=120)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, (res.returncode, res.stdout[-500:], res.stderr[-500:])
    assert len(lines) == 1 and lines[0].startswith("error:") and option in lines[0], res.stderr
    assert "Traceback" not in res.stderr + res.stdout


def test_the_replay_command_keeps_a_pace_that_is_not_the_default():
    s = TortureSetting("kip-320", 2, False, "embedded", None, 10.0, None, 0.5)
    assert "--pace 0.5" in _command(3, s, None)
    assert "--pace" not in _command(3, TortureSetting("kip-320", 2, False, "embedded", None, 10.0, None, 0.1), None)
