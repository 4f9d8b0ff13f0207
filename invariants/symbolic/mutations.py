"""Documented mutations of the protocol, in both encodings (specs/08-symbolic.md#a-mutated-protocol).

A proof means something only if it can fail: a mutation removes one safety-relevant rule from the
protocol, once as a model ``Protocol`` subclass (the explicit checker's, as a designer's variant
would) and once as the z3 encoding's :class:`~.instance.TruncationRule`, so that ``prove inductive``
can be run on the mutated protocol. :func:`prove_mutated` runs Houdini on the mutated encoding and
hands every counterexample to induction (CTI) to the explicit checker running the mutated model:
REFUTED, with the real run, when it reaches the CTI's pre-state or a state from which an action of
the CTI's name breaks the same property (:func:`~.reach.find_breaking_step`); NOT INDUCTIVE when it
does not.

:data:`MUTATIONS` is the table. ``no-truncation-on-becoming-follower`` is the mutant
``NoTruncationOnBecomingFollower`` of specs/guards.toml (a new follower keeps its log instead of
truncating it to its HW; the explicit checker breaks LogMatching in 10 steps on
``clean-election-isr-shrink``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from isrcheck.model.protocol import Protocol
from isrcheck.model.state import Replica

from .generations import HighWatermarkTruncation, generation
from .houdini import InductionResult, prove_inductive
from .instance import Encoder, TruncationRule, Unsupported
from .reach import DEFAULT_MAX_STATES, classify
from .types import SymReplica, SymRequest, imin
from .verdicts import Progress, no_progress


# ============================================================================ no-truncation-on-becoming-follower
class NoTruncationOnBecomingFollower(Protocol):
    """The model without truncation on becoming follower: the replica keeps its log (and its HW,
    capped at the log's end) whoever leads (specs/guards.toml, the same mutant as
    tests/guards/mutants.py)."""

    name = "no-truncation-on-becoming-follower"

    def become_follower(self, w: Any, b: int, p: int, r: Replica, req: Any) -> Replica:  # type: ignore[override]
        return Replica(r.log, min(r.hw, len(r.log)), r.checkpoint, req.leader, req.leader_epoch, 0, 0, (), 0, 0)


class NoTruncationRule(HighWatermarkTruncation):
    """The encoding's twin of :class:`NoTruncationOnBecomingFollower` (high-watermark generation)."""

    def become_follower(self, enc: Encoder, r: SymReplica, req: SymRequest) -> SymReplica:
        return enc.follower_replica(r.log, imin(r.hw, r.log.length), r.checkpoint, req.leader, req.leader_epoch)

    def matches(self, protocol: Protocol) -> bool:
        return protocol.config.generation == self.name and isinstance(protocol, NoTruncationOnBecomingFollower)


@dataclass(frozen=True)
class Mutation:
    name: str
    description: str
    protocol: Callable[[Any], Protocol]  # the model's mutant, given the configuration
    rule: Callable[[Any], TruncationRule]  # the encoding's mutant, given the configuration


MUTATIONS: dict[str, Mutation] = {m.name: m for m in (
    Mutation("no-truncation-on-becoming-follower",
             "a new follower keeps its log instead of truncating it to its HW (high-watermark generation)",
             NoTruncationOnBecomingFollower, lambda cfg: NoTruncationRule(generation(cfg.generation).generation)),
)}


def mutation(name: str, cfg: Any) -> Mutation:
    m = MUTATIONS.get(name)
    if m is None:
        raise Unsupported(f"unknown mutation {name!r}; known: {', '.join(MUTATIONS)}")
    if cfg.generation.traits.leader_epochs:
        raise Unsupported(f"mutation {name!r} is of the high-watermark generation, not {cfg.generation.value!r}")
    return m


def prove_mutated(cfg: Any, name: str, timeout: float | None = 300.0, progress: Progress = no_progress,
                  max_states: int = DEFAULT_MAX_STATES, **kw: Any) -> tuple[InductionResult, dict[str, Any]]:
    """``prove inductive`` for ``cfg`` with mutation ``name`` in both the encoding and the model; every
    CTI is classified by the explicit checker running the mutated model (:func:`~.reach.classify`)."""
    m = mutation(name, cfg)
    res = prove_inductive(cfg, None, timeout, progress=progress, rule=m.rule(cfg), **kw)
    return res, classify(cfg, res.obligations, max_states, m.protocol(cfg), res.per_kind, progress)


__all__ = ["MUTATIONS", "Mutation", "mutation", "prove_mutated", "NoTruncationOnBecomingFollower",
           "NoTruncationRule"]
