"""Vacuity named: the parts of a configuration that can never take effect.

A check that says SUCCESS over a fault that never happened proves less than it seems to: a
quick restart budgeted with no crash to restart from, a lossy crash with no record to lose. Two
passes name such parts, so that every command that runs a model can print them as ``warning:``
lines (and ``--strict`` can make them fail the run):

* :func:`static_warnings`, before the search: from the configuration alone, every fault,
  operation or option that the model's enabling conditions (model/actions.py) rule out;
* :func:`unused_budgets`, after a complete search: every budgeted action (``budget`` in
  specs/actions.toml) whose budget is positive but which no reachable state ever took.

Each warning is a :class:`VacuityWarning` with a stable ``key`` (the configuration key at fault) so
that JSON readers and tests can match it without parsing the sentence.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from isrcheck.model.config import Config
from isrcheck.specs.actions import actions

__all__ = ["VacuityWarning", "static_warnings", "unused_budgets", "budget_of", "budgeted_actions"]


@dataclass(frozen=True)
class VacuityWarning:
    """One part of the configuration that cannot take effect: the key, the kind of pass that
    found it (``static``: from the configuration; ``coverage``: the search never took it) and
    the sentence a user reads."""

    key: str
    kind: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "kind": self.kind, "message": self.message}


def budget_of(cfg: Config, key: str) -> int:
    """The configured size of a budget named as in specs/actions.toml (``faults.crashes``,
    ``operations.reassignments``): an int, or the number of listed reassignments."""
    section, _, name = key.partition(".")
    value: Any = getattr(getattr(cfg, section), name)
    if isinstance(value, tuple):
        return len(value)
    return int(value)


def budgeted_actions(cfg: Config) -> dict[str, str]:
    """Action name -> its budget key, for every budgeted action whose budget the configuration
    makes positive (the actions a complete search should take at least once)."""
    out: dict[str, str] = {}
    for name, spec in actions().items():
        if spec.budget and "." in spec.budget:
            try:
                if budget_of(cfg, spec.budget) > 0:
                    out[name] = spec.budget
            except AttributeError:  # a variant's budget key the configuration does not know
                continue
    return out


def static_warnings(cfg: Config) -> list[VacuityWarning]:
    """What can never take effect, read from the configuration alone (before any search). Each
    case mirrors an enabling condition of model/actions.py or a rule of the protocol."""
    f, o = cfg.faults, cfg.operations
    out: list[VacuityWarning] = []

    def warn(key: str, message: str) -> None:
        out.append(VacuityWarning(key, "static", message))

    if f.undetected_restarts and not (f.crashes or f.lossy_crashes):
        warn("faults.undetected_restarts",
             f"faults.undetected_restarts = {f.undetected_restarts} can never take effect: a quick restart "
             "follows a crash, and faults.crashes = 0 and faults.lossy_crashes = 0")
    if f.lossy_crashes and cfg.max_records == 0 and not o.topic_creation:
        warn("faults.lossy_crashes",
             f"faults.lossy_crashes = {f.lossy_crashes} can never take effect: with max_records = 0 no log "
             "has a record to lose")
    if f.isr_shrinks and cfg.replication_factor < 2:
        warn("faults.isr_shrinks",
             f"faults.isr_shrinks = {f.isr_shrinks} can never take effect: with replication_factor = "
             f"{cfg.replication_factor} no ISR has a follower to remove")
    if f.lost_isr_answers and cfg.isr_change != "alter-isr":
        warn("faults.lost_isr_answers",
             f"faults.lost_isr_answers = {f.lost_isr_answers} can never take effect: with isr_change = "
             f"\"{cfg.isr_change}\" no leader sends an AlterIsr whose answer could be lost")
    if f.lost_fetch_answers and cfg.replication_factor < 2 and not o.reassignments:
        warn("faults.lost_fetch_answers",
             f"faults.lost_fetch_answers = {f.lost_fetch_answers} can never take effect: with replication_factor "
             f"= {cfg.replication_factor} and no reassignment no replica fetches")
    current = {p: tuple(ar) for p, ar in enumerate(cfg.assignment)}  # as the reassignments run, in order
    for i, r in enumerate(o.reassignments):
        if current.get(r.partition) == tuple(r.target):
            warn(f"operations.reassignments[{i}]",
                 f"operations.reassignments[{i}] moves nothing: its target {list(r.target)} is partition "
                 f"{r.partition}'s assignment when it is requested")
        current[r.partition] = tuple(r.target)
    if cfg.acks == "1" and cfg.min_insync_replicas > 1:
        warn("min_insync_replicas",
             f"min_insync_replicas = {cfg.min_insync_replicas} is ignored: with acks = \"1\" the leader "
             "acknowledges alone (min ISR applies to acks = \"all\" only)")
    return out


def unused_budgets(cfg: Config, coverage: Mapping[str, int], what: str = "check") -> list[VacuityWarning]:
    """After a complete search (every reachable state expanded), or a replay (``what="replay"``:
    the actions a scenario's steps took): every budgeted action with a positive budget that was
    never taken. Already-named static warnings are not repeated."""
    static = {w.key for w in static_warnings(cfg)}
    out: list[VacuityWarning] = []
    for name, key in budgeted_actions(cfg).items():
        if coverage.get(name, 0) == 0 and key not in static:
            out.append(VacuityWarning(key, "coverage",
                               f"{name} was never taken although {key} = {budget_of(cfg, key)}: "
                               f"that budget had no effect on this {what}"))
    return out
