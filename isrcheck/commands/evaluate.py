"""A check, as ``check`` and ``report`` both run it: the target resolved from the one input group,
the safety search, the liveness properties that apply, the vacuity passes and the one verdict.

``report`` used to run its own, smaller check (the first violation only, no liveness, no
``--property``), so its page could say SUCCESS where ``check`` said LIVENESS FAILURE; both call
:func:`evaluate` now and differ only in how they show the :class:`Evaluation`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from isrcheck.analyses import vacuity
from isrcheck.commands.options import Inputs, protocol_for
from isrcheck.commands.verdict import Verdict, decide
from isrcheck.engine.checkpoint import Checkpoints
from isrcheck.engine.disk import DiskChecker
from isrcheck.engine.liveness import GraphBuilder
from isrcheck.engine.parallel import search
from isrcheck.inputs import targets
from isrcheck.invariants import build_model
from isrcheck.invariants import liveness as live
from isrcheck.model.config import ConfigError
from isrcheck.model.symmetry import symmetry_allowed
from isrcheck.specs.manifest import Target

__all__ = ["Evaluation", "SnapshotRequest", "DiskRequest", "disk_line", "snapshot_identity", "evaluate", "resolve_target", "verdict_json", "with_untaken"]


@dataclass(frozen=True)
class SnapshotRequest:
    """``check --checkpoint DIR`` or ``--resume DIR``: where snapshots go and how often."""

    directory: str
    every: float
    resume: bool


@dataclass(frozen=True)
class DiskRequest:
    """``check --disk DIR``: the directory of the search's files, and whether to keep them."""

    directory: str
    keep: bool = False


@dataclass
class Evaluation:
    target: Target[Any]
    model: Any
    result: Any  # CheckResult
    lres: Any  # LivenessResult or None
    verdict: Verdict
    safety_selected: bool  # False: --property named only liveness properties
    checkpoints: Any = None  # engine.checkpoint.Checkpoints of --checkpoint/--resume, after the search
    disk: Any = None  # engine.disk.DiskChecker of --disk, after the search


def resolve_target(inputs: Inputs) -> Target[Any]:
    """The target of the input group (a manifest model, a scenario or trace file, --config);
    ``--peer`` is ``check``'s alone and is refused by the caller before this."""
    return targets.resolve(inputs.name, inputs.config_file, inputs.overrides)


def evaluate(inputs: Inputs, *, max_depth: int | None = None, max_states: int | None = None,
             symmetry: bool | None = None, liveness: bool | None = None, workers: int = 1,
             progress: Any = None, max_memory: int | None = None, progress_every: float = 0.5,
             on_warning: Callable[[vacuity.VacuityWarning], None] | None = None,
             snapshots: SnapshotRequest | None = None, disk: DiskRequest | None = None) -> Evaluation:
    """Run the check the inputs ask for. ``on_warning`` is called for each vacuity warning as it is
    found (before the search for the static ones), so a terminal shows them before a long run."""
    target = resolve_target(inputs)
    as_defined = symmetry is None  # a forced symmetry changes the state count the manifest pins
    symmetry = target.symmetry if symmetry is None else symmetry
    if symmetry and not symmetry_allowed(target.config):
        click.echo("warning: --symmetry forces reduction on a configuration where the model would not use it "
                   "(no two brokers start out interchangeable)", err=True)
    only = inputs.only
    safety_only = [n for n in only if n not in live.LIVENESS_NAMES]
    liveness_only = [n for n in only if n in live.LIVENESS_NAMES]
    properties: list[str] | None = safety_only if only else (list(target.properties) if target.properties else None)
    wanted = _liveness_wanted(target, liveness, liveness_only, bool(only))
    if disk is not None and liveness is None and wanted:
        # the liveness graph is held in memory: a --disk run checks safety only (--liveness is refused)
        click.echo(f"note: --disk checks the safety properties only; the pinned liveness properties "
                   f"({', '.join(wanted)}) are not checked (their graph is held in memory)", err=True)
        wanted = []
    protocol, variant = protocol_for(target, inputs.variant)  # --variant, else the manifest entry's own
    model = build_model(target.config, protocol=protocol, symmetry=symmetry, properties=properties)
    live_props = live.applicable_liveness(target.config, wanted) if wanted != [] else []  # bad names fail early
    if protocol is not None:
        target = dataclasses.replace(target, label=f"{target.label} [{variant}]")
    warnings = vacuity.static_warnings(target.config)
    for w in warnings:
        if on_warning is not None:
            on_warning(w)
    checkpoints = None
    if snapshots is not None:
        checkpoints = Checkpoints(snapshots.directory, snapshot_identity(target, variant, symmetry),
                                  every=snapshots.every, resume=snapshots.resume)
    # one exploration for safety and liveness (the single process or the workers record the graph),
    # unless the search is reduced by symmetry (the liveness graph never is: fairness is per broker),
    # checkpointed, or on disk
    recorder = (GraphBuilder(model, live_props) if live_props and not model.symmetry and checkpoints is None
                and disk is None else None)
    checker = None
    if disk is not None:
        checker = DiskChecker(model, disk.directory, max_depth=max_depth, max_states=max_states,
                              stop_on_first=not inputs.keep_going, progress=progress, max_memory=max_memory,
                              progress_every=progress_every, keep=disk.keep, checkpoint=checkpoints)
        result = checker.run()
    else:
        result = search(model, workers=workers, max_depth=max_depth, max_states=max_states,
                        stop_on_first=not inputs.keep_going, progress=progress, max_memory=max_memory,
                        progress_every=progress_every, checkpoint=checkpoints, graph=recorder)
    lres = None
    if live_props and result.limit_hit != "memory":
        # the recorded graph is the whole reachable one only if the search went through every state
        whole = recorder is not None and result.limit_hit is None and (inputs.keep_going or not result.violations)
        graph = recorder.finish(True) if whole and recorder is not None else None
        recorder = None  # a partial graph is dropped before the liveness search builds its own
        if progress is not None:
            progress.set_label(f"liveness of {target.label}")
        lres = live.check(target.config, [p.name for p in live_props], protocol=protocol, max_states=max_states,
                          max_depth=max_depth, progress=progress, graph=graph)
    # a search stopped at a violation or a limit has partial coverage: only a complete one can say
    # that a budgeted action is never taken
    after = vacuity.unused_budgets(target.config, result.coverage) if result.outcome in ("success", "vacuous") else []
    for w in after:
        if on_warning is not None:
            on_warning(w)
    pins_apply = (target.entry is not None and not inputs.changed and max_depth is None and max_states is None
                  and liveness is None and as_defined)
    verdict = decide(result, lres, warnings + after, inputs.strict, target.entry if pins_apply else None)
    return Evaluation(target, model, result, lres, verdict, safety_selected=not only or bool(safety_only),
                      checkpoints=checkpoints, disk=checker)


def disk_line(checker: Any) -> None:
    """One line on stderr: what the disk search wrote (stdout and its JSON are the same as without)."""
    where = "kept in" if checker.keep else "removed from"
    click.echo(f"disk: {checker.levels} level{'s' if checker.levels != 1 else ''}, {checker.candidates:,} candidate "
               f"states written, at most {checker.disk_peak / 2**20:,.1f} MiB on disk at once ({where} "
               f"{checker.directory})", err=True)


def snapshot_identity(target: Target[Any], variant: str | None, symmetry: bool) -> dict[str, Any]:
    """What a snapshot must share with the run that resumes it (the engine adds the properties, the
    search's bounds and the state schema): the model's label, its configuration in canonical form,
    the variant (with the SHA-256 of its file, so that an edited variant is not resumed) and the
    symmetry reduction."""
    from isrcheck import __version__

    variant_id: dict[str, Any] | None = None
    if variant:
        variant_id = {"name": variant, "sha256": None}
        source = (target.variant if getattr(target, "variant", None) and target.entry is not None
                  and variant == target.entry.variant else variant)
        path = Path(str(source).rpartition(":")[0] or str(source))
        if path.suffix == ".py" and path.is_file():
            variant_id["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    label = target.label.rsplit(" [", 1)[0] if variant else target.label
    config = json.loads(json.dumps(target.config.to_dict(), sort_keys=True, default=str))
    return {"model": label, "variant": variant_id, "configuration": config, "symmetry": symmetry,
            "isrcheck": __version__}


def _liveness_wanted(target: Any, flag: bool | None, named: list[str], chosen: bool) -> list[str] | None:
    """Which liveness properties a check asks for: those named with --property, else every
    applicable one (--liveness, returned as None), none (--no-liveness, or --property naming only
    safety properties), or by default those the manifest pins for the model."""
    if named:
        if flag is False:
            raise ConfigError("--no-liveness contradicts --property " + ", ".join(named))
        return named
    if flag is True:
        return None
    if flag is False or target.entry is None or chosen:
        return []
    # the pins of the model, less those an override (--set) made meaningless
    return [e.property for e in target.entry.liveness if live.applies(e.property, target.config)]


def with_untaken(cfg: Any, coverage: dict[str, int]) -> dict[str, int]:
    """The coverage with every budgeted action the configuration allows and the search never took
    at 0, so that a missing QuickRestart shows as a row of 0 rather than as no row at all."""
    out = dict(coverage)
    for name in vacuity.budgeted_actions(cfg):
        out.setdefault(name, 0)
    return out


def verdict_json(v: Verdict) -> dict[str, Any]:
    """The verdict's part of the JSON (and what the text headline reads): outcome, found, the
    warnings, the pins and the exit status."""
    return {"outcome": v.outcome, "found": v.found, "exit_status": v.exit_status, "strict": v.strict,
            "warnings": [w.to_json() for w in v.warnings], "pins": v.pins_json()}
