"""The model manifest (specs/models.toml): named configurations and what checking them must find.

Every entry is validated when the manifest is loaded, so a typo fails with one line naming the
model and the key, before anything runs. Two things in an entry mean something only to the side
that checks it: the ``[model.config]`` table (a configuration, read by that side's configuration
reader) and the property names. specs/ imports nothing from the model, so :func:`load` and
:func:`parse_manifest` take a :class:`Reader` for those two; the model's is
``isrcheck.inputs.manifest.MODEL_READER``, and ``isrcheck.inputs.manifest.load()`` is the manifest
every command uses. An entry's :attr:`ModelEntry.config` is whatever the reader made of its table.
"""
from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from importlib import resources

from .inputs import InputError, Kind, read_toml

__all__ = ["EXPECTS", "GATES", "MANIFEST", "LivenessExpect", "ManifestError", "ModelEntry", "Reader", "Target",
           "UnknownModel",
           "get", "load", "parse_entry", "parse_manifest", "select"]

MANIFEST = "models.toml"
GATES = ("default", "all")
EXPECTS = ("success", "safety_failure")

_REQUIRED = ("name", "description", "gate", "expect", "config")
_KNOWN = frozenset(_REQUIRED) | {"property", "length", "states", "symmetry", "properties", "liveness", "variant"}
_LIVENESS_KEYS = frozenset({"length", "loop", "expected"})

C = TypeVar("C")
C_co = TypeVar("C_co", covariant=True)


class ManifestError(ValueError):
    """The manifest (or a lookup in it) is wrong; the message is one line."""


class UnknownModel(ManifestError):
    pass


class Reader(Protocol[C_co]):
    """What one side makes of an entry: its configuration, and the property names it knows."""

    def config(self, raw: Mapping[str, Any], overrides: Sequence[str] = ()) -> C_co:
        """The configuration of table ``raw`` with ``KEY=VALUE`` overrides; a ValueError (one line) if invalid."""
        ...

    def property_names(self) -> Sequence[str]:
        ...

    def liveness_names(self) -> Sequence[str]:
        """The liveness properties a ``[model.liveness]`` table may name."""
        ...


@dataclass(frozen=True)
class LivenessExpect:
    """What a liveness check of an entry must find for one property: ``"holds"``, or a lasso of
    ``length`` actions whose loop starts at step ``loop`` (``loop == length``: it stutters at the
    last state). ``expected`` says why a failure is what the model should show (it follows from an
    assumption the configuration makes, such as a broker that never returns), as opposed to a
    weakness of the protocol."""

    property: str
    holds: bool
    length: int | None = None
    loop: int | None = None
    expected: str | None = None

    def text(self) -> str:
        if self.holds:
            return f"{self.property} holds"
        shape = "stutters" if self.loop == self.length else f"loop from {self.loop}"
        return f"{self.property} broken in {self.length} ({shape}){' [expected]' if self.expected else ''}"


@dataclass(frozen=True)
class ModelEntry(Generic[C]):
    name: str
    description: str
    gate: str  # "default" | "all"
    expect: str  # "success" | "safety_failure"
    property: str | None  # safety_failure: the property the shortest counterexample breaks
    length: int | None  # safety_failure: its length in actions
    states: int | None  # success: pinned distinct states (None while not pinned)
    symmetry: bool | None  # None: wherever sound
    config: C
    properties: tuple[str, ...] | None = None  # check only these safety properties (None: all)
    liveness: tuple[LivenessExpect, ...] = ()  # the liveness verdicts pinned ([model.liveness])
    #: a designer's variant the entry is checked with, ``path.py:Attr`` (a path relative to the
    #: project's checkout: :func:`variant_path`), or None for the model's own protocol
    variant: str | None = None
    raw_config: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    reader: Reader[C] | None = field(default=None, compare=False, hash=False, repr=False)

    def config_with(self, overrides: Sequence[str]) -> C:
        """This entry's configuration with ``KEY=VALUE`` overrides applied (by the reader that loaded it)."""
        if not overrides:
            return self.config
        if self.reader is None:
            raise ManifestError(f"model {self.name!r}: made without a reader, so it takes no overrides")
        return self.reader.config(self.raw_config, overrides)

    def target(self, overrides: Sequence[str] = ()) -> Target[C]:
        """What checking this entry checks: its configuration (with overrides), symmetry and properties."""
        return Target(self.name, self.config_with(overrides), self.symmetry, self, self.properties,
                      variant_path(self.variant) if self.variant else None)


@dataclass(frozen=True)
class Target(Generic[C]):
    """What a command checks: a label, the configuration and the symmetry choice."""

    label: str
    config: C
    symmetry: bool | None
    entry: ModelEntry[C] | None = None
    properties: tuple[str, ...] | None = None
    variant: str | None = None  # the variant the manifest names for it (``path.py:Attr``), resolved


def variant_path(text: str) -> str:
    """A manifest entry's ``variant`` with its file path made absolute: relative paths are the
    checkout's (``examples/variants/x.py:X``), so the gate finds them from any directory; a module
    name (``pkg.mod:X``) is left as it is."""
    module, sep, attr = text.rpartition(":")
    if sep and module.endswith(".py") and not module.startswith("/"):
        from pathlib import Path

        here = Path(__file__).resolve().parent.parent / module
        if here.is_file():
            return f"{here}:{attr}"
    return text


def _fail(source: str, where: str, message: str) -> ManifestError:
    return ManifestError(f"{source}: {where}: {message}")


def _int_field(source: str, where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(source, where, f"{key} must be a positive integer, got {value!r}")
    return value


def parse_entry(raw: Any, index: int, reader: Reader[C], source: str = MANIFEST) -> ModelEntry[C]:
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
    variant = raw.get("variant")
    if variant is not None and (not isinstance(variant, str) or ":" not in variant):
        raise _fail(source, where, f"variant must be \"MODULE:ATTR\" (e.g. examples/variants/x.py:X), got {variant!r}")
    if expect == "safety_failure":
        if prop is None or length is None:
            raise _fail(source, where, "expect = \"safety_failure\" needs both property and length")
        if states is not None:
            raise _fail(source, where, "states is pinned only for expect = \"success\"")
        known = list(reader.property_names())
        if prop not in known and variant is None:  # a variant's own are checked when it is loaded
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
            if x not in reader.property_names() and variant is None:
                raise _fail(source, where, f"unknown property {x!r} in properties")
        only = tuple(only)
    liveness = _liveness(source, where, raw.get("liveness"), reader)
    raw_config = raw["config"]
    if not isinstance(raw_config, dict):
        raise _fail(source, where, "config must be a table ([model.config])")
    try:
        config = reader.config(raw_config)
    except ValueError as e:
        raise _fail(source, where, f"config: {e}") from None
    return ModelEntry(name, description, gate, expect, prop, length, states, symmetry, config, only, liveness,
                      variant, raw_config, reader)


def _liveness(source: str, where: str, raw: Any, reader: Reader[Any]) -> tuple[LivenessExpect, ...]:
    """The ``[model.liveness]`` table: property name -> ``"holds"`` or ``{length, loop, expected?}``."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise _fail(source, where, "liveness must be a table of property = \"holds\" or {length, loop}")
    known = list(reader.liveness_names())
    out = []
    for name, value in raw.items():
        if name not in known:
            hint = difflib.get_close_matches(str(name), known, n=1)
            more = f" (did you mean {hint[0]!r}?)" if hint else f" (known: {', '.join(known)})"
            raise _fail(source, where, f"unknown liveness property {name!r}{more}")
        if value == "holds":
            out.append(LivenessExpect(name, True))
            continue
        if not isinstance(value, dict):
            raise _fail(source, where, f"liveness.{name} must be \"holds\" or {{length, loop}}, got {value!r}")
        extra = sorted(set(value) - _LIVENESS_KEYS)
        if extra or "length" not in value or "loop" not in value:
            raise _fail(source, where, f"liveness.{name} needs length and loop (and may give expected), "
                                       f"got keys {sorted(value)}")
        length = value["length"]
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise _fail(source, where, f"liveness.{name}.length must be an integer >= 0, got {length!r}")
        loop = value["loop"]
        if isinstance(loop, bool) or not isinstance(loop, int) or not 0 <= loop <= length:
            raise _fail(source, where, f"liveness.{name}.loop must be an integer in 0..{length}, got {loop!r}")
        expected = value.get("expected")
        if expected is not None and (not isinstance(expected, str) or not expected.strip()):
            raise _fail(source, where, f"liveness.{name}.expected must be a non-empty reason, got {expected!r}")
        out.append(LivenessExpect(name, False, length, loop, expected))
    return tuple(out)


def parse_manifest(doc: Mapping[str, Any], reader: Reader[C], source: str = MANIFEST) -> list[ModelEntry[C]]:
    """Validate a parsed manifest document."""
    extra = sorted(set(doc) - {"model"})
    if extra:
        raise ManifestError(f"{source}: unknown top-level key {extra[0]!r} (expected [[model]] tables)")
    models = doc.get("model", [])
    if not isinstance(models, list):
        raise ManifestError(f"{source}: model must be an array of tables ([[model]])")
    entries: list[ModelEntry[C]] = []
    seen: set[str] = set()
    for i, raw in enumerate(models):
        entry = parse_entry(raw, i, reader, source)
        if entry.name in seen:
            raise ManifestError(f"{source}: model {entry.name!r} is defined twice")
        seen.add(entry.name)
        entries.append(entry)
    return entries


#: the manifest read last, per reader: (what it was read under, its entries). Reading and validating
#: models.toml takes a third of a second, and a session (the test suite, the gate, a designer's
#: script) asks for entries by name again and again; the entries are immutable, so one reading
#: serves until the file or the caps it was read under change.
_LOADED: dict[int, tuple[tuple[Any, ...], Any, list[Any]]] = {}


def _stamp(path: Any) -> tuple[Any, ...]:
    """What a reading of the manifest depends on: the file (path, size, modification time) and the
    environment's caps on inputs (ISRCHECK_MAX_MANIFEST_BYTES, ISRCHECK_MAX_DEPTH)."""
    st = os.stat(path)
    caps = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("ISRCHECK_MAX_")))
    return (str(path), st.st_size, st.st_mtime_ns, caps)


def load(reader: Reader[C]) -> list[ModelEntry[C]]:
    """The packaged manifest, validated (read once while the file and the input caps stay the same)."""
    # through the bounded reader, as every input (at most ISRCHECK_MAX_MANIFEST_BYTES, nested <= 64 levels)
    with resources.as_file(resources.files(__package__).joinpath(MANIFEST)) as path:
        stamp = _stamp(path)
        cached = _LOADED.get(id(reader))
        if cached is not None and cached[0] == stamp and cached[1] is reader:
            return list(cached[2])
        try:
            doc = read_toml(path, Kind.MANIFEST)
        except InputError as e:
            raise ManifestError(str(e).replace(str(path), MANIFEST, 1)) from None
    entries = parse_manifest(doc, reader)
    _LOADED[id(reader)] = (stamp, reader, entries)
    return list(entries)


def get(name: str, entries: Sequence[ModelEntry[C]]) -> ModelEntry[C]:
    """The entry called ``name``; :class:`UnknownModel` (with a suggestion) otherwise."""
    for e in entries:
        if e.name == name:
            return e
    names = [e.name for e in entries]
    hint = difflib.get_close_matches(name, names, n=1)
    more = f"; did you mean {hint[0]!r}?" if hint else f" (known: {', '.join(names)})"
    raise UnknownModel(f"unknown model {name!r}{more}")


def select(entries: Sequence[ModelEntry[C]], names: Sequence[str] = (),
           everything: bool = False) -> list[ModelEntry[C]]:
    """The gate's models: the named ones, else all (``everything``) or the default set."""
    if names:
        return [get(n, entries) for n in names]
    return [e for e in entries if everything or e.gate == "default"]
