"""The torture run's protocol settings: what the run promises is judged with today's restart detection,
and the replay command brings back a run made without it."""
from __future__ import annotations

from isrcheck.commands.cluster_torture import _command
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.rigs.torture import TortureSetting


def test_the_controller_detects_quick_restarts_unless_asked_not_to() -> None:
    assert from_mapping(TortureSetting().config()).detect_restarts is True
    old = TortureSetting(undetected_restarts=True)
    assert from_mapping(old.config()).detect_restarts is False


def test_the_replay_command_keeps_undetected_restarts() -> None:
    assert "--undetected-restarts" in _command(3, TortureSetting(undetected_restarts=True), None)
    assert "--undetected-restarts" not in _command(3, TortureSetting(), None)
