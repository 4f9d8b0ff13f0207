"""The history checker: what the clients were told against what the cluster kept.

Counting acknowledged ids says whether a write vanished, but not whether it came back twice, came
back out of order, or whether two replicas ended up disagreeing about the same offset. This module
judges a finished run from three things a client and an operator can see, and nothing of the
protocol's internals (so it applies to any run: the simulators, or a real cluster):

- the **writes**: per write, its partition, record id, when the producer first sent it and when (if
  ever) it was told the write succeeded (``acked_at``);
- the **consumed log** of each partition after the cluster was healed: the record ids a consumer
  reads from the leader below the high watermark (``None`` when the partition has no leader);
- every replica's **final log** (record ids, in offset order).

Findings (:class:`Anomaly`):

- ``lost``: an acknowledged write that the consumed log lacks (with no leader: that no replica holds);
- ``reordered``: writes ``a`` and ``b`` of one partition where ``a`` was acknowledged before ``b`` was
  first sent, yet ``b`` is read first (first occurrences compared: a retried write may appear twice);
- ``duplicated``: a record id that appears more than once in one log. The producer retries without
  idempotence, so this is at-least-once delivery, allowed by Kafka's promise: reported, never a
  violation;
- ``diverged``: two replicas of a partition whose final logs hold different records at one offset
  (a shorter log that is a prefix of a longer one only lags: not a finding);
- ``unavailable``: a partition without a leader after healing (its consumed log cannot be read).

``lost``, ``reordered`` and ``diverged`` are violations (:attr:`Verdict.violations`): an acks=all
write within Kafka's promise must be kept, in the order it was acknowledged, on replicas that agree.
"""
from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["VIOLATIONS", "Anomaly", "Finding", "History", "Verdict", "Write", "check"]


class Anomaly(enum.Enum):
    LOST = "lost"
    REORDERED = "reordered"
    DUPLICATED = "duplicated"
    DIVERGED = "diverged"
    UNAVAILABLE = "unavailable"


#: the anomalies that break the promise of acks=all (a duplicate is at-least-once delivery)
VIOLATIONS = frozenset({Anomaly.LOST, Anomaly.REORDERED, Anomaly.DIVERGED})


@dataclass(frozen=True)
class Write:
    """One client write: ``acked_at`` is ``None`` when the producer was never told it succeeded."""

    partition: int
    record: int
    sent_at: int
    acked_at: int | None = None


@dataclass(frozen=True)
class History:
    """A finished run as clients see it; logs are record ids in offset order."""

    writes: tuple[Write, ...]
    consumed: Mapping[int, tuple[int, ...] | None]
    replicas: Mapping[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    """One anomaly: the records and brokers involved, and a sentence saying what was seen."""

    kind: Anomaly
    partition: int
    records: tuple[int, ...] = ()
    brokers: tuple[int, ...] = ()
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "partition": self.partition, "records": list(self.records),
                "brokers": list(self.brokers), "detail": self.detail}


@dataclass(frozen=True)
class Verdict:
    """Every finding of one history, with the counts a summary needs."""

    findings: tuple[Finding, ...]
    acked: int
    written: int

    @property
    def violations(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind in VIOLATIONS)

    @property
    def ok(self) -> bool:
        """No violation (duplicates and unavailability may still be reported)."""
        return not self.violations

    def of(self, kind: Anomaly) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind is kind)

    @property
    def lost(self) -> dict[int, tuple[int, ...]]:
        """Partition -> the acknowledged record ids it lost."""
        return {f.partition: f.records for f in self.of(Anomaly.LOST)}

    @property
    def lost_count(self) -> int:
        return sum(len(f.records) for f in self.of(Anomaly.LOST))

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "acked": self.acked, "written": self.written, "lost": self.lost_count,
                "findings": [f.to_json() for f in self.findings]}


def _first_positions(log: Sequence[int]) -> dict[int, int]:
    pos: dict[int, int] = {}
    for i, rid in enumerate(log):
        pos.setdefault(rid, i)
    return pos


def _lost(p: int, acked: list[Write], consumed: tuple[int, ...] | None,
          replicas: Mapping[tuple[int, int], tuple[int, ...]]) -> Finding | None:
    if consumed is not None:
        have = set(consumed)
        where = "the consumed log"
    else:
        have = {rid for (_, q), log in replicas.items() if q == p for rid in log}
        where = "every replica's log (no leader to consume from)"
    gone = tuple(sorted(w.record for w in acked if w.record not in have))
    if not gone:
        return None
    return Finding(Anomaly.LOST, p, gone, (),
                   f"acknowledged record(s) {', '.join(map(str, gone))} missing from {where}")


def _reordered(p: int, writes: list[Write], consumed: tuple[int, ...]) -> Finding | None:
    pos = _first_positions(consumed)
    pairs: list[tuple[int, int]] = []
    present = [w for w in writes if w.record in pos]
    for a in present:
        if a.acked_at is None:
            continue
        for b in present:
            if b.sent_at > a.acked_at and pos[b.record] < pos[a.record]:
                pairs.append((a.record, b.record))
    if not pairs:
        return None
    shown = ", ".join(f"{b} before {a}" for a, b in pairs[:5])
    recs = tuple(sorted({r for pair in pairs for r in pair}))
    return Finding(Anomaly.REORDERED, p, recs, (),
                   f"{len(pairs)} pair(s) read against acknowledgement order: {shown}")


def _duplicated(p: int, log: Sequence[int], broker: int | None) -> Finding | None:
    twice = tuple(sorted(rid for rid, n in Counter(log).items() if n > 1))
    if not twice:
        return None
    where = "the consumed log" if broker is None else f"broker {broker}'s log"
    return Finding(Anomaly.DUPLICATED, p, twice, () if broker is None else (broker,),
                   f"record(s) {', '.join(map(str, twice))} appear more than once in {where}")


def _diverged(p: int, logs: list[tuple[int, tuple[int, ...]]]) -> list[Finding]:
    out: list[Finding] = []
    for i, (b1, l1) in enumerate(logs):
        for b2, l2 in logs[i + 1:]:
            for off, (x, y) in enumerate(zip(l1, l2)):
                if x != y:
                    out.append(Finding(Anomaly.DIVERGED, p, (x, y), (b1, b2),
                                       f"brokers {b1} and {b2} hold records {x} and {y} at offset {off}"))
                    break
    return out


def check(history: History) -> Verdict:
    """Judge ``history``: every finding, partition by partition, in a fixed order."""
    findings: list[Finding] = []
    parts = sorted({w.partition for w in history.writes} | set(history.consumed)
                   | {p for _, p in history.replicas})
    for p in parts:
        writes = [w for w in history.writes if w.partition == p]
        acked = [w for w in writes if w.acked_at is not None]
        consumed = history.consumed.get(p)
        if consumed is None:
            findings.append(Finding(Anomaly.UNAVAILABLE, p, (), (), "no leader after healing: nothing to consume"))
        lost = _lost(p, acked, consumed, history.replicas)
        if lost:
            findings.append(lost)
        if consumed is not None:
            reordered = _reordered(p, writes, consumed)
            if reordered:
                findings.append(reordered)
            dup = _duplicated(p, consumed, None)
            if dup:
                findings.append(dup)
        logs = sorted((b, log) for (b, q), log in history.replicas.items() if q == p)
        for b, log in logs:
            dup = _duplicated(p, log, b)
            if dup:
                findings.append(dup)
        findings.extend(_diverged(p, logs))
    acked_n = sum(1 for w in history.writes if w.acked_at is not None)
    return Verdict(tuple(findings), acked_n, len(history.writes))
