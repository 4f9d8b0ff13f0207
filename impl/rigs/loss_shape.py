"""Matching a run's anomalies to the shapes of the protocol's known weaknesses.

The model's counterexamples (specs/10-weaknesses.md) name the mechanisms by which a generation
fails; this module checks, from what a run recorded (:class:`~.fault_run.RunResult`: cuts of replica
logs and elections), that an anomaly the history checker found happened by one of them, and says how
in one sentence. It reads only the run: the implementation never imports the model, so the shapes
are restated here as conditions on the run, and each names the manifest model that shows it.

- **hw-truncation** (``hw-truncation-one-crash``, the seeds' generation): an acknowledged record is
  cut from a follower's log by a truncation to its own high watermark when its leader changed (a
  protocol cut, not a power loss), and that follower is then elected leader with a log lacking the
  record (in the model's shortest counterexample the follower is left in the ISR without it).
- **epoch-divergence** (``fast-leader-change-kip-101``, KAFKA-6361, fixed by KIP-279): two replicas
  disagree at an offset where one of them appended records as the leader of an epoch that the
  final leader never held: KIP-101's answer about an epoch the new leader never had keeps them.
  Under the seeds' generation a divergence is the aftermath of an HW truncation (a broker cut to
  its HW and then elected leader; the others keep what lies below their own HW).
- **power-loss** (outside Kafka's promise): a lost record, or a divergence from an offset, where a
  power loss took an unflushed suffix; also a record never cut but outvoted, held by replicas while
  the log read holds another record at its offset, after a power loss from at or below it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from isrcheck.specs.protocol import EpochAnswer

from ..core.config import from_mapping
from .fault_run import HW_ON_LEADER_CHANGE, POWER_LOSS, Cut, Election, RunResult
from .history import Anomaly

__all__ = ["EPOCH_DIVERGENCE", "HW_TRUNCATION", "POWER_LOSS_SHAPE", "Explanation", "explain", "explain_cut_loss", "explain_diverged_loss", "explain_divergence", "explain_hw_divergence", "explain_loss"]

HW_TRUNCATION = "hw-truncation-one-crash"
EPOCH_DIVERGENCE = "fast-leader-change-kip-101"
#: a record whose copies went with unflushed suffixes in power losses (outside Kafka's promise,
#: which rests on replicas, not on fsync); the model's bounded lossy crashes do not reach every case
POWER_LOSS_SHAPE = "power-loss"


@dataclass(frozen=True)
class Explanation:
    """How one anomaly of one record (or one diverging offset) happened: ``shape`` names the manifest
    model that shows the mechanism, or :data:`POWER_LOSS_SHAPE`; ``None`` when no known shape matches."""

    record: int
    shape: str | None
    detail: str

    @property
    def explained(self) -> bool:
        return self.shape is not None


def explain_loss(result: RunResult, record: int) -> Explanation:
    """Why acknowledged ``record`` of partition 0 was lost: cut from the logs (the seeds' HW truncation,
    a power loss), or never cut but outvoted: see :func:`explain_diverged_loss`."""
    got = explain_cut_loss(result.cuts, result.elections, record, dict(result.acked_at).get(record))
    if got.explained or any(c.partition == 0 and record in c.removed for c in result.cuts):
        return got
    return explain_diverged_loss(result, record) or got


def explain_diverged_loss(result: RunResult, record: int) -> Explanation | None:
    """A lost record that no log ever cut: replicas still hold it, but the log that is read (the final
    leader's) holds another record at its offset. When a power loss took an unflushed suffix from at
    or below that offset, the logs diverged there because of it (issue 30 classified seeds 1110 and
    1503 of ``--generation high-watermark --min-isr 2 --power-loss 2`` so): the power-lossed broker
    came back shorter, took other records at those offsets, and a replica that kept its own there
    (under ``high-watermark`` a follower keeps what is below its HW) was later elected. This is
    KIP-101's second scenario, outside Kafka's promise (which rests on replicas, not on fsync), and
    the manifest model ``lossy-divergence`` shows the mechanism (specs/10-weaknesses.md, "A lossy
    crash lets a diverged follower back into the ISR")."""
    holders = {b: log.index(record) for (b, p), log in sorted(result.history.replicas.items())
               if p == 0 and record in log}
    if not holders:
        return None
    offset = min(holders.values())
    read = result.history.consumed.get(0) or ()
    if offset < len(read) and read[offset] == record:
        return None
    powered = sorted({c.broker for c in result.cuts if c.cause == POWER_LOSS and c.partition == 0 and c.to <= offset})
    if not powered:
        return None
    acked = dict(result.acked_at).get(record)
    when = "" if acked is None else f" (acknowledged at t={acked})"
    other = f"record {read[offset]}" if offset < len(read) else "nothing"
    return Explanation(record, POWER_LOSS_SHAPE, (
        f"record {record}{when} is at offset {offset} on broker(s) {', '.join(map(str, sorted(holders)))}, "
        f"but the log read holds {other} there: the logs diverged from an offset where broker(s) "
        f"{', '.join(map(str, powered))} lost an unflushed suffix in a power loss"))


def explain_cut_loss(cuts: Sequence[Cut], elections: Sequence[Election], record: int,
                     acked: int | None = None) -> Explanation:
    """:func:`explain_loss` on the cuts and elections alone, wherever they were recorded: the simulator
    traces them (:mod:`.fault_run`), a real run's event logs let :mod:`.torture_explain` rebuild them.
    ``acked`` is when the record was acknowledged, if known (same clock as the cuts)."""
    cuts = [c for c in cuts if c.partition == 0 and record in c.removed]
    when = "" if acked is None else f" (acknowledged at t={acked})"
    if not cuts:
        return Explanation(record, None, f"record {record} was never cut from any log")
    if any(c.cause == POWER_LOSS for c in cuts):
        lost_at = sorted({c.broker for c in cuts if c.cause == POWER_LOSS})
        return Explanation(record, POWER_LOSS_SHAPE, (
            f"record {record}{when} went with the unflushed suffix of broker(s) "
            f"{', '.join(map(str, lost_at))} in a power loss"))
    for c in cuts:
        if c.cause != HW_ON_LEADER_CHANGE:
            continue
        for e in elections:
            if e.partition == 0 and e.broker == c.broker and e.at >= c.at and record not in e.log:
                return Explanation(record, HW_TRUNCATION, (
                    f"record {record}{when} was cut from broker {c.broker}'s log at "
                    f"t={c.at}, down to its HW {c.to} when its leader changed ({c.leader_before} -> "
                    f"{c.leader_after}); broker {c.broker} was elected leader at t={e.at} (epoch {e.epoch}) "
                    f"without it"))
    return Explanation(record, None, f"record {record} was cut ({len(cuts)} time(s)) but no HW truncation "
                                     "was followed by the election of the truncated broker")


def explain_divergence(result: RunResult, brokers: tuple[int, int], offset: int) -> Explanation:
    """Why ``brokers`` disagree at ``offset`` of partition 0, if it is KIP-101's epoch divergence: one
    of them was elected leader of an epoch below ``offset`` and kept what it appended from there,
    although a later epoch began at another broker whose log lacked that record."""
    logs = result.history.replicas
    for b in brokers:
        log = logs.get((b, 0), ())
        if offset >= len(log):
            continue
        for e in result.elections:
            if e.broker != b or e.partition != 0 or len(e.log) > offset or tuple(log[:len(e.log)]) != e.log:
                continue
            later = [x for x in result.elections if x.partition == 0 and x.epoch > e.epoch and x.broker != b
                     and (len(x.log) <= offset or x.log[offset] != log[offset])]
            if later:
                x = later[0]
                return Explanation(log[offset], EPOCH_DIVERGENCE, (
                    f"broker {b} led epoch {e.epoch} from offset {len(e.log)} (t={e.at}) and kept record "
                    f"{log[offset]} at offset {offset} after epoch {x.epoch} began at broker {x.broker} "
                    f"(t={x.at}) without it: brokers {brokers[0]} and {brokers[1]} differ there"))
    return Explanation(-1, None, f"brokers {brokers[0]} and {brokers[1]} differ at offset {offset}, "
                                 "and neither kept records of an epoch it led that a later leader lacked")


def explain_hw_divergence(result: RunResult, brokers: tuple[int, int], offset: int) -> Explanation:
    """Why ``brokers`` disagree at ``offset`` under the seeds' generation, if it is the aftermath of an
    HW truncation: a broker cut to its HW at or below ``offset`` was then elected leader, so the
    records other replicas hold from there (below their own HW, which they never truncate) are not
    the new leader's."""
    for c in result.cuts:
        if c.partition != 0 or c.cause != HW_ON_LEADER_CHANGE or c.to > offset:
            continue
        for e in result.elections:
            if e.partition == 0 and e.broker == c.broker and e.at >= c.at and len(e.log) <= max(offset, c.to):
                return Explanation(-1, HW_TRUNCATION, (
                    f"broker {c.broker} was cut to its HW {c.to} at t={c.at} and elected leader at t={e.at} "
                    f"(epoch {e.epoch}); brokers {brokers[0]} and {brokers[1]} differ from offset {offset}"))
    return Explanation(-1, None, f"brokers {brokers[0]} and {brokers[1]} differ at offset {offset}, "
                                 "and no broker cut to its HW below that offset was elected leader")


def _divergence(result: RunResult, brokers: tuple[int, int], offset: int) -> Explanation:
    powered = sorted({c.broker for c in result.cuts if c.cause == POWER_LOSS and c.partition == 0 and c.to <= offset})
    if powered:
        return Explanation(-1, POWER_LOSS_SHAPE, (
            f"brokers {brokers[0]} and {brokers[1]} differ at offset {offset}, after broker(s) "
            f"{', '.join(map(str, powered))} lost an unflushed suffix from there in a power loss"))
    traits = from_mapping(result.setting.config()).traits
    if not traits.leader_epochs:
        return explain_hw_divergence(result, brokers, offset)
    if traits.epoch_answer is EpochAnswer.END_OFFSET:
        return explain_divergence(result, brokers, offset)
    return Explanation(-1, None, f"brokers {brokers[0]} and {brokers[1]} differ at offset {offset}")


def explain(result: RunResult) -> tuple[Explanation, ...]:
    """An explanation of every violation of ``result``: per lost record, per diverged pair."""
    out: list[Explanation] = []
    for f in result.verdict.violations:
        if f.kind is Anomaly.LOST:
            out.extend(explain_loss(result, r) for r in f.records)
        elif f.kind is Anomaly.DIVERGED:
            b1, b2 = f.brokers
            l1, l2 = result.history.replicas[(b1, 0)], result.history.replicas[(b2, 0)]
            offset = next(i for i, (x, y) in enumerate(zip(l1, l2)) if x != y)
            out.append(_divergence(result, (b1, b2), offset))
        else:
            out.append(Explanation(-1, None, f.detail))
    return tuple(out)
