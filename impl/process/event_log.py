"""The implementation's own structured event log: every process writes what it did, as it does it.

Snapshots taken from outside (``conformance.runs``) can miss a wrong value that exists only briefly.
Here each process logs, from :meth:`.runtime.Runtime.feed` itself, every core input that changed a
fact the process owns, one JSON line per step, written with one ``write(2)`` and no user-space
buffer (a SIGKILL loses at most the line in flight, which the reader drops as a torn last line).

A file (one per process incarnation, ``<name>.<pid>.events.jsonl``; ``<name>.<pid>-<k>.events.jsonl``
for a further writer in the same process) starts with a header::

    {"format": "isrcheck-selflog", "version": 1, "process": "broker-2", "role": "broker", "pid": 4711,
     "clock": "CLOCK_MONOTONIC ns", "config": {...}}

then one line per step::

    {"seq": 3, "t": 81234567890123, "kind": "action", "step": {"name": "Produce", "args": [2, 0]},
     "input": "ProduceRequest", "facts": {"replicas[2,0].log": [{"id": 1, "epoch": 0}], ...}, "note": ""}

- ``seq`` counts the process's lines from 1; ``t`` is ``time.monotonic_ns()`` (CLOCK_MONOTONIC, one
  clock for every process of a host), read *after* the core handled the input and its disk writes
  were done (so a line never claims an append or a checkpoint that a kill lost) and *before* its
  other effects (messages, store calls) are performed, so a step caused by another process's step
  always has the larger ``t``.
- ``step`` names the step in the vocabulary of specs/actions.toml where the implementation can:
  ``{"name", "args"}``, ``{"name"}`` (that kind of step, arguments unknown) or ``null``.
- ``kind`` is ``"action"`` when the input is exactly one model step, named (a produce appended,
  a lag-based ISR shrink written, a periodic HW checkpoint, a restart, a controller's finished
  controlled shutdown of a broker, a crash or controller kill injected by the launcher, a reassignment
  request the launcher wrote for an administrator, a broker's own ``Crash(b)`` when a disk write failed
  and its log directory went offline (its in-process restart logs ``Restart(b)`` in a new file), a
  session expiry the launcher forced,
  ``ExpireSession(b)``, and the broker's registration on the new session that follows, ``Reregister(b)``
  (one at start-up belongs to ``Restart``), ``RequestReassignment(p, target)``, with the fact
  ``partitions[p].reassignment``; the launcher's ``"end"`` marks the end of the run, before it takes the
  cluster down); otherwise ``"observation"``: the facts hold after the process's step,
  but the model's step may already have been counted by another process (the model's Fetch is the
  leader's and the follower's halves in one step) or may span several inputs (a controller's
  reaction to a broker change).
- ``facts`` are the fields the process owns after the step, under the observation paths of
  specs/observation.toml: a broker's ``brokers[b].*`` and all its ``replicas[b,p].*``; the
  partition's ``partitions[p].leader/isr/leader_epoch/zk_version`` after a leader/ISR write of this
  process succeeded (the writer knows the znode's value at that moment); an active controller's
  ``controller.epoch``; a client's ``acked[p]`` (the writes acknowledged to *this* client).
- A controlled shutdown is the model's one step ``ControlledShutdown(e, b)``: the controller logs it
  when the operation is done; broker ``b`` logs nothing more once it has heard from the controller
  (the model's broker stopped in that step); the launcher logs ``brokers[b].alive = false`` when the
  SIGTERMed process has exited.

Only ``impl`` vocabulary is used here: names and paths are data from specs/, nothing is imported
from the model or the conformance package.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Mapping

from ..core.messages import Persist, Receive, SessionRenewed, StoreOp, StoreResult, Timer
from ..core.observation import absent_replica

__all__ = ["FORMAT", "VERSION", "ENV", "EventLogWriter", "StepLogger", "clock_ns", "open_writer"]

FORMAT = "isrcheck-selflog"
VERSION = 1
CLOCK = "CLOCK_MONOTONIC ns"
#: the environment variable a process reads to find the directory it logs to
ENV = "ISRCHECK_EVENT_LOG"

#: what a broker in controlled shutdown hears from the controller once it has acted
_FROM_CONTROLLER = ("LeaderAndIsr", "StopReplica", "UpdateMetadata", "ControlledShutdownResponse")
#: a controller operation's status when it did what it was asked (isrcheck.impl.core.controller.DONE)
_DONE = "done"

_STATE = re.compile(r"^/brokers/topics/[^/]+/partitions/(\d+)/state$")


def clock_ns() -> int:
    """The log's clock: CLOCK_MONOTONIC in nanoseconds, comparable across processes on one host."""
    return time.monotonic_ns()


class EventLogWriter:
    """One process's log file: a header, then one line per :meth:`write`, each in a single write(2)."""

    def __init__(self, path: str | os.PathLike[str], process: str, role: str, config: Mapping[str, Any]) -> None:
        self.path = Path(path)
        self.process = process
        self.seq = 0
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._put({"format": FORMAT, "version": VERSION, "process": process, "role": role, "pid": os.getpid(),
                   "clock": CLOCK, "config": dict(config)})

    def _put(self, obj: Mapping[str, Any]) -> None:
        os.write(self._fd, (json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def write(self, kind: str, step: Mapping[str, Any] | None, facts: Mapping[str, Any], *, inp: str = "",
              note: str = "", t: int | None = None) -> None:
        self.seq += 1
        line: dict[str, Any] = {"seq": self.seq, "t": clock_ns() if t is None else t, "kind": kind,
                                "step": None if step is None else dict(step), "facts": dict(facts)}
        if inp:
            line["input"] = inp
        if note:
            line["note"] = note
        self._put(line)

    def close(self) -> None:
        try:
            os.close(self._fd)
        except OSError:
            pass


def open_writer(directory: str | os.PathLike[str] | None, process: str, role: str,
                config: Mapping[str, Any]) -> EventLogWriter | None:
    """A writer for ``process`` in ``directory`` (``None``: logging is off)."""
    if not directory:
        return None
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path, k = d / f"{process}.{os.getpid()}.events.jsonl", 1
    while path.exists():  # a second writer in one process (e.g. several launcher commands in one test)
        k += 1
        path = d / f"{process}.{os.getpid()}-{k}.events.jsonl"
    return EventLogWriter(path, process, role, config)


def name_of(inp: Any) -> str:
    """The name a line gives a core input: the message's type for a received message."""
    return type(inp.msg).__name__ if isinstance(inp, Receive) else type(inp).__name__


def step(name: str, *args: int) -> dict[str, Any]:
    return {"name": name, "args": list(args)}


# ---------------------------------------------------------------------------- facts a process owns
def broker_facts(obs: Mapping[str, Any], b: int, partitions: int) -> dict[str, Any]:
    """A broker core's own facts (``BrokerCore.observe()``) under the observation paths."""
    out: dict[str, Any] = {f"brokers[{b}].alive": True, f"brokers[{b}].controller_epoch": obs["controller_epoch"]}
    reps = obs.get("replicas", {})
    for p in range(partitions):
        for k, v in (reps.get(p) or absent_replica()).items():
            out[f"replicas[{b},{p}].{k}"] = v
    return out


def _version(v: Any) -> int | None:
    """A store answer's znode version (a Stat, or its JSON form after the remote store)."""
    if hasattr(v, "version"):
        return int(v.version)
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], int):
        return int(v[0])
    if isinstance(v, dict) and isinstance(v.get("version"), int):
        return int(v["version"])
    return None


def _state_writes(op: StoreOp) -> list[tuple[int, str, Any, int]]:
    """Leader/ISR znode writes in a store call: ``(partition, what, data, index in the answer)``."""
    out: list[tuple[int, str, Any, int]] = []
    if op.kind == "set" and op.args:
        m = _STATE.match(str(op.args[0]))
        if m:
            out.append((int(m.group(1)), "set", op.args[1], -1))
    elif op.kind == "multi" and op.args:
        for i, sub in enumerate(op.args[0]):
            m = _STATE.match(str(getattr(sub, "path", "")))
            if m:
                what = type(sub).__name__  # Create | SetData | Delete | Check
                if what != "Check":
                    out.append((int(m.group(1)), what, getattr(sub, "data", None), i))
    return out


def _written_facts(writes: list[tuple[int, str, Any, int]], value: Any) -> dict[int, dict[str, Any]]:
    facts: dict[int, dict[str, Any]] = {}
    for p, what, data, i in writes:
        ans = value if i < 0 else (value[i] if isinstance(value, (list, tuple)) and i < len(value) else None)
        if what == "Delete":
            facts[p] = {f"partitions[{p}].zk_version": 0}
            continue
        if what == "Create":
            version = 0
        else:
            version = _version(ans)
            if version is None:
                continue
        try:
            d = json.loads(bytes(data).decode())
        except (TypeError, ValueError):
            continue
        facts[p] = {f"partitions[{p}].leader": int(d.get("leader", 0)),
                    f"partitions[{p}].isr": sorted(int(x) for x in d.get("isr", ())),
                    f"partitions[{p}].leader_epoch": int(d.get("leader_epoch", 0)),
                    f"partitions[{p}].zk_version": version + 1}
    return facts


# ---------------------------------------------------------------------------- the Runtime's hook
class StepLogger:
    """Called by :meth:`.runtime.Runtime.feed` around every core input; writes a line for each one that
    changed what the process owns (a step that changes nothing is not logged)."""

    def __init__(self, writer: EventLogWriter, core: Any) -> None:
        self.writer = writer
        self.core = core
        self.broker = getattr(core, "id", None) if hasattr(core, "replicas") else None
        self.partitions = int(getattr(getattr(core, "cfg", None), "partitions", 1))
        self._writes: dict[int, list[tuple[int, str, Any, int]]] = {}
        self._last: dict[str, Any] = self._owned()
        self._ckpt: dict[int, int] = {}
        if self.broker is not None:
            self._ckpt = {p: r.ckpt for p, r in core.replicas.items()}
        self._epoch = 0
        #: a broker in controlled shutdown that has heard from the controller since it asked: in the model
        #: it stopped in the controller's ControlledShutdown step, so its steps until it stops are not logged
        self.gone = False
        #: a broker told of a new store session (SessionRenewed) that has not registered on it yet: its
        #: registration there is the model's Reregister (the one at start-up belongs to Restart)
        self._renewed = False

    def _owned(self) -> dict[str, Any]:
        if self.broker is not None:
            return broker_facts(self.core.observe(), self.broker, self.partitions)
        return {}

    def restart(self) -> None:
        """A broker's first line: it (re)started with what its disk kept (the model's Restart)."""
        assert self.broker is not None
        self.writer.write("action", step("Restart", self.broker), self._last, inp="start-up",
                          note="recovered from disk")

    def offline(self, why: str) -> None:
        """A broker's last line when a disk write failed and its log directory went offline: the model's
        ``Crash(b)``. The runtime stops at once (its store session closes, as a killed broker's does),
        nothing of the failed step was performed, and the broker starts again in the same process from
        what its files hold, logging ``Restart(b)`` in a new file; without this line that restart
        followed no crash, which the model cannot take, so such a run could not be validated. Nothing
        is written for a broker already gone in a controlled shutdown (the model's broker has stopped)."""
        if self.broker is None or self.gone:
            return
        self.gone = True
        self.writer.write("action", step("Crash", self.broker), {f"brokers[{self.broker}].alive": False},
                          inp="StorageError", note=f"log directory offline: {why}")

    def before(self, inp: Any) -> Any:
        if self.broker is None:
            return len(getattr(self.core, "history", ()))  # the controller operations finished so far
        r = {p: (frozenset(x.isr), x.leader, x.leo) for p, x in self.core.replicas.items()}
        r["registered"] = bool(getattr(self.core, "registered", False))
        return r

    def after(self, inp: Any, effects: list[Any], before: Any) -> None:
        t = clock_ns()
        for eff in effects:
            if isinstance(eff, StoreOp):
                w = _state_writes(eff)
                if w:
                    self._writes[eff.token] = w
        written: dict[int, dict[str, Any]] = {}
        if isinstance(inp, StoreResult) and inp.token in self._writes:
            w = self._writes.pop(inp.token)
            if inp.error is None:
                written = _written_facts(w, inp.value)
        if self.broker is not None:
            self._after_broker(inp, effects, before, written, t)
        else:
            self._after_controller(inp, written, t, before)

    # ------------------------------------------------------------------ brokers
    def _after_broker(self, inp: Any, effects: list[Any], before: Any, written: dict[int, dict[str, Any]],
                      t: int) -> None:
        b = self.broker
        if self.gone:
            return
        if getattr(self.core, "stopping", False) and isinstance(inp, Receive) \
                and type(inp.msg).__name__ in _FROM_CONTROLLER and not getattr(inp.msg, "error", ""):
            # the controller has taken its ControlledShutdown step (its line came first): the model's
            # broker stopped in that step, so what this one does until it stops is no model step
            self.gone = True
            return
        now = self._owned()
        changed = now != self._last
        self._last = now
        if isinstance(inp, SessionRenewed):
            self._renewed = True
        elif self._renewed and getattr(self.core, "registered", False) and not before.get("registered", True):
            # the registration on the new session succeeded: the model's Reregister(b), after the
            # launcher's (or the store's) ExpireSession(b)
            self._renewed = False
            self.writer.write("action", step("Reregister", b), now, inp=name_of(inp),
                              note="registered again on a new store session", t=t)
            if not changed and not written:
                return
        ckpts = [e for e in effects if isinstance(e, Persist) and e.kind == "checkpoint"]
        new_ckpt = []
        for e in ckpts:
            if self._ckpt.get(e.partition) != e.payload:
                self._ckpt[e.partition] = e.payload
                new_ckpt.append(e.partition)
        name = name_of(inp)
        if isinstance(inp, Timer) and new_ckpt and not changed and not written:
            for p in new_ckpt:  # the periodic checkpoint: exactly the model's CheckpointHighWatermark
                self.writer.write("action", step("CheckpointHighWatermark", b, p), now, inp=f"Timer {inp.name}",
                                  t=t)
            return
        if not changed and not written:
            return
        facts = dict(now)
        kind, st, note = "observation", None, ""
        for p, f in written.items():
            facts.update(f)
            old_isr, _, _ = before.get(p, (frozenset(), 0, 0))
            new_isr = set(f.get(f"partitions[{p}].isr", ()))
            gone = sorted(old_isr - new_isr)
            if new_isr < old_isr and len(gone) == 1:
                kind, st, note = "action", step("ShrinkIsr", b, p, gone[0]), "ISR shrink written"
            elif new_isr > old_isr:
                st, note = {"name": "Fetch"}, f"ISR expansion to {sorted(new_isr)} written"
            else:
                note = f"leader/ISR of partition {p} written"
        if isinstance(inp, Receive) and not written:
            msg = inp.msg
            p = getattr(msg, "partition", None)
            if name == "ProduceRequest" and p is not None:
                _, leader, leo = before.get(p, (frozenset(), 0, 0))
                if now.get(f"replicas[{b},{p}].leo") == leo + 1 and leader == b:
                    kind, st = "action", step("Produce", b, p)
                    note = f"acks={getattr(msg, 'acks', 'all')}"  # a run may mix producers (torture's two)
            elif name == "FetchRequest" and p is not None:
                st, note = step("Fetch", msg.follower, p), "the leader's half"
            elif name == "FetchResponse" and p is not None:
                st, note = step("Fetch", b, p), "the follower's half"
            elif name in ("LeaderAndIsr", "StopReplica", "UpdateMetadata"):
                st, note = step("DeliverRequest", b), name
            elif name.startswith("OffsetsForLeaderEpoch") and p is not None:
                st = {"name": "OffsetsForLeaderEpoch"}
        self.writer.write(kind, st, facts, inp=name, note=note, t=t)

    # ------------------------------------------------------------------ controllers
    def _after_controller(self, inp: Any, written: dict[int, dict[str, Any]], t: int, before: Any) -> None:
        core = self.core
        facts: dict[str, Any] = {}
        epoch = int(getattr(core, "epoch", 0) or 0)
        done = [args for name, args, status in getattr(core, "history", [])[before or 0:]
                if name == "ControlledShutdown" and status == _DONE and args]
        if done and getattr(core, "active", False):
            # one input finished the operation (its conditional multi, if any, committed): the model's
            # ControlledShutdown(e, b), whose other half (the broker stopping) the broker does not log
            for f in written.values():
                facts.update(f)
            facts["controller.epoch"] = epoch
            self._epoch = epoch
            for args in done:
                self.writer.write("action", step("ControlledShutdown", epoch, int(args[0])), facts,
                                  inp=type(inp).__name__, note=f"controlled shutdown of broker {int(args[0])}",
                                  t=t)
            return
        if getattr(core, "active", False) and epoch and epoch != self._epoch:
            self._epoch = epoch
            facts["controller.epoch"] = epoch
        for f in written.values():
            facts.update(f)
        if not facts:
            return
        if written and getattr(core, "active", False):
            facts.setdefault("controller.epoch", epoch)
        name = type(inp.msg).__name__ if isinstance(inp, Receive) else type(inp).__name__
        note = "elected" if "controller.epoch" in facts and not written else (
            "leader/ISR written for partition(s) " + ", ".join(str(p) for p in sorted(written)) if written else "")
        self.writer.write("observation", None, facts, inp=name, note=note, t=t)
