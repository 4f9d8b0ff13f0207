"""Implementation -> model for the autonomous implementation: fault-injection runs of the cores the
real processes run (AutoSimulator, virtual time) and of the real multi-process cluster, logged with
the operations named and everything the cluster does on its own left unlogged, validate; doctored
copies of those logs are rejected at the doctored event."""
from __future__ import annotations

import copy

import pytest

from isrcheck.conformance.eventlog import dumps_log, loads_log, validate_log
from isrcheck.conformance.runs import AutoRun, ClusterRun

RAW = {"brokers": 3, "replication_factor": 3, "max_records": 0, "stale_controller": False}


def _scenario(run) -> None:
    run.produce(0)
    run.produce(0)
    run.crash(1)  # the leader
    run.produce(0)
    run.restart(1)
    run.kill_controller()
    run.produce(0)
    run.crash(2)
    run.restart(2)


@pytest.fixture(scope="module", params=[1, 2, 3])
def auto_log(request):
    run = AutoRun(RAW, seed=request.param)
    _scenario(run)
    return run.log()


def test_an_autonomous_run_with_crashes_and_a_controller_failover_validates(auto_log):
    log = loads_log(dumps_log(auto_log), "auto.jsonl")
    assert log.quiet and log.facts == "partial" and log.max_silent > 0
    assert [e.action[0] for e in log.events] == ["Produce", "Produce", "Crash", "Produce", "Restart",
                                                 "ControllerFailover", "Produce", "Crash", "Restart"]
    r = validate_log(log)
    assert r.ok, r.reason
    assert r.silent_steps > len(log.events)  # the cluster did a lot on its own in between


def _leader_change(log):
    return next(e for e in log.events if e.action[0] == "Crash" and e.facts["partitions[0].leader"] != 1
                and e.action[1] == (1,))


def test_a_doctored_autonomous_log_is_rejected_at_the_doctored_event(auto_log):
    bad = copy.deepcopy(auto_log)
    ev = _leader_change(bad)
    outside = next(b for b in (1, 2, 3) if b not in ev.facts["partitions[0].isr"])
    ev.facts["partitions[0].leader"] = outside  # a leader elected outside the ISR
    r = validate_log(bad)
    assert not r.ok and r.failed_event.seq == ev.seq and "partitions[0].leader" in r.reason
    bad = copy.deepcopy(auto_log)
    ev = bad.events[-1]
    ev.facts["replicas[3,0].log"] = ev.facts["replicas[3,0].log"][:-1]  # an acknowledged write vanishes
    ev.facts["replicas[3,0].leo"] -= 1
    r = validate_log(bad)
    assert not r.ok and r.failed_event.seq == ev.seq
    bad = copy.deepcopy(auto_log)
    bad.events[3], bad.events[4] = bad.events[4], bad.events[3]  # out of order
    r = validate_log(bad)
    assert not r.ok and r.failed_event.seq == 5 and "out of order" in r.reason


# ---------------------------------------------------------------------------- the real cluster
@pytest.mark.cluster
def test_a_log_of_the_real_cluster_under_fault_injection_validates(tmp_path):
    from isrcheck.impl.process.cluster import LocalCluster

    c = LocalCluster(tmp_path / "cluster", brokers=3, controllers=2, session_timeout=2.0,
                     config={"replica_lag_time_max_ms": 1000, "fetch_interval_ms": 5, "controller_recheck_ms": 100,
                             "stale_controller": False, "replication_factor": 3, "max_records": 0})
    try:
        c.up(wait=30)
        k = c.client()
        k.create_topic(1, 3, assignment=[[1, 2, 3]])
        k.close()
        run = ClusterRun(c, RAW)
        try:
            _scenario(run)
        finally:
            run.close()
        log = loads_log(dumps_log(run.log()), "cluster.jsonl")
        (tmp_path / "cluster.jsonl").write_text(dumps_log(log))
    finally:
        c.down()
    r = validate_log(log)
    assert r.ok, f"{r.reason} {r.details}"
    bad = copy.deepcopy(log)
    ev = next(e for e in bad.events if e.action == ("Crash", (1,)))
    isr = ev.facts["partitions[0].isr"]
    ev.facts["partitions[0].leader"] = next(b for b in (1, 2, 3) if b not in isr)
    r = validate_log(bad)
    assert not r.ok and r.failed_event.seq == ev.seq, r.reason
