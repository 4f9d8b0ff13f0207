"""A mutable working copy of one :class:`State`, used while a single action is applied.

Controller operations touch many parts of the state at once (ZooKeeper, the controller's
context, several inboxes); writing them against nested ``_replace`` calls would bury the protocol
under bookkeeping. An action thaws the state into a :class:`World`, edits it in plain Python and
freezes it back. Only the top-level containers are copied (lists of length brokers or
partitions); inner values stay shared immutable tuples, so there is no deep copy on the hot path.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .extension import Scope
from .records import ids_in
from .state import (
    FETCHING,
    UPDATE_METADATA,
    Broker,
    Controller,
    Ghost,
    LeaderAndIsr,
    Replica,
    Request,
    State,
    StopReplica,
    UpdateMetadata,
    ZkPartition,
    make_broker,
    make_controller,
    make_ghost,
    make_leader_and_isr,
    make_replica,
    make_state,
    make_zk,
    make_zk_partition,
)

if TYPE_CHECKING:
    from .protocol import Protocol


class ControllerWork:
    """The mutable mirror of a :class:`Controller`.

    Its per-partition fields stay tuples; the ``set_*`` methods replace the one that changes (they
    are short: one entry per partition, or per broker). So a field the action does not write is
    the original tuple when frozen, with no copy made, and the fingerprint and EpochsMonotonic
    recognise it by identity; a controller the action did not change is the original object.
    """

    __slots__ = ("base", "epoch", "live", "registrations", "partition_states", "replica_states",
                 "reassign_step", "reassign_old", "reassign_new", "shutting_down", "ext")

    def __init__(self, c: Controller) -> None:
        self.base = c
        self.epoch = c.epoch
        self.live = c.live
        self.registrations = c.registrations
        self.partition_states: tuple[int, ...] = c.partition_states
        self.replica_states: tuple[tuple[int, ...], ...] = c.replica_states
        self.reassign_step: tuple[int, ...] = c.reassign_step
        self.reassign_old: tuple[tuple[int, ...], ...] = c.reassign_old
        self.reassign_new: tuple[tuple[int, ...], ...] = c.reassign_new
        self.shutting_down = c.shutting_down
        self.ext: tuple[int, ...] = c.ext  # a variant's controller fields

    # the states are typed object, not int: the compiled build would turn an IntEnum member into a
    # plain int (equal, but it prints differently from the pure build's)
    def set_partition_state(self, p: int, state: object) -> None:
        if self.partition_states[p] != state:
            self.partition_states = _with(self.partition_states, p, state)

    def set_replica_state(self, p: int, b: int, state: object) -> None:
        row = self.replica_states[p]
        if row[b - 1] != state:
            self.replica_states = _with(self.replica_states, p, _with(row, b - 1, state))

    def set_reassign_step(self, p: int, step: object) -> None:
        if self.reassign_step[p] != step:
            self.reassign_step = _with(self.reassign_step, p, step)

    def set_reassignment(self, p: int, old: tuple[int, ...], new: tuple[int, ...]) -> None:
        """OAR and RAR of partition ``p`` (both () once it is over)."""
        if self.reassign_old[p] != old:
            self.reassign_old = _with(self.reassign_old, p, old)
        if self.reassign_new[p] != new:
            self.reassign_new = _with(self.reassign_new, p, new)

    def freeze(self) -> Controller:
        c = self.base
        if (self.epoch == c.epoch and self.live == c.live and self.registrations is c.registrations
                and self.partition_states is c.partition_states and self.replica_states is c.replica_states
                and self.reassign_step is c.reassign_step and self.reassign_old is c.reassign_old
                and self.reassign_new is c.reassign_new and self.shutting_down == c.shutting_down
                and self.ext is c.ext):
            return c
        return make_controller(self.epoch, self.live, self.registrations, self.partition_states,
                               self.replica_states, self.reassign_step, self.reassign_old, self.reassign_new,
                               self.shutting_down, self.ext)


def _with(items: tuple, i: int, value: object) -> tuple:
    """``items`` with entry ``i`` replaced."""
    changed = list(items)
    changed[i] = value
    return tuple(changed)


class World:
    """Everything one action may change, as plain mutable Python."""

    __slots__ = ("protocol", "base", "live", "registrations", "controller_epoch", "parts", "reassign",
                 "preferred", "deleting", "_active", "_stale", "stale_dropped", "brokers", "inbox",
                 "ghost", "budget", "reassignments")

    def __init__(self, protocol: Protocol, s: State) -> None:
        self.protocol = protocol
        self.base = s
        zk = s.zk
        self.live = zk.live
        self.registrations = zk.registrations
        self.controller_epoch = zk.controller_epoch
        # Containers stay the original tuples until first written (copy-on-write, see _writable).
        self.parts: list[ZkPartition] | tuple[ZkPartition, ...] = zk.partitions
        self.reassign: list[tuple[int, ...]] | tuple[tuple[int, ...], ...] = zk.reassign
        self.preferred = zk.preferred
        self.deleting = zk.deleting
        self._active: ControllerWork | None = None
        self._stale: ControllerWork | None = None
        self.stale_dropped = False
        self.brokers: list[Broker] | tuple[Broker, ...] = s.brokers
        self.inbox: list[tuple[Request, ...]] | tuple[tuple[Request, ...], ...] = s.inbox
        self.ghost: list[Ghost] | tuple[Ghost, ...] = s.ghost
        self.budget = s.budget
        self.reassignments = s.reassignments

    # ------------------------------------------------------------------ controllers
    def controller(self, epoch: int) -> ControllerWork | None:
        """The controller with this epoch, if it is still acting (active or stale)."""
        s = self.base
        if self._active is not None and self._active.epoch == epoch:
            return self._active
        if self._stale is not None and self._stale.epoch == epoch:
            return self._stale
        if self._active is None and s.controller.epoch == epoch:
            self._active = ControllerWork(s.controller)
            return self._active
        if (self._stale is None and not self.stale_dropped and s.stale is not None
                and s.stale.epoch == epoch):
            self._stale = ControllerWork(s.stale)
            return self._stale
        return None

    def replace_active(self, new: ControllerWork, keep_old_as_stale: bool) -> None:
        old = self._active or ControllerWork(self.base.controller)
        self._stale = old if keep_old_as_stale else None
        self.stale_dropped = not keep_old_as_stale
        self._active = new

    def drop_stale(self) -> None:
        self._stale = None
        self.stale_dropped = True

    # ------------------------------------------------------------------ writes
    def set_part(self, p: int, zp: ZkPartition) -> None:
        items = self.parts
        if isinstance(items, tuple):
            items = list(items)
            self.parts = items
        items[p] = zp

    def set_reassign(self, p: int, target: tuple[int, ...]) -> None:
        items = self.reassign
        if isinstance(items, tuple):
            items = list(items)
            self.reassign = items
        items[p] = target

    def set_broker(self, i: int, br: Broker) -> None:
        items = self.brokers
        if isinstance(items, tuple):
            items = list(items)
            self.brokers = items
        items[i] = br

    def set_inbox(self, i: int, queue: tuple[Request, ...]) -> None:
        items = self.inbox
        if isinstance(items, tuple):
            items = list(items)
            self.inbox = items
        items[i] = queue

    def set_ghost(self, p: int, g: Ghost) -> None:
        items = self.ghost
        if isinstance(items, tuple):
            items = list(items)
            self.ghost = items
        items[p] = g

    # ------------------------------------------------------------------ brokers
    def alive(self, b: int) -> bool:
        return self.brokers[b - 1].alive

    def replica(self, b: int, p: int) -> Replica | None:
        return self.brokers[b - 1].replicas[p]

    def set_replica(self, b: int, p: int, r: Replica | None) -> None:
        br = self.brokers[b - 1]
        reps = br.replicas
        if len(reps) == 1:
            changed: tuple[Replica | None, ...] = (r,)
        else:
            items = list(reps)
            items[p] = r
            changed = tuple(items)
        self.set_broker(b - 1, make_broker(br.alive, br.controller_epoch, changed, br.ext))

    # ------------------------------------------------------------------ a variant's fields
    # (model/extension.py) Reads and writes by name, for the hooks of a variant that adds effects
    # (``Protocol.on_*``, ``extra_apply``); decisions return their writes instead (IsrChange).
    def part_field(self, p: int, name: str) -> int:
        return self.protocol.extension.get(Scope.PARTITION, self.parts[p].ext, name)

    def set_part_field(self, p: int, name: str, value: int) -> None:
        zp = self.parts[p]
        ext = self.protocol.extension.with_value(Scope.PARTITION, zp.ext, name, value)
        if ext is not zp.ext:
            self.set_part(p, make_zk_partition(zp.replicas, zp.leader, zp.isr, zp.leader_epoch, zp.version,
                                               zp.controller_epoch, ext))

    def replica_field(self, b: int, p: int, name: str) -> int:
        r = self.replica(b, p)
        if r is None:
            raise ValueError(f"broker {b} hosts no replica of partition {p}")
        return self.protocol.extension.get(Scope.REPLICA, r.ext, name)

    def set_replica_field(self, b: int, p: int, name: str, value: int) -> None:
        r = self.replica(b, p)
        if r is None:
            raise ValueError(f"broker {b} hosts no replica of partition {p}")
        ext = self.protocol.extension.with_value(Scope.REPLICA, r.ext, name, value)
        if ext is not r.ext:
            self.set_replica(b, p, make_replica(r.log, r.hw, r.checkpoint, r.leader, r.leader_epoch, r.isr,
                                                r.zk_version, r.remote_leo, r.pending, r.assigned, r.epochs,
                                                r.fetch_state, r.answer, ext))

    def broker_field(self, b: int, name: str) -> int:
        return self.protocol.extension.get(Scope.BROKER, self.brokers[b - 1].ext, name)

    def set_broker_field(self, b: int, name: str, value: int) -> None:
        br = self.brokers[b - 1]
        ext = self.protocol.extension.with_value(Scope.BROKER, br.ext, name, value)
        if ext is not br.ext:
            self.set_broker(b - 1, make_broker(br.alive, br.controller_epoch, br.replicas, ext))

    def controller_field(self, c: ControllerWork, name: str) -> int:
        return self.protocol.extension.get(Scope.CONTROLLER, c.ext, name)

    def set_controller_field(self, c: ControllerWork, name: str, value: int) -> None:
        c.ext = self.protocol.extension.with_value(Scope.CONTROLLER, c.ext, name, value)

    def fresh_replica(self) -> Replica:
        """A replica just created by LeaderAndIsr (startReplica), the variant's fields initial."""
        return fresh_replica(len(self.brokers), self.protocol.extension.initial(Scope.REPLICA))

    def empty_zk_partition(self) -> ZkPartition:
        """A partition znode removed (topic deletion), the variant's fields initial."""
        return empty_zk_partition(self.protocol.extension.initial(Scope.PARTITION))

    def send(self, b: int, request: Request) -> None:
        """Queue a controller request for broker ``b``; a dead broker's connection drops it.

        An UpdateMetadata is not queued behind a request of the same controller epoch: its only
        effect on a broker (raising the controller epoch it has seen) is already on its way. This
        holds per controller too (``controller_connections = "per-controller"``): the queued requests
        of one epoch are one controller's, on one connection that stays in order, so the earlier one
        still arrives first and raises the broker's epoch just as the UpdateMetadata would (or is
        rejected where it would be). Only a budgeted delayed delivery, which the UpdateMetadata
        would need to overtake a request of its own controller, is given up, as with one queue.
        Where brokers keep a metadata cache (``metadata_cache``) an UpdateMetadata also carries the
        live brokers, so only the same request already queued makes it redundant. The request
        carries the epoch ``Protocol.request_epoch`` stamps on it.
        """
        if not self.brokers[b - 1].alive:
            return
        stamp = self.protocol.request_epoch(self, request[1])
        if stamp != request[1]:
            request = request._replace(controller_epoch=stamp)
        queue = self.inbox[b - 1]
        if request[0] == UPDATE_METADATA:
            # Its epoch is on its way already; with a metadata cache, only the same request is
            # (its content, ``metadata``, tells the broker who is alive).
            content = self.protocol.metadata_carries_live
            for q in queue:
                if q[1] == request[1] and (not content or q == request):
                    return
        self.set_inbox(b - 1, queue + (request,))

    def leader_and_isr(self, epoch: int, p: int, assignment: tuple[int, ...]) -> LeaderAndIsr:
        zp = self.parts[p]
        return make_leader_and_isr(epoch, p, zp.leader, zp.isr, zp.leader_epoch, zp.version, assignment)

    # ------------------------------------------------------------------ ghost
    def expose(self, p: int, log: tuple[int, ...], hw: int) -> None:
        """A leader made ``log[:hw]`` readable: extend the longest exposed prefix if it agrees."""
        g = self.ghost[p]
        visible = log[:hw]
        if len(visible) > len(g.exposed) and visible[: len(g.exposed)] == g.exposed:
            self.set_ghost(p, make_ghost(g.produced, g.acked, visible, g.reassign_origin))

    def acknowledge(self, p: int, ids: int) -> None:
        if ids:
            g = self.ghost[p]
            self.set_ghost(p, make_ghost(g.produced, g.acked | ids, g.exposed, g.reassign_origin))

    # ------------------------------------------------------------------ freeze
    def freeze(self) -> State:
        """Back to an immutable State. Parts never written are the original objects, which keeps
        freezing cheap and lets later comparisons (EpochsMonotonic) skip them by identity."""
        s = self.base
        zk = s.zk
        parts, reassign = self.parts, self.reassign
        if (type(parts) is list or type(reassign) is list or self.live != zk.live
                or self.registrations is not zk.registrations or self.controller_epoch != zk.controller_epoch
                or self.preferred != zk.preferred or self.deleting != zk.deleting):
            zk = make_zk(self.live, self.registrations, self.controller_epoch, tuple(parts),
                    tuple(reassign), self.preferred, self.deleting)
        active = self._active.freeze() if self._active is not None else s.controller
        if self._stale is not None:
            stale: Controller | None = self._stale.freeze()
        elif self.stale_dropped:
            stale = None
        else:
            stale = s.stale
        return make_state(zk, active, stale, tuple(self.brokers), tuple(self.inbox), tuple(self.ghost),
                     self.budget, self.reassignments)


def fresh_replica(brokers: int, ext: tuple[int, ...] = ()) -> Replica:
    """A replica just created by LeaderAndIsr: an empty log, no role yet (``ext``: a variant's
    replica fields; the symbolic encodings, which run the model's own protocol, use none)."""
    return make_replica((), 0, 0, 0, -1, 0, 0, (), 0, 0, (), FETCHING, (), ext)


def empty_zk_partition(ext: tuple[int, ...] = ()) -> ZkPartition:
    """A partition without a znode (deleted, or not created yet)."""
    return make_zk_partition((), 0, 0, 0, 0, 0, ext)


def acked_missing(log: tuple[int, ...], ghost: Ghost) -> int:
    """Acknowledged record ids that ``log`` does not hold."""
    return ghost.acked & ~ids_in(log)


__all__ = ["World", "ControllerWork", "fresh_replica", "empty_zk_partition", "acked_missing",
           "StopReplica", "UpdateMetadata", "Broker"]
