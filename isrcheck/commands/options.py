"""What the commands share: the options most of them take (a model NAME or --config FILE, --set,
--json, --verbose), the properties' descriptions for captions, and how a command ends (one JSON
object on stdout, an exit status). Written once here so that the same option reads the same in
every command's help.
"""
from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
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

strict_opt_help = ("Fail (exit 1, outcome vacuous) when a part of the configuration never takes effect: "
                   "the warning: lines, e.g. a quick restart budgeted with no crash to follow.")
strict_opt = click.option("--strict", is_flag=True, help=strict_opt_help)


F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Inputs:
    """What a command that runs or reads a model was given, read the same way by every such command
    (``check``, ``simulate``, ``run``, ``graph``, ``report``, ``traces export``, ``diff``,
    ``conform``, ``validate --record``, ``prove inductive``, ``bmc``, ``cluster up``): the target (a manifest model NAME,
    a scenario or trace FILE, ``--config FILE`` or ``--peer MODULE``) and what changes it
    (``--set``, ``--variant``), which properties (``--property``), whether to go on past the
    first violation (``--keep-going``) and whether vacuity fails the run (``--strict``).

    ``names`` holds every NAME given: one at most for the positional NAME, several for a command
    whose target is the repeatable ``--model NAME`` (``conform``)."""

    names: tuple[str, ...] = ()
    config_file: str | None = None
    overrides: tuple[str, ...] = ()
    variant: str | None = None
    only: tuple[str, ...] = ()
    keep_going: bool = False
    strict: bool = False
    peer: str | None = None

    @property
    def name(self) -> str | None:
        """The one NAME (None when none was given); a command that checks one target reads this,
        and several (``--model A --model B`` where one is meant) are refused in one line."""
        if len(self.names) > 1:
            raise click.UsageError(f"give one --model NAME, not {len(self.names)}")
        return self.names[0] if self.names else None

    @property
    def changed(self) -> bool:
        """Whether the target differs from the manifest's definition (so its pins do not apply)."""
        return bool(self.overrides or self.variant or self.only)


#: every option of the group as a user types it, by the parameter that carries it (for refusals)
GROUP_OPTIONS: dict[str, str] = {"names": "NAME", "config_file": "--config", "overrides": "--set",
                                 "variant": "--variant", "only": "--property", "keep_going": "--keep-going",
                                 "strict": "--strict", "peer": "--peer"}

_HELP: dict[str, str] = {
    "--property": "Check only this property (repeatable; the sometimes-properties always stay). A liveness "
                  "property's name checks it under fairness.",
    "--keep-going": "Do not stop at the first violation; report one per property.",
    "--peer": "The transcription of the public TLA+ specification instead of the model: truncate-to-hw, "
              "kip-101, kip-279, kip-320-first-try or kip-320 (check only).",
}


def _given(inputs: Inputs, option: str) -> bool:
    """Whether ``option`` (as typed, a key of the refusals) was given on the command line."""
    param = next(p for p, o in GROUP_OPTIONS.items() if o == option or (p == "names" and option == "--model"))
    value = getattr(inputs, param)
    return bool(value) if not isinstance(value, str) else True


def _group(target: str, refuse: Mapping[str, str], explain: Mapping[str, str]) -> list[Callable[[Any], Any]]:
    """The group's click declarations, in the order --help lists them. A refused option stays
    declared (so a user who types it learns why, in one line) and its help says it is refused."""

    def text(option: str) -> str | None:
        if option in refuse:
            return f"Refused by this command (exit 2): {refuse[option]}"
        return explain.get(option, _HELP.get(option))

    if target == "NAME":
        name: Callable[[Any], Any] = click.argument("name", required=False, metavar="[NAME|FILE]")
    else:  # the target is an option: the command's positional arguments are something else
        name = click.option("--model", "names", multiple=True, metavar="NAME",
                            help=text("--model") or "A manifest model (`isrcheck list`) as the target.")
    variant: Callable[[Any], Any] = variant_option  # --variant MODULE:ATTR and --debug (the one loader)
    if "--variant" in refuse:
        variant = click.option("--variant", metavar="MODULE:ATTR", help=text("--variant"))
    return [
        name,
        click.option("--config", "config_file", metavar="FILE",
                     help=text("--config") or "A configuration file (TOML) instead of a model NAME."),
        click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                     help=text("--set") or "Override a configuration key, e.g. --set faults.crashes=1 (repeatable)."),
        variant,
        click.option("--property", "only", multiple=True, metavar="NAME", help=text("--property")),
        click.option("--keep-going", is_flag=True, help=text("--keep-going")),
        click.option("--strict", is_flag=True, help=text("--strict") or strict_opt_help),
        click.option("--peer", metavar="MODULE", help=text("--peer")),
    ]


def input_options(fn: F | None = None, *, target: str = "NAME", refuse: Mapping[str, str] | None = None,
                  explain: Mapping[str, str] | None = None) -> Any:
    """Give a command the one input group; the function receives them as ``inputs: Inputs``.

    NAME is a manifest model (`isrcheck list`), or a path to a scenario file (``.toml`` with
    ``steps``) or a trace file (``.jsonl``, ``.itf.json``), whose configuration is the target.

    ``target="--model"``: the target is the repeatable option ``--model NAME`` (``diff`` and
    ``conform``, whose positional arguments are protocols or trace files). ``refuse``: option as
    typed -> why this command cannot use it; given anyway, it is one ``error: OPTION: why`` line
    and exit status 2 before any work, never silently ignored. ``explain``: an option's help where
    it means something particular to this command."""
    refused = dict(refuse or {})
    unknown = set(refused) - set(GROUP_OPTIONS.values()) - {"--model"}
    assert not unknown, f"not options of the input group: {unknown}"

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, name: str | None = None, names: tuple[str, ...] = (), config_file: str | None = None,
                    overrides: tuple[str, ...] = (), variant: str | None = None, only: tuple[str, ...] = (),
                    keep_going: bool = False, strict: bool = False, peer: str | None = None, **kwargs: Any) -> Any:
            inputs = Inputs((name,) if name is not None else tuple(names), config_file, tuple(overrides), variant, tuple(only), keep_going, strict,
                            peer)
            for option, why in refused.items():
                if _given(inputs, option):  # a usage error: every group prints it as one line, exit 2
                    raise click.UsageError(f"{option}: {why}")
            return f(*args, inputs=inputs, **kwargs)

        out: Any = wrapper
        for deco in reversed(_group(target, refused, dict(explain or {}))):
            out = deco(out)
        return out  # type: ignore[no-any-return]

    return decorate(fn) if fn is not None else decorate


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
