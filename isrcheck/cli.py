"""The ``isrcheck`` command line: a thin shell over the manifest, checker, simulator and renderers.

This module is the entry point (``isrcheck = "isrcheck.cli:main"``): the top group, which turns
every input and usage error into one line, and the registration of every command of
:mod:`isrcheck.commands`.

Exit status: 0 when every property holds, 1 when a property is broken or the result proves
nothing (vacuous, incomplete), 2 on bad usage or input. Input errors are one line on stderr,
``error: ...``, never a traceback. With ``--json`` exactly one JSON object goes to stdout.
"""
from __future__ import annotations

import importlib

import click

from isrcheck import __version__
from isrcheck import native as _native
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

#: every command: its name -> where it is defined ("module:attribute"). A command's module is
#: imported when that command runs (or a help page lists it), not on every start: importing them
#: all (the conformance side, the cluster, the z3 provers, networkx) cost about half a second.
COMMANDS: dict[str, str] = {
    "check": "isrcheck.commands.check:check",
    "simulate": "isrcheck.commands.simulate:simulate",
    "run": "isrcheck.commands.run:run",
    "list": "isrcheck.commands.gate:list_models",
    "gate": "isrcheck.commands.gate:gate",
    "diff": "isrcheck.commands.diff:diff",
    "gallery": "isrcheck.commands.gallery:gallery",
    "history": "isrcheck.commands.history:history",
    "cluster": "isrcheck.commands.cluster:cluster",
    "spark": "isrcheck.commands.spark:spark",
    "prove": "isrcheck.commands.prove:prove",
    "bmc": "isrcheck.commands.prove:bmc",
    "conform": "isrcheck.commands.conform:conform",
    "validate": "isrcheck.commands.conform:validate",
    "traces": "isrcheck.commands.conform:traces",
    "graph": "isrcheck.commands.graph:graph",
    "report": "isrcheck.commands.graph:report",
}

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

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        known = self.commands.get(cmd_name)
        if known is not None or cmd_name not in COMMANDS:
            return known
        module, attribute = COMMANDS[cmd_name].split(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        self.commands[cmd_name] = command
        return command

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

