"""A seeded random-fault schedule: the same seed gives the same faults at the same virtual times.

As FoundationDB's and TigerBeetle's simulators do, a run is a pure function of its seed: the
schedule below is drawn from ``random.Random(seed)`` alone, before the run starts, and the
simulator (:class:`~.simulator.AutoSimulator`, seeded with the same number) draws its message
latencies from its own generator. So a failing seed replays exactly, on any machine.

A schedule is a list of :class:`Fault` in time order over a window of virtual milliseconds, beside
the writes the producer starts in that window:

- ``crash``: a broker process dies (its page cache survives: nothing of its log is lost) and
  restarts after ``duration`` ms;
- ``power-loss``: the broker's machine loses power (its unflushed log suffix is lost) and restarts
  after ``duration`` ms; drawn only when the setting allows power loss, on at most
  :attr:`Setting.power_loss` distinct brokers per run;
- ``drop``: every message between two brokers is lost for ``duration`` ms (a network partition);
- ``delay``: every message a broker sends takes ``extra`` ms more for ``duration`` ms (a slow link;
  messages of its different connections overtake each other, each connection stays FIFO like TCP);
- ``pause``: a process stall (a long GC pause): for ``duration`` ms nothing reaches the broker and
  nothing it sends leaves it; all of it is delivered when the pause ends;
- ``kill-controller``: the active controller's process dies; a new candidate starts after
  ``duration`` ms.

A fault's ``target`` is a broker id, or :data:`LEADER`: the partition's leader at the moment the
fault strikes (leaders are where the seeds' weakness bites, so half the broker faults aim there).
"""
from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from typing import Any

__all__ = ["LEADER", "Fault", "FaultKind", "Schedule", "Setting", "schedule"]

#: a fault target meaning "whichever broker leads partition 0 when the fault strikes"
LEADER = 0


class FaultKind(enum.Enum):
    CRASH = "crash"
    POWER_LOSS = "power-loss"
    DROP = "drop"
    DELAY = "delay"
    PAUSE = "pause"
    KILL_CONTROLLER = "kill-controller"


@dataclass(frozen=True)
class Fault:
    """One fault: at ``at`` ms, of ``kind``, on ``target`` (and ``peer`` for a dropped link), lasting
    ``duration`` ms; ``extra`` is a delay's added latency."""

    at: int
    kind: FaultKind
    target: int = LEADER
    duration: int = 0
    peer: int = 0
    extra: int = 0

    def describe(self) -> str:
        who = "the leader" if self.target == LEADER else f"broker {self.target}"
        if self.kind is FaultKind.DROP:
            return f"t={self.at} drop {who} <-> broker {self.peer} for {self.duration} ms"
        if self.kind is FaultKind.DELAY:
            return f"t={self.at} delay {who}'s messages by {self.extra} ms for {self.duration} ms"
        if self.kind is FaultKind.KILL_CONTROLLER:
            return f"t={self.at} kill the active controller (a new candidate in {self.duration} ms)"
        return f"t={self.at} {self.kind.value} {who} for {self.duration} ms"


@dataclass(frozen=True)
class Setting:
    """What a run is allowed to do: the protocol settings, and the faults and writes drawn.

    Within Kafka's promise: ``acks = "all"``, ``min_isr >= 2`` on three replicas, clean leader
    election, and no power loss (Kafka acknowledges before any fsync, so a machine losing power is
    covered only by the replicas that did not).
    """

    generation: str = "high-watermark"
    min_isr: int = 2
    power_loss: int = 0
    unclean: bool = False
    acks: str = "all"
    writes: int = 40
    faults: tuple[int, int] = (4, 10)
    window_ms: int = 2_000
    settle_ms: int = 3_000

    def __post_init__(self) -> None:
        if not 1 <= self.min_isr <= 3:
            raise ValueError(f"min_isr must be 1..3, got {self.min_isr}")
        if not 0 <= self.power_loss <= 3:
            raise ValueError(f"power_loss must be 0..3 brokers, got {self.power_loss}")
        if self.acks not in ("all", "1"):
            raise ValueError(f"acks must be 'all' or '1', got {self.acks!r}")
        if self.writes < 1 or self.window_ms < 1 or self.settle_ms < 0:
            raise ValueError("writes and window_ms must be positive, settle_ms not negative")
        lo, hi = self.faults
        if not 0 <= lo <= hi:
            raise ValueError(f"faults must be a range lo..hi with 0 <= lo <= hi, got {lo}..{hi}")

    @property
    def within_promise(self) -> bool:
        """Whether Kafka promises to keep every acknowledged write under this setting."""
        return self.acks == "all" and self.min_isr >= 2 and not self.unclean and self.power_loss == 0

    def config(self) -> dict[str, Any]:
        """The implementation's configuration (specs/03 keys and impl keys) for this setting."""
        return {"brokers": 3, "replication_factor": 3, "partitions": 1, "generation": self.generation,
                "min_insync_replicas": self.min_isr, "unclean_leader_election": self.unclean,
                "acks": self.acks, "replica_lag_time_max_ms": 300, "log_flush_interval_ms": 400}

    def options(self) -> str:
        """The command-line options that give this setting (for a reproducing command)."""
        out = [f"--generation {self.generation}", f"--min-isr {self.min_isr}"]
        if self.power_loss:
            out.append(f"--power-loss {self.power_loss}")
        if self.unclean:
            out.append("--unclean")
        if self.acks != "all":
            out.append(f"--acks {self.acks}")
        return " ".join(out)


@dataclass(frozen=True)
class Schedule:
    """The writes' start times and the faults of one seed, each in time order."""

    seed: int
    writes: tuple[int, ...]
    faults: tuple[Fault, ...]


_BROKERS = (1, 2, 3)
#: the chance that a fault follows the one drawn before it within 40 ms
BURST = 0.5


def _target(rng: random.Random) -> int:
    return LEADER if rng.random() < 0.5 else rng.choice(_BROKERS)


def schedule(seed: int, setting: Setting) -> Schedule:
    """The schedule of ``seed`` under ``setting``: a pure function of the two."""
    rng = random.Random(f"isrcheck-faults-{seed}")
    window = setting.window_ms
    writes = tuple(sorted(rng.randrange(window) for _ in range(setting.writes)))
    kinds = [FaultKind.CRASH, FaultKind.CRASH, FaultKind.DROP, FaultKind.DELAY, FaultKind.PAUSE,
             FaultKind.KILL_CONTROLLER]
    if setting.power_loss:
        kinds += [FaultKind.POWER_LOSS, FaultKind.POWER_LOSS]
    lo, hi = setting.faults
    faults: list[Fault] = []
    powered_off: set[int] = set()
    at = rng.randrange(window)
    for _ in range(rng.randint(lo, hi)):
        # failures come in bursts: a fault often strikes within a few ms of the one before
        at = min(window - 1, at + rng.randint(0, 40)) if faults and rng.random() < BURST else rng.randrange(window)
        kind = rng.choice(kinds)
        if kind is FaultKind.POWER_LOSS:
            target = rng.choice(_BROKERS)
            if target not in powered_off and len(powered_off) >= setting.power_loss:
                target = rng.choice(sorted(powered_off))
            powered_off.add(target)
            faults.append(Fault(at, kind, target, rng.randint(50, 800)))
        elif kind is FaultKind.CRASH:
            faults.append(Fault(at, kind, _target(rng), rng.randint(50, 800)))
        elif kind is FaultKind.DROP:
            a = _target(rng)
            peer = rng.choice([b for b in _BROKERS if b != a])
            faults.append(Fault(at, kind, a, rng.randint(100, 1_000), peer=peer))
        elif kind is FaultKind.DELAY:
            faults.append(Fault(at, kind, _target(rng), rng.randint(100, 1_000), extra=rng.randint(20, 400)))
        elif kind is FaultKind.PAUSE:
            faults.append(Fault(at, kind, _target(rng), rng.randint(50, 600)))
        else:
            faults.append(Fault(at, kind, LEADER, rng.randint(0, 500)))
    faults.sort(key=lambda f: f.at)
    return Schedule(seed, writes, tuple(faults))
