"""The autonomous cores (as the real processes run them) in the simulator's virtual time."""
from __future__ import annotations

import pytest

from isrcheck.impl.rigs.simulator import AutoSimulator
from isrcheck.specs.observation import validate

CFG = {"brokers": 3, "replica_lag_time_max_ms": 300}


def test_leader_crash_moves_leadership_within_the_isr_and_keeps_acked_writes():
    s = AutoSimulator(CFG, seed=3)
    assert s.leader_of(0) == 1 and s.isr_of(0) == (1, 2, 3)
    for _ in range(20):
        s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 20, 2_000)
    old, isr = s.leader_of(0), s.isr_of(0)
    s.crash(old)
    assert s.run_until(lambda s: s.leader_of(0) not in (0, old), 3_000)
    assert s.leader_of(0) in isr
    for _ in range(10):
        s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 30, 3_000)
    for b in s.isr_of(0):
        assert set(s.acked[0]) <= set(s.log_ids(b, 0))
    s.restart(old)
    assert s.run_until(lambda s: old in s.isr_of(0), 3_000)
    assert s.log_ids(old, 0) == s.log_ids(s.leader_of(0), 0)
    validate(s.observe())


def test_a_silent_follower_is_shrunk_out_after_the_lag_time_and_rejoins():
    s = AutoSimulator(CFG, seed=4)
    muted = {"on": True}
    s.add_filter(lambda src, dst, msg: "drop" if muted["on"] and src == ("broker", 3) else None)
    s.produce(0)
    assert not s.run_until(lambda s: s.acked[0], 250)  # acks=all waits for broker 3 ...
    assert s.run_until(lambda s: s.isr_of(0) == (1, 2), 1_000)  # ... until the leader drops it
    assert 250 <= s.now <= 1_000
    assert s.run_until(lambda s: len(s.acked[0]) == 1, 500)
    muted["on"] = False
    assert s.run_until(lambda s: s.isr_of(0) == (1, 2, 3), 2_000)


def test_controller_failover_and_the_new_controller_at_work():
    s = AutoSimulator(CFG, seed=5, controllers=2)
    epoch = s.kill_controller()
    assert s.run_until(lambda s: s.active is not None and s.active.core.epoch == epoch + 1, 1_000)
    s.crash(1)
    assert s.run_until(lambda s: s.leader_of(0) == 2 and s.isr_of(0) == (2, 3), 1_000)
    s.produce(0)
    assert s.run_until(lambda s: s.acked[0], 1_000)


def test_reassignment_completes():
    s = AutoSimulator({"brokers": 4, "replication_factor": 2, "assignment": [[1, 2]]}, seed=6)
    for _ in range(5):
        s.produce(0)
    s.run_until(lambda s: len(s.acked[0]) == 5, 1_000)
    from isrcheck.impl.core import layout as L
    L.request_reassignment(s.admin, s.cfg.topic, 0, (3, 4))
    assert s.run_until(lambda s: s.snapshot().part(0).replicas == (3, 4) and not s.snapshot().reassign, 5_000)
    assert s.run_until(lambda s: set(s.isr_of(0)) == {3, 4} and s.leader_of(0) in (3, 4), 2_000)
    for b in (3, 4):
        assert s.log_ids(b, 0)[:5] == s.acked[0]
    assert s.run_until(lambda s: s.log_ids(1, 0) == [] and 0 not in s.brokers[1].core.replicas, 2_000)


def test_power_loss_loses_only_the_unflushed_suffix():
    s = AutoSimulator({**CFG, "log_flush_interval_ms": 100_000}, seed=7)  # never flushed
    for _ in range(3):
        s.produce(0)
    s.run_until(lambda s: len(s.acked[0]) == 3, 1_000)
    s.crash(3, power_loss=True)
    assert s.log_ids(3, 0) == []
    s.crash(2)
    assert s.log_ids(2, 0) == s.acked[0]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_same_seed_gives_the_same_run(seed):
    def run():
        s = AutoSimulator(CFG, seed=seed)
        for i in range(30):
            s.produce(0)
            s.run_for(s.rng.randint(0, 5))
            if i == 10:
                s.crash(s.leader_of(0))
            if i == 20:
                s.kill_controller()
        s.run_for(2_000)
        return s.events, s.acked, s.observe()

    assert run() == run()
