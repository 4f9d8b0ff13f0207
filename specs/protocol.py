"""The protocol's shared names, from ``specs/protocol.toml``: generations and their traits, the
reassignment steps, and the errors both sides raise.

The model (``model/``) and the reference implementation (``impl/``) read these here, so that neither
keeps its own list:

- :class:`Generation`: the protocol generations, a ``str``-valued enum whose members come from the
  data, oldest first (``Generation("kip-320")``; ``str(g)`` and ``g.value`` are the text form).
  ``g.traits`` (:class:`Traits`) are what the decisions read; no code outside this module should
  compare a generation's name.
- :data:`GENERATION_KEY` and :data:`GENERATION_ALIASES`: the configuration key choosing the
  generation and its accepted former names; :func:`generation_setting` applies the alias rule.
- :data:`REASSIGNMENT_STEPS`: the step names of a partition reassignment, in order (step ``n`` is
  ``REASSIGNMENT_STEPS[n - 1]``); :func:`step_number`.
- :data:`ERRORS`: the exception class names the model and the implementation share.

Like the rest of ``specs/`` this module imports nothing from the project but the package's loader.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from . import load

DATA_FILE = "protocol.toml"


class EpochAnswer(StrEnum):
    """The form of the leader's answer to OffsetsForLeaderEpoch."""

    NONE = "none"  # no such request (no leader-epoch cache)
    END_OFFSET = "end-offset"  # where the asked epoch ends; the follower cuts there once (KIP-101)
    EPOCH_AND_END_OFFSET = "epoch-and-end-offset"  # an epoch and its end; the follower may walk back (KIP-279)


@dataclass(frozen=True)
class Traits:
    """What a generation decides; specs/protocol.toml describes each trait."""

    leader_epochs: bool
    epoch_answer: EpochAnswer
    fenced_by_leader_epoch: bool
    reconcile_on_epoch_change: bool
    isr_join_needs_epoch_start: bool
    isr_removal_tells_replicas: bool


TRAIT_NAMES: tuple[str, ...] = tuple(Traits.__dataclass_fields__)


@dataclass(frozen=True)
class GenerationInfo:
    name: str
    kafka: str  # the Kafka releases that had it
    description: str  # one line
    traits: Traits


@dataclass(frozen=True)
class ReassignmentStep:
    number: int  # 1-based
    name: str
    does: str  # one line: what the step does in the seed's design


@dataclass(frozen=True)
class SharedError:
    name: str  # the class name on both sides
    meaning: str
    model: str  # the module of the model that defines it (import name)
    impl: str  # the module of the implementation that defines it


class DataError(ValueError):
    """specs/protocol.toml is malformed (a bug in the shipped data, reported at import)."""


def _str(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise DataError(f"{DATA_FILE}: {where} must be a non-empty string, got {value!r}")
    return value


def _bool(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise DataError(f"{DATA_FILE}: {where} must be true or false, got {value!r}")
    return value


def _traits(where: str, raw: Mapping[str, Any]) -> Traits:
    missing = [t for t in TRAIT_NAMES if t not in raw]
    if missing:
        raise DataError(f"{DATA_FILE}: {where} lacks the trait {missing[0]}")
    try:
        answer = EpochAnswer(raw["epoch_answer"])
    except ValueError:
        raise DataError(f"{DATA_FILE}: {where}.epoch_answer must be one of {', '.join(a.value for a in EpochAnswer)}, "
                        f"got {raw['epoch_answer']!r}") from None
    flags = {k: _bool(f"{where}.{k}", raw[k]) for k in TRAIT_NAMES if k != "epoch_answer"}
    t = Traits(epoch_answer=answer, **flags)
    if (answer is EpochAnswer.NONE) == t.leader_epochs:
        raise DataError(f"{DATA_FILE}: {where}: epoch_answer is \"none\" exactly when leader_epochs is false")
    if not t.leader_epochs and (t.fenced_by_leader_epoch or t.reconcile_on_epoch_change or t.isr_join_needs_epoch_start):
        raise DataError(f"{DATA_FILE}: {where}: fencing, reconciliation and the ISR join rule by leader epoch "
                        "need leader_epochs")
    return t


def _generations(doc: Mapping[str, Any]) -> tuple[GenerationInfo, ...]:
    out: list[GenerationInfo] = []
    for i, g in enumerate(doc.get("generation", [])):
        where = f"generation[{i}]"
        out.append(GenerationInfo(_str(f"{where}.name", g.get("name")), _str(f"{where}.kafka", g.get("kafka")),
                                  _str(f"{where}.description", g.get("description")), _traits(where, g)))
    names = [g.name for g in out]
    if not names or len(set(names)) != len(names):
        raise DataError(f"{DATA_FILE}: the generations must be listed, each once: {names}")
    return tuple(out)


def _steps(doc: Mapping[str, Any]) -> tuple[ReassignmentStep, ...]:
    out = tuple(ReassignmentStep(n, _str(f"reassignment_step[{n - 1}].name", s.get("name")),
                                 _str(f"reassignment_step[{n - 1}].does", s.get("does")))
                for n, s in enumerate(doc.get("reassignment_step", []), start=1))
    names = [s.name for s in out]
    if not names or len(set(names)) != len(names):
        raise DataError(f"{DATA_FILE}: the reassignment steps must be listed, each once: {names}")
    return out


def _errors(doc: Mapping[str, Any]) -> tuple[SharedError, ...]:
    return tuple(SharedError(*(_str(f"error[{i}].{k}", e.get(k)) for k in ("name", "meaning", "model", "impl")))
                 for i, e in enumerate(doc.get("error", [])))


_DOC = load(DATA_FILE)
GENERATION_INFO: tuple[GenerationInfo, ...] = _generations(_DOC)
_INFO_BY_NAME: dict[str, GenerationInfo] = {g.name: g for g in GENERATION_INFO}


class _GenerationBase(StrEnum):
    """A protocol generation (its value is the name in specs/protocol.toml)."""

    @property
    def traits(self) -> Traits:
        return _INFO_BY_NAME[self.value].traits

    @property
    def kafka(self) -> str:
        return _INFO_BY_NAME[self.value].kafka

    @property
    def description(self) -> str:
        return _INFO_BY_NAME[self.value].description


def _member_name(name: str) -> str:
    return name.upper().replace("-", "_").replace(".", "_")


# The members come from the data: Generation.HIGH_WATERMARK, Generation.KIP_101, ... A type checker
# sees the member-less base class, which has the same methods.
if TYPE_CHECKING:
    Generation = _GenerationBase
else:
    Generation = _GenerationBase("Generation", [(_member_name(g.name), g.name) for g in GENERATION_INFO],
                                 module=__name__, qualname="Generation")

#: every generation, oldest first
GENERATIONS: tuple[Generation, ...] = tuple(Generation)
GENERATION_NAMES: tuple[str, ...] = tuple(g.value for g in GENERATIONS)
#: the generation of a configuration that names none: the first one (the seeds')
DEFAULT_GENERATION: Generation = GENERATIONS[0]

_CONFIG: Mapping[str, Any] = _DOC.get("config", {})
#: the configuration key that chooses the generation, and the former names it is also accepted under
GENERATION_KEY: str = _str("config.key", _CONFIG.get("key"))
GENERATION_ALIASES: tuple[str, ...] = tuple(_str("config.aliases", a) for a in _CONFIG.get("aliases", []))


def generation_setting(raw: Mapping[str, Any]) -> tuple[str, Any] | None:
    """The key of ``raw`` that sets the generation and its (unchecked) value; None when no key does.

    The key is :data:`GENERATION_KEY` or one of :data:`GENERATION_ALIASES`; giving more than one of
    them is a :class:`ValueError` with a one-line message (each side wraps it in its ConfigError).
    """
    given = [k for k in (GENERATION_KEY, *GENERATION_ALIASES) if k in raw]
    if len(given) > 1:
        raise ValueError(f"give {given[0]} or its alias {given[1]}, not both")
    return (given[0], raw[given[0]]) if given else None


def parse_generation(value: Any, key: str = GENERATION_KEY) -> Generation:
    """``value`` as a :class:`Generation`; a :class:`ValueError` with a one-line message otherwise."""
    if isinstance(value, str) and value in _INFO_BY_NAME:
        return Generation(value)
    raise ValueError(f"{key} must be one of {', '.join(repr(n) for n in GENERATION_NAMES)}, got {value!r}")


#: every reassignment step, in order (``STEP_INFO[n - 1].number == n``)
STEP_INFO: tuple[ReassignmentStep, ...] = _steps(_DOC)
#: the step names, in order: step n is ``REASSIGNMENT_STEPS[n - 1]``
REASSIGNMENT_STEPS: tuple[str, ...] = tuple(s.name for s in STEP_INFO)
_STEP_NUMBER: dict[str, int] = {s.name: s.number for s in STEP_INFO}


def step_number(name: str) -> int:
    """The number (1-based) of the reassignment step called ``name``; KeyError for an unknown name."""
    try:
        return _STEP_NUMBER[name]
    except KeyError:
        raise KeyError(f"no reassignment step is called {name!r} (steps: {', '.join(REASSIGNMENT_STEPS)})") from None


#: the exceptions both sides raise under the same name
ERRORS: tuple[SharedError, ...] = _errors(_DOC)
ERROR_NAMES: tuple[str, ...] = tuple(e.name for e in ERRORS)

__all__ = ["DEFAULT_GENERATION", "ERRORS", "ERROR_NAMES", "EpochAnswer", "GENERATIONS", "GENERATION_ALIASES",
           "GENERATION_INFO", "GENERATION_KEY", "GENERATION_NAMES", "Generation", "GenerationInfo",
           "REASSIGNMENT_STEPS", "ReassignmentStep", "STEP_INFO", "SharedError", "TRAIT_NAMES", "Traits",
           "DataError", "generation_setting", "parse_generation", "step_number"]
