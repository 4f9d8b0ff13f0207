"""Every target form a command that runs a model accepts, resolved in one place.

``check``, ``simulate``, ``graph``, ``report`` and ``traces export`` used to read their targets
each its own way: ``traces export`` had no ``--config``, ``report`` refused a scenario. They all
call :func:`resolve` now, so NAME means the same everywhere:

* a manifest model (``isrcheck list``), the default reading;
* a path to a scenario file (TOML with ``steps``; its ``[config]`` or named model) or a trace
  file (``.jsonl``, ``.itf.json``; the configuration it was written from): the file's
  configuration is the target, labelled with the path;
* or ``--config FILE``.

``--set KEY=VALUE`` applies to each form. The manifest's pins follow only the first
(``Target.entry``): a file is not the manifest's model even when it names one.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from isrcheck.inputs import manifest
from isrcheck.inputs.scenario import Scenario, load_scenario
from isrcheck.inputs.tracefile import is_trace_file, scenario_of_trace
from isrcheck.model.config import Config, ConfigError, apply_overrides, from_mapping, parse_override
from isrcheck.specs.manifest import Target

__all__ = ["is_file_target", "resolve", "scenario_of", "with_overrides"]


def is_file_target(name: str | None) -> bool:
    """Whether NAME is a path (a scenario or trace file) rather than a manifest model's name:
    an existing file, or a name no model has (a slash, a file suffix)."""
    if name is None:
        return False
    return Path(name).is_file() or "/" in name or name.endswith((".toml", ".json", ".jsonl"))


def scenario_of(path: str) -> Scenario:
    """The scenario a file gives: a TOML scenario as it is, a trace file as its actions."""
    if is_trace_file(path):
        return scenario_of_trace(path)[0]
    return load_scenario(path)


def with_overrides(cfg: Config, overrides: Sequence[str], source: str) -> Config:
    """``cfg`` with ``--set`` applied; a bad override names the file it was applied to."""
    if not overrides:
        return cfg
    try:
        return from_mapping(apply_overrides(cfg.to_dict(), list(overrides)))
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def resolve(name: str | None, config_file: str | None, overrides: Sequence[str] = ()) -> Target[Config]:
    """The target of NAME (a manifest model, a scenario or a trace file) or ``--config FILE``."""
    if not is_file_target(name):
        return manifest.resolve(name, config_file, overrides)
    for text in overrides:
        parse_override(text)
    if config_file:
        raise ConfigError("give either a NAME or FILE, or --config FILE, not both")
    assert name is not None
    sc = scenario_of(name)
    return Target(name, with_overrides(sc.config, overrides, name), None)
