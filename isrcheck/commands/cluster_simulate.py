"""``isrcheck cluster simulate``: seeded random-fault runs of the implementation, judged by history.

    isrcheck cluster simulate --seeds 2000 --generation high-watermark       # a campaign
    isrcheck cluster simulate --seed 13 --generation high-watermark          # one seed, in detail

Each seed is one run of the autonomous simulator under a random fault schedule drawn from the seed
(:mod:`isrcheck.impl.rigs.fault_schedule`); the history checker (:mod:`isrcheck.impl.rigs.history`) judges it.
Exit status: 0 no seed broke the promise of acks=all (nothing lost, reordered or diverged), 1 some
seed did (each printed with the command that replays it), 2 bad usage.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from isrcheck.impl.core.config import ConfigError, from_mapping
from isrcheck.impl.rigs.fault_run import RunResult, run_seed
from isrcheck.impl.rigs.fault_schedule import Setting
from isrcheck.impl.rigs.loss_shape import explain
from isrcheck.impl.rigs.sim_campaign import Tally, campaign
from isrcheck.specs.protocol import GENERATION_NAMES

from .options import SEED

__all__ = ["simulate"]

#: how many failing seeds the text summary lists (--json lists them all)
SHOWN = 20
#: seconds between progress lines when stderr is not a terminal
PROGRESS_EVERY_S = 5.0


def _setting(generation: str, min_isr: int, power_loss: int, unclean: bool, acks: str) -> Setting:
    try:
        s = Setting(generation=generation, min_isr=min_isr, power_loss=power_loss, unclean=unclean, acks=acks)
        from_mapping(s.config())
    except (ValueError, ConfigError) as e:
        raise click.UsageError(str(e)) from None
    return s


def _one(result: RunResult, as_json: bool) -> None:
    explanations = explain(result)
    if as_json:
        out: dict[str, Any] = result.to_json()
        out["explanations"] = [{"record": e.record, "shape": e.shape, "detail": e.detail} for e in explanations]
        click.echo(json.dumps(out, indent=2))
        return
    v = result.verdict
    click.echo(f"seed {result.seed}, {result.setting.options()}: {len(result.injected)} fault(s), "
               f"{v.written} writes, {v.acked} acknowledged")
    for line in result.injected:
        click.echo(f"  fault  {line}")
    for f in v.findings:
        click.echo(f"  {f.kind.value:<11} {f.detail}")
    for e in explanations:
        click.echo(f"  shape  {e.shape or 'unexplained'}: {e.detail}")
    click.echo("verdict: " + ("ok" if v.ok else "VIOLATED") + f"  (reproduce: {result.command})")


class _Progress:
    """A rich progress bar on a terminal; otherwise a line on stderr every few seconds."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label = total, label
        self.tty = sys.stderr.isatty()
        self.last = time.monotonic()
        self.bar: Any = None
        if self.tty:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self.task = self.bar.add_task(label, total=total)
            self.bar.start()

    def update(self, done: int, tally: Tally) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done,
                            description=f"{self.label}: {len(tally.failures)} failing")
            return
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S or done == self.total:
            self.last = now
            click.echo(f"simulate [{done}/{self.total}] {self.label}: {tally.seeds_with_loss} seed(s) with loss, "
                       f"{len(tally.failures)} with a violation", err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@click.command("simulate")
@click.option("--seeds", type=click.IntRange(1), default=None, help="run this many seeds (default 100)")
@click.option("--start", type=SEED, default=0, show_default=True, help="the first seed of --seeds")
@click.option("--seed", type=SEED, default=None, help="run this one seed and show it in detail")
@click.option("--generation", type=click.Choice(GENERATION_NAMES), default="high-watermark", show_default=True)
@click.option("--min-isr", type=click.IntRange(1, 3), default=2, show_default=True)
@click.option("--power-loss", type=click.IntRange(0, 3), default=0, show_default=True,
              help="at most this many brokers may lose power (their unflushed log suffix) in a run")
@click.option("--unclean", is_flag=True, help="allow unclean leader election")
@click.option("--acks", type=click.Choice(["all", "1"]), default="all", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="one JSON object on stdout")
def simulate(seeds: int | None, start: int, seed: int | None, generation: str, min_isr: int, power_loss: int,
             unclean: bool, acks: str, as_json: bool) -> None:
    """Seeded random faults (crash, power loss, dropped and delayed links, pauses, controller kills)
    on the in-process autonomous cluster, each run judged by its clients' history."""
    if seed is not None and seeds is not None:
        raise click.UsageError("give --seed (one run) or --seeds (a campaign), not both")
    setting = _setting(generation, min_isr, power_loss, unclean, acks)
    if seed is not None:
        result = run_seed(seed, setting)
        _one(result, as_json)
        raise click.exceptions.Exit(0 if result.verdict.ok else 1)
    n = 100 if seeds is None else seeds
    tally = Tally(setting)
    progress = _Progress(n, setting.options())
    began = time.monotonic()
    try:
        for i, result in enumerate(campaign(range(start, start + n), setting), 1):
            tally.add(result)
            progress.update(i, tally)
    finally:
        progress.close()
    seconds = time.monotonic() - began
    if as_json:
        out = tally.to_json()
        out["start"], out["seconds"] = start, round(seconds, 2)
        click.echo(json.dumps(out, indent=2))
    else:
        promise = "within" if setting.within_promise else "outside"
        click.echo(f"{setting.options()} ({promise} Kafka's promise for acks=all): seeds {start}..{start + n - 1}, "
                   f"{tally.faults} faults injected, {tally.acked}/{tally.writes} writes acknowledged, "
                   f"{tally.lost} lost on {tally.seeds_with_loss} seed(s), {len(tally.failures)} seed(s) "
                   f"with a violation, {tally.seeds_with_duplicates} with duplicates (producer retries), "
                   f"{seconds:.1f} s")
        for f in tally.failures[:SHOWN]:
            click.echo("  " + f.line())
        if len(tally.failures) > SHOWN:
            click.echo(f"  ... and {len(tally.failures) - SHOWN} more (--json lists every one)")
    raise click.exceptions.Exit(0 if tally.ok else 1)
