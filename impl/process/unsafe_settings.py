"""Which of a cluster's settings the model shows unsafe: warnings derived from the manifest.

Why: the implementation starts, by default, with the seeds' semantics (``generation =
"high-watermark"``, ``min_insync_replicas = 1``), under which the model finds acknowledged writes
lost (``isrcheck check hw-truncation-one-crash``). An operator starting such a cluster should be
told, and told where to see the counterexample.

The mapping is data, not a list kept here: every model of ``specs/models.toml`` with ``expect =
"safety_failure"`` whose **settings** equal the cluster's is a finding. The settings are the keys of
:data:`SETTINGS`, which change what the brokers and controllers do, with defaults filled in on both
sides by the implementation's own reader (:func:`~isrcheck.impl.core.config.from_mapping`). Not compared: the shape
of the cluster (``brokers``, ``partitions``, ``replication_factor``, ``assignment``: the model's
small shapes stand for larger ones), the checker's bounds (``max_records``, ``faults``,
``operations``, ``unfair``), and two keys that describe the environment rather than what a real
process does (``stale_controller``: a deposed controller process does carry on until it notices;
``controller_connections``: separate processes always have separate connections). A model whose
configuration this implementation cannot read has settings no cluster can have, and is skipped.

Only the data of specs/ is read (impl/ never imports the model); the manifest's pinned outcomes
are what ``isrcheck gate`` checks, so a finding here is a counterexample the gate reproduces.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from isrcheck.specs import load
from isrcheck.specs.properties import NAMES
from isrcheck.specs.protocol import GENERATIONS

from ..core.config import ConfigError, ImplConfig, from_mapping

__all__ = ["SETTINGS", "Entry", "Finding", "entries", "findings", "nearest_failure", "safe_generations", "settings_of",
           "warning_lines"]

SETTINGS = ("generation", "min_insync_replicas", "unclean_leader_election", "hw_checkpoint", "acks",
            "detect_restarts", "fenced_controller_writes", "fenced_reassignment_steps", "max_fetch_records",
            "reintroduce")  # a Kafka bug put back is a setting too: its history-kafka-<id> model is a finding
LOSS = NAMES.NoCommittedWriteLost  # the property whose failure is a lost acknowledged write


@dataclass(frozen=True)
class Finding:
    """A manifest model that breaks ``property`` under the cluster's settings (counterexample of ``length`` steps)."""

    model: str
    property: str
    length: int


@dataclass(frozen=True)
class Entry:
    """What this module needs of a manifest model: its outcome and its settings."""

    name: str
    fails: bool  # expect = "safety_failure"
    property: str
    length: int
    settings: tuple[tuple[str, Any], ...]  # (key, value) in the order of SETTINGS


def settings_of(cfg: ImplConfig) -> dict[str, Any]:
    return {k: (cfg.generation.value if k == "generation" else getattr(cfg, k)) for k in SETTINGS}


def entries(manifest: Mapping[str, Any] | None = None) -> tuple[Entry, ...]:
    """The manifest's models (``manifest``: a parsed models.toml, default the shipped one), in its order,
    leaving out those whose configuration this implementation cannot read and those checked with a
    designer's variant (their verdicts are another protocol's, not this implementation's)."""
    raw = load("models.toml") if manifest is None else manifest
    models = raw.get("model", [])
    out: list[Entry] = []
    for m in models if isinstance(models, list) else []:
        if not isinstance(m, Mapping) or m.get("variant") is not None:
            continue
        try:
            settings = settings_of(from_mapping(m.get("config", {})))
        except ConfigError:
            continue
        out.append(Entry(str(m.get("name", "?")), m.get("expect") == "safety_failure", str(m.get("property", "?")),
                         int(m.get("length", 0)), tuple(settings.items())))
    return tuple(out)


def findings(cfg: ImplConfig, manifest: Mapping[str, Any] | None = None) -> tuple[Finding, ...]:
    """The failing manifest models whose settings are ``cfg``'s, in the manifest's order."""
    mine = tuple(settings_of(cfg).items())
    return tuple(Finding(e.name, e.property, e.length) for e in entries(manifest) if e.fails and e.settings == mine)


def safe_generations(cfg: ImplConfig, manifest: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The generations that, with ``cfg``'s other settings, some manifest model checks and none fails."""
    models = entries(manifest)
    out = []
    for g in GENERATIONS:
        mine = tuple(settings_of(dataclasses.replace(cfg, generation=g)).items())
        same = [e for e in models if e.settings == mine]
        if same and not any(e.fails for e in same):
            out.append(g.value)
    return tuple(out)


def nearest_failure(cfg: ImplConfig, manifest: Mapping[str, Any] | None = None) -> tuple[Entry, dict[str, Any]] | None:
    """For settings no manifest model has: the failing model of the same generation that differs in the
    fewest other settings (a lost write first, then the manifest's order), and ``cfg``'s values of those."""
    mine = settings_of(cfg)
    best: tuple[tuple[bool, int, int], Entry, dict[str, Any]] | None = None
    for i, e in enumerate(entries(manifest)):
        theirs = dict(e.settings)
        if not e.fails or theirs["generation"] != mine["generation"]:
            continue
        diff = {k: v for k, v in mine.items() if theirs[k] != v}
        key = (e.property != LOSS, len(diff), i)
        if best is None or key < best[0]:
            best = (key, e, diff)
    return None if best is None else (best[1], best[2])


def _show(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _set_option(key: str, v: Any) -> str:
    """``--set KEY=VALUE`` as a shell word (a string is quoted for TOML)."""
    return f"--set '{key}=\"{v}\"'" if isinstance(v, str) else f"--set {key}={_show(v)}"


def _describe(cfg: ImplConfig) -> str:
    mine, default = settings_of(cfg), settings_of(ImplConfig())
    changed = [f"{k}={_show(v)}" for k, v in mine.items() if k != "generation" and v != default[k]]
    rest = ", ".join(changed) if changed else "the other settings at their defaults"
    return f"generation={mine['generation']}, {rest}"


def warning_lines(cfg: ImplConfig, manifest: Mapping[str, Any] | None = None) -> list[str]:
    """The warning (lines starting ``warning:``), or nothing when the models with ``cfg``'s settings all pass.

    Three cases: failing models have the settings (one line per broken property, naming the first model
    and the command that shows it); no model has them (one line: not checked, and the command that
    checks the nearest failing model with them); or models have them and all pass (no warning)."""
    models = entries(manifest)
    mine = tuple(settings_of(cfg).items())
    if not any(e.settings == mine for e in models):
        near = nearest_failure(cfg, manifest)
        if near is None:
            return []
        e, diff = near
        sets = " ".join(_set_option(k, v) for k, v in diff.items())
        return [(f"warning: no manifest model has this cluster's settings ({_describe(cfg)}), so the model has not "
                 f"checked them; the nearest failing one ({e.name}, {e.property}) is checked with them by "
                 f"`isrcheck check {e.name} {sets}`")]
    found = findings(cfg, manifest)
    if not found:
        return []
    by_property: dict[str, list[Finding]] = {}
    for f in found:
        by_property.setdefault(f.property, []).append(f)
    order = sorted(by_property, key=lambda p: p != LOSS)  # lost writes first, then the manifest's order
    lines = [f"warning: the model shows this cluster's settings unsafe ({_describe(cfg)}):"]
    for prop in order:
        first, *others = by_property[prop]
        what = f"it loses acknowledged writes ({prop})" if prop == LOSS else f"it breaks {prop}"
        also = f"; also {', '.join(o.model for o in others)}" if others else ""
        lines.append(f"warning:   {what}: manifest model {first.model}, see `isrcheck check {first.model}` "
                     f"({first.length} steps{also})")
    safe = safe_generations(cfg, manifest)
    if safe:
        lines.append(f"warning:   the manifest models with generation={' or '.join(safe)} and the same other "
                     "settings find no violation")
    return lines
