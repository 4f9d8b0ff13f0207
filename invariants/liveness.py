"""The liveness properties, each named as in specs/06-properties.md ("Liveness"), and their check.

Each is a leads-to, ``P ~> Q``, over instances (a partition, a broker's copy of a partition, a
record), checked under weak fairness of the healing actions (specs/actions.toml, ``fairness``) by
:mod:`isrcheck.engine.liveness`. ``masks(state)`` returns the premise and goal bitmasks, bit ``i``
for ``instances[i]``. A goal includes the ways an obligation legitimately ends (the partition is
deleted, the broker stops, the producer is told its write failed), so that only waiting forever
counts against the protocol.

Like every property, each is defined with its family in invariants/properties/ (the instances and
masks for a configuration, and when it applies: :class:`.properties.kinds.Liveness`), and named,
described and ordered by specs/properties.toml. The masks are computed for every state of the
graph, so they sit with the compiled property code rather than here; this module builds the
engine's :class:`~isrcheck.engine.liveness.LeadsTo` from the definitions and runs the check.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from isrcheck.model.config import Config, ConfigError
from isrcheck.engine.core import Progress
from isrcheck.engine.liveness import Graph, LeadsTo, LivenessResult, check_liveness
from isrcheck.model.protocol import Protocol
from isrcheck.specs.properties import property_info

from .properties import LIVENESS, build_model
from .properties.kinds import Liveness

LIVENESS_NAMES: tuple[str, ...] = tuple(LIVENESS)
LIVENESS_DESCRIPTIONS: dict[str, str] = {name: property_info(name).description for name in LIVENESS}


def _definition(name: str) -> Liveness:
    try:
        return LIVENESS[name]
    except KeyError:
        raise ConfigError(f"unknown liveness property {name!r} (known: {', '.join(LIVENESS_NAMES)})") from None


def applies(name: str, cfg: Config) -> bool:
    """Whether liveness property ``name`` means something for ``cfg``."""
    return _definition(name).applies(cfg)


def liveness_property(name: str, cfg: Config) -> LeadsTo:
    d = _definition(name)
    info = property_info(name)
    instances, masks = d.masks(cfg)
    return LeadsTo(name, instances, masks, info.spec, info.description)


def applicable_liveness(cfg: Config, names: Sequence[str] | None = None) -> list[LeadsTo]:
    """The liveness properties that mean something for ``cfg`` (or those ``names``, which must)."""
    if names is None:
        return [liveness_property(n, cfg) for n, d in LIVENESS.items() if d.applies(cfg)]
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
          progress: Callable[[Progress], None] | None = None, graph: Graph | None = None) -> LivenessResult:
    """Check the liveness properties ``names`` (default: every applicable one) of ``cfg``.

    The graph is built without symmetry reduction: fairness is per action instance (Fetch(2, 0) is
    not Fetch(3, 0)), and a state's representative under a permutation of brokers would take the
    permuted instances, so the reduced graph would mix up whose fairness a loop satisfies.
    """
    props = applicable_liveness(cfg, names)
    model = build_model(cfg, protocol=protocol, symmetry=False, properties=[])
    return check_liveness(model, props, max_states=max_states, max_depth=max_depth,
                          fairness=model.fairness_assumptions(), progress=progress, graph=graph)


__all__ = ["LIVENESS_DESCRIPTIONS", "LIVENESS_NAMES", "applicable_liveness", "applies", "check", "liveness_property"]
