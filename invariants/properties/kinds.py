"""The four kinds of property definition: what a family module writes down for each property.

A definition holds everything the project knows how to do with one property, in one place: its
check (the hot path of every search: written for speed, compiled), how to say what broke it (the
offending values, for the message of a violation), when a state gives it something to check
("exercised", for the pipeline's corpus), and, for the ``always`` properties the observation can
express, the same property over an observation (specs/observation.toml) and the acknowledged
writes, which judges a model state and the implementation's state alike (conformance).

Its kind is the class; its description, its section in 06-properties.md and its family come from
specs/properties.toml, and the package refuses to load when the two disagree.

``check`` and ``offences`` are two forms of one predicate: ``check(s)`` is true exactly when
``offences(s)`` yields nothing. The check exits at the first offence and allocates nothing; the
offences are looked for once, on the last state of a counterexample, and are written for clarity.
tests/invariants/test_property_definitions.py checks that the two agree on every reachable state
of several models and on edited copies of them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from isrcheck.model.config import Config
from isrcheck.model.state import State


class PropertyDefinitionError(Exception):
    """The definitions of invariants/properties/ and specs/properties.toml disagree; one line."""


#: an observation (specs/observation.toml), of the model or of the implementation
Obs = Mapping[str, Any]
#: per partition, the ids of the writes acknowledged to producers
Acked = Sequence[Sequence[int]]
#: a liveness property's premise and goal bits in a state, bit ``i`` for instance ``i``
Masks = Callable[[State], tuple[int, int]]


class Always(NamedTuple):
    """A predicate on every reachable state."""

    name: str
    check: Callable[[State], bool]
    #: one line per offending value (partition, broker, record): empty exactly when ``check`` holds
    offences: Callable[[State], Iterator[str]]
    #: whether a state gives it something to check (None: every state does)
    exercised: Callable[[Any], bool] | None = None
    #: the same property over an observation and the acknowledged writes; None when the observation
    #: cannot express it (the definition says why)
    observed: Callable[[Obs, Acked], bool] | None = None
    #: whether the configuration gives it a meaning (None: every configuration); a configuration
    #: it does not apply to does not check it (an epoch-cache property without leader epochs)
    applies: Callable[[Config], bool] | None = None


class Transition(NamedTuple):
    """A predicate on every step, ``check(before, after)``."""

    name: str
    check: Callable[[State, State], bool]
    #: what broke it, as for :class:`Always`; None when the step itself reports it
    offences: Callable[[State, State], Iterator[str]] | None = None
    #: whether a step gives it something to check (None: every step does)
    exercised: Callable[[Any, Any], bool] | None = None


class Sometimes(NamedTuple):
    """A predicate some reachable state must satisfy, where the configuration makes it possible."""

    name: str
    #: whether the configuration makes it possible (it is not checked otherwise)
    applies: Callable[[Config], bool]
    #: the predicate for a configuration
    witness: Callable[[Config], Callable[[State], bool]]


class Liveness(NamedTuple):
    """A liveness property, ``P ~> Q`` per instance, checked by :mod:`isrcheck.engine.liveness`."""

    name: str
    #: whether it means something for the configuration
    applies: Callable[[Config], bool]
    #: the instances (a partition, a replica, a record) and the masks of a state, for a configuration
    masks: Callable[[Config], tuple[tuple[str, ...], Masks]]


Definition = Always | Transition | Sometimes | Liveness

#: the kind in specs/properties.toml of each class
KIND_OF: dict[type, str] = {Always: "always", Transition: "transition", Sometimes: "sometimes", Liveness: "liveness"}


def fixed_witness(witness: Callable[[State], bool]) -> Callable[[Config], Callable[[State], bool]]:
    """The ``witness`` of a ``sometimes`` property whose predicate is the same for every configuration."""

    def for_config(cfg: Config) -> Callable[[State], bool]:
        return witness

    return for_config


def every_config(cfg: Config) -> bool:
    """``applies`` of a property that means something for every configuration."""
    return True
