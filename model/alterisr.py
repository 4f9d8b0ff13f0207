"""Asynchronous ISR changes through the controller (KIP-497's AlterIsr, Kafka 2.7+), as a protocol.

Up to 2.6 a leader changed its ISR by its own conditional write of the leader/ISR znode (the model's
rule, model/broker.py ``write_isr``). From 2.7 it asks the controller instead, and the controller,
the only writer of that znode, applies the change and answers. The configuration key
``isr_change = "alter-isr"`` selects this protocol (specs/05-replication.md, "AlterIsr"); like a
designer's variant it is a :class:`~.protocol.Protocol` subclass with state of its own and three
actions, so the model's steps are unchanged and every other option combines with it.

The leader's side (Kafka's Partition and its AlterIsr manager), per replica it leads:

- ``alter_pending``: the ISR it proposed and waits for (0: its ISR is committed). While a change is
  pending it proposes no other, and its high watermark counts the larger of the two sets (the
  committed ISR, plus the member a pending expansion adds), so nothing commits on a promise.
- ``alter_queued``: its AlterIsr manager holds an item for the partition (one at a time: a change
  is not proposed while an item is held, and the item goes when its answer is handled).
- ``alter_sent``, ``alter_sent_epoch``, ``alter_sent_version``: the request in flight to the
  controller (the ISR asked for, the leader epoch and the znode version it was based on); the model
  has no channel from brokers to the controller, so the request is kept here, one per partition.
- ``alter_added``, ``alter_added_epoch``: the member an expansion in flight adds and its broker
  epoch (its registration count) when its fetch qualified it (KIP-903).
- ``alter_answer`` (0: none, 1: applied, 2: refused, 3: known not applied) and
  ``alter_answer_version``: the controller's answer, waiting to be handled.

None of these survive a crash (a restarted broker starts with an empty manager; its connection and
anything in flight on it are gone).

The steps: the leader's ShrinkIsr and its expansion on a fetch propose (:meth:`propose_isr`);
``ExpireIsrMember(b, p, f)``, the leader proposes removing an ISR member whose broker is down: a
follower that stopped fetching always outlives the lag time, so this removal is weakly fair and
unbudgeted (a live follower's removal stays the budgeted fault ShrinkIsr). The controller's own
removal at the broker failure does not make it needless: an expansion the leader proposed before
the failure may reach the controller after it, putting the dead member back.
``HandleAlterIsr(b, p)``, the active controller applies the request (:meth:`alter_isr_decision`);
``CompleteAlterIsr(b, p)``, the leader handles the answer: it drops the manager's item and, when
the answer is for the change it is still waiting for, with its leader epoch and no older znode
version, takes the ISR and version and recomputes its high watermark. A LeaderAndIsr makes the
ISR it carries the committed one, cancelling a pending change (the answer, when it comes, is
ignored as out of date). ``AlterIsrAnswerLost(b, p)`` (budget ``faults.lost_isr_answers``) is the
controller applying a request whose answer the leader never receives: its channel sends the same
request again.

The decisions KAFKA-12686, 13091, 14144 and 14139 made differently are hooks here
(:meth:`leader_and_isr_clears_queued`, :meth:`recomputes_hw_on_answer`,
:meth:`alter_isr_decision`, :meth:`checks_broker_epochs`); model/history.py puts their pre-fix
rules back.
"""
from __future__ import annotations

from enum import Enum
from typing import Any

from .brokersets import members
from .extension import Field, Kind, Scope
from .protocol import Protocol, VariantAction, WorldView
from .state import LeaderAndIsr, Replica, ZkPartition, make_replica, make_zk_partition

PENDING = "alter_pending"
QUEUED = "alter_queued"
SENT = "alter_sent"
SENT_EPOCH = "alter_sent_epoch"
SENT_VERSION = "alter_sent_version"
ANSWER = "alter_answer"
ANSWER_VERSION = "alter_answer_version"
ADDED = "alter_added"
ADDED_EPOCH = "alter_added_epoch"

#: answers: none yet; applied; refused (the leader keeps waiting for a LeaderAndIsr); refused with the
#: request known not applied (INELIGIBLE_REPLICA: the leader goes back to its committed ISR)
ANSWER_NONE, ANSWER_APPLIED, ANSWER_REFUSED, ANSWER_NOT_APPLIED = 0, 1, 2, 3


class Decision(Enum):
    """What the controller does with an AlterIsr request."""

    WRITE = "write"  # it writes the requested ISR (znode version + 1) and answers with it
    ALREADY = "already"  # the znode already holds exactly what was asked: it answers with the znode
    FENCED = "fenced"  # the request's leader epoch is older than the znode's: FENCED_LEADER_EPOCH
    STALE_VERSION = "stale-version"  # the znode version moved on: INVALID_UPDATE_VERSION
    INELIGIBLE = "ineligible"  # the member it adds is down or registered again since: INELIGIBLE_REPLICA


def _replica_with(r: Replica, ext: tuple[int, ...], isr: int | None = None, zk_version: int | None = None) -> Replica:
    return make_replica(r.log, r.hw, r.checkpoint, r.leader, r.leader_epoch, r.isr if isr is None else isr,
                        r.zk_version if zk_version is None else zk_version, r.remote_leo, r.pending, r.assigned,
                        r.epochs, r.fetch_state, r.answer, ext)


class AlterIsr(Protocol):
    """ISR changes as requests the controller applies (KIP-497), selected by ``isr_change = "alter-isr"``."""

    fields = (
        Field(PENDING, Scope.REPLICA, Kind.BROKERS, persistent=False,
              doc="AlterIsr: the ISR the leader proposed and waits for (0: committed)"),
        Field(QUEUED, Scope.REPLICA, Kind.BOOL, persistent=False,
              doc="AlterIsr: the leader's AlterIsr manager holds an item for the partition"),
        Field(SENT, Scope.REPLICA, Kind.BROKERS, persistent=False,
              doc="AlterIsr: the ISR of the request in flight to the controller (0: none)"),
        Field(SENT_EPOCH, Scope.REPLICA, Kind.INT, persistent=False,
              doc="AlterIsr: the leader epoch the request in flight carries"),
        Field(SENT_VERSION, Scope.REPLICA, Kind.INT, persistent=False,
              doc="AlterIsr: the znode version the request in flight is based on"),
        Field(ADDED, Scope.REPLICA, Kind.BROKER, persistent=False,
              doc="AlterIsr: the member the request in flight adds (0: a shrink)"),
        Field(ADDED_EPOCH, Scope.REPLICA, Kind.INT, persistent=False,
              doc="AlterIsr: that member's broker epoch (registration count) at its fetch (KIP-903)"),
        Field(ANSWER, Scope.REPLICA, Kind.INT, persistent=False,
              doc="AlterIsr: the controller's answer, not handled yet (0 none, 1 applied, 2 refused, 3 not applied)"),
        Field(ANSWER_VERSION, Scope.REPLICA, Kind.INT, persistent=False,
              doc="AlterIsr: the znode version an applied answer carries"),
    )
    actions = (
        VariantAction("HandleAlterIsr", ("broker", "partition"), fair=True,
                      doc="the controller handles broker b's AlterIsr request for partition p"),
        VariantAction("CompleteAlterIsr", ("broker", "partition"), fair=True,
                      doc="broker b handles the controller's answer to its AlterIsr for partition p"),
        VariantAction("ExpireIsrMember", ("broker", "partition", "broker"), fair=True,
                      doc="leader b proposes removing ISR member f of p, whose broker is down, once the lag time passed"),
        VariantAction("AlterIsrAnswerLost", ("broker", "partition"), fair=False,
                      doc="the controller applies broker b's AlterIsr for p; the answer is lost and the request resent"),
    )

    # ------------------------------------------------------------------ the decisions
    def leader_and_isr_clears_queued(self) -> bool:
        """Whether applying a LeaderAndIsr also drops the manager's item for the partition, even
        one whose request is in flight (before 3.0, KAFKA-12686); from 3.0 it never does."""
        return False

    def recomputes_hw_on_answer(self) -> bool:
        """Whether the leader recomputes its high watermark when an applied answer shrinks its ISR
        (3.1 on, KAFKA-13091's fix): a shrink may be what the high watermark was waiting for."""
        return True

    def checks_broker_epochs(self) -> bool:
        """Whether the controller refuses an expansion whose new member is not registered, or
        registered again since the fetch that qualified it (KIP-841 and KIP-903, KAFKA-14139's fix:
        the fetch carries the follower's broker epoch and the request carries it on). The broker
        epoch is the registration count, which the model tracks with ``detect_restarts``; without
        it every epoch reads 0 and only the registration itself is checked."""
        return True

    def alter_isr_decision(self, zp: ZkPartition, leader: int, isr: int, epoch: int, version: int) -> Decision:
        """What the controller does with ``leader``'s request for ISR ``isr`` at leader epoch
        ``epoch``, based on znode version ``version``, given the znode ``zp``. It fences an older
        leader epoch; a request whose content the znode already holds (its earlier copy was applied)
        succeeds with the znode as it is; otherwise the znode version must match (KAFKA-14144's
        fix compares the content before the version)."""
        if epoch < zp.leader_epoch:
            return Decision.FENCED
        if zp.leader == leader and zp.isr == isr and zp.leader_epoch == epoch:
            return Decision.ALREADY
        if zp.version != version:
            return Decision.STALE_VERSION
        return Decision.WRITE

    # ------------------------------------------------------------------ the leader proposes
    def isr_write_succeeds(self, znode_version: int, cached_version: int) -> bool:
        return True  # the leader writes nothing itself: the controller checks the version

    def _busy(self, r: Replica) -> bool:
        return bool(self.field(r, PENDING) or self.field(r, QUEUED))

    def may_shrink_isr(self, leader_replica: Replica, follower: int, new_isr: int) -> bool:
        return not self._busy(leader_replica) and super().may_shrink_isr(leader_replica, follower, new_isr)

    def may_expand_isr(self, leader_replica: Replica, follower: int, fetch_offset: int, new_isr: int) -> bool:
        return not self._busy(leader_replica) and super().may_expand_isr(leader_replica, follower, fetch_offset,
                                                                          new_isr)

    def propose_isr(self, w: WorldView, leader: int, p: int, r: Replica, new_isr: int) -> Replica | None:
        ext = self.extension
        fields = ext.with_value(Scope.REPLICA, r.ext, PENDING, new_isr)
        fields = ext.with_value(Scope.REPLICA, fields, QUEUED, 1)
        if not self.field(r, SENT):  # nothing in flight: the manager sends the item at once
            fields = ext.with_value(Scope.REPLICA, fields, SENT, new_isr)
            fields = ext.with_value(Scope.REPLICA, fields, SENT_EPOCH, r.leader_epoch)
            fields = ext.with_value(Scope.REPLICA, fields, SENT_VERSION, r.zk_version)
            added = new_isr & ~r.isr
            member = added.bit_length() - 1 if added else 0
            registrations: tuple[int, ...] = getattr(w, "registrations")
            fields = ext.with_value(Scope.REPLICA, fields, ADDED, member)
            fields = ext.with_value(Scope.REPLICA, fields, ADDED_EPOCH, registrations[member - 1] if member else 0)
        return _replica_with(r, fields)

    def high_watermark(self, w: WorldView, leader: int, p: int, r: Replica) -> int:
        pending = self.field(r, PENDING)
        if not pending:
            return super().high_watermark(w, leader, p, r)
        hw = len(r.log)  # the maximal ISR: a pending expansion's new member counts already
        for m in members(r.isr | pending):
            if m != leader and r.remote_leo[m - 1] < hw:
                hw = r.remote_leo[m - 1]
        return hw

    # ------------------------------------------------------------------ a LeaderAndIsr commits its ISR
    def _committed(self, r: Replica) -> Replica:
        fields = self.extension.with_value(Scope.REPLICA, r.ext, PENDING, 0)
        if self.leader_and_isr_clears_queued():
            fields = self.extension.with_value(Scope.REPLICA, fields, QUEUED, 0)
        return _replica_with(r, fields)

    def become_leader(self, w: WorldView, b: int, p: int, r: Replica, req: LeaderAndIsr) -> Replica:
        return self._committed(super().become_leader(w, b, p, r, req))

    def become_follower(self, w: WorldView, b: int, p: int, r: Replica, req: LeaderAndIsr) -> Replica:
        return self._committed(super().become_follower(w, b, p, r, req))

    # ------------------------------------------------------------------ the controller and the answer
    def extra_enabled(self, state: Any) -> list[Any]:
        from .actions import make_action

        out = list(super().extra_enabled(state))
        lost = state.budget.lost_isr_answers
        brokers = state.brokers
        for i, br in enumerate(brokers):
            b = i + 1
            for p, r in enumerate(br.replicas):
                if r is None:
                    continue
                if br.alive and r.leader == b and not self._busy(r):
                    for f in members(r.isr):
                        if f != b and not brokers[f - 1].alive and self.may_shrink_isr(r, f, r.isr & ~(1 << f)):
                            out.append(make_action("ExpireIsrMember", (b, p, f)))
                if not self.field(r, SENT):
                    continue
                if not self.field(r, ANSWER):
                    out.append(make_action("HandleAlterIsr", (b, p)))
                    zk = state.zk
                    if lost and self._decide(zk.partitions[p], zk.live, zk.registrations, b, r) is Decision.WRITE:
                        out.append(make_action("AlterIsrAnswerLost", (b, p)))
                elif br.alive:
                    out.append(make_action("CompleteAlterIsr", (b, p)))
        return out

    def _decide(self, zp: ZkPartition, live: int, registrations: tuple[int, ...], b: int, r: Replica) -> Decision:
        decision = self.alter_isr_decision(zp, b, self.field(r, SENT), self.field(r, SENT_EPOCH),
                                           self.field(r, SENT_VERSION))
        added = self.field(r, ADDED)
        if (decision is Decision.WRITE and added and self.checks_broker_epochs()
                and (not live >> added & 1 or registrations[added - 1] != self.field(r, ADDED_EPOCH))):
            return Decision.INELIGIBLE
        return decision

    def extra_apply(self, w: Any, action: Any) -> None:
        name = action.name
        if name == "HandleAlterIsr":
            b, p = action.args
            self._handle(w, b, p, answered=True)
        elif name == "AlterIsrAnswerLost":
            from .state import Budget, budget_with

            i = Budget._fields.index("lost_isr_answers")
            w.budget = budget_with(w.budget, i, w.budget[i] - 1)
            b, p = action.args
            self._handle(w, b, p, answered=False)
        elif name == "CompleteAlterIsr":
            self._complete(w, *action.args)
        elif name == "ExpireIsrMember":
            from .broker import shrink_isr

            leader, p, f = action.args
            shrink_isr(w, leader, p, f)
        else:
            super().extra_apply(w, action)

    def _handle(self, w: Any, b: int, p: int, answered: bool) -> None:
        """The active controller applies broker ``b``'s request for ``p``; ``answered``: the answer
        reaches the broker (else the request stays in flight, to be sent again)."""
        r = w.replica(b, p)
        zp = w.parts[p]
        decision = self._decide(zp, w.live, w.registrations, b, r)
        version = zp.version
        if decision is Decision.WRITE:
            c = w.controller(w.controller_epoch)
            version = zp.version + 1
            w.set_part(p, make_zk_partition(zp.replicas, b, self.field(r, SENT), zp.leader_epoch, version,
                                            w.controller_epoch, zp.ext))
            if c is not None:
                self.on_controller_write(w, c, p)
        if not answered:
            return
        if decision is Decision.INELIGIBLE:
            answer = ANSWER_NOT_APPLIED
        elif decision is Decision.FENCED or decision is Decision.STALE_VERSION:
            answer = ANSWER_REFUSED
        else:
            answer = ANSWER_APPLIED
        w.set_replica_field(b, p, ANSWER, answer)
        w.set_replica_field(b, p, ANSWER_VERSION, version if answer == ANSWER_APPLIED else 0)

    def _complete(self, w: Any, b: int, p: int) -> None:
        """Broker ``b`` handles the answer for ``p``: the manager drops its item (whatever item it
        holds for the partition now), then the answer is applied if it is for the pending change."""
        from .broker import advance_hw

        r = w.replica(b, p)
        sent, epoch = self.field(r, SENT), self.field(r, SENT_EPOCH)
        answer, version = self.field(r, ANSWER), self.field(r, ANSWER_VERSION)
        ext = self.extension
        fields = r.ext
        for name in (QUEUED, SENT, SENT_EPOCH, SENT_VERSION, ADDED, ADDED_EPOCH, ANSWER, ANSWER_VERSION):
            fields = ext.with_value(Scope.REPLICA, fields, name, 0)
        r = _replica_with(r, fields)
        current = self.field(r, PENDING) == sent and r.leader == b
        if current and answer == ANSWER_NOT_APPLIED:  # known not applied: back to the committed ISR
            w.set_replica(b, p, _replica_with(r, ext.with_value(Scope.REPLICA, r.ext, PENDING, 0)))
            return
        if (not current or answer != ANSWER_APPLIED or r.leader_epoch != epoch
                or version < r.zk_version):
            w.set_replica(b, p, r)  # out of date, refused or fenced: the leader waits for a LeaderAndIsr
            return
        r = _replica_with(r, ext.with_value(Scope.REPLICA, r.ext, PENDING, 0), isr=sent, zk_version=version)
        w.set_replica(b, p, advance_hw(w, b, p, r) if self.recomputes_hw_on_answer() else r)


__all__ = ["AlterIsr", "Decision"]
