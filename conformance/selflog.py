"""The implementation's own event logs (``impl/event_log.py``), merged into one event log and validated.

Every process of a real cluster run writes its own file (``<name>.<pid>.events.jsonl``, see
:mod:`isrcheck.impl.event_log`). :func:`merge_selflogs` reads the files of one run and builds one
:class:`~.eventlog.EventLog` of the existing format:

- each file is checked on its own: the header (format ``isrcheck-selflog``, version 1), each line's
  keys and types, its facts (paths and values against the schema), its named step (the vocabulary),
  ``seq`` counting 1, 2, ... without gaps and ``t`` never going back; a problem there is reported at
  that process's line. A last line without its newline is *torn* (the process was SIGKILLed while
  writing it): it is dropped with a note, never an error;
- the lines of all files are merged by ``t`` (CLOCK_MONOTONIC, one clock for the host), ties broken
  by process name and then ``seq``, and numbered 1, 2, ... as events; a follower's lines logged while
  its fetch was in flight are made to fit the model's one-step ``Fetch`` (a checkpoint goes before the
  leader's half, other lines lose the fetched replica's facts; :func:`_checkpoints_before_fetch`), and
  a broker's HW checkpoints logged after the controller's ``ControlledShutdown`` of it, before it heard
  of it, go before the controller's step (:func:`_checkpoints_before_shutdown`); and a follower's half
  of a fetch its leader answered before the launcher's ``Crash`` of it, logged after that line, goes
  before it (:func:`_fetches_before_crash`);
- the run's prefix before the cluster reached the model's initial state (controllers electing,
  brokers registering, the topic being created) is folded into the header's ``initial``: the start is
  the first line after which the facts logged so far cover the controller epoch, each partition's
  leader/ISR znode, every broker's liveness and every assigned replica's role, and agree with the
  model's initial state;
- a client's ``acked[p]`` lines list the writes acknowledged to that client; the merged event carries
  the union over every client line so far (the model's ``acked`` is the run's, not one client's);
- the header says ``"facts": "partial"`` (each event carries one process's facts), ``silent`` lists
  what the model must be allowed to do between two lines (:data:`SILENT`: an observation line is
  explained by such steps, a Fetch that changes nothing is never logged), ``max_silent``
  (:data:`MAX_SILENT`) bounds them.

The configuration is the processes' (the model's keys of it), with budgets fitted to the run: as many
crashes and controller failovers as the launcher logged, as many records as were produced.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isrcheck.invariants import build_model
from isrcheck.model.config import Config, ConfigError, Faults, Reassignment, from_mapping
from isrcheck.model.observe import observe
from isrcheck.specs.actions import VocabularyError, actions as vocabulary, check_action
from isrcheck.specs.inputs import InputError, Kind, check_lines_depth, read_bytes

from .eventlog import Event, EventLog, EventLogError, ValidationResult, _FactChecker, validate_log
from .observations import flatten
from .sides import acked_of
from .traces import parse_json

__all__ = ["FORMAT", "MAX_SILENT", "SILENT", "Merged", "SelfLine", "merge_selflogs", "selflog_files", "validate_selflogs"]

FORMAT = "isrcheck-selflog"
VERSION = 1
#: unlogged model steps allowed around one merged event
MAX_SILENT = 4
#: the model steps an event may need before (or after) it: the ones no process logs as a named
#: action, because the implementation spreads them over several inputs or processes (a Fetch is the
#: leader's and the follower's halves; a controller's reaction spans store calls and requests; a
#: DeliverRequest that changes nothing a broker owns is not logged). Not silent: ShrinkIsr and
#: CheckpointHighWatermark (every one the implementation does is logged, named), Produce, Crash,
#: Restart, ControllerFailover and ControlledShutdown (likewise; the last by the controller).
SILENT = ("DeliverRequest", "Fetch", "OffsetsForLeaderEpoch", "TruncateToEpochEndOffset", "ProcessBrokerChange",
          "ResignController", "ElectPreferredLeader", "ReassignPartition", "CreateTopic", "StartTopicDeletion",
          "CompleteTopicDeletion")
_HEADER_KEYS = {"format", "version", "process", "role", "pid", "clock", "config"}
_LINE_KEYS = {"seq", "t", "kind", "step", "facts", "input", "note"}


@dataclass(frozen=True)
class SelfLine:
    """One line of one process's own log."""

    process: str
    role: str
    file: str
    line: int
    seq: int
    t: int
    kind: str
    action: tuple[str, tuple | None] | None
    facts: Mapping[str, Any]
    note: str = ""

    @property
    def where(self) -> str:
        return f"{self.process} seq {self.seq} ({Path(self.file).name} line {self.line})"


@dataclass
class Merged:
    """The merged log of one run, where each event came from, and what was dropped on the way."""

    log: EventLog
    origin: dict[int, SelfLine]  # merged seq -> the process's line
    notes: list[str] = field(default_factory=list)
    files: int = 0
    lines: int = 0  # lines read, the initial prefix included
    folded: int = 0  # lines folded into the initial state
    problem: tuple[SelfLine, str] | None = None  # a line out of order or missing in its own file


def selflog_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files named, a directory standing for its ``*.events.jsonl``."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(p.glob("*.events.jsonl"))
            if not found:
                raise EventLogError(f"{p}: no *.events.jsonl files (an implementation event-log directory)")
            out += found
        elif p.exists():  # a FIFO or device is refused, by name, when it is read
            out.append(p)
        else:
            raise EventLogError(f"{p}: no such file or directory")
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _read(path: Path, notes: list[str]) -> tuple[dict[str, Any], list[tuple[int, Any]]] | None:
    try:  # the bounded reader: a regular file, at most ISRCHECK_MAX_EVENT_LOG_BYTES, lines nested <= 64
        data = read_bytes(path, Kind.EVENT_LOG)
    except InputError as e:
        raise EventLogError(str(e)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise EventLogError(f"{path}: not an isrcheck implementation event log (not UTF-8 text)") from None
    lines = text.split("\n")
    torn = lines.pop()  # "" when the file ends with its newline
    if torn:
        notes.append(f"{path.name}: line {len(lines) + 1} is torn (the process was killed while writing it); "
                     f"ignored")
    if not lines:
        if torn:
            notes.append(f"{path.name}: nothing but a torn header; file ignored")
            return None
        raise EventLogError(f"{path}: empty, not an isrcheck implementation event log")
    try:
        check_lines_depth(lines, str(path))
    except InputError as e:
        raise EventLogError(str(e)) from None
    try:
        head = parse_json(lines[0])
    except ValueError:
        raise EventLogError(f"{path}: line 1: not an isrcheck implementation event log (not JSON)") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        what = head.get("format") if isinstance(head, dict) else None
        raise EventLogError(f"{path}: not an isrcheck implementation event log (format {what!r}, "
                            f"expected {FORMAT!r})")
    if head.get("version") != VERSION:
        raise EventLogError(f"{path}: line 1: version {head.get('version')!r} is not supported (this isrcheck "
                            f"reads version {VERSION})")
    extra = sorted(set(head) - _HEADER_KEYS)
    if extra:
        raise EventLogError(f"{path}: line 1: unknown header key {extra[0]!r}")
    if not isinstance(head.get("process"), str) or not isinstance(head.get("role"), str) \
            or not _is_int(head.get("pid")) or not isinstance(head.get("config"), dict):
        raise EventLogError(f"{path}: line 1: the header needs process, role (strings), pid (an integer) and "
                            f"config (an object)")
    out = []
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            out.append((n, parse_json(line)))
        except ValueError as e:
            raise EventLogError(f"{path}: line {n}: not JSON ({e})") from None
    return head, out


def _line(head: Mapping[str, Any], path: Path, n: int, raw: Any, cfg: Config, checker: _FactChecker) -> SelfLine:
    where = f"{path}: line {n}"
    if not isinstance(raw, dict):
        raise EventLogError(f"{where}: a line must be a JSON object")
    extra = sorted(set(raw) - _LINE_KEYS)
    if extra:
        raise EventLogError(f"{where}: unknown key {extra[0]!r}")
    seq, t, kind = raw.get("seq"), raw.get("t"), raw.get("kind")
    if not _is_int(seq) or not _is_int(t):
        raise EventLogError(f"{where}: seq and t must be integers")
    if kind not in ("action", "observation") and not (kind == "end" and head["role"] == "launcher"):
        raise EventLogError(f"{where}: kind must be \"action\" or \"observation\" (or a launcher's \"end\"), "
                            f"got {kind!r}")
    for key in ("input", "note"):
        if not isinstance(raw.get(key, ""), str):
            raise EventLogError(f"{where}: {key} must be a string")
    st = raw.get("step")
    if st is not None and (not isinstance(st, dict) or not set(st) <= {"name", "args"} or "name" not in st):
        raise EventLogError(f"{where}: step must be null or an object with name (and args)")
    action: tuple[str, tuple | None] | None = None
    if st is not None:
        if st["name"] not in vocabulary():
            raise EventLogError(f"{where}: unknown step {st['name']!r}: not in specs/actions.toml")
        if "args" in st:
            try:
                action = check_action(st, cfg.brokers, cfg.partitions)
            except VocabularyError as e:
                raise EventLogError(f"{where}: {e}") from None
        else:
            action = (st["name"], None)
    facts = checker.check(raw.get("facts", {}), where)
    note = raw.get("note", "") or raw.get("input", "")
    return SelfLine(head["process"], head["role"], str(path), n, seq, t, kind, action, facts, note)


def _model_config(raw: Mapping[str, Any], lines: Sequence[SelfLine]) -> Config:
    keys = {f.name for f in dataclasses.fields(Config)}
    mapping = {k: v for k, v in raw.items() if k in keys}
    try:
        cfg = from_mapping(mapping)
    except ConfigError as e:
        raise EventLogError(f"the processes' configuration: {e}") from None
    named = [ln.action[0] for ln in lines if ln.kind == "action" and ln.action is not None]
    crashes = named.count("Crash")
    records = max([named.count("Produce")] + [x["id"] for ln in lines for p, v in ln.facts.items()
                                              if p.endswith(".log") for x in v])
    faults = dataclasses.replace(cfg.faults, crashes=max(cfg.faults.crashes, crashes),
                                 controller_failovers=max(cfg.faults.controller_failovers,
                                                          named.count("ControllerFailover")),
                                 isr_shrinks=max(cfg.faults.isr_shrinks, named.count("ShrinkIsr") + 2 * crashes + 1))
    # the reassignments the run requested, in its order (the model's RequestReassignment takes the next
    # one of the list, so what the configuration declares is replaced by what was logged)
    requested = tuple(Reassignment(args[0], tuple(args[1])) for ln in lines if ln.kind == "action"
                      and ln.action is not None and ln.action[0] == "RequestReassignment"
                      for args in [ln.action[1]] if args is not None)
    operations = dataclasses.replace(cfg.operations, controlled_shutdowns=max(cfg.operations.controlled_shutdowns,
                                                                              named.count("ControlledShutdown")),
                                     reassignments=requested or cfg.operations.reassignments)
    return dataclasses.replace(cfg, faults=Faults(**dataclasses.asdict(faults)), operations=operations,
                               max_records=max(cfg.max_records, records))


def _anchors(cfg: Config, init: Mapping[str, Any]) -> list[str]:
    out = ["controller.epoch"] + [f"brokers[{b}].alive" for b in range(1, cfg.brokers + 1)]
    for p in range(cfg.partitions):
        out += [f"partitions[{p}].{f}" for f in ("leader", "isr", "leader_epoch", "zk_version")]
        out += [f"replicas[{b},{p}].role" for b in init.get(f"partitions[{p}].replicas", [])]
    return out


def _order_problem(mine: Sequence[SelfLine]) -> tuple[SelfLine, str] | None:
    """The first line of one process's log whose ``seq`` or ``t`` is out of sequence."""
    prev_seq, prev_t = 0, None
    for i, ln in enumerate(mine):
        if ln.seq != prev_seq + 1:
            later = next((x for x in mine[i + 1:] if x.seq == prev_seq + 1), None)
            if ln.seq <= prev_seq or later is not None:
                what = "lines out of order" + (f" (seq {later.seq} comes later, line {later.line})" if later else "")
            else:
                what = f"seq {prev_seq + 1} is missing"
            return ln, f"{ln.where}: seq {ln.seq} after seq {prev_seq}: {what}"
        if prev_t is not None and ln.t < prev_t:
            return ln, f"{ln.where}: time goes back (t={ln.t} after t={prev_t}): lines out of order"
        prev_seq, prev_t = ln.seq, ln.t
    return None


def _checkpoints_before_fetch(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The merged lines with each follower's lines logged while its fetch was in flight made to fit
    the model's one-step ``Fetch``; and how many lines were changed.

    The model's ``Fetch(f, p)`` is one step: the leader counts the follower's offset (its HW may
    advance) and the follower takes the records and the leader's HW. The implementation logs it as
    two lines, the leader's half first. A line the follower ``f`` logs between the two still shows its
    replica of ``p`` before the fetch, which no model state after the fetch has; on a loaded host the
    window is wide enough for it (it made the two-partition run fail now and then, at a follower whose
    HW went down in the fetch). So, until ``f``'s own half (or its restart, or a controller request
    it handles, after which the response would be dropped):

    - an HW checkpoint of ``f`` with nothing else of ``f`` since the leader's half is placed just
      before the leader's half, with that line's clock reading: a local step with no cause among the
      lines it passes, taken on a state unchanged since ``f``'s previous line, in the order the
      model needs;
    - any other line of ``f`` keeps its place but not its facts of ``replicas[f,p]`` (the replica in
      the middle of the model's step); they are checked again at ``f``'s half.
    """
    out: list[SelfLine] = []
    window: dict[str, tuple[int, int]] = {}  # follower -> (index in ``out`` of the leader's half, partition)
    movable: set[str] = set()  # followers that logged nothing but (moved) checkpoints since the leader's half
    changed = 0
    for ln in lines:
        act = ln.action
        w = window.get(ln.process)
        if w is not None:
            at, p = w
            follower = int(ln.process.rsplit("-", 1)[1])
            if act is not None and (act == ("Fetch", (follower, p)) or act[0] in ("Restart", "DeliverRequest")):
                del window[ln.process]  # its own half, or it moved on: the window ends
                movable.discard(ln.process)
            elif ln.process in movable and ln.kind == "action" and act is not None \
                    and act[0] == "CheckpointHighWatermark":
                out.insert(at, dataclasses.replace(ln, t=out[at].t, note=(ln.note + "; " if ln.note else "")
                                                   + "placed before the leader's half of its fetch in flight"))
                for k, (v, q) in window.items():
                    if v >= at:
                        window[k] = (v + 1, q)
                changed += 1
                continue
            else:
                movable.discard(ln.process)
                prefix = f"replicas[{follower},{p}]."
                stale = [k for k in ln.facts if k.startswith(prefix)]
                if stale:
                    ln = dataclasses.replace(ln, facts={k: v for k, v in ln.facts.items() if k not in stale},
                                             note=(ln.note + "; " if ln.note else "")
                                             + f"{prefix}* not checked: its fetch was in flight")
                    changed += 1
        if ln.role == "broker" and act is not None and act[0] == "Fetch" and act[1] is not None \
                and ln.process != f"broker-{act[1][0]}" and f"broker-{act[1][0]}" not in window:  # a leader's half
            window[f"broker-{act[1][0]}"] = (len(out), act[1][1])
            movable.add(f"broker-{act[1][0]}")
        out.append(ln)
    return out, changed


def _checkpoints_before_shutdown(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The merged lines with each HW checkpoint a broker logged after the controller's
    ``ControlledShutdown(e, b)`` of it, before it heard from the controller, placed just before the
    controller's line; and how many lines were moved.

    The model's broker ``b`` stops in the controller's step (writing its HW checkpoints on the way).
    The implementation's broker goes on until the controller's answer or LeaderAndIsr/StopReplica
    reaches it (then it logs nothing more, impl/event_log.py), and its periodic checkpoint timer may
    fire in between: on a loaded host the controlled-shutdown run failed now and then at such a line.
    A checkpoint of ``b`` with nothing else of ``b`` since the controller's line is a local step on a
    state unchanged since ``b``'s previous line, with no cause in the controller's step (``b`` had
    heard nothing of it): it is placed just before the controller's line, with that line's clock
    reading. Any other line of ``b`` there (and every line after it) keeps its place, and is not a
    model behaviour.
    """
    out: list[SelfLine] = []
    window: dict[str, int] = {}  # broker -> index in ``out`` of the controller's ControlledShutdown line
    moved = 0
    for ln in lines:
        act = ln.action
        at = window.get(ln.process)
        if at is not None:
            if ln.kind == "action" and act is not None and act[0] == "CheckpointHighWatermark" \
                    and act[1] is not None and f"broker-{act[1][0]}" == ln.process:
                out.insert(at, dataclasses.replace(ln, t=out[at].t, note=(ln.note + "; " if ln.note else "")
                                                   + "placed before the controller's controlled shutdown of "
                                                     "its broker, which it had not heard of"))
                window = {k: v + 1 if v >= at else v for k, v in window.items()}
                moved += 1
                continue
            del window[ln.process]  # anything else of it: the window ends
        if ln.role == "controller" and ln.kind == "action" and act is not None and act[0] == "ControlledShutdown" \
                and act[1] is not None:
            window[f"broker-{act[1][1]}"] = len(out)
        out.append(ln)
    return out, moved


def _fetches_before_crash(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The merged lines with each follower's half of a fetch its crashed leader answered, logged after
    the launcher's ``Crash(v)`` line, placed just before that line; and how many lines were moved.

    The model's ``Fetch(f, p)`` is one step, taken when the leader ``v`` answers; the leader logs its
    half only when its own facts change (not, say, when its HW was already where the fetch would put
    it), and the follower logs its half when the answer reaches it. The launcher freezes ``v`` before
    reading the clock for ``Crash(v)``, so every answer ``v`` sent was sent before that line, but one
    still in flight is logged by the follower after it, where the model's leader is dead and no
    ``Fetch`` from it is enabled (on a loaded host the command-line run failed now and then, at a
    follower's half showing the HW the crashed leader had given it). So, for each other broker ``f``
    until it logs anything else (a controller request it handles, above all), or ``v`` logs again
    (its restart): the follower's half of ``Fetch(f, p)`` whose partition's leader (as last logged
    by a controller) is ``v`` at the leader epoch ``f``'s line shows, together with ``f``'s HW
    checkpoints logged before it since the crash (local steps, kept in ``f``'s order), is placed just
    before the ``Crash`` line, with that line's clock reading: none of them had any cause in the crash
    or in the lines they pass (``f`` had heard of nothing since), and nothing logged before ``f``'s
    next line can depend on them.
    """
    leader: dict[int, tuple[Any, Any]] = {}  # partition -> (leader, leader epoch), as last logged
    crash: dict[str, tuple[int, int]] = {}  # follower -> (index in ``lines`` of the Crash line, victim)
    pending: dict[str, list[int]] = {}  # follower -> its checkpoints since the crash (indices in ``lines``)
    dest: dict[int, int] = {}  # index of a moved line -> index of the Crash line it goes before
    for i, ln in enumerate(lines):
        act = ln.action
        w = crash.get(ln.process)
        if w is not None:
            at, v = w
            follower = int(ln.process.rsplit("-", 1)[1])
            if ln.kind == "action" and act is not None and act[0] == "CheckpointHighWatermark" \
                    and act[1] is not None and act[1][0] == follower:
                pending[ln.process].append(i)
                continue
            p = act[1][1] if act is not None and act[0] == "Fetch" and act[1] is not None \
                and act[1][0] == follower else None
            if p is not None and ln.kind == "observation" and leader.get(p, (None, None)) == (
                    v, ln.facts.get(f"replicas[{follower},{p}].leader_epoch")):
                for k in pending[ln.process] + [i]:
                    dest[k] = at
                pending[ln.process] = []
                continue
            del crash[ln.process]  # anything else of it: the window ends
            del pending[ln.process]
        if ln.role == "broker":
            gone = [f for f, (_, v) in crash.items() if ln.process == f"broker-{v}"]
            for f in gone:  # the crashed leader logs again (its restart): its answers are gone
                del crash[f]
                del pending[f]
        for k, val in ln.facts.items():
            if k.startswith("partitions[") and k.endswith("].leader"):
                p = int(k[len("partitions["):-len("].leader")])
                leader[p] = (val, ln.facts.get(f"partitions[{p}].leader_epoch", leader.get(p, (None, None))[1]))
        if ln.role == "launcher" and ln.kind == "action" and act is not None and act[0] == "Crash" \
                and act[1] is not None:
            v = int(act[1][0])
            for other in sorted({x.process for x in lines if x.role == "broker"}):
                if other != f"broker-{v}" and other not in crash:
                    crash[other] = (i, v)
                    pending[other] = []
    if not dest:
        return lines, 0
    before: dict[int, list[SelfLine]] = {}
    for k in sorted(dest):
        at = dest[k]
        ln = lines[k]
        before.setdefault(at, []).append(dataclasses.replace(
            ln, t=lines[at].t, note=(ln.note + "; " if ln.note else "")
            + f"placed before the launcher's crash of the leader that answered its fetch ({lines[at].where})"))
    out: list[SelfLine] = []
    for i, ln in enumerate(lines):
        if i in dest:
            continue
        out += before.get(i, [])
        out.append(ln)
    return out, len(dest)


def merge_selflogs(paths: Iterable[str | Path], max_silent: int = MAX_SILENT) -> Merged:
    """One event log from the per-process logs of one run (see the module's docstring)."""
    files = list(dict.fromkeys(f.resolve() for f in selflog_files(paths)))  # a file named twice is read once
    notes: list[str] = []
    read = [(f, r) for f in files for r in [_read(f, notes)] if r is not None]
    if not read:
        raise EventLogError("no implementation event log lines to read")
    configs = {json.dumps(h["config"], sort_keys=True) for _, (h, _) in read}
    if len(configs) > 1:
        raise EventLogError("the files are not of one run: their processes were configured differently")
    raw_cfg = read[0][1][0]["config"]
    base = _model_config(raw_cfg, [])
    model = build_model(base, symmetry=False, properties=[])
    s0 = model.init_states()[0]
    template = flatten(observe(s0), acked_of(s0))
    checker = _FactChecker(base, template)
    lines: list[SelfLine] = []
    problem: tuple[SelfLine, str] | None = None
    for f, (h, raw_lines) in read:
        mine = [_line(h, f, n, raw, base, checker) for n, raw in raw_lines]
        if problem is None:
            problem = _order_problem(mine)
        lines += mine
    lines.sort(key=lambda x: (x.t, x.process, x.seq))
    lines, moved = _fetches_before_crash(lines)
    if moved:
        notes.append(f"{moved} line(s) of a follower whose fetch its leader answered before the launcher's crash of it, "
                     f"logged after that crash (a follower's half, and its HW checkpoints before it), placed before "
                     f"the crash")
    lines, moved = _checkpoints_before_fetch(lines)
    if moved:
        notes.append(f"{moved} line(s) of a follower whose fetch was in flight made to fit the model's one-step "
                     f"Fetch (a checkpoint placed before the leader's half, or the fetched replica's facts not "
                     f"checked until the follower's half)")
    lines, moved = _checkpoints_before_shutdown(lines)
    if moved:
        notes.append(f"{moved} HW checkpoint(s) of a broker logged after the controller's controlled shutdown of it, "
                     f"before it heard of it, placed before the controller's step")
    end = next((i for i, ln in enumerate(lines) if ln.kind == "end"), None)
    if end is not None:
        if len(lines) - end - 1:
            notes.append(f"{len(lines) - end - 1} line(s) after the launcher's end of the run (taking the cluster "
                         f"down) ignored")
        lines = lines[:end]
    cfg = _model_config(raw_cfg, lines)
    # the start: the first line after which what was logged is the model's initial state
    anchors = _anchors(cfg, template)
    folded: dict[str, Any] = {}
    start = -1
    for i, ln in enumerate(lines):
        folded.update(ln.facts)
        if all(a in folded for a in anchors) and all(template.get(p) == v and type(template.get(p)) is type(v)
                                                    for p, v in folded.items()):
            start = i
            break
    if start < 0:
        raise EventLogError(f"the run never reached the model's initial state ({len(lines)} line(s) from "
                            f"{len(read)} file(s)): the topic created with the configuration's assignment, its "
                            f"leader elected and known to every replica")
    log = EventLog(cfg, [], dict(folded), "partial", tuple(SILENT), max_silent, False, "cluster-selflog", None,
                   f"the implementation's own event logs of {len(read)} process(es), merged by CLOCK_MONOTONIC")
    origin: dict[int, SelfLine] = {}
    acked: dict[str, set[int]] = {}
    for ln in lines[start + 1:]:
        facts = dict(ln.facts)
        if ln.role == "launcher":
            for p, v in ln.facts.items():
                if p.startswith("acked["):
                    acked.setdefault(p, set()).update(v)
                    facts[p] = sorted(acked[p])
        seq = len(log.events) + 1
        action = ln.action if ln.kind == "action" else None
        log.events.append(Event(seq, ln.kind, action, facts, ln.t, ln.process,
                                f"{ln.where}" + (f": {ln.note}" if ln.note else "")))
        origin[seq] = ln
    return Merged(log, origin, notes, len(read), len(lines), start + 1, problem)


def validate_selflogs(paths: Iterable[str | Path], max_silent: int = MAX_SILENT,
                      max_candidates: int = 20_000) -> tuple[Merged, ValidationResult]:
    """Merge the run's logs and check the merged log with :func:`validate_log`; a failure names the
    process, its ``seq`` and its file and line."""
    merged = merge_selflogs(paths, max_silent)
    if merged.problem is not None:
        ln, why = merged.problem
        return merged, ValidationResult(False, len(merged.log.events), 0, 0.0, None, why, [])
    res = validate_log(merged.log, max_candidates)
    if not res.ok and res.failed_event is not None:
        ln = merged.origin.get(res.failed_event.seq)
        if ln is not None:
            res.reason = f"{ln.where}: {res.reason}"
    return merged, res
