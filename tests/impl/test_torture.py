"""``isrcheck cluster torture``: real processes behind the nemesis, judged by the history checker.

The setting within Kafka's promise (kip-320, acks=all, min ISR 2, clean election) must lose no
acknowledged write under every kind of fault, on the embedded store and on ZooKeeper. Each run also
asserts that the faults were really done and that broker-to-broker and client traffic really went
through the proxies (if the routes broke, the nemesis would be a no-op and the verdict meaningless).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from isrcheck.impl.rigs.history import Verdict
from isrcheck.impl.rigs.loss_shape import HW_TRUNCATION
from isrcheck.impl.rigs.torture_explain import UNCLEAN_ELECTION, explain_losses, reconstruct

from isrcheck.cli import main

SEED = 5  # its 5 s schedule: the active controller cut from brokers 1 and 3, the leader paused, the leader
# killed (tests/impl/test_torture_controller_faults.py has a run whose only faults are controller ones)


def _torture(*args: str) -> tuple[int, dict]:
    res = CliRunner().invoke(main, ["cluster", "torture", "--json", "--duration", "5", "--pace", "0.1",
                                    "--validate-budget", "0", "--seed", str(SEED), *args])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, json.loads(res.output)


def _assert_explained_as(directory: Path, verdict: Verdict, shape: str, lost: int) -> None:
    """Every write the scenario lost is matched, from the run's own event logs, to ``shape``."""
    xs = explain_losses(reconstruct(directory / "events"), verdict, "all")
    assert [x.shape for x in xs] == [shape] * lost, [x.detail for x in xs]


def _assert_nothing_lost(code: int, out: dict) -> None:
    assert out["acks_all"]["acked"] > 0
    assert out["acks_all"]["lost"] == 0, out["acks_all"]["findings"]
    # acks=1 may lose writes here; each one must be matched to a known shape from the event logs
    assert out["acks_1"]["unexplained"] == 0, out["acks_1"]["explanations"]
    assert out["acks_1"]["explained"] == out["acks_1"]["lost"]
    assert not [f for f in out["acks_all"]["findings"] if f["kind"] in ("lost", "reordered", "diverged")]
    assert code == 0 and out["ok"]
    assert out["settled"], out["notes"]
    assert [f for f in out["faults"] if f["done"]], "no fault was done"
    assert out["link_frames"]["broker-2->broker-1"] + out["link_frames"]["broker-1->broker-2"] > 0
    assert sum(v for k, v in out["link_frames"].items() if k.startswith("client->broker")) > 0
    assert out["replay"].startswith(f"isrcheck cluster torture --seed {SEED} ")


def _assert_roles_known_before_the_first_write(events: Path) -> None:
    """Every broker's first line as the partition's leader or follower comes before the first write
    (the model's initial state has every replica knowing its role; a write taken earlier made a run
    no model behaviour explains: seed 118 of a batch)."""
    known: dict[str, int] = {}
    first_write = None
    for f in events.glob("broker-*.jsonl"):
        for line in f.read_text().splitlines()[1:]:
            ev = json.loads(line)
            roles = [v for k, v in ev.get("facts", {}).items() if k.endswith(",0].role")]
            if roles and roles[0] in ("leader", "follower"):
                # a restarted broker has a second file: its first line as leader or follower is
                # the earliest over its files, whichever the glob lists first
                name = f.name.split(".")[0]
                known[name] = min(known.get(name, ev["t"]), ev["t"])
            if ev.get("step") and ev["step"]["name"] == "Produce":
                first_write = ev["t"] if first_write is None else min(first_write, ev["t"])
    assert sorted(known) == ["broker-1", "broker-2", "broker-3"] and first_write is not None
    assert max(known.values()) < first_write, (known, first_write)


@pytest.mark.cluster
def test_kip320_acks_all_min_isr_2_loses_nothing_on_the_embedded_store() -> None:
    code, out = _torture("--generation", "kip-320", "--min-isr", "2", "--keep")
    try:
        _assert_nothing_lost(code, out)
        _assert_roles_known_before_the_first_write(Path(out["directory"]) / "events")
    finally:
        shutil.rmtree(out["directory"], ignore_errors=True)


@pytest.mark.cluster
@pytest.mark.zookeeper
def test_kip320_acks_all_min_isr_2_loses_nothing_on_zookeeper(zookeeper: str) -> None:
    code, out = _torture("--generation", "kip-320", "--min-isr", "2", "--store", "zookeeper",
                         "--zookeeper", zookeeper)
    _assert_nothing_lost(code, out)


@pytest.mark.parametrize("args, message", [
    (["--faults", "bogus"], "unknown kind 'bogus'"),
    (["--store", "zookeeper"], "needs --zookeeper"),
    (["--store", "zookeeper", "--zookeeper", "10.1.2.3:2181"], "loopback"),
    (["--zookeeper", "127.0.0.1:2181"], "goes with --store zookeeper"),
    (["--duration", "1"], "--duration"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    res = CliRunner().invoke(main, ["cluster", "torture", *args])
    assert res.exit_code == 2
    assert message in res.output


def test_the_schedule_is_drawn_from_the_seed_alone() -> None:
    from isrcheck.impl.rigs.torture_schedule import schedule

    assert schedule(7, 10.0) == schedule(7, 10.0)
    assert schedule(7, 10.0) != schedule(8, 10.0)
    plan = schedule(3, 30.0, kinds=("pause", "kill"))
    assert {f.kind for f in plan} <= {"pause", "kill"} and len(plan) == 20
    assert all(0.3 <= f.at <= 29.5 and 0.5 <= f.seconds <= 2.5 for f in plan)
    with pytest.raises(ValueError):
        schedule(1, 10.0, kinds=("nope",))


@pytest.mark.cluster
@pytest.mark.parametrize("unclean, lost", [(True, 5), (False, 0)])
def test_unclean_election_under_a_partition_loses_acknowledged_writes(tmp_path, unclean: bool, lost: int) -> None:
    """The leader cut from the other brokers shrinks the ISR to itself, acknowledges 5 acks=all writes
    alone (min ISR 1) and is killed: an unclean election loses all five; a clean one waits for it."""
    from isrcheck.impl.rigs.torture_scenarios import unclean_election_after_partition

    verdict, steps = unclean_election_after_partition(tmp_path / "c", unclean=unclean)
    assert any("shrank the ISR" in s or "ISR shrank" in s for s in steps), steps
    assert "settled" in steps, steps
    assert verdict.acked == 5
    assert verdict.lost_count == lost, (steps, verdict.to_json())
    _assert_explained_as(tmp_path / "c", verdict, UNCLEAN_ELECTION, lost)


@pytest.mark.cluster
@pytest.mark.parametrize("generation, lost", [("high-watermark", 1), ("kip-320", 0)])
def test_the_high_watermark_truncation_loses_a_committed_write_on_real_processes(tmp_path, generation: str,
                                                                                 lost: int) -> None:
    """The model's hw-truncation-one-crash, made to happen: the answer telling the followers the new HW
    is lost with the leader; under high-watermark the follower not elected truncates to its lagging HW
    (the model's violation: an ISR member without a committed write) and, elected after the second
    leader dies, loses it for good. From kip-101 on it asks for the epoch's end and keeps it."""
    from isrcheck.impl.rigs.torture_scenarios import hw_truncation_after_leader_crash

    verdict, steps = hw_truncation_after_leader_crash(tmp_path / "c", generation=generation)
    assert "settled" in steps, steps
    assert verdict.acked == 4
    truncated = [s for s in steps if "truncated to its HW, losing record 4" in s]
    assert bool(truncated) == (generation == "high-watermark"), steps
    assert verdict.lost_count == lost, (steps, verdict.to_json())
    if lost:
        assert verdict.lost == {0: (4,)}
    _assert_explained_as(tmp_path / "c", verdict, HW_TRUNCATION, lost)
