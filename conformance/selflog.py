"""The implementation's own event logs (``impl/process/event_log.py``), merged into one event log and validated.

Every process of a real cluster run writes its own file (``<name>.<pid>.events.jsonl``, see
:mod:`isrcheck.impl.process.event_log`). :func:`merge_selflogs` reads the files of one run and builds one
:class:`~.eventlog.EventLog` of the existing format:

- each file is checked on its own: the header (format ``isrcheck-selflog``, version 1), each line's
  keys and types, its facts (paths and values against the schema), its named step (the vocabulary),
  ``seq`` counting 1, 2, ... without gaps and ``t`` never going back; a problem there is reported at
  that process's line. A last line without its newline is *torn* (the process was SIGKILLed while
  writing it): it is dropped with a note, never an error;
- the lines of all files are merged by ``t`` (CLOCK_MONOTONIC, one clock for the host), ties broken
  by process name and then ``seq``, and numbered 1, 2, ... as events; a follower's lines logged while
  its fetch was in flight are made to fit the model's one-step ``Fetch`` (a checkpoint goes before the
  leader's half, other lines lose the fetched replica's facts, each partition's fetch its own window;
  :func:`_checkpoints_before_fetch`; a
  leader's half whose HW rose to where another in-sync follower's log reaches, past its HW, counts as
  that follower's half too: the leader counted its fetch without a line and holds the answer,
  :func:`_counted_unlogged`), and
  a broker's HW checkpoints logged after the controller's ``ControlledShutdown`` of it, before it heard
  of it, go before the controller's step (:func:`_checkpoints_before_shutdown`); and a follower's half
  of a fetch its leader answered before the launcher's ``Crash`` of it, logged after that line, goes
  before it (:func:`_fetches_before_crash`); a follower's half of a fetch its leader answered without
  logging a half, logged after a later step of the leader, goes back to where the leader answered it
  (:func:`_unlogged_answers_in_place`; before kip-320 the leader's lines of a newer leader epoch than the
  follower's answer it too, as neither side compares epochs); a leader's append that a SIGKILL left on
  disk without its line is a ``Produce`` before the crash, and so is an HW checkpoint its restart recovered a
  ``CheckpointHighWatermark`` (:func:`_appends_lost_in_a_crash`); a broker's ``Reregister`` with no
  logged ``ExpireSession`` since its last registration (a fault other than the launcher's ``expire``
  ended its session) proves one: it is added before the controller's first line dropping the broker
  from an ISR since then, or before the ``Reregister`` (:func:`_expiries_unlogged`);
- a leader's half of ``Fetch(f, p)`` after which ``f`` logged a controller request for ``p`` (or from a
  newer controller) before its own half is a ``FetchAnswerLost``: ``f`` dropped the answer (it fetches
  again after such a request), so its log end and HW hold across the line, and each such line is a
  unit of the fitted ``lost_fetch_answers`` (:func:`_answers_fenced`);
- a leader's half of a fetch whose follower had already moved to another leader epoch (a delayed
  request) goes before the follower's line that moved it (:func:`_stale_requests_in_place`); a
  leader/ISR znode one version past the last one logged is a leader's ``ShrinkIsr`` whose answer never
  reached it (:func:`_shrinks_unanswered`);
- record ids are the model's: the n-th ``Produce`` of a partition appends record n, whatever id the
  client gave it (a write sent again after a later one, or appended twice; :func:`_renumber_records`);
- each event also carries every other broker's log end and HW as its last line gave them, which hold
  until its next line save where the model changes them first (:func:`_with_held`): this keeps the
  candidate states of a run with a follower cut off for seconds few (thousands, and minutes, without);
- the run's prefix before the cluster reached the model's initial state (controllers electing,
  brokers registering, the topic being created) is folded into the header's ``initial``: the start is
  the first line after which the facts logged so far cover the controller epoch, each partition's
  leader/ISR znode, every broker's liveness and every assigned replica's role, and agree with the
  model's initial state; a replica's first LeaderAndIsr logged after another process's first step (a
  slow replica its leader already dropped from the ISR) goes before that step, which it commutes with
  (:func:`_the_start`), and a run that never gets there is an error naming the line that left it;
- a client's ``acked[p]`` lines list the writes acknowledged to that client; the merged event carries
  the union over every client line so far (the model's ``acked`` is the run's, not one client's);
- the header says ``"facts": "partial"`` (each event carries one process's facts), ``silent`` lists
  what the model must be allowed to do between two lines (:data:`SILENT`: an observation line is
  explained by such steps, a Fetch that changes nothing is never logged), ``max_silent``
  (:data:`MAX_SILENT`) bounds them.

The configuration is the processes' (the model's keys of it), with budgets fitted to the run: as many
crashes, controller failovers and session expiries as were logged (or inferred), as many records as were
produced; and acks=1 if any write was (torture mixes an acks=1 producer in, whose writes a leader appends
with its ISR below min.insync.replicas). A budget the run's configuration declares is kept: torture
declares ``faults.lost_fetch_answers`` when its nemesis drops frames between brokers (a fetch answer lost
after the leader counted the fetch is the model's silent ``FetchAnswerLost``; no process logs it).
"""
from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isrcheck.invariants import build_model
from isrcheck.model.config import Config, ConfigError, Faults, Reassignment, from_mapping
from isrcheck.model.observe import acked_of, observe
from isrcheck.specs.actions import VocabularyError, actions as vocabulary, check_action
from isrcheck.specs.inputs import InputError, Kind, check_lines_depth

from .eventlog import Event, EventLog, EventLogError, ValidationResult, _FactChecker, validate_log
from .observations import flatten
from .headers import body_lines, parse_json, read_text

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
#: Restart, ControllerFailover and ControlledShutdown (likewise; the last by the controller),
#: ExpireSession (the launcher, when it forces one; the merge infers the others) and Reregister (the
#: broker, on its new session).
SILENT = ("DeliverRequest", "Fetch", "FetchAnswerLost", "OffsetsForLeaderEpoch", "TruncateToEpochEndOffset",
          "ProcessBrokerChange", "ResignController", "ElectPreferredLeader", "ReassignPartition", "CreateTopic",
          "StartTopicDeletion", "CompleteTopicDeletion")
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
    #: (a leader's half) the other followers whose fetch it shows was counted unlogged (:func:`_counted_unlogged`)
    counted: tuple[int, ...] = ()
    #: (a leader's half) its follower dropped the answer: the model's FetchAnswerLost (:func:`_answers_fenced`)
    lost: bool = False

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
    # the bounded reader: a regular file, at most ISRCHECK_MAX_EVENT_LOG_BYTES, lines nested <= 64
    text = read_text(path, Kind.EVENT_LOG, EventLogError, "not an isrcheck implementation event log (not UTF-8 text)")
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
    return head, list(body_lines(lines, str(path), EventLogError, skip_empty=True))


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


_REPLICA = re.compile(r"^replicas\[(\d+),(\d+)\]\.")


def _requests_partitions(ln: SelfLine, b: int, prev: Mapping[str, Any]) -> set[int] | None:
    """The partitions whose fetch in flight broker ``b``'s controller-request line ``ln`` fences, or
    ``None`` for all of them. Why: the broker drops the answer to a fetch of ``p`` sent before a
    controller request *for ``p``*, or before any request of a newer controller (impl/core/broker.py,
    ``_receive`` and ``_fence_fetch``); a LeaderAndIsr or StopReplica of another partition leaves it
    alone. The line does not name the request's partition, but a broker logs a controller request only
    when it changed a fact it owns: a raised ``controller_epoch`` (every partition), or the facts of
    the request's own replica (against ``prev``, what ``b`` last logged; a fact not logged before
    counts as changed, so that doubt fences, as the rule did before it told partitions apart)."""
    ce = f"brokers[{b}].controller_epoch"
    if ce not in ln.facts or ce not in prev or ln.facts[ce] != prev[ce]:
        return None
    out: set[int] = set()
    for k, v in ln.facts.items():
        m = _REPLICA.match(k)
        if m and int(m.group(1)) == b and (k not in prev or prev[k] != v):
            out.add(int(m.group(2)))
    return out


def _answers_fenced(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The lines with each leader's half of ``Fetch(f, p)`` whose answer the follower dropped marked
    ``lost``, and how many: ``f`` logged a controller request (``DeliverRequest``) for ``p``, or from a
    newer controller (:func:`_requests_partitions`), before its half. A follower drops the answer to a
    fetch sent before such a request it has since handled and fetches again (impl/core/broker.py,
    ``_fence_fetch``), so for the model that leader's half is a ``FetchAnswerLost``: the follower keeps its
    log end and HW (:func:`_with_held`), and each is one more unit of the fitted ``lost_fetch_answers``.
    A request for another partition of the same controller leaves the fetch of ``p`` in flight: its
    answer is taken, and its half is the follower's own. (A follower whose answer changed nothing logs
    no half either: then the mark only leaves it as it was, which the model's Fetch would too.)"""
    open_: dict[tuple[int, int], int] = {}  # (follower, partition) -> index of the leader's half not yet followed
    lost: set[int] = set()
    seen: dict[int, dict[str, Any]] = {}  # broker -> its facts as it last logged them
    for i, ln in enumerate(lines):
        act = ln.action
        if ln.role != "broker" or not ln.process.startswith("broker-"):
            continue
        b = int(ln.process.rsplit("-", 1)[1])
        prev = seen.setdefault(b, {})
        if act is not None and act[1] is not None:
            if act[0] == "Fetch":
                f, p = int(act[1][0]), int(act[1][1])
                if f != b:
                    open_[(f, p)] = i
                else:
                    open_.pop((f, p), None)
            elif act[0] in ("DeliverRequest", "Crash", "Restart"):
                which = _requests_partitions(ln, b, prev) if act[0] == "DeliverRequest" else None
                for k in [k for k in open_ if k[0] == b and (which is None or k[1] in which)]:
                    if act[0] == "DeliverRequest":
                        lost.add(open_[k])
                    del open_[k]
        if act is not None and act[0] in ("Crash", "Restart"):
            prev.clear()  # a new life: what it logs next is not a change of what it logged before
        prev.update(ln.facts)
    return [dataclasses.replace(ln, lost=True) if i in lost else ln for i, ln in enumerate(lines)], len(lost)


def _model_config(raw: Mapping[str, Any], lines: Sequence[SelfLine], fenced: int = 0) -> Config:
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
                                 isr_shrinks=max(cfg.faults.isr_shrinks, named.count("ShrinkIsr") + 2 * crashes + 1),
                                 session_expiries=max(cfg.faults.session_expiries, named.count("ExpireSession")),
                                 lost_fetch_answers=min(16, cfg.faults.lost_fetch_answers + fenced))
    # the reassignments the run requested, in its order (the model's RequestReassignment takes the next
    # one of the list, so what the configuration declares is replaced by what was logged)
    requested = tuple(Reassignment(args[0], tuple(args[1])) for ln in lines if ln.kind == "action"
                      and ln.action is not None and ln.action[0] == "RequestReassignment"
                      for args in [ln.action[1]] if args is not None)
    operations = dataclasses.replace(cfg.operations, controlled_shutdowns=max(cfg.operations.controlled_shutdowns,
                                                                              named.count("ControlledShutdown")),
                                     reassignments=requested or cfg.operations.reassignments)
    # the model has one acks setting: a run with acks=1 writes (torture's second producer, whose writes
    # the leader appends with its ISR below min.insync.replicas too) is checked under acks=1, which
    # enables Produce there; an acks=all write appended so is then not caught here (impl/rigs/torture.py
    # checks acknowledged writes itself)
    acks = "1" if any(ln.kind == "action" and ln.action is not None and ln.action[0] == "Produce"
                      and ln.note.startswith("acks=1") for ln in lines) else cfg.acks
    return dataclasses.replace(cfg, faults=Faults(**dataclasses.asdict(faults)), operations=operations,
                               max_records=max(cfg.max_records, records), acks=acks)


def _anchors(cfg: Config, init: Mapping[str, Any]) -> list[str]:
    out = ["controller.epoch"] + [f"brokers[{b}].alive" for b in range(1, cfg.brokers + 1)]
    for p in range(cfg.partitions):
        out += [f"partitions[{p}].{f}" for f in ("leader", "isr", "leader_epoch", "zk_version")]
        out += [f"replicas[{b},{p}].role" for b in init.get(f"partitions[{p}].replicas", [])]
    return out


def _initial(template: Mapping[str, Any], path: str, value: Any) -> bool:
    """``value`` is the model's initial state's value of ``path`` (type and all: ``1`` is not ``True``)."""
    want = template.get(path)
    return want == value and type(want) is type(value)


def _the_start(lines: list[SelfLine], anchors: Sequence[str], template: Mapping[str, Any],
               files: int) -> tuple[list[SelfLine], int, dict[str, Any], int]:
    """(lines, the start's index, the facts folded up to it, replica lines pulled forward).

    The start is the first line after which the facts logged so far cover ``anchors`` and agree with
    the model's initial state (``template``). On a loaded machine one process may step before a slow
    replica logs its first LeaderAndIsr (the leader drops it from the ISR after
    ``replica_lag_time_max_ms``): that line says only its own broker's part of the initial state, so
    it commutes with every other process's step and goes before the first of them, provided the
    replica logged nothing else in between. A run that still never reaches the initial state is a
    one-line error naming the first line that left it, the fact and both values."""
    start, folded = _first_initial(lines, anchors, template)
    if start >= 0:
        return lines, start, folded, 0
    settled: dict[str, int] = {}  # a broker's line after which its own facts so far are the initial state's
    own: dict[str, dict[str, Any]] = {}
    departure: int | None = None  # the first line that leaves the initial state
    for i, ln in enumerate(lines):
        mine = own.setdefault(ln.process, {})
        mine.update(ln.facts)
        agrees = all(_initial(template, p, v) for p, v in mine.items())
        if ln.role == "broker" and ln.process not in settled:
            if agrees and mine:
                settled[ln.process] = i
        elif not agrees and departure is None:
            departure = i
    late = {q: j for q, j in settled.items() if departure is not None and j > departure}
    if departure is not None and late and all(
            _is_request(lines[j]) and not any(ln.process == q for ln in lines[departure:j]) for q, j in late.items()):
        pulled = set(late.values())
        moved = [lines[j] for j in sorted(pulled)]
        reordered = lines[:departure] + moved + [ln for i, ln in enumerate(lines[departure:], departure)
                                                 if i not in pulled]
        start, folded = _first_initial(reordered, anchors, template)
        if start >= 0:
            return reordered, start, folded, len(moved)
    raise EventLogError(f"the run never reached the model's initial state ({len(lines)} line(s) from {files} "
                        f"file(s)): the topic created with the configuration's assignment, its leader elected and "
                        f"known to every replica; {_why_not_initial(lines, anchors, template, departure)}")


def _is_request(ln: SelfLine) -> bool:
    """A broker's line of a controller request it handled (LeaderAndIsr, UpdateMetadata, StopReplica)."""
    return ln.kind == "observation" and ln.action is not None and ln.action[0] == "DeliverRequest"


def _first_initial(lines: Sequence[SelfLine], anchors: Sequence[str],
                   template: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    """The first line after which the folded facts cover ``anchors`` and agree with ``template``
    (-1 if none), and the facts folded up to it."""
    folded: dict[str, Any] = {}
    for i, ln in enumerate(lines):
        folded.update(ln.facts)
        if all(a in folded for a in anchors) and all(_initial(template, p, v) for p, v in folded.items()):
            return i, folded
    return -1, folded


def _why_not_initial(lines: Sequence[SelfLine], anchors: Sequence[str], template: Mapping[str, Any],
                     departure: int | None) -> str:
    """What kept the run from the model's initial state, for :func:`_the_start`'s error."""
    folded: dict[str, Any] = {}
    for ln in lines[:departure]:
        folded.update(ln.facts)
    missing = [a for a in anchors if a not in folded or not _initial(template, a, folded[a])]
    if departure is None:
        return "no line left it, and it was never complete: " + _listed(missing, folded, template)
    ln = lines[departure]
    path, value = next((p, v) for p, v in ln.facts.items() if not _initial(template, p, v))
    missing = [a for a in missing if a not in ln.facts]
    step = f" ({ln.action[0]})" if ln.action else ""
    return (f"{ln.where}{step} left it first, {path} = {json.dumps(value)} where it has "
            f"{json.dumps(template.get(path))}, before " + _listed(missing, folded, template))


def _listed(missing: Sequence[str], folded: Mapping[str, Any], template: Mapping[str, Any]) -> str:
    shown = [f"{a} = {json.dumps(folded[a])} (initially {json.dumps(template.get(a))})" if a in folded
             else f"{a} (never logged)" for a in missing[:4]]
    return ", ".join(shown) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "") if shown else \
        "every fact it needs had its initial value"


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


def _crash_victim(ln: SelfLine) -> int | None:
    """The broker a ``Crash`` line crashes, or None for any other line. Two processes log one: the
    launcher when it SIGKILLs a broker, and a broker itself when a disk write failed and its log
    directory went offline (it stops, then starts again in the same process from its files); the
    merge's crash rules hold for both alike, since in both the broker did nothing after its line."""
    act = ln.action
    if ln.kind != "action" or act is None or act[0] != "Crash" or act[1] is None:
        return None
    v = int(act[1][0])
    if ln.role == "launcher" or (ln.role == "broker" and ln.process == f"broker-{v}"):
        return v
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

    A follower of several partitions may have a fetch of each in flight (two leaders' halves before
    either of its own): each partition's window is its own, its own half ends that one only, and a
    line of ``f`` loses the facts of every partition whose window is open; a checkpoint goes before
    the earliest open leader's half. A controller request ends the windows of the partitions it
    fences (:func:`_requests_partitions`: the broker drops those answers); of another partition, the
    fetch stays in flight.
    """
    out: list[SelfLine] = []
    # follower -> {partition: index in ``out`` of the leader's half of its fetch in flight}
    window: dict[str, dict[int, int]] = {}
    movable: set[str] = set()  # followers that logged nothing but (moved) checkpoints since the leader's half
    # (broker, partition) -> (log end, HW, role, leader epoch) as last logged
    last: dict[tuple[int, int], tuple[Any, Any, Any, Any]] = {}
    isr: dict[int, list[Any]] = {}  # partition -> its ISR as last written (a leader/ISR znode write's facts)
    seen: dict[int, dict[str, Any]] = {}  # broker -> its facts as it logged them (before any is dropped here)
    changed = 0
    for ln in lines:
        act = ln.action
        w = window.get(ln.process)
        b = int(ln.process.rsplit("-", 1)[1]) if ln.role == "broker" and ln.process.startswith("broker-") else None
        if w:
            follower = int(ln.process.rsplit("-", 1)[1])
            ends: set[int] | None = set()  # the windows this line ends (None: all of them)
            if act is not None and act[0] == "Fetch" and act[1] is not None and int(act[1][0]) == follower:
                ends = {int(act[1][1])}  # its own half
            elif act is not None and act[0] == "Restart":
                ends = None  # a new life
            elif act is not None and act[0] == "DeliverRequest":
                ends = _requests_partitions(ln, follower, seen.get(follower, {}))
            if ends is None or ends & set(w):
                for p in list(w) if ends is None else sorted(ends & set(w)):
                    del w[p]  # its own half, or it moved on: the window ends
                movable.discard(ln.process)
            elif ln.process in movable and ln.kind == "action" and act is not None \
                    and act[0] == "CheckpointHighWatermark":
                at = min(w.values())
                out.insert(at, dataclasses.replace(ln, t=out[at].t, note=(ln.note + "; " if ln.note else "")
                                                   + "placed before the leader's half of its fetch in flight"))
                for v in window.values():
                    for q, k in v.items():
                        if k >= at:
                            v[q] = k + 1
                changed += 1
                seen.setdefault(follower, {}).update(ln.facts)
                continue
            else:
                movable.discard(ln.process)
            prefixes = tuple(f"replicas[{follower},{p}]." for p in sorted(w))
            stale = [k for k in ln.facts if k.startswith(prefixes)] if prefixes else []
            if stale:
                seen.setdefault(follower, {}).update(ln.facts)
                ln = dataclasses.replace(ln, facts={k: v for k, v in ln.facts.items() if k not in stale},
                                         note=(ln.note + "; " if ln.note else "")
                                         + f"{', '.join(p + '*' for p in prefixes)} not checked: its fetch was in "
                                           f"flight")
                changed += 1
            if not w:
                del window[ln.process]
        if b is not None:
            seen.setdefault(b, {}).update(ln.facts)
        if ln.role == "broker" and act is not None and act[0] == "Fetch" and act[1] is not None \
                and ln.process != f"broker-{act[1][0]}":  # a leader's half
            q = act[1][1]
            implied = [g for g in _counted_unlogged(ln, q, {g: v for (g, r), v in last.items() if r == q})
                       if g in isr.get(q, ())]  # the HW waited for it only if it is in the ISR
            if implied:
                ln = dataclasses.replace(ln, counted=tuple(implied))
            for g in [act[1][0]] + implied:
                mine = window.setdefault(f"broker-{g}", {})
                if not mine:
                    movable.add(f"broker-{g}")
                mine.setdefault(q, len(out))
        for k, v in ln.facts.items():
            if k.startswith("partitions[") and k.endswith("].isr") and isinstance(v, list):
                isr[int(k[len("partitions["):-len("].isr")])] = v
        if ln.role == "broker":
            b = int(ln.process.rsplit("-", 1)[1])
            for k in ln.facts:
                m = _HELD.match(k)
                if m and int(m.group(1)) == b and m.group(3) == "leo":
                    pre = f"replicas[{b},{m.group(2)}]."
                    last[(b, int(m.group(2)))] = tuple(ln.facts.get(pre + x) for x in ("leo", "hw", "role",
                                                                                          "leader_epoch"))
        out.append(ln)
    return out, changed


def _counted_unlogged(ln: SelfLine, p: int, followers: Mapping[int, tuple[Any, Any, Any, Any]]) -> list[int]:
    """The other followers of partition ``p`` whose fetch the leader's half ``ln`` shows was counted
    without a line of the leader: the HW rose (above the leader's previous line's HW) to a value that
    such a follower's log reaches and its HW, as it last logged it, does not; the follower follows at
    the leader epoch of ``ln`` (``followers``: broker -> (log end, HW, role, leader epoch) as last
    logged, the leader's own included).

    The leader logs its half of a fetch only when its own facts change. A follower whose log already
    reached the leader's end fetches again; the leader counts its offset (the model's ``Fetch`` of it,
    its HW not moving because another follower lags) and holds the answer (a long poll) until something
    changes: here the lagging follower's fetch, which moves the HW and is logged. The first follower's
    half comes after that line, with the new HW. In the model its ``Fetch`` came first, so between the
    leader's line and the follower's half the follower is in the middle of that step: the same as after
    a leader's half logged for it (seeds 10, 14, 16 and 20 of the torture batches: the HW of a leader's
    line that no model state reached while the other follower's HW was held at its old value)."""
    b = int(ln.process.rsplit("-", 1)[1])
    new_hw = ln.facts.get(f"replicas[{b},{p}].hw")
    epoch = ln.facts.get(f"replicas[{b},{p}].leader_epoch")
    old_hw = followers.get(b, (None, None, None, None))[1]
    if not (_is_int(new_hw) and _is_int(old_hw) and new_hw > old_hw) or ln.facts.get(f"replicas[{b},{p}].role") \
            != "leader":
        return []
    named = ln.action[1][0] if ln.action is not None and ln.action[1] is not None else None
    return sorted(g for g, (leo, hw, role, e) in followers.items()
                  if g not in (b, named) and role == "follower" and e == epoch and _is_int(leo) and _is_int(hw)
                  and leo >= new_hw > hw)


def _checkpoints_before_shutdown(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The merged lines with each HW checkpoint a broker logged after the controller's
    ``ControlledShutdown(e, b)`` of it, before it heard from the controller, placed just before the
    controller's line; and how many lines were moved.

    The model's broker ``b`` stops in the controller's step (writing its HW checkpoints on the way).
    The implementation's broker goes on until the controller's answer or LeaderAndIsr/StopReplica
    reaches it (then it logs nothing more, impl/process/event_log.py), and its periodic checkpoint timer may
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
    led: dict[str, dict[int, tuple[Any, Any]]] = {}  # follower -> the leaders as logged before the crash
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
            if p is not None and ln.kind == "observation" and led[ln.process].get(p, (None, None)) == (
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
        if _crash_victim(ln) is not None:
            v = _crash_victim(ln)
            for other in sorted({x.process for x in lines if x.role == "broker"}):
                if other != f"broker-{v}" and other not in crash:
                    crash[other] = (i, v)
                    led[other] = dict(leader)  # a controller's new leader after the crash answered nothing
                    pending[other] = []
    if not dest:
        return lines, 0
    return _move_before(lines, dest, "the launcher's crash of the leader that answered its fetch"), len(dest)


def _stale_requests_in_place(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The merged lines with each leader's half of a fetch whose follower had already moved to another
    leader epoch placed just before the follower's line that moved it; and how many lines were moved.

    The model's ``Fetch(f, p)`` is taken from the leader ``f`` follows, at that leader's epoch. A real
    fetch request can be delayed (a nemesis holding a link, a leader cut from the others): the leader
    of epoch ``e`` counts it after ``f`` heard of the next leader (``f``'s ``DeliverRequest`` line
    showing another epoch or role) and answers to no avail (``f`` drops the answer: it fetches from
    its new leader). The request was sent before that line of ``f``, at the offset ``f``'s log then
    had, and the leader's state it changed is its own: so, when the leader logged nothing between the
    follower's line and its half, and no launcher's or controller's action other than a controller
    failover or a session expiry came between, its half goes just before the follower's line, with
    that line's clock reading (torture seed 14 of a batch run while these rules were written: the leader, cut from the store, its
    session expired, counted broker 2's late fetch and moved its HW after broker 2 had become leader of
    the next epoch). The leader's own lines between the follower's line and its half go back with it
    when they are writes and HW checkpoints (:func:`_moves_with_a_stale_half`; seed 117 of the batch
    91-130: the deposed leader appended a write and checkpointed its HW, then counted broker 3's
    delayed fetch; seed 9 of the first batch, a checkpoint of its old HW between, is the same race).
    Any other line of the leader between keeps the half in place, and no model behaviour: the model's
    leader counts a fetch only from a follower that follows it."""
    roles: dict[tuple[int, int], tuple[Any, Any]] = {}  # (broker, partition) -> (role, leader epoch) as last logged
    moved_at: dict[tuple[int, int], tuple[int, tuple[Any, Any]]] = {}  # -> (index of its DeliverRequest line
    #                                                                     that changed them, what they were before)
    barrier = -1  # index of the last launcher's or controller's action a fetch does not commute with
    dest: dict[int, int] = {}
    for i, ln in enumerate(lines):
        act = ln.action
        if ln.role in ("launcher", "controller") and ln.kind == "action" \
                and (act is None or act[0] not in _FETCH_COMMUTES):
            barrier = i
        if ln.role != "broker":
            continue
        b = int(ln.process.rsplit("-", 1)[1])
        if ln.kind == "observation" and act is not None and act[0] == "Fetch" and act[1] is not None \
                and act[1][0] != b:  # a leader's half
            f, p = act[1]
            pre = f"replicas[{b},{p}]."
            e = ln.facts.get(pre + "leader_epoch")
            m = moved_at.get((f, p))
            if ln.facts.get(pre + "role") == "leader" and m is not None and roles.get((f, p)) != ("follower", e) \
                    and m[1] == ("follower", e) and m[0] > barrier and m[0] not in dest.values():
                between = [k for k in range(m[0] + 1, i) if lines[k].process == ln.process]
                if all(_moves_with_a_stale_half(lines[k]) for k in between):
                    for k in between + [i]:
                        dest[k] = m[0]
        for k in ln.facts:
            if k.startswith(f"replicas[{b},") and k.endswith("].role"):
                p = int(k[len(f"replicas[{b},"):-len("].role")])
                now = (ln.facts[k], ln.facts.get(f"replicas[{b},{p}].leader_epoch"))
                old = roles.get((b, p))
                if old is not None and now != old and act is not None and act[0] == "DeliverRequest":
                    moved_at[(b, p)] = (i, old)
                elif now != old:
                    moved_at.pop((b, p), None)
                roles[(b, p)] = now
    if not dest:
        return lines, 0
    return _move_before(lines, dest, "the step of its follower that moved it to another leader epoch"), len(dest)


def _moves_with_a_stale_half(ln: SelfLine) -> bool:
    """Whether a leader's line logged between its follower's move and the leader's stale half of that
    follower's fetch goes back with the half: a client's write or an HW checkpoint, steps of the leader's
    own that no other process's line between reads."""
    return ln.kind == "action" and ln.action is not None and ln.action[0] in ("Produce", "CheckpointHighWatermark")


def _move_before(lines: list[SelfLine], dest: Mapping[int, int], why: str) -> list[SelfLine]:
    """``lines`` with each line ``k`` of ``dest`` moved just before line ``dest[k]`` (in their order),
    taking that line's clock and a note naming it: ``placed before <why> (<where>)``."""
    before: dict[int, list[SelfLine]] = {}
    for k in sorted(dest):
        at = dest[k]
        ln = lines[k]
        before.setdefault(at, []).append(dataclasses.replace(
            ln, t=lines[at].t, note=(ln.note + "; " if ln.note else "") + f"placed before {why} ({lines[at].where})"))
    out: list[SelfLine] = []
    for i, ln in enumerate(lines):
        if i in dest:
            continue
        out += before.get(i, [])
        out.append(ln)
    return out


def _unlogged_answers_in_place(lines: list[SelfLine], max_fetch_records: int = 0,
                               fenced: bool = True) -> tuple[list[SelfLine], int]:
    """The merged lines with each follower's half of a fetch whose leader logged no half of it placed
    where the leader answered it, if a later line of the leader came first; and how many lines were moved.

    The leader logs its half of ``Fetch(f, p)`` only when its own facts change; when they do not (its
    HW was already where the fetch puts it) the follower's half is the only line of the model's step.
    The leader's other steps go on meanwhile: a ``Produce`` appended (or another follower's fetch moved
    the HW) after it had answered, and the follower logged its half after that line, showing the
    leader's log and HW of before it, which the model's ``Fetch`` at that place does not give (on a
    loaded host every torture run failed so: the model's follower had one record more, or a lower HW).
    Nor is the latest such place always right: a leader that answered a follower's fetch and then
    dropped it from the ISR (logging ``ShrinkIsr``, its log end and HW unchanged) would in the model
    take it back into the ISR at a fetch after the shrink. And a leader's half may be the half of a
    fetch whose answer was lost (a cut link): the follower's next half shows the answer to the fetch
    it sent again, later.

    So a follower's half of ``Fetch(f, p)`` with no leader's half since ``f``'s previous one, or with
    one whose state before it is not what ``f`` logged (an ISR expansion is no half: the leader logs it
    when the store answers its write, after it answered the fetch), is placed just before the earliest
    line of its leader (the broker last logged as the partition's leader at the leader epoch ``f``'s
    line shows) of the last run of that leader's lines before which it would answer what ``f`` logged
    (its log end and HW), with that line's clock reading; ``f``'s HW checkpoints of ``p`` logged after
    that place (local steps on its state before the fetch) go with it, in ``f``'s order. The place is
    never before another line of ``f``, the leader's half of its fetch, or a controller's or the
    launcher's action other than a controller failover or a session expiry (:data:`_FETCH_COMMUTES`);
    with no such place the line stays (and is no model behaviour if it was none). ``fenced``: whether
    the generation fences fetches by leader epoch (kip-320); without it the leader's lines of a newer
    epoch answer too (below, :func:`_answered_at`).
    """
    # (broker, partition) -> (leo, hw, role, leader epoch) as last logged
    state: dict[tuple[int, int], tuple[Any, Any, Any, Any]] = {}
    before: dict[tuple[int, int], tuple[Any, Any, Any, Any]] = {}  # (index, partition) -> state before it
    asked: dict[tuple[int, int], int] = {}  # (follower, partition) -> index of its leader's half, not yet answered
    led: dict[tuple[int, Any], int] = {}  # (partition, leader epoch) -> the broker last logged as its leader then
    dest: dict[int, int] = {}  # index of a moved line -> index of the leader's line it goes before
    for i, ln in enumerate(lines):
        act = ln.action
        b = int(ln.process.rsplit("-", 1)[1]) if ln.role == "broker" else None
        half = act is not None and act[0] == "Fetch" and act[1] is not None and ln.kind == "observation"
        if half and b is not None and b != act[1][0]:
            asked[(act[1][0], act[1][1])] = i
        elif half and b == act[1][0]:
            f, p = act[1]
            target = _answered_at(lines, i, f, p, state, before, max_fetch_records, asked.pop((f, p), None), led,
                                  fenced)
            if target is not None:
                at, moved = target
                for k in moved + [i]:
                    dest[k] = at
        if b is not None:
            for k in ln.facts:
                if k.startswith(f"replicas[{b},") and k.endswith("].leo"):
                    p = int(k[len(f"replicas[{b},"):-len("].leo")])
                    pre = f"replicas[{b},{p}]."
                    before[(i, p)] = state.get((b, p), (None, None, None, None))
                    state[(b, p)] = (ln.facts[k], ln.facts.get(pre + "hw"), ln.facts.get(pre + "role"),
                                     ln.facts.get(pre + "leader_epoch"))
                    if state[(b, p)][2] == "leader":
                        led[(p, state[(b, p)][3])] = b
    # a leader's line that is itself moved (its follower's half of another partition) is no place to go
    # before: those lines stay
    dest = {k: at for k, at in dest.items() if at not in dest}
    if not dest:
        return lines, 0
    return _move_before(lines, dest, "the later step of the leader that answered its fetch"), len(dest)


#: the launcher's and controllers' actions a follower's half may be placed before (:func:`_answered_at`):
#: steps that read and write neither replica of a fetch (a controller's election, a session ending in
#: the store), so the model's ``Fetch`` gives the same either side of them. Placing the half before one
#: claims only what the leader's lines prove: the answer shows a leader state that had ended by then.
#: (A follower SIGSTOPped with an answer in its socket read it seconds later, after the launcher had
#: killed the active controller: torture seed 2's disagreement, before.) A crash, a controlled
#: shutdown or a reassignment stays a barrier.
_FETCH_COMMUTES = ("ControllerFailover", "ExpireSession")


def _answered_at(lines: Sequence[SelfLine], i: int, f: int, p: int,
                 state: Mapping[tuple[int, int], tuple[Any, Any, Any, Any]],
                 before: Mapping[tuple[int, int], tuple[Any, Any, Any, Any]],
                 max_fetch_records: int, half: int | None = None,
                 led: Mapping[tuple[int, Any], int] | None = None,
                 fenced: bool = True) -> tuple[int, list[int]] | None:
    """Where the follower's half ``lines[i]`` of ``Fetch(f, p)`` goes (the index of the leader's line
    it goes before, and ``f``'s checkpoints that go with it), or None if it stays; ``half``: the index
    of the leader's half of ``f``'s fetch since ``f``'s previous half, if any; ``led``: (partition,
    leader epoch) -> the broker last logged as its leader at that epoch.

    ``fenced``: whether the generation fences fetches by leader epoch. Under kip-320 only the leader's
    states at the follower's leader epoch answer it (a newer epoch answers FencedLeaderEpoch, no
    data). Before kip-320 neither side compares epochs ([05](specs/05-replication.md#fetch)), and a
    leader the controller moved to a newer epoch without telling the follower (an ISR removal when a
    broker went offline: under high-watermark its LeaderAndIsr goes to the leader alone) answers the
    follower from its newer epoch's state as from any other: the full-disk restart run
    (tests/impl/test_offline_restart_event_log.py) failed so about one run in four on a loaded host,
    the follower's half (HW one above the model's) logged after the leader's next produce and not
    placed back, its answer being of the leader's new epoch."""
    led = led or {}
    pre = f"replicas[{f},{p}]."
    facts = lines[i].facts
    leo, hw, epoch = facts.get(pre + "leo"), facts.get(pre + "hw"), facts.get(pre + "leader_epoch")
    if not _is_int(leo) or not _is_int(hw) or epoch is None:
        return None
    leaders = [b for (b, q), (_, _, role, e) in state.items() if q == p and b != f and role == "leader" and e == epoch]
    if not leaders and (p, epoch) in led and led[(p, epoch)] != f:
        # the leader of that epoch has moved on to a newer one (a controller re-elected it, say) while
        # the follower, paused, read an answer of the epoch it knew: that leader's lines of it are where
        leaders = [led[(p, epoch)]]
    if len(leaders) != 1:
        return None
    leader = leaders[0]
    old = state.get((f, p), (None, None, None, None))[0]

    def answers(s: tuple[Any, Any, Any, Any]) -> bool:
        l_leo, l_hw, role, e = s
        if role != "leader" or not _is_int(l_leo) or not _is_int(l_hw):
            return False
        if e != epoch and (fenced or not _is_int(e) or not _is_int(epoch) or e < epoch):
            return False
        partial = max_fetch_records and _is_int(old) and leo - old == max_fetch_records and l_leo >= leo
        return (l_leo == leo or partial) and min(l_hw, leo) == hw

    if half is not None and (half, p) in before and answers(before[(half, p)]):
        return None  # the answer to the fetch whose half the leader logged (_checkpoints_before_fetch)
    moved: list[int] = []
    at = None
    for k in range(i - 1, half if half is not None else -1, -1):
        ln = lines[k]
        if ln.process == f"broker-{f}":
            if ln.kind == "action" and ln.action == ("CheckpointHighWatermark", (f, p)):
                moved.insert(0, k)
                continue
            break
        if ln.role in ("controller", "launcher") and ln.kind == "action" \
                and (ln.action is None or ln.action[0] not in _FETCH_COMMUTES):
            break
        if ln.process == f"broker-{leader}" and (k, p) in before:
            if answers(before[(k, p)]):
                at = k
            elif at is not None or before[(k, p)][2] != "leader" or not _is_int(before[(k, p)][3]) \
                    or not _is_int(epoch) or before[(k, p)][3] < epoch:
                break  # (lines of a newer epoch of that leader are passed: under kip-320 they answer it no data)
    if at is None:
        return None
    return at, [k for k in moved if k > at]


def _appends_lost_in_a_crash(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The merged lines with a ``Produce`` line for each record a leader appended but did not log
    before the launcher's ``Crash`` of it, placed just before that line; and how many were added.

    A process logs a step after its disk writes are done (impl/process/event_log.py: a line never claims an
    append a kill lost), so a SIGKILL between a leader's append and its line leaves the record on disk
    and no line of it; its restart's line shows the record (on a loaded host a torture run failed at a
    ``Restart`` whose log had one record more than the model's). Such records (the restart's log of a
    partition is the one the broker last logged before the crash, as its leader, and more records of its
    leader epoch) are ``Produce`` steps of the crashed leader, one line each, with the clock reading of
    the ``Crash`` line. (A follower's unlogged fetch needs nothing: ``Fetch`` is a silent step.)
    """
    last: dict[str, SelfLine] = {}  # broker process -> its last line
    crashed: dict[str, tuple[int, SelfLine | None]] = {}  # broker process -> (index of Crash, last line before)
    ckpt: dict[str, Any] = {}  # "replicas[b,p]." -> the HW its last logged checkpoint (or restart) wrote
    add: dict[int, list[SelfLine]] = {}
    for i, ln in enumerate(lines):
        act = ln.action
        if _crash_victim(ln) is not None:
            name = f"broker-{_crash_victim(ln)}"
            crashed[name] = (i, last.get(name))
        elif ln.role == "broker" and ln.process in crashed:
            at, prev = crashed.pop(ln.process)
            if prev is not None and act is not None and act[0] == "Restart":
                add.setdefault(at, []).extend(_lost_appends(prev, ln, lines[at].t))
                add[at].extend(_lost_checkpoints(prev, ln, lines[at].t, ckpt))
        if ln.role == "broker" and act is not None and act[1] is not None and ln.kind == "action" \
                and act[0] in ("CheckpointHighWatermark", "Restart"):
            b = ln.process.rsplit("-", 1)[1]
            for path, v in ln.facts.items():
                if path.startswith(f"replicas[{b},") and path.endswith("].hw") and (
                        act[0] == "Restart" or path == f"replicas[{b},{act[1][1]}].hw"):
                    ckpt[path[:-len("hw")]] = v
        if ln.role == "broker":
            last[ln.process] = ln
    return _inserted(lines, add)


def _lost_checkpoints(prev: SelfLine, restart: SelfLine, t: int, ckpt: Mapping[str, Any]) -> list[SelfLine]:
    """A ``CheckpointHighWatermark`` line for each replica whose restart recovered the HW the broker held
    at its last line before the crash, where its last logged checkpoint wrote another: the checkpoint
    was written and the SIGKILL came before its line (torture seed 85 of issue 30's batch 51-90: broker 1
    restarted with HW 16, its last logged checkpoint 12, its HW 16 at its last line)."""
    b = prev.process.rsplit("-", 1)[1]
    out = []
    for path, held in prev.facts.items():
        if not (path.startswith(f"replicas[{b},") and path.endswith("].hw")):
            continue
        pre = path[:-len("hw")]
        written, recovered = ckpt.get(pre), restart.facts.get(path)
        if not _is_int(held) or not _is_int(written) or recovered != held or written == held:
            continue
        p = int(path[path.index(",") + 1:path.index("]")])
        out.append(dataclasses.replace(
            prev, t=t, kind="action", action=("CheckpointHighWatermark", (int(b), p)),
            facts={k: v for k, v in prev.facts.items() if k.startswith(pre)},
            note=f"an HW checkpoint not logged before the crash: its restart recovered it ({restart.where})"))
    return out


def _inserted(lines: list[SelfLine], add: dict[int, list[SelfLine]]) -> tuple[list[SelfLine], int]:
    """``lines`` with ``add[i]`` placed before line ``i``, and how many lines were added (the lines
    themselves, unchanged, when there is nothing to add)."""
    added = sum(len(v) for v in add.values())
    if not added:
        return lines, 0
    out: list[SelfLine] = []
    for i, ln in enumerate(lines):
        out += add.get(i, [])
        out.append(ln)
    return out, added


def _expiries_unlogged(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The merged lines with an ``ExpireSession(b)`` line for each ``Reregister(b)`` that no logged
    ``ExpireSession(b)`` comes before since ``b``'s last registration; and how many were added.

    A broker logs ``Reregister(b)`` when it registers on a new store session, which it opens only after
    its old one ended; the launcher logs ``ExpireSession(b)`` only for the ``expire`` fault. Other
    faults end the session too (torture's ``partition`` cuts the store link, and with the embedded
    store a closed connection ends the session at once): then the log has the re-registration and not
    the expiry, and the controller's reaction to it (``b`` dropped from an ISR) had no cause in the
    model (a torture run with ``--faults kill,partition`` failed so at the controller's leader/ISR
    write). The expiry is a step of no process (it changes nothing a process logs, only the store's
    registrations), so it is placed just before the first controller line since ``b``'s last
    registration (its ``Restart`` or ``Reregister``) that drops ``b`` from a partition's ISR as last
    logged, or leaves a partition ``b`` led without a leader while ``b`` stays its last ISR member
    (not its ``ControlledShutdown`` of ``b``, nor a leader's ``ShrinkIsr``), or, with none,
    just before the ``Reregister``, with that line's clock reading; the controller's noticing it
    (``ProcessBrokerChange``) is silent. A broker killed (``Crash``) before it registered again proves
    it the same way when a controller line dropped it from an ISR since its registration (torture seed
    29 of the fresh batches of specs/11: broker 1, isolated with its store link, lost its session, the new controller
    elected broker 2, and the launcher SIGKILLed broker 1 before it re-registered). It is counted in the
    fitted ``session_expiries`` budget.
    """
    isr: dict[str, Any] = {}  # partitions[p].isr -> the ISR as last logged
    leaders: dict[str, Any] = {}  # partitions[p].leader -> the leader as last logged
    since: dict[int, int | None] = {}  # registered broker -> index of the first controller line dropping it since
    expired: set[int] = set()  # brokers with a logged ExpireSession since their last registration
    add: dict[int, list[SelfLine]] = {}
    for i, ln in enumerate(lines):
        act = ln.action if ln.kind == "action" else None
        if ln.role == "controller" and (act is None or act[0] != "ControlledShutdown"):
            for k, v in ln.facts.items():
                old = isr.get(k)
                if k.startswith("partitions[") and k.endswith("].isr") and isinstance(old, list) \
                        and isinstance(v, list):
                    for b in old:
                        if b not in v and b in since and since[b] is None:
                            since[b] = i
                # the last ISR member stays in the ISR when it fails, and the partition is left
                # without a leader (seed 152 of the batch 131-170): that drops it as well
                was = leaders.get(k)
                if k.startswith("partitions[") and k.endswith("].leader") and v == 0 and _is_int(was) and was \
                        and was in (ln.facts.get(k[:-len("leader")] + "isr") or ()) and was in since \
                        and since[was] is None:
                    since[was] = i
        isr.update({k: v for k, v in ln.facts.items() if k.startswith("partitions[") and k.endswith("].isr")})
        leaders.update({k: v for k, v in ln.facts.items() if k.startswith("partitions[") and k.endswith("].leader")})
        if act is None or act[1] is None or act[0] not in ("Restart", "Reregister", "ExpireSession", "Crash"):
            continue
        b = int(act[1][0])
        if act[0] == "Crash" and b not in expired and since.get(b) is not None:
            # killed before it could register again: the controller's line dropping it is the evidence
            at = since[b]
            add.setdefault(at, []).append(dataclasses.replace(
                ln, process=f"broker-{b}", role="launcher", t=lines[at].t, action=("ExpireSession", (b,)), facts={},
                note=f"an ExpireSession not logged (a fault other than expire ended the session): the controller "
                     f"dropped broker {b} from an ISR ({lines[at].where}) while it was registered, before its "
                     f"crash ({ln.where}); placed before that line"))
        if act[0] == "Reregister" and b not in expired:
            at = since.get(b)
            at = i if at is None else at
            add.setdefault(at, []).append(dataclasses.replace(
                ln, role="launcher", t=lines[at].t, action=("ExpireSession", (b,)), facts={},
                note=f"an ExpireSession not logged (a fault other than expire ended the session): inferred from "
                     f"the Reregister of {ln.where}, placed before "
                     + ("that line" if at == i else f"the controller's first line dropping broker {b} from an "
                                                     f"ISR ({lines[at].where})")))
        if act[0] == "ExpireSession":
            expired.add(b)
        else:
            expired.discard(b)
            since.pop(b, None)
            if act[0] != "Crash":
                since[b] = None
    return _inserted(lines, add)

def _shrinks_unanswered(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The merged lines with a ``ShrinkIsr`` line (its follower not known) before each line showing a
    partition's leader/ISR znode one version past the next one logged; and how many were added.

    Every leader/ISR write is logged by its writer when the store's answer reaches it. A leader cut
    from the store (torture's ``expire``) may have its conditional write committed and never hear so:
    the znode moved one version without a line, and the controller's next write (its election after
    the leader's session ended) starts from that ISR (torture's first batch, seed 10 after the fixes:
    the leader dropped broker 2 once more, unheard, and the controller elected broker 3 with ISR [3]
    where the model, from the ISR last logged, elected broker 2). A write no line shows is a leader's
    ``ShrinkIsr`` (an expansion is the silent ``Fetch``; a controller's own write it would log, or it
    is not the leader's shrink and the model will say so): the step is added, with that partition's
    leader as last logged and the follower left to the model, just before the line that shows the
    version, with its clock reading, and counted in the fitted ``isr_shrinks``. A version two or more
    past the next one is not guessed at."""
    version: dict[int, int] = {}  # partition -> leader/ISR znode version as last logged
    leader: dict[int, Any] = {}
    add: dict[int, list[SelfLine]] = {}
    for i, ln in enumerate(lines):
        for k, v in ln.facts.items():
            if not (k.startswith("partitions[") and k.endswith("].zk_version")) or not _is_int(v):
                continue
            p = int(k[len("partitions["):-len("].zk_version")])
            old = version.get(p)
            if old is not None and v == old + 2 and _is_int(leader.get(p)) and leader[p] > 0:
                b = leader[p]
                add.setdefault(i, []).append(SelfLine(
                    f"broker-{b}", "broker", ln.file, ln.line, 0, ln.t, "action", ("ShrinkIsr", None), {},
                    f"a ShrinkIsr of broker {b} whose answer never reached it: the leader/ISR znode of partition "
                    f"{p} is at version {v} at {ln.where}, one past the {old + 1} no line logged"))
            version[p] = v
        for k, v in ln.facts.items():
            if k.startswith("partitions[") and k.endswith("].leader"):
                leader[int(k[len("partitions["):-len("].leader")])] = v
    return _inserted(lines, add)


def _lost_appends(prev: SelfLine, restart: SelfLine, t: int) -> list[SelfLine]:
    b = prev.process.rsplit("-", 1)[1]
    out = []
    for path, old in prev.facts.items():
        if not (path.startswith(f"replicas[{b},") and path.endswith("].log")) or not isinstance(old, list):
            continue
        pre = path[:-len("log")]
        new = restart.facts.get(path)
        epoch = prev.facts.get(pre + "leader_epoch")
        if prev.facts.get(pre + "role") != "leader" or not isinstance(new, list) or len(new) <= len(old) \
                or new[:len(old)] != old or any(r.get("epoch") != epoch for r in new[len(old):]):
            continue
        p = int(path[path.index(",") + 1:path.index("]")])
        for n in range(len(old) + 1, len(new) + 1):
            out.append(dataclasses.replace(
                prev, t=t, kind="action", action=("Produce", (int(b), p)),
                facts={path: new[:n], pre + "leo": n},
                note=f"a Produce not logged before the crash: the record is in the log of its restart "
                     f"({restart.where})"))
    return out


def _renumber_records(lines: list[SelfLine]) -> tuple[list[SelfLine], int]:
    """The merged lines with every record id replaced by the model's: the n-th ``Produce`` of a
    partition appends record n; and how many appends had another id than that.

    The model numbers the writes of a partition in the order its leaders append them (``Produce``
    takes the next id); a client numbers them when it first sends them and sends a failed write again
    with the same id, so with two clients (torture's acks=all and acks=1 producers) a retried write
    is appended after a later one, or twice (its first attempt was appended, the answer was lost).
    Each record of a log is known by its client id, its leader epoch and how many records of that id
    and epoch come before it in that log (a leader appends them in order, and any log holding a later
    one holds the earlier ones before it): the k-th such record is the k-th ``Produce`` line that
    appended one. A record no ``Produce`` line appended keeps its id. A client's ``acked[p]`` names
    the write the ``Produce`` of that id last appended before the line.
    """
    appended: dict[int, dict[tuple[Any, Any], list[int]]] = {}  # partition -> (id, epoch) -> model ids
    count: dict[int, int] = {}
    changed = 0
    for ln in lines:
        act = ln.action
        if ln.role == "broker" and ln.kind == "action" and act is not None and act[0] == "Produce" \
                and act[1] is not None:
            b, p = act[1]
            log = ln.facts.get(f"replicas[{b},{p}].log")
            if not log:
                continue
            rec = log[-1]
            count[p] = count.get(p, 0) + 1
            appended.setdefault(p, {}).setdefault((rec.get("id"), rec.get("epoch")), []).append(count[p])
            changed += rec.get("id") != count[p]
    if not changed:
        return lines, 0
    seen: dict[int, dict[tuple[Any, Any], int]] = {}  # partition -> (id, epoch) -> Produce lines passed
    last: dict[int, dict[Any, int]] = {}  # partition -> client id -> model id of its latest append
    out: list[SelfLine] = []
    for ln in lines:
        act = ln.action
        if ln.role == "broker" and ln.kind == "action" and act is not None and act[0] == "Produce" \
                and act[1] is not None and ln.facts.get(f"replicas[{act[1][0]},{act[1][1]}].log"):
            b, p = act[1]
            rec = ln.facts[f"replicas[{b},{p}].log"][-1]
            key = (rec.get("id"), rec.get("epoch"))
            k = seen.setdefault(p, {}).get(key, 0)
            seen[p][key] = k + 1
            last.setdefault(p, {})[key[0]] = appended[p][key][k]
        facts = dict(ln.facts)
        for path, v in ln.facts.items():
            if path.startswith("replicas[") and path.endswith("].log") and isinstance(v, list):
                p = int(path[path.index(",") + 1:path.index("]")])
                ids = appended.get(p, {})
                occ: dict[tuple[Any, Any], int] = {}
                new = []
                for rec in v:
                    key = (rec.get("id"), rec.get("epoch"))
                    k = occ.get(key, 0)
                    occ[key] = k + 1
                    n = ids.get(key, [])
                    new.append({**rec, "id": n[k]} if k < len(n) else rec)
                facts[path] = new
            elif path.startswith("acked[") and isinstance(v, list):
                p = int(path[len("acked["):-1])
                facts[path] = sorted(last.get(p, {}).get(x, x) for x in v)
        out.append(dataclasses.replace(ln, facts=facts))
    return out, changed


#: the facts of a broker that hold until its next line (:func:`_with_held`)
_HELD = re.compile(r"^replicas\[(\d+),(\d+)\]\.(leo|hw)$")


def _with_held(ln: SelfLine, held: dict[str, Any], limit: int = 0) -> dict[str, Any]:
    """The facts an event of ``ln`` is checked against: its own, and every other broker's log end and
    HW as its last line gave them (``held``, updated here).

    A broker logs every input that changed a fact it owns (impl/process/event_log.py), so between two of its
    lines its replicas' log end and HW stay what the first one says, with the exceptions below; a
    model state where a silent step changed them (a follower that fetched without logging it) is no
    explanation of the run, and holding the facts drops it at once instead of after the broker's next
    line (without them the candidate states of a run where a follower was cut off for seconds grew
    with every produce, to thousands). Where the leader logs its half of a follower's fetch the model's
    one-step ``Fetch`` changes the follower, whose half comes later (or never, its answer lost): what
    that step gives it (the leader's log end, and its HW from before) holds from there (not with
    ``limit``, ``max_fetch_records``: a partial fetch gives less). Not held, until the broker's next
    line gives them: a follower's after a leader's half of its fetch that does not follow from what was
    held; any other broker's at a leader's ISR expansion (the half of a fetch whose follower the line
    does not name); the broker a crash, a controlled shutdown or a session expiry names (it changes
    without a line of its own), every broker's after any other action of the launcher or a controller
    but a controller failover (the model's new controller only queues requests: a SIGSTOPped follower
    left unheld across the launcher's controller kill in torture seed 2 made the candidate states grow
    with every produce, to 490, and its validation ran out of time).
    """
    act = ln.action
    if ln.role in ("launcher", "controller") and ln.kind == "action":
        if act is not None and act[0] == "ControllerFailover":
            pass  # the model's new controller only queues requests: no replica of any broker changes
        elif act is not None and act[1] and act[0] in ("Crash", "ExpireSession", "ControlledShutdown"):
            b = act[1][1] if act[0] == "ControlledShutdown" else act[1][0]
            for k in [k for k in held if k.startswith(f"replicas[{b},")]:
                del held[k]  # the broker it names changes (or stops) without a line of its own
        else:
            held.clear()
        return dict(ln.facts)
    if ln.role != "broker":
        return {**held, **ln.facts}
    b = ln.process.rsplit("-", 1)[1]
    if act is not None and act[0] == "Fetch" and act[1] is None:  # an ISR expansion: some follower's fetch
        for k in [k for k in held if not k.startswith(f"replicas[{b},")]:
            del held[k]
    elif act is not None and act[0] == "Fetch" and act[1] is not None and str(act[1][0]) != b and ln.lost:
        pass  # its answer never reached the follower (FetchAnswerLost): what held of the follower holds on
    elif act is not None and act[0] == "Fetch" and act[1] is not None and str(act[1][0]) != b:
        f, p = act[1]
        old, leo, hw = (held.get(f"replicas[{f},{p}].leo"), ln.facts.get(f"replicas[{b},{p}].leo"),
                        held.get(f"replicas[{b},{p}].hw"))
        for k in [k for k in held if k.startswith(f"replicas[{f},{p}].")]:
            del held[k]
        # another follower whose fetch the leader counted without a line (the HW rose to where its log
        # reaches): the model's Fetch of it is taken, its answer on its way; its facts are in flux
        for g in ln.counted:
            held.pop(f"replicas[{g},{p}].leo", None)
            held.pop(f"replicas[{g},{p}].hw", None)
        if not limit and _is_int(old) and _is_int(leo) and _is_int(hw) and old <= leo:
            # what the model's Fetch gives the follower here: the leader's log, its HW from before the fetch
            held[f"replicas[{f},{p}].leo"] = leo
            held[f"replicas[{f},{p}].hw"] = min(hw, leo)
    mine = f"replicas[{b},"
    facts = {k: v for k, v in held.items() if not k.startswith(mine)}
    facts.update(ln.facts)
    for k in [k for k in held if k.startswith(mine)]:
        del held[k]
    held.update({k: v for k, v in ln.facts.items() if _HELD.match(k)})
    return facts



Rule = Callable[[list[SelfLine]], tuple[list[SelfLine], int]]


def _reorderings(max_fetch_records: int, fenced: bool = True) -> list[tuple[Rule, str]]:
    """The merge's rules for races between the processes' clocks, in the order they apply, each with
    the note that says how many lines it added or moved (see the module's docstring)."""
    return [
        (_appends_lost_in_a_crash,
         ("{count} Produce or HW checkpoint step(s) of a broker killed after its disk write and before its line "
          "(its restart recovered them) added before the crash")),
        (_stale_requests_in_place,
         ("{count} leader's half (halves) of a fetch whose follower had moved to another leader epoch when the leader "
          "counted it (a delayed request) placed before the follower's line that moved it")),
        (_fetches_before_crash,
         ("{count} line(s) of a follower whose fetch its leader answered before the launcher's crash of it, logged after "
          "that crash (a follower's half, and its HW checkpoints before it), placed before the crash")),
        (lambda lines: _unlogged_answers_in_place(lines, max_fetch_records, fenced),
         ("{count} line(s) of a follower whose fetch its leader answered (logging no half of it) before a later step of "
          "the leader's logged first (a follower's half, and its HW checkpoints before it), placed before that step")),
        (_checkpoints_before_fetch,
         ("{count} line(s) of a follower whose fetch was in flight made to fit the model's one-step Fetch (a checkpoint "
          "placed before the leader's half, or the fetched replica's facts not checked until the follower's half)")),
        (_checkpoints_before_shutdown,
         ("{count} HW checkpoint(s) of a broker logged after the controller's controlled shutdown of it, before it heard "
          "of it, placed before the controller's step")),
    ]


def _after_the_end() -> list[tuple[Rule, str]]:
    """The rules applied once the lines after the launcher's end of the run are cut, with their notes
    (``{count}``: how many lines they added or changed)."""
    return [
        (_expiries_unlogged,
         ("{count} ExpireSession step(s) not logged (a fault other than expire ended a broker's session: its "
          "Reregister, or a controller dropping it before its crash, proves it) added before the controller's first line dropping the broker from an ISR, or before "
          "the Reregister")),
        (_shrinks_unanswered,
         ("{count} ShrinkIsr step(s) of a leader that never heard its write committed (the leader/ISR znode is one "
          "version past the last one logged) added before the line that shows it")),
        (_renumber_records,
         ("record ids renumbered in the order the leaders appended them, as the model numbers writes ({count} "
          "append(s) had another id: a write sent again after a later one, or twice)")),
    ]


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
    for rule, note in _reorderings(base.max_fetch_records, base.generation.traits.fenced_by_leader_epoch):
        lines, count = rule(lines)
        if count:
            notes.append(note.format(count=count))
    end = next((i for i, ln in enumerate(lines) if ln.kind == "end"), None)
    if end is not None:
        if len(lines) - end - 1:
            notes.append(f"{len(lines) - end - 1} line(s) after the launcher's end of the run (taking the cluster "
                         f"down) ignored")
        lines = lines[:end]
    for rule, note in _after_the_end():
        lines, count = rule(lines)
        if count:
            notes.append(note.format(count=count))
    lines, fenced = _answers_fenced(lines)
    if fenced:
        notes.append(f"{fenced} fetch answer(s) the leader counted and the follower dropped (it handled a controller "
                     f"request first): the model's FetchAnswerLost, each a unit of faults.lost_fetch_answers")
    cfg = _model_config(raw_cfg, lines, fenced)
    lines, start, folded, pulled = _the_start(lines, _anchors(cfg, template), template, len(read))
    if pulled:
        notes.append(f"{pulled} replica(s)' first LeaderAndIsr logged after another process's first step of the run "
                     f"placed before that step (it changes only that replica's broker): the model starts with "
                     f"every replica told")
    log = EventLog(cfg, [], dict(folded), "partial", tuple(SILENT), max_silent, False, "cluster-selflog", None,
                   f"the implementation's own event logs of {len(read)} process(es), merged by CLOCK_MONOTONIC")
    origin: dict[int, SelfLine] = {}
    acked: dict[str, set[int]] = {}
    held = {k: v for k, v in folded.items() if _HELD.match(k)}
    for ln in lines[start + 1:]:
        facts = _with_held(ln, held, cfg.max_fetch_records)
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
            held = _held_sources(merged, res.failed_event.seq)
            if held:
                res.reason += (f" (with {len(held)} fact(s) other brokers' last lines hold: "
                               + ", ".join(f"{k} = {v} ({where})" for k, v, where in held[:4])
                               + (" ..." if len(held) > 4 else "") + ")")
                res.details += [f"held: {k} = {v} ({where})" for k, v, where in held]
    return merged, res


def _held_sources(merged: Merged, seq: int) -> list[tuple[str, Any, str]]:
    """The held facts of event ``seq`` (:func:`_with_held`), each with the line that gave it."""
    own = merged.origin[seq]
    out = []
    for k, v in merged.log.events[seq - 1].facts.items():
        if k in own.facts or not _HELD.match(k):
            continue
        src = next((merged.origin[e.seq] for e in reversed(merged.log.events[:seq - 1])
                    if merged.origin[e.seq].facts.get(k, None) == v and k in merged.origin[e.seq].facts), None)
        out.append((k, v, src.where if src is not None else "the initial state"))
    return out
