"""What the store server accepts: every ``StoreRequest`` frame checked field by field before it runs.

Why a module of its own: the server used to read requests with ``req.get(...)`` and coerce what it
found (``bool(x)``, ``int(x)``, a lenient base64 decoder), so ``multi`` with ``ops = "x"`` raised an
AttributeError that dropped the connection, and base64 with stray characters was silently cut down
to other bytes. :func:`parse_request` turns a decoded frame into a :class:`StoreRequest` whose every
field has its declared type, or raises :class:`BadRequest` (code ``BadArguments``) naming the first
field that is wrong; the server answers that as an error response and keeps the connection.

The accepted shape, per ``op`` (``type`` is ``"StoreRequest"``, ``id`` an integer, no other keys)::

    create    path, data?, ephemeral?, makepath?
    get | exists | children    path, watch?
    set       path, data?, version?
    delete    path, version?
    multi     ops: a list of {op: create, path, data?, ephemeral?} | {op: set, path, data?, version?}
              | {op: delete, path, version?} | {op: check, path, version}

``path`` is an absolute znode path (no empty component, no trailing slash, no control characters,
at most 1024 characters); ``data`` is strict base64 (RFC 4648 alphabet and padding); booleans are
JSON booleans; ``version`` an integer from -1 (any version) to 2^31-1, as ZooKeeper's.
"""
from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from ..core.messages import short_repr
from ..core.store import ANY_VERSION, BadArguments, Check, Create, Delete, Op, SetData

MAX_PATH = 1024
VERSION_MAX = (1 << 31) - 1
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class BadRequest(BadArguments):
    """A store request that does not have the accepted shape (answered, never run)."""


@dataclass(frozen=True)
class StoreRequest:
    """A checked request: ``op`` and the fields that op uses (the others keep their defaults)."""

    id: int
    op: str
    path: str = "/"
    data: bytes = b""
    ephemeral: bool = False
    makepath: bool = False
    watch: bool = False
    version: int = ANY_VERSION
    ops: tuple[Op, ...] = ()


# per request op: (required fields, optional fields) besides type, id, op
_REQUEST_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "create": (frozenset({"path"}), frozenset({"data", "ephemeral", "makepath"})),
    "get": (frozenset({"path"}), frozenset({"watch"})),
    "exists": (frozenset({"path"}), frozenset({"watch"})),
    "children": (frozenset({"path"}), frozenset({"watch"})),
    "set": (frozenset({"path"}), frozenset({"data", "version"})),
    "delete": (frozenset({"path"}), frozenset({"version"})),
    "multi": (frozenset({"ops"}), frozenset()),
}
# per multi op: (required fields, optional fields) besides op
_OP_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "create": (frozenset({"path"}), frozenset({"data", "ephemeral"})),
    "set": (frozenset({"path"}), frozenset({"data", "version"})),
    "delete": (frozenset({"path"}), frozenset({"version"})),
    "check": (frozenset({"path", "version"}), frozenset()),
}


def request_id(obj: Any) -> int:
    """The request's id if it is a sane integer, else 0 (for answering a request that is refused)."""
    rid = obj.get("id") if isinstance(obj, dict) else None
    return rid if isinstance(rid, int) and not isinstance(rid, bool) and 0 <= rid < 1 << 63 else 0


def _path(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise BadRequest("", f"{where}: a znode path must be a string, got {short_repr(v)}")
    if len(v) > MAX_PATH:
        raise BadRequest("", f"{where}: a znode path of {len(v)} characters (at most {MAX_PATH})")
    if not v.startswith("/") or (v != "/" and v.endswith("/")) or "//" in v or _CONTROL.search(v):
        raise BadRequest(v, f"{where}: invalid znode path {short_repr(v)}")
    return v


def _data(v: Any, where: str) -> bytes:
    if not isinstance(v, str):
        raise BadRequest("", f"{where}: data must be a base64 string, got {short_repr(v)}")
    try:
        return base64.b64decode(v.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise BadRequest("", f"{where}: data is not valid base64: {short_repr(v)}") from None


def _bool(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise BadRequest("", f"{where}: expected true or false, got {short_repr(v)}")
    return v


def _version(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not ANY_VERSION <= v <= VERSION_MAX:
        raise BadRequest("", f"{where}: a version is an integer from {ANY_VERSION} to {VERSION_MAX}, "
                             f"got {short_repr(v)}")
    return v


def _fields(d: dict[str, Any], spec: tuple[frozenset[str], frozenset[str]], fixed: set[str], where: str) -> None:
    required, optional = spec
    missing = sorted(required - set(d))
    if missing:
        raise BadRequest("", f"{where}: missing field {missing[0]!r}")
    extra = sorted(k for k in d if k not in required and k not in optional and k not in fixed)
    if extra:
        raise BadRequest("", f"{where}: unknown field {short_repr(extra[0])}")


def parse_op(d: Any, where: str) -> Op:
    """One op of a ``multi``."""
    if not isinstance(d, dict):
        raise BadRequest("", f"{where}: an op must be an object, got {short_repr(d)}")
    kind = d.get("op")
    spec = _OP_FIELDS.get(kind) if isinstance(kind, str) else None
    if spec is None:
        raise BadRequest("", f"{where}: unknown op {short_repr(kind)}")
    _fields(d, spec, {"op"}, where)
    path = _path(d["path"], f"{where}.path")
    if kind == "create":
        return Create(path, _data(d.get("data", ""), f"{where}.data"), _bool(d.get("ephemeral", False),
                                                                            f"{where}.ephemeral"))
    if kind == "set":
        return SetData(path, _data(d.get("data", ""), f"{where}.data"),
                       _version(d.get("version", ANY_VERSION), f"{where}.version"))
    if kind == "delete":
        return Delete(path, _version(d.get("version", ANY_VERSION), f"{where}.version"))
    return Check(path, _version(d["version"], f"{where}.version"))


def parse_request(obj: Any) -> StoreRequest:
    """A :class:`StoreRequest` from a decoded frame, or :class:`BadRequest`."""
    if not isinstance(obj, dict) or obj.get("type") != "StoreRequest":
        raise BadRequest("", "not a StoreRequest")
    rid = obj.get("id")
    if isinstance(rid, bool) or not isinstance(rid, int) or not 0 <= rid < 1 << 63:
        raise BadRequest("", f"id: expected a non-negative integer, got {short_repr(rid)}")
    op = obj.get("op")
    if not isinstance(op, str) or op not in _REQUEST_FIELDS:
        raise BadRequest("", f"unknown store request {short_repr(op)}")
    spec = _REQUEST_FIELDS[op]
    _fields(obj, spec, {"type", "id", "op"}, op)
    if op == "multi":
        ops = obj["ops"]
        if not isinstance(ops, list):
            raise BadRequest("", f"multi.ops: expected a list of ops, got {short_repr(ops)}")
        return StoreRequest(rid, op, ops=tuple(parse_op(d, f"multi.ops[{i}]") for i, d in enumerate(ops)))
    path = _path(obj["path"], f"{op}.path")
    return StoreRequest(
        rid, op, path,
        data=_data(obj.get("data", ""), f"{op}.data"),
        ephemeral=_bool(obj.get("ephemeral", False), f"{op}.ephemeral"),
        makepath=_bool(obj.get("makepath", False), f"{op}.makepath"),
        watch=_bool(obj.get("watch", False), f"{op}.watch"),
        version=_version(obj.get("version", ANY_VERSION), f"{op}.version"),
    )


__all__ = ["MAX_PATH", "VERSION_MAX", "BadRequest", "StoreRequest", "parse_op", "parse_request", "request_id"]
