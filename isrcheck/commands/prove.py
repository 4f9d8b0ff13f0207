"""``isrcheck prove`` (selectors, transitions, inductive) and ``isrcheck bmc``: the z3 side.

Registered by ``isrcheck/cli.py`` on the ``isrcheck`` group.

Verdicts are three-valued (specs/08-symbolic.md): PROVED, REFUTED (with a concrete counterexample)
or UNKNOWN (z3 gave up, usually at the --timeout per query); an unknown is never reported as
proved. ``prove inductive`` adds NOT INDUCTIVE (a counterexample to induction whose pre-state is
not known to be reachable), and ``prove transitions`` sets the documented expected refutations
(specs/expected_refutations.toml) aside. Exit status: 0 every claim proved (but the expected
refutations); 1 some claim refuted; 3 something unknown or not inductive and nothing refuted; 2 bad
usage or input (one line ``error: ...`` on stderr), a --variant the encoding cannot read included.
With ``--json`` exactly one JSON object goes to stdout.

``prove inductive`` and ``bmc`` read their model through the one input group
(isrcheck/commands/options.py): ``--property NAME`` restricts the verdicts to the properties named
(among those the encoding covers, :func:`isrcheck.invariants.symbolic.replication.choose`), and the
static vacuity pass (:mod:`isrcheck.analyses.vacuity`) runs before the proof or search: its
``warning:`` lines go to stderr (``warnings`` in JSON) and, with ``--strict``, a run whose claims
are all proved fails as vacuous (exit 1, ``outcome: vacuous``), as ``check`` and ``run`` do. Their
JSON also carries ``outcome`` in check's words (``success``, ``safety_failure`` for a refutation,
``incomplete`` for something unknown or not inductive, ``vacuous``), worst first as check ranks them.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from isrcheck.analyses.vacuity import VacuityWarning, static_warnings
from isrcheck.commands.options import Inputs, input_options, json_opt, show_progress
from isrcheck.commands.usage import error_line
from isrcheck.inputs import targets
from isrcheck.invariants.symbolic.verdicts import (
    EXIT_BAD_INPUT,
    Obligation,
    Verdict,
    exit_code,
    overall,
)
from isrcheck.invariants.variants import VariantFailure, debug_requested, load_variant, report_failure, variant_option
from isrcheck.model.config import Config, ConfigError
from isrcheck.render import json_form, tablefit, tables, terminal
from isrcheck.specs.manifest import ManifestError, Target

VERDICT_STYLE = {Verdict.PROVED: "bold green", Verdict.REFUTED: "bold red", Verdict.UNKNOWN: "bold yellow",
                 Verdict.NOT_INDUCTIVE: "bold magenta"}
EXIT_HELP = ("Exit status: 0 every claim proved (but the expected refutations); 1 a claim refuted; 3 something "
             "unknown (a query hit --timeout) or not inductive, and nothing refuted; 2 bad usage or input.")


@dataclass(frozen=True)
class Vacuity:
    """The static vacuity pass of a run (``prove inductive``, ``bmc``): its warnings and whether
    ``--strict`` makes them fail the run."""

    warnings: tuple[VacuityWarning, ...]
    strict: bool

    def outcome(self, obligations: Sequence[Obligation]) -> str:
        """The run's outcome in check's words (isrcheck/commands/verdict.py), worst first: a refutation
        is a safety failure, something unknown or not inductive leaves the run incomplete, and only
        a run whose claims all hold can be vacuous (with --strict and a warning), as in check."""
        v = overall(obligations)
        if v == Verdict.REFUTED:
            return "safety_failure"
        if v != Verdict.PROVED:
            return "incomplete"
        return "vacuous" if self.strict and self.warnings else "success"

    def exit_status(self, obligations: Sequence[Obligation]) -> int:
        """The verdicts' exit status, but 1 for a run --strict fails as vacuous."""
        return 1 if self.outcome(obligations) == "vacuous" else exit_code(obligations)


def _vacuity(inputs: Inputs, cfg: Config, as_json: bool) -> Vacuity:
    """The static vacuity pass, before the proof or search: each warning as one ``warning:`` line
    on stderr (with --json only in the object, as check does), so a terminal shows it before a long
    run."""
    warnings = tuple(static_warnings(cfg))
    if not as_json:
        for w in warnings:
            click.echo(f"warning: {w.message}", err=True)
    return Vacuity(warnings, inputs.strict)


def _chosen(inputs: Inputs, cfg: Config, generation: str | None, queue: int | None) -> tuple[str, ...]:
    """The properties --property chooses (every encoded one without it), checked before any work and
    before the warning: lines, so that a name the encoding does not cover is the run's one line."""
    from isrcheck.invariants.symbolic.replication import Encoding, choose

    return choose(Encoding(cfg, generation, queue), inputs.only)


class InputError(Exception):
    """Bad input for a prove/bmc command; reported as one line with exit status 2."""


def _fail(message: str) -> NoReturn:
    click.echo(error_line(message), err=True)
    raise click.exceptions.Exit(EXIT_BAD_INPUT)


def _guarded(fn: Callable[..., None]) -> Callable[..., None]:
    """Turn the input errors of the symbolic commands into ``error: ...`` and exit status 2."""
    import functools

    from isrcheck.invariants.symbolic.instance import Unsupported

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except VariantFailure as e:  # the variant's select() raised: exit 2, one line (not a refutation)
            report_failure(e, debug_requested(click.get_current_context()))
            raise click.exceptions.Exit(EXIT_BAD_INPUT) from None
        except (ConfigError, ManifestError, Unsupported, InputError) as e:
            _fail(str(e))

    return wrapper


# ============================================================================ progress and output
class _Status:
    def __init__(self, status: Any, label: str) -> None:
        self.status = status
        self.label = label
        self.start = time.perf_counter()
        self.count = 0

    def __call__(self, what: str) -> None:
        self.count += 1
        self.status.update(f"{self.label}: {what}  [{self.count} queries, {time.perf_counter() - self.start:.0f}s]")


@contextmanager
def _progress(enabled: bool, label: str) -> Iterator[Callable[[str], None]]:
    if not enabled:
        yield lambda _: None
        return
    console = Console(stderr=True, highlight=False)
    with console.status(f"{label}: starting") as status:
        yield _Status(status, label)


def _summary_table(title: str, obligations: Sequence[Obligation]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    table.add_column("property", overflow="fold")
    table.add_column("generation", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("seconds", justify="right", no_wrap=True)
    table.add_column("scope", overflow="fold", style="dim")
    for o in obligations:
        verdict = Text(o.verdict.value, style="yellow" if o.expected else VERDICT_STYLE[o.verdict])
        if o.expected:
            verdict.append(" (expected)", style="dim")
        if o.method == "exhaustive":
            verdict.append(" (enum)", style="dim")
        table.add_row(o.property, o.generation, verdict, f"{o.seconds:.3f}", o.scope)
    return table


def _print_counterexamples(console: Console, obligations: Sequence[Obligation]) -> None:
    for o in obligations:
        if o.verdict == Verdict.PROVED:
            continue
        head = Text(f"{o.verdict.value}{' (expected)' if o.expected else ''}: ",
                    style="yellow" if o.expected else VERDICT_STYLE[o.verdict])
        head.append(o.property, style="bold")
        if o.generation:
            head.append(f" [{o.generation}]")
        console.print(head)
        if o.detail:
            console.print(f"  {o.detail}", highlight=False, markup=False)
        for line in o.lines:  # logs print as [m1@e0 ...]: not rich markup
            console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
        trace = getattr(o, "trace", None)
        if trace:
            from isrcheck.engine.checker import Step

            tablefit.print_wide(console, tables.trace_table([Step(a, st) for a, st in trace],
                                                          title=f"Counterexample: {o.property} after {len(trace) - 1} steps",
                                                          caption="replayed by the model; yellow: changed; red: broker down"))
        console.print()


def _expected_text(obligations: Sequence[Obligation]) -> str:
    """``PROVED except the N expected refutations: a, b`` when only expected refutations remain."""
    from isrcheck.invariants.symbolic.expected import claim_of

    exp = [claim_of(o.property) for o in obligations if o.expected and o.verdict == Verdict.REFUTED]
    if not exp or overall(obligations) != Verdict.PROVED:
        return ""
    return f"PROVED except the {len(exp)} expected refutation{'s' if len(exp) != 1 else ''}: {', '.join(exp)}"


def _verdict_line(label: str, obligations: Sequence[Obligation]) -> Text:
    v = overall(obligations)
    counts = {k: sum(1 for o in obligations if o.verdict == k and not o.expected) for k in Verdict}
    expected = sum(1 for o in obligations if o.expected and o.verdict == Verdict.REFUTED)
    line = Text(f"{label}: ")
    line.append(_expected_text(obligations) or v.value, style=VERDICT_STYLE[v])
    line.append(f" - {counts[Verdict.PROVED]} proved, {counts[Verdict.REFUTED]} refuted"
                + (f" (and {expected} expected)" if expected else "")
                + (f", {counts[Verdict.NOT_INDUCTIVE]} not inductive" if counts[Verdict.NOT_INDUCTIVE] else "")
                + f", {counts[Verdict.UNKNOWN]} unknown")
    return line


def _obligation_json(o: Obligation) -> dict[str, Any]:
    d = o.to_json()
    cti = getattr(o, "cti", None)
    if cti is not None:  # counterexamples to induction: the two states in the model's JSON form
        d["counterexample"]["before_state"] = json_form.state_to_json(cti.before)
        d["counterexample"]["after_state"] = json_form.state_to_json(cti.after)
    trace = getattr(o, "trace", None)
    if trace:  # BMC: the replayed trace, as `isrcheck check --json` prints one
        from isrcheck.engine.checker import Step

        d["counterexample"]["trace"] = json_form.trace_to_json([Step(a, st) for a, st in trace])
    return d


def _emit(as_json: bool, payload: dict[str, Any], title: str, obligations: Sequence[Obligation],
          extra: Callable[[Console], None] | None = None, vacuity: Vacuity | None = None) -> None:
    """Print the verdicts (a table, or one JSON object) and exit with their status. ``vacuity``: the
    static pass of a command that reads a model through the input group; its warnings go into the
    JSON and, with --strict, a run whose claims all hold fails as vacuous (exit 1)."""
    code = exit_code(obligations) if vacuity is None else vacuity.exit_status(obligations)
    if vacuity is not None:
        payload = {**payload, "outcome": vacuity.outcome(obligations), "strict": vacuity.strict,
                   "warnings": [w.to_json() for w in vacuity.warnings]}
    if as_json:
        payload = {**payload, "verdict": overall(obligations).value, "exit_code": code,
                   "summary": _expected_text(obligations) or overall(obligations).value,
                   "expected_refutations": [o.property for o in obligations
                                            if o.expected and o.verdict == Verdict.REFUTED],
                   "obligations": [_obligation_json(o) for o in obligations]}
        click.echo(json.dumps(payload, indent=2, default=str))
    else:
        console = terminal.make_console()
        console.print(_summary_table(title, obligations))
        if extra is not None:
            extra(console)
        _print_counterexamples(console, obligations)
        console.print(_verdict_line(title, obligations))
        if vacuity is not None and vacuity.outcome(obligations) == "vacuous":
            n = len(vacuity.warnings)
            console.print(Text(f"{title}: ") + Text("VACUOUS", style="bold yellow")
                          + Text(f" - {n} part{'s' if n != 1 else ''} of the configuration never take"
                                 f"{'s' if n == 1 else ''} effect (--strict; the warning: lines)"))
    raise click.exceptions.Exit(code)


def _timeout(default: float) -> Callable[[Any], Any]:
    return click.option("--timeout", type=click.FloatRange(min=0.1), default=default, show_default=True,
                        metavar="SECONDS", help="Time limit of each z3 query; a query that hits it is UNKNOWN.")


_timeout_opt = _timeout(60.0)


# ============================================================================ prove
@click.group(short_help="Symbolic proofs with z3 (selectors, transitions, inductive invariants).")
def prove() -> None:
    """Prove claims about the model with z3: PROVED, REFUTED (with a counterexample) or UNKNOWN;
    `prove inductive` also NOT INDUCTIVE (a counterexample to induction not known to be reachable).

    Exit status: 0 every claim proved (but the expected refutations of `prove transitions`); 1 a
    claim refuted; 3 something unknown (a query hit --timeout) or not inductive, and nothing
    refuted; 2 bad usage or input.
    """


def _variant_reason(command: str) -> str:
    """Why the encodings of transitions, inductive and bmc refuse --variant: they are
    transcriptions of the model's code, not of a variant's."""
    return (f"{command} does not take --variant: its z3 encoding transcribes the model's code, "
            "not a variant's Python methods; check the variant with `isrcheck check --variant` "
            "(`isrcheck prove selectors --variant` checks a variant's select())")


def _refuse_variant(command: str, variant: str | None) -> None:
    """--variant given to an encoding that cannot read it: one line (exit status 2)."""
    if variant:
        raise InputError(_variant_reason(command))


def _variant_refused(command: str) -> Callable[[Any], Any]:
    def callback(ctx: click.Context, _param: Any, value: str | None) -> str | None:
        if value:
            try:
                _refuse_variant(command, value)
            except InputError as e:
                _fail(str(e))
        return value

    return click.option("--variant", metavar="MODULE:ATTR", expose_value=False, callback=callback,
                        help=f"Refused: the {command} encoding cannot read a variant's code (exit status 2).")


@prove.command(short_help="Every leader selector against its contract, for every input.")
@click.option("--max-brokers", type=click.IntRange(1, 8), default=8, show_default=True, metavar="N",
              help="Prove for every input over broker ids 1..N (assignments of length 1..N).")
@variant_option
@click.option("--protocol", "protocol_spec", metavar="MODULE:ATTR", hidden=True,
              help="The former name of --variant.")
@click.option("--exhaustive-brokers", type=click.IntRange(1, 4), default=3, show_default=True, metavar="K",
              help="Also run the Python selectors on every input over 1..K brokers.")
@click.option("--samples", type=click.IntRange(min=0), default=500, show_default=True, metavar="S",
              help="Random inputs on which the z3 encoding is compared with the Python code (and a variant checked).")
@_timeout_opt
@json_opt
@_guarded
def selectors(max_brokers: int, variant: str | None, protocol_spec: str | None, exhaustive_brokers: int,
              samples: int, timeout: float, as_json: bool) -> None:
    """Prove each leader selector's contract (specs/04-controller.md#leader-selectors).

    For the model's selectors, z3 proves every clause of every contract for the encoding of
    model/selectors.py over every input up to --max-brokers brokers; the Python code itself is
    run on every input up to --exhaustive-brokers brokers, and the encoding is compared with the
    code on --samples random inputs. A variant's select() (--variant MODULE:ATTR or
    path/to/file.py:ATTR) cannot be read by z3: it is checked on every input up to
    --exhaustive-brokers and on random inputs up to --max-brokers.
    """
    from isrcheck.invariants.symbolic.selectors import prove_selectors
    from isrcheck.model.protocol import Protocol

    if variant and protocol_spec and variant != protocol_spec:
        raise InputError("give --variant or its former name --protocol, not both")
    variant = variant or protocol_spec
    select = None
    generation = "kafka-0.8"
    if variant:
        proto = load_variant(variant)(Config())
        generation = proto.name
        if type(proto).select is not Protocol.select:
            select = proto.select
    start = time.perf_counter()
    with _progress(show_progress(as_json), "prove selectors") as progress:
        report = prove_selectors(max_brokers, timeout, select, generation, exhaustive_brokers, samples,
                                 progress=progress)
    obligations = list(report.obligations)
    disagree = [c for c in report.agreement if c.mismatch is not None]
    for c in disagree:  # the proof is about the encoding: if it differs from the code, say so loudly
        from isrcheck.invariants.symbolic.selectors import describe_input, describe_output

        inp, enc, code = c.mismatch
        obligations.append(Obligation(
            "selectors", f"{c.selector.value}: the z3 encoding is model/selectors.py", generation, Verdict.REFUTED,
            c.seconds, f"{c.inputs} random inputs", detail="the encoding differs from the code on this input",
            lines=[f"input:    {describe_input(inp, c.selector)}", f"encoding: {describe_output(enc)}",
                   f"code:     {describe_output(code)}"]))

    def extra(console: Console) -> None:
        if report.agreement:
            total = sum(c.inputs for c in report.agreement)
            ok = not disagree
            console.print(Text(f"encoding vs code: {'agree' if ok else 'DISAGREE'} on {total:,} random inputs "
                               f"over up to {max_brokers} brokers", style="green" if ok else "bold red"))
        if not report.symbolic:
            console.print(Text(f"{generation} overrides select(): z3 cannot read it; checked by enumeration over "
                               f"1..{min(exhaustive_brokers, max_brokers)} brokers and {samples:,} random inputs",
                               style="yellow"))
        for note in report.notes:
            console.print(Text(f"note: {note}", style="dim"))
        console.print()

    _emit(as_json, {"command": "prove selectors", "max_brokers": max_brokers, "generation": generation,
                    "symbolic": report.symbolic, "seconds": round(time.perf_counter() - start, 6),
                    "agreement": [c.to_json() for c in report.agreement], "notes": report.notes},
          "Leader selectors", obligations, extra)


@prove.command(short_help="Every controller operation against the state-machine tables.")
@click.option("--no-invariants", is_flag=True,
              help="Drop the context invariants from the premises: every source state the guards admit.")
@click.option("--detects-restarts", is_flag=True, help="Bounce detection (Kafka 2.2+): a broker change may "
              "contain a bounced broker.")
@_variant_refused("prove transitions")
@_timeout_opt
@json_opt
@_guarded
def transitions(no_invariants: bool, detects_restarts: bool, timeout: float, as_json: bool) -> None:
    """Prove that every controller operation's moves respect the partition and replica tables.

    Each operation of model/controller.py is a move program over one (partition, replica) pair;
    z3 checks every move against model/tables.py from every pair state the operation's guards and
    the context invariants admit, and checks that each context invariant holds initially and is
    preserved by every operation and by other actors (specs/08-symbolic.md#state-machines).

    The refutations documented as expected (specs/expected_refutations.toml: five context
    invariants that are not inductive) are shown but set aside: with only those, the verdict is
    "PROVED except the N expected refutations" and the exit status 0.
    """
    from isrcheck.invariants.symbolic.transitions import prove_transitions

    start = time.perf_counter()
    generation = "kafka-2.2+" if detects_restarts else "kafka-0.8"
    with _progress(show_progress(as_json), "prove transitions") as progress:
        report = prove_transitions(timeout, generation, progress, with_invariants=not no_invariants,
                                   detects_restarts=detects_restarts)
    from isrcheck.invariants.symbolic.expected import mark_expected

    mark_expected(report.obligations, "transitions")

    def extra(console: Console) -> None:
        for a in report.assumed:
            console.print(Text(f"premise not provable per pair (checked on reachable states by the tests): {a}",
                               style="dim"))
        console.print()

    _emit(as_json, {"command": "prove transitions", "generation": generation, "invariants": not no_invariants,
                    "assumed": report.assumed, "seconds": round(time.perf_counter() - start, 6)},
          "Controller operations vs state-machine tables", report.obligations, extra)


def _target(inputs: Inputs, default: str) -> Target[Config]:
    """The model of the input group (a manifest NAME, a scenario or trace FILE's configuration, or
    --config FILE, with --set), ``default`` when none is given; a manifest model pinned with a
    variant is refused, since the encoding cannot read the variant."""
    name = inputs.name
    if not name and not inputs.config_file:
        name = default
    target = targets.resolve(name, inputs.config_file, inputs.overrides)
    if target.variant:  # its pinned verdicts are a variant's, which the encoding cannot read
        raise InputError(f"model {target.label!r} is checked with a variant "
                         f"({target.entry.variant if target.entry else target.variant}) and the z3 encoding "
                         "transcribes the model's code, not a variant's; check it with `isrcheck check`")
    return target


def _encoding_inputs(command: str, keep_going: str | None = None) -> Callable[[Any], Any]:
    """The one input group (isrcheck/commands/options.py) for the z3 commands that read a model:
    NAME, a scenario or trace FILE, --config, --set, --property (the verdicts given) and --strict
    (the static vacuity pass); what the encoding cannot honour (--variant, --peer) is refused in one
    line (exit status 2) rather than ignored. ``keep_going``: the help of --keep-going where
    it is the command's own behaviour (accepted), else None (refused)."""
    refuse = {
        "--variant": _variant_reason(command),
        "--peer": f"the z3 encoding is of the model, not of the TLA+ transcription; `isrcheck check --peer MODULE` "
                  "checks it",
    }
    if keep_going is None:
        refuse["--keep-going"] = f"{command} gives a verdict for every property it checks, with no first violation to stop at"
    explain = {
        "--property": f"Give {command}'s verdict on this property only (repeatable): one the z3 encoding "
                      "covers for the configuration (a name it does not cover: exit 2, naming those it does).",
        "--strict": "Fail (exit 1, outcome vacuous) when every claim holds but a part of the configuration "
                    "never takes effect (the warning: lines of the static vacuity pass, printed either way).",
    }
    if keep_going:
        explain["--keep-going"] = keep_going
    return input_options(refuse=refuse, explain=explain)
_gen_opt = click.option("--generation", default=None, metavar="G",
                        help="Follower truncation rule (overrides the configuration's `truncation`): "
                             "high-watermark, kip-101, kip-279 or kip-320.")
_queue_opt = click.option("--queue", type=click.IntRange(1, 8), default=None, metavar="Q",
                          help="Requests per broker queue the encoding holds (default: what the "
                               "configuration's operations and faults need, 3 to 8; a fuller queue is UNKNOWN).")


@prove.command(short_help="Inductive invariants of the replication core (Houdini).")
@_encoding_inputs("prove inductive")
@_gen_opt
@_queue_opt
@click.option("--all-actions", is_flag=True, help="Also search the broker-change cases for counterexamples "
              "to induction of each non-inductive property (slower).")
@click.option("--reach-states", type=click.IntRange(min=0), default=200_000, show_default=True, metavar="N",
              help="Search at most N reachable states (explicit checker) for each counterexample's pre-state: "
                   "REFUTED when found, else NOT INDUCTIVE (0: do not search).")
@click.option("--mutation", default=None, metavar="M",
              help="Prove the protocol with a documented mutation, in the encoding and in the explicit checker "
                   "that classifies the counterexamples (specs/08-symbolic.md#a-mutated-protocol): "
                   "no-truncation-on-becoming-follower.")
@_timeout(300.0)
@json_opt
@_guarded
def inductive(inputs: Inputs, generation: str,
              queue: int | None, all_actions: bool, reach_states: int, mutation: str | None, timeout: float,
              as_json: bool) -> None:
    """Check which safety properties are inductive for model NAME (default hw-truncation-one-crash;
    also a scenario or trace FILE's configuration, or --config FILE).

    The replication encoding (every configuration `bmc` covers: operations, reassignments and
    controller failover included) is checked for every state within its bounds: the largest
    inductive subset of the safety properties and the strengthening candidates is computed
    (Houdini); a property outside it gets a counterexample to induction: a pair of states and the
    action between them (specs/08-symbolic.md).

    Such a property is REFUTED only when the explicit checker (a search of at most --reach-states
    states) reaches the counterexample's pre-state, or a state from which an action of its name
    breaks the property (that run is printed); otherwise it is NOT INDUCTIVE: the proof failed, but
    no reachable counterexample is known (the property may well hold). --mutation M proves a
    documented mutated protocol instead, in the encoding and in the explicit checker.

    --property NAME (repeatable) gives the verdicts of those properties only; the others still
    strengthen the proof, so each verdict is the one a full run gives. The static vacuity pass runs
    first (warning: lines); with --strict a run whose claims all hold fails as vacuous (exit 1).
    """
    from isrcheck.invariants.symbolic.houdini import prove_inductive

    target = _target(inputs, "hw-truncation-one-crash")
    chosen = _chosen(inputs, target.config, generation, queue)
    vacuity = _vacuity(inputs, target.config, as_json)
    start = time.perf_counter()
    rule = protocol = None
    if mutation:
        import dataclasses

        from isrcheck.invariants.symbolic.mutations import mutation as find_mutation

        cfg = target.config if generation is None else dataclasses.replace(target.config, generation=generation)
        m = find_mutation(mutation, cfg)
        rule, protocol = m.rule(cfg), m.protocol(cfg)
    with _progress(show_progress(as_json), f"prove inductive {target.label}") as progress:
        res = prove_inductive(target.config, generation, timeout, queue, progress,
                              per_action="all" if all_actions else True, rule=rule, properties=chosen)
        reach = _classify_ctis(target.config, generation, res.obligations, reach_states, progress, protocol,
                               res.per_kind)

    def extra(console: Console) -> None:
        console.print(Text(target.label, style="bold") + Text(f"  {tables.config_line(target.config)}"))
        console.print(Text("strengthening invariants (proved inductive with the properties): "
                           + (", ".join(res.kept) or "none"), style="dim"))
        console.print(Text("candidates discarded (not inductive here): "
                           + (", ".join(sorted(res.dropped)) or "none"), style="dim"))
        from isrcheck.invariants.symbolic.replication import NOT_ENCODED

        for prop, why in NOT_ENCODED.items():
            if not inputs.only:  # with --property the user chose among what is encoded
                console.print(Text(f"{prop}: {why}", style="dim"))
        console.print(Text(f"{res.queries} queries, {res.seconds:.1f} s", style="dim"))
        console.print()

    _emit(as_json, {"command": "prove inductive", "model": target.label, "generation": res.generation,
                    "mutation": mutation, "properties": list(chosen),
                    "config": target.config.to_dict(), "strengthening": res.kept,
                    "discarded": sorted(res.dropped), "queries": res.queries, "reachability": reach,
                    "seconds": round(time.perf_counter() - start, 6)},
          f"Inductive invariants ({target.label})", res.obligations, extra, vacuity)


def _classify_ctis(cfg: Config, generation: str | None, obligations: Sequence[Obligation], max_states: int,
                   progress: Callable[[str], None], protocol: Any = None,
                   kinds: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """REFUTED stays only where the explicit checker turns the counterexample to induction into a real
    run (:func:`isrcheck.invariants.symbolic.reach.classify`); every other refuted ``inductive``
    obligation becomes NOT INDUCTIVE (in place). The search's extent, for the JSON output."""
    import dataclasses

    from isrcheck.invariants.symbolic.reach import classify

    explicit = cfg if generation is None else dataclasses.replace(cfg, generation=generation)
    return classify(explicit, obligations, max_states, protocol, kinds or {}, progress)


# ============================================================================ bmc
@click.command(short_help="Bounded model checking of the replication encoding with z3.")
@_encoding_inputs("bmc", keep_going="Accepted: bmc finds the shortest violation of every property (unless --first).")
@click.option("--depth", type=click.IntRange(0, 64), default=8, show_default=True, metavar="K",
              help="Explore every execution of at most K steps.")
@click.option("--first", "stop_at_first", is_flag=True, help="Stop at the first depth with a violation.")
@_gen_opt
@_queue_opt
@_timeout_opt
@json_opt
@_guarded
def bmc(inputs: Inputs, depth: int, stop_at_first: bool,
        generation: str, queue: int | None, timeout: float, as_json: bool) -> None:
    """Bounded model checking of model NAME (a scenario or trace FILE's configuration, or --config
    FILE), up to --depth steps.

    Every manifest model is encoded; a reassignment together with other administrative operations,
    and bounce detection, are not (exit status 2). For each property the shortest violation within
    the depth is found, replayed by the model and printed (an illegal state-machine move as the
    step the model refuses); lengths count actions exactly as `isrcheck check` does, so both agree
    (specs/08-symbolic.md#bounded-model-checking).

    --property NAME (repeatable) searches for violations of those properties only. The static
    vacuity pass runs first (warning: lines); with --strict a run with no violation fails as
    vacuous (exit 1).
    """
    from isrcheck.invariants.symbolic.bmc import bmc as run_bmc

    if inputs.keep_going and stop_at_first:
        raise InputError("--keep-going and --first contradict each other: give one")
    target = _target(inputs, "")
    chosen = _chosen(inputs, target.config, generation, queue)
    vacuity = _vacuity(inputs, target.config, as_json)
    start = time.perf_counter()
    with _progress(show_progress(as_json), f"bmc {target.label}") as progress:
        res = run_bmc(target.config, depth, generation, timeout, queue, progress, stop_at_first, properties=chosen)

    def extra(console: Console) -> None:
        console.print(Text(target.label, style="bold") + Text(f"  {tables.config_line(target.config)}  depth={depth}"))
        for n, d in res.witnessed.items():
            console.print(Text(f"{n}: witnessed after {d} steps" if d is not None else
                               f"{n}: not witnessed within {depth} steps", style="dim"))
        console.print()

    _emit(as_json, {"command": "bmc", "model": target.label, "mode": "bmc", "depth": depth,
                    "generation": generation, "properties": list(chosen), "config": target.config.to_dict(),
                    "witnessed": res.witnessed, "overflow_depth": res.overflow_depth,
                    "seconds": round(time.perf_counter() - start, 6)},
          f"Bounded model checking ({target.label}, depth {depth})", res.obligations, extra, vacuity)


__all__ = ["prove", "bmc"]
