"""The model manifest (specs/models.toml): named configurations and what checking them must find.

Every entry is validated when the manifest is loaded, so a typo fails with one line naming the
model and the key, before anything runs. :func:`compare` turns a check's result into the list of
ways it differs from the entry's expectation (empty when it matches); the gate is built on it.
"""
from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isrcheck import specs
from isrcheck.invariants import property_names
from isrcheck.model.config import Config, ConfigError, apply_overrides, from_mapping, parse_override

MANIFEST = "models.toml"
GATES = ("default", "all")
EXPECTS = ("success", "safety_failure")

_REQUIRED = ("name", "description", "gate", "expect", "config")
_KNOWN = frozenset(_REQUIRED) | {"property", "length", "states", "symmetry", "properties"}


class ManifestError(ValueError):
    """The manifest (or a lookup in it) is wrong; the message is one line."""


class UnknownModel(ManifestError):
    pass


@dataclass(frozen=True)
class ModelEntry:
    name: str
    description: str
    gate: str  # "default" | "all"
    expect: str  # "success" | "safety_failure"
    property: str | None  # safety_failure: the property the shortest counterexample breaks
    length: int | None  # safety_failure: its length in actions
    states: int | None  # success: pinned distinct states (None while not pinned)
    symmetry: bool | None  # None: wherever sound
    config: Config
    properties: tuple[str, ...] | None = None  # check only these safety properties (None: all)
    raw_config: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def config_with(self, overrides: Sequence[str]) -> Config:
        """This entry's configuration with ``KEY=VALUE`` overrides applied."""
        if not overrides:
            return self.config
        return from_mapping(apply_overrides(dict(self.raw_config), list(overrides)))

    def expectation(self) -> str:
        """Short text: ``success``, ``success, 245 states``, ``NoCommittedWriteLost in 8``."""
        if self.expect == "safety_failure":
            return f"{self.property} in {self.length}"
        return "success" if self.states is None else f"success, {self.states:,} states"


def _fail(source: str, where: str, message: str) -> ManifestError:
    return ManifestError(f"{source}: {where}: {message}")


def _int_field(source: str, where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(source, where, f"{key} must be a positive integer, got {value!r}")
    return value


def parse_entry(raw: Any, index: int, source: str = MANIFEST) -> ModelEntry:
    """Validate one ``[[model]]`` table."""
    where = f"model #{index + 1}"
    if not isinstance(raw, dict):
        raise _fail(source, where, "must be a table")
    name = raw.get("name")
    if isinstance(name, str) and name:
        where = f"model {name!r}"
    extra = sorted(set(raw) - _KNOWN)
    if extra:
        raise _fail(source, where, f"unknown key {extra[0]!r} (known: {', '.join(sorted(_KNOWN))})")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise _fail(source, where, f"missing {', '.join(missing)}")
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise _fail(source, where, f"name must be a non-empty word, got {name!r}")
    description = raw["description"]
    if not isinstance(description, str):
        raise _fail(source, where, "description must be a string")
    gate = raw["gate"]
    if gate not in GATES:
        raise _fail(source, where, f"gate must be one of {', '.join(map(repr, GATES))}, got {gate!r}")
    expect = raw["expect"]
    if expect not in EXPECTS:
        raise _fail(source, where, f"expect must be one of {', '.join(map(repr, EXPECTS))}, got {expect!r}")

    prop = raw.get("property")
    length = raw.get("length")
    states = raw.get("states")
    if expect == "safety_failure":
        if prop is None or length is None:
            raise _fail(source, where, "expect = \"safety_failure\" needs both property and length")
        if states is not None:
            raise _fail(source, where, "states is pinned only for expect = \"success\"")
        known = property_names()
        if prop not in known:
            hint = difflib.get_close_matches(str(prop), known, n=1)
            more = f" (did you mean {hint[0]!r}?)" if hint else f" (known: {', '.join(known)})"
            raise _fail(source, where, f"unknown property {prop!r}{more}")
        length = _int_field(source, where, "length", length)
    else:
        if prop is not None or length is not None:
            raise _fail(source, where, "property and length apply only to expect = \"safety_failure\"")
        if states is not None:
            states = _int_field(source, where, "states", states)

    symmetry = raw.get("symmetry")
    if symmetry is not None and not isinstance(symmetry, bool):
        raise _fail(source, where, f"symmetry must be true or false, got {symmetry!r}")
    only = raw.get("properties")
    if only is not None:
        if not isinstance(only, list) or not only or not all(isinstance(x, str) for x in only):
            raise _fail(source, where, "properties must be a non-empty list of property names")
        for x in only:
            if x not in property_names():
                raise _fail(source, where, f"unknown property {x!r} in properties")
        only = tuple(only)
    raw_config = raw["config"]
    if not isinstance(raw_config, dict):
        raise _fail(source, where, "config must be a table ([model.config])")
    try:
        config = from_mapping(raw_config)
    except ConfigError as e:
        raise _fail(source, where, f"config: {e}") from None
    return ModelEntry(name, description, gate, expect, prop, length, states, symmetry, config, only, raw_config)


def parse_manifest(doc: Mapping[str, Any], source: str = MANIFEST) -> list[ModelEntry]:
    """Validate a parsed manifest document."""
    extra = sorted(set(doc) - {"model"})
    if extra:
        raise ManifestError(f"{source}: unknown top-level key {extra[0]!r} (expected [[model]] tables)")
    models = doc.get("model", [])
    if not isinstance(models, list):
        raise ManifestError(f"{source}: model must be an array of tables ([[model]])")
    entries: list[ModelEntry] = []
    seen: set[str] = set()
    for i, raw in enumerate(models):
        entry = parse_entry(raw, i, source)
        if entry.name in seen:
            raise ManifestError(f"{source}: model {entry.name!r} is defined twice")
        seen.add(entry.name)
        entries.append(entry)
    return entries


def load() -> list[ModelEntry]:
    """The packaged manifest, validated."""
    try:
        doc = specs.load(MANIFEST)
    except FileNotFoundError:
        raise ManifestError(f"{MANIFEST}: not found in the isrcheck.specs package") from None
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{MANIFEST}: not valid TOML: {e}") from None
    return parse_manifest(doc)


def get(name: str, entries: Sequence[ModelEntry] | None = None) -> ModelEntry:
    """The entry called ``name``; :class:`UnknownModel` (with a suggestion) otherwise."""
    entries = load() if entries is None else entries
    for e in entries:
        if e.name == name:
            return e
    names = [e.name for e in entries]
    hint = difflib.get_close_matches(name, names, n=1)
    more = f"; did you mean {hint[0]!r}?" if hint else f" (known: {', '.join(names)})"
    raise UnknownModel(f"unknown model {name!r}{more}")


def select(entries: Sequence[ModelEntry], names: Sequence[str] = (), everything: bool = False) -> list[ModelEntry]:
    """The gate's models: the named ones, else all (``everything``) or the default set."""
    if names:
        return [get(n, entries) for n in names]
    return [e for e in entries if everything or e.gate == "default"]


# ---------------------------------------------------------------------------- configs
def read_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file; any problem is a one-line :class:`ConfigError`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None


@dataclass(frozen=True)
class Target:
    """What a command checks: a label, the configuration and the symmetry choice."""

    label: str
    config: Config
    symmetry: bool | None
    entry: ModelEntry | None = None
    properties: tuple[str, ...] | None = None


def resolve(name: str | None, config_file: str | None, overrides: Sequence[str] = ()) -> Target:
    """A manifest model ``name`` or a configuration file, with ``KEY=VALUE`` overrides."""
    for text in overrides:
        parse_override(text)  # a malformed --set is an error whatever it applies to
    if name and config_file:
        raise ConfigError("give either a model NAME or --config FILE, not both")
    if name:
        entry = get(name)
        try:
            cfg = entry.config_with(overrides)
        except ConfigError as e:
            raise ConfigError(f"model {name!r}: {e}") from None
        return Target(name, cfg, entry.symmetry, entry, entry.properties)
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


def compare(entry: ModelEntry, result: Any) -> list[str]:
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
