"""The action vocabulary (specs/actions.toml), read as data, and strict checks of actions in files.

Traces and event logs name actions as ``{"name": "Fetch", "args": [2, 0]}``. :func:`check_action`
accepts exactly what the vocabulary declares: a known name, the declared number of arguments, and
arguments of the declared types (``broker`` in ``1..brokers``, ``partition`` in
``0..partitions-1``, ``broker_list`` a non-empty list of distinct broker ids, ``log_lengths`` one
integer >= 0 per partition, ...). Anything else is a :class:`VocabularyError` with one line naming
the action and the argument. Nothing is evaluated: values are JSON already parsed.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from isrcheck import specs

__all__ = ["ActionSpec", "VocabularyError", "actions", "check_action", "action_text", "MAX_STEP"]

#: the reassignment has 12 steps (specs/04-controller.md#partition-reassignment)
MAX_STEP = 12


class VocabularyError(ValueError):
    """An action that specs/actions.toml does not allow; the message is one line."""


@dataclass(frozen=True)
class ActionSpec:
    name: str
    actor: str
    args: tuple[tuple[str, str], ...]  # (name, type) in order
    budget: str | None

    @property
    def arity(self) -> int:
        return len(self.args)


@lru_cache(maxsize=1)
def actions() -> dict[str, ActionSpec]:
    """Name -> :class:`ActionSpec`, in the file's order."""
    doc = specs.load("actions.toml")
    out: dict[str, ActionSpec] = {}
    for a in doc["action"]:
        out[a["name"]] = ActionSpec(a["name"], a["actor"], tuple((x["name"], x["type"]) for x in a.get("args", [])),
                                    a.get("budget"))
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _bad(name: str, arg: str, why: str) -> VocabularyError:
    return VocabularyError(f"action {name}: argument {arg!r} {why}")


def _check_arg(action: str, arg: str, typ: str, v: Any, brokers: int | None, partitions: int | None) -> Any:
    if typ in ("controller_epoch", "broker", "partition", "step", "index"):
        if not _is_int(v):
            raise _bad(action, arg, f"must be an integer ({typ}), got {_short(v)}")
        lo = 0 if typ == "partition" else 1
        hi = {"broker": brokers, "partition": None if partitions is None else partitions - 1,
              "step": MAX_STEP}.get(typ)
        if v < lo or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise _bad(action, arg, f"must be a {typ} in {rng}, got {v}")
        return v
    if typ == "broker_list":
        if not isinstance(v, list) or not v or not all(_is_int(x) for x in v):
            raise _bad(action, arg, f"must be a non-empty list of broker ids, got {_short(v)}")
        if len(set(v)) != len(v):
            raise _bad(action, arg, f"must list distinct brokers, got {v}")
        if any(x < 1 or (brokers is not None and x > brokers) for x in v):
            raise _bad(action, arg, f"names a broker outside 1..{brokers}: {v}")
        return tuple(v)
    if typ == "log_lengths":
        if not isinstance(v, list) or not all(_is_int(x) and x >= 0 for x in v):
            raise _bad(action, arg, f"must be a list of integers >= 0, got {_short(v)}")
        if partitions is not None and len(v) != partitions:
            raise _bad(action, arg, f"must have one length per partition ({partitions}), got {len(v)}")
        return tuple(v)
    raise VocabularyError(f"action {action}: specs/actions.toml declares an unknown argument type {typ!r}")


def check_action(obj: Any, brokers: int | None = None, partitions: int | None = None) -> tuple[str, tuple]:
    """Validate ``{"name": ..., "args": [...]}``; returns ``(name, args)`` with lists as tuples."""
    if not isinstance(obj, Mapping) or set(obj) != {"name", "args"}:
        raise VocabularyError(f"an action must be an object with exactly \"name\" and \"args\", got {_short(obj)}")
    name, raw = obj["name"], obj["args"]
    table = actions()
    if not isinstance(name, str) or name not in table:
        close = difflib.get_close_matches(str(name), list(table), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise VocabularyError(f"unknown action {_short(name)}{hint}: not in specs/actions.toml")
    if not isinstance(raw, list):
        raise VocabularyError(f"action {name}: args must be a list, got {_short(raw)}")
    spec = table[name]
    if len(raw) != spec.arity:
        raise VocabularyError(f"action {name} takes {spec.arity} argument(s) per specs/actions.toml, got {len(raw)}")
    args = tuple(_check_arg(name, an, at, v, brokers, partitions) for (an, at), v in zip(spec.args, raw))
    return name, args


def action_text(name: str, args: tuple | list) -> str:
    """``Fetch(2, 0)``, ``RequestReassignment(0, [2,3])`` (the vocabulary's text form)."""
    def fmt(a: Any) -> str:
        if isinstance(a, (tuple, list)):
            return "[" + ",".join(str(x) for x in a) + "]"
        return str(a)
    return f"{name}({', '.join(fmt(a) for a in args)})"


def action_json(name: str, args: tuple | list) -> dict[str, Any]:
    return {"name": name, "args": [list(a) if isinstance(a, (tuple, list)) else a for a in args]}


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 50 else text[:47] + "..."
