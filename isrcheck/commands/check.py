"""``isrcheck check``: every reachable state of one model (and its liveness properties under fairness).
"""
from __future__ import annotations

import dataclasses
import os
from typing import NoReturn

import click
from rich.markup import escape

from isrcheck.analyses.vacuity import VacuityWarning
from isrcheck.commands import resources
from isrcheck.commands.evaluate import DiskRequest, SnapshotRequest, disk_line, evaluate, verdict_json, with_untaken
from isrcheck.commands.options import (Inputs, description_of, emit_json, exit_with, input_options, json_opt,
                                       print_all, verbose_opt)
from isrcheck.engine.checkpoint import DEFAULT_EVERY, Checkpoints, SnapshotError, snapshot_disk_directory
from isrcheck.engine.disk import DiskError, check_directory
from isrcheck.render import changes, json_form, tablefit, tables, terminal


def warning_line(w: VacuityWarning) -> None:
    """A vacuity warning as one ``warning:`` line on stderr (JSON carries them in ``warnings``)."""
    click.echo(f"warning: {w.message}", err=True)


@click.command(short_help="Exhaustively check a model.")
@input_options(explain={"--set": "Override a configuration key, e.g. --set faults.crashes=1 (repeatable). With "
                                  "--peer: a constant of the specification, log_size, max_records or "
                                  "max_leader_epoch (default 2, 2, 3: TLC's recorded runs; its pins apply only there)."})
@json_opt
@click.option("--max-depth", type=click.IntRange(min=0), metavar="N", help="Explore at most this many steps deep.")
@click.option("--max-states", type=click.IntRange(min=1), metavar="N", help="Stop after this many distinct states.")
@click.option("--symmetry/--no-symmetry", default=None,
              help="Force broker-symmetry reduction on or off (default: the model's choice, on where sound).")
@click.option("--liveness/--no-liveness", "liveness", default=None,
              help="Also check every liveness property that applies, under weak fairness of the healing actions "
                   "(default: those pinned for the model in specs/models.toml).")
@click.option("--workers", type=click.IntRange(min=1, max=64), default=1, show_default=True,
              help="Worker processes for the safety search (the result, traces included, is the same as with one).")
@click.option("--checkpoint", "checkpoint_dir", type=click.Path(file_okay=False), metavar="DIR", default=None,
              help="Write a snapshot of the search to DIR between levels, so that --resume DIR can finish a run "
                   "that was killed (with --workers too: either resumes the other's; with --disk, the snapshot "
                   "names the disk files it needs).")
@click.option("--checkpoint-every", type=click.FloatRange(min=0), metavar="SECONDS", default=None,
              help="With --checkpoint or --resume: the least time between two snapshots "
                   "(default 60; 0: at every level).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False), metavar="DIR", default=None,
              help="Go on with the search whose snapshot is in DIR (written by --checkpoint DIR, with the same "
                   "model, configuration, variant and properties), and keep checkpointing there.")
@click.option("--disk", "disk_dir", type=click.Path(file_okay=False), metavar="DIR", default=None,
              help="Keep the seen fingerprints, the frontier and the parent pointers in files in DIR (an empty or "
                   "new directory, or a previous --disk run's), as TLC does: the same result in bounded memory "
                   "(single process, safety only). The files are removed at the end unless --keep-disk. With "
                   "--checkpoint a killed run goes on with --resume (the snapshot names DIR; --disk DIR where its files have moved).")
@click.option("--keep-disk", is_flag=True, default=False, help="With --disk: leave the run's files in DIR.")
@click.option("--replicas", type=int, default=None, metavar="N", help="With --peer: the number of replicas (default 2).")
@verbose_opt
@resources.memory_option
def check(inputs: Inputs, as_json: bool, max_depth: int | None, max_states: int | None, symmetry: bool | None,
          liveness: bool | None, workers: int, replicas: int | None = None, verbose: bool = False,
          max_memory: str | None = None, checkpoint_dir: str | None = None, checkpoint_every: float | None = None,
          resume_dir: str | None = None, disk_dir: str | None = None, keep_disk: bool = False) -> None:
    """Explore every reachable state of NAME: a model (see `isrcheck list`), a scenario or trace
    file (its configuration), or --config FILE.

    A manifest model checked as the manifest defines it is compared with its pins, as `gate`
    does: an expected failure is reported "as pinned" and exits 0."""
    ceiling = resources.memory_ceiling(max_memory)  # a bad size: exit 2 before any work
    snapshots = snapshot_request(checkpoint_dir, resume_dir, checkpoint_every, inputs.peer is not None)
    if resume_dir is not None and disk_dir is None:
        disk_dir = snapshot_disk(resume_dir)
    disk = disk_request(disk_dir, keep_disk, workers, liveness)
    if inputs.peer is not None or replicas is not None:
        i = inputs
        if i.peer is None or i.name is not None or i.config_file is not None or i.variant or verbose:
            click.echo("error: --peer MODULE takes no NAME, --config, --variant or --verbose; "
                       "--replicas needs --peer", err=True)
            exit_with(2)
        from isrcheck.commands.peer import PeerConstantError, check_peer, peer_constants

        try:
            constants = peer_constants(i.overrides)
        except PeerConstantError as e:
            click.echo(f"error: {e}", err=True)
            exit_with(2)
        if liveness:
            click.echo("error: --liveness: the TLA+ specification states no liveness property (TypeOk, WeakIsr and "
                       "StrongIsr are invariants); `isrcheck check NAME --liveness` checks the model's", err=True)
            exit_with(2)
        exit_with(check_peer(i.peer, 2 if replicas is None else replicas, bool(symmetry), i.only, max_depth,
                             max_states, i.keep_going, workers, as_json, ceiling, i.strict,
                             disk, constants))
    with resources.progress(as_json, f"checking {inputs.name or inputs.config_file}", limit=ceiling.limit) as progress:
        ev = evaluate(inputs, max_depth=max_depth, max_states=max_states, symmetry=symmetry, liveness=liveness,
                      workers=workers, progress=progress, max_memory=ceiling.limit,
                      progress_every=resources.report_every(), on_warning=None if as_json else warning_line,
                      snapshots=snapshots, disk=disk)
    target, result, lres, verdict = ev.target, ev.result, ev.lres, ev.verdict
    if ev.checkpoints is not None:
        checkpoint_line(ev.checkpoints, result.seconds)
    if ev.disk is not None:
        disk_line(ev.disk)
    if as_json:
        emit_json(json_form.check_to_json(target.label, target.config, result, lres, verdict_json(verdict),
                                          ev.model.protocol.extension))
    else:
        console = terminal.make_console()
        console.print(f"[bold]{escape(target.label)}[/bold]  {escape(tables.config_line(target.config))}"
                      f"  symmetry={'on' if ev.model.symmetry else 'off'}", highlight=False,
                      width=tablefit.fit_width(console))
        traces = list(result.violations) + [lv.violation for lv in (lres.verdicts if lres else [])
                                            if lv.violation is not None]
        for v in traces:
            tablefit.print_wide(console, tables.violation_table(v, description_of(v), ev.model.protocol.extension))
            console.print()
            if verbose:
                changes.print_verbose(console, v.trace, v.loop, ev.model.protocol.extension)
        shown = dataclasses.replace(result, coverage=with_untaken(target.config, result.coverage))
        print_all(console, tables.check_summary(target.label, shown, safety_selected=ev.safety_selected))
        if lres is not None:
            print_all(console, tables.liveness_summary(target.label, lres))
        print_all(console, tables.overall_lines(target.label, verdict_json(verdict), result, lres))
    if result.limit_hit == "memory":
        resources.report_limit(ceiling)
    exit_with(verdict.exit_status)


def snapshot_request(checkpoint_dir: str | None, resume_dir: str | None, every: float | None,
                     peer: bool) -> SnapshotRequest | None:
    """What --checkpoint, --checkpoint-every and --resume ask for, refused in one line (exit 2) where
    they cannot be honoured, before any work."""
    if checkpoint_dir is None and resume_dir is None:
        if every is not None:
            usage_error("--checkpoint-every needs --checkpoint DIR or --resume DIR")
        return None
    if checkpoint_dir is not None and resume_dir is not None:
        usage_error("--checkpoint starts a fresh run and --resume goes on with one: give one of them "
                    "(--resume DIR keeps checkpointing to DIR)")
    if peer:
        usage_error("--checkpoint and --resume check manifest models, scenarios and --config files, not --peer")
    directory = resume_dir if resume_dir is not None else checkpoint_dir
    assert directory is not None
    if resume_dir is not None:  # no snapshot there: refused before any note or work
        try:
            Checkpoints(resume_dir, {}, resume=True).prepare()
        except SnapshotError as e:
            usage_error(str(e))
    return SnapshotRequest(directory, DEFAULT_EVERY if every is None else every, resume=resume_dir is not None)


def snapshot_disk(resume_dir: str) -> str | None:
    """The ``--disk`` directory a snapshot names, for ``--resume`` without ``--disk`` (said on
    stderr); refused in one line when that directory is gone. None for a search in memory."""
    try:
        found = snapshot_disk_directory(resume_dir)
    except SnapshotError:
        return None  # the resume itself reports what is wrong with the snapshot
    if found is None:
        return None
    if not os.path.isdir(found):
        usage_error(f"the snapshot in {resume_dir} is of a --disk search whose directory {found} is gone; "
                    "give --disk DIR where its files are now")
    click.echo(f"disk: resuming with the snapshot's --disk directory {found}", err=True)
    return found


def disk_request(directory: str | None, keep: bool, workers: int, liveness: bool | None) -> DiskRequest | None:
    """What --disk and --keep-disk ask for, refused in one line (exit 2) where they cannot be
    honoured, before any work (a directory that is not empty and not a disk run's among them)."""
    if directory is None:
        if keep:
            usage_error("--keep-disk needs --disk DIR")
        return None
    if workers > 1:
        usage_error("--disk runs the single-process search: leave out --workers")
    if liveness:
        usage_error("--disk checks safety properties only (the liveness graph is held in memory): "
                    "leave out --liveness")
    try:
        check_directory(directory)
    except DiskError as e:
        usage_error(str(e))
    return DiskRequest(directory, keep)


def checkpoint_line(ck: Checkpoints, seconds: float) -> None:
    """One line on stderr: how many snapshots the run wrote and what they cost, so that the overhead
    of checkpointing is seen where it is paid (stdout and its JSON are the same as without)."""
    share = f", {100 * ck.write_seconds / seconds:.1f}% of the search" if seconds > 0 else ""
    size = f", {ck.path.stat().st_size / 2**20:,.1f} MiB" if ck.path.exists() else ""
    click.echo(f"checkpoint: {ck.written} snapshot{'s' if ck.written != 1 else ''} written to {ck.directory} "
               f"in {ck.write_seconds:.2f} s{share}{size}", err=True)


def usage_error(message: str) -> NoReturn:
    """One ``error:`` line and exit status 2."""
    click.echo(f"error: {message}", err=True)
    exit_with(2)
