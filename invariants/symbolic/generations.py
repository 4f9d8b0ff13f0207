"""The protocol generations the replication encoding covers (specs/08-symbolic.md#generations).

Each generation is a :class:`~.instance.TruncationRule`, the plug-in the encoding consults where
the generations differ. The generations are those of ``specs/protocol.toml``
(:data:`isrcheck.specs.protocol.GENERATIONS`); the rule of each is chosen by its traits, never by
its name: without leader epochs the seeds' rule (truncate to the HW on a leader change, here), with
them :class:`~.epochs.LeaderEpochTruncation` (the leader-epoch cache, OffsetsForLeaderEpoch as the
model's two actions, KIP-320's fencing), which reads the other traits. :data:`GENERATIONS` is the
table, keyed by the configuration's ``generation``; :func:`generation` looks one up.
"""
from __future__ import annotations

from isrcheck.model.protocol import Protocol
from isrcheck.specs.protocol import GENERATIONS as PROTOCOL_GENERATIONS
from isrcheck.specs.protocol import Generation

from .epochs import LeaderEpochTruncation
from .instance import Encoder, TruncationRule, Unsupported
from .types import SymReplica, SymRequest, imin


class HighWatermarkTruncation(TruncationRule):
    """A generation without leader epochs (the seeds, Kafka 0.8 to 0.10): on a change of leader,
    truncate the log to the HW."""

    def __init__(self, generation: Generation) -> None:
        super().__init__(generation)
        assert not self.traits.leader_epochs, f"{generation} keeps leader epochs: LeaderEpochTruncation"

    def become_follower(self, enc: Encoder, r: SymReplica, req: SymRequest) -> SymReplica:
        changed = r.leader != req.leader
        log = enc.log_ite(changed, enc.trunc(r.log, r.hw), r.log)
        return enc.follower_replica(log, imin(r.hw, log.length), r.checkpoint, req.leader, req.leader_epoch)

    def matches(self, protocol: Protocol) -> bool:
        return (protocol.config.generation == self.name
                and type(protocol).become_follower is Protocol.become_follower
                and type(protocol).may_join_isr is Protocol.may_join_isr)


class EpochTruncation(LeaderEpochTruncation):
    """A generation with leader epochs (kip-101 on): the leader-epoch cache and OffsetsForLeaderEpoch
    (epochs.py), as its traits say."""


def rule_for(g: Generation) -> TruncationRule:
    """The plug-in of generation ``g``, by its traits."""
    return EpochTruncation(g) if g.traits.leader_epochs else HighWatermarkTruncation(g)


PLANNED_GENERATIONS: dict[str, str] = {}
"""Generations the model has (config key ``generation``) and this encoding does not yet (none now),
with what is missing."""

GENERATIONS: dict[str, TruncationRule] = {
    g: rule_for(g) for g in PROTOCOL_GENERATIONS if g not in PLANNED_GENERATIONS}
"""The encoded generations (keyed by :class:`~isrcheck.specs.protocol.Generation`, which is a
``str``), oldest first."""


def generation(name: str) -> TruncationRule:
    """The rule of the generation called ``name`` (a :class:`~isrcheck.specs.protocol.Generation` or
    its name); :class:`~.instance.Unsupported` for one the encoding does not cover."""
    name = str(name)  # a Generation's str() is its name
    if name in GENERATIONS:
        return GENERATIONS[name]
    if name in PLANNED_GENERATIONS:
        raise Unsupported(f"generation {name!r} is not encoded symbolically yet (the explicit checker covers it); "
                          f"encoded: {', '.join(GENERATIONS)}")
    raise Unsupported(f"unknown generation {name!r}; known: {', '.join(GENERATIONS)} "
                      f"(planned: {', '.join(PLANNED_GENERATIONS)})")


__all__ = ["GENERATIONS", "PLANNED_GENERATIONS", "HighWatermarkTruncation", "EpochTruncation", "generation",
           "rule_for"]
