"""A variant's own state: fields it declares, laid out in the model's state objects.

A designer's variant (a :class:`~isrcheck.model.protocol.Protocol` subclass) may need state the
model does not have: KIP-966's eligible leader replicas are a broker set per partition in
ZooKeeper, a "last known leader" is a broker id, a flag may say a broker's last shutdown was
unclean. Rather than editing the state classes, the codec, the fingerprint, symmetry and every
renderer, the variant declares :class:`Field` values in its ``fields`` attribute::

    class EligibleLeaderReplicas(Protocol):
        fields = (Field("elr", Scope.PARTITION, Kind.BROKERS, doc="eligible leader replicas"),)

Each state object of a scope carries the values of that scope's fields in its ``ext`` tuple, in
declaration order (``ZkPartition.ext``, ``Replica.ext``, ``Broker.ext``, ``Controller.ext``); the
model's own steps keep them (a fetch rebuilds a replica with its ``ext``), a crash resets the
fields that are not ``persistent``, a new controller starts from the initial values. Because the
values are plain ints in tuples that are part of the state, they flow everywhere a built-in field
does: the fingerprint and the binary codec of both builds, the Spark workers, the liveness graph.
Symmetry renames the broker ids a :attr:`Kind.BROKER` or :attr:`Kind.BROKERS` field holds, and the
renderers show each field under its name (``zk.partitions[0].elr = {2}``). Without fields every
``ext`` is the empty tuple, which costs a state nothing but one hash lane per object.
"""
from __future__ import annotations

import keyword
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from .brokersets import members


class Scope(Enum):
    """Which state object holds a field's value."""

    PARTITION = "partition"  # ZooKeeper's partition znode (ZkPartition), one value per partition
    REPLICA = "replica"  # a broker's replica of a partition (Replica), one value per hosted replica
    BROKER = "broker"  # a broker (Broker), one value per broker
    CONTROLLER = "controller"  # a controller's in-memory context (Controller), one value per controller


class Kind(Enum):
    """What a field's int means: how it is shown, and whether symmetry renames it."""

    INT = "int"
    BOOL = "bool"  # 0 or 1
    BROKER = "broker"  # a broker id, 0 for none (renamed under symmetry)
    BROKERS = "brokers"  # a set of broker ids as a bitmask, bit b for broker b (renamed under symmetry)


class ExtensionError(ValueError):
    """A variant's field declarations cannot describe state; the message is one line for the user."""


@dataclass(frozen=True)
class Field:
    """One field of a variant's state.

    ``initial`` is its value in the initial state (and in every object created later: a replica a
    LeaderAndIsr creates, a new controller). ``persistent`` says whether a crash keeps it: a
    replica's or broker's field on disk survives, one in memory is reset to ``initial``
    (partition fields live in ZooKeeper and controller fields die with their controller, so it
    only matters for those two scopes).
    """

    name: str
    scope: Scope
    kind: Kind = Kind.INT
    initial: int = 0
    persistent: bool = True
    doc: str = ""


#: names the model's own state objects use: a field may not shadow one (the renderers show both)
_BUILT_IN: Final = {
    Scope.PARTITION: {"replicas", "leader", "isr", "leader_epoch", "version", "controller_epoch", "ext"},
    Scope.REPLICA: {"log", "hw", "checkpoint", "leader", "leader_epoch", "isr", "zk_version", "remote_leo", "pending",
                    "assigned", "epochs", "fetch_state", "answer", "ext"},
    Scope.BROKER: {"alive", "controller_epoch", "replicas", "ext"},
    Scope.CONTROLLER: {"epoch", "live", "registrations", "partition_states", "replica_states", "reassign_step",
                       "reassign_old", "reassign_new", "shutting_down", "ext"},
}

#: the largest value a field may hold (the codec's ints are 64-bit signed)
MAX_VALUE: Final = (1 << 62) - 1


class Extension:
    """The fields of one variant, laid out per scope: each scope's ``ext`` tuple holds its fields'
    values in declaration order. Built once per protocol; the lookups are plain dictionaries."""

    def __init__(self, fields: Iterable[Field] = ()) -> None:
        self.fields: tuple[Field, ...] = tuple(fields)
        self._index: dict[tuple[Scope, str], int] = {}
        self._by_scope: dict[Scope, list[Field]] = {s: [] for s in Scope}
        for f in self.fields:
            _validate(f)
            if (f.scope, f.name) in self._index:
                raise ExtensionError(f"the variant declares the {f.scope.value} field {f.name!r} twice")
            self._index[(f.scope, f.name)] = len(self._by_scope[f.scope])
            self._by_scope[f.scope].append(f)
        self._initial = {s: tuple(f.initial for f in fs) for s, fs in self._by_scope.items()}
        self._reset_on_crash = {s: tuple(i for i, f in enumerate(fs) if not f.persistent)
                          for s, fs in self._by_scope.items()}
        #: whether the variant declares no field at all (then every ``ext`` is ``()``)
        self.empty = not self.fields

    def of(self, scope: Scope) -> list[Field]:
        """The fields of ``scope``, in the order their values stand in ``ext``."""
        return list(self._by_scope[scope])

    def index(self, scope: Scope, name: str) -> int:
        """Where field ``name`` of ``scope`` stands in an ``ext`` tuple."""
        try:
            return self._index[(scope, name)]
        except KeyError:
            known = ", ".join(f.name for f in self._by_scope[scope]) or "none"
            raise ExtensionError(f"no {scope.value} field {name!r} (the variant declares: {known})") from None

    def initial(self, scope: Scope) -> tuple[int, ...]:
        """The ``ext`` tuple of a new object of ``scope``."""
        return self._initial[scope]

    def after_crash(self, scope: Scope, values: tuple[int, ...]) -> tuple[int, ...]:
        """``values`` with the fields that do not survive a crash back at their initial value."""
        resets = self._reset_on_crash[scope]
        if not resets:
            return values
        out = list(values)
        initial = self._initial[scope]
        for i in resets:
            out[i] = initial[i]
        return tuple(out)

    def get(self, scope: Scope, values: tuple[int, ...], name: str) -> int:
        return values[self.index(scope, name)]

    def with_value(self, scope: Scope, values: tuple[int, ...], name: str, value: int) -> tuple[int, ...]:
        """``values`` with field ``name`` set to ``value`` (checked against the field's kind)."""
        i = self.index(scope, name)
        f = self._by_scope[scope][i]
        _check_value(f, value)
        if values[i] == value:
            return values
        out = list(values)
        out[i] = int(value)
        return tuple(out)

    def named(self, scope: Scope, values: Sequence[int]) -> list[tuple[Field, int]]:
        """Each field of ``scope`` with its value in ``values`` (for renderers and traces)."""
        return list(zip(self._by_scope[scope], values))

    def as_json(self, scope: Scope, values: Sequence[int]) -> dict[str, Any]:
        """``values`` of ``scope`` as ``{name: value}`` in JSON (:func:`json_value`)."""
        return {f.name: json_value(f, v) for f, v in zip(self._by_scope[scope], values)}

    def declarations(self) -> list[dict[str, Any]]:
        """The fields as data (name, scope, kind, initial, persistent), for trace headers."""
        return [{"name": f.name, "scope": f.scope.value, "kind": f.kind.value, "initial": f.initial,
                 "persistent": f.persistent} for f in self.fields]


def json_value(f: Field, v: int) -> Any:
    """A field's value as JSON: a broker set as its sorted ids, a broker as its id or null (0: none),
    a boolean as a boolean, an int as itself."""
    if f.kind is Kind.BROKERS:
        return list(members(v))
    if f.kind is Kind.BROKER:
        return v if v else None
    if f.kind is Kind.BOOL:
        return bool(v)
    return v


def state_values(state: Any, extension: Extension) -> dict[str, Any] | None:
    """Every variant value of a model state, by where it is held: ``partitions`` (one object per
    partition), ``brokers`` (one per broker), ``replicas`` (``{"broker", "partition", ...}`` per hosted
    replica), ``controller`` (null without one). Only the scopes the variant declares fields for;
    None when it declares none (trace files then carry nothing)."""
    if extension.empty:
        return None
    out: dict[str, Any] = {}
    if extension.of(Scope.PARTITION):
        out["partitions"] = [extension.as_json(Scope.PARTITION, zp.ext) for zp in state.zk.partitions]
    if extension.of(Scope.BROKER):
        out["brokers"] = [extension.as_json(Scope.BROKER, br.ext) for br in state.brokers]
    if extension.of(Scope.REPLICA):
        out["replicas"] = [{"broker": b + 1, "partition": p} | extension.as_json(Scope.REPLICA, r.ext)
                           for b, br in enumerate(state.brokers) for p, r in enumerate(br.replicas) if r is not None]
    if extension.of(Scope.CONTROLLER):
        c = state.controller
        out["controller"] = None if c is None else extension.as_json(Scope.CONTROLLER, c.ext)
    return out


def _validate(f: Field) -> None:
    if not isinstance(f, Field):
        raise ExtensionError(f"a variant's fields must be Field values, got {f!r}")
    if not isinstance(f.scope, Scope) or not isinstance(f.kind, Kind):
        raise ExtensionError(f"field {f.name!r}: scope must be a Scope and kind a Kind")
    if not f.name.isidentifier() or keyword.iskeyword(f.name) or f.name.startswith("_"):
        raise ExtensionError(f"field name {f.name!r} must be an identifier not starting with '_'")
    if f.name in _BUILT_IN[f.scope]:
        raise ExtensionError(f"field {f.name!r}: the model's {f.scope.value} state already has a field of that name")
    _check_value(f, f.initial)


def _check_value(f: Field, value: object) -> None:
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, int):
        raise ExtensionError(f"field {f.name!r} holds ints, got {value!r}")
    if f.kind is Kind.BOOL and value not in (0, 1):
        raise ExtensionError(f"field {f.name!r} is a bool: 0 or 1, got {value}")
    if f.kind in (Kind.BROKER, Kind.BROKERS) and value < 0:
        raise ExtensionError(f"field {f.name!r} holds broker ids: not negative, got {value}")
    if not -MAX_VALUE <= value <= MAX_VALUE:
        raise ExtensionError(f"field {f.name!r}: {value} is out of range")


NO_FIELDS: Final = Extension(())

__all__ = ["Scope", "Kind", "Field", "Extension", "ExtensionError", "NO_FIELDS", "MAX_VALUE"]
