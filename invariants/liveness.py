"""The liveness properties, each named as in specs/06-properties.md ("Liveness").

Each is a leads-to, ``P ~> Q``, over instances (a partition, a broker's copy of a partition, a
record), checked under weak fairness of the healing actions (specs/actions.toml, ``fairness``) by
:mod:`isrcheck.engine.liveness`. ``masks(state)`` returns the premise and goal bitmasks, bit ``i``
for ``instances[i]``. A goal includes the ways an obligation legitimately ends (the partition is
deleted, the broker stops, the producer is told its write failed), so that only waiting forever
counts against the protocol.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from isrcheck.model.config import Config, ConfigError
from isrcheck.engine.core import Progress
from isrcheck.engine.liveness import LeadsTo, LivenessResult, check_liveness
from isrcheck.model.protocol import Protocol
from isrcheck.model.state import NO_LEADER, State

from .properties import build_model

Masks = Callable[[State], tuple[int, int]]


def _gone(s: State, p: int) -> bool:
    """The partition has no assignment in ZooKeeper or is queued for deletion."""
    return not s.zk.partitions[p].replicas or bool(s.zk.deleting >> p & 1)


def _alive_mask(s: State) -> int:
    m = 0
    for i, br in enumerate(s.brokers):
        if br.alive:
            m |= 1 << (i + 1)
    return m


def _led(s: State, p: int) -> bool:
    """The ZooKeeper leader of ``p`` is up and acting on the znode's leader epoch."""
    zp = s.zk.partitions[p]
    if zp.leader == NO_LEADER:
        return False
    br = s.brokers[zp.leader - 1]
    r = br.replicas[p]
    return br.alive and r is not None and r.leader == zp.leader and r.leader_epoch == zp.leader_epoch


# ---------------------------------------------------------------------------- the properties
def _reassignment_completes(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    parts = sorted({r.partition for r in cfg.operations.reassignments})

    def masks(s: State) -> tuple[int, int]:
        premise = goal = 0
        for i, p in enumerate(parts):
            if s.zk.reassign[p]:
                premise |= 1 << i
            else:
                goal |= 1 << i
        return premise, goal

    return tuple(f"partition {p}" for p in parts), masks


def _partition_eventually_led(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    n = cfg.partitions

    def masks(s: State) -> tuple[int, int]:
        premise = goal = 0
        alive = _alive_mask(s)
        for p in range(n):
            if _gone(s, p) or _led(s, p):
                goal |= 1 << p
            elif s.zk.partitions[p].isr & alive:
                premise |= 1 << p
        return premise, goal

    return tuple(f"partition {p}" for p in range(n)), masks


def _in_sync(s: State, b: int, p: int) -> bool:
    """``b`` is in the ISR in ZooKeeper and follows the ZooKeeper leader (or is that leader, acting).

    A follower's leader epoch may lag the znode's: the controller sends an ISR shrink only to the
    leader, as the 0.8 design does, and a fetch carries no epoch before KIP-320.
    """
    zp = s.zk.partitions[p]
    if not zp.isr >> b & 1 or zp.leader == NO_LEADER:
        return False
    if b == zp.leader:
        return _led(s, p)
    r = s.brokers[b - 1].replicas[p]
    return r is not None and r.leader == zp.leader


def _isr_heals(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    pairs = [(b, p) for p in range(cfg.partitions) for b in cfg.broker_ids]

    def masks(s: State) -> tuple[int, int]:
        premise = goal = 0
        for i, (b, p) in enumerate(pairs):
            if (_gone(s, p) or b not in s.zk.partitions[p].replicas or not s.brokers[b - 1].alive
                    or _in_sync(s, b, p)):
                goal |= 1 << i
            else:
                premise |= 1 << i
        return premise, goal

    return tuple(f"broker {b} partition {p}" for b, p in pairs), masks


def _write_eventually_committed(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    pairs = [(p, rid) for p in range(cfg.partitions) for rid in range(1, cfg.max_records + 1)]
    min_isr = cfg.min_insync_replicas

    def masks(s: State) -> tuple[int, int]:
        premise = goal = 0
        alive = _alive_mask(s)
        for i, (p, rid) in enumerate(pairs):
            bit = 1 << rid
            if s.ghost[p].acked & bit or _gone(s, p) or (s.zk.partitions[p].isr & alive).bit_count() < min_isr:
                goal |= 1 << i
                continue
            waiting = False
            for br in s.brokers:
                r = br.replicas[p]
                if br.alive and r is not None and r.pending & bit:
                    waiting = True
                    break
            if waiting:
                premise |= 1 << i
            else:
                goal |= 1 << i  # answered: acknowledged, or the producer was told it failed
        return premise, goal

    return tuple(f"partition {p} record {rid}" for p, rid in pairs), masks


def _deposed_controller_stops(cfg: Config) -> tuple[tuple[str, ...], Masks]:
    def masks(s: State) -> tuple[int, int]:
        return (1, 0) if s.stale is not None else (0, 1)

    return ("the deposed controller",), masks


Builder = Callable[[Config], tuple[tuple[str, ...], Masks]]

#: name -> (builder, spec anchor, description, applies to the configuration)
_TABLE: tuple[tuple[str, Builder, str, Callable[[Config], bool]], ...] = (
    ("ReassignmentCompletes", _reassignment_completes,
     "A requested reassignment eventually finishes (its request leaves /admin/reassign_partitions).",
     lambda c: bool(c.operations.reassignments)),
    ("PartitionEventuallyLed", _partition_eventually_led,
     "While a live broker is in a partition's ISR, the partition eventually has an acting leader.",
     lambda c: True),
    ("IsrHeals", _isr_heals,
     "A live assigned replica eventually is in the ISR and follows the leader ZooKeeper names.",
     lambda c: True),
    ("WriteEventuallyCommitted", _write_eventually_committed,
     "A write appended with acks=all is eventually acknowledged, unless its leader gives it up or "
     "fewer than min.insync.replicas ISR members are live.",
     lambda c: c.acks == "all" and c.max_records > 0),
    ("DeposedControllerStops", _deposed_controller_stops,
     "A deposed controller eventually stops acting.",
     lambda c: c.faults.controller_failovers > 0 and c.stale_controller),
)

LIVENESS_NAMES: tuple[str, ...] = tuple(name for name, *_ in _TABLE)
LIVENESS_DESCRIPTIONS: dict[str, str] = {name: description for name, _, description, _ in _TABLE}


def applies(name: str, cfg: Config) -> bool:
    """Whether liveness property ``name`` means something for ``cfg``."""
    for n, _, _, applies_to in _TABLE:
        if n == name:
            return applies_to(cfg)
    raise ConfigError(f"unknown liveness property {name!r} (known: {', '.join(LIVENESS_NAMES)})")


def liveness_property(name: str, cfg: Config) -> LeadsTo:
    for n, build, description, _ in _TABLE:
        if n == name:
            instances, masks = build(cfg)
            return LeadsTo(n, instances, masks, f"06-properties.md#{n.lower()}", description)
    raise ConfigError(f"unknown liveness property {name!r} (known: {', '.join(LIVENESS_NAMES)})")


def applicable_liveness(cfg: Config, names: Sequence[str] | None = None) -> list[LeadsTo]:
    """The liveness properties that mean something for ``cfg`` (or those ``names``, which must)."""
    if names is None:
        return [liveness_property(n, cfg) for n, _, _, applies in _TABLE if applies(cfg)]
    out = []
    for name in names:
        prop = liveness_property(name, cfg)
        if not applies(name, cfg):
            raise ConfigError(f"liveness property {name} does not apply to this configuration "
                              "(no reassignment, failover or acks=all write that it speaks of)")
        out.append(prop)
    return out


def check(cfg: Config, names: Sequence[str] | None = None, *, protocol: Protocol | None = None,
          max_states: int | None = None, max_depth: int | None = None,
          progress: Callable[[Progress], None] | None = None) -> LivenessResult:
    """Check the liveness properties ``names`` (default: every applicable one) of ``cfg``.

    The graph is built without symmetry reduction: fairness is per action instance (Fetch(2, 0) is
    not Fetch(3, 0)), and a state's representative under a permutation of brokers would take the
    permuted instances, so the reduced graph would mix up whose fairness a loop satisfies.
    """
    props = applicable_liveness(cfg, names)
    model = build_model(cfg, protocol=protocol, symmetry=False, properties=[])
    return check_liveness(model, props, max_states=max_states, max_depth=max_depth,
                          fairness=model.fairness_assumptions(), progress=progress)


__all__ = ["LIVENESS_DESCRIPTIONS", "LIVENESS_NAMES", "applicable_liveness", "applies", "check", "liveness_property"]
