"""Why each acknowledged write a real torture run lost was lost, read from the processes' own event logs.

The simulator traces every cut of a replica's log and every election as it plays them
(:mod:`.fault_run`), and :mod:`.loss_shape` matches a loss to a known weakness from that trace. A
real run (:mod:`.torture`, :mod:`.torture_scenarios`) has no such tracer, but every process writes its
own event log (:mod:`isrcheck.impl.process.event_log`): each broker line carries the broker's whole
replica state after the step (the log as ``{id, epoch}`` entries, HW, leader epoch, role), each
successful leader/ISR write carries the znode's new value and version, and the launcher logs every
SIGKILL it sends and the end of the run. From these this module rebuilds, for partition 0:

- the **cuts** (:class:`~.fault_run.Cut`): a broker line whose log no longer extends the previous
  line's log of the same broker (or a restart line whose log is shorter than what the last
  incarnation logged). Its cause comes from the input that caused it: a ``LeaderAndIsr`` that cut
  down to the replica's HW under a generation without leader epochs is the seeds' HW truncation
  (:data:`~.fault_run.HW_ON_LEADER_CHANGE`); an ``OffsetsForLeaderEpoch`` answer is an epoch-end
  truncation; a cut at restart means the disk lost what the process had logged as written;
- the **elections** (:class:`TortureElection`): a broker line showing it became leader (of a new
  epoch), with its log at that moment, joined with the leader/ISR write that elected it and the
  write just before (consecutive znode versions), which says whether the new leader was in the ISR.

Each lost record is then matched to one shape by the election that lost it for good: the first
election of a leader whose log lacked the record after which no leader held it again.

- :data:`UNCLEAN_ELECTION`: that leader was elected from outside the ISR (the Jepsen finding);
- :data:`~.loss_shape.HW_TRUNCATION`: that leader had cut the record by a truncation to its HW on a
  change of leader (the model's ``hw-truncation-one-crash``), as :func:`.loss_shape.explain_cut_loss`
  decides for the simulator;
- :data:`ACKS1_LEADER_CHANGE`: an acks=1 record, which the leader acknowledged alone, and a clean
  election of a replica without it: what acks=1 allows;
- :data:`~.loss_shape.POWER_LOSS_SHAPE`: never, here: no torture fault loses a disk's page cache;
- anything else is unexplained (``shape`` ``None``), with a sentence saying what was found.

Only the event logs are read, never the model: the shapes are conditions on what processes wrote.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.config import ConfigError, from_mapping
from .fault_run import HW_ON_LEADER_CHANGE, PROTOCOL, Cut, Election
from .history import Anomaly, Verdict
from .loss_shape import HW_TRUNCATION, explain_cut_loss

__all__ = ["ACKS1_LEADER_CHANGE", "EPOCH_END", "RESTART", "UNCLEAN_ELECTION", "LeaderState", "Line",
           "LossExplanation", "Reconstruction", "TortureElection", "explain_losses", "explain_record",
           "read_directory", "reconstruct", "reconstruct_lines", "summary"]

#: a leader elected from outside the ISR whose log lacked the record (unclean leader election)
UNCLEAN_ELECTION = "unclean-election"
#: an acks=1 record the leader alone held, lost when a replica without it was elected cleanly
ACKS1_LEADER_CHANGE = "acks1-leader-change"
#: a cut on an OffsetsForLeaderEpoch answer (KIP-101 on): down to the new leader's end of the epoch
EPOCH_END = "epoch-end"
#: a log shorter on restart than what the previous incarnation logged: the disk lost logged writes
RESTART = "restart"

PARTITION = 0
_REPLICA = re.compile(r"^replicas\[(\d+),(\d+)\]\.(\w+)$")
_PART = re.compile(r"^partitions\[(\d+)\]\.(\w+)$")
_ALIVE = re.compile(r"^brokers\[(\d+)\]\.alive$")
_NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class Line:
    """One event-log line of one process incarnation (``source`` names the file)."""

    t: int
    process: str
    source: str
    kind: str
    step: str
    inp: str
    facts: Mapping[str, Any]


@dataclass(frozen=True)
class ReplicaView:
    """What broker ``broker`` logged of its replica of partition 0 after one step."""

    at: int
    broker: int
    source: str
    inp: str
    log: tuple[tuple[int, int], ...]  # (record id, epoch) in offset order
    hw: int
    epoch: int
    role: str

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(r for r, _ in self.log)


@dataclass(frozen=True)
class LeaderState:
    """A leader/ISR value of partition 0 some process wrote successfully (``zk_version`` after it)."""

    at: int
    leader: int
    isr: tuple[int, ...]
    epoch: int
    zk_version: int
    writer: str


@dataclass(frozen=True)
class TortureElection(Election):
    """An election as a broker saw it, with the ISR of the leader/ISR value just before the one that
    elected it (``None``: that value was not logged, so cleanliness is unknown)."""

    isr_before: tuple[int, ...] | None = None
    unclean: bool | None = None


@dataclass(frozen=True)
class Append:
    """Where a record first appeared: ``broker``'s log at ``offset``, written in leader epoch ``epoch``."""

    at: int
    broker: int
    offset: int
    epoch: int


@dataclass(frozen=True)
class Reconstruction:
    """Partition 0 of one run, rebuilt from its event logs; times are ms since the run's first line."""

    generation: str
    leader_epochs: bool
    cuts: tuple[Cut, ...]
    elections: tuple[TortureElection, ...]
    states: tuple[LeaderState, ...]
    appends: Mapping[int, Append]
    crashes: tuple[tuple[int, int], ...]  # (at, broker) of every SIGKILL the launcher logged


@dataclass(frozen=True)
class LossExplanation:
    """Why one acknowledged record (written with ``acks``) was lost: a shape, or ``None``."""

    record: int
    acks: str
    shape: str | None
    detail: str

    @property
    def explained(self) -> bool:
        return self.shape is not None

    def to_json(self) -> dict[str, Any]:
        return {"record": self.record, "acks": self.acks, "shape": self.shape, "explained": self.explained,
                "detail": self.detail}


# ---------------------------------------------------------------------------- reading
def _read_file(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the lines of one file; a line that does not parse as one (the torn last line a
    SIGKILL leaves mid-write) is dropped."""
    header: dict[str, Any] = {}
    lines: list[dict[str, Any]] = []
    for raw in path.read_text().splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if "format" in obj:
            header = obj
        elif isinstance(obj.get("t"), int):
            lines.append(obj)
    return header, lines


def _lines(header: Mapping[str, Any], raw: Iterable[Mapping[str, Any]], source: str) -> list[Line]:
    process = str(header.get("process", source))
    return [Line(int(d["t"]), process, source, str(d.get("kind", "")), str((d.get("step") or {}).get("name", "")),
                 str(d.get("input", "")), d.get("facts") or {}) for d in raw]


def read_directory(directory: str | Path) -> tuple[dict[str, Any], list[Line]]:
    """Every line of every ``*.events.jsonl`` file under ``directory``, and the run's configuration."""
    config: dict[str, Any] = {}
    out: list[Line] = []
    for path in sorted(Path(directory).glob("*.events.jsonl")):
        header, raw = _read_file(path)
        config = config or dict(header.get("config") or {})
        out.extend(_lines(header, raw, path.name))
    return config, out


# ---------------------------------------------------------------------------- rebuilding
def _views(lines: Sequence[Line]) -> list[ReplicaView]:
    out = []
    for ln in lines:
        rep: dict[str, Any] = {}
        broker = 0
        for key, value in ln.facts.items():
            m = _REPLICA.match(key)
            if m and int(m.group(2)) == PARTITION:
                broker, rep[m.group(3)] = int(m.group(1)), value
        if "log" in rep:
            log = tuple((int(e["id"]), int(e["epoch"])) for e in rep["log"])
            out.append(ReplicaView(ln.t, broker, ln.source, ln.inp or ln.step, log, int(rep.get("hw", 0)),
                                   int(rep.get("leader_epoch", -1)), str(rep.get("role", "none"))))
    return out


def _states(lines: Sequence[Line]) -> list[LeaderState]:
    out = []
    for ln in lines:
        got = {m.group(2): v for k, v in ln.facts.items() if (m := _PART.match(k)) and int(m.group(1)) == PARTITION}
        if "leader" in got and "zk_version" in got:
            out.append(LeaderState(ln.t, int(got["leader"]), tuple(sorted(got.get("isr", ()))),
                                   int(got.get("leader_epoch", 0)), int(got["zk_version"]), ln.process))
    return sorted(out, key=lambda s: (s.zk_version, s.at))


def _common(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> int:
    """The length of the longest common prefix of two logs (the usual case, an extension, at C speed)."""
    if b[:len(a)] == a:
        return len(a)
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def _cause(prev: ReplicaView, now: ReplicaView, to: int, leader_epochs: bool,
           leaders: Mapping[int, int]) -> str:
    if now.source != prev.source:
        return RESTART
    if now.inp == "LeaderAndIsr" and to == prev.hw and not leader_epochs \
            and leaders.get(now.epoch, -1) != leaders.get(prev.epoch, -2):
        return HW_ON_LEADER_CHANGE
    if now.inp.startswith("OffsetsForLeaderEpoch"):
        return EPOCH_END
    return PROTOCOL


def _cuts(views: Sequence[ReplicaView], leader_epochs: bool, leaders: Mapping[int, int], t0: int) -> list[Cut]:
    """Every shrink of a broker's log between two consecutive lines of it (across restarts too)."""
    out: list[Cut] = []
    last: dict[int, ReplicaView] = {}
    for v in views:
        prev = last.get(v.broker)
        last[v.broker] = v
        if prev is None:
            continue
        k = _common(prev.log, v.log)
        if k == len(prev.log):
            continue
        removed = tuple(r for r, _ in prev.log[k:])
        out.append(Cut(_ms(v.at, t0), v.broker, PARTITION, k, removed, _cause(prev, v, k, leader_epochs, leaders),
                       prev.hw, leaders.get(prev.epoch, -1), leaders.get(v.epoch, -1)))
    return out


def _elected_by(states: Sequence[LeaderState], broker: int, epoch: int) -> tuple[LeaderState | None, LeaderState | None]:
    """The value that made ``broker`` leader of ``epoch``, and the value just before it (if logged)."""
    for i, s in enumerate(states):
        if s.leader == broker and s.epoch == epoch:
            before = states[i - 1] if i and states[i - 1].zk_version == s.zk_version - 1 else None
            return s, before
    return None, None


def _elections(views: Sequence[ReplicaView], states: Sequence[LeaderState], t0: int) -> list[TortureElection]:
    out: list[TortureElection] = []
    last: dict[int, ReplicaView] = {}
    for v in views:
        prev = last.get(v.broker)
        last[v.broker] = v
        if v.role != "leader" or (prev is not None and prev.role == "leader" and prev.epoch == v.epoch):
            continue
        elected, before = _elected_by(states, v.broker, v.epoch)
        isr_before = before.isr if before is not None else None
        unclean = None if before is None else (before.leader != v.broker and v.broker not in before.isr)
        if elected is not None and elected.zk_version == 1:
            unclean = False  # the value that created the partition: its first leader, from every replica
        out.append(TortureElection(_ms(v.at, t0), v.broker, PARTITION, v.epoch, v.ids, isr_before, unclean))
    return out


def _appends(views: Sequence[ReplicaView], t0: int) -> dict[int, Append]:
    """Where each record id first appeared (only what a line adds to its broker's previous line is read)."""
    out: dict[int, Append] = {}
    last: dict[int, tuple[tuple[int, int], ...]] = {}
    for v in views:
        start = _common(last.get(v.broker, ()), v.log)
        last[v.broker] = v.log
        for offset in range(start, len(v.log)):
            rid, epoch = v.log[offset]
            if rid not in out:
                out[rid] = Append(_ms(v.at, t0), v.broker, offset, epoch)
    return out


def _ms(t: int, t0: int) -> int:
    return (t - t0) // _NS_PER_MS


def reconstruct_lines(config: Mapping[str, Any], lines: Iterable[Line]) -> Reconstruction:
    """The cuts, elections and leader/ISR values of partition 0 from ``lines`` (any order). Lines after
    the launcher's ``end`` are left out: they are the cluster being taken down, not the run."""
    ordered = sorted(lines, key=lambda ln: ln.t)
    end = next((ln.t for ln in ordered if ln.kind == "end"), None)
    if end is not None:
        ordered = [ln for ln in ordered if ln.t <= end]
    t0 = ordered[0].t if ordered else 0
    generation = str(config.get("generation", ""))
    try:
        leader_epochs = from_mapping(config).traits.leader_epochs
    except (ConfigError, ValueError, TypeError):
        leader_epochs = True  # an unknown generation: no cut is called high-watermark's HW truncation
    views = _views(ordered)
    states = _states(ordered)
    leaders = {s.epoch: s.leader for s in states}
    crashes = tuple((_ms(ln.t, t0), _crashed(ln)) for ln in ordered if ln.step == "Crash")
    return Reconstruction(generation, leader_epochs, tuple(_cuts(views, leader_epochs, leaders, t0)),
                          tuple(_elections(views, states, t0)), tuple(states), _appends(views, t0), crashes)


def _crashed(ln: Line) -> int:
    for key, value in ln.facts.items():
        m = _ALIVE.match(key)
        if m and value is False:
            return int(m.group(1))
    return 0


def reconstruct(directory: str | Path) -> Reconstruction:
    """:func:`reconstruct_lines` of every event log under ``directory`` (a run's ``events``)."""
    config, lines = read_directory(directory)
    return reconstruct_lines(config, lines)


# ---------------------------------------------------------------------------- matching
def _losing_election(rec: Reconstruction, record: int, epoch: int) -> TortureElection | None:
    """The first election of a later epoch than ``epoch`` (the record's) of a leader without ``record``
    after which no elected leader held it again (the one that lost it for good), if any. Epochs, not
    times: a deposed leader that has not heard of its successor still appends in its old epoch."""
    later = [e for e in rec.elections if e.epoch > epoch]
    for i, e in enumerate(later):
        if record not in e.log and all(record not in x.log for x in later[i + 1:]):
            return e
    return None


def _cut_from(rec: Reconstruction, broker: int, record: int, until: int) -> bool:
    """Whether ``broker`` held ``record`` and a cut removed it by ``until``."""
    return any(c.broker == broker and record in c.removed and c.at <= until for c in rec.cuts)


def explain_record(rec: Reconstruction, record: int, acks: str) -> LossExplanation:
    """Why acknowledged ``record`` (written with ``acks``: ``"all"`` or ``"1"``) was lost."""
    app = rec.appends.get(record)
    if app is None:
        return LossExplanation(record, acks, None, f"record {record} was acknowledged but no broker logged it in "
                                                   "its log")
    where = f"record {record} (offset {app.offset}, appended by broker {app.broker} in epoch {app.epoch})"
    e = _losing_election(rec, record, app.epoch)
    if e is None:
        return LossExplanation(record, acks, None, f"{where}: no leader elected after it lacked it, yet it is "
                                                   "gone")
    isr = "an unlogged ISR" if e.isr_before is None else \
        f"the ISR {list(e.isr_before)}" if e.isr_before else "an empty ISR (the partition had no leader)"
    if e.unclean:
        return LossExplanation(record, acks, UNCLEAN_ELECTION, (
            f"{where} was not in broker {e.broker}'s log when broker {e.broker} was elected leader of epoch "
            f"{e.epoch} at t={e.at} ms from outside {isr}"))
    hw = explain_cut_loss([c for c in rec.cuts if c.broker == e.broker and c.at <= e.at], [e], record)
    if hw.shape == HW_TRUNCATION:
        return LossExplanation(record, acks, HW_TRUNCATION, (
            f"{hw.detail}; it was at offset {app.offset}, appended by broker {app.broker} in epoch {app.epoch} "
            "(t in ms)"))
    had = "had lost it" if _cut_from(rec, e.broker, record, e.at) else "never had it"
    if acks == "1" and e.unclean is False:
        cut = next((c for c in rec.cuts if c.broker == app.broker and record in c.removed and c.at >= e.at), None)
        then = "" if cut is None else f"; broker {app.broker}'s copy was cut at t={cut.at} ms down to offset {cut.to}"
        deposed = "" if app.at < e.at else f" (appended at t={app.at} ms, after that election: a deposed leader)"
        return LossExplanation(record, acks, ACKS1_LEADER_CHANGE, (
            f"{where} was acknowledged with acks=1 by its leader alone; broker {e.broker}, elected leader of "
            f"epoch {e.epoch} at t={e.at} ms from {isr}, {had}{deposed}{then}"))
    return LossExplanation(record, acks, None, (
        f"{where}: broker {e.broker} was elected leader of epoch {e.epoch} at t={e.at} ms from {isr} and {had}, "
        "by no known shape"))


def explain_losses(rec: Reconstruction, verdict: Verdict, acks: str) -> tuple[LossExplanation, ...]:
    """An explanation of every acknowledged record ``verdict`` found lost (partition 0)."""
    return tuple(explain_record(rec, r, acks) for f in verdict.of(Anomaly.LOST) if f.partition == PARTITION
                 for r in f.records)


def summary(explanations: Iterable[LossExplanation]) -> dict[str, Any]:
    """Counts for a report: losses explained and unexplained, and how many per shape."""
    xs = list(explanations)
    shapes: dict[str, int] = {}
    for x in xs:
        if x.shape is not None:
            shapes[x.shape] = shapes.get(x.shape, 0) + 1
    return {"explained": sum(x.explained for x in xs), "unexplained": sum(not x.explained for x in xs),
            "shapes": dict(sorted(shapes.items()))}
