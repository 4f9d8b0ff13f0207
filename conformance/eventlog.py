"""Implementation -> model: structured event logs, and checking that a logged run is a model behaviour.

An event log is JSON lines. The first line is a header::

    {"format": "isrcheck-events", "version": 1, "tool": "isrcheck", "tool_version": "0.1.0",
     "source": "simulator", "generation": "high-watermark", "seed": 7, "config": {...},
     "facts": "delta", "silent": [], "max_silent": 0, "initial": {"controller.epoch": 1, ...}}

then one event per line::

    {"seq": 1, "t": 1, "kind": "action", "action": {"name": "Produce", "args": [1, 0]},
     "facts": {"replicas[1,0].log": [{"id": 1, "epoch": 0}], "replicas[1,0].leo": 1}}

- ``seq`` counts events from 1 without gaps; ``t`` (optional) is the logger's clock and never goes back.
- ``kind`` is ``"action"`` (something happened; the default) or ``"observation"`` (a snapshot only).
- ``action`` names the step in the vocabulary of specs/actions.toml, validated like a trace's;
  ``{"name": "Fetch"}`` without ``args`` means "some Fetch"; ``null`` means "some step, unnamed".
- ``facts`` are observation fields under the paths of :mod:`.observations` (``partitions[0].isr``,
  ``replicas[2,0].log``, ``acked[0]``, ...), each value validated against specs/observation.toml.
  With ``"facts": "delta"`` the header's ``initial`` is the complete first observation and each event
  lists exactly the fields that changed, so the log determines every observation of the run; with
  ``"partial"`` the facts are whatever the logger could see, and nothing else is constrained.
- ``silent`` lists actions that may happen without being logged (a real cluster does not log every
  fetch), at most ``max_silent`` of them around each event.

:func:`validate_log` checks that the run is a behaviour of the model: it keeps the set of model states
consistent with the events so far (starting from the initial state, which must match ``initial``)
and explains each event by a path ``silent* action silent*`` (``silent*`` only for an observation)
with at most ``max_silent`` silent steps, ending in a state whose observation agrees with the
event's facts. The first event no path explains is reported with the reason: the action is not
enabled in any candidate state, or the closest explanation and the fields it gets wrong.

:func:`record_simulator` writes such a log from the implementation's step-mode simulator run by its
own seeded scheduler (the model is not consulted while recording).
"""
from __future__ import annotations

import json
import re
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isrcheck import __version__
from isrcheck.invariants import build_model
from isrcheck.model.actions import Action
from isrcheck.engine.explore import successors
from isrcheck.model.config import Config
from isrcheck.model.observe import LazyObservation, acked_of, observe
from isrcheck.specs.actions import VocabularyError, action_json, action_text, actions as vocabulary, check_action
from isrcheck.specs.inputs import Kind, max_bytes, too_large
from isrcheck.specs.observation import ObservationError
from isrcheck.specs.observation import validate as validate_observation

from .headers import body_lines, check_envelope, header_config, header_line, read_text, short, text_lines
from .observations import field_paths, flatten, parse_path, unflatten

__all__ = ["Event", "EventLog", "EventLogError", "FORMAT", "Recorder", "ValidationResult", "dumps_log",
           "load_log", "loads_log", "record_simulator", "validate_log", "write_log"]

FORMAT = "isrcheck-events"
VERSION = 1
MAX_BYTES = Kind.EVENT_LOG.default  # the default cap; ISRCHECK_MAX_EVENT_LOG_BYTES raises it
_HEADER_KEYS = {"format", "version", "tool", "tool_version", "source", "generation", "seed", "config", "facts",
                "silent", "max_silent", "quiet", "settle", "initial", "description"}
_EVENT_KEYS = {"seq", "t", "kind", "action", "actor", "facts", "note"}
KINDS = ("action", "observation")


class EventLogError(ValueError):
    """A file that is not a valid isrcheck event log; the message is one line."""


@dataclass
class Event:
    seq: int
    kind: str = "action"
    action: tuple[str, tuple | None] | None = None  # (name, args or None for "any arguments")
    facts: dict[str, Any] = field(default_factory=dict)
    t: int | None = None
    actor: str | None = None
    note: str = ""
    line: int = 0  # where it was read from

    @property
    def label(self) -> str:
        if self.kind == "observation":
            what = "observation"
        elif self.action is None:
            what = "an unnamed step"
        elif self.action[1] is None:
            what = f"{self.action[0]}(...)"
        else:
            what = action_text(*self.action)
        return f"event {self.seq} ({what})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.seq}
        if self.t is not None:
            out["t"] = self.t
        out["kind"] = self.kind
        if self.kind == "action":
            if self.action is None:
                out["action"] = None
            elif self.action[1] is None:
                out["action"] = {"name": self.action[0]}
            else:
                out["action"] = action_json(*self.action)
        if self.actor:
            out["actor"] = self.actor
        out["facts"] = self.facts
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class EventLog:
    config: Config
    events: list[Event]
    initial: dict[str, Any]
    facts: str = "delta"  # "delta" | "partial"
    silent: tuple[str, ...] = ()
    max_silent: int = 0
    quiet: bool = False  # facts taken once the system was quiet; the next action came right after
    source: str = "unknown"
    seed: int | None = None
    description: str = ""
    tool_version: str = __version__
    path: str = ""
    settle: tuple[str, ...] = ()  # quiet logs: housekeeping a quiet system has finished (applied eagerly)

    def header(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "tool": "isrcheck", "tool_version": self.tool_version,
                "source": self.source, "generation": self.config.generation.value, "seed": self.seed,
                "config": self.config.to_dict(), "facts": self.facts, "silent": list(self.silent),
                "max_silent": self.max_silent, "quiet": self.quiet, "settle": list(self.settle), "initial": self.initial,
                "description": self.description}


# ---------------------------------------------------------------------------- writing
def dumps_log(log: EventLog) -> str:
    lines = [json.dumps(log.header(), separators=(",", ":"))]
    lines += [json.dumps(e.to_json(), separators=(",", ":")) for e in log.events]
    return "\n".join(lines) + "\n"


def write_log(log: EventLog, path: str | Path) -> None:
    try:
        Path(path).write_text(dumps_log(log), encoding="utf-8")
    except OSError as e:
        raise EventLogError(f"cannot write {path}: {e.strerror}") from None


# ---------------------------------------------------------------------------- reading
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class _FactChecker:
    """Checks fact paths and values against the schema, for one configuration."""

    def __init__(self, cfg: Config, template: Mapping[str, Any]) -> None:
        self.cfg = cfg
        self.paths = set(field_paths(cfg.brokers, cfg.partitions))
        self.template = dict(template)

    def check(self, facts: Any, where: str, complete: bool = False) -> dict[str, Any]:
        if not isinstance(facts, dict):
            raise EventLogError(f"{where}: facts must be an object of path: value")
        for p in facts:
            if p not in self.paths:
                raise EventLogError(f"{where}: unknown fact {short(p)} (paths look like partitions[0].isr, "
                                    f"replicas[2,0].log, acked[0]; brokers 1..{self.cfg.brokers}, "
                                    f"partitions 0..{self.cfg.partitions - 1})")
        if complete:
            missing = sorted(self.paths - set(facts))
            if missing:
                raise EventLogError(f"{where}: the initial facts of a delta log must be complete; missing {missing[0]}")
        self.check_values({**self.template, **facts}, where)
        return dict(facts)

    def check_values(self, flat: Mapping[str, Any], where: str) -> None:
        obs, acked = unflatten(flat, self.cfg.brokers, self.cfg.partitions)
        try:
            validate_observation(obs)
        except ObservationError as e:
            raise EventLogError(f"{where}: {_path_of(e.path, self.cfg.partitions)}: {e.problem}") from None
        for p, ids in enumerate(acked or []):
            if not isinstance(ids, list) or not all(_is_int(x) and x >= 1 for x in ids) or ids != sorted(set(ids)):
                raise EventLogError(f"{where}: acked[{p}] must be distinct record ids >= 1 in ascending order, "
                                    f"got {short(ids)}")


def _path_of(schema_path: str, partitions: int) -> str:
    """A schema position (``replicas[4].log[0].id``) in the paths of the facts (``replicas[2,1].log[0].id``)."""
    m = re.match(r"^(brokers|replicas)\[(\d+)\](.*)$", schema_path)
    if m is None:
        return schema_path
    i = int(m.group(2))
    if m.group(1) == "brokers":
        return f"brokers[{i + 1}]{m.group(3)}"
    return f"replicas[{i // partitions + 1},{i % partitions}]{m.group(3)}"


def _check_header(head: Any, where: str) -> tuple[Config, dict[str, Any]]:
    h = check_envelope(head, where, EventLogError, what="event log", fmt=FORMAT, version=VERSION,
                       version_name="event log version", keys=_HEADER_KEYS,
                       required=("tool", "tool_version", "config", "generation", "facts", "initial"))
    cfg = header_config(h, where, EventLogError)
    if h["facts"] not in ("delta", "partial"):
        raise EventLogError(f"{where}: facts must be \"delta\" or \"partial\", got {short(h['facts'])}")
    silent = h.get("silent", [])
    names = vocabulary()
    if not isinstance(silent, list) or not all(isinstance(x, str) for x in silent):
        raise EventLogError(f"{where}: silent must be a list of action names")
    for x in silent:
        if x not in names:
            raise EventLogError(f"{where}: silent names unknown action {x!r}")
    k = h.get("max_silent", 0)
    if not _is_int(k) or not 0 <= k <= 64:
        raise EventLogError(f"{where}: max_silent must be an integer in 0..64, got {short(k)}")
    seed = h.get("seed")
    if seed is not None and not _is_int(seed):
        raise EventLogError(f"{where}: seed must be an integer or null")
    if not isinstance(h.get("quiet", False), bool):
        raise EventLogError(f"{where}: quiet must be true or false")
    settle = h.get("settle", [])
    if not isinstance(settle, list) or not all(isinstance(x, str) and x in names for x in settle):
        raise EventLogError(f"{where}: settle must be a list of action names")
    if settle and not h.get("quiet", False):
        raise EventLogError(f"{where}: settle applies only to a quiet log")
    for key in ("source", "description"):
        if not isinstance(h.get(key, ""), str):
            raise EventLogError(f"{where}: {key} must be a string")
    return cfg, h


def _check_event(raw: Any, where: str, cfg: Config, facts: _FactChecker, line: int) -> Event:
    if not isinstance(raw, dict):
        raise EventLogError(f"{where}: an event must be a JSON object")
    extra = sorted(set(raw) - _EVENT_KEYS)
    if extra:
        raise EventLogError(f"{where}: unknown key {extra[0]!r}")
    seq = raw.get("seq")
    if not _is_int(seq):
        raise EventLogError(f"{where}: seq must be an integer, got {short(seq)}")
    where = f"{where} (seq {seq})"
    t = raw.get("t")
    if t is not None and not _is_int(t):
        raise EventLogError(f"{where}: t must be an integer, got {short(t)}")
    kind = raw.get("kind", "action")
    if kind not in KINDS:
        raise EventLogError(f"{where}: kind must be \"action\" or \"observation\", got {short(kind)}")
    action: tuple[str, tuple | None] | None = None
    if kind == "observation":
        if raw.get("action") is not None:
            raise EventLogError(f"{where}: an observation event names no action")
    else:
        a = raw.get("action")
        if isinstance(a, dict) and set(a) == {"name"}:
            if a["name"] not in vocabulary():
                raise EventLogError(f"{where}: unknown action {short(a['name'])}: not in specs/actions.toml")
            action = (a["name"], None)
        elif a is not None:
            try:
                action = check_action(a, cfg.brokers, cfg.partitions)
            except VocabularyError as e:
                raise EventLogError(f"{where}: {e}") from None
    actor = raw.get("actor")
    if actor is not None and not isinstance(actor, str):
        raise EventLogError(f"{where}: actor must be a string")
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise EventLogError(f"{where}: note must be a string")
    return Event(seq, kind, action, facts.check(raw.get("facts", {}), where), t, actor, note, line)


def _template(cfg: Config) -> dict[str, Any]:
    model = build_model(cfg, symmetry=False, properties=[])
    s = model.init_states()[0]
    return flatten(observe(s), acked_of(s))


def loads_log(text: str, source: str = "<log>") -> EventLog:
    """Parse and validate an event log given as text. Order is not checked here: :func:`validate_log` does."""
    if len(text) > max_bytes(Kind.EVENT_LOG):
        raise EventLogError(str(too_large(source, Kind.EVENT_LOG)))
    lines = text_lines(text)
    if not lines or not lines[0].lstrip().startswith("{"):
        raise EventLogError(f"{source}: not an isrcheck event log (expected JSON lines)")
    cfg, h = _check_header(header_line(lines, source, EventLogError), f"{source}: line 1")
    checker = _FactChecker(cfg, _template(cfg))
    initial = checker.check(h["initial"], f"{source}: line 1: initial", complete=h["facts"] == "delta")
    events = [_check_event(raw, f"{source}: line {n}", cfg, checker, n)
              for n, raw in body_lines(lines, source, EventLogError)]
    return EventLog(cfg, events, initial, h["facts"], tuple(h.get("silent", [])), h.get("max_silent", 0),
                    h.get("quiet", False), h.get("source", "unknown"), h.get("seed"), h.get("description", ""),
                    h["tool_version"], source, tuple(h.get("settle", [])))


def load_log(path: str | Path) -> EventLog:
    # the bounded reader: a regular file, at most ISRCHECK_MAX_EVENT_LOG_BYTES
    return loads_log(read_text(path, Kind.EVENT_LOG, EventLogError, "not UTF-8 text (not an isrcheck event log)"),
                     str(path))


# ---------------------------------------------------------------------------- validation
@dataclass
class ValidationResult:
    ok: bool
    events: int  # events in the log
    explained: int  # events explained before the first failure
    seconds: float
    failed_event: Event | None = None
    reason: str = ""
    details: list[str] = field(default_factory=list)
    max_candidates: int = 1
    silent_steps: int = 0  # silent steps in the first explanation found for each event, summed

    @property
    def events_per_second(self) -> float:
        return self.explained / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        if self.ok:
            return f"every one of the {self.events} event(s) is explained by the model"
        return self.reason


def _mismatches(flat: Mapping[str, Any], target: Mapping[str, Any]) -> list[str]:
    out = []
    for p, v in target.items():
        w = flat.get(p)
        if w != v or type(w) is not type(v):
            out.append(p)
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, list) and v and all(isinstance(x, dict) and set(x) == {"id", "epoch"} for x in v):
        return "[" + " ".join(f"m{x['id']}@e{x['epoch']}" for x in v) + "]"
    return json.dumps(v)


def _matches_action(a: Action, want: tuple[str, tuple | None] | None) -> bool:
    if want is None:
        return True
    return a.name == want[0] and (want[1] is None or tuple(a.args) == tuple(want[1]))


def validate_log(log: EventLog, max_candidates: int = 20_000) -> ValidationResult:
    """Check that ``log`` is a behaviour of the model (see the module's docstring)."""
    start = time.perf_counter()
    cfg = log.config
    model = build_model(cfg, symmetry=False, properties=[])
    init = model.init_states()[0]
    settle = tuple(log.settle)
    silent = set(log.silent) - set(settle)
    k_max = log.max_silent
    view_cache: dict[int, tuple[LazyObservation, _LazyAcked]] = {}
    nb, np_ = cfg.brokers, cfg.partitions

    def view_of(s: Any, fp: int) -> tuple[LazyObservation, _LazyAcked]:
        """A candidate's observation, built only as far as an event's facts read it."""
        v = view_cache.get(fp)
        if v is None:
            if len(view_cache) > 200_000:
                view_cache.clear()
            v = view_cache[fp] = (LazyObservation(s), _LazyAcked(s))
        return v

    result = ValidationResult(False, len(log.events), 0, 0.0)

    def fail(ev: Event | None, reason: str, details: Sequence[str] = ()) -> ValidationResult:
        result.failed_event = ev
        result.reason = reason
        result.details = list(details)
        result.seconds = time.perf_counter() - start
        return result

    fp0 = hash(init)
    f0 = flatten(observe(init), acked_of(init))
    bad = _mismatches(f0, log.initial)
    if bad:
        return fail(None, f"the initial state: the model's initial state disagrees with the log on {len(bad)} "
                          f"field(s), first {bad[0]}: model {_fmt(f0.get(bad[0]))}, log {_fmt(log.initial[bad[0]])}",
                    [f"{p}: model {_fmt(f0.get(p))}, log {_fmt(log.initial[p])}" for p in bad[:8]])
    candidates: dict[int, Any] = {fp0: init}
    expected = dict(log.initial) if log.facts == "delta" else None
    prev_seq, prev_t = 0, None
    for pos, ev in enumerate(log.events):
        if ev.seq != prev_seq + 1:
            later = next((e for e in log.events[pos + 1:] if e.seq == prev_seq + 1), None)
            if ev.seq <= prev_seq or later is not None:
                where = f", line {later.line}" if later is not None and later.line else ""
                what = "events out of order" + (f" (seq {later.seq} comes later{where})" if later else "")
            else:
                what = f"seq {prev_seq + 1} is missing"
            return fail(ev, f"{ev.label}: seq {ev.seq} after seq {prev_seq}: {what}")
        if ev.t is not None:
            if prev_t is not None and ev.t < prev_t:
                return fail(ev, f"{ev.label}: time goes back (t={ev.t} after t={prev_t}): events out of order")
            prev_t = ev.t
        prev_seq = ev.seq
        if expected is not None:
            expected.update(ev.facts)
            target: Mapping[str, Any] = expected
        else:
            target = ev.facts
        found, closest, main_seen, silent_used = _explain(model, candidates, ev, _Getters(target, nb, np_), silent,
                                                          k_max, view_of, max_candidates, log.quiet, settle)
        if found is None:
            return fail(ev, f"{ev.label}: explained by more than {max_candidates} model states: too ambiguous to "
                            f"go on (log more facts, or fewer silent steps)")
        if not found:
            return fail(ev, *_why(ev, candidates, closest, main_seen, model, k_max, silent, target))
        candidates = found
        result.explained += 1
        result.silent_steps += silent_used
        result.max_candidates = max(result.max_candidates, len(found))
    result.ok = True
    result.seconds = time.perf_counter() - start
    return result


class _LazyAcked:
    """A candidate's acknowledged write ids per partition (:func:`acked_of`), computed when first read."""

    __slots__ = ("_state", "_ids")

    def __init__(self, state: Any) -> None:
        self._state = state
        self._ids: list[list[int]] | None = None

    def __getitem__(self, p: int) -> list[int]:
        if self._ids is None:
            self._ids = acked_of(self._state)
        return self._ids[p]


class _Getters:
    """The facts of one event, each compiled to a direct lookup in an observation (no flattening)."""

    def __init__(self, target: Mapping[str, Any], brokers: int, partitions: int) -> None:
        self.items: list[tuple[str, Any, Any]] = []
        for path, want in target.items():
            kind, key, f = parse_path(path)
            if kind == "controller":
                get = (lambda f: lambda o, a: o["controller"][f])(f)
            elif kind == "brokers":
                get = (lambda i, f: lambda o, a: o["brokers"][i][f])(key[0] - 1, f)
            elif kind == "partitions":
                get = (lambda i, f: lambda o, a: o["partitions"][i][f])(key[0], f)
            elif kind == "replicas":
                get = (lambda i, f: lambda o, a: o["replicas"][i][f])((key[0] - 1) * partitions + key[1], f)
            else:
                get = (lambda i: lambda o, a: a[i])(key[0])
            self.items.append((path, want, get))

    def mismatches(self, obs: Any, acked: Any) -> list[str]:
        out = []
        for path, want, get in self.items:
            got = get(obs, acked)
            if got != want or type(got) is not type(want):
                out.append(path)
        return out

    def value(self, path: str, obs: Any, acked: Any) -> Any:
        return next(get(obs, acked) for p, _, get in self.items if p == path)

    def wanted(self, path: str) -> Any:
        return next(w for p, w, _ in self.items if p == path)


def _explain(model: Any, candidates: Mapping[int, Any], ev: Event, facts: _Getters, silent: set[str],
             k_max: int, view_of: Any, cap: int, quiet: bool = False,
             settle: Sequence[str] = ()) -> tuple[dict[int, Any] | None, Any, bool, int]:
    """States explaining ``ev`` from ``candidates``: paths silent* main silent* (or silent* for an observation).

    Ordinarily a state that already agrees with the facts is not expanded further: silent steps after
    it are the next event's leading silent steps, explored from it then. In a ``quiet`` log nothing
    happens between a snapshot and the next action, so there are no leading silent steps, and every
    state of the trailing closure that agrees with the facts is a candidate. The ``settle`` actions
    (housekeeping such as HW checkpoints, which a quiet system has finished) are not interleaved: they
    are applied, to a fixpoint, after every step.
    """
    start_phase = 1 if ev.kind == "observation" else 0
    queue: deque[tuple[Any, int, int, int, tuple]] = deque()
    seen: dict[tuple[int, int], int] = {}
    for fp, s in candidates.items():
        seen[(fp, start_phase)] = 0
        queue.append((s, fp, start_phase, 0, ()))
    found: dict[int, Any] = {}
    closest: tuple[int, tuple, list[str], dict[str, Any]] | None = None
    main_seen = False
    first_silent = -1
    while queue:
        s, fp, ph, k, path = queue.popleft()
        if ph == 1:
            obs, acked = view_of(s, fp)
            bad = facts.mismatches(obs, acked)
            if not bad:
                if fp not in found:
                    found[fp] = s
                    if first_silent < 0:
                        first_silent = k
                    if len(found) > cap:
                        return None, None, True, 0
                if not quiet:
                    continue
            if closest is None or len(bad) < closest[0]:
                closest = (len(bad), path, bad, {p: facts.value(p, obs, acked) for p in bad[:8]})
        can_silent = k < k_max and (ph == 1 or not quiet)
        if ph == 1 and not can_silent:
            continue
        def wanted(a: Any) -> bool:
            return (ph == 0 and _matches_action(a, ev.action)) or (can_silent and a.name in silent)

        for a, t in successors(model, s, wanted):
            main = ph == 0 and _matches_action(a, ev.action)
            hush = can_silent and a.name in silent
            if settle:
                t = _settled(model, t, settle)
            tfp = hash(t)
            if main:
                main_seen = True
                key = (tfp, 1)
                if seen.get(key, 1 << 30) > k:
                    seen[key] = k
                    queue.append((t, tfp, 1, k, path + (a,)))
            if hush:
                key = (tfp, ph)
                if seen.get(key, 1 << 30) > k + 1:
                    seen[key] = k + 1
                    queue.append((t, tfp, ph, k + 1, path + (a,)))
    return found, closest, main_seen or ev.kind == "observation", max(first_silent, 0)


def _settled(model: Any, s: Any, names: Sequence[str]) -> Any:
    """``s`` after every enabled ``names`` action that changes it, until none does."""
    for _ in range(64):
        for _a, t in successors(model, s, lambda a: a.name in names):
            if t != s:
                s = t
                break
        else:
            return s
    return s


def _why(ev: Event, candidates: Mapping[int, Any], closest: Any, main_seen: bool, model: Any, k_max: int,
         silent: set[str], target: Mapping[str, Any]) -> tuple[str, list[str]]:
    n = len(candidates)
    within = f" with up to {k_max} unlogged step(s) of {'/'.join(sorted(silent))}" if k_max and silent else ""
    if not main_seen:
        name = ev.action[0] if ev.action else "any action"
        what = action_text(*ev.action) if ev.action and ev.action[1] is not None else f"{name}"
        s = next(iter(candidates.values()))
        enabled = [str(a) for a in model.actions(s)]
        return (f"{ev.label}: the model cannot take {what} in any of its {n} candidate state(s){within}",
                [f"enabled in the first candidate: {', '.join(enabled[:12]) or 'nothing'}"
                 + (" ..." if len(enabled) > 12 else "")])
    if closest is None:
        return (f"{ev.label}: no model step explains it{within}", [])
    _, path, bad, flat = closest
    via = " then ".join(str(a) for a in path) or "no step"
    first = bad[0]
    reason = (f"{ev.label}: no model step explains it; the closest explanation ({via}, from {n} candidate "
              f"state(s){within}) gives {first} = {_fmt(flat.get(first))} where the log says {_fmt(target[first])}")
    if len(bad) > 1:
        reason += f" (and {len(bad) - 1} more field(s))"
    return reason, [f"{p}: model {_fmt(flat.get(p))}, log {_fmt(target[p])}" for p in bad[:8]]


# ---------------------------------------------------------------------------- recording
class Recorder:
    """Builds an event log from successive observations of a run (any driver)."""

    def __init__(self, config: Config, initial: Mapping[str, Any], *, facts: str = "delta", source: str = "unknown",
                 seed: int | None = None, silent: Iterable[str] = (), max_silent: int = 0, quiet: bool = False,
                 settle: Iterable[str] = (), description: str = "") -> None:
        self.log = EventLog(config, [], dict(initial), facts, tuple(silent), max_silent, quiet, source, seed,
                            description, settle=tuple(settle))
        self._last = dict(initial)

    def event(self, action: tuple[str, tuple | None] | None, flat_after: Mapping[str, Any], *, kind: str = "action",
              t: int | None = None, actor: str | None = None, note: str = "") -> Event:
        if self.log.facts == "delta":
            facts = {p: v for p, v in flat_after.items()
                     if p not in self._last or self._last[p] != v or type(self._last[p]) is not type(v)}
        else:
            facts = dict(flat_after)
        self._last.update(flat_after)
        ev = Event(len(self.log.events) + 1, kind, action, facts, t, actor, note)
        self.log.events.append(ev)
        return ev


def record_simulator(config: Config, seed: int = 0, steps: int = 100, *, anonymous: bool = False) -> EventLog:
    """Run the implementation's step-mode simulator with its own seeded scheduler and log every step.

    ``anonymous`` leaves the actions unnamed, so the validator must find them from the facts alone.
    """
    from .sides import ImplSide

    impl = ImplSide(config, seed=seed)
    flat = flatten(impl.observation(), impl.acked())
    rec = Recorder(config, flat, facts="delta", source="simulator", seed=seed,
                   description=f"the implementation's step-mode simulator, its scheduler seeded with {seed}"
                               + ("; actions not named" if anonymous else ""))
    for _ in range(steps):
        taken = impl.sim.step()
        if taken is None:
            break
        name, args = taken
        rec.event(None if anonymous else (name, tuple(args)), flatten(impl.observation(), impl.acked()),
                  t=impl.sim.now, actor=_actor(name, args))
    return rec.log


def _actor(name: str, args: tuple) -> str:
    spec = vocabulary()[name]
    if spec.actor == "controller":
        return f"controller {args[0]}"
    if spec.actor == "broker":
        return f"broker {args[0]}"
    return spec.actor


def record_actions(config: Config, actions: Iterable[tuple[str, tuple]], *, source: str = "simulator") -> EventLog:
    """Drive the implementation's step-mode simulator through ``actions`` and log each step (delta facts)."""
    from .sides import ImplSide

    impl = ImplSide(config)
    rec = Recorder(config, flatten(impl.observation(), impl.acked()), facts="delta", source=source,
                   description="the implementation's step-mode simulator driven through a script")
    for name, args in actions:
        impl.step(name, tuple(args))
        rec.event((name, tuple(args)), flatten(impl.observation(), impl.acked()), t=impl.sim.now,
                  actor=_actor(name, tuple(args)))
    return rec.log


def coarsen(log: EventLog, silent: Iterable[str], keep: Any, max_silent: int) -> EventLog:
    """A partial log, as a coarse logger would write it: events of the ``silent`` actions dropped, and
    each remaining event carrying only the fields ``keep(path)`` selects, of the whole observation then.

    ``log`` must be a delta log (so the whole observation after each event is known).
    """
    if log.facts != "delta":
        raise ValueError("coarsen needs a delta log")
    silent = tuple(sorted(set(silent)))
    full = dict(log.initial)
    out = EventLog(log.config, [], {p: v for p, v in full.items() if keep(p)}, "partial", silent, max_silent,
                   False, log.source, log.seed, (log.description + "; coarsened").strip("; "))
    for ev in log.events:
        full.update(ev.facts)
        if ev.action is not None and ev.action[0] in silent:
            continue
        out.events.append(Event(len(out.events) + 1, ev.kind, ev.action, {p: v for p, v in full.items() if keep(p)},
                                ev.t, ev.actor, ev.note))
    return out
