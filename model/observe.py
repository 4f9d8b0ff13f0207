"""The abstract observation of a state (specs/observation.toml, specs/01-vocabulary.md).

:func:`observe` projects a model :class:`~isrcheck.model.state.State` onto the schema: plain
dicts, lists, ints, bools and strings, ready for ``json.dumps``. :func:`validate_observation`
checks any such value (the model's, or one the reference implementation reports) against the
schema and raises :class:`ObservationError` naming the first offending path, for example
``partitions[0].isr[1]: expected int, got 'x'``. The validator knows nothing about the model.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .brokersets import members
from .records import record_epoch, record_id
from .state import ASK_EPOCH_END, FETCHING, NO_LEADER, TRUNCATE_PENDING, State
from .tables import PartitionState, ReplicaState

__all__ = ["ObservationError", "SchemaError", "load_schema", "observe", "validate_observation"]

ROLE_LEADER = "leader"
ROLE_FOLLOWER = "follower"
ROLE_NONE = "none"

#: a replica's reconciliation state (specs/05-replication.md#reconciling-a-follower), as observed
FETCH_STATES = {FETCHING: "fetching", ASK_EPOCH_END: "ask-epoch-end", TRUNCATE_PENDING: "truncate-pending"}


# ---------------------------------------------------------------------------- projection
def observe(state: State) -> dict[str, Any]:
    """The observation of ``state``: exactly the fields of specs/observation.toml."""
    zk = state.zk
    c = state.controller
    nparts = len(zk.partitions)
    controller = {
        "epoch": c.epoch,
        "live_brokers": list(members(c.live)),
        "shutting_down": list(members(c.shutting_down)),
        "stale_epoch": state.stale.epoch if state.stale is not None else 0,
    }
    brokers = [
        {"id": i + 1, "alive": br.alive, "controller_epoch": br.controller_epoch}
        for i, br in enumerate(state.brokers)
    ]
    partitions = []
    for p, zp in enumerate(zk.partitions):
        partitions.append({
            "index": p,
            "exists": bool(zp.replicas),
            "replicas": list(zp.replicas),
            "leader": zp.leader,
            "isr": list(members(zp.isr)),
            "leader_epoch": zp.leader_epoch,
            "zk_version": zp.version,
            "partition_state": PartitionState(c.partition_states[p]).label,
            "reassignment": list(zk.reassign[p]),
            "preferred_election": bool(zk.preferred >> p & 1),
            "deleting": bool(zk.deleting >> p & 1),
        })
    replicas = []
    for i, br in enumerate(state.brokers):
        b = i + 1
        for p in range(nparts):
            r = br.replicas[p]
            entry: dict[str, Any] = {
                "broker": b,
                "partition": p,
                "replica_state": ReplicaState(c.replica_states[p][i]).label,
                "present": r is not None,
            }
            if r is None:
                entry.update(log=[], leo=0, hw=0, leader_epoch=-1, role=ROLE_NONE, epochs=[],
                             fetch_state=FETCH_STATES[FETCHING])
            else:
                if r.leader == b:
                    role = ROLE_LEADER
                elif r.leader != NO_LEADER:
                    role = ROLE_FOLLOWER
                else:
                    role = ROLE_NONE
                entry.update(
                    log=[{"id": record_id(x), "epoch": record_epoch(x)} for x in r.log],
                    leo=len(r.log),
                    hw=r.hw,
                    leader_epoch=r.leader_epoch,
                    role=role,
                    epochs=[{"epoch": e, "start_offset": start} for e, start in r.epochs],
                    fetch_state=FETCH_STATES[r.fetch_state],
                )
            replicas.append(entry)
    return {"controller": controller, "brokers": brokers, "partitions": partitions, "replicas": replicas}


# ---------------------------------------------------------------------------- validation
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
    """specs/observation.toml, parsed."""
    from isrcheck import specs

    return specs.load("observation.toml")


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

    for oname, fields in objects.items():
        seen = set()
        for f in fields:
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


def validate_observation(obs: Any, schema: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`ObservationError` unless ``obs`` matches ``schema`` (default: the shipped one).

    Objects must have exactly the schema's fields (none missing, none extra); ints are not bools;
    the constraints ``min``, ``values``, ``sorted`` and ``unique`` are enforced.
    """
    if schema is None:
        schema = load_schema()
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
    fields = objects[name]
    names = [f["name"] for f in fields]
    for key in value:
        if key not in names:
            raise ObservationError(_join(path, str(key)), f"unknown field (a {name} has: {', '.join(names)})")
    for f in fields:
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
