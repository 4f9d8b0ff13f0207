"""A saved trace file (JSON lines or ITF, as ``isrcheck traces export`` writes them) back as model steps.

A trace file stores observations (specs/observation.toml), not the model's whole state, so it
cannot be drawn as ``check`` draws a counterexample by itself. Its actions are replayed on the
model of its configuration instead, and every replayed state's observation and acknowledged writes
are compared with the stored ones: the table is then the file's trace, not a look-alike. A file
written from a protocol variant replays only with that variant (``--variant``); anything that does
not replay, or replays to other observations, is a one-line error naming the step.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isrcheck.conformance.traces import Trace, TraceError, load_trace
from isrcheck.engine.core import Step
from isrcheck.inputs.scenario import Scenario, ScenarioError, replay
from isrcheck.invariants import build_model
from isrcheck.model.actions import Action
from isrcheck.model.extension import state_values
from isrcheck.model.observe import acked_of, observe
from isrcheck.specs.inputs import InputError, Kind, read_head

__all__ = ["TRACE_SUFFIXES", "ReplayedTrace", "check_replay", "is_trace_file", "replay_trace", "scenario_of_trace"]

#: names ``traces export`` gives (``--format itf`` writes ``.itf.json``; any other name is JSON lines)
TRACE_SUFFIXES = (".jsonl", ".itf.json", ".json")


def is_trace_file(path: str) -> bool:
    """Whether ``path`` names a trace file rather than a TOML scenario: by its name, or (for any
    other name) by its first character, ``{``, which no TOML document starts with."""
    if path.lower().endswith(TRACE_SUFFIXES):
        return True
    try:  # the bounded reader: never blocks on a FIFO or reads a device (refused again, by name, later)
        head = read_head(path, Kind.SCENARIO, 4096)
    except InputError:
        return False
    return head.lstrip().startswith(b"{")


def _action(name: str, args: Sequence[Any]) -> Action:
    return Action(name, tuple(tuple(a) if isinstance(a, list) else a for a in args))


def _difference(a: Any, b: Any, path: str = "") -> str:
    """Where two observations first differ: ``partitions[0].leader``."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _difference(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _difference(x, y, f"{path}[{i}]")
    return f"{path or 'the observation'} (stored {a!r}, replayed {b!r})"


@dataclass(frozen=True)
class ReplayedTrace:
    trace: Trace
    steps: list[Step]


def check_replay(t: Trace, steps: Sequence[Step], protocol: Any = None) -> None:
    """That the replayed ``steps`` observe as ``t`` stores them, at every step, a variant's fields
    included; a :class:`TraceError` naming the first step and field that differ otherwise. A trace
    written with a variant is replayed only with one (``protocol``): the file names it, and isrcheck
    never imports what a file names."""
    wrote = t.variant["name"] if t.variant else None
    if wrote and protocol is None:
        raise TraceError(f"{t.label}: written with the variant {wrote}; give --variant {wrote} to replay it")
    extension = protocol.extension if protocol is not None and not protocol.extension.empty else None
    for stored, st in zip(t.steps, steps):
        if stored.variant is not None:
            seen_values = None if extension is None else state_values(st.state, extension)
            if seen_values != stored.variant:
                raise TraceError(f"{t.label}: step {stored.index}: the replay's variant fields "
                                 f"{_difference(stored.variant, seen_values)} differ from the file's (another "
                                 "variant, or another version of it?)")
        seen = observe(st.state)
        if seen != stored.observation:
            raise TraceError(f"{t.label}: step {stored.index}: the model's replay differs from the stored "
                             f"observation at {_difference(stored.observation, seen)} (written from a protocol "
                             "variant? give --variant)")
        if acked_of(st.state) != stored.acked:
            raise TraceError(f"{t.label}: step {stored.index}: the model's replay acknowledges "
                             f"{acked_of(st.state)}, the file {stored.acked}")


def replay_trace(t: Trace, protocol: Any = None) -> ReplayedTrace:
    """Replay ``t``'s actions on its configuration's model (or ``protocol``) and check that every
    state observes as stored; a :class:`TraceError` otherwise."""
    model = build_model(t.config, protocol=protocol, symmetry=False)
    try:
        steps = replay(model, [_action(n, a) for n, a in t.actions], t.label)
    except ScenarioError as e:
        raise TraceError(f"{e} (written from a protocol variant? give --variant)") from None
    check_replay(t, steps, protocol)
    return ReplayedTrace(t, steps)


def scenario_of_trace(path: str) -> tuple[Scenario, Trace]:
    """A trace file as the scenario ``isrcheck run`` replays (its configuration and actions), and
    the trace itself, to check the replay against (:func:`check_replay`)."""
    try:
        t = load_trace(Path(path))
    except TraceError as e:
        raise ScenarioError(str(e)) from None
    description = t.description or (f"{t.kind} of {t.model}" if t.model else t.kind)
    return Scenario(path, description, t.model, t.config, tuple(_action(n, a) for n, a in t.actions)), t
