"""Messages between controllers, brokers and clients, and the inputs and effects of the cores.

Everything here is an immutable value. Messages travel in frames (:mod:`.frame`) as JSON objects
``{"type": <class name>, ...fields}``; :func:`to_wire` / :func:`from_wire` convert, and refuse an
unknown type or malformed fields with :class:`MessageError`.

Addresses name the endpoints of a Send: ``("broker", id)``, ``("controller", epoch)`` (the
controller that holds that epoch) and ``("client", name)``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Union

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


@dataclass(frozen=True)
class FetchResponse:
    partition: int
    leader: int
    offset: int  # the fetch offset the response answers
    # "" | NotLeader | UnknownReplica | OffsetOutOfRange | FencedLeaderEpoch | UnknownLeaderEpoch
    error: str = ""
    records: tuple[Record, ...] = ()
    hw: int = 0  # the leader's HW before it counted this fetch
    leader_leo: int = 0
    leader_epoch: int = -1  # the follower's leader epoch the request carried (echoed)


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
    error: str = ""  # "" | NotLeader | NotEnoughReplicas | NotEnoughReplicasAfterAppend | LeaderChanged
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


def _tuple(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_tuple(x) for x in v)
    return v


def _check_type(name: str, field: dataclasses.Field, v: Any) -> None:
    t = str(field.type)
    ok: bool
    if t == "int":
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif t == "str":
        ok = isinstance(v, str)
    elif t == "bool":
        ok = isinstance(v, bool)
    else:
        ok = isinstance(v, (list, tuple))
    if not ok:
        raise MessageError(f"{name}.{field.name}: unexpected value {v!r}")


def from_wire(obj: Any) -> Any:
    if not isinstance(obj, dict):
        raise MessageError("a message must be a JSON object")
    name = obj.get("type")
    cls = MESSAGE_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise MessageError(f"unknown message type {name!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    extra = sorted(set(obj) - set(fields) - {"type"})
    if extra:
        raise MessageError(f"{name}: unknown field {extra[0]!r}")
    kwargs: dict[str, Any] = {}
    for fname, f in fields.items():
        if fname not in obj:
            if f.default is dataclasses.MISSING:
                raise MessageError(f"{name}: missing field {fname!r}")
            continue
        v = obj[fname]
        _check_type(name, f, v)
        if fname == "records":
            try:
                v = tuple(Record(int(r["id"]), int(r["epoch"]), str(r.get("value", ""))) for r in v)
            except (TypeError, KeyError, ValueError):
                raise MessageError(f"{name}.records: malformed record") from None
        else:
            v = _tuple(v)
        kwargs[fname] = v
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
