"""The one bounded reader of every file a user hands the tools: configs, scenarios, traces, event logs.

Why it exists: an input file is untrusted. ``/dev/zero`` given as a config used to fill memory (a
size check on ``st_size`` reads 0 for a device), a FIFO blocked forever, and a value nested a
thousand deep crashed the parsers with ``RecursionError``. Every reader of the project therefore
goes through this module, which:

- reads **regular files only**: ``os.stat`` before opening refuses a directory, FIFO, socket or
  device, and the file is opened with ``O_NONBLOCK`` and checked again with ``fstat`` (a path
  swapped for a FIFO in between cannot block the open);
- reads **at most a cap per kind of input** (:class:`Kind`), by a bounded ``read`` loop that never
  trusts ``st_size``; the cap is raised by an environment variable, ``ISRCHECK_MAX_<KIND>_BYTES``
  (for example ``ISRCHECK_MAX_TRACE_BYTES=512M``);
- caps **nesting** at :func:`max_depth` levels (64; ``ISRCHECK_MAX_DEPTH``): JSON text is scanned
  for bracket depth before it is parsed, TOML is parsed (tomllib's ``RecursionError`` is caught
  and named) and its value measured without recursion.

Every problem is an :class:`InputError`, a ``ValueError`` whose message is one line starting with
the file's name (``config.toml: nested deeper than 64 levels``); callers re-raise it as their own
error type. It lives in specs/, the package every other one (model, impl, conformance, the command
line) may import, and imports nothing of the project.
"""
from __future__ import annotations

import enum
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Iterator
from itertools import accumulate
from typing import Any

__all__ = ["InputError", "Kind", "NestingError", "check_depth", "check_json_depth", "check_lines_depth", "json_depth", "loads_toml", "max_bytes",
           "max_depth", "read_bytes", "read_head", "read_text", "read_toml", "value_depth"]

_KIB = 1024
_MIB = 1024 * 1024

#: the default nesting cap; the deepest file the tools write (an ITF trace) nests about 10 levels
DEFAULT_MAX_DEPTH = 64
DEPTH_ENV = "ISRCHECK_MAX_DEPTH"
#: the most ISRCHECK_MAX_DEPTH may allow: the parsers (tomllib, json) and the readers after them
#: recurse once or more per level, and must stay well inside Python's recursion limit (1000)
DEPTH_CEILING = 200


class InputError(ValueError):
    """An input file (or value) that cannot be read safely; the message is one line naming it."""


class NestingError(InputError):
    """A value nested deeper than :func:`max_depth` (told apart so that ``--set`` can still read
    text that is not TOML as a bare word, but never a value too deep to parse)."""


class Kind(enum.Enum):
    """The kinds of input, each with its default size cap (generous: the largest legitimate file
    of each kind the project writes is far smaller) and the variable that raises it."""

    CONFIG = ("config", "configuration file", 1 * _MIB)
    SCENARIO = ("scenario", "scenario file", 1 * _MIB)
    TRACE = ("trace", "trace file", 64 * _MIB)
    EVENT_LOG = ("event_log", "event log", 256 * _MIB)
    MANIFEST = ("manifest", "model manifest", 4 * _MIB)
    CLUSTER = ("cluster", "cluster state file", 1 * _MIB)
    PIPELINE = ("pipeline", "pipeline state file", 16 * _MIB)  # run.json, progress.json, a corpus's marker

    def __init__(self, key: str, noun: str, default: int) -> None:
        self.key = key
        self.noun = noun
        self.default = default

    @property
    def env(self) -> str:
        """``ISRCHECK_MAX_CONFIG_BYTES`` and so on."""
        return f"ISRCHECK_MAX_{self.key.upper()}_BYTES"


_SIZE = re.compile(r"\s*(\d+)\s*([kmg]i?b?)?\s*", re.IGNORECASE)
_UNIT = {"": 1, "k": _KIB, "m": _MIB, "g": 1024 * _MIB}


def _env_int(name: str, default: int, sizes: bool) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    m = _SIZE.fullmatch(raw) if sizes else re.fullmatch(r"\s*(\d+)\s*", raw)
    if m is None or int(m.group(1)) < 1 or (not sizes and int(m.group(1)) > DEPTH_CEILING):
        what = ("a positive number of bytes (e.g. 1048576 or 16M)" if sizes
                else f"an integer from 1 to {DEPTH_CEILING}")
        raise InputError(f"{name} must be {what}, got {raw!r}")
    unit = (m.group(2) or "")[:1].lower() if sizes else ""
    return int(m.group(1)) * _UNIT[unit]


def max_bytes(kind: Kind) -> int:
    """The size cap of ``kind``: its default, or ``ISRCHECK_MAX_<KIND>_BYTES``."""
    return _env_int(kind.env, kind.default, sizes=True)


def max_depth() -> int:
    """The nesting cap of every input: 64 levels, or ``ISRCHECK_MAX_DEPTH``."""
    return _env_int(DEPTH_ENV, DEFAULT_MAX_DEPTH, sizes=False)


def _size_text(n: int) -> str:
    if n % _MIB == 0:
        return f"{n // _MIB} MiB"
    if n % _KIB == 0:
        return f"{n // _KIB} KiB"
    return f"{n} bytes"


def too_large(source: str, kind: Kind) -> InputError:
    """The one wording of an oversized input, naming the cap and how to raise it."""
    return InputError(f"{source}: larger than {_size_text(max_bytes(kind))}, the limit for a {kind.noun} "
                      f"(raise it with {kind.env})")


def _not_regular(mode: int) -> str | None:
    """Why a file of this mode is refused, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory, not a regular file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


def _chunks(fd: int, limit: int) -> Iterator[bytes]:
    """Read ``fd`` to its end or until ``limit + 1`` bytes have come (one more than allowed, so the
    caller can tell "exactly at the cap" from "over it")."""
    left = limit + 1
    while left > 0:
        try:
            chunk = os.read(fd, min(left, 1 * _MIB))
        except BlockingIOError:  # only a non-regular file can say so; fstat already refused those
            return
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def _read(path: str | os.PathLike[str], kind: Kind, limit: int, whole: bool) -> bytes:
    source = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    except OSError as e:
        raise InputError(f"{source}: cannot read: {e.strerror or e}") from None
    why = _not_regular(st.st_mode)
    if why:
        raise InputError(f"{source}: cannot read: {why}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    except OSError as e:
        raise InputError(f"{source}: cannot read: {e.strerror or e}") from None
    try:
        why = _not_regular(os.fstat(fd).st_mode)  # the path may have been swapped since the stat
        if why:
            raise InputError(f"{source}: cannot read: {why}")
        try:
            data = b"".join(_chunks(fd, limit))
        except OSError as e:
            raise InputError(f"{source}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if whole and len(data) > limit:
        raise too_large(source, kind)
    return data[:limit]


def read_bytes(path: str | os.PathLike[str], kind: Kind) -> bytes:
    """The whole file at ``path``, a regular file of at most ``max_bytes(kind)`` bytes."""
    return _read(path, kind, max_bytes(kind), whole=True)


def read_head(path: str | os.PathLike[str], kind: Kind, limit: int) -> bytes:
    """At most the first ``limit`` bytes of the regular file at ``path`` (to recognise its format)."""
    return _read(path, kind, min(limit, max_bytes(kind)), whole=False)


def read_text(path: str | os.PathLike[str], kind: Kind) -> str:
    """:func:`read_bytes`, decoded as UTF-8 (anything else is an :class:`InputError`)."""
    data = read_bytes(path, kind)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: cannot read: not UTF-8 text (byte {e.start})") from None


# ---------------------------------------------------------------------------- nesting
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """How deep the brackets of JSON ``text`` nest, outside strings, without parsing it.

    Cheap (regular expressions and one ``accumulate`` in C) and conservative: on malformed text
    (an unterminated string) it may count brackets the parser would have refused anyway."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _too_deep(source: str | None, limit: int) -> NestingError:
    return NestingError(f"{source}: nested deeper than {limit} levels" if source
                        else f"nested deeper than {limit} levels")


def check_json_depth(text: str, source: str | None = None, limit: int | None = None) -> None:
    """Refuse JSON (or any bracketed text: an action's arguments) nested deeper than the cap;
    the message starts with ``source`` when one is given."""
    cap = max_depth() if limit is None else limit
    if json_depth(text) > cap:
        raise _too_deep(source, cap)


def check_lines_depth(lines: Iterable[str], source: str, first: int = 1) -> None:
    """:func:`check_json_depth` for each line of a JSON-lines file (each line its own document, so
    a torn line cannot add to the next one's depth); the message names the line."""
    cap = max_depth()
    for n, line in enumerate(lines, start=first):
        if json_depth(line) > cap:
            raise _too_deep(f"{source}: line {n}", cap)


def value_depth(value: Any) -> int:
    """How deep a parsed value (dicts and lists) nests: a scalar is 0, ``[1]`` is 1. Iterative, so
    that a value built without recursion (TOML dotted keys) cannot make it recurse either."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list):
            children = v
        else:
            deepest = max(deepest, d)
            continue
        deepest = max(deepest, d + 1)
        stack.extend((c, d + 1) for c in children)
    return deepest


def check_depth(value: Any, source: str, limit: int | None = None) -> None:
    """Refuse a parsed value nested deeper than the cap."""
    cap = max_depth() if limit is None else limit
    if value_depth(value) > cap:
        raise _too_deep(source, cap)


def loads_toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML text with the nesting cap; a syntax error is ``SOURCE: not valid TOML: ...``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{source}: not valid TOML: {e}") from None
    except RecursionError:  # tomllib recurses per level: only text nested far deeper than the cap gets here
        raise _too_deep(source, max_depth()) from None
    check_depth(doc, source)
    return doc


def read_toml(path: str | os.PathLike[str], kind: Kind) -> dict[str, Any]:
    """Read and parse a TOML file of ``kind`` with every cap of this module."""
    return loads_toml(read_text(path, kind), str(path))
