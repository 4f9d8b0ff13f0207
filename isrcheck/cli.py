"""The ``isrcheck`` command line: a thin shell over the manifest, checker, simulator and renderers.

This module is the entry point (``isrcheck = "isrcheck.cli:main"``): the top group, which turns
every input and usage error into one line, and the registration of every command of
:mod:`isrcheck.commands`.

Exit status: 0 when every property holds, 1 when a property is broken or the result proves
nothing (vacuous, incomplete), 2 on bad usage or input. Input errors are one line on stderr,
``error: ...``, never a traceback. With ``--json`` exactly one JSON object goes to stdout.
"""
from __future__ import annotations

import click

from isrcheck import __version__
from isrcheck import native as _native
from isrcheck.commands.check import check
from isrcheck.commands.cluster import cluster
from isrcheck.commands.conform import conform, traces, validate
from isrcheck.commands.diff import diff
from isrcheck.commands.gallery import gallery
from isrcheck.commands.gate import gate, list_models
from isrcheck.commands.history import history
from isrcheck.commands.graph import graph, report
from isrcheck.commands.prove import bmc, prove
from isrcheck.commands.run import run
from isrcheck.commands.simulate import simulate
from isrcheck.commands.spark import spark
from isrcheck.commands.usage import OneLineErrors, usage_line
from isrcheck.engine.checkpoint import SnapshotError
from isrcheck.engine.disk import DiskError
from isrcheck.engine.liveness import LivenessError
from isrcheck.inputs.scenario import ScenarioError
from isrcheck.invariants.variants import VariantError, VariantFailure, debug_option, debug_requested, report_failure
from isrcheck.model.config import ConfigError
from isrcheck.specs.actions import ActionSyntaxError
from isrcheck.specs.inputs import InputError
from isrcheck.specs.manifest import ManifestError

USER_ERRORS = (ConfigError, ManifestError, ScenarioError, ActionSyntaxError, VariantError, LivenessError, InputError,
               SnapshotError, DiskError)


class _Main(OneLineErrors):
    """Turns the project's input errors and click's usage errors (of every command, in any group)
    into one line ``error: ...`` and exit status 2 (isrcheck/commands/usage.py)."""

    errors = (VariantFailure, *USER_ERRORS)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:  # the top level's own options, or no command at all
            click.echo(usage_line(e), err=True)
            ctx.exit(2)

    def report(self, ctx: click.Context, e: BaseException) -> None:
        if isinstance(e, VariantFailure):  # the variant's code raised while the model ran: not a violation
            report_failure(e, debug_requested(ctx))
        else:
            super().report(ctx, e)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="isrcheck",
                      message="%(prog)s %(version)s, " + _native.describe())
@debug_option
def main() -> None:
    """Model checker for Kafka's ZooKeeper-era controller and ISR replication protocol.

    Exit status: 0 every property holds; 1 a property is broken, or the run proved nothing
    (vacuous or incomplete); 2 bad usage or input, or a --variant's code raised (--debug: also
    the action path to where it raised).
    """


for _command in (check, simulate, run, list_models, gate, diff, gallery, history, cluster, spark, prove, bmc, conform,
                 validate, traces, graph, report):
    main.add_command(_command)
