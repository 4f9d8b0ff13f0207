"""Actions as text: ``Fetch(2, 0)``, ``RequestReassignment(0, [2,3])``, ``ControllerFailover()``.

The text form is what scenario files, traces and the command line use. Parsing never evaluates
anything: a regular expression splits ``Name(...)`` and the argument list is read as a TOML array
(``tomllib``), so only integers and lists of integers get through. ``str(action)`` (see
:class:`~isrcheck.model.actions.Action`) is the formatter, and ``parse(format_action(a)) == a``.
"""
from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

from .actions import APPLY, Action
from .vocabulary import load_actions

__all__ = [
    "ActionSyntaxError",
    "action_arity",
    "format_action",
    "from_json",
    "parse",
    "parse_all",
    "to_json",
]

_CALL = re.compile(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\((.*)\)\s*", re.DOTALL)


class ActionSyntaxError(ValueError):
    """Action text that does not name an enabled-able action; the message is one line."""


# How many arguments each action takes: the shared vocabulary's (specs/actions.toml), which
# tests/model/test_vocabulary.py checks against the APPLY functions' own signatures.
_ARITY: dict[str, int] = {name: len(entry["args"]) for name, entry in load_actions().items() if name in APPLY}


def action_arity(name: str) -> int:
    return _ARITY[name]


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, list(APPLY), n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known: {', '.join(sorted(APPLY))})"


def _short(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= 60 else one[:57] + "..."


def _convert(value: Any, text: str, nested: bool = False) -> int | tuple[int, ...]:
    if isinstance(value, bool) or not isinstance(value, (int, list)):
        raise ActionSyntaxError(
            f"action {_short(text)!r}: arguments must be integers or lists of integers, got {value!r}"
        )
    if isinstance(value, list):
        if nested:
            raise ActionSyntaxError(f"action {_short(text)!r}: lists inside lists are not allowed")
        return tuple(_convert(v, text, nested=True) for v in value)  # type: ignore[misc]
    return value


def parse(text: str) -> Action:
    """Parse ``Name(arg, ...)``; raises :class:`ActionSyntaxError` (a ValueError) on any problem."""
    if not isinstance(text, str):
        raise ActionSyntaxError(f"an action must be text like 'Fetch(2, 0)', got {text!r}")
    m = _CALL.fullmatch(text)
    if m is None:
        raise ActionSyntaxError(f"cannot read action {_short(text)!r}: expected Name(arg, ...), e.g. 'Fetch(2, 0)'")
    name, inner = m.group(1), m.group(2)
    if name not in APPLY:
        raise ActionSyntaxError(f"unknown action {name!r}{_suggest(name)}")
    if "\n" in inner or "\r" in inner or "#" in inner:
        raise ActionSyntaxError(f"cannot read the arguments of {_short(text)!r}: keep an action on one line")
    try:
        doc = tomllib.loads(f"a = [{inner}]")
    except tomllib.TOMLDecodeError:
        raise ActionSyntaxError(
            f"cannot read the arguments of {_short(text)!r}: expected integers or [lists] of integers"
        ) from None
    if set(doc) != {"a"} or not isinstance(doc["a"], list):
        raise ActionSyntaxError(f"cannot read the arguments of {_short(text)!r}")
    args = tuple(_convert(v, text) for v in doc["a"])
    want = _ARITY[name]
    if len(args) != want:
        plural = "argument" if want == 1 else "arguments"
        raise ActionSyntaxError(f"{name} takes {want} {plural}, got {len(args)} in {_short(text)!r}")
    return Action(name, args)


def parse_all(texts: Iterable[str]) -> list[Action]:
    return [parse(t) for t in texts]


def format_action(action: Action) -> str:
    """The canonical text of ``action`` (the same as ``str(action)``)."""
    return str(action)


def to_json(action: Action) -> dict[str, Any]:
    """``{"name": ..., "args": [...]}`` with tuples as lists."""
    return {"name": action.name, "args": [list(a) if isinstance(a, tuple) else a for a in action.args]}


def from_json(obj: Mapping[str, Any]) -> Action:
    """The inverse of :func:`to_json`, with the same checks as :func:`parse`."""
    if not isinstance(obj, Mapping) or set(obj) != {"name", "args"}:
        raise ActionSyntaxError(f"an action in JSON must be {{\"name\": ..., \"args\": [...]}}, got {obj!r}")
    name, raw = obj["name"], obj["args"]
    if not isinstance(name, str) or name not in APPLY:
        raise ActionSyntaxError(f"unknown action {name!r}{_suggest(str(name))}")
    if not isinstance(raw, list):
        raise ActionSyntaxError(f"{name}: args must be a list, got {raw!r}")
    args = tuple(_convert(v, name) for v in raw)
    if len(args) != _ARITY[name]:
        raise ActionSyntaxError(f"{name} takes {_ARITY[name]} arguments, got {len(args)}")
    return Action(name, args)
