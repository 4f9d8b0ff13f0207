"""The observation schema (specs/observation.toml) and the validator every observation goes through.

An observation is a plain JSON value: the model projects its states onto it
(``isrcheck.model.observe.observe``), the implementation reports it from its processes
(``isrcheck.impl.core.observation.assemble``), conformance compares the two. :func:`validate` checks any
such value against the schema and raises :class:`ObservationError` naming the first offending path,
for example ``partitions[0].isr[1]: expected int, got string 'x'``. It knows nothing about either
side, which is why it lives with the schema in specs/: both sides, conformance and the pipeline use
this one reading of the file.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from . import load

__all__ = ["ObservationError", "SchemaError", "fields", "load_schema", "validate"]


class SchemaError(ValueError):
    """The schema itself is malformed (an unknown type, a field without a name, ...)."""


class ObservationError(ValueError):
    """An observation does not match the schema; the message names the path and the problem."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or '<observation>'}: {problem}")
        self.path = path
        self.problem = problem


_SCALARS = ("int", "bool", "string")
_LIST = re.compile(r"^list\[(.+)\]$")
_FIELD_KEYS = {"name", "type", "description", "min", "values", "sorted", "unique"}


def load_schema() -> dict[str, Any]:
    """specs/observation.toml, parsed (a fresh copy on every call)."""
    return load("observation.toml")


@lru_cache(maxsize=1)
def _shipped() -> dict[str, Any]:
    return load_schema()


@lru_cache(maxsize=None)
def fields(obj: str) -> tuple[str, ...]:
    """The field names of object ``obj`` of the shipped schema, in order; KeyError when there is no such object."""
    for o in _shipped()["object"]:
        if o["name"] == obj:
            return tuple(f["name"] for f in o.get("field", []))
    raise KeyError(obj)


def _objects(schema: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Object name -> its fields, after checking that the schema is well formed."""
    if not isinstance(schema, Mapping) or "root" not in schema or "object" not in schema:
        raise SchemaError("the schema needs a root and a list of [[object]] tables")
    objects: dict[str, list[Mapping[str, Any]]] = {}
    for obj in schema["object"]:
        name = obj.get("name")
        if not isinstance(name, str) or name in objects or name in _SCALARS:
            raise SchemaError(f"object name {name!r} is missing, repeated or reserved")
        objects[name] = list(obj.get("field", []))

    def check_type(t: Any, where: str) -> None:
        if not isinstance(t, str):
            raise SchemaError(f"{where}: type must be a string")
        m = _LIST.match(t)
        if m:
            check_type(m.group(1), where)
        elif t not in _SCALARS and t not in objects:
            raise SchemaError(f"{where}: unknown type {t!r}")

    for oname, ofields in objects.items():
        seen = set()
        for f in ofields:
            where = f"{oname}.{f.get('name', '?')}"
            if not isinstance(f.get("name"), str) or f["name"] in seen:
                raise SchemaError(f"{where}: a field needs a unique name")
            seen.add(f["name"])
            extra = set(f) - _FIELD_KEYS
            if extra:
                raise SchemaError(f"{where}: unknown keys {sorted(extra)}")
            check_type(f.get("type"), where)
    if schema["root"] not in objects:
        raise SchemaError(f"root {schema['root']!r} is not an object of the schema")
    return objects


def validate(obs: Any, schema: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`ObservationError` unless ``obs`` matches ``schema`` (default: the shipped one).

    Objects must have exactly the schema's fields (none missing, none extra); ints are not bools;
    the constraints ``min``, ``values``, ``sorted`` and ``unique`` are enforced. A malformed schema
    is a :class:`SchemaError`.
    """
    if schema is None:
        schema = _shipped()
    objects = _objects(schema)
    _check_object(obs, schema["root"], objects, "")


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _check_object(value: Any, name: str, objects: Mapping[str, list], path: str) -> None:
    if not isinstance(value, Mapping):
        raise ObservationError(path, f"expected an object ({name}), got {_type_name(value)} {_describe(value)}")
    ofields = objects[name]
    names = [f["name"] for f in ofields]
    for key in value:
        if key not in names:
            raise ObservationError(_join(path, str(key)), f"unknown field (a {name} has: {', '.join(names)})")
    for f in ofields:
        fpath = _join(path, f["name"])
        if f["name"] not in value:
            raise ObservationError(fpath, f"missing field ({f['type']})")
        _check_value(value[f["name"]], f["type"], f, objects, fpath)


def _check_value(value: Any, t: str, field: Mapping[str, Any], objects: Mapping[str, list], path: str) -> None:
    m = _LIST.match(t)
    if m:
        if not isinstance(value, list):
            raise ObservationError(path, f"expected {t}, got {_type_name(value)} {_describe(value)}")
        item_type = m.group(1)
        for i, item in enumerate(value):
            _check_value(item, item_type, field, objects, f"{path}[{i}]")
        if field.get("unique") and len({repr(v) for v in value}) != len(value):
            raise ObservationError(path, f"items must be distinct, got {_describe(value)}")
        if field.get("sorted") and value != sorted(value):
            raise ObservationError(path, f"must be in ascending order, got {_describe(value)}")
        return
    if t == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ObservationError(path, f"expected int, got {_type_name(value)} {_describe(value)}")
        if "min" in field and value < field["min"]:
            raise ObservationError(path, f"must be >= {field['min']}, got {value}")
    elif t == "bool":
        if not isinstance(value, bool):
            raise ObservationError(path, f"expected bool, got {_type_name(value)} {_describe(value)}")
    elif t == "string":
        if not isinstance(value, str):
            raise ObservationError(path, f"expected string, got {_type_name(value)} {_describe(value)}")
        if "values" in field and value not in field["values"]:
            raise ObservationError(path, f"must be one of {', '.join(field['values'])}; got {value!r}")
    else:
        _check_object(value, t, objects, path)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
