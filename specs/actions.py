"""The action vocabulary (specs/actions.toml) as data, its argument kinds, and how an action is written.

An action is a name and a list of arguments. It is written in two forms, which every side uses:

- text, ``Fetch(2, 0)``, ``RequestReassignment(0, [2,3])``, ``ControllerFailover()``: scenario files,
  the command line, counterexamples. :func:`read_text` reads it without evaluating anything (a
  regular expression splits ``Name(...)`` and the argument list is read as a TOML array by
  ``tomllib``, so only integers and lists of integers get through); :func:`action_text` writes it,
  and ``read_text(action_text(n, a)) == (n, a)``.
- JSON, ``{"name": "Fetch", "args": [2, 0]}``: trace files and event logs. :func:`read_json` reads it
  as loosely as the text (integers, the declared number of arguments); :func:`check_action` reads it
  strictly, with every argument of its declared kind for a model of a given size (``broker`` in
  ``1..brokers``, ``log_lengths`` one integer >= 0 per partition, ...); :func:`action_json` writes it.

Read values are ``(name, args)`` with lists as tuples: the model makes its own ``Action`` of them
(model/action_text.py), conformance and the pipeline use them as they are. The module lives in
specs/ because all of them, and the implementation's drivers, speak it; it holds no protocol
logic and imports nothing from the project but specs/ (its loader; the reassignment steps of
:mod:`isrcheck.specs.protocol`, which bound a ``step`` argument).
"""
from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import load
from .inputs import json_depth, max_depth
from .protocol import STEP_INFO

__all__ = [
    "ACTORS", "ARG_TYPES", "ActionSpec", "ActionSyntaxError", "VocabularyError", "add_variant_actions",
    "action_arity", "action_json", "fair_actions", "action_text", "actions", "arg_problem", "check_action", "entry_problems",
    "load_actions", "read_json", "read_text",
]

ACTORS = ("controller", "broker", "admin", "fault")  # and "variant", for an action a variant adds
ARG_TYPES = ("controller_epoch", "broker", "partition", "step", "index", "broker_list", "log_lengths")


class ActionSyntaxError(ValueError):
    """Action text (or loose JSON) that does not name an action of the vocabulary; the message is one line."""


class VocabularyError(ValueError):
    """An action that specs/actions.toml does not allow; the message is one line."""


# ---------------------------------------------------------------------------- the file
@dataclass(frozen=True)
class ActionSpec:
    name: str
    actor: str
    args: tuple[tuple[str, str], ...]  # (name, type) in order
    budget: str | None
    fairness: str | None = None  # "weak": a healing action, weakly fair when liveness is checked

    @property
    def arity(self) -> int:
        return len(self.args)


def load_actions() -> dict[str, dict[str, Any]]:
    """specs/actions.toml as ``{name: entry}`` (the entries as the file has them), in file order."""
    return {a["name"]: a for a in load("actions.toml")["action"]}


@lru_cache(maxsize=1)
def _file_actions() -> dict[str, ActionSpec]:
    return {name: ActionSpec(name, a["actor"], tuple((x["name"], x["type"]) for x in a.get("args", [])),
                             a.get("budget"), a.get("fairness"))
            for name, a in load_actions().items()}


#: actions a designer's variant added in this process (:func:`add_variant_actions`), after the file's
_VARIANT_ACTIONS: dict[str, ActionSpec] = {}


def actions() -> dict[str, ActionSpec]:
    """Name -> :class:`ActionSpec`, in the file's order, then the actions of a loaded variant."""
    if not _VARIANT_ACTIONS:
        return _file_actions()
    return {**_file_actions(), **_VARIANT_ACTIONS}


def add_variant_actions(entries: list[tuple[str, tuple[str, ...], bool]]) -> None:
    """Make a variant's own actions part of the vocabulary of this process: each ``(name, argument
    kinds, fair)``, so that their text and JSON forms are read like the model's (scenarios, trace
    files, ``unfair``) and liveness checks know which are fair. A name of the file's, an unknown
    argument kind or a name used differently by an earlier variant is a :class:`VocabularyError`."""
    for name, kinds, fair in entries:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name):
            raise VocabularyError(f"a variant's action name must be a CamelCase word, got {_clip(name)}")
        if name in _file_actions():
            raise VocabularyError(f"the variant's action {name} has the name of one of the model's (specs/actions.toml)")
        bad = [k for k in kinds if k not in ARG_TYPES]
        if bad:
            raise VocabularyError(f"the variant's action {name}: unknown argument kind {bad[0]!r} (known: "
                                  f"{', '.join(ARG_TYPES)})")
        spec = ActionSpec(name, "variant", tuple((f"arg{i + 1}", k) for i, k in enumerate(kinds)), None,
                          "weak" if fair else None)
        known = _VARIANT_ACTIONS.get(name)
        if known is not None and known != spec:
            raise VocabularyError(f"two variants declare the action {name} differently")
        _VARIANT_ACTIONS[name] = spec


def action_arity(name: str) -> int:
    """How many arguments action ``name`` takes (KeyError for a name outside the vocabulary)."""
    return actions()[name].arity


_ANCHOR = re.compile(r"^0[0-7]-[a-z-]+\.md#[a-z0-9-]+$")
_ENTRY_KEYS = {"name", "actor", "args", "summary", "spec", "budget", "fairness"}


def entry_problems(entry: Mapping[str, Any]) -> list[str]:
    """Structural problems of one ``[[action]]`` entry of specs/actions.toml."""
    name = entry.get("name", "?")
    out = []
    if set(entry) - _ENTRY_KEYS:
        out.append(f"{name}: unknown keys {sorted(set(entry) - _ENTRY_KEYS)}")
    if entry.get("actor") not in ACTORS:
        out.append(f"{name}: actor must be one of {ACTORS}")
    args = entry.get("args")
    if not isinstance(args, list):
        out.append(f"{name}: args must be a list")
    else:
        for a in args:
            if not isinstance(a, dict) or set(a) != {"name", "type"} or a["type"] not in ARG_TYPES:
                out.append(f"{name}: each arg is {{name, type}} with type in {ARG_TYPES}, got {a!r}")
    summary = entry.get("summary")
    if not isinstance(summary, str) or not summary or "\n" in summary:
        out.append(f"{name}: summary must be one non-empty line")
    if not isinstance(entry.get("spec"), str) or not _ANCHOR.match(entry["spec"]):
        out.append(f"{name}: spec must look like '05-replication.md#fetch'")
    if entry.get("fairness", "weak") != "weak":
        out.append(f"{name}: fairness must be \"weak\" when given")
    if "fairness" in entry and (entry.get("actor") in ("admin",) or "budget" in entry):
        out.append(f"{name}: a budgeted action or an administrator's request is never fair")
    return out


def fair_actions() -> tuple[str, ...]:
    """The healing actions (``fairness = "weak"``), in the file's order."""
    return tuple(name for name, a in actions().items() if a.fairness == "weak")


# ---------------------------------------------------------------------------- argument kinds
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def arg_problem(kind: str, v: Any, brokers: int | None = None, partitions: int | None = None) -> str | None:
    """Why ``v`` is not an argument of type ``kind`` (None if it is), e.g. ``must be a broker in 1..3, got 0``.

    ``brokers`` and ``partitions`` are the model's size; None leaves that bound unchecked. Lists
    may be lists (JSON) or tuples (an action already read).
    """
    if kind in ("controller_epoch", "broker", "partition", "step", "index"):
        if not _is_int(v):
            return f"must be an integer ({kind}), got {_clip(v)}"
        lo = 0 if kind == "partition" else 1
        hi = {"broker": brokers, "partition": None if partitions is None else partitions - 1,
              "step": len(STEP_INFO)}.get(kind)
        if v < lo or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            return f"must be a {kind} in {rng}, got {v}"
        return None
    if kind == "broker_list":
        if not isinstance(v, (list, tuple)) or not v or not all(_is_int(x) for x in v):
            return f"must be a non-empty list of broker ids, got {_clip(v)}"
        if len(set(v)) != len(v):
            return f"must list distinct brokers, got {v}"
        if any(x < 1 or (brokers is not None and x > brokers) for x in v):
            return f"names a broker outside 1..{brokers}: {v}"
        return None
    if kind == "log_lengths":
        if not isinstance(v, (list, tuple)) or not all(_is_int(x) and x >= 0 for x in v):
            return f"must be a list of integers >= 0, got {_clip(v)}"
        if partitions is not None and len(v) != partitions:
            return f"must have one length per partition ({partitions}), got {len(v)}"
        return None
    return f"unknown argument type {kind!r}"


def check_action(obj: Any, brokers: int | None = None, partitions: int | None = None) -> tuple[str, tuple]:
    """Validate ``{"name": ..., "args": [...]}`` strictly; returns ``(name, args)`` with lists as tuples."""
    if not isinstance(obj, Mapping) or set(obj) != {"name", "args"}:
        raise VocabularyError(f"an action must be an object with exactly \"name\" and \"args\", got {_clip(obj)}")
    name, raw = obj["name"], obj["args"]
    table = actions()
    if not isinstance(name, str) or name not in table:
        close = difflib.get_close_matches(str(name), list(table), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise VocabularyError(f"unknown action {_clip(name)}{hint}: not in specs/actions.toml")
    if not isinstance(raw, list):
        raise VocabularyError(f"action {name}: args must be a list, got {_clip(raw)}")
    spec = table[name]
    if len(raw) != spec.arity:
        raise VocabularyError(f"action {name} takes {spec.arity} argument(s) per specs/actions.toml, got {len(raw)}")
    for (arg, kind), v in zip(spec.args, raw):
        if kind not in ARG_TYPES:
            raise VocabularyError(f"action {name}: specs/actions.toml declares an unknown argument type {kind!r}")
        why = arg_problem(kind, v, brokers, partitions)
        if why is not None:
            raise VocabularyError(f"action {name}: argument {arg!r} {why}")
    return name, tuple(tuple(v) if isinstance(v, list) else v for v in raw)


def _clip(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 50 else text[:47] + "..."


# ---------------------------------------------------------------------------- the written forms
def action_text(name: str, args: tuple | list) -> str:
    """``Fetch(2, 0)``, ``RequestReassignment(0, [2,3])``: the text form."""
    def fmt(a: Any) -> str:
        if isinstance(a, (tuple, list)):
            return "[" + ",".join(str(x) for x in a) + "]"
        return str(a)
    return f"{name}({', '.join(fmt(a) for a in args)})"


def action_json(name: str, args: tuple | list) -> dict[str, Any]:
    """``{"name": ..., "args": [...]}`` with tuples as lists: the JSON form."""
    return {"name": name, "args": [list(a) if isinstance(a, (tuple, list)) else a for a in args]}


_CALL = re.compile(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\((.*)\)\s*", re.DOTALL)


def _suggest(name: str) -> str:
    names = list(actions())
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known: {', '.join(sorted(names))})"


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


def read_text(text: str) -> tuple[str, tuple]:
    """Read ``Name(arg, ...)``; raises :class:`ActionSyntaxError` (a ValueError) on any problem."""
    if not isinstance(text, str):
        raise ActionSyntaxError(f"an action must be text like 'Fetch(2, 0)', got {text!r}")
    m = _CALL.fullmatch(text)
    if m is None:
        raise ActionSyntaxError(f"cannot read action {_short(text)!r}: expected Name(arg, ...), e.g. 'Fetch(2, 0)'")
    name, inner = m.group(1), m.group(2)
    if name not in actions():
        raise ActionSyntaxError(f"unknown action {name!r}{_suggest(name)}")
    if "\n" in inner or "\r" in inner or "#" in inner:
        raise ActionSyntaxError(f"cannot read the arguments of {_short(text)!r}: keep an action on one line")
    if json_depth(inner) >= max_depth():  # checked before tomllib, which recurses per level
        raise ActionSyntaxError(f"cannot read the arguments of {_short(text)!r}: nested deeper than "
                                f"{max_depth()} levels")
    try:
        doc = tomllib.loads(f"a = [{inner}]")
    except tomllib.TOMLDecodeError:
        raise ActionSyntaxError(
            f"cannot read the arguments of {_short(text)!r}: expected integers or [lists] of integers"
        ) from None
    if set(doc) != {"a"} or not isinstance(doc["a"], list):
        raise ActionSyntaxError(f"cannot read the arguments of {_short(text)!r}")
    args = tuple(_convert(v, text) for v in doc["a"])
    want = action_arity(name)
    if len(args) != want:
        plural = "argument" if want == 1 else "arguments"
        raise ActionSyntaxError(f"{name} takes {want} {plural}, got {len(args)} in {_short(text)!r}")
    return name, args


def read_json(obj: Mapping[str, Any]) -> tuple[str, tuple]:
    """The inverse of :func:`action_json`, with the same checks as :func:`read_text`."""
    if not isinstance(obj, Mapping) or set(obj) != {"name", "args"}:
        raise ActionSyntaxError(f"an action in JSON must be {{\"name\": ..., \"args\": [...]}}, got {obj!r}")
    name, raw = obj["name"], obj["args"]
    if not isinstance(name, str) or name not in actions():
        raise ActionSyntaxError(f"unknown action {name!r}{_suggest(str(name))}")
    if not isinstance(raw, list):
        raise ActionSyntaxError(f"{name}: args must be a list, got {raw!r}")
    args = tuple(_convert(v, name) for v in raw)
    if len(args) != action_arity(name):
        raise ActionSyntaxError(f"{name} takes {action_arity(name)} arguments, got {len(args)}")
    return name, args
