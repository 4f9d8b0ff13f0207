"""Who leads: LeaderInIsr, OneLeaderPerEpoch, PartitionEventuallyLed, DeposedControllerStops.

Each property's definition (:mod:`.kinds`) sits after the functions it names; specs/06-properties.md
says what each means and what breaks it.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from isrcheck.model.brokersets import render as render_set
from isrcheck.model.config import Config
from isrcheck.model.state import NO_LEADER, State, ZkPartition
from isrcheck.specs.properties import NAMES

from .common import acting_leader, alive_mask, gone, obs_alive
from .kinds import Acked, Always, Liveness, Masks, Obs, every_config


# ---------------------------------------------------------------------------- LeaderInIsr
def _leader_outside_isr(zp: ZkPartition) -> bool:
    return bool(zp.replicas) and zp.leader != NO_LEADER and not zp.isr >> zp.leader & 1


def leader_in_isr(s: State) -> bool:
    for zp in s.zk.partitions:
        if _leader_outside_isr(zp):
            return False
    return True


def leader_in_isr_offences(s: State) -> Iterator[str]:
    for p, zp in enumerate(s.zk.partitions):
        if _leader_outside_isr(zp):
            yield f"partition {p}: leader {zp.leader} is not in its ISR {render_set(zp.isr)}"


def _any_leader(s: Any) -> bool:
    return any(zp.replicas and zp.leader != NO_LEADER for zp in s.zk.partitions)


def leader_in_isr_observed(obs: Obs, acked: Acked) -> bool:
    return all(not p["exists"] or p["leader"] == 0 or p["leader"] in p["isr"] for p in obs["partitions"])


LEADER_IN_ISR = Always(NAMES.LeaderInIsr, leader_in_isr, leader_in_isr_offences,
                       exercised=_any_leader, observed=leader_in_isr_observed)


# ---------------------------------------------------------------------------- OneLeaderPerEpoch
def one_leader_per_epoch(s: State) -> bool:
    for p in range(len(s.zk.partitions)):
        seen: set[int] = set()
        for i, br in enumerate(s.brokers):
            r = br.replicas[p]
            if br.alive and r is not None and r.leader == i + 1:
                if r.leader_epoch in seen:
                    return False
                seen.add(r.leader_epoch)
    return True


def one_leader_per_epoch_offences(s: State) -> Iterator[str]:
    for p in range(len(s.zk.partitions)):
        by_epoch: dict[int, list[int]] = {}
        for b, br in enumerate(s.brokers, start=1):
            r = br.replicas[p]
            if br.alive and r is not None and r.leader == b:
                by_epoch.setdefault(r.leader_epoch, []).append(b)
        for e, bs in by_epoch.items():
            if len(bs) > 1:
                yield f"partition {p}: brokers {' and '.join(map(str, bs))} both act as leader in leader epoch {e}"


def _acting_leaders(s: Any) -> bool:
    return any(br.alive and r is not None and r.leader == i + 1
               for i, br in enumerate(s.brokers) for r in br.replicas)


def one_leader_per_epoch_observed(obs: Obs, acked: Acked) -> bool:
    alive = obs_alive(obs)
    seen: set[tuple[int, int]] = set()
    for r in obs["replicas"]:
        if alive.get(r["broker"]) and r["present"] and r["role"] == "leader":
            key = (r["partition"], r["leader_epoch"])
            if key in seen:
                return False
            seen.add(key)
    return True


ONE_LEADER_PER_EPOCH = Always(NAMES.OneLeaderPerEpoch, one_leader_per_epoch, one_leader_per_epoch_offences,
                              exercised=_acting_leaders, observed=one_leader_per_epoch_observed)


# ---------------------------------------------------------------------------- PartitionEventuallyLed
def _partition_eventually_led(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    n = cfg.partitions

    def masks(s: State) -> tuple[int, int]:
        premise = goal = 0
        alive = alive_mask(s)
        for p in range(n):
            if gone(s, p) or acting_leader(s, p) is not None:
                goal |= 1 << p
            elif s.zk.partitions[p].isr & alive:
                premise |= 1 << p
        return premise, goal

    return tuple(f"partition {p}" for p in range(n)), masks


PARTITION_EVENTUALLY_LED = Liveness(NAMES.PartitionEventuallyLed, every_config, _partition_eventually_led)


# ---------------------------------------------------------------------------- DeposedControllerStops
def _deposed_controller_stops(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    def masks(s: State) -> tuple[int, int]:
        return (1, 0) if s.stale is not None else (0, 1)

    return ("the deposed controller",), masks


def _with_stale_controller(cfg: Config) -> bool:
    return cfg.faults.controller_failovers > 0 and cfg.stale_controller


DEPOSED_CONTROLLER_STOPS = Liveness(NAMES.DeposedControllerStops, _with_stale_controller, _deposed_controller_stops)


# ---------------------------------------------------------------------------- MetadataEventuallyCurrent
def _metadata_eventually_current(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    from isrcheck.model.extension import Scope
    from isrcheck.model.history import configured_protocol
    from isrcheck.model.metadatacache import broker_epoch_field

    pairs = [(b, p) for p in range(cfg.partitions) for b in cfg.broker_ids]
    if not cfg.metadata_cache:  # no cache: nothing to wait for (the property does not apply)
        every = (1 << len(pairs)) - 1
        return tuple(f"broker {b} partition {p}" for b, p in pairs), lambda s: (0, every)
    # the cache's fields come first among a broker's variant fields (model/history.py, _with_options)
    ext = configured_protocol(cfg).extension
    at = [ext.index(Scope.BROKER, broker_epoch_field(p)) for p in range(cfg.partitions)]

    def masks(s: State) -> tuple[int, int]:
        premise = goal = 0
        for i, (b, p) in enumerate(pairs):
            br = s.brokers[b - 1]
            if gone(s, p) or not br.alive or br.ext[at[p]] == s.zk.partitions[p].leader_epoch:
                goal |= 1 << i
            else:
                premise |= 1 << i
        return premise, goal

    return tuple(f"broker {b} partition {p}" for b, p in pairs), masks


def _with_metadata_cache(cfg: Config) -> bool:
    return cfg.metadata_cache


METADATA_EVENTUALLY_CURRENT = Liveness(NAMES.MetadataEventuallyCurrent, _with_metadata_cache,
                                       _metadata_eventually_current)


DEFINITIONS = (LEADER_IN_ISR, ONE_LEADER_PER_EPOCH, PARTITION_EVENTUALLY_LED, DEPOSED_CONTROLLER_STOPS,
               METADATA_EVENTUALLY_CURRENT)
