"""Messages between controllers, brokers and clients, and the inputs and effects of the cores.

Everything here is an immutable value. Messages travel in frames (:mod:`isrcheck.impl.wire.frame`) as JSON objects
``{"type": <class name>, ...fields}``; :func:`to_wire` / :func:`from_wire` convert, and refuse an
unknown type or malformed fields with :class:`MessageError`.

Addresses name the endpoints of a Send: ``("broker", id)``, ``("controller", epoch)`` (the
controller that holds that epoch) and ``("client", name)``.
"""
from __future__ import annotations

import dataclasses
import reprlib
import typing
from dataclasses import dataclass
from typing import Any, Callable, Union

Address = tuple[str, Any]


def broker(b: int) -> Address:
    return ("broker", b)


def controller(epoch: int) -> Address:
    return ("controller", epoch)


def client(name: str) -> Address:
    return ("client", name)


class MessageError(ValueError):
    """A wire message that cannot be decoded."""


# ---------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Record:
    """One log record: the producer-chosen id, the leader epoch it was appended in, a payload."""

    id: int
    epoch: int
    value: str = ""


# ---------------------------------------------------------------------------- controller -> broker
@dataclass(frozen=True)
class LeaderAndIsr:
    controller_epoch: int
    partition: int
    leader: int  # 0: none
    isr: tuple[int, ...]
    leader_epoch: int
    zk_version: int  # the leader/ISR znode's version in the store (stat.version)
    replicas: tuple[int, ...]  # the controller's view of the assignment
    state_controller_epoch: int = 0  # the epoch of the controller that last wrote the leader/ISR znode


@dataclass(frozen=True)
class StopReplica:
    controller_epoch: int
    partition: int
    delete: bool


@dataclass(frozen=True)
class UpdateMetadata:
    controller_epoch: int
    live_brokers: tuple[int, ...] = ()
    # (partition, leader, leader_epoch, isr) per existing partition, for the brokers' metadata cache
    partitions: tuple[tuple[int, int, int, tuple[int, ...]], ...] = ()


ControllerRequest = Union[LeaderAndIsr, StopReplica, UpdateMetadata]


# ---------------------------------------------------------------------------- broker -> controller
@dataclass(frozen=True)
class StopReplicaResponse:
    controller_epoch: int
    partition: int
    broker: int
    delete: bool


@dataclass(frozen=True)
class ControlledShutdownRequest:
    broker: int


@dataclass(frozen=True)
class ControlledShutdownResponse:
    broker: int
    error: str = ""
    remaining_leaderships: tuple[int, ...] = ()


# ---------------------------------------------------------------------------- replication
@dataclass(frozen=True)
class FetchRequest:
    partition: int
    follower: int
    offset: int
    leader_epoch: int = -1  # the follower's current leader epoch (checked by the leader under kip-320)
    # the follower's count of its fetches of this partition, strictly increasing (a fetch session's epoch,
    # KIP-227): echoed, so that a stale answer is known; the leader refuses a request older than the newest
    # it handled from this follower (0: not numbered, never refused)
    fetch_id: int = 0


@dataclass(frozen=True)
class FetchResponse:
    partition: int
    leader: int
    offset: int  # the fetch offset the response answers
    # "" | NotLeader | UnknownReplica | OffsetOutOfRange | FencedLeaderEpoch | UnknownLeaderEpoch
    # | InvalidFetchSessionEpoch (the request was older than one the leader handled; nothing counted)
    error: str = ""
    records: tuple[Record, ...] = ()
    hw: int = 0  # the leader's HW before it counted this fetch
    leader_leo: int = 0
    leader_epoch: int = -1  # the follower's leader epoch the request carried (echoed)
    fetch_id: int = 0  # the request's (echoed)
    newest_fetch_id: int = 0  # InvalidFetchSessionEpoch: the newest fetch id the leader handled from this follower


@dataclass(frozen=True)
class OffsetsForLeaderEpochRequest:
    """A reconciling follower asks where ``epoch`` (its latest) ends in the leader's log (KIP-101)."""

    partition: int
    follower: int
    epoch: int
    current_leader_epoch: int = -1  # the follower's leader epoch (fenced by the leader under kip-320)


@dataclass(frozen=True)
class OffsetsForLeaderEpochResponse:
    """The leader's answer: ``end_offset`` (-1: undefined) and, from KIP-279 on, the epoch it is about."""

    partition: int
    leader: int
    asked_epoch: int
    current_leader_epoch: int  # echoed from the request
    # "" | NotLeader | FencedLeaderEpoch | UnknownLeaderEpoch
    error: str = ""
    epoch: int = -1
    end_offset: int = -1


# ---------------------------------------------------------------------------- clients
@dataclass(frozen=True)
class ProduceRequest:
    request_id: int
    partition: int
    record_id: int
    value: str = ""
    acks: str = "all"  # "all" | "1" | "0"


@dataclass(frozen=True)
class ProduceResponse:
    request_id: int
    partition: int
    error: str = ""  # "" | NotLeader | NotEnoughReplicas | NotEnoughReplicasAfterAppend | LeaderChanged | KafkaStorageError
    offset: int = -1


@dataclass(frozen=True)
class ConsumeRequest:
    request_id: int
    partition: int
    offset: int
    max_records: int = 1000


@dataclass(frozen=True)
class ConsumeResponse:
    request_id: int
    partition: int
    error: str = ""  # "" | NotLeader | OffsetOutOfRange
    records: tuple[Record, ...] = ()
    hw: int = 0


@dataclass(frozen=True)
class MetadataRequest:
    request_id: int


@dataclass(frozen=True)
class MetadataResponse:
    request_id: int
    broker: int
    controller_epoch: int
    live_brokers: tuple[int, ...]
    partitions: tuple[tuple[int, int, int, tuple[int, ...]], ...]  # (p, leader, leader_epoch, isr)
    # this broker's replicas: (p, role, leader_epoch, leo, hw)
    replicas: tuple[tuple[int, str, int, int, int], ...] = ()


@dataclass(frozen=True)
class ErrorResponse:
    request_id: int
    error: str


MESSAGE_TYPES: dict[str, type] = {
    cls.__name__: cls for cls in (
        LeaderAndIsr, StopReplica, UpdateMetadata, StopReplicaResponse, ControlledShutdownRequest,
        ControlledShutdownResponse, FetchRequest, FetchResponse, OffsetsForLeaderEpochRequest,
        OffsetsForLeaderEpochResponse, ProduceRequest, ProduceResponse,
        ConsumeRequest, ConsumeResponse, MetadataRequest, MetadataResponse, ErrorResponse,
    )
}


def _plain(v: Any) -> Any:
    if isinstance(v, Record):
        return {"id": v.id, "epoch": v.epoch, "value": v.value}
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    return v


def to_wire(msg: Any) -> dict[str, Any]:
    name = type(msg).__name__
    if name not in MESSAGE_TYPES:
        raise MessageError(f"not a message: {msg!r}")
    out: dict[str, Any] = {"type": name}
    for f in dataclasses.fields(msg):
        out[f.name] = _plain(getattr(msg, f.name))
    return out


INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1  # every integer of a message fits a signed 64-bit field


def short_repr(v: Any) -> str:
    """A bounded repr for error messages: a refused value may be megabytes of nested lists, and the
    message goes into a one-line log entry and an ErrorResponse."""
    return reprlib.repr(v)[:80]


class _Invalid(Exception):
    """A value that does not have its declared type; ``path`` (innermost last, reversed on the way
    up) says where in the field it sits. Internal: :func:`from_wire` turns it into a MessageError."""

    def __init__(self, value: Any, what: str = "unexpected value") -> None:
        super().__init__(what)
        self.value, self.what = value, what
        self.path: list[str] = []


Converter = Callable[[Any], Any]
_RECORD_KEYS = frozenset({"id", "epoch", "value"})


def _int(v: Any) -> int:
    if type(v) is int and INT_MIN <= v <= INT_MAX:  # not bool: type(True) is bool
        return v
    raise _Invalid(v)


def _str(v: Any) -> str:
    if type(v) is str:
        return v
    raise _Invalid(v)


def _bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    raise _Invalid(v)


def _record(v: Any) -> Record:
    if type(v) is Record:
        return v
    if type(v) is dict and "id" in v and "epoch" in v and _RECORD_KEYS.issuperset(v):
        return Record(_int(v["id"]), _int(v["epoch"]), _str(v.get("value", "")))
    raise _Invalid(v, "malformed record")


def _converter(tp: Any) -> Converter:
    """A function that returns ``v`` (from JSON) as a value of the annotated type ``tp`` — lists
    become tuples, record objects :class:`Record` — or raises :class:`_Invalid`. Built once per
    field type: every element of every message is checked, so a message that reaches a core has
    exactly the types its class declares and a crafted frame cannot make a core fail."""
    simple: dict[Any, Converter] = {int: _int, str: _str, bool: _bool, Record: _record}
    if tp in simple:
        return simple[tp]
    if typing.get_origin(tp) is not tuple:
        raise TypeError(f"no wire converter for {tp!r}")
    args = typing.get_args(tp)
    if len(args) == 2 and args[1] is Ellipsis:
        elem = _converter(args[0])

        def homogeneous(v: Any) -> tuple[Any, ...]:
            if type(v) is not list and type(v) is not tuple:
                raise _Invalid(v)
            out = []
            try:
                for x in v:
                    out.append(elem(x))
            except _Invalid as e:
                e.path.append(f"[{len(out)}]")
                raise
            return tuple(out)

        return homogeneous
    elems = [_converter(a) for a in args]

    def fixed(v: Any) -> tuple[Any, ...]:
        if (type(v) is not list and type(v) is not tuple) or len(v) != len(elems):
            raise _Invalid(v)
        out = []
        try:
            for conv, x in zip(elems, v):
                out.append(conv(x))
        except _Invalid as e:
            e.path.append(f"[{len(out)}]")
            raise
        return tuple(out)

    return fixed


def _field_types(cls: type) -> dict[str, tuple[Converter, Any]]:
    """Per field of a message class: the converter of its type (the annotations resolved) and its default."""
    hints = typing.get_type_hints(cls)
    return {f.name: (_converter(hints[f.name]), f.default) for f in dataclasses.fields(cls)}


FIELD_TYPES: dict[str, dict[str, tuple[Converter, Any]]] = {
    name: _field_types(cls) for name, cls in MESSAGE_TYPES.items()}


def from_wire(obj: Any) -> Any:
    if not isinstance(obj, dict):
        raise MessageError("a message must be a JSON object")
    name = obj.get("type")
    if not isinstance(name, str) or name not in MESSAGE_TYPES:
        raise MessageError(f"unknown message type {short_repr(name)}")
    cls = MESSAGE_TYPES[name]
    fields = FIELD_TYPES[name]
    extra = sorted(k for k in obj if k not in fields and k != "type")
    if extra:
        raise MessageError(f"{name}: unknown field {short_repr(extra[0])}")
    kwargs: dict[str, Any] = {}
    for fname, (conv, default) in fields.items():
        if fname not in obj:
            if default is dataclasses.MISSING:
                raise MessageError(f"{name}: missing field {fname!r}")
            continue
        try:
            kwargs[fname] = conv(obj[fname])
        except _Invalid as e:
            where = f"{name}.{fname}{''.join(reversed(e.path))}"
            raise MessageError(f"{where}: {e.what} {short_repr(e.value)}") from None
    return cls(**kwargs)


# ---------------------------------------------------------------------------- core inputs
@dataclass(frozen=True)
class Receive:
    """A message arrived from ``frm``."""

    frm: Address
    msg: Any


@dataclass(frozen=True)
class StoreResult:
    """The answer to a StoreOp effect: ``value``, or ``error`` (a StoreError) when it failed."""

    token: int
    value: Any = None
    error: Any = None


@dataclass(frozen=True)
class Notification:
    """A watch fired in the metadata store (``kind``: created | deleted | changed | child | expired)."""

    kind: str
    path: str


@dataclass(frozen=True)
class SessionRenewed:
    """The driver's store session had ended (expired, or its connection was lost) and a new one is
    open. Why an input of its own: what the old session owned is gone with it (ephemeral znodes such
    as a broker's registration or ``/controller``, and every watch it set), so a core that wants them
    must create or re-arm them; a driver that silently reconnects would leave it believing they exist.
    ``session_id`` is the new session's id (for logs only)."""

    session_id: int = 0


@dataclass(frozen=True)
class Timer:
    name: str
    key: Any = None


@dataclass(frozen=True)
class Command:
    """A step a driver asks for by name (the action vocabulary, or start/stop)."""

    name: str
    args: tuple = ()


# ---------------------------------------------------------------------------- core effects
@dataclass(frozen=True)
class Send:
    to: Address
    msg: Any


@dataclass(frozen=True)
class StoreOp:
    """A metadata-store call for the driver to make: ``kind`` names it (see :func:`.layout.execute`)."""

    token: int
    kind: str
    args: tuple = ()


@dataclass(frozen=True)
class Persist:
    """A write to the broker's disk: ``kind`` is create | append | truncate | flush | checkpoint | delete."""

    kind: str
    partition: int = -1
    payload: Any = None


@dataclass(frozen=True)
class SetTimer:
    name: str
    delay_ms: int
    key: Any = None


@dataclass(frozen=True)
class CancelTimer:
    name: str
    key: Any = None


@dataclass(frozen=True)
class Stop:
    """The process ends itself (a broker after its controlled shutdown, a controller that resigns)."""

    reason: str = ""


@dataclass(frozen=True)
class Committed:
    """Records written with ``acks = "1"`` that the leader which appended them has committed (its HW
    passed them while it still led): the writes the history counts as acknowledged (specs/05-replication.md,
    "Produce"). A report for the driver, not a message: the producer had its answer at the append."""

    partition: int
    record_ids: tuple[int, ...]


Effect = Union[Send, StoreOp, Persist, SetTimer, CancelTimer, Stop, Committed]
