"""Many seeds of one setting: the figures a long simulation run reports, and its failing seeds.

:func:`campaign` runs seeds one after the other (each a pure function of its number, so a campaign
split over several machines or runs adds up to the same figures) and yields every result; a
:class:`Tally` adds them up. The command line (``isrcheck cluster simulate``), the test suite and
``benchmarks/bench_simulation.py`` share it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from .fault_run import RunResult, run_seed
from .fault_schedule import Setting
from .history import Anomaly
from .loss_shape import explain

__all__ = ["Failure", "Tally", "campaign"]


@dataclass(frozen=True)
class Failure:
    """A seed with a violation: what broke, how (the matched shapes), and the command replaying it."""

    seed: int
    lost: tuple[int, ...]
    kinds: tuple[str, ...]
    shapes: tuple[str, ...]  # the known weaknesses matched, "unexplained" for an anomaly none matches
    command: str

    def line(self) -> str:
        what = ", ".join(self.kinds)
        lost = f" (records {', '.join(map(str, self.lost))})" if self.lost else ""
        return f"seed {self.seed}: {what}{lost}; shape: {', '.join(self.shapes)}; reproduce: {self.command}"

    def to_json(self) -> dict[str, object]:
        return {"seed": self.seed, "kinds": list(self.kinds), "lost": list(self.lost),
                "shapes": list(self.shapes), "command": self.command}


@dataclass
class Tally:
    """The running figures of a campaign (mutable: it is filled as results arrive)."""

    setting: Setting
    seeds: int = 0
    faults: int = 0
    writes: int = 0
    acked: int = 0
    lost: int = 0
    seeds_with_loss: int = 0
    seeds_with_duplicates: int = 0
    seeds_unavailable: int = 0
    failures: list[Failure] = field(default_factory=list)

    def add(self, r: RunResult) -> None:
        v = r.verdict
        self.seeds += 1
        self.faults += len(r.injected)
        self.writes += v.written
        self.acked += v.acked
        self.lost += v.lost_count
        self.seeds_with_loss += bool(v.lost_count)
        self.seeds_with_duplicates += bool(v.of(Anomaly.DUPLICATED))
        self.seeds_unavailable += bool(v.of(Anomaly.UNAVAILABLE))
        if not v.ok:
            shapes = tuple(sorted({e.shape or "unexplained" for e in explain(r)}))
            kinds = tuple(sorted({f.kind.value for f in v.violations}))
            lost = tuple(rid for f in v.of(Anomaly.LOST) for rid in f.records)
            self.failures.append(Failure(r.seed, lost, kinds, shapes, r.command))

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, object]:
        s = self.setting
        return {"generation": s.generation, "min_isr": s.min_isr, "power_loss": s.power_loss,
                "unclean": s.unclean, "acks": s.acks, "within_promise": s.within_promise,
                "seeds": self.seeds, "faults": self.faults, "writes": self.writes, "acked": self.acked,
                "lost": self.lost, "seeds_with_loss": self.seeds_with_loss,
                "seeds_with_violation": len(self.failures),
                "seeds_with_duplicates": self.seeds_with_duplicates,
                "seeds_unavailable": self.seeds_unavailable,
                "failures": [f.to_json() for f in self.failures]}


def campaign(seeds: Iterable[int], setting: Setting) -> Iterator[RunResult]:
    """Every seed's result, in the order given."""
    for seed in seeds:
        yield run_seed(seed, setting)
