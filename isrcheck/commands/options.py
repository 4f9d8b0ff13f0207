"""What the commands share: the options most of them take (a model NAME or --config FILE, --set,
--json, --verbose), the properties' descriptions for captions, and how a command ends (one JSON
object on stdout, an exit status). Written once here so that the same option reads the same in
every command's help.
"""
from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import click

from isrcheck.invariants.variants import variant_option
from isrcheck.render.tablefit import fit_width
from isrcheck.render.terminal import is_terminal
from isrcheck.specs.properties import descriptions

#: property name -> its one-line description (safety and liveness), for captions and verdict lines
DESCRIPTIONS: dict[str, str] = descriptions()  # specs/properties.toml

#: a seed: a non-negative integer of at most 63 bits, the same for every command that takes one (a seed
#: is printed back in a replay command and stored in JSON, where a larger one would not survive)
SEED_MAX = 2**63 - 1
SEED = click.IntRange(0, SEED_MAX)


class FiniteFloatRange(click.FloatRange):
    """A float option within bounds that refuses ``nan`` and ``inf``: click's FloatRange compares
    with ``<``, which ``nan`` passes, and ``inf`` passes an open upper bound; either then fails far
    from the option (a traceback, or a run whose result is lost at the end)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if rv != rv or rv in (float("inf"), float("-inf")):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


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


F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Inputs:
    """What a command that runs a model was given, read the same way by every such command
    (``check``, ``simulate``, ``graph``, ``report``, ``traces export``): the target (a manifest
    model NAME, a scenario or trace FILE, ``--config FILE`` or ``--peer MODULE``) and what changes
    it (``--set``, ``--variant``), which properties (``--property``), whether to go on past the
    first violation (``--keep-going``) and whether vacuity fails the run (``--strict``)."""

    name: str | None = None
    config_file: str | None = None
    overrides: tuple[str, ...] = ()
    variant: str | None = None
    only: tuple[str, ...] = ()
    keep_going: bool = False
    strict: bool = False
    peer: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the target differs from the manifest's definition (so its pins do not apply)."""
        return bool(self.overrides or self.variant or self.only)


#: the one option group of the commands that run a model, in the order --help lists them
_INPUT_OPTIONS: list[Callable[[Any], Any]] = [
    click.argument("name", required=False, metavar="[NAME|FILE]"),
    config_opt,
    set_opt,
    variant_option,  # --variant MODULE:ATTR and --debug (invariants/variants.py, the one loader)
    click.option("--property", "only", multiple=True, metavar="NAME",
                 help="Check only this property (repeatable; the sometimes-properties always stay). A liveness "
                      "property's name checks it under fairness."),
    click.option("--keep-going", is_flag=True,
                 help="Do not stop at the first violation; report one per property."),
    strict_opt,
    click.option("--peer", metavar="MODULE",
                 help="The transcription of the public TLA+ specification instead of the model: truncate-to-hw, "
                      "kip-101, kip-279, kip-320-first-try or kip-320 (check only)."),
]


def input_options(fn: F) -> F:
    """Give a command the one input group; the function receives them as ``inputs: Inputs``.

    NAME is a manifest model (`isrcheck list`), or a path to a scenario file (``.toml`` with
    ``steps``) or a trace file (``.jsonl``, ``.itf.json``), whose configuration is the target."""

    @functools.wraps(fn)
    def wrapper(*args: Any, name: str | None = None, config_file: str | None = None,
                overrides: tuple[str, ...] = (), variant: str | None = None, only: tuple[str, ...] = (),
                keep_going: bool = False, strict: bool = False, peer: str | None = None, **kwargs: Any) -> Any:
        inputs = Inputs(name, config_file, tuple(overrides), variant, tuple(only), keep_going, strict, peer)
        return fn(*args, inputs=inputs, **kwargs)

    out: Any = wrapper
    for deco in reversed(_INPUT_OPTIONS):
        out = deco(out)
    return out  # type: ignore[no-any-return]


def description_of(v: Any) -> str:
    """A violation's property description: its own (a variant's property carries one), else the
    project's for its name."""
    return getattr(v, "description", "") or DESCRIPTIONS.get(v.property, "")


def descriptions_for(model: Any) -> dict[str, str]:
    """Every property description ``model`` may break: the project's and its variant's own."""
    return DESCRIPTIONS | {p.name: p.description for p in model.properties() if p.description}


def protocol_for(target: Any, variant: str | None) -> tuple[Any, str | None]:
    """The protocol a command checks ``target`` with, and the variant's name for labels: the variant
    given with ``--variant``, else the one the manifest entry names (``variant = "path.py:Attr"``),
    else the model's own (None, None). So ``isrcheck check elr-variant`` checks what the gate pins."""
    from isrcheck.invariants.variants import load_variant

    if variant:
        return load_variant(variant)(target.config), variant
    if getattr(target, "variant", None):
        shown = target.entry.variant if target.entry is not None and target.entry.variant else target.variant
        return load_variant(target.variant)(target.config), shown
    return None, None


def print_or_write(text: str, path: str | None, newline: bool = True) -> None:
    """A generated page (the gallery, the history): printed, or written to ``path``; a file that
    cannot be written is one input error line."""
    from isrcheck.model.config import ConfigError

    if not path:
        click.echo(text, nl=newline)
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror}") from None


def emit_json(obj: Any) -> None:
    """``--json``: exactly one JSON object on stdout."""
    click.echo(json.dumps(obj, indent=2))


def show_progress(as_json: bool) -> bool:
    """Whether a live status line goes to stderr: on a terminal, and not with --json."""
    return not as_json and is_terminal(sys.stderr)


def exit_with(code: int) -> NoReturn:
    raise click.exceptions.Exit(code)


def print_all(console: Any, items: Sequence[Any]) -> None:
    """Summaries, grids and verdict lines at the fitted width (the terminal's, else 120 columns on a
    pipe): the console itself is wider on a pipe only so that a trace table never wraps."""
    width = fit_width(console)
    for item in items:
        console.print(item, width=width)
