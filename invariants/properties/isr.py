"""The in-sync replicas: IsrSubsetOfReplicas, StrongIsr, IsrHeals.

Each property's definition (:mod:`.kinds`) sits after the functions it names; specs/06-properties.md
says what each means and what breaks it.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from isrcheck.model.brokersets import members, render as render_set
from isrcheck.model.config import Config
from isrcheck.model.records import render_log
from isrcheck.model.state import NO_LEADER, State, ZkPartition
from isrcheck.specs.properties import NAMES

from .common import acting_leader, any_hw, gone, live_members, obs_alive, obs_ids, obs_replicas
from .kinds import Acked, Always, Liveness, Masks, Obs, every_config


# ---------------------------------------------------------------------------- IsrSubsetOfReplicas
def _isr_outside_ar(zp: ZkPartition) -> int:
    """The members of the ISR in ZooKeeper that are not in AR, as a broker set."""
    ar = 0
    for b in zp.replicas:
        ar |= 1 << b
    return zp.isr & ~ar


def isr_subset_of_replicas(s: State) -> bool:
    for zp in s.zk.partitions:
        if zp.replicas and _isr_outside_ar(zp):
            return False
    return True


def isr_subset_of_replicas_offences(s: State) -> Iterator[str]:
    for p, zp in enumerate(s.zk.partitions):
        if zp.replicas and _isr_outside_ar(zp):
            extra = members(_isr_outside_ar(zp))
            yield (f"partition {p}: ISR {render_set(zp.isr)} holds {', '.join(map(str, extra))}, "
                   f"not in AR {list(zp.replicas)}")


def _any_partition(s: Any) -> bool:
    return any(zp.replicas for zp in s.zk.partitions)


def isr_subset_of_replicas_observed(obs: Obs, acked: Acked) -> bool:
    return all(not p["exists"] or set(p["isr"]) <= set(p["replicas"]) for p in obs["partitions"])


ISR_SUBSET_OF_REPLICAS = Always(NAMES.IsrSubsetOfReplicas, isr_subset_of_replicas, isr_subset_of_replicas_offences,
                                exercised=_any_partition, observed=isr_subset_of_replicas_observed)


# ---------------------------------------------------------------------------- StrongIsr
def strong_isr(s: State) -> bool:
    for p, zp in enumerate(s.zk.partitions):
        if not zp.replicas or s.zk.deleting >> p & 1:
            continue
        acting = acting_leader(s, p)
        if acting is None:
            continue
        leader, log, hw = acting
        prefix = log[:hw]
        isr = zp.isr
        b = 0
        while isr:
            if isr & 1 and b != leader:
                br = s.brokers[b - 1]
                if br.alive:
                    r = br.replicas[p]
                    if (r.log[:hw] if r is not None else ()) != prefix:
                        return False
            isr >>= 1
            b += 1
    return True


def strong_isr_offences(s: State) -> Iterator[str]:
    for p, zp in enumerate(s.zk.partitions):
        if gone(s, p):
            continue
        acting = acting_leader(s, p)
        if acting is None:
            continue
        leader, log, hw = acting
        for b, r in live_members(s, p, zp.isr):
            mine = r.log[:hw] if r is not None else ()
            if b != leader and mine != log[:hw]:
                yield (f"partition {p}: below the leader's HW {hw} leader {leader} has {render_log(log[:hw])}, "
                       f"ISR member {b} has {render_log(mine)}")


def strong_isr_observed(obs: Obs, acked: Acked) -> bool:
    reps, alive = obs_replicas(obs), obs_alive(obs)
    for p in obs["partitions"]:
        i, leader = p["index"], p["leader"]
        if not p["exists"] or p["deleting"] or leader == 0 or not alive.get(leader):
            continue
        lr = reps[(leader, i)]
        if not lr["present"] or lr["role"] != "leader" or lr["leader_epoch"] != p["leader_epoch"]:
            continue
        prefix = obs_ids(lr["log"][: lr["hw"]])
        for b in p["isr"]:
            if b != leader and alive.get(b):
                r = reps[(b, i)]
                if obs_ids(r["log"][: lr["hw"]]) != prefix:
                    return False
    return True


STRONG_ISR = Always(NAMES.StrongIsr, strong_isr, strong_isr_offences, exercised=any_hw, observed=strong_isr_observed)


# ---------------------------------------------------------------------------- IsrHeals
def _in_sync(s: State, b: int, p: int) -> bool:
    """``b`` is in the ISR in ZooKeeper and follows the ZooKeeper leader (or is that leader, acting).

    A follower's leader epoch may lag the znode's: the controller sends an ISR shrink only to the
    leader, as the 0.8 design does, and a fetch carries no epoch before KIP-320.
    """
    zp = s.zk.partitions[p]
    if not zp.isr >> b & 1 or zp.leader == NO_LEADER:
        return False
    if b == zp.leader:
        return acting_leader(s, p) is not None
    r = s.brokers[b - 1].replicas[p]
    return r is not None and r.leader == zp.leader


def _isr_heals(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    pairs = [(b, p) for p in range(cfg.partitions) for b in cfg.broker_ids]

    def masks(s: State) -> tuple[int, int]:
        premise = goal = 0
        for i, (b, p) in enumerate(pairs):
            if (gone(s, p) or b not in s.zk.partitions[p].replicas or not s.brokers[b - 1].alive
                    or _in_sync(s, b, p)):
                goal |= 1 << i
            else:
                premise |= 1 << i
        return premise, goal

    return tuple(f"broker {b} partition {p}" for b, p in pairs), masks


ISR_HEALS = Liveness(NAMES.IsrHeals, every_config, _isr_heals)


DEFINITIONS = (ISR_SUBSET_OF_REPLICAS, STRONG_ISR, ISR_HEALS)
