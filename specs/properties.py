"""The properties' names, kinds and descriptions (specs/properties.toml), and the names as constants.

The file is the one list of the properties: each name, its kind, the family (the module of
invariants/properties/ that defines its code), its section in 06-properties.md and its one-sentence
description. The invariants read it to assemble their properties (and refuse to load when their
definitions and the file disagree); the command line reads the descriptions; the model and the
reference implementation, which may not import the invariants, take the names they refer to from
here.

Code that refers to one property writes ``NAMES.NoCommittedWriteLost`` rather than the string: the
attribute is the name, checked against the file when it is read, so a misspelt or removed name fails
where it is used instead of matching nothing.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import listed_once, load

__all__ = ["CHAPTER", "KINDS", "NAMES", "PropertiesError", "PropertyInfo", "descriptions", "load_properties",
           "property_info"]

FILE = "properties.toml"
#: the chapter whose sections the anchors name
CHAPTER = "06-properties.md"
KINDS = ("always", "transition", "sometimes", "liveness")
_KEYS = ("name", "kind", "family", "anchor", "description")


class PropertiesError(ValueError):
    """specs/properties.toml is malformed, or a name is not in it; the message is one line."""


@dataclass(frozen=True)
class PropertyInfo:
    name: str
    kind: str  # one of KINDS
    family: str  # the module of invariants/properties/ that defines it
    anchor: str
    description: str

    @property
    def spec(self) -> str:
        """The link to its section: ``06-properties.md#leaderinisr``."""
        return f"{CHAPTER}#{self.anchor}"


def _parse(raw: Any, index: int) -> PropertyInfo:
    where = f"{FILE}: property #{index + 1}"
    if not isinstance(raw, dict) or set(raw) != set(_KEYS):
        raise PropertiesError(f"{where}: must be a table with exactly {', '.join(_KEYS)}")
    if not all(isinstance(raw[k], str) and raw[k] for k in _KEYS):
        raise PropertiesError(f"{where}: {', '.join(_KEYS)} must be non-empty strings")
    name = raw["name"]
    where = f"{FILE}: property {name}"
    if not re.fullmatch(r"[A-Z][A-Za-z]+", name):
        raise PropertiesError(f"{where}: a name is one CamelCase word")
    if raw["kind"] not in KINDS:
        raise PropertiesError(f"{where}: kind {raw['kind']!r} is not one of {', '.join(KINDS)}")
    if not re.fullmatch(r"[a-z_]+", raw["family"]):
        raise PropertiesError(f"{where}: family {raw['family']!r} is not a module's name")
    if not re.fullmatch(r"[a-z0-9-]+", raw["anchor"]):
        raise PropertiesError(f"{where}: anchor {raw['anchor']!r} is not a heading's anchor")
    description = raw["description"]
    if "\n" in description or not description.endswith("."):
        raise PropertiesError(f"{where}: the description is one line ending with a full stop")
    return PropertyInfo(name, raw["kind"], raw["family"], raw["anchor"], description)


@lru_cache(maxsize=1)
def load_properties() -> tuple[PropertyInfo, ...]:
    """Every property of specs/properties.toml, validated, in the file's order."""
    out = tuple(_parse(raw, i) for i, raw in enumerate(load(FILE).get("property", [])))
    return listed_once(out, lambda p: f"property {p.name}", PropertiesError, FILE)


@lru_cache(maxsize=1)
def _by_name() -> dict[str, PropertyInfo]:
    return {p.name: p for p in load_properties()}


def property_info(name: str) -> PropertyInfo:
    """The entry of property ``name`` (PropertiesError when the file has none)."""
    try:
        return _by_name()[name]
    except KeyError:
        raise PropertiesError(f"{FILE} lists no property {name!r}") from None


def descriptions() -> dict[str, str]:
    """Name -> description, for every property (safety and liveness)."""
    return {p.name: p.description for p in load_properties()}


class _Names:
    """``NAMES.LeaderInIsr`` is ``"LeaderInIsr"``, once the file is found to list it (else
    AttributeError). Iterating gives every name in the file's order."""

    def __getattr__(self, name: str) -> str:
        if name.startswith("__"):  # copy, pickle and friends probe for dunders: not names
            raise AttributeError(name)
        try:
            return property_info(name).name
        except PropertiesError as e:
            raise AttributeError(str(e)) from None

    def __iter__(self) -> Iterator[str]:
        return iter([p.name for p in load_properties()])

    def __dir__(self) -> list[str]:
        return list(self)

    def __repr__(self) -> str:
        return f"NAMES({', '.join(self)})"


NAMES = _Names()
