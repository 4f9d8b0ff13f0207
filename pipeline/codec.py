"""A lossless, validating encoding of model states as bytes, without pickle.

States travel through Spark and sit in Parquet files, so they must survive a round trip through
bytes, and bytes read back from disk are never trusted: decoding them must not be able to run code
or build arbitrary objects. A model state is a tree of NamedTuples, tuples, ints, bools and
``None`` (ARCHITECTURE.md, "State representation"), so:

- **encoding** is ``json.dumps`` of the state: NamedTuples and tuples become JSON arrays, ints
  (IntEnums included) numbers, bools ``true``/``false``, ``None`` ``null``. It runs in C.
- **decoding** is driven by the state classes' type annotations (read once with
  ``typing.get_type_hints`` and compiled into one small function per class). Each array is checked
  against the annotation (its arity, its leaves are ints or bools, ``X | None`` is ``null`` or an
  ``X``, a union of NamedTuples is told apart by arity) and rebuilt as the annotated class; only the
  classes reachable from the root annotation can ever be built. Anything else is a
  :class:`CodecError`.

Fields whose annotation says ``int`` but whose values are IntEnum members (the controller's
partition and replica states) are declared with ``enums=``: their values are rebuilt as members of
that enum, and a value outside it is an error. ``decode(encode(s)) == s`` and, since ints, bools and
tuples hash by value, ``hash(decode(encode(s))) == hash(s)``: the fingerprint survives the round trip.

:attr:`StateCodec.signature` digests the schema; files written under one signature are refused
under another (the state classes changed in between).
"""
from __future__ import annotations

import enum
import hashlib
import json
import types
import typing
from collections.abc import Mapping
from typing import Any

__all__ = ["CodecError", "StateCodec", "kafka_codec"]

MAX_BYTES = 1 << 20  # no state of this project's models comes near this


class CodecError(ValueError):
    """Bytes that do not encode a state of the codec's schema."""


_LEAF_TYPES = frozenset({int, bool})
_ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False, allow_nan=False)


def _is_namedtuple(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_make")


def _bad(what: str, value: Any) -> typing.NoReturn:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    raise CodecError(f"expected {what}, got {text}")


def _ints(v: Any) -> tuple:
    if type(v) is not list or not _LEAF_TYPES.issuperset(map(type, v)):
        _bad("a list of ints", v)
    return tuple(v)


def _list(v: Any) -> list:
    if type(v) is not list:
        _bad("a list", v)
    return v


class StateCodec:
    """Encoder and validating decoder for one root NamedTuple class and everything it contains.

    ``enums`` maps ``(ClassName, field)`` to the IntEnum whose members that field's ints (at any
    depth of tuples) are.
    """

    def __init__(self, root: type, enums: Mapping[tuple[str, str], type[enum.IntEnum]] | None = None) -> None:
        if not _is_namedtuple(root):
            raise TypeError(f"{root!r} is not a NamedTuple class")
        self.root = root
        self._enums = dict(enums or {})
        self._lines: list[str] = []
        self._env: dict[str, Any] = {"_bad": _bad, "_ints": _ints, "_list": _list, "_LEAF": _LEAF_TYPES,
                                     "CodecError": CodecError}
        self._shape_fn: dict[str, str] = {}
        self._classes: dict[type, str] = {}
        self._schema: list[Any] = []
        root_fn = self._class_fn(root)
        for (cname, fname), e in self._enums.items():
            if not any(c.__name__ == cname and fname in c._fields for c in self._classes):
                raise TypeError(f"enums: no field {cname}.{fname} in the schema")
            if not (isinstance(e, type) and issubclass(e, enum.IntEnum)):
                raise TypeError(f"enums: {e!r} is not an IntEnum")
        source = "\n".join(self._lines)
        exec(compile(source, f"<codec {root.__name__}>", "exec"), self._env)  # noqa: S102 - our own generated source
        self._source = source
        self._decode_root = self._env[root_fn]
        #: a digest of the schema: two codecs with the same signature read each other's bytes
        self.signature = hashlib.sha256(json.dumps(self._schema, sort_keys=True).encode()).hexdigest()[:16]

    # ------------------------------------------------------------------ compiling the decoder
    def _name(self, prefix: str) -> str:
        return f"{prefix}{len(self._shape_fn) + len(self._classes)}"

    def _class_fn(self, cls: type) -> str:
        if cls in self._classes:
            return self._classes[cls]
        name = f"_d_{cls.__name__}_{len(self._classes)}"
        self._classes[cls] = name
        self._env[name + "_cls"] = cls
        hints = typing.get_type_hints(cls)
        fields = list(cls._fields)
        exprs: list[str] = []
        leaves: list[int] = []
        schema_fields = []
        for i, f in enumerate(fields):
            ann = hints.get(f, Any)
            enum_cls = self._enums.get((cls.__name__, f))
            schema_fields.append([f, self._ann_text(ann), enum_cls.__name__ if enum_cls else None])
            if ann in (int, bool) and enum_cls is None:
                leaves.append(i)
                exprs.append(f"x[{i}]")
            else:
                expr = self._expr(ann, f"x[{i}]", enum_cls, f"{cls.__name__}.{f}")
                # A field whose default says "unset" differently from its annotation (``answer:
                # tuple[int, int] = ()``, ``x: Foo = None``) may hold that default as well.
                if f in cls._field_defaults:
                    default = cls._field_defaults[f]
                    if default == () and type(default) is tuple and not expr.startswith("_ints("):
                        expr = f"(() if x[{i}] == [] else {expr})"
                    elif default is None and not expr.startswith("(None if"):
                        expr = f"(None if x[{i}] is None else {expr})"
                exprs.append(expr)
        self._schema.append([cls.__name__, schema_fields])
        n = len(fields)
        lines = [f"def {name}(x):",
                 f"    if type(x) is not list or len(x) != {n}:",
                 f"        _bad('a {cls.__name__} ({n} fields)', x)"]
        if leaves:
            getter = ", ".join(f"x[{i}]" for i in leaves) + ("," if len(leaves) == 1 else "")
            lines += [f"    if not _LEAF.issuperset(map(type, ({getter}))):",
                      f"        _bad('ints in {cls.__name__}', x)"]
        lines.append(f"    return {name}_cls({', '.join(exprs)})")
        self._lines.append("\n".join(lines))
        return name

    @staticmethod
    def _ann_text(ann: Any) -> str:
        return getattr(ann, "__name__", None) if isinstance(ann, type) else str(ann).replace("isrcheck.model.state.", "")

    def _expr(self, ann: Any, v: str, enum_cls: type | None, where: str) -> str:
        """A Python expression that decodes the value ``v`` of annotation ``ann``."""
        if ann is int or ann is bool:
            if enum_cls is not None:
                fn = self._enum_fn(enum_cls)
                return f"{fn}({v})"
            return f"({v} if type({v}) in _LEAF else _bad('an int', {v}))"
        if _is_namedtuple(ann):
            return f"{self._class_fn(ann)}({v})"
        origin = typing.get_origin(ann)
        args = typing.get_args(ann)
        if origin in (typing.Union, types.UnionType):
            members = [a for a in args if a is not type(None)]
            optional = len(members) != len(args)
            if len(members) == 1:
                inner = self._expr(members[0], v, enum_cls, where)
            else:
                inner = self._union_fn(members, where) + f"({v})"
            return f"(None if {v} is None else {inner})" if optional else inner
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                item = args[0]
                if item is int and enum_cls is None:
                    return f"_ints({v})"
                fn = self._seq_fn(item, enum_cls, where)
                return f"{fn}({v})"
            fn = self._fixed_fn(args, enum_cls, where)
            return f"{fn}({v})"
        raise TypeError(f"codec: cannot decode {where}: unsupported annotation {ann!r}")

    def _enum_fn(self, e: type[enum.IntEnum]) -> str:
        key = f"enum:{e.__module__}.{e.__qualname__}"
        if key not in self._shape_fn:
            name = self._name("_e")
            self._shape_fn[key] = name
            self._env[name + "_map"] = {int(m): m for m in e}
            self._lines.append(
                f"def {name}(v):\n"
                f"    m = {name}_map.get(v) if type(v) is int else None\n"
                f"    if m is None:\n"
                f"        _bad('a {e.__name__}', v)\n"
                f"    return m")
        return self._shape_fn[key]

    def _seq_fn(self, item: Any, enum_cls: type | None, where: str) -> str:
        key = f"seq:{item!r}:{enum_cls!r}"
        if key not in self._shape_fn:
            name = self._name("_s")
            self._shape_fn[key] = name
            inner = self._expr(item, "e", enum_cls, where + "[]")
            self._lines.append(f"def {name}(v):\n    return tuple([{inner} for e in _list(v)])")
        return self._shape_fn[key]

    def _fixed_fn(self, items: tuple, enum_cls: type | None, where: str) -> str:
        key = f"fixed:{items!r}:{enum_cls!r}"
        if key not in self._shape_fn:
            name = self._name("_f")
            self._shape_fn[key] = name
            exprs = [self._expr(a, f"v[{i}]", enum_cls, f"{where}[{i}]") for i, a in enumerate(items)]
            n = len(items)
            self._lines.append(
                f"def {name}(v):\n"
                f"    if type(v) is not list or len(v) != {n}:\n"
                f"        _bad('a list of {n}', v)\n"
                f"    return ({', '.join(exprs)}{',' if n == 1 else ''})")
        return self._shape_fn[key]

    def _union_fn(self, members: list[Any], where: str) -> str:
        if not all(_is_namedtuple(m) for m in members):
            raise TypeError(f"codec: {where}: only unions of NamedTuples (and None) are supported")
        arities = [len(m._fields) for m in members]
        if len(set(arities)) != len(arities):
            raise TypeError(f"codec: {where}: union members must differ in arity to be told apart")
        key = f"union:{members!r}"
        if key not in self._shape_fn:
            name = self._name("_u")
            self._shape_fn[key] = name
            branches = "".join(f"        if n == {n}:\n            return {self._class_fn(m)}(v)\n"
                               for n, m in zip(arities, members))
            self._lines.append(
                f"def {name}(v):\n"
                f"    if type(v) is list:\n"
                f"        n = len(v)\n{branches}"
                f"    _bad('one of {'/'.join(m.__name__ for m in members)}', v)")
        return self._shape_fn[key]

    # ------------------------------------------------------------------ public
    def encode(self, state: Any) -> bytes:
        """The state as compact JSON bytes (every NamedTuple an array in field order)."""
        try:
            return _ENCODER.encode(state).encode("ascii")
        except (TypeError, ValueError) as e:
            raise CodecError(f"cannot encode the state: {e}") from None

    def decode(self, data: bytes | bytearray | memoryview) -> Any:
        """The state encoded in ``data``; :class:`CodecError` unless it is a valid encoding."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise CodecError(f"expected bytes, got {type(data).__name__}")
        if len(data) > MAX_BYTES:
            raise CodecError(f"encoded state too large ({len(data)} bytes)")
        try:
            raw = json.loads(bytes(data))
            return self._decode_root(raw)
        except CodecError:
            raise
        except RecursionError:
            raise CodecError("not an encoded state: nested too deeply") from None
        except (ValueError, UnicodeDecodeError, TypeError) as e:
            raise CodecError(f"not an encoded state: {e}") from None


_KAFKA: StateCodec | None = None


def kafka_codec() -> StateCodec:
    """The codec of :class:`isrcheck.model.state.State`, with the controller's partition and
    replica states rebuilt as :class:`PartitionState` and :class:`ReplicaState` members."""
    global _KAFKA
    if _KAFKA is None:
        from isrcheck.model.state import State
        from isrcheck.model.tables import PartitionState, ReplicaState

        _KAFKA = StateCodec(State, enums={
            ("Controller", "partition_states"): PartitionState,
            ("Controller", "replica_states"): ReplicaState,
        })
    return _KAFKA
