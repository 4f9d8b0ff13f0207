"""The torture schedule's controller faults: drawn from the seed alone, aimed at the right nodes, bounded,
and survived by a real cluster within Kafka's promise.

Why: the random schedule used to hurt brokers only (and kill the active controller), never cutting a
controller from the store (its session expires: a failover without a crash) or from the brokers it
commands. These check the plan without processes, then one short real run whose only faults cut the
active controller from the store: another controller must take over (a higher epoch in the store)
and no acks=all write may be lost.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from isrcheck.impl.rigs.torture import TortureSetting, run_torture
from isrcheck.impl.rigs.torture_schedule import (
    CONTROLLER_KINDS,
    EXPIRY_KINDS,
    KINDS,
    kinds_for,
    schedule,
)

NEW = ("controller-store", "standby-store", "controller-brokers", "controller-some")


def test_a_seed_draws_every_controller_fault_with_its_targets_and_bounds() -> None:
    plan = schedule(11, 60.0, brokers=3, controllers=2)
    assert plan == schedule(11, 60.0, brokers=3, controllers=2)  # the seed alone decides
    assert set(NEW) <= {f.kind for f in plan}
    assert len(plan) == 40 and all(0.3 <= f.at <= 59.5 and 0.5 <= f.seconds <= 2.5 for f in plan)
    for f in plan:
        if f.kind in CONTROLLER_KINDS:
            assert f.target is None  # resolved when it strikes: the active (or a standby) controller
        if f.kind == "controller-some":
            assert f.brokers == tuple(sorted(set(f.brokers))) and 1 <= len(f.brokers) <= 2
            assert set(f.brokers) <= {1, 2, 3}
            assert f"from broker(s) {','.join(map(str, f.brokers))}" in f.describe()
        else:
            assert f.brokers == ()
        if f.kind in EXPIRY_KINDS:
            assert "until its session expires" in f.describe()
    assert "a standby controller" in next(f for f in plan if f.kind == "standby-store").describe()


def test_a_standby_fault_needs_a_standby_and_the_older_kinds_keep_their_plans() -> None:
    assert "standby-store" not in kinds_for(3, 1) and "standby-store" in kinds_for(3, 2)
    assert "standby-store" not in {f.kind for f in schedule(11, 60.0, controllers=1)}
    with pytest.raises(ValueError, match="larger cluster"):
        schedule(1, 10.0, kinds=("standby-store",), controllers=1)
    # restricted to the kinds that existed before, a seed draws the plan it drew then (a replay holds)
    old = tuple(k for k in KINDS if k not in NEW)
    plan = [(f.at, f.kind, f.target, f.seconds, f.amount) for f in schedule(7, 5.0, kinds=old)]
    assert plan == [(0.934, "split", 1, 1.231, 0.0), (1.66, "partition", 1, 0.575, 0.0),
                    (3.034, "delay", None, 0.981, 174)]


@pytest.mark.cluster
def test_the_active_controller_cut_from_the_store_fails_over_and_loses_nothing(tmp_path: Path) -> None:
    setting = TortureSetting(generation="kip-320", min_isr=2, duration=2.0, kinds=("controller-store",),
                             pace=0.05, settle=20.0)
    r = run_torture(1, setting, tmp_path / "c")
    done = [what for _f, what in r.faults if what]
    assert done and done[0].startswith("cut controller-") and done[0].endswith("from the store (session expiry)")
    assert r.controller_failovers, r.notes  # a higher controller epoch followed the cut
    assert r.settled, r.notes
    assert r.acked_all > 0
    assert r.verdict.ok and r.verdict.lost_count == 0, r.verdict.to_json()
