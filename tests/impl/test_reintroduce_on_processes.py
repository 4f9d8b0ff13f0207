"""A Kafka bug put back on real processes (issue 29: "so the nemesis can show it on real processes").

`reintroduce` reaches the reference implementation's cores through the cluster's configuration, so
its broker and controller processes run the pre-fix rule. KAFKA-708 is the one whose effect a real
run shows without racing: one broker, one replica, unclean election on (0.8.0 had no other), and
the broker is killed. The controller takes the dead replica out of the ISR; before the fix that
removal kept it as leader, so ZooKeeper records leader 1 over an empty ISR (LeaderInIsr broken,
history-kafka-708's two steps); with the fix the partition is leaderless (with unclean election
the controller may empty the ISR, specs/04). Both sides run, so the test fails if the switch stopped reaching the processes.
"""
from __future__ import annotations

import signal

import pytest

from isrcheck.impl.process.cluster import LocalCluster

pytestmark = pytest.mark.cluster

FAST = {"replica_lag_time_max_ms": 1000, "fetch_interval_ms": 5, "controller_recheck_ms": 100}


@pytest.mark.parametrize("reintroduce", [["KAFKA-708"], []], ids=["with-the-bug", "fixed"])
def test_killing_the_only_replica_keeps_it_leader_only_with_the_bug(tmp_path, reintroduce):
    config = {**FAST, "unclean_leader_election": True, "reintroduce": reintroduce}
    c = LocalCluster(tmp_path / "cluster", brokers=1, config=config, controllers=1, session_timeout=2.0)
    try:
        c.up(wait=30)
        k = c.client()
        k.create_topic(1, 1)
        c.wait_for(lambda k: k.leader(0) == 1 and k.snapshot().part(0).state.isr == (1,), 20, "the topic led")
        c.kill("broker-1", signal.SIGKILL)
        if reintroduce:  # the ISR removal empties the ISR and leaves the dead broker leading it
            c.wait_for(lambda k: k.snapshot().part(0).state.isr == (), 20, "the dead replica out of the ISR")
            st = k.snapshot().part(0).state
            assert st.leader == 1 and 1 not in st.isr, st
        else:  # the fix: the removal takes the leader out with it
            c.wait_for(lambda k: k.snapshot().part(0).state.leader == 0, 20, "the partition leaderless")
            assert k.snapshot().part(0).state.isr == ()
        k.close()
    finally:
        c.down()
