"""One seeded random-fault run of the autonomous simulator, and the history it leaves.

:func:`run_seed` draws the seed's schedule (:mod:`.fault_schedule`), plays it on an
:class:`~.simulator.AutoSimulator` seeded with the same number (the cores as the real processes run
them, in virtual time), heals everything (every broker restarted, every link restored, two
controller candidates), lets the cluster settle, and judges the clients' history with
:mod:`.history`. The same seed and setting give the same :class:`RunResult`, field for field.

Besides the history the run keeps what explains a loss, observed from outside the cores:

- every **cut** of a replica's log (:class:`Cut`): a truncation the broker asked its disk for, with
  the replica's leader and HW just before the input that caused it, or the unflushed suffix a power
  loss took;
- every **election** seen by a broker (:class:`Election`): the moment a replica became leader, with
  the record ids its log then held.

:func:`.loss_shape.explain` reads them to match a loss to the model's known weakness.
"""
from __future__ import annotations

import functools
import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.messages import Persist
from ..disk.log import SimDisk
from .fault_schedule import LEADER, Fault, FaultKind, Schedule, Setting, schedule
from .history import History, Verdict, Write, check
from .simulator import AutoSimulator

__all__ = ["Cut", "Election", "RunResult", "reproduce_command", "run_seed"]

#: a cut made on becoming follower of a new leader, down to the replica's own HW (the seeds' rule)
HW_ON_LEADER_CHANGE = "hw-on-leader-change"
#: any other truncation the protocol asked for (OffsetOutOfRange, an epoch-end answer)
PROTOCOL = "protocol"
#: the unflushed suffix a power loss took
POWER_LOSS = "power-loss"


@dataclass(frozen=True)
class Cut:
    """Records removed from ``broker``'s log of ``partition`` at ``at`` ms, down to ``to`` records."""

    at: int
    broker: int
    partition: int
    to: int
    removed: tuple[int, ...]
    cause: str
    hw_before: int = -1
    leader_before: int = -1
    leader_after: int = -1


@dataclass(frozen=True)
class Election:
    """``broker`` became leader of ``partition`` at ``at`` ms holding ``log`` (record ids)."""

    at: int
    broker: int
    partition: int
    epoch: int
    log: tuple[int, ...]


@dataclass(frozen=True)
class RunResult:
    seed: int
    setting: Setting
    schedule: Schedule
    injected: tuple[str, ...]
    history: History
    verdict: Verdict
    cuts: tuple[Cut, ...]
    elections: tuple[Election, ...]
    acked_at: tuple[tuple[int, int], ...]  # (record id, ms) in acknowledgement order

    @property
    def command(self) -> str:
        return reproduce_command(self.seed, self.setting)

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "generation": self.setting.generation, "ok": self.verdict.ok,
                "faults": list(self.injected), "verdict": self.verdict.to_json(), "command": self.command}


def reproduce_command(seed: int, setting: Setting) -> str:
    """The command line that replays exactly this run."""
    return f"isrcheck cluster simulate --seed {seed} {setting.options()}"


class _TracingDisk(SimDisk):
    """A simulated disk that reports every truncation to its simulator before performing it."""

    def __init__(self, sim: _TracedSim, broker: int, old: SimDisk) -> None:
        super().__init__()
        self.segments, self.checkpoints, self.epochs = old.segments, old.checkpoints, old.epochs
        self._sim, self._broker = sim, broker

    def apply(self, op: Persist) -> None:
        if op.kind == "truncate":
            seg = self.segments.get(op.partition)
            removed = tuple(r.id for r in seg.records[int(op.payload):]) if seg else ()
            if removed:
                self._sim.note_cut(self._broker, op.partition, int(op.payload), removed)
        super().apply(op)


class _TracedSim(AutoSimulator):
    """The autonomous simulator with the bookkeeping a history needs: acknowledgement times, cuts
    (with the replica's view just before the input that caused them) and elections."""

    def __init__(self, config: dict[str, Any], seed: int) -> None:
        self.cuts: list[Cut] = []
        self.elections: list[Election] = []
        self.ack_times: list[tuple[int, int]] = []
        self._before: dict[int, tuple[int, int, int]] = {}  # partition -> (leader, HW, leader epoch)
        super().__init__(config, seed=seed)
        self.disks = {b: _TracingDisk(self, b, d) for b, d in self.disks.items()}

    def note_cut(self, broker: int, p: int, to: int, removed: tuple[int, ...]) -> None:
        leader, hw, _ = self._before.get(p, (-1, -1, -1))
        proc = self.brokers.get(broker)
        r = proc.core.replicas.get(p) if proc is not None else None
        after = r.leader if r is not None else -1
        cause = HW_ON_LEADER_CHANGE if (not self.cfg.traits.leader_epochs and after != leader and to == hw) \
            else PROTOCOL
        self.cuts.append(Cut(self.now, broker, p, to, removed, cause, hw, leader, after))

    def note_power_loss(self, broker: int) -> None:
        for p, seg in sorted(self.disks[broker].segments.items()):
            removed = tuple(r.id for r in seg.records[seg.flushed:])
            if removed:
                self.cuts.append(Cut(self.now, broker, p, seg.flushed, removed, POWER_LOSS))

    def _feed(self, proc: Any, inp: Any) -> None:
        if proc.kind != "broker":
            super()._feed(proc, inp)
            return
        core = proc.core
        before = {p: (r.leader, r.hw, r.leader_epoch) for p, r in core.replicas.items()}
        self._before = before
        super()._feed(proc, inp)
        for p, r in core.replicas.items():
            if r.leader == core.id and before.get(p, (-1, 0, 0))[0] != core.id:
                self.elections.append(Election(self.now, core.id, p, r.leader_epoch, tuple(x.id for x in r.log)))

    def _client_answer(self, msg: Any) -> None:
        counts = {p: len(ids) for p, ids in self.answered.items()}
        super()._client_answer(msg)
        for p, ids in self.answered.items():
            for rid in ids[counts[p]:]:
                self.ack_times.append((rid, self.now))


def _resolve(sim: AutoSimulator, target: int) -> int:
    return sim.leader_of(0) if target == LEADER else target


def _running(sim: AutoSimulator, b: int) -> bool:
    return b in sim.brokers and sim.brokers[b] is not None


class _Driver:
    """Plays one schedule on one simulator: faults at their times, their ends, the writes."""

    def __init__(self, sim: _TracedSim) -> None:
        self.sim = sim
        self.queue: list[tuple[int, int, Callable[[], None]]] = []
        self.seq = 0
        self.injected: list[str] = []
        self.sent: dict[int, int] = {}  # record id -> first send

    def at(self, t: int, fn: Callable[[], None]) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (t, self.seq, fn))

    def play(self) -> None:
        while self.queue:
            t, _, fn = heapq.heappop(self.queue)
            if t > self.sim.now:
                self.sim.run_for(t - self.sim.now)
            fn()

    def write(self) -> None:
        rid = self.sim.produce(0)
        self.sent[rid] = self.sim.now

    def fault(self, f: Fault) -> None:
        sim = self.sim
        if f.kind is FaultKind.KILL_CONTROLLER:
            if sim.active is None:
                return
            epoch = sim.kill_controller()
            self.injected.append(f"t={sim.now} kill controller (epoch {epoch})")
            self.at(sim.now + f.duration, sim.start_controller)
            return
        b = _resolve(sim, f.target)
        if b == 0:
            return  # no leader to aim at: nothing happens
        end = sim.now + f.duration
        if f.kind in (FaultKind.CRASH, FaultKind.POWER_LOSS):
            if not _running(sim, b):
                return
            power = f.kind is FaultKind.POWER_LOSS
            if power:
                sim.note_power_loss(b)
            sim.crash(b, power_loss=power)
            self.injected.append(f"t={sim.now} {f.kind.value} broker {b} for {f.duration} ms")
            self.at(end, lambda: None if _running(sim, b) else sim.restart(b))
        elif f.kind is FaultKind.DROP:
            link = {("broker", b), ("broker", f.peer)}
            sim.add_filter(lambda src, dst, msg: "drop" if sim.now < end and {src, dst} == link else None)
            self.injected.append(f"t={sim.now} drop broker {b} <-> broker {f.peer} for {f.duration} ms")
        elif f.kind is FaultKind.DELAY:
            me = ("broker", b)
            sim.add_filter(lambda src, dst, msg: f.extra if sim.now < end and src == me else None)
            self.injected.append(f"t={sim.now} delay broker {b}'s messages by {f.extra} ms for {f.duration} ms")
        elif f.kind is FaultKind.PAUSE:
            me = ("broker", b)
            sim.add_filter(lambda src, dst, msg: end - sim.now if sim.now < end and me in (src, dst) else None)
            self.injected.append(f"t={sim.now} pause broker {b} for {f.duration} ms")

    def heal(self) -> None:
        """Every broker running, no message filter, two controller candidates."""
        sim = self.sim
        sim.filters.clear()
        for b in sim.cfg.broker_ids:
            if not _running(sim, b):
                sim.restart(b)
        while len(sim.controllers) < 2:
            sim.start_controller()


def run_seed(seed: int, setting: Setting) -> RunResult:
    """Play ``seed``'s schedule under ``setting``, heal, settle, and judge the history."""
    sched = schedule(seed, setting)
    sim = _TracedSim(setting.config(), seed)
    drv = _Driver(sim)
    start = sim.now
    for t in sched.writes:
        drv.at(start + t, drv.write)
    for f in sched.faults:
        drv.at(start + f.at, functools.partial(drv.fault, f))
    drv.play()
    sim.run_for(max(0, start + setting.window_ms - sim.now))
    drv.heal()
    sim.run_for(setting.settle_ms)
    acked = dict(sim.ack_times)
    writes = tuple(Write(0, rid, sent, acked.get(rid)) for rid, sent in sorted(drv.sent.items()))
    history = History(writes, {0: _consumed(sim)},
                      {(b, 0): tuple(sim.log_ids(b, 0)) for b in sim.cfg.broker_ids})
    return RunResult(seed, setting, sched, tuple(drv.injected), history, check(history), tuple(sim.cuts),
                     tuple(sim.elections), tuple(sim.ack_times))


def _consumed(sim: AutoSimulator) -> tuple[int, ...] | None:
    """What a consumer reads from partition 0's leader: its log below the HW (None: no leader)."""
    leader = sim.leader_of(0)
    proc = sim.brokers.get(leader) if leader else None
    r = proc.core.replicas.get(0) if proc is not None else None
    if r is None or r.leader != leader:
        return None
    return tuple(x.id for x in r.log[:r.hw])
