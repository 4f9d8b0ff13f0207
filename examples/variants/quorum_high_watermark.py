"""A designer's change to the high-watermark rule: commit once a majority of the ISR has a record.

Kafka's leader advances its high watermark to the smallest log end offset in its ISR: a record is
committed (and acknowledged, with acks=all) only when every ISR member has it. A quorum rule, as in
Raft, would commit once a majority of the ISR has it, acknowledging sooner and tolerating a slow
follower. What it breaks is the other half of Kafka's design: the controller may elect *any* live
ISR member (the OfflinePartition selector takes the first in assignment order), not the one with the
longest log, so the new leader can lack an acknowledged record, and followers truncate to it.

Run it: the model's NoCommittedWriteLost breaks at the acknowledgement itself (a live ISR member
lacks the write), and the variant's own property ``AcknowledgedOnLeader`` gives the shortest run
in which the elected leader lacks it::

    isrcheck check leader-crash-kip-320 --variant examples/variants/quorum_high_watermark.py:QuorumHighWatermark
    isrcheck check leader-crash-kip-320 --variant examples/variants/quorum_high_watermark.py:QuorumHighWatermark \
        --property AcknowledgedOnLeader

The change is one Protocol hook: ``high_watermark`` (README, "Variants": the hook table).
"""
from __future__ import annotations

from isrcheck.engine.core import Property
from isrcheck.model.brokersets import members
from isrcheck.model.protocol import Protocol
from isrcheck.model.records import ids_in


class QuorumHighWatermark(Protocol):
    """The leader's high watermark is the largest offset held by a majority of its ISR."""

    name = "quorum-high-watermark"

    def high_watermark(self, w, leader, p, r):  # type: ignore[no-untyped-def]
        # each ISR member's log end offset as the leader knows it: its own, its followers' last fetched
        ends = sorted((len(r.log) if m == leader else r.remote_leo[m - 1] for m in members(r.isr)), reverse=True)
        majority = len(ends) // 2 + 1
        return ends[majority - 1]

    def extra_properties(self):  # type: ignore[no-untyped-def]
        return [Property("AcknowledgedOnLeader", "always", lambda s: not _missing_on_leader(s),
                         description="The acting leader's log holds every acknowledged write.",
                         explain=lambda s: "; ".join(_missing_on_leader(s)))]


def _missing_on_leader(s):  # type: ignore[no-untyped-def]
    """For each partition whose leader in ZooKeeper is up and acting on its epoch: the acknowledged
    writes its log lacks."""
    out = []
    for p, zp in enumerate(s.zk.partitions):
        br = s.brokers[zp.leader - 1] if zp.leader else None
        r = br.replicas[p] if br is not None and br.alive else None
        if r is not None and r.leader == zp.leader and r.leader_epoch == zp.leader_epoch:
            missing = s.ghost[p].acked & ~ids_in(r.log)
            if missing:
                out.append(f"partition {p}: leader {zp.leader} lacks acknowledged "
                           + ", ".join(f"m{i}" for i in range(missing.bit_length()) if missing >> i & 1))
    return out
