"""The safety properties of specs/06-properties.md, evaluated on an observation and the acknowledged writes.

They read only what both sides report (specs/observation.toml, plus the writes acknowledged to
producers), so the same function judges a model state and the implementation's state. Each mirrors
the model's property of the same name in ``isrcheck.invariants.properties``, field for field
(``tests/conformance/test_obsprops.py`` checks that they agree on every state of several models):

- ``LeaderInIsr``, ``IsrSubsetOfReplicas``, ``HighWatermarkBelowLogEnd``, ``OneLeaderPerEpoch``;
- ``NoCommittedWriteLost``: every acknowledged write is in the log of every live member of the
  ISR (and of the leader) of an existing partition that is not being deleted;
- ``LogMatching``: live in-sync replicas (and the leader) agree below both of their HWs;
- ``StrongIsr``: when the leader named in ZooKeeper is alive and acts on that leader epoch, every
  other live ISR member holds the leader's log up to the leader's HW.

Not here: ``ConsistentRead`` (it needs the longest prefix any leader ever exposed, a history the
observation does not carry) and the transition and sometimes properties.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["OBSERVATION_PROPERTIES", "broken", "check"]

Obs = Mapping[str, Any]


def _replicas(obs: Obs) -> dict[tuple[int, int], Mapping[str, Any]]:
    return {(r["broker"], r["partition"]): r for r in obs["replicas"]}


def _alive(obs: Obs) -> dict[int, bool]:
    return {b["id"]: b["alive"] for b in obs["brokers"]}


def _ids(log: Sequence[Mapping[str, int]]) -> list[tuple[int, int]]:
    return [(x["id"], x["epoch"]) for x in log]


def leader_in_isr(obs: Obs, acked: Sequence[Sequence[int]]) -> bool:
    return all(not p["exists"] or p["leader"] == 0 or p["leader"] in p["isr"] for p in obs["partitions"])


def isr_subset_of_replicas(obs: Obs, acked: Sequence[Sequence[int]]) -> bool:
    return all(not p["exists"] or set(p["isr"]) <= set(p["replicas"]) for p in obs["partitions"])


def hw_below_log_end(obs: Obs, acked: Sequence[Sequence[int]]) -> bool:
    return all(not r["present"] or r["hw"] <= len(r["log"]) for r in obs["replicas"])


def _holders(p: Mapping[str, Any]) -> set[int]:
    out = set(p["isr"])
    if p["leader"]:
        out.add(p["leader"])
    return out


def no_committed_write_lost(obs: Obs, acked: Sequence[Sequence[int]]) -> bool:
    reps, alive = _replicas(obs), _alive(obs)
    for p in obs["partitions"]:
        ids = set(acked[p["index"]])
        if not ids or not p["exists"] or p["deleting"]:
            continue
        for b in _holders(p):
            if alive.get(b):
                r = reps[(b, p["index"])]
                if not r["present"] or not ids <= {x["id"] for x in r["log"]}:
                    return False
    return True


def log_matching(obs: Obs, acked: Sequence[Sequence[int]]) -> bool:
    reps, alive = _replicas(obs), _alive(obs)
    for p in obs["partitions"]:
        if not p["exists"]:
            continue
        members = [reps[(b, p["index"])] for b in sorted(_holders(p))
                   if alive.get(b) and reps[(b, p["index"])]["present"]]
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                a, c = members[i], members[j]
                n = min(a["hw"], c["hw"])
                if n and _ids(a["log"][:n]) != _ids(c["log"][:n]):
                    return False
    return True


def one_leader_per_epoch(obs: Obs, acked: Sequence[Sequence[int]]) -> bool:
    alive = _alive(obs)
    seen: set[tuple[int, int]] = set()
    for r in obs["replicas"]:
        if alive.get(r["broker"]) and r["present"] and r["role"] == "leader":
            key = (r["partition"], r["leader_epoch"])
            if key in seen:
                return False
            seen.add(key)
    return True


def strong_isr(obs: Obs, acked: Sequence[Sequence[int]]) -> bool:
    reps, alive = _replicas(obs), _alive(obs)
    for p in obs["partitions"]:
        i, leader = p["index"], p["leader"]
        if not p["exists"] or p["deleting"] or leader == 0 or not alive.get(leader):
            continue
        lr = reps[(leader, i)]
        if not lr["present"] or lr["role"] != "leader" or lr["leader_epoch"] != p["leader_epoch"]:
            continue
        prefix = _ids(lr["log"][: lr["hw"]])
        for b in p["isr"]:
            if b != leader and alive.get(b):
                r = reps[(b, i)]
                if _ids(r["log"][: lr["hw"]]) != prefix:
                    return False
    return True


OBSERVATION_PROPERTIES: dict[str, Callable[[Obs, Sequence[Sequence[int]]], bool]] = {
    "LeaderInIsr": leader_in_isr,
    "IsrSubsetOfReplicas": isr_subset_of_replicas,
    "HighWatermarkBelowLogEnd": hw_below_log_end,
    "StrongIsr": strong_isr,
    "NoCommittedWriteLost": no_committed_write_lost,
    "LogMatching": log_matching,
    "OneLeaderPerEpoch": one_leader_per_epoch,
}


def check(name: str, obs: Obs, acked: Sequence[Sequence[int]]) -> bool:
    """Whether property ``name`` holds (KeyError for a property with no observation form)."""
    return OBSERVATION_PROPERTIES[name](obs, acked)


def broken(obs: Obs, acked: Sequence[Sequence[int]], names: Sequence[str] | None = None) -> list[str]:
    """The properties (of ``names``, default all) that ``obs`` breaks."""
    return [n for n in (names or OBSERVATION_PROPERTIES) if not OBSERVATION_PROPERTIES[n](obs, acked)]
