"""Scenario files: a configuration and a scripted list of actions, replayed step by step.

A scenario is TOML and is never evaluated::

    description = "The leader crashes and the controller elects a new one."
    model = "replication"          # a model of specs/models.toml ...
    # [config]                     # ... or a configuration table, as in a config file
    # brokers = 3
    steps = ["Produce(1, 0)", "Fetch(2, 0)", "Crash(1)", "ProcessBrokerChange(1)"]

Every step must be enabled in the state the previous steps reached; if one is not, the error
names the step and lists what was enabled instead.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isrcheck.engine import explore
from isrcheck.engine.core import Checks, Model, Step
from isrcheck.engine.memory import CHECK_EVERY, resident_bytes
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.model.action_text import parse
from isrcheck.model.actions import Action
from isrcheck.model.config import Config, ConfigError, from_mapping
from isrcheck.specs.actions import ActionSyntaxError
from isrcheck.specs.inputs import Kind
from isrcheck.specs.manifest import ManifestError

_KEYS = {"description", "model", "config", "steps"}


class ScenarioError(ValueError):
    """A scenario that cannot be read or replayed; the message is one line."""


@dataclass(frozen=True)
class Scenario:
    path: str
    description: str
    model_name: str | None
    config: Config
    actions: tuple[Action, ...]


def parse_scenario(doc: Mapping[str, Any], source: str) -> Scenario:
    extra = sorted(set(doc) - _KEYS)
    if extra:
        raise ScenarioError(f"{source}: unknown key {extra[0]!r} (known: {', '.join(sorted(_KEYS))})")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError(f"{source}: description must be a string")
    name = doc.get("model")
    if ("model" in doc) == ("config" in doc):
        raise ScenarioError(f"{source}: give either model = \"NAME\" or a [config] table (exactly one)")
    if name is not None:
        if not isinstance(name, str):
            raise ScenarioError(f"{source}: model must be a model name, got {name!r}")
        try:
            config = manifest.get(name).config
        except ManifestError as e:
            raise ScenarioError(f"{source}: {e}") from None
    else:
        raw = doc["config"]
        if not isinstance(raw, dict):
            raise ScenarioError(f"{source}: config must be a table ([config])")
        try:
            config = from_mapping(raw)
        except ConfigError as e:
            raise ScenarioError(f"{source}: config: {e}") from None
    steps = doc.get("steps")
    if not isinstance(steps, list):
        raise ScenarioError(f"{source}: steps must be a list of actions, e.g. steps = [\"Produce(1, 0)\"]")
    actions = []
    for i, text in enumerate(steps):
        if not isinstance(text, str):
            raise ScenarioError(f"{source}: step {i + 1}: must be text like \"Fetch(2, 0)\", got {text!r}")
        try:
            actions.append(parse(text))
        except ActionSyntaxError as e:
            raise ScenarioError(f"{source}: step {i + 1}: {e}") from None
    return Scenario(source, description, name, config, tuple(actions))


def load_scenario(path: str | Path) -> Scenario:
    try:
        doc = manifest.read_toml(path, Kind.SCENARIO)
    except ConfigError as e:
        raise ScenarioError(str(e)) from None
    return parse_scenario(doc, str(path))


def replay(model: Model[Any, Any], actions: Sequence[Action], source: str = "scenario",
           max_memory: int | None = None) -> list[Step]:
    """Replay ``actions`` from the initial state; a step that is not enabled (or that breaks a
    state machine) is a one-line :class:`ScenarioError` naming the step. With ``max_memory``
    (bytes), the replay stops early, returning fewer steps, once resident memory passes it."""
    def over_memory(i: int) -> bool:
        return max_memory is not None and i % CHECK_EVERY == 0 and resident_bytes() > max_memory

    r = explore.replay(model, actions, stop=over_memory)
    if r.stopped_at is not None:
        listed = ", ".join(str(e) for e in r.enabled) or "nothing"
        raise ScenarioError(f"{source}: step {r.stopped_at}: {actions[r.stopped_at - 1]} is not enabled; "
                            f"enabled: {listed}")
    if r.fault is not None:
        e = r.fault
        raise ScenarioError(f"{source}: step {len(r.steps) - 1}: {r.steps[-1].action} breaks {e.property_name}: "
                            f"{e}") from None
    return r.steps


def broken_properties(model: Model[Any, Any], steps: Sequence[Step]) -> list[tuple[int, str]]:
    """``(step, property)`` for the first step at which each always/transition property breaks."""
    found: dict[str, int] = {}
    for i, ps in enumerate(explore.verdicts(steps, Checks.of(model))):
        for name in ps.broken:
            found.setdefault(name, i)
    return sorted(((i, name) for name, i in found.items()))


def run_scenario(path: str | Path) -> tuple[Config, list[Step]]:
    """Read and replay a scenario file: its configuration and the states it passes through."""
    sc = load_scenario(path)
    model = build_model(sc.config, symmetry=False)
    return sc.config, replay(model, sc.actions, str(path))
