"""specs/models.toml read for the model, and what a command checks.

:mod:`isrcheck.specs.manifest` loads and validates the file as data; :data:`MODEL_READER` gives it
what only the model side knows (a ``[model.config]`` table is read by model/config.py, property
names are those of invariants/), and :func:`load` / :func:`get` are the manifest every command
uses. The rest is the command line's: :func:`resolve` turns a MODEL or ``--config FILE`` into a
:class:`~isrcheck.specs.manifest.Target`, and :func:`compare` phrases how a check's result
differs from an entry's expectation (the gate is built on it).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from isrcheck.invariants import property_names
from isrcheck.invariants.liveness import LIVENESS_NAMES
from isrcheck.model.config import Config, ConfigError, apply_overrides, from_mapping, parse_override
from isrcheck.specs import inputs, manifest as models
from isrcheck.specs.inputs import InputError, Kind
from isrcheck.specs.manifest import ModelEntry, Target


class _ModelReader:
    """The model's reading of an entry: model/config.py's configuration, invariants/' property names."""

    def config(self, raw: Mapping[str, Any], overrides: Sequence[str] = ()) -> Config:
        return from_mapping(apply_overrides(dict(raw), list(overrides)) if overrides else dict(raw))

    def property_names(self) -> list[str]:
        return property_names()

    def liveness_names(self) -> list[str]:
        return list(LIVENESS_NAMES)


MODEL_READER = _ModelReader()


def load() -> list[ModelEntry[Config]]:
    """The packaged manifest, validated, with the model's configurations."""
    return models.load(MODEL_READER)


def get(name: str) -> ModelEntry[Config]:
    """The entry of the packaged manifest called ``name``; ``UnknownModel`` (with a suggestion) otherwise."""
    return models.get(name, load())


# ---------------------------------------------------------------------------- configs
def read_toml(path: str | Path, kind: Kind = Kind.CONFIG) -> dict[str, Any]:
    """Read a TOML file through the bounded reader (specs/inputs.py: a regular file, its size and
    nesting capped); any problem is a one-line :class:`ConfigError`."""
    try:
        return inputs.read_toml(path, kind)
    except InputError as e:
        raise ConfigError(str(e)) from None


def resolve(name: str | None, config_file: str | None, overrides: Sequence[str] = ()) -> Target[Config]:
    """A manifest model ``name`` or a configuration file, with ``KEY=VALUE`` overrides."""
    for text in overrides:
        parse_override(text)  # a malformed --set is an error whatever it applies to
    if name and config_file:
        raise ConfigError("give either a model NAME or --config FILE, not both")
    if name:
        entry = get(name)
        try:
            return entry.target(overrides)
        except ConfigError as e:
            raise ConfigError(f"model {name!r}: {e}") from None
    if config_file:
        raw = read_toml(config_file)
        try:
            cfg = from_mapping(apply_overrides(raw, list(overrides)))
        except ConfigError as e:
            raise ConfigError(f"{config_file}: {e}") from None
        return Target(str(config_file), cfg, None)
    raise ConfigError("give a model NAME (see `isrcheck list`) or --config FILE")


# ---------------------------------------------------------------------------- comparison
def _found_text(result: Any) -> str:
    if result.outcome == "safety_failure" and result.violations:
        v = result.violations[0]
        return f"{v.property} violated in {v.length} steps"
    if result.outcome == "vacuous":
        return f"vacuous (never witnessed: {', '.join(result.unwitnessed)})"
    if result.outcome == "incomplete":
        return f"incomplete (stopped at the {getattr(result, 'limit_hit', None) or 'search'} limit)"
    return result.outcome


def compare(entry: ModelEntry[Any], result: Any) -> list[str]:
    """How ``result`` (a CheckResult) differs from what ``entry`` expects; empty when it matches."""
    found = result.outcome
    if found != entry.expect:
        want = "success" if entry.expect == "success" else f"a {entry.property} violation in {entry.length} steps"
        return [f"outcome: expected {want}, found {_found_text(result)}"]
    out: list[str] = []
    if entry.expect == "safety_failure":
        v = result.violations[0]
        if v.property != entry.property:
            out.append(f"property: expected {entry.property}, found {v.property}")
        if v.length != entry.length:
            out.append(f"length: expected a counterexample of {entry.length} steps, found {v.length}")
    elif entry.states is not None and result.distinct_states != entry.states:
        out.append(
            f"states: pinned {entry.states:,}, found {result.distinct_states:,}; if the change is intended, "
            f"update states for {entry.name!r} in specs/models.toml and give the reason in the commit message"
        )
    return out


def compare_liveness(entry: ModelEntry[Any], result: Any) -> list[str]:
    """How a liveness result (a LivenessResult) differs from the entry's ``[model.liveness]`` pins."""
    found = {v.property: v for v in result.verdicts}
    out: list[str] = []
    for want in entry.liveness:
        v = found.get(want.property)
        if v is None or v.holds is None:
            out.append(f"liveness {want.property}: no verdict (the graph is incomplete)")
            continue
        if want.holds and not v.holds:
            out.append(f"liveness {want.property}: expected to hold, found broken ({v.lasso.instance}) by a lasso of "
                       f"{v.violation.length} steps, loop from {v.violation.loop}")
        elif not want.holds and v.holds:
            out.append(f"liveness {want.property}: expected broken in {want.length} (loop from {want.loop}), found it holds")
        elif not want.holds:
            if v.violation.length != want.length or v.violation.loop != want.loop:
                out.append(f"liveness {want.property}: expected a lasso of {want.length} steps looping from {want.loop}, "
                           f"found {v.violation.length} looping from {v.violation.loop}")
    return out

