"""Every field of a model state, flattened to named texts, and what changed between two states.

The counterexample table shows a chosen few columns; ``--verbose`` shows the rest. So that no
field of the state can be left out by accident, the field list is not written down here: it is
derived from the state's structure (the ``_fields`` of its NamedTuples), recursively. A field added
to :mod:`isrcheck.model.state` appears with a generic rendering until someone gives it a nicer one
in the tables below. The tables only *format* and *name*: they never decide what is shown.

Each leaf has a *group* (where it lives: ``partition 0``, ``broker 2``, ``controller``,
``stale controller``, ``queues``, ``store``, ``budget``) and a *name* inside the group, such as
``p0.remote_leo[b2]`` (broker 1's view, as leader of partition 0, of broker 2's log end offset) or
``replica_states[p0][b2]``. Plain data (strings), so an HTML report can reuse it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from isrcheck.model.brokersets import members
from isrcheck.model.extension import Extension, Kind, Scope
from isrcheck.model.observe import FETCH_STATES
from isrcheck.model.records import render_log
from isrcheck.model.state import NO_LEADER
from isrcheck.model.tables import PartitionState, ReplicaState

__all__ = [
    "ABSENT",
    "GROUP_ORDER",
    "REQUEST_ABBREVIATIONS",
    "Change",
    "Field",
    "changes",
    "fields",
    "generic",
    "group_rank",
]

#: the text of a field that one of two states does not have (a replica not hosted, no stale controller)
ABSENT = "(absent)"

# Where a top-level field of State lives; an unknown one becomes a group of its own name.
_ROOT_GROUP = {"zk": "store", "controller": "controller", "stale": "stale controller", "brokers": "broker",
               "inbox": "queues", "ghost": "partition", "budget": "budget", "reassignments": "queues"}
#: the order groups are listed in; partitions and brokers by number, unknown groups last
GROUP_ORDER = ("partition", "broker", "controller", "stale controller", "queues", "store", "budget")

BROKER = "b"  # an index that is a broker id - 1: labelled b1, b2, ...
PARTITION = "p"  # an index that is a partition number: labelled p0, p1, ...

# Tuples indexed by broker or partition, by (NamedTuple class name, field): one index kind per level
# that is expanded into separate fields. Deeper levels stay one value. Not listed: a tuple holding
# NamedTuples is expanded with plain indices ([0], [1], ...), any other tuple is one value.
_INDEXED: dict[tuple[str, str], tuple[str, ...]] = {
    ("State", "brokers"): (BROKER,),
    ("State", "inbox"): (BROKER,),
    ("State", "ghost"): (PARTITION,),
    ("Zk", "registrations"): (BROKER,),
    ("Zk", "partitions"): (PARTITION,),
    ("Zk", "reassign"): (PARTITION,),
    ("Controller", "registrations"): (BROKER,),
    ("Controller", "partition_states"): (PARTITION,),
    ("Controller", "replica_states"): (PARTITION, BROKER),
    ("Controller", "reassign_step"): (PARTITION,),
    ("Controller", "reassign_old"): (PARTITION,),
    ("Controller", "reassign_new"): (PARTITION,),
    ("Broker", "replicas"): (PARTITION,),
    ("Replica", "remote_leo"): (BROKER,),
}
# Tuples whose elements are the entities the groups are named after: ``broker 2``, ``partition 0``.
_ENTITY: dict[tuple[str, str], str] = {
    ("State", "brokers"): "broker",
    ("State", "ghost"): "partition",
    ("Zk", "partitions"): "partition",
    ("Zk", "reassign"): "partition",
}
# The prefix a field takes inside its entity's group, so partition 0 reads zk.leader beside ghost.acked.
_ENTITY_PREFIX = {("State", "ghost"): "ghost", ("Zk", "partitions"): "zk", ("Zk", "reassign"): "zk.reassign"}


# ---------------------------------------------------------------------------- value texts
def _brokers(mask: int) -> str:
    return "{" + ",".join(str(b) for b in members(mask)) + "}"


def _partitions(mask: int) -> str:
    return "{" + ",".join(f"p{p}" for p in members(mask)) + "}"


def _record_ids(mask: int) -> str:
    return "{" + ",".join(f"m{i}" for i in members(mask)) + "}"


def _leader(b: int) -> str:
    return "none" if b == NO_LEADER else str(b)


def _log(log: tuple[int, ...]) -> str:
    return render_log(log)


def _partition_state(s: int) -> str:
    return PartitionState(s).label


def _replica_state(s: int) -> str:
    return ReplicaState(s).label


def _fetch_state(s: int) -> str:
    return FETCH_STATES.get(s, str(s))


def _pending_reassignments(items: tuple[tuple[int, tuple[int, ...]], ...]) -> str:
    return "[" + ", ".join(f"p{p}->{generic(t)}" for p, t in items) + "]"


def _queue(queue: tuple[Any, ...]) -> str:
    """A request queue, oldest first, one request per line (``[]`` when empty)."""
    if not queue:
        return "[]"
    return "\n".join(_request(r) for r in queue)


#: short names of request fields, so a queue of requests stays readable in a table cell
REQUEST_ABBREVIATIONS = {"controller_epoch": "ce", "partition": "p", "leader_epoch": "le", "zk_version": "zkv",
                         "replicas": "AR"}


def _request(req: Any) -> str:
    """A request as ``LeaderAndIsr(ce=1 p=0 leader=2 isr={2,3} le=1 zkv=2 AR=[1,2,3])``, from its own
    fields (the ``kind`` tag is the class name), so a new request field shows up too."""
    names = getattr(req, "_fields", None)
    if names is None:
        return generic(req)
    parts = [f"{REQUEST_ABBREVIATIONS.get(n, n)}={_format(n, v)}" for n, v in zip(names, req) if n != "kind"]
    return f"{type(req).__name__}({' '.join(parts)})"


def generic(v: Any) -> str:
    """Any value, readably and without Python reprs: tuples as ``[a,b]``, booleans lower case."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, tuple):
        names = getattr(v, "_fields", None)
        if names is not None:
            return _request(v)
        return "[" + ",".join(generic(x) for x in v) + "]"
    return str(v)


# Texts by field name (the leaf's own field, or for an expanded tuple the tuple's field). A field not
# named here is shown with :func:`generic`.
_FORMAT: dict[str, Callable[[Any], str]] = {
    "leader": _leader,
    "isr": _brokers,
    "live": _brokers,
    "shutting_down": _brokers,
    "assigned": _brokers,
    "acked": _record_ids,
    "pending": _record_ids,
    "log": _log,
    "exposed": _log,
    "preferred": _partitions,
    "deleting": _partitions,
    "partition_states": _partition_state,
    "replica_states": _replica_state,
    "fetch_state": _fetch_state,
    "inbox": _queue,
    "reassignments": _pending_reassignments,
}


def _format(name: str, v: Any) -> str:
    if v is None:
        return "none"
    fmt = _FORMAT.get(name)
    return fmt(v) if fmt is not None else generic(v)


# ---------------------------------------------------------------------------- a variant's fields
#: the state objects that hold a variant's values (their ``ext`` field), by class name
_EXT_SCOPE = {"ZkPartition": Scope.PARTITION, "Replica": Scope.REPLICA, "Broker": Scope.BROKER,
              "Controller": Scope.CONTROLLER}
_KIND_TEXT: dict[Kind, Callable[[int], str]] = {
    Kind.INT: str, Kind.BOOL: lambda v: "true" if v else "false", Kind.BROKER: _leader, Kind.BROKERS: _brokers,
}


def variant_text(f: Any, v: int) -> str:
    """One variant field's value as the tables show it (its kind decides: ``{2,3}``, ``none``, ``true``)."""
    return _KIND_TEXT[f.kind](v)


def _variant_leaves(owner: str, values: tuple[int, ...], group: str, name: str,
                    extension: Extension | None) -> Iterator[Field]:
    """A variant's values held by one state object, by the names and kinds it declared (an ELR set
    reads ``zk.elr={2,3}``); without the declarations (a state shown without its variant), one
    generic ``ext`` field. The model's own states hold none and show nothing."""
    if not values:
        return
    scope = _EXT_SCOPE.get(owner)
    if extension is None or scope is None or len(extension.of(scope)) != len(values):
        yield Field(group, f"{name}.ext" if name else "ext", generic(values))
        return
    for f, v in extension.named(scope, values):
        yield Field(group, f"{name}.{f.name}" if name else f.name, variant_text(f, v))


# ---------------------------------------------------------------------------- flattening
@dataclass(frozen=True)
class Field:
    group: str
    name: str
    value: str


def _label(kind: str, i: int) -> str:
    return f"b{i + 1}" if kind == BROKER else f"p{i}" if kind == PARTITION else str(i)


def _entity_group(entity: str, kind: str, i: int) -> str:
    """``broker 2`` (index 1 of a per-broker tuple), ``partition 0``."""
    return f"{entity} {i + 1 if kind == BROKER else i}"


def _is_record(v: Any) -> bool:
    return isinstance(v, tuple) and hasattr(v, "_fields")


def _holds_records(v: Any) -> bool:
    return isinstance(v, tuple) and not hasattr(v, "_fields") and any(_is_record(x) for x in v)


def _walk(v: Any, group: str, name: str, field: str, levels: Sequence[str],
          extension: Extension | None) -> Iterator[Field]:
    """The leaves under ``v``: ``field`` is the NamedTuple field it came from (for its text),
    ``levels`` the index kinds still to expand, ``extension`` the variant's field declarations."""
    if levels and isinstance(v, tuple):
        for i, x in enumerate(v):
            yield from _walk(x, group, f"{name}[{_label(levels[0], i)}]", field, levels[1:], extension)
        return
    if _is_record(v):
        owner = type(v).__name__
        for f, x in zip(v._fields, v):
            key = (owner, f)
            if f == "ext" and owner in _EXT_SCOPE:
                yield from _variant_leaves(owner, x, group, name, extension)
                continue
            sub = f"{name}.{f}" if name else f
            entity = _ENTITY.get(key)
            if entity is not None and isinstance(x, tuple):
                kind = _INDEXED.get(key, ("",))[0]
                prefix = _ENTITY_PREFIX.get(key, "")
                for i, item in enumerate(x):
                    yield from _walk(item, _entity_group(entity, kind, i), prefix, f, _INDEXED.get(key, ())[1:],
                                     extension)
            else:
                yield from _walk(x, group, sub, f, _INDEXED.get(key, ()), extension)
        return
    if _holds_records(v) and field not in _FORMAT:  # an unknown tuple of records: one field per element
        for i, x in enumerate(v):
            yield from _walk(x, group, f"{name}[{i}]", field, (), extension)
        return
    yield Field(group, name or field, _format(field, v))


def fields(state: Any, extension: Extension | None = None) -> list[Field]:
    """Every leaf field of ``state``, in the order of the state's structure; a variant's fields by
    the names ``extension`` declares (``Protocol.extension``)."""
    out: list[Field] = []
    for f, x in zip(state._fields, state):
        group = _ROOT_GROUP.get(f, f)
        key = (type(state).__name__, f)
        entity = _ENTITY.get(key)
        if entity is not None and isinstance(x, tuple):
            kind = _INDEXED[key][0]
            prefix = _ENTITY_PREFIX.get(key, "")
            for i, item in enumerate(x):
                out.extend(_walk(item, _entity_group(entity, kind, i), prefix, f, (), extension))
            continue
        name = f if group == "queues" else ""  # inside its own group a field needs no prefix
        out.extend(_walk(x, group, name, f, _INDEXED.get(key, ()), extension))
    return out


def group_rank(group: str) -> tuple[int, int, str]:
    """Sort key of a group: GROUP_ORDER, entities by number, unknown groups last by name."""
    head, _, number = group.rpartition(" ")
    if head in ("partition", "broker") and number.isdigit():
        return GROUP_ORDER.index(head), int(number), ""
    if group in GROUP_ORDER:
        return GROUP_ORDER.index(group), 0, ""
    return len(GROUP_ORDER), 0, group


# ---------------------------------------------------------------------------- changes
@dataclass(frozen=True)
class Change:
    group: str
    name: str
    before: str  # ABSENT when the earlier state has no such field
    after: str  # ABSENT when the later state has no such field


def changes(before: Any, after: Any, extension: Extension | None = None) -> list[Change]:
    """The fields whose text differs between two states, grouped (GROUP_ORDER), each group in the
    order of the state's structure. Fields only one state has are changes from or to ABSENT."""
    old = {(f.group, f.name): f.value for f in fields(before, extension)}
    new = {(f.group, f.name): f.value for f in fields(after, extension)}
    keys = list(old)
    keys += [k for k in new if k not in old]
    position = {k: i for i, k in enumerate(keys)}
    out = [Change(g, n, old.get((g, n), ABSENT), new.get((g, n), ABSENT))
           for g, n in keys if old.get((g, n), ABSENT) != new.get((g, n), ABSENT)]
    out.sort(key=lambda c: (group_rank(c.group), position[(c.group, c.name)]))
    return out
