"""KIP-966, eligible leader replicas (ELR), as a variant of the ZooKeeper-era protocol.

The ISR-only design keeps the last ISR member in the ISR when it fails (unless unclean election is
on), so the partition waits for exactly that broker, and elects it when it returns even if a crash
lost the unflushed end of its log: acknowledged writes are then lost, although another replica
that left the ISR still holds them. KIP-966 keeps a second set per partition in the metadata, the
ELR: replicas that left the ISR while it was below ``min.insync.replicas`` and are therefore known
to hold every committed record, because the high watermark does not advance while the ISR is that
small. The rules, as hooks:

- the ISR shrinks as members leave, to empty if need be; a member that leaves while the ISR is
  below min ISR joins the ELR (``isr_removal``, ``leader_isr_change``); the ELR is empty whenever
  the ISR has at least min ISR members;
- the high watermark advances only while the leader's ISR has at least min ISR members
  (``high_watermark``);
- with no live ISR member, the controller elects the first live ELR member, cleanly (``select``);
- a broker back from an unclean shutdown (here a lossy crash) leaves the ELR (``on_stop``,
  ``on_restart``): its log may miss committed records.

It promises ``EligibleReplicasComplete``: every live ELR member holds every acknowledged write. Run::

    isrcheck check --config examples/elr.toml                 # ISR-only: NoCommittedWriteLost broken
    isrcheck check --config examples/elr.toml --variant examples/variants/eligible_leader_replicas.py:EligibleLeaderReplicas
"""
from __future__ import annotations

from isrcheck.engine.core import Property
from isrcheck.model.brokersets import bit, members, size
from isrcheck.model.extension import Field, Kind, Scope
from isrcheck.model.protocol import IsrChange, Protocol, Stop
from isrcheck.model.records import ids_in
from isrcheck.model.selectors import Election, Selector
from isrcheck.model.state import NO_LEADER


class EligibleLeaderReplicas(Protocol):
    """The ISR may shrink below min ISR; who leaves it then is eligible to lead (KIP-966)."""

    name = "eligible-leader-replicas"
    fields = (
        Field("elr", Scope.PARTITION, Kind.BROKERS, doc="eligible leader replicas, in ZooKeeper"),
        Field("unclean", Scope.BROKER, Kind.BOOL, doc="the broker's last shutdown lost log data"),
    )

    # -- who is eligible
    def _elr(self, fields, isr, leaving=0):  # type: ignore[no-untyped-def]
        """The partition's fields once the ISR is ``isr`` and ``leaving`` left it: the ELR is empty
        at min ISR or more; else who leaves joins it, and an ISR member is never in it."""
        elr = self.extension.get(Scope.PARTITION, fields, "elr")
        elr = 0 if size(isr) >= self.min_insync_replicas else (elr | leaving) & ~isr
        return self.extension.with_value(Scope.PARTITION, fields, "elr", elr)

    def isr_removal(self, w, c, p, removed, cause):  # type: ignore[no-untyped-def]
        zp = w.parts[p]
        isr = zp.isr & ~bit(removed)  # no last member kept: the ELR keeps the guarantee instead
        leader = NO_LEADER if zp.leader == removed else zp.leader
        return IsrChange(leader, isr, self._elr(zp.ext, isr, bit(removed)))

    def leader_isr_change(self, w, leader, p, r, new_isr):  # type: ignore[no-untyped-def]
        return IsrChange(leader, new_isr, self._elr(w.parts[p].ext, new_isr, r.isr & ~new_isr))

    def high_watermark(self, w, leader, p, r):  # type: ignore[no-untyped-def]
        if size(r.isr) < self.min_insync_replicas:
            return r.hw  # below min ISR nothing more is committed, so the ELR stays complete
        return super().high_watermark(w, leader, p, r)

    def select(self, selector, inp):  # type: ignore[no-untyped-def]
        elr = self.extension.get(Scope.PARTITION, inp.fields, "elr")
        if selector is Selector.OFFLINE_PARTITION and not any(inp.live >> b & 1 for b in members(inp.isr)):
            for b in inp.assignment:
                if inp.live >> b & 1 and elr >> b & 1:  # a clean election from the ELR
                    live = tuple(x for x in inp.assignment if inp.live >> x & 1)
                    return Election(b, bit(b), live, fields=self._elr(inp.fields, bit(b), inp.isr))
        election = super().select(selector, inp)
        return election._replace(fields=self._elr(inp.fields, election.isr, inp.isr & ~election.isr))

    # -- unclean shutdowns
    def on_stop(self, w, b, how):  # type: ignore[no-untyped-def]
        if how is Stop.LOSSY_CRASH:
            w.set_broker_field(b, "unclean", 1)

    def on_restart(self, w, b, noticed):  # type: ignore[no-untyped-def]
        # it registers saying its last shutdown was unclean: it leaves every ELR before it can be elected
        if w.broker_field(b, "unclean"):
            for p, zp in enumerate(w.parts):
                if self.field(zp, "elr") >> b & 1:
                    w.set_part_field(p, "elr", self.field(zp, "elr") & ~bit(b))
            w.set_broker_field(b, "unclean", 0)

    # -- what it promises
    def extra_properties(self):  # type: ignore[no-untyped-def]
        return [Property("EligibleReplicasComplete", "always", self._complete, description=(
            "Every live member of a partition's ELR holds every acknowledged write."),
            explain=self._incomplete)]

    def _incomplete(self, s):  # type: ignore[no-untyped-def]
        out = []
        for p, zp in enumerate(s.zk.partitions):
            for b in members(self.field(zp, "elr")):
                br = s.brokers[b - 1]
                r = br.replicas[p]
                missing = s.ghost[p].acked & ~ids_in(r.log) if r is not None else s.ghost[p].acked
                if br.alive and missing:
                    out.append(f"partition {p}: ELR member {b} lacks acknowledged record(s) "
                               + ", ".join(f"m{i}" for i in range(missing.bit_length()) if missing >> i & 1))
        return "; ".join(out)

    def _complete(self, s):  # type: ignore[no-untyped-def]
        return not self._incomplete(s)
