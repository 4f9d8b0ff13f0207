"""What several property families read the same way, in a model state and in an observation.

specs/06-properties.md defines these notions once ("the acting leader", the in-sync holders of a
partition, the partitions the properties about committed data skip); the properties of every
family, their explanations, the liveness masks and the observation forms use them from here.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from isrcheck.model.brokersets import members
from isrcheck.model.state import NO_LEADER, Replica, State, ZkPartition

from .kinds import Obs


# ---------------------------------------------------------------------------- model states
def acting_leader(s: State, p: int) -> tuple[int, tuple[int, ...], int] | None:
    """The ZooKeeper leader of ``p``, its log and HW, if it is up and acting on the current leader
    epoch (it believes it leads, on the znode's leader epoch)."""
    zp = s.zk.partitions[p]
    if zp.leader == NO_LEADER:
        return None
    br = s.brokers[zp.leader - 1]
    r = br.replicas[p]
    if not br.alive or r is None or r.leader != zp.leader or r.leader_epoch != zp.leader_epoch:
        return None
    return zp.leader, r.log, r.hw


def gone(s: State, p: int) -> bool:
    """The partition has no assignment in ZooKeeper or is queued for deletion: the properties about
    committed data do not speak of it, and a liveness obligation about it has ended."""
    return not s.zk.partitions[p].replicas or bool(s.zk.deleting >> p & 1)


def in_sync_holders(zp: ZkPartition) -> int:
    """The ISR in ZooKeeper with the znode's leader, as a broker set."""
    return zp.isr | (1 << zp.leader if zp.leader != NO_LEADER else 0)


def live_members(s: State, p: int, brokers: int) -> Iterator[tuple[int, Replica | None]]:
    """(broker, its replica of ``p`` or None) for each broker of the set ``brokers`` that is up, in
    ascending order (for the explanations: the checks walk the bits themselves)."""
    for b in members(brokers):
        br = s.brokers[b - 1]
        if br.alive:
            yield b, br.replicas[p]


def alive_mask(s: State) -> int:
    """The brokers that are up, as a broker set."""
    m = 0
    for i, br in enumerate(s.brokers):
        if br.alive:
            m |= 1 << (i + 1)
    return m


def any_hw(s: Any) -> bool:
    """Some replica has a positive HW (there is something below it to protect)."""
    return any(r is not None and r.hw > 0 for br in s.brokers for r in br.replicas)


def any_acked(s: Any) -> bool:
    """Some write has been acknowledged."""
    return any(g.acked for g in s.ghost)


# ---------------------------------------------------------------------------- observations
def obs_replicas(obs: Obs) -> dict[tuple[int, int], Mapping[str, Any]]:
    """(broker, partition) -> the replica's observation."""
    return {(r["broker"], r["partition"]): r for r in obs["replicas"]}


def obs_alive(obs: Obs) -> dict[int, bool]:
    return {b["id"]: b["alive"] for b in obs["brokers"]}


def obs_ids(log: Sequence[Mapping[str, int]]) -> list[tuple[int, int]]:
    """A log as (record id, leader epoch) pairs."""
    return [(x["id"], x["epoch"]) for x in log]


def obs_holders(p: Mapping[str, Any]) -> set[int]:
    """The ISR of an observed partition with its leader (:func:`in_sync_holders`)."""
    out = set(p["isr"])
    if p["leader"]:
        out.add(p["leader"])
    return out
