"""The deterministic simulator: scenarios, determinism, the action vocabulary, observations."""
from __future__ import annotations

import pytest

from isrcheck import specs
from isrcheck.impl.rigs.simulator import ACTIONS, NOT_YET_DRIVABLE, ActionError, NotEnabled, Simulator
from isrcheck.specs.observation import validate


def replica(obs, b, p=0):
    return next(r for r in obs["replicas"] if r["broker"] == b and r["partition"] == p)


def ids(log):
    return [r["id"] for r in log]


def test_every_action_of_the_vocabulary_is_drivable():
    names = {a["name"] for a in specs.load("actions.toml")["action"]}
    assert set(ACTIONS) | set(NOT_YET_DRIVABLE) == names
    assert not set(ACTIONS) & set(NOT_YET_DRIVABLE)
    arity = {a["name"]: len(a["args"]) for a in specs.load("actions.toml")["action"]}
    sim = Simulator({"brokers": 3})
    for name in ACTIONS:
        fn = getattr(sim, f"_a_{name}")
        assert fn.__code__.co_argcount - 1 == arity[name], name
    assert NOT_YET_DRIVABLE == {}
    # under high-watermark nobody ever reconciles: the two leader-epoch actions are never enabled
    for name in ("OffsetsForLeaderEpoch", "TruncateToEpochEndOffset"):
        with pytest.raises(NotEnabled):
            sim.apply(name, (2, 0))


def test_unknown_and_malformed_actions():
    sim = Simulator({"brokers": 3})
    with pytest.raises(ActionError, match="unknown action"):
        sim.apply("Explode", ())
    with pytest.raises(ActionError, match="takes 2 argument"):
        sim.apply("Fetch", (2,))
    with pytest.raises(NotEnabled, match="does not lead"):
        sim.apply("Produce", (2, 0))
    with pytest.raises(NotEnabled, match="no request waiting"):
        sim.apply("DeliverRequest", (1,))


def replicate_fully(sim, followers=(2, 3), p=0, rounds=3):
    for _ in range(rounds):
        for f in followers:
            sim.apply("Fetch", (f, p))


def test_leader_kill_moves_leadership_within_the_isr_and_keeps_acked_writes():
    sim = Simulator({"brokers": 3, "max_records": 5})
    for _ in range(3):
        sim.apply("Produce", (1, 0))
    replicate_fully(sim)
    assert sim.acked[0] == {1, 2, 3}
    isr_before = sim.isr_of(0)
    sim.apply("Crash", (1,))
    assert sim.leader_of(0) == 1  # the store still names 1 until the controller reacts
    sim.apply("ProcessBrokerChange", (1,))
    new_leader = sim.leader_of(0)
    assert new_leader in isr_before and new_leader != 1
    assert sim.isr_of(0) == (2, 3)
    sim.settle()
    obs = sim.observe()
    validate(obs)
    for b in sim.isr_of(0):
        assert set(ids(replica(obs, b)["log"])) >= sim.acked[0]
    assert replica(obs, new_leader)["role"] == "leader"
    # the old leader comes back as a follower and catches up
    sim.apply("Restart", (1,))
    sim.apply("ProcessBrokerChange", (1,))
    sim.settle()
    obs = sim.observe()
    assert replica(obs, 1)["role"] == "follower" and ids(replica(obs, 1)["log"]) == [1, 2, 3]
    assert sim.isr_of(0) == (1, 2, 3)


def test_an_expired_leader_keeps_acting_until_it_registers_again():
    """ExpireSession / Reregister (specs/05-replication.md, "Session expiry") driven step by step."""
    sim = Simulator({"brokers": 3, "max_records": 3, "generation": "kip-320", "min_insync_replicas": 1,
                     "faults": {"session_expiries": 1}})
    sim.apply("Produce", (1, 0))
    replicate_fully(sim)
    assert ("ExpireSession", (1,)) in sim.enabled() and ("Reregister", (1,)) not in sim.enabled()
    with pytest.raises(NotEnabled):
        sim.apply("Reregister", (1,))  # registered: nothing to renew
    sim.apply("ExpireSession", (1,))
    assert 1 not in sim.snapshot().registered and sim.broker(1).leads(0)  # the process keeps its state
    assert ("Reregister", (1,)) in sim.enabled() and ("ExpireSession", (1,)) not in sim.enabled()
    sim.apply("ProcessBrokerChange", (1,))
    assert sim.leader_of(0) == 2 and sim.isr_of(0) == (2, 3)
    assert not sim.inbox[1]  # the controller sends an unregistered broker nothing, not even StopReplica
    sim.apply("Produce", (1, 0))  # the deposed leader still believes it leads and accepts a write
    assert sim.broker(1).leads(0) and sim.broker(1).replicas[0].leo == 2
    sim.apply("Reregister", (1,))
    assert 1 in sim.snapshot().registered
    sim.apply("ProcessBrokerChange", (1,))  # a broker start-up: LeaderAndIsr makes it a follower
    sim.settle()
    obs = sim.observe()
    validate(obs)
    assert replica(obs, 1)["role"] == "follower" and sim.leader_of(0) == 2
    assert ids(replica(obs, 1)["log"]) == ids(replica(obs, 2)["log"]) == [1]  # the unacked write is gone
    assert sim.isr_of(0) == (1, 2, 3) and sim.acked[0] == {1}
    assert sim.spends_budget("ExpireSession", (1,)) == "faults.session_expiries"
    assert sim.spends_budget("Reregister", (1,)) is None


def test_the_seeds_truncation_rule_can_lose_an_acknowledged_write():
    """The known weakness (specs/06, NoCommittedWriteLost): the implementation has it too."""
    sim = Simulator({"brokers": 3, "max_records": 2})
    for a in [("Produce", (1, 0)), ("Fetch", (2, 0)), ("Fetch", (3, 0)), ("Fetch", (2, 0)), ("Fetch", (3, 0))]:
        sim.apply(*a)
    assert sim.acked[0] == {1}  # both followers' fetch offsets passed the record: committed
    obs = sim.observe()
    assert replica(obs, 1)["hw"] == 1
    assert replica(obs, 2)["hw"] == 0 and replica(obs, 3)["hw"] == 0  # the followers' HW lags by a fetch
    sim.apply("Crash", (1,))
    sim.apply("ProcessBrokerChange", (1,))
    assert sim.leader_of(0) == 2
    sim.apply("DeliverRequest", (3,))  # 3 follows 2: a leader change, so it truncates to its HW (0)
    obs = sim.observe()
    assert 3 in sim.isr_of(0) and ids(replica(obs, 3)["log"]) == []


SEED_EXAMPLE = {"brokers": 6, "replication_factor": 3, "max_records": 0, "assignment": [[1, 2, 3]]}


def test_reassignment_follows_the_seed_example():
    sim = Simulator(SEED_EXAMPLE)

    def row():
        part = sim.observe()["partitions"][0]
        return part["replicas"], part["leader"], part["isr"], part["leader_epoch"], part["zk_version"]

    assert row() == ([1, 2, 3], 1, [1, 2, 3], 0, 1)
    sim.apply("RequestReassignment", (0, (4, 5, 6)))
    sim.apply("ReassignPartition", (1, 0, 1))
    assert row() == ([1, 2, 3, 4, 5, 6], 1, [1, 2, 3], 0, 1)
    sim.apply("ReassignPartition", (1, 0, 2))
    assert row()[3:] == (1, 2)
    for b in range(1, 7):
        sim.apply("DeliverRequest", (b,))
    sim.apply("ReassignPartition", (1, 0, 3))
    with pytest.raises(NotEnabled, match="step 4 waits"):
        sim.apply("ReassignPartition", (1, 0, 4))
    for f in (4, 5, 6):
        sim.apply("Fetch", (f, 0))
    assert row() == ([1, 2, 3, 4, 5, 6], 1, [1, 2, 3, 4, 5, 6], 1, 5)  # the seed's step-2 row
    for step in (4, 5, 6, 7):
        sim.apply("ReassignPartition", (1, 0, step))
    assert row() == ([1, 2, 3, 4, 5, 6], 4, [1, 2, 3, 4, 5, 6], 2, 6)  # step 7
    sim.apply("ReassignPartition", (1, 0, 8))
    assert row() == ([1, 2, 3, 4, 5, 6], 4, [4, 5, 6], 5, 9)  # step 8
    sim.apply("ReassignPartition", (1, 0, 9))
    sim.apply("ReassignPartition", (1, 0, 10))
    assert row() == ([4, 5, 6], 4, [4, 5, 6], 5, 9)  # step 10
    sim.apply("ReassignPartition", (1, 0, 11))
    sim.apply("ReassignPartition", (1, 0, 12))
    obs = sim.observe()
    validate(obs)
    assert obs["partitions"][0]["reassignment"] == []
    states = [replica(obs, b)["replica_state"] for b in range(1, 7)]
    assert states == ["NonExistentReplica"] * 3 + ["OnlineReplica"] * 3
    sim.settle()
    obs = sim.observe()
    assert [replica(obs, b)["present"] for b in range(1, 7)] == [False] * 3 + [True] * 3
    assert replica(obs, 4)["role"] == "leader"


def test_reassignment_resumes_after_a_controller_failover():
    sim = Simulator({"brokers": 4, "replication_factor": 2, "max_records": 2, "assignment": [[1, 2]]})
    sim.apply("Produce", (1, 0))
    sim.apply("RequestReassignment", (0, (3, 4)))
    for step in (1, 2, 3):
        sim.apply("ReassignPartition", (1, 0, step))
    sim.apply("ControllerFailover", ())
    sim.apply("ResignController", (1,))
    assert sim.observe()["partitions"][0]["replicas"] == [1, 2, 3, 4]  # AR keeps OAR until step 10
    sim.settle()
    obs = sim.observe()
    part = obs["partitions"][0]
    assert part["replicas"] == [3, 4] and part["reassignment"] == [] and part["leader"] in (3, 4)
    assert part["isr"] == [3, 4]
    for b in (3, 4):
        assert ids(replica(obs, b)["log"]) == [1]


def test_controller_failover_with_a_deposed_controller():
    sim = Simulator({"brokers": 3, "max_records": 2})
    sim.apply("ControllerFailover", ())
    obs = sim.observe()
    assert obs["controller"]["epoch"] == 2 and obs["controller"]["stale_epoch"] == 1
    assert sim.snapshot().controller_epoch == 2
    # the deposed controller still acts on what it knows; brokers that heard from 2 ignore it
    sim.apply("Crash", (1,))
    sim.apply("ProcessBrokerChange", (1,))
    for b in (2, 3):
        while sim.inbox[b]:
            sim.apply("DeliverRequest", (b,))
    assert all(br["controller_epoch"] == 2 for br in sim.observe()["brokers"] if br["alive"])
    sim.apply("ResignController", (1,))
    assert sim.observe()["controller"]["stale_epoch"] == 0
    with pytest.raises(NotEnabled):
        sim.apply("ProcessBrokerChange", (1,))
    sim.apply("ProcessBrokerChange", (2,))
    sim.settle()
    assert sim.leader_of(0) in (2, 3)
    validate(sim.observe())


def test_controlled_shutdown_moves_leadership_first():
    sim = Simulator({"brokers": 3, "max_records": 3})
    sim.apply("Produce", (1, 0))
    replicate_fully(sim)
    sim.apply("ControlledShutdown", (1, 1))
    assert sim.leader_of(0) == 2 and sim.isr_of(0) == (2, 3)
    obs = sim.observe()
    assert not obs["brokers"][0]["alive"] and replica(obs, 1)["hw"] == 1  # checkpointed before stopping
    sim.settle()
    assert ids(replica(sim.observe(), 2)["log"]) == [1]


def test_preferred_election_and_topic_deletion():
    sim = Simulator({"brokers": 3, "max_records": 2})
    sim.apply("Crash", (1,))
    sim.apply("ProcessBrokerChange", (1,))
    sim.apply("Restart", (1,))
    sim.apply("ProcessBrokerChange", (1,))
    sim.settle()
    assert sim.leader_of(0) == 2 and sim.isr_of(0) == (1, 2, 3)
    sim.apply("RequestPreferredElection", (0,))
    sim.apply("ElectPreferredLeader", (1, 0))
    assert sim.leader_of(0) == 1
    sim.apply("RequestTopicDeletion", ())
    sim.apply("StartTopicDeletion", (1,))
    with pytest.raises(NotEnabled):
        sim.apply("CompleteTopicDeletion", (1,))
    sim.settle()
    obs = sim.observe()
    validate(obs)
    part = obs["partitions"][0]
    assert not part["exists"] and not part["deleting"] and part["zk_version"] == 0
    assert all(not r["present"] for r in obs["replicas"])


def test_topic_creation_as_an_action():
    sim = Simulator({"brokers": 3, "operations": {"topic_creation": True}})
    obs = sim.observe()
    assert obs["partitions"][0]["partition_state"] == "NonExistentPartition"
    assert all(b["controller_epoch"] == 0 for b in obs["brokers"])
    sim.apply("CreateTopic", (1,))
    sim.settle()
    assert sim.leader_of(0) == 1 and sim.isr_of(0) == (1, 2, 3)


def test_lossy_crash_keeps_only_the_given_prefix():
    sim = Simulator({"brokers": 3, "max_records": 3})
    for _ in range(3):
        sim.apply("Produce", (1, 0))
    replicate_fully(sim)
    sim.apply("CheckpointHighWatermark", (2, 0))
    sim.apply("LossyCrash", (2, (1,)))
    r2 = replica(sim.observe(), 2)
    assert ids(r2["log"]) == [1] and r2["hw"] == 1 and r2["role"] == "none" and r2["leader_epoch"] == -1
    sim.apply("Crash", (3,))
    r3 = replica(sim.observe(), 3)
    assert ids(r3["log"]) == [1, 2, 3] and r3["hw"] == 0  # never checkpointed


def test_partial_fetches_copy_at_most_max_fetch_records():
    sim = Simulator({"brokers": 2, "replication_factor": 2, "max_records": 3, "max_fetch_records": 1,
                     "faults": {"isr_shrinks": 1}})
    sim.apply("ShrinkIsr", (1, 0, 2))
    for _ in range(3):
        sim.apply("Produce", (1, 0))
    seen = []
    for _ in range(4):
        sim.apply("Fetch", (2, 0))
        r2 = replica(sim.observe(), 2)
        seen.append((ids(r2["log"]), r2["hw"], sim.isr_of(0)))
    assert seen == [([1], 1, (1,)), ([1, 2], 2, (1,)), ([1, 2, 3], 3, (1,)), ([1, 2, 3], 3, (1, 2))]


def test_delivery_control_delay_and_drop():
    sim = Simulator({"brokers": 3})
    sim.apply("Crash", (3,))
    sim.apply("ProcessBrokerChange", (1,))
    assert len(sim.inbox[1]) >= 1
    before = list(sim.inbox[1])
    sim.delay(1, 0)
    assert list(sim.inbox[1]) == before[1:] + before[:1]
    sim.drop(1, 0)
    assert len(sim.inbox[1]) == len(before) - 1


def _deposed_request_then_failover(connections: str, delayed: int = 0) -> Simulator:
    """Controller 1 elects 2 after the crash of 1 and is deposed: broker 3's inbox holds its
    LeaderAndIsr and, behind it, the new controller's (as in the model's tests)."""
    sim = Simulator({"brokers": 3, "replication_factor": 3, "max_records": 0, "controller_connections": connections,
                     "faults": {"controller_failovers": 1, "crashes": 1, "delayed_requests": delayed}})
    for name, args in (("Crash", (1,)), ("ProcessBrokerChange", (1,)), ("ControllerFailover", ())):
        sim.apply(name, args)
    assert [item.frm for item in sim.inbox[3]] == [("controller", 1), ("controller", 2)]
    return sim


def _broker(sim, b):
    return next(x for x in sim.observe()["brokers"] if x["id"] == b)


def test_per_controller_connections_let_a_deposed_controllers_request_arrive_last():
    sim = _deposed_request_then_failover("per-controller")
    assert ("DeliverDelayedRequest", (3, 1)) in sim.enabled()  # no budget: another controller's connection
    assert sim.spends_budget("DeliverDelayedRequest", (3, 1)) is None
    sim.rng.choice = lambda options: ("DeliverDelayedRequest", (3, 1))  # the scheduler picks it
    assert sim.step() == ("DeliverDelayedRequest", (3, 1))
    assert _broker(sim, 3)["controller_epoch"] == 2 and sim.budget.left["faults.delayed_requests"] == 0
    before = replica(sim.observe(), 3)
    sim.apply("DeliverRequest", (3,))  # the deposed controller's request: rejected, older controller
    assert not sim.inbox[3] and replica(sim.observe(), 3) == before


def test_a_shared_inbox_delivers_in_order_unless_the_budget_allows():
    sim = _deposed_request_then_failover("shared")
    assert ("DeliverDelayedRequest", (3, 1)) not in sim.enabled()
    sim = _deposed_request_then_failover("shared", delayed=1)
    assert ("DeliverDelayedRequest", (3, 1)) in sim.enabled()
    assert sim.spends_budget("DeliverDelayedRequest", (3, 1)) == "faults.delayed_requests"
    sim.rng.choice = lambda options: ("DeliverDelayedRequest", (3, 1))
    sim.step()
    assert sim.budget.left["faults.delayed_requests"] == 0
    assert ("DeliverDelayedRequest", (3, 1)) not in sim.enabled()


def test_per_controller_connections_keep_each_controllers_own_order():
    sim = _deposed_request_then_failover("per-controller", delayed=1)
    sim.inbox[3].append(sim.inbox[3][0])  # a second request of controller 1, behind controller 2's
    assert sim.spends_budget("DeliverDelayedRequest", (3, 1)) is None
    assert sim.spends_budget("DeliverDelayedRequest", (3, 2)) == "faults.delayed_requests"
    sim.budget.left["faults.delayed_requests"] = 0
    assert [a for a in sim.enabled() if a[0] == "DeliverDelayedRequest" and a[1][0] == 3] == [
        ("DeliverDelayedRequest", (3, 1))]


def test_two_runs_with_the_same_seed_are_identical():
    cfg = {"brokers": 3, "max_records": 4, "faults": {"crashes": 2, "isr_shrinks": 2, "controller_failovers": 1,
                                                      "delayed_requests": 2, "lossy_crashes": 1},
           "operations": {"preferred_elections": 1, "reassignments": [{"partition": 0, "target": [2, 3, 1]}]}}
    a, b = Simulator(cfg, seed=11), Simulator(cfg, seed=11)
    ta, tb = a.run(250), b.run(250)
    assert ta == tb and a.events == b.events and len(a.events) > 100
    assert a.observe() == b.observe()
    c = Simulator(cfg, seed=12)
    c.run(250)
    assert c.events != a.events


@pytest.mark.parametrize("seed", range(6))
def test_random_runs_keep_observations_valid_and_the_leader_in_the_isr(seed):
    cfg = {"brokers": 4, "partitions": 2, "replication_factor": 3, "max_records": 3,
           "faults": {"crashes": 2, "isr_shrinks": 2, "controller_failovers": 2, "delayed_requests": 2,
                      "undetected_restarts": 1},
           "operations": {"preferred_elections": 2, "controlled_shutdowns": 1, "topic_deletions": 1,
                          "reassignments": [{"partition": 1, "target": [1, 4]}]}}
    sim = Simulator(cfg, seed=seed)
    epochs = [0, 0]
    for _ in range(120):
        if sim.step() is None:
            break
        obs = sim.observe()
        validate(obs)
        for part in obs["partitions"]:
            if part["exists"] and part["leader"]:
                assert part["leader"] in part["isr"], sim.events[-20:]
            if part["exists"]:
                assert part["leader_epoch"] >= epochs[part["index"]]
                epochs[part["index"]] = part["leader_epoch"]
        for r in obs["replicas"]:
            assert r["leo"] == len(r["log"])
