"""The properties, each defined once, in the module of its family.

``always`` properties are checked on every reachable state, ``transition`` ones on every step,
``sometimes`` ones must be witnessed by at least one reachable state (so a model that cannot do
anything does not pass), ``liveness`` ones are leads-to properties that :mod:`..liveness` checks on
request. ``OnlyValidTransitions`` is checked inside the steps themselves: the state-machine tables
raise, and the checker reports the step that tried the illegal move.

specs/properties.toml lists every property (name, kind, family, section of 06-properties.md,
description). Each family module (leadership, isr, durability, reassignment, steps, witnesses)
defines its properties' code as :mod:`.kinds` describes: the check, the offending values that
explain a violation, when a state exercises it, its form over an observation. This module puts the
two together, in the file's order, and refuses to load when they disagree (a property the file
lists and no module defines, or one defined with another kind or in another family). It gives
every view of them that the rest of the project uses:

- the checker's: ``ALL_PROPERTIES``, ``applicable_properties``, ``build_model``;
- the messages': ``detail`` and ``describe`` (what broke a violation, in one line);
- the pipeline's: ``exercised`` (which properties a step gives something to check);
- conformance's: ``OBSERVATION_PROPERTIES`` (the properties over an observation).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, cast

from isrcheck.engine.checker import Property
from isrcheck.engine.core import Kind, Violation
from isrcheck.model.config import Config, ConfigError
from isrcheck.model.kafka import KafkaModel
from isrcheck.model.history import configured_protocol
from isrcheck.model.protocol import Protocol
from isrcheck.specs.properties import load_properties, property_info

# absolute imports: mypyc compiles this __init__ (a relative import in a compiled package __init__
# has resolved against the parent package in some mypyc versions)
from isrcheck.invariants.properties import durability, isr, leadership, reassignment, steps, witnesses
from isrcheck.invariants.properties.kinds import (KIND_OF, Acked, Always, Definition, Liveness, Obs,
                                                  PropertyDefinitionError, Sometimes, Transition)

__all__ = ["ALL_PROPERTIES", "DEFINITIONS", "FAMILIES", "LIVENESS", "OBSERVATION_PROPERTIES", "STATE_PREDICATES",
           "STEP_PREDICATES", "applicable_properties", "broken_on_observation", "build_model", "describe", "detail",
           "exercised", "holds_on_observation", "property_names"]

#: the modules that define the properties, by the family names of specs/properties.toml
FAMILIES: tuple[ModuleType, ...] = (leadership, isr, durability, reassignment, steps, witnesses)


def _definitions(families: Sequence[ModuleType]) -> dict[str, Definition]:
    """Every definition of the family modules, by name in the order of specs/properties.toml,
    checked against the file."""
    found: dict[str, Definition] = {}
    for module in families:
        family = module.__name__.rpartition(".")[2]
        for d in module.DEFINITIONS:
            info = property_info(d.name)
            where = f"{module.__name__} defines {d.name}"
            if d.name in found:
                raise PropertyDefinitionError(f"{where} a second time")
            if KIND_OF[type(d)] != info.kind:
                raise PropertyDefinitionError(f"{where} as {KIND_OF[type(d)]}; specs/properties.toml says {info.kind}")
            if family != info.family:
                raise PropertyDefinitionError(f"{where}; specs/properties.toml puts it in family {info.family}")
            found[d.name] = d
    missing = [p.name for p in load_properties() if p.name not in found]
    if missing:
        raise PropertyDefinitionError(f"specs/properties.toml lists {', '.join(missing)}, which no module of "
                                      f"invariants/properties/ defines")
    return {p.name: found[p.name] for p in load_properties()}


#: name -> definition, every property, in the order of specs/properties.toml
DEFINITIONS: dict[str, Definition] = _definitions(FAMILIES)
_ALWAYS: dict[str, Always] = {n: d for n, d in DEFINITIONS.items() if isinstance(d, Always)}
_TRANSITION: dict[str, Transition] = {n: d for n, d in DEFINITIONS.items() if isinstance(d, Transition)}
_SOMETIMES: dict[str, Sometimes] = {n: d for n, d in DEFINITIONS.items() if isinstance(d, Sometimes)}
#: name -> definition of the liveness properties (checked by :mod:`isrcheck.invariants.liveness`)
LIVENESS: dict[str, Liveness] = {n: d for n, d in DEFINITIONS.items() if isinstance(d, Liveness)}


# ---------------------------------------------------------------------------- the checker's view
def _as_property(d: Always | Transition | Sometimes, check: Callable[..., bool]) -> Property:
    info = property_info(d.name)
    return Property(d.name, cast(Kind, info.kind), check, info.spec, info.description)


def _default_check(d: Always | Transition | Sometimes) -> Callable[..., bool]:
    return d.witness(Config()) if isinstance(d, Sometimes) else d.check


#: the safety properties (always, transition, sometimes), in the order of specs/properties.toml
ALL_PROPERTIES: tuple[Property, ...] = tuple(
    _as_property(d, _default_check(d)) for d in DEFINITIONS.values() if not isinstance(d, Liveness))


def property_names() -> list[str]:
    return [p.name for p in ALL_PROPERTIES]


def _applies(name: str, cfg: Config) -> bool:
    d = DEFINITIONS.get(name)
    return not isinstance(d, Always) or d.applies is None or d.applies(cfg)


def applicable_properties(cfg: Config) -> list[Property]:
    """All safety properties that apply to the configuration (an ``always`` property may say where
    it means something); the ``sometimes`` ones only where the configuration makes them possible."""
    out = [p for p in ALL_PROPERTIES if p.kind != "sometimes" and _applies(p.name, cfg)]
    for d in _SOMETIMES.values():
        if d.applies(cfg):
            out.append(_as_property(d, d.witness(cfg)))
    return out


def build_model(cfg: Config, protocol: Protocol | None = None, symmetry: bool | None = None,
                properties: Sequence[str] | None = None) -> KafkaModel:
    """The checkable model for ``cfg``: protocol, applicable properties, symmetry where sound.

    ``properties`` restricts the safety properties checked to those names (the ``sometimes``
    properties always stay, so a restricted check cannot pass vacuously).
    """
    from isrcheck.model.symmetry import symmetry_allowed

    protocol = configured_protocol(cfg, protocol)  # isr_change and the bugs of cfg.reintroduce (model/history.py)
    if symmetry is None:
        symmetry = symmetry_allowed(cfg)
    props = applicable_properties(cfg) + protocol.extra_properties()
    if properties is not None:  # a variant's properties are named and chosen like the model's own
        known = property_names() + [p.name for p in props if p.name not in property_names()]
        unknown = sorted(set(properties) - set(known))
        if unknown:
            raise ConfigError(f"unknown property {unknown[0]!r} (known: {', '.join(known)})")
        props = [p for p in props if p.kind == "sometimes" or p.name in properties]
    return KafkaModel(protocol, props, symmetry=symmetry)


# ---------------------------------------------------------------------------- what broke a violation
def detail(v: Violation) -> str:
    """The offending values of a safety violation of one of the project's properties, joined with
    "; " ("" for a property without offences, e.g. a variant's, or a trace of other states).

    It looks again, once, at the last state (and, for a ``transition`` property, the step into it) of
    the violation's trace, so that ``check --json`` and the tables can say "partition 0:
    acknowledged write m1 is missing from the log of broker 3 (an ISR member)" instead of nothing.
    """
    if v.found:  # the property's own explanation (a variant's, engine.core.explained)
        return v.found
    if not v.trace or v.trace[-1].state is None:
        return ""
    last = v.trace[-1].state
    d = DEFINITIONS.get(v.property)
    try:
        if isinstance(d, Always):
            found = list(d.offences(last))
        elif (isinstance(d, Transition) and d.offences is not None and len(v.trace) > 1
              and v.trace[-2].state is not None):
            found = list(d.offences(v.trace[-2].state, last))
        else:
            return ""
    except (AttributeError, IndexError, TypeError):  # not a state of the Kafka model (a peer's, a toy's)
        return ""
    return "; ".join(found)


_DESCRIPTIONS = {p.name: p.description for p in ALL_PROPERTIES}


def describe(v: Violation, description: str | None = None) -> str:
    """A one-line ``message`` for ``v``: its own when it has one (an illegal transition, a lasso),
    else the property's ``description`` (by default the project's, for its name) followed by what
    broke it, where known."""
    if v.message:
        return v.message
    if description is None:
        description = v.description or _DESCRIPTIONS.get(v.property, "")
    what = detail(v)
    if description and what:
        return f"{description} Broken: {what}."
    if what:
        return f"{v.property} broken: {what}."
    if description:
        return f"{description} Broken after {v.length} step(s)."
    return f"{v.property} broken after {v.length} step(s)."


# ---------------------------------------------------------------------------- when a step exercises a property
#: always-property name -> does this state give it something to check
STATE_PREDICATES: dict[str, Callable[[Any], bool]] = {
    n: d.exercised for n, d in _ALWAYS.items() if d.exercised is not None}
#: transition-property name -> does this step give it something to check
STEP_PREDICATES: dict[str, Callable[[Any, Any], bool]] = {
    n: d.exercised for n, d in _TRANSITION.items() if d.exercised is not None}


def exercised(props: Any, before: Any | None, after: Any) -> list[str]:
    """Names of the always- and transition-properties this step exercises (``before`` is None for
    an initial state).

    An ``always`` property holds vacuously in a state where its subject does not exist (no write was
    acknowledged, so ``NoCommittedWriteLost`` has nothing to protect). The corpus records, per step,
    which properties were exercised, so that ``isrcheck spark analyze`` can say which properties a
    corpus really tests and which it never does. A property without a predicate (a variant's)
    counts as exercised at every step.
    """
    out = []
    for p in props.always:
        pred = STATE_PREDICATES.get(p.name)
        if pred is None or pred(after):
            out.append(p.name)
    if before is not None:
        for p in props.transition:
            pred2 = STEP_PREDICATES.get(p.name)
            if pred2 is None or pred2(before, after):
                out.append(p.name)
    return out


# ---------------------------------------------------------------------------- over an observation
#: always-property name -> the property over an observation and the acknowledged writes, for those
#: the observation can express. They read only what both sides report (specs/observation.toml, plus
#: the writes acknowledged to producers), so the same function judges a model state and the
#: implementation's state; tests/conformance/test_conform_obsprops.py checks that each agrees with
#: the model's check on every state of several models.
OBSERVATION_PROPERTIES: dict[str, Callable[[Obs, Acked], bool]] = {
    n: d.observed for n, d in _ALWAYS.items() if d.observed is not None}


def holds_on_observation(name: str, obs: Obs, acked: Acked) -> bool:
    """Whether property ``name`` holds (KeyError for a property with no observation form)."""
    return OBSERVATION_PROPERTIES[name](obs, acked)


def broken_on_observation(obs: Obs, acked: Acked, names: Sequence[str] | None = None) -> list[str]:
    """The properties (of ``names``, default all with an observation form) that ``obs`` breaks."""
    return [n for n in (names or OBSERVATION_PROPERTIES) if not OBSERVATION_PROPERTIES[n](obs, acked)]
