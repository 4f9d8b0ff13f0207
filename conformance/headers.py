"""What every file conformance reads has in common: it is UTF-8 text read through the bounded reader,
JSON lines (a header, then one object a line) parsed strictly, and a header with a configuration and
the protocol generation it was made under. Traces (:mod:`.traces`), the model's event logs
(:mod:`.eventlog`) and the implementation's own logs (:mod:`.selflog`) read and check them alike,
here once; each raises its own error type, so a message names the kind of file that is wrong."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from isrcheck.model.config import Config, ConfigError, from_mapping
from isrcheck.specs.inputs import InputError, Kind, check_json_depth, check_lines_depth, read_bytes


# ---------------------------------------------------------------------------- reading
def read_text(path: str | Path, kind: Kind, error: type[ValueError], not_text: str) -> str:
    """The file at ``path`` as text, through the bounded reader (specs/inputs.py: a regular file, at
    most the cap of ``kind``), decoded as UTF-8. Every failure is one ``error`` (the caller's type):
    the reader's message, or ``"{path}: {not_text}"`` for bytes that are not UTF-8."""
    try:
        data = read_bytes(path, kind)
    except InputError as e:
        raise error(str(e)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: {not_text}") from None


def _no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _bad_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def parse_json(text: str) -> Any:
    """``json.loads`` without NaN/Infinity and without duplicate keys; floats are refused later. Text
    nested deeper than the input cap (specs/inputs.py) is refused before the parser recurses."""
    check_json_depth(text)
    try:
        return json.loads(text, object_pairs_hook=_no_dupes, parse_constant=_bad_constant)
    except RecursionError:  # unreachable below the cap; kept so that no input can show a traceback
        raise ValueError("nested too deep to parse") from None


def text_lines(text: str) -> list[str]:
    """The lines of a JSON-lines file, without the empty string after its final newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def header_line(lines: list[str], source: str, error: type[ValueError]) -> Any:
    """Line 1 of a non-empty JSON-lines file, parsed, once no line is nested past the input cap."""
    try:
        check_lines_depth(lines, source)
    except InputError as e:
        raise error(str(e)) from None
    try:
        return parse_json(lines[0])
    except ValueError as e:
        raise error(f"{source}: line 1: not JSON ({e})") from None


def body_lines(lines: list[str], source: str, error: type[ValueError], *,
               skip_empty: bool = False) -> Iterator[tuple[int, Any]]:
    """Every line after the header, parsed, with its line number (from 2). An empty line is an
    error, or passed over with ``skip_empty`` (the implementation's logs, appended to by processes
    that may be killed between writes)."""
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            if skip_empty:
                continue
            raise error(f"{source}: line {n}: empty line")
        try:
            raw = parse_json(line)
        except ValueError as e:
            raise error(f"{source}: line {n}: not JSON ({e})") from None
        yield n, raw


# ---------------------------------------------------------------------------- the header


def short(v: Any) -> str:
    """A value as it goes into a one-line error: its repr, cut to 50 characters."""
    t = repr(v)
    return t if len(t) <= 50 else t[:47] + "..."


def check_envelope(h: Any, where: str, error: type[ValueError], *, what: str, fmt: str, version: int,
                   version_name: str, keys: frozenset[str] | set[str], required: tuple[str, ...]) -> dict[str, Any]:
    """The envelope of a header, which it returns: a JSON object with our ``format`` and a
    ``version`` this isrcheck reads, only known keys, every ``required`` one, and ``tool`` =
    isrcheck with a ``tool_version``."""
    if not isinstance(h, dict):
        raise error(f"{where}: the header must be a JSON object")
    if h.get("format") != fmt:
        raise error(f"{where}: not an isrcheck {what} (format {short(h.get('format'))}, expected {fmt!r})")
    ver = h.get("version")
    if ver != version or isinstance(ver, bool):
        raise error(f"{where}: {version_name} {short(ver)} is not supported (this isrcheck reads version {version})")
    extra = sorted(set(h) - set(keys))
    if extra:
        raise error(f"{where}: unknown header key {extra[0]!r}")
    missing = sorted(k for k in required if k not in h)
    if missing:
        raise error(f"{where}: the header lacks {', '.join(missing)}")
    if h["tool"] != "isrcheck" or not isinstance(h["tool_version"], str):
        raise error(f"{where}: tool must be \"isrcheck\" with a tool_version string")
    return h


def header_config(h: dict[str, Any], where: str, error: type[ValueError]) -> Config:
    """The header's ``config`` object, validated, and its ``generation``, which must agree with it."""
    if not isinstance(h["config"], dict):
        raise error(f"{where}: config must be an object")
    try:
        cfg = from_mapping(h["config"])
    except ConfigError as e:
        raise error(f"{where}: config: {e}") from None
    if h["generation"] != cfg.generation:
        raise error(f"{where}: generation {short(h['generation'])} disagrees with the configuration's "
                    f"generation {cfg.generation.value!r}")
    return cfg
