"""The seeded nemesis schedule of ``isrcheck cluster torture``: which faults, when, against whom.

Why a schedule drawn before the run: the run itself cannot be deterministic (real processes, real
clocks), but its plan can, so a seed names one plan and the printed command replays it; a finding is
then re-tried against the same faults in the same order. Targets ``None`` mean "whichever broker
leads the partition when the fault strikes" (half of the faults), as the simulator's schedule does
(impl/rigs/fault_schedule.py): the leader is where faults hurt. The controller faults name no broker: they
strike whichever controller is active (or a standby) at that moment, for the same reason; only the
brokers a ``controller-some`` cut separates it from are drawn in advance. With ``--faults`` naming only
the older kinds a seed still draws the plan it drew before the controller faults existed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["CONTROLLER_KINDS", "EXPIRY_KINDS", "KINDS", "Fault", "kinds_for", "schedule"]

#: every kind of fault, and what it does (impl/rigs/torture.py performs them)
KINDS: dict[str, str] = {
    "partition": "cut one broker from every other node (brokers, controllers, store, clients)",
    "split": "cut one broker from the other brokers only (it keeps its store session)",
    "pause": "SIGSTOP a broker, SIGCONT it later (a long GC pause)",
    "kill": "SIGKILL a broker, restart it later (its page cache survives)",
    "kill-controller": "SIGKILL the active controller, start it again later",
    "expire": "cut a broker from the store long enough for its session to expire",
    "delay": "delay every frame between two brokers",
    "drop": "lose each frame between two brokers with a probability",
    "controller-store": "cut the active controller from the store until its session expires (a failover)",
    "standby-store": "cut a standby controller from the store until its session expires (two controllers or more)",
    "controller-brokers": "cut the active controller from every broker (it keeps its store session)",
    "controller-some": "cut the active controller from a drawn proper subset of the brokers",
}

#: the kinds aimed at a controller (``target`` unused: the active or a standby one when the fault strikes)
CONTROLLER_KINDS = frozenset({"kill-controller", "controller-store", "standby-store", "controller-brokers",
                              "controller-some"})
#: the kinds that last until the victim's store session expires (``seconds`` unused; impl/rigs/torture.py)
EXPIRY_KINDS = frozenset({"expire", "controller-store", "standby-store"})


@dataclass(frozen=True)
class Fault:
    at: float  # seconds after the window opens
    kind: str
    target: int | None  # a broker; None: the partition's leader at that moment
    seconds: float  # how long it lasts (then it heals by itself, or the process comes back)
    peer: int | None = None  # the other broker of a link fault (None: any other than the target)
    amount: float = 0.0  # delay in ms, or drop probability
    brokers: tuple[int, ...] = ()  # the brokers a controller-some fault cuts the active controller from

    def describe(self) -> str:
        who = "a standby controller" if self.kind == "standby-store" else \
            "the active controller" if self.kind in CONTROLLER_KINDS else \
            "the leader" if self.target is None else f"broker {self.target}"
        extra = f" ({self.amount:.0f} ms)" if self.kind == "delay" else \
            f" (p={self.amount:.2f})" if self.kind == "drop" else \
            f" from broker(s) {','.join(map(str, self.brokers))}" if self.kind == "controller-some" else ""
        until = "until its session expires" if self.kind in EXPIRY_KINDS else f"for {self.seconds:.2f}s"
        return f"t={self.at:5.2f}s {self.kind:<18} {who}{extra} {until}"


def kinds_for(brokers: int, controllers: int) -> tuple[str, ...]:
    """Every kind that makes sense in a cluster of this size: a standby controller needs two
    controllers, a proper subset of the brokers needs two brokers."""
    return tuple(k for k in KINDS if not (k == "standby-store" and controllers < 2)
                 and not (k == "controller-some" and brokers < 2))


def schedule(seed: int, duration: float, brokers: int = 3, kinds: tuple[str, ...] | None = None,
             controllers: int = 2) -> list[Fault]:
    """Faults in ``[0.3, duration - 0.5]`` s, about one per 1.5 s (at least 2), from ``seed`` alone.
    ``kinds`` None: every kind that fits the cluster (:func:`kinds_for`)."""
    fits = kinds_for(brokers, controllers)
    kinds = fits if kinds is None else kinds
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown fault kind {unknown[0]!r} (known: {', '.join(KINDS)})")
    misfit = [k for k in kinds if k not in fits]
    if misfit:
        raise ValueError(f"fault kind {misfit[0]!r} needs a larger cluster ({brokers} brokers, {controllers} controllers)")
    if duration < 2.0:
        raise ValueError(f"a torture window lasts at least 2 s, not {duration:g}")
    rng = random.Random(seed)
    n = max(2, int(duration / 1.5))
    times = sorted(rng.uniform(0.3, duration - 0.5) for _ in range(n))
    return [_draw(rng, round(at, 3), rng.choice(kinds), brokers) for at in times]


def _draw(rng: random.Random, at: float, kind: str, brokers: int) -> Fault:
    """One fault of ``kind`` at ``at``: its target, length and kind-specific figures, drawn in a fixed
    order, as before the controller kinds (target and length first, even where unused), so that the
    older kinds draw what they drew then."""
    target = None if rng.random() < 0.5 else rng.randint(1, brokers)
    seconds = round(rng.uniform(0.5, 2.5), 3)
    amount = 0.0
    group: tuple[int, ...] = ()
    if kind == "delay":
        amount = round(rng.uniform(20, 300))
    elif kind == "drop":
        amount = round(rng.uniform(0.2, 0.9), 2)
    elif kind == "controller-some":
        group = tuple(sorted(rng.sample(range(1, brokers + 1), rng.randint(1, brokers - 1))))
    if kind in CONTROLLER_KINDS:
        target = None
    return Fault(at, kind, target, seconds, None, amount, group)
