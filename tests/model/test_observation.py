"""The observation schema (specs/observation.toml), the model's projection onto it, and the validator."""
from __future__ import annotations

import copy
import json
from collections import deque
from typing import Any

import pytest

from isrcheck import specs
from isrcheck.model.config import from_mapping
from isrcheck.model.kafka import initial_state
from isrcheck.model.actions import apply, enabled_actions
from isrcheck.model.observe import LazyObservation, observe
from isrcheck.model.protocol import Protocol
from isrcheck.model.state import State
from isrcheck.model.tables import IllegalTransition, PartitionState, ReplicaState
from isrcheck.specs.observation import ObservationError, SchemaError, load_schema
from isrcheck.specs.observation import validate as validate_observation

SCHEMA = load_schema()


def _fields(obj: str) -> dict[str, dict[str, Any]]:
    for o in SCHEMA["object"]:
        if o["name"] == obj:
            return {f["name"]: f for f in o["field"]}
    raise KeyError(obj)


def reachable(raw: dict[str, Any], limit: int) -> list[State]:
    """Up to ``limit`` distinct states, breadth first (states whose step faults are skipped)."""
    protocol = Protocol(from_mapping(raw))
    s0 = initial_state(protocol)
    seen = {s0}
    queue = deque([s0])
    while queue and len(seen) < limit:
        s = queue.popleft()
        for a in enabled_actions(protocol, s):
            try:
                t = apply(protocol, s, a)
            except IllegalTransition:
                continue
            if t not in seen:
                seen.add(t)
                queue.append(t)
    return list(seen)


SMALL = {
    "brokers": 3, "replication_factor": 2, "max_records": 1,
    "faults": {"crashes": 1, "lossy_crashes": 1, "controller_failovers": 1, "isr_shrinks": 1},
    "operations": {"reassignments": [{"partition": 0, "target": [3, 1]}], "topic_deletions": 1},
}


# leader-epoch generations: crashes and re-elections with data, so followers reconcile
EPOCHS = {"brokers": 3, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 1, "isr_shrinks": 1}}
EPOCHS_LOSSY = {"brokers": 2, "replication_factor": 2, "max_records": 2, "faults": {"crashes": 1, "lossy_crashes": 1}}


@pytest.fixture(scope="module")
def states() -> list[State]:
    return reachable(SMALL, 1500) + reachable({"brokers": 2, "partitions": 2, "replication_factor": 2,
                                                "operations": {"topic_creation": True}}, 300)


@pytest.fixture(scope="module")
def epoch_states() -> list[State]:
    return (reachable(EPOCHS | {"generation": "kip-320"}, 2000) + reachable(EPOCHS | {"generation": "kip-101"}, 2000)
            + reachable(EPOCHS_LOSSY | {"generation": "kip-279"}, 2000))


# ---------------------------------------------------------------------------- the schema
def test_schema_is_the_shipped_file_and_well_formed() -> None:
    assert SCHEMA == specs.load("observation.toml")
    assert SCHEMA["root"] == "observation"
    validate_observation(observe(initial_state(Protocol(from_mapping({})))), SCHEMA)


def test_state_labels_come_from_the_tables() -> None:
    assert _fields("partition")["partition_state"]["values"] == [s.label for s in PartitionState]
    assert _fields("replica")["replica_state"]["values"] == [s.label for s in ReplicaState]


def test_every_field_is_described() -> None:
    for obj in SCHEMA["object"]:
        assert obj.get("description"), obj["name"]
        for f in obj["field"]:
            assert f.get("description"), f"{obj['name']}.{f['name']}"


def test_a_malformed_schema_is_refused() -> None:
    bad = copy.deepcopy(SCHEMA)
    bad["object"][0]["field"][0]["type"] = "controler"
    with pytest.raises(SchemaError, match="unknown type 'controler'"):
        validate_observation({}, bad)
    with pytest.raises(SchemaError, match="root"):
        validate_observation({}, {"object": []})


# ---------------------------------------------------------------------------- the projection
def test_initial_state_observation() -> None:
    obs = observe(initial_state(Protocol(from_mapping({"brokers": 3, "max_records": 1}))))
    assert obs["controller"] == {"epoch": 1, "live_brokers": [1, 2, 3], "shutting_down": [], "stale_epoch": 0}
    assert [b["alive"] for b in obs["brokers"]] == [True, True, True]
    (p,) = obs["partitions"]
    assert p == {"index": 0, "exists": True, "replicas": [1, 2, 3], "leader": 1, "isr": [1, 2, 3],
                 "leader_epoch": 0, "zk_version": 1, "partition_state": "OnlinePartition",
                 "reassignment": [], "preferred_election": False, "deleting": False}
    assert [r["role"] for r in obs["replicas"]] == ["leader", "follower", "follower"]
    assert all(r["replica_state"] == "OnlineReplica" and r["present"] for r in obs["replicas"])
    assert all(r["epochs"] == [] and r["fetch_state"] == "fetching" for r in obs["replicas"])


def test_initial_leader_epoch_cache() -> None:
    obs = observe(initial_state(Protocol(from_mapping({"brokers": 3, "generation": "kip-279"}))))
    assert [r["epochs"] for r in obs["replicas"]] == [[{"epoch": 0, "start_offset": 0}], [], []]
    assert {r["fetch_state"] for r in obs["replicas"]} == {"fetching"}


def test_projection_follows_a_write_and_a_crash() -> None:
    protocol = Protocol(from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1,
                                      "faults": {"crashes": 1}}))
    s = initial_state(protocol)
    script = (("Produce", (1, 0)), ("Fetch", (2, 0)), ("Fetch", (2, 0)), ("Fetch", (2, 0)), ("Crash", (1,)))
    for name, args in script:
        s = apply(protocol, s, next(a for a in enabled_actions(protocol, s) if a == (name, args)))
    obs = observe(s)
    leader, follower = obs["replicas"]
    assert leader["role"] == "none" and leader["log"] == [{"id": 1, "epoch": 0}] and leader["leader_epoch"] == -1
    assert follower["leo"] == 1 and follower["hw"] == 1 and follower["role"] == "follower"
    assert obs["brokers"][0] == {"id": 1, "alive": False, "controller_epoch": 0}
    assert leader["epochs"] == follower["epochs"] == []  # high-watermark keeps no epoch cache


def test_projection_follows_a_reconciliation() -> None:
    """kip-320: the follower of a new leader asks, then truncates, and its cache follows its log."""
    protocol = Protocol(from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 2,
                                      "generation": "kip-320", "faults": {"crashes": 1}}))
    s = initial_state(protocol)

    def step(name: str, args: tuple) -> dict[str, Any]:
        nonlocal s
        s = apply(protocol, s, next(a for a in enabled_actions(protocol, s) if a == (name, args)))
        return observe(s)

    step("Produce", (1, 0))
    obs = step("Fetch", (2, 0))
    assert obs["replicas"][1]["epochs"] == [{"epoch": 0, "start_offset": 0}]
    step("Crash", (1,))
    step("ProcessBrokerChange", (1,))
    while s.inbox[1]:
        obs = step("DeliverRequest", (2,))  # LeaderAndIsr: broker 2 leads in epoch 1
    assert obs["replicas"][1]["role"] == "leader"
    assert obs["replicas"][1]["epochs"] == [{"epoch": 0, "start_offset": 0}, {"epoch": 1, "start_offset": 1}]
    step("Restart", (1,))
    step("ProcessBrokerChange", (1,))
    while s.inbox[0]:
        obs = step("DeliverRequest", (1,))
    assert obs["replicas"][0]["role"] == "follower" and obs["replicas"][0]["fetch_state"] == "ask-epoch-end"
    obs = step("OffsetsForLeaderEpoch", (1, 0))
    assert obs["replicas"][0]["fetch_state"] == "truncate-pending"
    obs = step("TruncateToEpochEndOffset", (1, 0))
    follower = obs["replicas"][0]
    assert follower["fetch_state"] == "fetching"
    assert follower["log"] == [{"id": 1, "epoch": 0}]  # epoch 0 ends at offset 1 on the leader too
    assert follower["epochs"] == [{"epoch": 0, "start_offset": 0}]


def test_reachable_states_validate_and_are_plain_json(states: list[State]) -> None:
    for s in states:
        obs = observe(s)
        validate_observation(obs, SCHEMA)
        assert json.loads(json.dumps(obs)) == obs
        nb, np_ = len(s.brokers), len(s.zk.partitions)
        assert len(obs["brokers"]) == nb and len(obs["partitions"]) == np_
        assert [(r["broker"], r["partition"]) for r in obs["replicas"]] == [
            (b, p) for b in range(1, nb + 1) for p in range(np_)]
        for r in obs["replicas"]:
            assert r["leo"] == len(r["log"]) and r["hw"] <= r["leo"]


def test_the_lazy_view_reads_as_the_observation(states: list[State], epoch_states: list[State]) -> None:
    """validate reads candidates through LazyObservation: every field it gives is observe()'s, read
    in any order (a replica's log after or before its other fields)."""
    for n, s in enumerate(states + epoch_states):
        obs, lazy = observe(s), LazyObservation(s)
        assert lazy["controller"] == obs["controller"]
        for key in ("brokers", "partitions", "replicas"):
            for i, entry in enumerate(obs[key]):
                fields = list(entry)
                if n % 2:  # half the states read the log first, half last
                    fields.reverse()
                assert {f: lazy[key][i][f] for f in fields} == entry, (key, i)
    with pytest.raises(KeyError):
        LazyObservation(states[0])["nothing"]


def test_epoch_generation_states_validate(epoch_states: list[State]) -> None:
    for s in epoch_states:
        obs = observe(s)
        validate_observation(obs, SCHEMA)
        for r in obs["replicas"]:
            epochs = [(e["epoch"], e["start_offset"]) for e in r["epochs"]]
            # epochs strictly ascending; start offsets ascending, equal for an epoch without records
            assert all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(epochs, epochs[1:])), r
            assert all(start <= r["leo"] for _, start in epochs), r
            if r["role"] == "leader" or not r["present"]:
                assert r["fetch_state"] == "fetching", r
    seen = {r["fetch_state"] for s in epoch_states for r in observe(s)["replicas"]}
    assert seen == {"fetching", "ask-epoch-end", "truncate-pending"}


def test_the_walks_reach_varied_observations(states: list[State]) -> None:
    seen = {(r["role"], r["replica_state"]) for s in states for r in observe(s)["replicas"]}
    assert ("leader", "OnlineReplica") in seen and ("none", "OfflineReplica") in seen
    assert any(observe(s)["controller"]["stale_epoch"] for s in states)
    assert any(p["reassignment"] for s in states for p in observe(s)["partitions"])
    assert any(p["partition_state"] == "NonExistentPartition" for s in states for p in observe(s)["partitions"])


# ---------------------------------------------------------------------------- doctored observations
@pytest.fixture
def obs() -> dict[str, Any]:
    return observe(initial_state(Protocol(from_mapping({"brokers": 3}))))


@pytest.mark.parametrize(
    "doctor, path, problem",
    [
        (lambda o: o["partitions"][0].pop("leader"), "partitions[0].leader", "missing field (int)"),
        (lambda o: o.pop("controller"), "controller", "missing field"),
        (lambda o: o["partitions"][0].update(isr=[1, "2"]), "partitions[0].isr[1]", "expected int, got string '2'"),
        (lambda o: o["partitions"][0].update(leader=True), "partitions[0].leader", "expected int, got bool"),
        (lambda o: o["brokers"][1].update(alive=1), "brokers[1].alive", "expected bool, got int"),
        (lambda o: o["replicas"][0].update(role="boss"), "replicas[0].role", "must be one of leader, follower, none"),
        (lambda o: o["partitions"][0].update(isr=[3, 1]), "partitions[0].isr", "ascending"),
        (lambda o: o["partitions"][0].update(replicas=[1, 1]), "partitions[0].replicas", "distinct"),
        (lambda o: o["controller"].update(epoch=0), "controller.epoch", "must be >= 1"),
        (lambda o: o["replicas"][0].update(log=[{"id": 1}]), "replicas[0].log[0].epoch", "missing field"),
        (lambda o: o["replicas"][2].update(extra=1), "replicas[2].extra", "unknown field"),
        (lambda o: o.update(partitions={}), "partitions", "expected list[partition], got object"),
        (lambda o: o["partitions"][0].update(partition_state="Online"), "partitions[0].partition_state",
         "must be one of NonExistentPartition"),
        (lambda o: o["replicas"][1].update(fetch_state="truncating"), "replicas[1].fetch_state",
         "must be one of fetching, ask-epoch-end, truncate-pending"),
        (lambda o: o["replicas"][0].update(epochs=[{"epoch": 0}]), "replicas[0].epochs[0].start_offset",
         "missing field"),
        (lambda o: o["replicas"][0].update(epochs=[{"epoch": -1, "start_offset": 0}]),
         "replicas[0].epochs[0].epoch", "must be >= 0"),
        (lambda o: o["replicas"][2].pop("fetch_state"), "replicas[2].fetch_state", "missing field (string)"),
    ],
)
def test_doctored_observation_is_rejected_with_its_path(obs: dict[str, Any], doctor: Any, path: str, problem: str) -> None:
    validate_observation(obs)  # intact: accepted (with the schema read from the package)
    doctor(obs)
    with pytest.raises(ObservationError) as e:
        validate_observation(obs, SCHEMA)
    assert e.value.path == path
    assert problem in str(e.value)
    assert str(e.value).startswith(f"{path}: ")


def test_not_an_object_at_all() -> None:
    with pytest.raises(ObservationError, match=r"^<observation>: expected an object \(observation\), got list"):
        validate_observation([], SCHEMA)
