"""Trace files: the checker's counterexamples and sample paths, as JSON lines and as ITF JSON.

**JSON lines** (``.jsonl``), one JSON object per line::

    {"format": "isrcheck-trace", "version": 1, "tool": "isrcheck", "tool_version": "0.1.0",
     "kind": "counterexample", "model": "hw-truncation-one-crash", "property": "NoCommittedWriteLost",
     "generation": "high-watermark", "seed": null, "config": {...}, "steps": 9, "description": "...",
     "loop": null}
    {"index": 0, "action": null, "observation": {...}, "acked": [[]]}
    {"index": 1, "action": {"name": "Produce", "args": [1, 0]}, "observation": {...}, "acked": [[]]}
    ...

**ITF** (``.itf.json``, the Informal Trace Format of Apalache and Quint, ADR-015): one JSON object
``{"#meta": {...}, "vars": [...], "states": [...]}`` that ITF clients such as itf-py load. Integers
are ``{"#bigint": "12"}``, sequences JSON arrays, records JSON objects, sets ``{"#set": [...]}`` (the
observation's set fields: those specs/observation.toml marks ``sorted`` and ``unique``, such as
``isr`` and ``live_brokers``; and each partition's ``acked`` record ids), tuples ``{"#tup": [...]}``
(an action's arguments). Each state has ``"#meta": {"index": i}`` and the variables
``mbt::actionTaken`` (the action's name, ``"init"`` first, as Quint's model-based testing writes it),
``action`` (a variant: ``{"tag": "Init", "value": "U_OF_UNIT"}`` first, then
``{"tag": "Step", "value": {"name": ..., "args": {"#tup": [...]}}}``), ``observation`` and ``acked``.
The header above sits in ``#meta`` under ``"isrcheck"``, and ``#meta["isrcheck-itf"]`` is ``2``, the
version of this encoding. Files without that key use the first encoding, which the reader still
accepts (strictly, as written then): the action variant tagged ``"None"``/``"Some"`` (tags that
itf-py cannot load: ``None`` is a Python keyword), sets and tuples as plain arrays.

**Lassos.** A liveness counterexample is a *lasso*: a finite path whose end repeats forever. The
header's ``loop`` (``null`` for a trace that is not a lasso) is the index of the state where the
loop starts: the last state equals the state at ``loop`` and the behaviour goes round the loop
again and again; ``loop == steps`` (the last index) means the behaviour stutters at its last state
forever. ITF carries the same index in its top-level ``"loop"`` field (ADR-015), written only for a
lasso. Files written before ``loop`` existed have no such key and load as ``loop = None``.

Loading (:func:`load_trace`, :func:`loads_trace`) is strict and never evaluates anything: JSON is
parsed (no NaN, no duplicate keys), then the header, every action (specs/actions.toml: name, arity,
argument types against the configuration's bounds) and every observation (specs/observation.toml)
are validated, and a lasso's ``loop`` (in range, and the last observation equal to the one at
``loop``). Any problem is a one-line :class:`TraceError` naming the file, the line or state,
and the problem.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from isrcheck import __version__
from isrcheck.engine.checker import Step
from isrcheck.model.config import Config
from isrcheck.model.extension import state_values
from isrcheck.model.observe import acked_of, observe
from isrcheck.specs.actions import VocabularyError, action_json, check_action
from isrcheck.specs.inputs import InputError, Kind, check_json_depth, max_bytes, too_large
from isrcheck.specs.observation import ObservationError, load_schema
from isrcheck.specs.observation import validate as validate_observation

from .headers import body_lines, check_envelope, header_config, header_line, parse_json, read_text, short, text_lines

__all__ = ["FORMAT", "VERSION", "KINDS", "Trace", "TraceError", "TraceStep", "dumps_itf", "dumps_jsonl",
           "load_trace", "loads_trace", "trace_from_steps", "write_trace"]

FORMAT = "isrcheck-trace"
VERSION = 1
KINDS = ("counterexample", "sample", "cover", "regression", "path")
ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
MAX_BYTES = Kind.TRACE.default  # the default cap; ISRCHECK_MAX_TRACE_BYTES raises it (specs/inputs.py)
_HEADER_KEYS = {"format", "version", "tool", "tool_version", "kind", "model", "property", "generation", "seed",
                "config", "steps", "description", "loop", "variant"}
_STEP_KEYS = {"index", "action", "observation", "acked"}
_ITF_VARS = ["mbt::actionTaken", "action", "observation", "acked"]
#: what a trace written with a variant adds: its fields' values per step (model/extension.py)
_VARIANT_KEY = "variant"
_VARIANT_PLACES = {"partitions", "brokers", "replicas", "controller"}
ITF_ENCODING = 2  # #meta["isrcheck-itf"]; absent: the first encoding (None/Some, no #set or #tup)
_ITF_ENCODING_KEY = "isrcheck-itf"
_UNIT = "U_OF_UNIT"  # Apalache's value of the unit type: the payload of a variant that carries nothing
_LIST = re.compile(r"^list\[(.+)\]$")


class TraceError(ValueError):
    """A file that is not a valid isrcheck trace; the message is one line."""


@dataclass
class TraceStep:
    index: int
    action: tuple[str, tuple] | None  # None for the initial state
    observation: dict[str, Any]
    acked: list[list[int]]
    #: a variant's values in this state (model.extension.state_values), None without a variant's fields
    variant: dict[str, Any] | None = None


@dataclass
class Trace:
    config: Config
    steps: list[TraceStep]
    kind: str = "path"
    model: str | None = None
    prop: str | None = None  # the property a counterexample breaks
    seed: int | None = None
    description: str = ""
    tool_version: str = __version__
    source: str = ""  # the file it was read from, for messages
    #: a lasso's loop start: the index in ``steps`` the last state equals (``len(steps) - 1``: the
    #: behaviour stutters at the last state); None for a trace that is not a lasso
    loop: int | None = None
    #: the variant it was written with: {"name": "path.py:Attr", "fields": [declarations]}; None for the
    #: model's own protocol. Only named: a trace file never makes isrcheck import code (--variant does)
    variant: dict[str, Any] | None = None

    @property
    def generation(self) -> str:
        return self.config.generation.value

    @property
    def actions(self) -> list[tuple[str, tuple]]:
        return [s.action for s in self.steps[1:] if s.action is not None]

    @property
    def stutters(self) -> bool:
        """A lasso whose loop is the last state alone: the behaviour stays there forever."""
        return self.loop is not None and self.loop == len(self.steps) - 1

    @property
    def label(self) -> str:
        return self.source or self.model or "trace"

    def header(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "tool": "isrcheck", "tool_version": self.tool_version,
                "kind": self.kind, "model": self.model, "property": self.prop, "generation": self.generation,
                "seed": self.seed, "config": self.config.to_dict(), "steps": len(self.steps) - 1,
                "description": self.description, "loop": self.loop} | (
                    {} if self.variant is None else {_VARIANT_KEY: self.variant})


def variant_header(protocol: Any) -> dict[str, Any] | None:
    """What a trace's header says of the variant ``protocol`` is (None for the model's own): the
    name it was loaded by and its field declarations."""
    if protocol is None or type(protocol).__module__ == "isrcheck.model.protocol":
        return None
    name = getattr(type(protocol), "_isrcheck_variant", None) or type(protocol).__qualname__
    path, sep, attr = name.rpartition(":")
    if sep and os.path.isabs(path):  # a manifest's variant, resolved in the checkout: named as written there
        rel = os.path.relpath(path)
        name = f"{rel}:{attr}" if not rel.startswith("..") else name
    return {"name": name, "fields": protocol.extension.declarations()}


def trace_from_steps(steps: Sequence[Step], config: Config, *, kind: str = "path", model: str | None = None,
                     property: str | None = None, seed: int | None = None, description: str = "",
                     loop: int | None = None, protocol: Any = None) -> Trace:
    """A trace from the model's steps (a counterexample's, a simulation's, a covering path's, a
    liveness lasso's: then ``loop`` is the index of the step where the loop starts). ``protocol``:
    the variant the steps were taken with, named in the header, its fields' values kept per step."""
    extension = None if protocol is None or protocol.extension.empty else protocol.extension
    out = []
    for i, st in enumerate(steps):
        if st.state is None:  # a violation's last step that raised: nothing to observe
            break
        action = None if st.action is None else (st.action.name, tuple(st.action.args))
        values = None if extension is None else state_values(st.state, extension)
        out.append(TraceStep(i, action, observe(st.state), acked_of(st.state), values))
    if loop is not None and not 0 <= loop < len(out):
        raise TraceError(f"loop {loop} is outside the trace's {len(out)} state(s)")
    return Trace(config, out, kind=kind, model=model, prop=property, seed=seed, description=description, loop=loop,
                 variant=variant_header(protocol))


# ---------------------------------------------------------------------------- writing
def _step_json(s: TraceStep) -> dict[str, Any]:
    return {"index": s.index, "action": None if s.action is None else action_json(*s.action),
            "observation": s.observation, "acked": s.acked} | ({} if s.variant is None else {_VARIANT_KEY: s.variant})


def dumps_jsonl(trace: Trace) -> str:
    lines = [json.dumps(trace.header(), separators=(",", ":"))]
    lines += [json.dumps(_step_json(s), separators=(",", ":")) for s in trace.steps]
    return "\n".join(lines) + "\n"


def _itf(v: Any) -> Any:
    if isinstance(v, bool) or isinstance(v, str) or v is None:
        return v
    if isinstance(v, int):
        return {"#bigint": str(v)}
    if isinstance(v, (list, tuple)):
        return [_itf(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _itf(x) for k, x in v.items()}
    raise TypeError(f"cannot encode {type(v).__name__} in ITF")


@lru_cache(maxsize=1)
def _schema_types() -> tuple[str, dict[str, dict[str, tuple[str, bool]]]]:
    """The observation schema as (root, {object: {field: (type, is_set)}}); a set is a list field
    the schema keeps ``sorted`` and ``unique`` (its order carries no meaning)."""
    schema = load_schema()
    objs = {o["name"]: {f["name"]: (f["type"], bool(f.get("sorted") and f.get("unique")))
                        for f in o.get("field", [])} for o in schema["object"]}
    return schema["root"], objs


def _itf_typed(v: Any, t: str, is_set: bool) -> Any:
    """``v`` (of schema type ``t``) in ITF: set fields as ``#set``, the rest as :func:`_itf`."""
    objs = _schema_types()[1]
    m = _LIST.match(t)
    if m and isinstance(v, list):
        items = [_itf_typed(x, m.group(1), False) for x in v]
        return {"#set": items} if is_set else items
    if t in objs and isinstance(v, Mapping):
        return {k: _itf_typed(x, *objs[t].get(k, ("?", False))) for k, x in v.items()}
    return _itf(v)


def _itf_action(action: tuple[str, tuple] | None) -> dict[str, Any]:
    if action is None:
        return {"tag": "Init", "value": _UNIT}
    js = action_json(*action)
    return {"tag": "Step", "value": {"name": js["name"], "args": {"#tup": _itf(js["args"])}}}


def _without_nulls(v: Any) -> Any:
    """A step's variant values for ITF, which has no null: a broker field's "none" is written 0 (no
    broker has id 0) and a missing controller as an empty record; :func:`_with_nulls` undoes it."""
    if v is None:
        return 0
    if isinstance(v, dict):
        return {k: ({} if k == "controller" and x is None else _without_nulls(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [_without_nulls(x) for x in v]
    return v


def _with_nulls(v: Any, header: dict[str, Any] | None) -> Any:
    """ITF's variant values back as JSON lines has them: 0 in a broker field is none, ``{}`` as the
    controller is none (the header's field kinds say which fields hold a broker)."""
    if not isinstance(v, dict) or not header:
        return v
    brokers = {f["name"] for f in header["fields"] if f.get("kind") == "broker"}

    def record(r: Any) -> Any:
        return {k: (None if k in brokers and x == 0 else x) for k, x in r.items()} if isinstance(r, dict) else r

    out: dict[str, Any] = {}
    for place, x in v.items():
        if place == "controller":
            out[place] = None if x == {} else record(x)
        else:
            out[place] = [record(r) for r in x] if isinstance(x, list) else x
    return out


def dumps_itf(trace: Trace) -> str:
    root = _schema_types()[0]
    has_values = any(s.variant is not None for s in trace.steps)
    states = []
    for s in trace.steps:
        states.append({"#meta": {"index": s.index},
                       "mbt::actionTaken": "init" if s.action is None else s.action[0],
                       "action": _itf_action(s.action), "observation": _itf_typed(s.observation, root, False),
                       "acked": [{"#set": _itf(ids)} for ids in s.acked]}
                      | ({_VARIANT_KEY: _itf(_without_nulls(s.variant))} if has_values else {}))
    doc: dict[str, Any] = {"#meta": {"format": "ITF", "format-description": ITF_DESCRIPTION,
                                     "source": f"isrcheck {trace.model or ''}".strip(),
                                     "description": trace.description or f"isrcheck {trace.kind}",
                                     "isrcheck": trace.header(), _ITF_ENCODING_KEY: ITF_ENCODING},
                           "vars": list(_ITF_VARS) + ([_VARIANT_KEY] if has_values else []), "states": states}
    if trace.loop is not None:
        doc["loop"] = trace.loop
    return json.dumps(doc, separators=(",", ":")) + "\n"


def write_trace(trace: Trace, path: str | Path, fmt: str | None = None) -> str:
    """Write ``trace`` to ``path`` as ``jsonl`` or ``itf`` (default: from the name, ``.itf.json`` -> ITF)."""
    fmt = fmt or ("itf" if str(path).endswith((".itf.json", ".itf")) else "jsonl")
    if fmt not in ("jsonl", "itf"):
        raise TraceError(f"unknown trace format {fmt!r} (jsonl or itf)")
    text = dumps_itf(trace) if fmt == "itf" else dumps_jsonl(trace)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise TraceError(f"cannot write {path}: {e.strerror}") from None
    return fmt


# ---------------------------------------------------------------------------- reading
def _check_header(head: Any, where: str) -> tuple[Config, dict[str, Any]]:
    h = check_envelope(head, where, TraceError, what="trace", fmt=FORMAT, version=VERSION,
                       version_name="trace format version", keys=_HEADER_KEYS,
                       required=("tool", "tool_version", "kind", "generation", "config", "steps"))
    if h["kind"] not in KINDS:
        raise TraceError(f"{where}: kind must be one of {', '.join(KINDS)}, got {short(h['kind'])}")
    for k in ("model", "property"):
        if h.get(k) is not None and not isinstance(h[k], str):
            raise TraceError(f"{where}: {k} must be a string or null")
    seed = h.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TraceError(f"{where}: seed must be an integer or null, got {short(seed)}")
    if not isinstance(h.get("description", ""), str):
        raise TraceError(f"{where}: description must be a string")
    steps = h["steps"]
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise TraceError(f"{where}: steps must be an integer >= 0")
    loop = h.get("loop")
    if loop is not None and (isinstance(loop, bool) or not isinstance(loop, int)):
        raise TraceError(f"{where}: loop must be an integer or null, got {short(loop)}")
    if loop is not None and not 0 <= loop <= steps:
        raise TraceError(f"{where}: loop {loop} is out of range (0..{steps}, the trace's state indices)")
    if h.get(_VARIANT_KEY) is not None:
        _check_variant_header(h[_VARIANT_KEY], where)
    cfg = header_config(h, where, TraceError)
    return cfg, h


def _check_acked(v: Any, partitions: int, where: str) -> list[list[int]]:
    if not isinstance(v, list) or len(v) != partitions:
        raise TraceError(f"{where}: acked must be a list of {partitions} list(s) of record ids")
    for p, ids in enumerate(v):
        if (not isinstance(ids, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in ids)
                or ids != sorted(set(ids))):
            raise TraceError(f"{where}: acked[{p}] must be distinct record ids >= 1 in ascending order, got {short(ids)}")
    return v


def _check_variant_values(v: Any, where: str) -> dict[str, Any]:
    """A step's variant values: an object of the known places whose leaves are integers, booleans,
    null or lists of them (what model.extension.state_values writes); what they mean is checked
    by the replay against the variant (``check_replay``)."""
    if not isinstance(v, dict) or not v or set(v) - _VARIANT_PLACES:
        raise TraceError(f"{where}: variant must be an object of {', '.join(sorted(_VARIANT_PLACES))}, got {short(v)}")

    def leaf_ok(x: Any) -> bool:
        if x is None or isinstance(x, (bool, int)):
            return True
        if isinstance(x, list):
            return all(isinstance(y, int) and not isinstance(y, bool) for y in x)
        return False

    def record_ok(r: Any) -> bool:
        return isinstance(r, dict) and all(isinstance(k, str) and leaf_ok(x) for k, x in r.items())

    for place, x in v.items():
        ok = (record_ok(x) or x is None) if place == "controller" else (
            isinstance(x, list) and all(record_ok(r) for r in x))
        if not ok:
            raise TraceError(f"{where}: variant.{place} is not a list of field objects of integers, booleans, "
                             f"null or integer lists: {short(x)}")
    return v


def _check_variant_header(v: Any, where: str) -> None:
    if (not isinstance(v, dict) or set(v) != {"name", "fields"} or not isinstance(v["name"], str)
            or not isinstance(v["fields"], list)):
        raise TraceError(f"{where}: variant must be {{\"name\": ..., \"fields\": [...]}}, got {short(v)}")
    for f in v["fields"]:
        if (not isinstance(f, dict) or set(f) != {"name", "scope", "kind", "initial", "persistent"}
                or not all(isinstance(f[k], str) for k in ("name", "scope", "kind"))):
            raise TraceError(f"{where}: a variant field is {{name, scope, kind, initial, persistent}}, got {short(f)}")


def _check_step(raw: Any, index: int, cfg: Config, where: str) -> TraceStep:
    if not isinstance(raw, dict):
        raise TraceError(f"{where}: a step must be a JSON object")
    keys = set(raw) - {_VARIANT_KEY}
    if keys != _STEP_KEYS:
        extra, missing = sorted(keys - _STEP_KEYS), sorted(_STEP_KEYS - keys)
        raise TraceError(f"{where}: " + (f"unknown key {extra[0]!r}" if extra else f"missing {', '.join(missing)}"))
    if raw["index"] != index or isinstance(raw["index"], bool):
        raise TraceError(f"{where}: index {short(raw['index'])} out of sequence (expected {index})")
    act = raw["action"]
    if index == 0:
        if act is not None:
            raise TraceError(f"{where}: the initial state (index 0) has no action; got {short(act)}")
        action = None
    else:
        try:
            action = check_action(act, cfg.brokers, cfg.partitions)
        except VocabularyError as e:
            raise TraceError(f"{where}: {e}") from None
    obs = raw["observation"]
    try:
        validate_observation(obs)
    except ObservationError as e:
        raise TraceError(f"{where}: observation: {e}") from None
    if len(obs["brokers"]) != cfg.brokers or len(obs["partitions"]) != cfg.partitions:
        raise TraceError(f"{where}: observation has {len(obs['brokers'])} broker(s) and {len(obs['partitions'])} "
                         f"partition(s); the configuration has {cfg.brokers} and {cfg.partitions}")
    want = [(b, p) for b in range(1, cfg.brokers + 1) for p in range(cfg.partitions)]
    if ([x["id"] for x in obs["brokers"]] != list(range(1, cfg.brokers + 1))
            or [x["index"] for x in obs["partitions"]] != list(range(cfg.partitions))
            or [(x["broker"], x["partition"]) for x in obs["replicas"]] != want):
        raise TraceError(f"{where}: observation lists brokers, partitions or replicas out of the schema's order")
    values = _check_variant_values(raw[_VARIANT_KEY], where) if _VARIANT_KEY in raw else None
    return TraceStep(index, action, obs, _check_acked(raw["acked"], cfg.partitions, where), values)


def _finish(cfg: Config, h: dict[str, Any], steps: list[TraceStep], source: str) -> Trace:
    if not steps:
        raise TraceError(f"{source}: the trace has no initial state")
    if h["steps"] != len(steps) - 1:
        raise TraceError(f"{source}: the header announces {h['steps']} step(s), the file has {len(steps) - 1}")
    variant = h.get(_VARIANT_KEY)
    fields = bool(variant and variant["fields"])
    for st in steps:
        if (st.variant is not None) != fields:
            raise TraceError(f"{source}: step {st.index} " + (
                "lacks the variant values its header's fields announce" if fields else
                "has variant values but the header declares no variant fields"))
    loop = h.get("loop")
    if loop is not None and loop < len(steps) - 1:
        first, last = steps[loop], steps[-1]
        if last.observation != first.observation:
            raise TraceError(f"{source}: not a lasso: the last observation (step {last.index}) differs from the "
                             f"observation at loop {loop}{_first_difference(first.observation, last.observation)}")
        if last.acked != first.acked:
            raise TraceError(f"{source}: not a lasso: acked at the last step ({last.index}) differs from acked at "
                             f"loop {loop}")
    return Trace(cfg, steps, kind=h["kind"], model=h.get("model"), prop=h.get("property"), seed=h.get("seed"),
                 description=h.get("description", ""), tool_version=h["tool_version"], source=source, loop=loop,
                 variant=variant)


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    """``" (at partitions[0].leader)"``: where two observations first differ, for a message."""
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
        for k in a:
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{path}.{k}" if path else k)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f" (at {path})" if path else ""


def _loads_jsonl(text: str, source: str) -> Trace:
    lines = text_lines(text)
    if not lines:
        raise TraceError(f"{source}: empty file")
    cfg, h = _check_header(header_line(lines, source, TraceError), f"{source}: line 1")
    steps = [_check_step(raw, n - 2, cfg, f"{source}: line {n}") for n, raw in body_lines(lines, source, TraceError)]
    return _finish(cfg, h, steps, source)


_BIGINT = re.compile(r"^-?[0-9]{1,30}$")


def _from_itf(v: Any, where: str) -> Any:
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        if abs(v) > 2**53 - 1:
            raise TraceError(f"{where}: integer {v} outside JSON's safe range (use #bigint)")
        return v
    if isinstance(v, float):
        raise TraceError(f"{where}: numbers must be integers, got {v!r}")
    if isinstance(v, list):
        return [_from_itf(x, where) for x in v]
    if isinstance(v, dict):
        if "#bigint" in v:
            s = v["#bigint"]
            if set(v) != {"#bigint"} or not isinstance(s, str) or not _BIGINT.match(s):
                raise TraceError(f"{where}: malformed #bigint {short(v)}")
            return int(s)
        special = sorted(k for k in v if k.startswith("#"))
        if special:
            raise TraceError(f"{where}: ITF value {special[0]!r} is not used by isrcheck traces")
        return {k: _from_itf(x, where) for k, x in v.items()}
    raise TraceError(f"{where}: unexpected value {short(v)}")


def _from_itf_typed(v: Any, t: str, is_set: bool, where: str) -> Any:
    """Encoding 2: ``v`` of schema type ``t`` back to plain JSON; a set field must be ``#set``
    (its items come back in ascending order), and ``#set`` is refused anywhere else."""
    objs = _schema_types()[1]
    m = _LIST.match(t)
    if m and is_set:
        if not isinstance(v, dict) or set(v) != {"#set"} or not isinstance(v["#set"], list):
            raise TraceError(f"{where}: a set must be {{\"#set\": [...]}}, got {short(v)}")
        items = [_from_itf_typed(x, m.group(1), False, f"{where}[{i}]") for i, x in enumerate(v["#set"])]
        if all(isinstance(x, int) and not isinstance(x, bool) for x in items):
            items.sort()  # duplicates stay, for the schema's "distinct" check to name
        return items
    if m and isinstance(v, list):
        return [_from_itf_typed(x, m.group(1), False, f"{where}[{i}]") for i, x in enumerate(v)]
    if t in objs and isinstance(v, dict) and not any(k.startswith("#") for k in v):
        return {k: _from_itf_typed(x, *objs[t][k], f"{where}.{k}") if k in objs[t] else _from_itf(x, f"{where}.{k}")
                for k, x in v.items()}
    return _from_itf(v, where)


def _itf_action_v2(act: Any, i: int, where: str) -> Any:
    """Encoding 2's action variant back to ``None`` or ``{"name", "args"}`` (checked afterwards)."""
    if not isinstance(act, dict) or set(act) != {"tag", "value"} or act["tag"] not in ("Init", "Step"):
        raise TraceError(f"{where}: action must be a variant {{\"tag\": \"Init\"|\"Step\", \"value\": ...}}")
    if act["tag"] == "Init":
        if i > 0:
            raise TraceError(f"{where}: only the initial state has no action (tag Init)")
        if act["value"] != _UNIT:
            raise TraceError(f"{where}: the Init variant carries {_UNIT!r}, got {short(act['value'])}")
        return None
    val = act["value"]
    if (not isinstance(val, dict) or set(val) != {"name", "args"} or not isinstance(val["args"], dict)
            or set(val["args"]) != {"#tup"} or not isinstance(val["args"]["#tup"], list)):
        raise TraceError(f"{where}: a Step carries {{\"name\": ..., \"args\": {{\"#tup\": [...]}}}}, got {short(val)}")
    return {"name": _from_itf(val["name"], where), "args": _from_itf(val["args"]["#tup"], where)}


def _loads_itf(doc: Any, source: str) -> Trace:
    if not isinstance(doc, dict) or set(doc) - {"#meta", "vars", "states", "params", "loop"}:
        raise TraceError(f"{source}: not an ITF trace (expected an object with #meta, vars and states)")
    meta = doc.get("#meta")
    if not isinstance(meta, dict) or "isrcheck" not in meta:
        raise TraceError(f"{source}: not an isrcheck trace (its ITF #meta has no \"isrcheck\" header)")
    if meta.get("format", "ITF") != "ITF":
        raise TraceError(f"{source}: #meta.format must be \"ITF\"")
    encoding = meta.get(_ITF_ENCODING_KEY, 1)  # absent: the first encoding
    if _ITF_ENCODING_KEY in meta and (type(encoding) is not int or encoding != ITF_ENCODING):
        raise TraceError(f"{source}: #meta.{_ITF_ENCODING_KEY} must be {ITF_ENCODING} (or absent: the first "
                         f"encoding), got {short(encoding)}")
    cfg, h = _check_header(meta["isrcheck"], f"{source}: #meta.isrcheck")
    if "loop" in doc:
        loop = doc["loop"]
        if isinstance(loop, bool) or not isinstance(loop, int):
            raise TraceError(f"{source}: the ITF loop must be an integer, got {short(loop)}")
        if loop != h.get("loop"):
            raise TraceError(f"{source}: the ITF loop {loop} disagrees with #meta.isrcheck's loop {short(h.get('loop'))}")
    elif h.get("loop") is not None:
        raise TraceError(f"{source}: #meta.isrcheck has loop {h['loop']} but the ITF document has no top-level loop")
    names = doc.get("vars")
    if names != _ITF_VARS and names != _ITF_VARS + [_VARIANT_KEY]:
        raise TraceError(f"{source}: vars must be {_ITF_VARS} (and \"{_VARIANT_KEY}\" for a variant's fields), "
                         f"got {short(names)}")
    states = doc.get("states")
    if not isinstance(states, list):
        raise TraceError(f"{source}: states must be a list")
    steps = []
    for i, st in enumerate(states):
        where = f"{source}: state {i}"
        if not isinstance(st, dict) or set(st) != {"#meta", *names}:
            raise TraceError(f"{where}: a state must have #meta and exactly the variables {', '.join(names)}")
        m = st["#meta"]
        if not isinstance(m, dict) or m.get("index") != i:
            raise TraceError(f"{where}: #meta.index must be {i}")
        act = st["action"]
        if encoding == ITF_ENCODING:
            action = _itf_action_v2(act, i, where)
        else:
            if not isinstance(act, dict) or set(act) != {"tag", "value"} or act["tag"] not in ("None", "Some"):
                hint = (f" (tags Init and Step need #meta.{_ITF_ENCODING_KEY} = {ITF_ENCODING})"
                        if isinstance(act, dict) and act.get("tag") in ("Init", "Step") else "")
                raise TraceError(f"{where}: action must be a variant {{\"tag\": \"None\"|\"Some\", \"value\": ...}}"
                                 + hint)
            action = None if act["tag"] == "None" else _from_itf(act["value"], where)
        if i > 0 and action is None:
            raise TraceError(f"{where}: only the initial state has no action")
        taken = st["mbt::actionTaken"]
        want = "init" if action is None else (action.get("name") if isinstance(action, dict) else None)
        if taken != want:
            raise TraceError(f"{where}: mbt::actionTaken {short(taken)} disagrees with the action {short(want)}")
        if encoding == ITF_ENCODING:
            acked = st["acked"]
            if not isinstance(acked, list):
                raise TraceError(f"{where}: acked must be a list of sets of record ids")
            raw = {"index": i, "action": action,
                   "observation": _from_itf_typed(st["observation"], _schema_types()[0], False, f"{where}: observation"),
                   "acked": [_from_itf_typed(x, "list[int]", True, f"{where}: acked[{p}]") for p, x in enumerate(acked)]}
            if _VARIANT_KEY in st:
                raw[_VARIANT_KEY] = _with_nulls(_from_itf(st[_VARIANT_KEY], f"{where}: variant"),
                                                h.get(_VARIANT_KEY))
        else:
            raw = {"index": i, "action": action, "observation": _from_itf(st["observation"], where),
                   "acked": _from_itf(st["acked"], where)}
        steps.append(_check_step(raw, i, cfg, where))
    return _finish(cfg, h, steps, source)


def loads_trace(text: str, source: str = "<trace>") -> Trace:
    """Parse and validate a trace given as text (JSON lines or ITF)."""
    if len(text) > max_bytes(Kind.TRACE):
        raise TraceError(str(too_large(source, Kind.TRACE)))
    stripped = text.lstrip()
    if not stripped:
        raise TraceError(f"{source}: empty file")
    if not stripped.startswith("{"):
        raise TraceError(f"{source}: not an isrcheck trace (expected JSON lines or an ITF JSON object)")
    first = stripped.split("\n", 1)[0]
    try:
        head = parse_json(first)
    except ValueError:
        head = None
    if isinstance(head, dict) and "#meta" not in head:
        return _loads_jsonl(text, source)  # a first line that is a whole object: JSON lines (or not ours)
    try:
        check_json_depth(text, source)
        doc = parse_json(text)
    except InputError as e:
        raise TraceError(str(e)) from None
    except ValueError as e:
        raise TraceError(f"{source}: not an isrcheck trace (not JSON lines, and not one JSON document: {e})") from None
    return _loads_itf(doc, source)


def load_trace(path: str | Path) -> Trace:
    """Read and validate the trace file at ``path``."""
    # the bounded reader: a regular file, at most ISRCHECK_MAX_TRACE_BYTES
    return loads_trace(read_text(path, Kind.TRACE, TraceError, "not UTF-8 text (not an isrcheck trace)"), str(path))
