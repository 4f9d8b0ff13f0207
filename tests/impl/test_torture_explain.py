"""Matching a real run's lost writes to known shapes from its event logs (impl/rigs/torture_explain.py).

Hand-made event logs, in the format the processes write (impl/process/event_log.py), one per shape and for
a loss no shape explains; then the logs two real scenario runs recorded (tests/impl/torture_events/,
from impl/rigs/torture_scenarios.py), whose one known loss each must be rebuilt and named. The scenario
tests on live processes (test_torture.py) assert the same of fresh runs.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from isrcheck.impl.rigs.fault_run import HW_ON_LEADER_CHANGE
from isrcheck.impl.rigs.history import History, Write, check
from isrcheck.impl.rigs.loss_shape import HW_TRUNCATION
from isrcheck.impl.rigs.torture import TortureResult, TortureSetting
from isrcheck.impl.rigs.torture_explain import (
    ACKS1_LEADER_CHANGE,
    EPOCH_END,
    RESTART,
    UNCLEAN_ELECTION,
    explain_losses,
    explain_record,
    reconstruct,
    summary,
)

from isrcheck.commands.cluster_torture import _explain

RECORDED = Path(__file__).resolve().parent / "torture_events"
MS = 1_000_000


class Logs:
    """A run's event-log directory written line by line (t in ms; one file per process incarnation)."""

    def __init__(self, directory: Path, generation: str = "kip-320") -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = {"brokers": 3, "generation": generation, "min_insync_replicas": 2,
                       "unclean_leader_election": False, "acks": "all"}
        self.seq: dict[str, int] = {}

    def _put(self, source: str, process: str, role: str, line: dict[str, Any]) -> None:
        path = self.dir / f"{source}.events.jsonl"
        if not path.exists():
            path.write_text(json.dumps({"format": "isrcheck-selflog", "version": 1, "process": process,
                                        "role": role, "pid": 1, "config": self.config}) + "\n")
        self.seq[source] = self.seq.get(source, 0) + 1
        with path.open("a") as f:
            f.write(json.dumps({"seq": self.seq[source], **line}) + "\n")

    def broker(self, t: int, b: int, log: list[tuple[int, int]], hw: int, epoch: int, role: str, inp: str,
               life: int = 1) -> None:
        """Broker ``b``'s replica after a step (``life``: which incarnation of the process)."""
        facts = {f"replicas[{b},0].log": [{"id": r, "epoch": e} for r, e in log], f"replicas[{b},0].hw": hw,
                 f"replicas[{b},0].leader_epoch": epoch, f"replicas[{b},0].role": role}
        self._put(f"broker-{b}.{life}", f"broker-{b}", "broker",
                  {"t": t * MS, "kind": "observation", "step": None, "facts": facts, "input": inp})

    def state(self, t: int, leader: int, isr: list[int], epoch: int, version: int) -> None:
        """A successful leader/ISR write (by the controller, for the test's purpose)."""
        facts = {"partitions[0].leader": leader, "partitions[0].isr": isr, "partitions[0].leader_epoch": epoch,
                 "partitions[0].zk_version": version}
        self._put("controller-1.1", "controller-1", "controller",
                  {"t": t * MS, "kind": "observation", "step": None, "facts": facts, "input": "StoreResult"})

    def crash(self, t: int, b: int) -> None:
        self._put("launcher.1", "launcher", "launcher", {"t": t * MS, "kind": "action",
                                                         "step": {"name": "Crash", "args": [b]},
                                                         "facts": {f"brokers[{b}].alive": False}})

    def end(self, t: int) -> None:
        self._put("launcher.1", "launcher", "launcher", {"t": t * MS, "kind": "end", "step": None, "facts": {}})


def _replicated_then_leader_dies(logs: Logs) -> None:
    """Broker 1 leads epoch 0 and appends records 1, 2; both followers fetch them, but the HW they
    hear stays at 1; broker 1 is killed and broker 2 elected (ISR [2, 3]), broker 3 follows it."""
    logs.state(0, 1, [1, 2, 3], 0, 1)
    logs.broker(1, 1, [], 0, 0, "leader", "LeaderAndIsr")
    for b in (2, 3):
        logs.broker(1, b, [], 0, 0, "follower", "LeaderAndIsr")
    logs.broker(10, 1, [(1, 0), (2, 0)], 0, 0, "leader", "ProduceRequest")
    for b in (2, 3):
        logs.broker(11, b, [(1, 0), (2, 0)], 1, 0, "follower", "FetchResponse")
    logs.broker(12, 1, [(1, 0), (2, 0)], 2, 0, "leader", "FetchRequest")
    logs.crash(20, 1)
    logs.state(21, 2, [2, 3], 1, 2)
    logs.broker(22, 2, [(1, 0), (2, 0)], 1, 1, "leader", "LeaderAndIsr")


def _hw_truncation(logs: Logs) -> None:
    """...broker 3 cuts record 2 down to its HW on the change of leader; broker 2 dies; broker 3 is
    elected, cleanly, without it."""
    _replicated_then_leader_dies(logs)
    logs.broker(22, 3, [(1, 0)], 1, 1, "follower", "LeaderAndIsr")
    logs.crash(30, 2)
    logs.state(31, 3, [3], 2, 3)
    logs.broker(32, 3, [(1, 0)], 1, 2, "leader", "LeaderAndIsr")
    logs.end(40)


def test_hw_truncation_then_election_of_the_truncated_follower(tmp_path: Path) -> None:
    logs = Logs(tmp_path, "high-watermark")
    _hw_truncation(logs)
    rec = reconstruct(tmp_path)
    assert [(c.broker, c.to, c.removed, c.cause) for c in rec.cuts] == [(3, 1, (2,), HW_ON_LEADER_CHANGE)]
    assert [(e.broker, e.epoch, e.unclean) for e in rec.elections] == [(1, 0, False), (2, 1, False), (3, 2, False)]
    assert rec.crashes == ((20, 1), (30, 2))
    x = explain_record(rec, 2, "all")
    assert x.shape == HW_TRUNCATION, x.detail
    assert "broker 3" in x.detail and "epoch 2" in x.detail and "offset 1" in x.detail


def test_the_same_cut_under_leader_epochs_is_no_known_shape(tmp_path: Path) -> None:
    """kip-320 never truncates to the HW on a change of leader: the same logs are then a loss that no
    shape explains, as a bug would be (an acks=all loss under clean election)."""
    logs = Logs(tmp_path, "kip-320")
    _hw_truncation(logs)
    rec = reconstruct(tmp_path)
    assert [c.cause for c in rec.cuts] != [HW_ON_LEADER_CHANGE]
    x = explain_record(rec, 2, "all")
    assert x.shape is None and not x.explained
    assert "broker 3 was elected leader of epoch 2" in x.detail and "had lost it" in x.detail


def _alone_then_elsewhere(logs: Logs, isr_before: list[int]) -> None:
    """Broker 1 leads epoch 0 with ISR ``isr_before`` and appends record 1, which no follower fetches;
    it is killed and broker 2 elected without it; restarted, broker 1 cuts it on the epoch-end answer."""
    logs.state(0, 1, [1, 2, 3], 0, 1)
    logs.broker(1, 1, [], 0, 0, "leader", "LeaderAndIsr")
    logs.broker(1, 2, [], 0, 0, "follower", "LeaderAndIsr")
    if isr_before != [1, 2, 3]:
        logs.state(5, 1, isr_before, 0, 2)
    logs.broker(10, 1, [(1, 0)], 0 if isr_before != [1] else 1, 0, "leader", "ProduceRequest")
    logs.crash(20, 1)
    logs.state(21, 2, [2] if isr_before == [1] else [2, 3], 1, 3 if isr_before != [1, 2, 3] else 2)
    logs.broker(22, 2, [], 0, 1, "leader", "LeaderAndIsr")
    logs.broker(30, 1, [(1, 0)], 0, -1, "none", "start-up", life=2)
    logs.broker(31, 1, [(1, 0)], 0, 1, "follower", "LeaderAndIsr", life=2)
    logs.broker(32, 1, [], 0, 1, "follower", "OffsetsForLeaderEpochResponse", life=2)
    logs.end(40)


def test_an_unclean_election_from_outside_the_isr(tmp_path: Path) -> None:
    _alone_then_elsewhere(Logs(tmp_path), [1])
    rec = reconstruct(tmp_path)
    assert [(e.broker, e.isr_before, e.unclean) for e in rec.elections][1:] == [(2, (1,), True)]
    assert [(c.broker, c.removed, c.cause) for c in rec.cuts] == [(1, (1,), EPOCH_END)]
    for acks in ("all", "1"):
        x = explain_record(rec, 1, acks)
        assert x.shape == UNCLEAN_ELECTION, x.detail
        assert "broker 2" in x.detail and "epoch 1" in x.detail and "outside the ISR [1]" in x.detail


def test_an_acks1_write_lost_on_a_clean_change_of_leader(tmp_path: Path) -> None:
    _alone_then_elsewhere(Logs(tmp_path), [1, 2, 3])
    rec = reconstruct(tmp_path)
    assert rec.elections[-1].unclean is False
    x = explain_record(rec, 1, "1")
    assert x.shape == ACKS1_LEADER_CHANGE, x.detail
    assert "never had it" in x.detail and "broker 1's copy was cut" in x.detail and "offset 0" in x.detail
    # an acks=all write cannot be lost that way (acknowledged only once in the ISR's every log)
    assert explain_record(rec, 1, "all").shape is None


def test_an_unlogged_isr_is_not_called_unclean(tmp_path: Path) -> None:
    """The value written just before the election is missing (its writer died before logging): the
    ISR the leader came from is unknown, so no unclean election is claimed."""
    logs = Logs(tmp_path)
    _alone_then_elsewhere(logs, [1])
    lines = (tmp_path / "controller-1.1.events.jsonl").read_text().splitlines()
    (tmp_path / "controller-1.1.events.jsonl").write_text("\n".join(ln for ln in lines if 'zk_version": 2}' not in ln))
    rec = reconstruct(tmp_path)
    assert rec.elections[-1].unclean is None
    x = explain_record(rec, 1, "all")
    assert x.shape is None and "an unlogged ISR" in x.detail


def test_a_record_no_broker_logged_and_lines_after_the_end(tmp_path: Path) -> None:
    """A record acknowledged that no log ever held is unexplained; what processes log after the
    launcher's end (the cluster being taken down) and a torn last line are not part of the run."""
    logs = Logs(tmp_path, "high-watermark")
    _hw_truncation(logs)
    logs.broker(50, 3, [], 0, 3, "follower", "LeaderAndIsr")  # after the end: no cut
    with (tmp_path / "broker-3.1.events.jsonl").open("a") as f:
        f.write('{"seq": 99, "t": 1')  # torn by a SIGKILL
    rec = reconstruct(tmp_path)
    assert len(rec.cuts) == 1
    x = explain_record(rec, 7, "all")
    assert x.shape is None and "no broker logged it" in x.detail


def test_a_log_shorter_after_a_restart_is_a_restart_cut(tmp_path: Path) -> None:
    logs = Logs(tmp_path)
    logs.broker(1, 1, [(1, 0), (2, 0)], 1, 0, "leader", "ProduceRequest")
    logs.broker(5, 1, [(1, 0)], 1, -1, "none", "start-up", life=2)
    assert [(c.removed, c.cause) for c in reconstruct(tmp_path).cuts] == [((2,), RESTART)]


def test_explain_losses_and_summary_follow_the_verdict(tmp_path: Path) -> None:
    _hw_truncation(Logs(tmp_path, "high-watermark"))
    verdict = check(History((Write(0, 1, 0, 5), Write(0, 2, 0, 15), Write(0, 9, 0, None)), {0: (1,)}))
    xs = explain_losses(reconstruct(tmp_path), verdict, "all")
    assert [(x.record, x.shape) for x in xs] == [(2, HW_TRUNCATION)]
    assert summary(xs) == {"explained": 1, "unexplained": 0, "shapes": {HW_TRUNCATION: 1}}
    assert xs[0].to_json()["explained"] is True


@pytest.mark.parametrize("run, lost, shape", [
    ("hw-truncation", (4,), HW_TRUNCATION),
    ("unclean-election", (1, 2, 3, 4, 5), UNCLEAN_ELECTION),
])
def test_recorded_scenario_runs_are_explained(run: str, lost: tuple[int, ...], shape: str) -> None:
    """The event logs of two real scenario runs (impl/rigs/torture_scenarios.py): every lost write is
    rebuilt and matched to the scenario's shape."""
    rec = reconstruct(RECORDED / run)
    xs = [explain_record(rec, r, "all") for r in lost]
    assert [x.shape for x in xs] == [shape] * len(lost), [x.detail for x in xs]


def test_the_torture_report_explains_from_the_run_directory(tmp_path: Path) -> None:
    """The command's wiring (isrcheck/commands/cluster_torture.py): a result's losses explained from its event logs,
    and every loss left unexplained, saying why, when the logs cannot be read."""
    lost4 = check(History(tuple(Write(0, r, 0, 1) for r in (1, 2, 3, 4)), {0: (1, 2, 3)}))
    none = check(History((), {0: (1, 2, 3)}))

    def result(events: Path) -> TortureResult:
        return TortureResult(0, TortureSetting(generation="high-watermark"), [], lost4, none, 4, 4, 0, 0, 3, (),
                             True, [], [], {}, str(tmp_path), str(events), 1.0)

    why_all, why_one = _explain(result(RECORDED / "hw-truncation"))
    assert [(x.record, x.shape) for x in why_all] == [(4, HW_TRUNCATION)] and why_one == ()
    (tmp_path / "broker-1.1.events.jsonl").mkdir()  # a file that cannot be read
    why_all, _ = _explain(result(tmp_path))
    assert [(x.record, x.shape) for x in why_all] == [(4, None)] and "could not be read" in why_all[0].detail
