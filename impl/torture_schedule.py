"""The seeded nemesis schedule of ``isrcheck cluster torture``: which faults, when, against whom.

Why a schedule drawn before the run: the run itself cannot be deterministic (real processes, real
clocks), but its plan can, so a seed names one plan and the printed command replays it; a finding is
then re-tried against the same faults in the same order. Targets ``None`` mean "whichever broker
leads the partition when the fault strikes" (half of the faults), as the simulator's schedule does
(impl/fault_schedule.py): the leader is where faults hurt.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["KINDS", "Fault", "schedule"]

#: every kind of fault, and what it does (impl/torture.py performs them)
KINDS: dict[str, str] = {
    "partition": "cut one broker from every other node (brokers, controllers, store, clients)",
    "split": "cut one broker from the other brokers only (it keeps its store session)",
    "pause": "SIGSTOP a broker, SIGCONT it later (a long GC pause)",
    "kill": "SIGKILL a broker, restart it later (its page cache survives)",
    "kill-controller": "SIGKILL the active controller, start it again later",
    "expire": "cut a broker from the store long enough for its session to expire",
    "delay": "delay every frame between two brokers",
    "drop": "lose each frame between two brokers with a probability",
}


@dataclass(frozen=True)
class Fault:
    at: float  # seconds after the window opens
    kind: str
    target: int | None  # a broker; None: the partition's leader at that moment
    seconds: float  # how long it lasts (then it heals by itself, or the process comes back)
    peer: int | None = None  # the other broker of a link fault (None: any other than the target)
    amount: float = 0.0  # delay in ms, or drop probability

    def describe(self) -> str:
        who = "the active controller" if self.kind == "kill-controller" else \
            "the leader" if self.target is None else f"broker {self.target}"
        extra = f" ({self.amount:.0f} ms)" if self.kind == "delay" else \
            f" (p={self.amount:.2f})" if self.kind == "drop" else ""
        return f"t={self.at:5.2f}s {self.kind:<15} {who} for {self.seconds:.2f}s{extra}"


def schedule(seed: int, duration: float, brokers: int = 3, kinds: tuple[str, ...] = tuple(KINDS)) -> list[Fault]:
    """Faults in ``[0.3, duration - 0.5]`` s, about one per 1.5 s (at least 2), from ``seed`` alone."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown fault kind {unknown[0]!r} (known: {', '.join(KINDS)})")
    if duration < 2.0:
        raise ValueError(f"a torture window lasts at least 2 s, not {duration:g}")
    rng = random.Random(seed)
    n = max(2, int(duration / 1.5))
    times = sorted(rng.uniform(0.3, duration - 0.5) for _ in range(n))
    out = []
    for at in times:
        kind = rng.choice(kinds)
        target = None if rng.random() < 0.5 else rng.randint(1, brokers)
        seconds = round(rng.uniform(0.5, 2.5), 3)
        peer = None
        amount = 0.0
        if kind == "delay":
            amount = round(rng.uniform(20, 300))
        elif kind == "drop":
            amount = round(rng.uniform(0.2, 0.9), 2)
        elif kind == "kill-controller":
            target = None
        out.append(Fault(round(at, 3), kind, target, seconds, peer, amount))
    return out
