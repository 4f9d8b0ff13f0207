"""A compact, validating binary encoding of model states, without pickle.

States cross process boundaries (the parallel checker's workers, Spark's Python workers) and sit
in Parquet files, so they must survive a round trip through bytes, and bytes read back are never
trusted: decoding cannot run code or build anything but the schema's own classes.

A state is a tree of NamedTuples, tuples, ints, bools and ``None`` (ARCHITECTURE.md, "State
representation"). :class:`StateCodec` reads the root class's type annotations once and compiles
them into a flat program: one ``(opcode, argument)`` pair per field of each NamedTuple class,
walked by a tight loop that handles the leaves (ints, bools, enums, tuples of ints) inline and
only recurses into nested NamedTuples, optionals, unions and tuples of those. Supported
annotations: ``int``, ``bool``, NamedTuple classes, ``tuple[X, ...]``, ``tuple[X, Y]``,
``X | None`` and unions of NamedTuple classes (a tag byte says which). Fields whose ``int`` values
are IntEnum members are declared with ``enums=`` and come back as members; a field with the
default ``()`` or ``None`` beside another annotation may also hold that default.

Layout: a header of 11 bytes (``MAGIC``, 3 bytes with the format version, then the 8 bytes of the
schema signature), then the values depth first, in field order, each int as one byte when it is
in ``0..223``, one byte ``0xE0..0xEF`` for ``-16..-1``, else a byte ``0xF0 + n`` and ``n`` (1 to
8) bytes of little-endian two's complement (the shortest form; ints are 64-bit signed at most).
Bools are one byte 0/1, ``None``/present and union members a tag byte, variable tuples a length
before their items. ``decode`` checks everything (header, tags, bools, enum values, lengths against
the remaining bytes, trailing bytes, the shortest int form) and raises :class:`CodecError`, a
``ValueError``, with one line saying what is wrong. ``decode(encode(s)) == s`` with the very same
types (classes, IntEnum members, bools, ``None``), so ``hash`` survives the round trip; equal
states have equal encodings, so :func:`digest` of the bytes is a process-independent fingerprint.

The module is plain typed Python so that mypyc can compile it. It imports nothing of the project
but the package root (a model's own codec, such as the Kafka model's ``model/statecodec.py``, is
built from it). In the compiled build the same program also
runs in C (``engine/_codec.c``, built from this codec's tables): it answers every valid state and
encoding and answers None for anything else, and then the program here runs on the same input and
raises the error (or, should the C engine ever refuse something valid, gives the answer slowly).
So the Python program stays the definition of the format; tests/model/test_codec_engine.py holds
the two to the same answers.
"""
from __future__ import annotations

import ast
import enum
import hashlib
import importlib
import json
import os
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["CodecError", "StateCodec", "digest", "MAGIC", "HEADER_SIZE", "MAX_BYTES"]

MAGIC: Final = b"IS\x01"  # isrcheck state, format 1
HEADER_SIZE: Final = len(MAGIC) + 8
MAX_BYTES: Final = 1 << 22  # no state of this project's models comes near this

# opcodes
OP_INT: Final = 0
OP_BOOL: Final = 1
OP_ENUM: Final = 2  # arg: enum index
OP_INTS: Final = 3  # tuple[int, ...]
OP_ENUMS: Final = 4  # tuple[enum, ...]; arg: enum index
OP_STRUCT: Final = 5  # arg: class index
OP_OPT: Final = 6  # X | None; arg: node of X
OP_SEQ: Final = 7  # tuple[X, ...]; arg: node of X
OP_FIXED: Final = 8  # tuple[X, Y, ...]; arg: index into the fixed-tuple table
OP_UNION: Final = 9  # A | B | ...; arg: index into the union table
OP_EMPTY_OR: Final = 10  # () or X (a field defaulting to ()); arg: node of X
OP_INTRUN: Final = 11  # in a class's program only: this many consecutive int fields
# specialised forms of the above, chosen once the schema is compiled (the same bytes)
OP_FIXINTS: Final = 12  # tuple[int, int, ...]; arg: arity
OP_SEQ_STRUCT: Final = 13  # tuple[C, ...]; arg: class index
OP_SEQ_INTS: Final = 14  # tuple[tuple[int, ...], ...]
OP_SEQ_OPT_STRUCT: Final = 15  # tuple[C | None, ...]; arg: class index
OP_SEQ_FIXINTS: Final = 16  # tuple[tuple[int, int], ...]; arg: arity
OP_OPT_STRUCT: Final = 17  # C | None; arg: class index

SHORT_MAX: Final = 0xE0  # ints 0..223 are one byte
NEG_BASE: Final = 0xF0  # bytes 0xE0..0xEF are -16..-1
_TUPLE_NEW: Final = tuple.__new__


class CodecError(ValueError):
    """Bytes that do not encode a state of the codec's schema (or a value that cannot be encoded)."""


def digest(data: bytes) -> int:
    """A signed 64-bit BLAKE2b digest of ``data``: the same in every process and on every machine."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def _is_namedtuple(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_make")


def _source_hints(cls: Any) -> dict[str, Any]:
    """The annotations of ``cls`` read from its module's source, for classes whose runtime
    annotations were erased (mypyc compiles ``tuple[int, ...]`` to ``tuple`` and a NamedTuple
    annotation to ``type``)."""
    mod = sys.modules.get(cls.__module__) or importlib.import_module(cls.__module__)
    parent, _, leaf = cls.__module__.rpartition(".")
    dirs: list[str] = list(getattr(sys.modules.get(parent), "__path__", None) or []) if parent else list(sys.path)
    path = getattr(mod, "__file__", None) or ""
    if path:
        dirs.append(os.path.dirname(path))
    src = ""
    for d in dirs:
        if os.path.exists(os.path.join(d, leaf + ".py")):
            src = os.path.join(d, leaf)
            break
    if not src:
        raise TypeError(f"codec: the annotations of {cls.__qualname__} are erased and its source is not found")
    with open(src + ".py", encoding="utf-8") as f:
        tree = ast.parse(f.read())
    texts: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    texts[item.target.id] = ast.unparse(item.annotation)
            break
    holder = types.new_class(cls.__name__, (), {})
    holder.__annotations__ = texts
    holder.__module__ = cls.__module__
    return typing.get_type_hints(holder, globalns=vars(mod))


def _hints(cls: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    if any(h is type or h is tuple or h is typing.Any for h in hints.values()) or len(hints) < len(cls._fields):
        hints = _source_hints(cls)
    return hints


class StateCodec:
    """Encoder and validating decoder for one root NamedTuple class and everything it contains.

    ``enums`` maps ``(ClassName, field)`` to the IntEnum whose members that field's ints (at any
    depth of tuples) are. :attr:`signature` (16 hex digits) digests the schema: two codecs with the
    same signature read each other's bytes, any other codec refuses them.
    """

    def __init__(self, root: type, enums: Mapping[tuple[str, str], type[enum.IntEnum]] | None = None,
                 *, native: bool = True) -> None:
        if not _is_namedtuple(root):
            raise TypeError(f"{root!r} is not a NamedTuple class")
        self.root: type = root
        self._enum_decl: dict[tuple[str, str], Any] = dict(enums or {})
        for e in self._enum_decl.values():
            if not (isinstance(e, type) and issubclass(e, enum.IntEnum)):
                raise TypeError(f"enums: {e!r} is not an IntEnum")
        self._nodes: list[tuple[int, int]] = []
        self._node_keys: dict[str, int] = {}
        self._node_text: list[str] = []
        self._node_min: list[int] = []
        self._classes: list[Any] = []
        self._class_index: dict[Any, int] = {}
        self._progs: list[list[tuple[int, int]]] = []
        self._class_text: list[Any] = []
        self._enums: list[Any] = []
        self._enum_maps: list[dict[int, Any]] = []
        self._enum_index: dict[Any, int] = {}
        self._fixed: list[list[int]] = []
        self._unions: list[list[int]] = []  # member class indexes, tag order
        self._union_tags: list[dict[Any, int]] = []  # member class -> tag
        self._root_index = self._class(root)
        self._ops: list[tuple[int, int]] = [self._special(nid) for nid in range(len(self._nodes))]
        for prog in self._progs:
            for k in range(len(prog)):
                op, a = prog[k]
                if op not in (OP_INT, OP_BOOL, OP_ENUM, OP_INTS, OP_INTRUN):
                    sop, sa = self._ops[a]
                    prog[k] = (OP_STRUCT, sa) if sop == OP_STRUCT else (sop, a)
        for cname, fname in self._enum_decl:
            if not any(c.__name__ == cname and fname in c._fields for c in self._classes):
                raise TypeError(f"enums: no field {cname}.{fname} in the schema")
        text = json.dumps(["isrcheck-state-codec", 1, root.__name__, self._class_text], separators=(",", ":"))
        raw = hashlib.blake2b(text.encode(), digest_size=8).digest()
        #: the schema's digest as 16 hex digits (recorded by run directories and corpora)
        self.signature: str = raw.hex()
        #: the bytes that start every encoding of this codec
        self.header: bytes = MAGIC + raw
        self.schema_text: str = text
        #: the same program run in C (engine/_codec.c), when built and wanted (``native``): it
        #: answers every valid state and encoding, and leaves everything else to the program here
        self._engine: Any = self._native_engine() if native else None

    def _native_engine(self) -> Any:
        from isrcheck import native

        if not native.compiled_wanted():
            return None
        try:
            from ._codec import CodecEngine
        except ImportError:  # a pure install (ISRCHECK_BUILD_PURE=1)
            return None
        return CodecEngine(self.header, self._root_index, [list(p) for p in self._progs], list(self._ops),
                           list(self._classes), list(self._enums), list(self._enum_maps),
                           [list(f) for f in self._fixed], [list(u) for u in self._unions], list(self._node_min),
                           MAX_BYTES)

    @property
    def native(self) -> bool:
        """Whether this codec runs its program in C (engine/_codec.c)."""
        return self._engine is not None

    @property
    def classes(self) -> tuple[type, ...]:
        """Every NamedTuple class the codec can build."""
        return tuple(self._classes)

    # ------------------------------------------------------------------ compiling the schema
    def _class(self, cls: Any) -> int:
        if cls in self._class_index:
            return self._class_index[cls]
        ci = len(self._classes)
        self._classes.append(cls)
        self._class_index[cls] = ci
        self._progs.append([])
        self._class_text.append(None)
        hints = _hints(cls)
        prog: list[tuple[int, int]] = []
        fields_text: list[list[str]] = []
        for f in cls._fields:
            if f not in hints:
                raise TypeError(f"codec: {cls.__name__}.{f} has no annotation")
            ann = hints[f]
            enum_cls = self._enum_decl.get((cls.__name__, f))
            where = f"{cls.__name__}.{f}"
            nid = self._node(ann, enum_cls, where)
            if f in cls._field_defaults:
                default = cls._field_defaults[f]
                op = self._nodes[nid][0]
                if type(default) is tuple and default == () and op == OP_FIXED:
                    nid = self._add_node(OP_EMPTY_OR, nid, f"emptyor({self._node_text[nid]})", 1)
                elif default is None and op != OP_OPT:
                    nid = self._add_node(OP_OPT, nid, f"opt({self._node_text[nid]})", 1)
            fields_text.append([f, self._node_text[nid]])
            op, arg = self._nodes[nid]
            # leaves carry their own argument; composite fields carry their node
            prog.append((op, arg) if op in (OP_INT, OP_BOOL, OP_ENUM, OP_INTS) else (op, nid))
        self._progs[ci] = _runs(prog)
        self._class_text[ci] = [cls.__name__, fields_text]
        return ci

    def _special(self, nid: int) -> tuple[int, int]:
        op, a = self._nodes[nid]
        if op == OP_FIXED and all(self._nodes[i][0] == OP_INT for i in self._fixed[a]):
            return OP_FIXINTS, len(self._fixed[a])
        if op == OP_OPT and self._nodes[a][0] == OP_STRUCT:
            return OP_OPT_STRUCT, self._nodes[a][1]
        if op == OP_SEQ:
            iop, ia = self._special(a)
            if iop == OP_STRUCT:
                return OP_SEQ_STRUCT, ia
            if iop == OP_INTS:
                return OP_SEQ_INTS, 0
            if iop == OP_OPT_STRUCT:
                return OP_SEQ_OPT_STRUCT, ia
            if iop == OP_FIXINTS:
                return OP_SEQ_FIXINTS, ia
        return op, a

    def _add_node(self, op: int, arg: int, text: str, min_size: int) -> int:
        key = f"{op}:{arg}:{text}"
        if key in self._node_keys:
            return self._node_keys[key]
        nid = len(self._nodes)
        self._nodes.append((op, arg))
        self._node_text.append(text)
        self._node_min.append(min_size)
        self._node_keys[key] = nid
        return nid

    def _enum(self, e: Any) -> int:
        if e not in self._enum_index:
            self._enum_index[e] = len(self._enums)
            self._enums.append(e)
            self._enum_maps.append({int(m): m for m in e})
        return self._enum_index[e]

    @staticmethod
    def _enum_text(e: Any) -> str:
        return e.__name__ + "{" + ",".join(f"{m.name}={int(m)}" for m in e) + "}"

    def _node(self, ann: Any, enum_cls: Any, where: str) -> int:
        if ann is bool:
            if enum_cls is not None:
                raise TypeError(f"codec: {where}: a bool cannot be an enum")
            return self._add_node(OP_BOOL, 0, "bool", 1)
        if ann is int:
            if enum_cls is not None:
                ei = self._enum(enum_cls)
                return self._add_node(OP_ENUM, ei, self._enum_text(enum_cls), 1)
            return self._add_node(OP_INT, 0, "int", 1)
        if _is_namedtuple(ann):
            ci = self._class(ann)
            return self._add_node(OP_STRUCT, ci, ann.__name__, len(ann._fields) and 1)
        origin = typing.get_origin(ann)
        args = typing.get_args(ann)
        if origin is typing.Union or origin is types.UnionType:
            members = [a for a in args if a is not type(None)]
            optional = len(members) != len(args)
            if len(members) == 1:
                inner = self._node(members[0], enum_cls, where)
            else:
                if not all(_is_namedtuple(m) for m in members):
                    raise TypeError(f"codec: {where}: only unions of NamedTuples (and None) are supported")
                if len(set(members)) != len(members) or len({len(m._fields) for m in members}) != len(members):
                    raise TypeError(f"codec: {where}: union members must differ in arity to be told apart")
                cis = [self._class(m) for m in members]
                ui = len(self._unions)
                self._unions.append(cis)
                self._union_tags.append({m: t for t, m in enumerate(members)})
                inner = self._add_node(OP_UNION, ui, "union(" + "|".join(m.__name__ for m in members) + ")", 1)
            if optional:
                return self._add_node(OP_OPT, inner, f"opt({self._node_text[inner]})", 1)
            return inner
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                item = args[0]
                if item is int:
                    if enum_cls is not None:
                        ei = self._enum(enum_cls)
                        return self._add_node(OP_ENUMS, ei, f"seq({self._enum_text(enum_cls)})", 1)
                    return self._add_node(OP_INTS, 0, "seq(int)", 1)
                inner = self._node(item, enum_cls, where + "[]")
                return self._add_node(OP_SEQ, inner, f"seq({self._node_text[inner]})", 1)
            if not args or args == ((),):
                raise TypeError(f"codec: {where}: empty tuple annotations are not supported")
            items = [self._node(a, enum_cls, f"{where}[{i}]") for i, a in enumerate(args)]
            fi = len(self._fixed)
            self._fixed.append(items)
            return self._add_node(OP_FIXED, fi, "fixed(" + ",".join(self._node_text[i] for i in items) + ")",
                                  sum(self._node_min[i] for i in items))
        raise TypeError(f"codec: {where}: unsupported annotation {ann!r}")

    # ------------------------------------------------------------------ encoding
    def encode(self, state: Any) -> bytes:
        """The state as bytes (header, then the values depth first)."""
        if self._engine is not None:
            done = self._engine.encode(state)
            if done is not None:
                return done  # type: ignore[no-any-return]
        if type(state) is not self.root:
            raise CodecError(f"cannot encode a {type(state).__name__}: expected a {self.root.__name__}")
        out: list[int] = list(self.header)
        self._enc_struct(self._root_index, state, out)
        return bytes(out)

    def fingerprint(self, state: Any) -> int:
        """:func:`digest` of the state's encoding."""
        return digest(self.encode(state))

    def _enc_struct(self, ci: int, s: Any, out: list[int]) -> None:
        cls = self._classes[ci]
        if type(s) is not cls:
            raise CodecError(f"cannot encode {_short(s)}: expected a {cls.__name__}")
        v: tuple[Any, ...] = s
        i = 0
        for op, a in self._progs[ci]:
            if op == OP_INTRUN:
                if not _put_ints(v, i, i + a, out):
                    raise CodecError(f"cannot encode {_short(v)}: expected ints in {cls.__name__}.{cls._fields[i]}..")
                i += a
                continue
            x = v[i]
            i += 1
            if op == OP_INT:
                if type(x) is not int:
                    raise CodecError(f"cannot encode {_short(x)} in {cls.__name__}.{cls._fields[i - 1]}: expected an int")
                xi: int = x
                if 0 <= xi < SHORT_MAX:
                    out.append(xi)
                else:
                    _put_long(xi, out)
            elif op == OP_STRUCT:
                self._enc_struct(a, x, out)
            elif op == OP_INTS:
                if type(x) is not tuple:
                    raise CodecError(f"cannot encode {_short(x)} in {cls.__name__}.{cls._fields[i - 1]}: expected a tuple")
                if not x:
                    out.append(0)
                else:
                    self._enc_ints(x, out)
            elif op == OP_BOOL:
                if x is True:
                    out.append(1)
                elif x is False:
                    out.append(0)
                else:
                    raise CodecError(f"cannot encode {_short(x)} in {cls.__name__}.{cls._fields[i - 1]}: expected a bool")
            elif op == OP_ENUM:
                self._enc_enum(a, x, out)
            else:
                self._enc(a, x, out)

    def _enc_ints(self, x: tuple[Any, ...], out: list[int]) -> None:
        n = len(x)
        _put_len(n, out)
        if n and not _put_ints(x, 0, n, out):
            raise CodecError(f"cannot encode {_short(x)}: expected a tuple of ints")

    def _enc_fixints(self, k: int, x: Any, out: list[int]) -> None:
        if type(x) is not tuple or len(x) != k or not _put_ints(x, 0, k, out):
            raise CodecError(f"cannot encode {_short(x)}: expected a tuple of {k} ints")

    def _enc_enum(self, ei: int, x: Any, out: list[int]) -> None:
        e = self._enums[ei]
        if (type(x) is not e and type(x) is not int) or x not in self._enum_maps[ei]:
            raise CodecError(f"cannot encode {_short(x)}: expected a {e.__name__}")
        w = int(x)
        if 0 <= w < SHORT_MAX:
            out.append(w)
        else:
            _put_long(w, out)

    def _enc(self, nid: int, x: Any, out: list[int]) -> None:
        op, a = self._ops[nid]
        if op == OP_SEQ_STRUCT or op == OP_SEQ_OPT_STRUCT or op == OP_SEQ_INTS or op == OP_SEQ_FIXINTS:
            if type(x) is not tuple:
                raise CodecError(f"cannot encode {_short(x)}: expected a tuple")
            n = len(x)
            _put_len(n, out)
            if op == OP_SEQ_STRUCT:
                for y in x:
                    self._enc_struct(a, y, out)
            elif op == OP_SEQ_OPT_STRUCT:
                for y in x:
                    if y is None:
                        out.append(0)
                    else:
                        out.append(1)
                        self._enc_struct(a, y, out)
            elif op == OP_SEQ_INTS:
                for y in x:
                    if type(y) is not tuple:
                        raise CodecError(f"cannot encode {_short(y)}: expected a tuple")
                    if not y:
                        out.append(0)
                    else:
                        self._enc_ints(y, out)
            else:
                for y in x:
                    self._enc_fixints(a, y, out)
        elif op == OP_STRUCT:
            self._enc_struct(a, x, out)
        elif op == OP_OPT_STRUCT:
            if x is None:
                out.append(0)
            else:
                out.append(1)
                self._enc_struct(a, x, out)
        elif op == OP_FIXINTS:
            self._enc_fixints(a, x, out)
        elif op == OP_OPT:
            if x is None:
                out.append(0)
            else:
                out.append(1)
                self._enc(a, x, out)
        elif op == OP_SEQ:
            if type(x) is not tuple:
                raise CodecError(f"cannot encode {_short(x)}: expected a tuple")
            n = len(x)
            _put_len(n, out)
            for y in x:
                self._enc(a, y, out)
        elif op == OP_INTS:
            if type(x) is not tuple:
                raise CodecError(f"cannot encode {_short(x)}: expected a tuple")
            self._enc_ints(x, out)
        elif op == OP_ENUMS:
            if type(x) is not tuple:
                raise CodecError(f"cannot encode {_short(x)}: expected a tuple")
            n = len(x)
            _put_len(n, out)
            for y in x:
                self._enc_enum(a, y, out)
        elif op == OP_UNION:
            tag = self._union_tags[a].get(type(x), -1)
            if tag < 0:
                names = "/".join(self._classes[c].__name__ for c in self._unions[a])
                raise CodecError(f"cannot encode {_short(x)}: expected one of {names}")
            out.append(tag)
            self._enc_struct(self._unions[a][tag], x, out)
        elif op == OP_FIXED:
            items = self._fixed[a]
            if type(x) is not tuple or len(x) != len(items):
                raise CodecError(f"cannot encode {_short(x)}: expected a tuple of {len(items)}")
            for k in range(len(items)):
                self._enc(items[k], x[k], out)
        elif op == OP_EMPTY_OR:
            if type(x) is tuple and len(x) == 0:
                out.append(0)
            else:
                out.append(1)
                self._enc(a, x, out)
        elif op == OP_INT:
            if type(x) is not int:
                raise CodecError(f"cannot encode {_short(x)}: expected an int")
            if 0 <= x < SHORT_MAX:
                out.append(x)
            else:
                _put_long(x, out)
        elif op == OP_BOOL:
            if x is True:
                out.append(1)
            elif x is False:
                out.append(0)
            else:
                raise CodecError(f"cannot encode {_short(x)}: expected a bool")
        elif op == OP_ENUM:
            self._enc_enum(a, x, out)
        else:  # pragma: no cover - the compiler makes no other node
            raise AssertionError(op)

    # ------------------------------------------------------------------ decoding
    def decode(self, data: Any) -> Any:
        """The state encoded in ``data``; :class:`CodecError` unless it is a valid encoding."""
        if self._engine is not None:
            state = self._engine.decode(data)
            if state is not None:
                return state
        if type(data) is not bytes:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise CodecError(f"cannot decode a {type(data).__name__}: expected bytes")
            data = bytes(data)
        d: bytes = data
        n = len(d)
        if n > MAX_BYTES:
            raise CodecError(f"encoded state too large ({n} bytes, at most {MAX_BYTES})")
        if d[:HEADER_SIZE] != self.header:
            self._bad_header(d)
        try:
            state, p = self._dec_struct(self._root_index, d, HEADER_SIZE)
        except IndexError:
            raise CodecError(f"truncated encoded state ({n} bytes)") from None
        except RecursionError:
            raise CodecError("encoded state nested too deeply") from None
        if p != n:
            raise CodecError(f"{n - p} trailing bytes after the encoded state (at byte {p})")
        return state

    def _bad_header(self, d: bytes) -> None:
        if len(d) < len(MAGIC) or d[:len(MAGIC)] != MAGIC:
            if MAGIC.startswith(d[:len(MAGIC)]) and len(d) < len(MAGIC):
                raise CodecError(f"truncated encoded state ({len(d)} bytes)")
            raise CodecError(f"not an encoded isrcheck state (starts {d[:len(MAGIC)]!r}, expected {MAGIC!r})")
        sig = d[len(MAGIC):HEADER_SIZE]
        if len(sig) < 8:
            raise CodecError(f"truncated encoded state ({len(d)} bytes)")
        raise CodecError(f"encoded state of another schema (codec signature {sig.hex()}, "
                         f"this {self.root.__name__} codec is {self.signature})")

    def _dec_struct(self, ci: int, d: bytes, p: int) -> tuple[Any, int]:
        vals: list[Any] = []
        for op, a in self._progs[ci]:
            if op == OP_INTRUN:
                for _ in range(a):
                    w = d[p]
                    p += 1
                    if w >= SHORT_MAX:
                        w, p = _get_long(d, p, w)
                    vals.append(w)
            elif op == OP_INT:
                w = d[p]
                p += 1
                if w >= SHORT_MAX:
                    w, p = _get_long(d, p, w)
                vals.append(w)
            elif op == OP_STRUCT:
                x, p = self._dec_struct(a, d, p)
                vals.append(x)
            elif op == OP_INTS:
                if d[p] == 0:
                    vals.append(())
                    p += 1
                else:
                    ints, p = _dec_ints(d, p)
                    vals.append(ints)
            elif op == OP_BOOL:
                w = d[p]
                p += 1
                if w == 0:
                    vals.append(False)
                elif w == 1:
                    vals.append(True)
                else:
                    raise CodecError(f"invalid bool {w} at byte {p - 1}")
            elif op == OP_ENUM:
                e, p = self._dec_enum(a, d, p)
                vals.append(e)
            else:
                x, p = self._dec(a, d, p)
                vals.append(x)
        return _TUPLE_NEW(self._classes[ci], vals), p

    def _dec_enum(self, ei: int, d: bytes, p: int) -> tuple[Any, int]:
        w = d[p]
        p += 1
        if w >= SHORT_MAX:
            w, p = _get_long(d, p, w)
        m = self._enum_maps[ei].get(w)
        if m is None:
            raise CodecError(f"invalid {self._enums[ei].__name__} value {w} at byte {p - 1}")
        return m, p

    def _dec(self, nid: int, d: bytes, p: int) -> tuple[Any, int]:
        op, a = self._ops[nid]
        if op == OP_SEQ_STRUCT or op == OP_SEQ_OPT_STRUCT or op == OP_SEQ_INTS or op == OP_SEQ_FIXINTS:
            n = d[p]
            if n >= SHORT_MAX or n > len(d) - p:
                n, p = _dec_len(d, p, 1)
            else:
                p += 1
            items: list[Any] = []
            if op == OP_SEQ_STRUCT:
                for _ in range(n):
                    x, p = self._dec_struct(a, d, p)
                    items.append(x)
            elif op == OP_SEQ_OPT_STRUCT:
                for _ in range(n):
                    w = d[p]
                    p += 1
                    if w == 0:
                        items.append(None)
                    elif w == 1:
                        x, p = self._dec_struct(a, d, p)
                        items.append(x)
                    else:
                        raise CodecError(f"invalid presence tag {w} at byte {p - 1}")
            elif op == OP_SEQ_INTS:
                for _ in range(n):
                    if d[p] == 0:
                        items.append(())
                        p += 1
                    else:
                        x, p = _dec_ints(d, p)
                        items.append(x)
            else:
                for _ in range(n):
                    x, p = _dec_fixints(a, d, p)
                    items.append(x)
            return tuple(items), p
        if op == OP_STRUCT:
            return self._dec_struct(a, d, p)
        if op == OP_OPT_STRUCT:
            w = d[p]
            p += 1
            if w == 0:
                return None, p
            if w != 1:
                raise CodecError(f"invalid presence tag {w} at byte {p - 1}")
            return self._dec_struct(a, d, p)
        if op == OP_FIXINTS:
            return _dec_fixints(a, d, p)
        if op == OP_OPT or op == OP_EMPTY_OR:
            w = d[p]
            p += 1
            if w == 0:
                empty: Any = None if op == OP_OPT else ()
                return empty, p
            if w != 1:
                raise CodecError(f"invalid presence tag {w} at byte {p - 1}")
            return self._dec(a, d, p)
        if op == OP_SEQ:
            n, p = _dec_len(d, p, self._node_min[a])
            seq: list[Any] = []
            for _ in range(n):
                x, p = self._dec(a, d, p)
                seq.append(x)
            return tuple(seq), p
        if op == OP_INTS:
            return _dec_ints(d, p)
        if op == OP_ENUMS:
            n, p = _dec_len(d, p, 1)
            members: list[Any] = []
            for _ in range(n):
                e, p = self._dec_enum(a, d, p)
                members.append(e)
            return tuple(members), p
        if op == OP_UNION:
            tag = d[p]
            p += 1
            cis = self._unions[a]
            if tag >= len(cis):
                raise CodecError(f"invalid union tag {tag} at byte {p - 1}")
            return self._dec_struct(cis[tag], d, p)
        if op == OP_FIXED:
            vals: list[Any] = []
            for item in self._fixed[a]:
                x, p = self._dec(item, d, p)
                vals.append(x)
            return tuple(vals), p
        if op == OP_INT:
            w = d[p]
            p += 1
            if w >= SHORT_MAX:
                w, p = _get_long(d, p, w)
            return w, p
        if op == OP_BOOL:
            w = d[p]
            if w > 1:
                raise CodecError(f"invalid bool {w} at byte {p}")
            return w == 1, p + 1
        if op == OP_ENUM:
            return self._dec_enum(a, d, p)
        raise AssertionError(op)  # pragma: no cover - the compiler makes no other node


def _runs(prog: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``prog`` with every run of two or more int fields as one ``(OP_INTRUN, count)``."""
    out: list[tuple[int, int]] = []
    for op, a in prog:
        if op == OP_INT and out and out[-1][0] == OP_INTRUN:
            out[-1] = (OP_INTRUN, out[-1][1] + 1)
        elif op == OP_INT and out and out[-1][0] == OP_INT:
            out[-1] = (OP_INTRUN, 2)
        else:
            out.append((op, a))
    return out


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _put_ints(t: tuple[Any, ...], start: int, stop: int, out: list[int]) -> bool:
    """Append the ints ``t[start:stop]``; False (leaving ``out`` partly written) if one is not an int."""
    for k in range(start, stop):
        y = t[k]
        if type(y) is not int:
            return False
        yi: int = y
        if 0 <= yi < SHORT_MAX:
            out.append(yi)
        else:
            _put_long(yi, out)
    return True


def _put_len(n: int, out: list[int]) -> None:
    """A length: one byte when short, else as a long int (what ``_dec_len`` reads)."""
    if n < SHORT_MAX:
        out.append(n)
    else:
        _put_long(n, out)


def _put_long(x: int, out: list[int]) -> None:
    if -16 <= x < 0:
        out.append(x + NEG_BASE)
        return
    n = ((x if x >= 0 else ~x).bit_length() + 8) // 8
    if n > 8:
        raise CodecError(f"cannot encode {_short(x)}: ints are at most 64-bit")
    out.append(NEG_BASE + n)
    out.extend(x.to_bytes(n, "little", signed=True))


def _get_long(d: bytes, p: int, w: int) -> tuple[int, int]:
    """The int whose first byte ``w`` (at ``p - 1``) is not a short int."""
    if w < NEG_BASE:
        return w - NEG_BASE, p
    n = w - NEG_BASE
    if n < 1 or n > 8:
        raise CodecError(f"invalid int prefix {w:#x} at byte {p - 1}")
    if p + n > len(d):
        raise IndexError(p)
    x = int.from_bytes(d[p:p + n], "little", signed=True)
    if (-16 <= x < SHORT_MAX) or ((x if x >= 0 else ~x).bit_length() + 8) // 8 != n:
        raise CodecError(f"non-canonical int at byte {p - 1}")
    return x, p + n


def _dec_len(d: bytes, p: int, min_item: int) -> tuple[int, int]:
    n = d[p]
    p += 1
    if n >= SHORT_MAX:
        n, p = _get_long(d, p, n)
        if n < 0:
            raise CodecError(f"negative length {n} at byte {p - 1}")
    if n * min_item > len(d) - p or n > MAX_BYTES:
        raise CodecError(f"length {n} at byte {p - 1} runs past the end of the encoded state")
    return n, p


def _dec_fixints(k: int, d: bytes, p: int) -> tuple[tuple[int, ...], int]:
    items: list[int] = []
    for _ in range(k):
        w = d[p]
        p += 1
        if w >= SHORT_MAX:
            w, p = _get_long(d, p, w)
        items.append(w)
    return tuple(items), p


def _dec_ints(d: bytes, p: int) -> tuple[tuple[int, ...], int]:
    n, p = _dec_len(d, p, 1)
    if n == 0:
        return (), p
    items: list[int] = []
    for _ in range(n):
        w = d[p]
        p += 1
        if w >= SHORT_MAX:
            w, p = _get_long(d, p, w)
        items.append(w)
    return tuple(items), p
