"""What the commands share: the options most of them take (a model NAME or --config FILE, --set,
--json, --verbose), the properties' descriptions for captions, and how a command ends (one JSON
object on stdout, an exit status). Written once here so that the same option reads the same in
every command's help.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from isrcheck.render.terminal import is_terminal
from isrcheck.specs.properties import descriptions

#: property name -> its one-line description (safety and liveness), for captions and verdict lines
DESCRIPTIONS: dict[str, str] = descriptions()  # specs/properties.toml

model_arg = click.argument("name", required=False, metavar="[NAME]")
config_opt = click.option("--config", "config_file", metavar="FILE",
                          help="A configuration file (TOML) instead of a model NAME.")
set_opt = click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                       help="Override a configuration key, e.g. --set faults.crashes=1 (repeatable).")
json_opt = click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
verbose_opt = click.option("--verbose", "-v", is_flag=True,
                           help="Below each trace table, every field of the state: the initial state in full, "
                                "then every field each step changed (queues, remote LEOs, controller states, ...).")

strict_opt = click.option("--strict", is_flag=True,
                          help="Fail (exit 1, outcome vacuous) when a part of the configuration never takes effect: "
                               "the warning: lines, e.g. a quick restart budgeted with no crash to follow.")


def emit_json(obj: Any) -> None:
    """``--json``: exactly one JSON object on stdout."""
    click.echo(json.dumps(obj, indent=2))


def show_progress(as_json: bool) -> bool:
    """Whether a live status line goes to stderr: on a terminal, and not with --json."""
    return not as_json and is_terminal(sys.stderr)


def exit_with(code: int) -> NoReturn:
    raise click.exceptions.Exit(code)


def print_all(console: Any, items: Sequence[Any]) -> None:
    for item in items:
        console.print(item)
