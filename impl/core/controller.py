"""The controller as a sans-IO state machine (specs/04-controller.md, specs/02-state-machines.md).

``ControllerCore.handle(input) -> list[effect]``. Inputs are :class:`~.messages.Command` (start,
or an operation named as in the action vocabulary), :class:`~.messages.StoreResult`,
:class:`~.messages.Notification`, :class:`~.messages.Receive` and :class:`~.messages.Timer`;
effects are :class:`~.messages.StoreOp`, :class:`~.messages.Send`, :class:`~.messages.SetTimer` and
:class:`~.messages.Stop`. The core performs no I/O.

**Election.** A candidate creates the ephemeral ``/controller`` znode; the winner raises
``/controller_epoch`` by a conditional write and initialises (failover). A loser watches
``/controller`` and tries again when it disappears. A controller whose store session ends stops
acting (``Notification("expired")``) and, autonomous, stands again on the new session
(:class:`~.messages.SessionRenewed`), where it wins only with a higher epoch.

**Operations are transactions.** Like the 0.8 controller, the core handles one event at a time. Each
operation reads a :class:`~.layout.Snapshot` of the store, runs the protocol on a working copy of the
controller's context (:class:`Context`) and of the snapshot (:class:`Tx`), and commits every znode
write of the operation as one ``multi`` whose writes are conditional on the versions it read. If
another writer got in between (a leader's ISR change), the multi fails, the working copy is thrown
away and the operation runs again on a fresh snapshot. Only after the commit does the context change
and do the requests go out. The check of the leader/ISR znode's controller epoch (the 0.8 fencing)
is made on the snapshot, and the version condition makes it atomic.

**Two modes.** Driven step by step (``autonomous=False``, the simulator's action mode) the core does
only what it is told: ``Command("ProcessBrokerChange")``, ``Command("ReassignPartition", (p,))``, ...
Each returns, in :attr:`ControllerCore.last_status`, ``"done"`` or ``"not-enabled: ..."`` when the
action's guard does not hold. Autonomous (the real cluster, the simulator's scheduler), it reacts to
watches and a re-check timer by running every enabled operation (:meth:`enabled_commands`).
"""
from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

from isrcheck.specs.protocol import REASSIGNMENT_STEPS, step_number

from . import layout as L
from . import selectors as S
from . import tables as T
from .config import ImplConfig
from .messages import (Command, ControlledShutdownRequest, ControlledShutdownResponse, LeaderAndIsr,
                       Notification, Receive, Send, SessionRenewed, SetTimer, Stop, StopReplica,
                       StopReplicaResponse, StoreOp, StoreResult, Timer, UpdateMetadata, broker)
from .store import BadVersion, Check, Create, Delete, NodeExists, NoNode, SetData, TransactionFailed

DONE = "done"
NOT_ENABLED = "not-enabled"
MAX_ATTEMPTS = 50

#: commands that name controller operations (the controller actions of specs/actions.toml)
OPERATIONS = ("ProcessBrokerChange", "CreateTopic", "ReassignPartition", "ElectPreferredLeader",
              "StartTopicDeletion", "CompleteTopicDeletion", "ControlledShutdown", "ResignController")

DELETION_STATES = (T.DELETION_STARTED, T.DELETION_SUCCESSFUL, T.DELETION_INELIGIBLE)

# The reassignment steps this module names, numbered by specs/protocol.toml (step n is
# REASSIGNMENT_STEPS[n - 1]).
STEP_START = step_number("start")
STEP_CAUGHT_UP = step_number("caught-up")
STEP_AR_IN_MEMORY = step_number("ar-in-memory")
LAST_STEP = len(REASSIGNMENT_STEPS)


class NotEnabled(Exception):
    """An operation whose guard does not hold (only raised to the driver in step mode)."""


@dataclass
class Reassignment:
    """Progress of one partition's reassignment: the next step to perform (its number), OAR and RAR."""

    step: int
    oar: tuple[int, ...] = ()
    rar: tuple[int, ...] = ()


@dataclass
class Context:
    """The controller's in-memory context (rebuilt from the store at every election)."""

    live: frozenset[int] = frozenset()
    czxids: dict[int, int] = field(default_factory=dict)
    partitions: T.StateMachine[int] = field(default_factory=T.partition_machine)
    replicas: T.StateMachine[tuple[int, int]] = field(default_factory=T.replica_machine)
    reassign: dict[int, Reassignment] = field(default_factory=dict)
    shutting_down: frozenset[int] = frozenset()

    def copy(self) -> Context:
        return Context(self.live, dict(self.czxids), self.partitions.copy(), self.replicas.copy(),
                       {p: Reassignment(r.step, r.oar, r.rar) for p, r in self.reassign.items()},
                       self.shutting_down)


class Tx:
    """One operation's working copy: the context, the snapshot, the writes and the requests."""

    def __init__(self, core: ControllerCore, snap: L.Snapshot) -> None:
        self.cfg = core.cfg
        self.topic = core.cfg.topic
        self.epoch = core.epoch
        self.ctx = core.ctx.copy()
        self.snap = snap
        self.ops: list[Any] = []
        self.sends: list[Send] = []
        self.nparts = max(core.cfg.partitions, max(snap.partitions, default=-1) + 1)
        # Kafka 2.1+: a deposed controller's writes all fail (they are tied to the epoch znode)
        self.fenced = core.cfg.fenced_controller_writes and snap.controller_epoch != core.epoch

    # ------------------------------------------------------------------ views
    def exists(self, p: int) -> bool:
        return self.snap.part(p).exists

    def deleting(self, p: int) -> bool:
        return p in self.snap.deleting

    def electable(self, p: int) -> bool:
        return self.exists(p) and not self.deleting(p)

    def assignment(self, p: int) -> tuple[int, ...]:
        """ZooKeeper's AR, except RAR once reassignment step ar-in-memory set it in memory."""
        r = self.ctx.reassign.get(p)
        if r is not None and r.step > STEP_AR_IN_MEMORY:
            return r.rar
        return self.snap.part(p).replicas

    def live_in(self, brokers: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(b for b in brokers if b in self.ctx.live)

    # ------------------------------------------------------------------ requests
    def send(self, b: int, msg: Any) -> None:
        self.sends.append(Send(broker(b), msg))

    def leader_and_isr(self, p: int) -> LeaderAndIsr:
        pz = self.snap.part(p)
        st = pz.state
        assert st is not None
        return LeaderAndIsr(self.epoch, p, st.leader, tuple(sorted(st.isr)), st.leader_epoch, pz.state_version,
                            self.assignment(p), st.controller_epoch)

    def send_leader_and_isr(self, p: int, to: tuple[int, ...]) -> None:
        req = self.leader_and_isr(p)
        for b in to:
            if b in self.ctx.live:
                self.send(b, req)

    def metadata(self) -> UpdateMetadata:
        parts = []
        for p in range(self.nparts):
            pz = self.snap.part(p)
            if pz.exists and pz.state is not None:
                parts.append((p, pz.state.leader, pz.state.leader_epoch, tuple(sorted(pz.state.isr))))
        return UpdateMetadata(self.epoch, tuple(sorted(self.ctx.live)), tuple(parts))

    def broadcast_metadata(self) -> None:
        md = self.metadata()
        for b in sorted(self.ctx.live):
            self.send(b, md)

    # ------------------------------------------------------------------ writes
    def write_leader_isr(self, p: int, leader: int, isr: frozenset[int] | tuple[int, ...]) -> bool:
        """Check-then-write of the leader/ISR znode with leader epoch + 1; False when fenced."""
        pz = self.snap.part(p)
        old = pz.state
        if old is not None and old.controller_epoch > self.epoch:
            return False  # a newer controller wrote this znode
        if self.fenced:
            return False
        new = L.LeaderIsr(leader, tuple(sorted(isr)), (old.leader_epoch if old else 0) + 1, self.epoch)
        if old is None:
            self.ops.append(Create(L.state_path(self.topic, p), new.encode()))
        else:
            self.ops.append(SetData(L.state_path(self.topic, p), new.encode(), pz.state_version))
        pz.state = new
        pz.state_version += 1
        return True

    def create_leader_isr(self, p: int, leader: int, isr: tuple[int, ...]) -> None:
        pz = self.snap.part(p)
        new = L.LeaderIsr(leader, tuple(sorted(isr)), 0, self.epoch)
        self.ops.append(Create(L.state_path(self.topic, p), new.encode()))
        pz.state = new
        pz.state_version = 0

    def write_assignment(self, p: int, replicas: tuple[int, ...]) -> None:
        pz = self.snap.part(p)
        self.ops.append(SetData(L.partition_path(self.topic, p), L.encode({"replicas": list(replicas)}),
                                pz.ar_version))
        pz.replicas = tuple(replicas)
        pz.ar_version += 1

    def drop_reassignment_request(self, p: int) -> None:
        if p in self.snap.reassign:
            self.ops.append(Delete(L.reassign_path(self.topic, p)))
            del self.snap.reassign[p]

    def drop_preferred_request(self, p: int) -> None:
        if p in self.snap.preferred:
            self.ops.append(Delete(L.preferred_path(self.topic, p)))
            self.snap.preferred.discard(p)

    def remove_partition(self, p: int) -> None:
        pz = self.snap.part(p)
        if pz.state is not None:
            self.ops.append(Delete(L.state_path(self.topic, p)))
        if pz.exists or pz.ar_version >= 0:
            self.ops.append(Delete(L.partition_path(self.topic, p)))
        self.snap.partitions[p] = L.PartitionZnodes()

    # ------------------------------------------------------------------ partition state machine
    def partition_to(self, p: int, target: str, selector: S.LeaderSelector | None = None) -> bool:
        source = self.ctx.partitions.check(p, target)
        if target == T.ONLINE_PARTITION:
            ok = self._initialize(p) if source == T.NEW_PARTITION else self._elect(p, selector or S.OFFLINE)
            if not ok:
                return False
        self.ctx.partitions.move(p, target)
        return True

    def _initialize(self, p: int) -> bool:
        """New -> Online: leader = first live replica of AR, ISR = the live replicas."""
        live = self.live_in(self.assignment(p))
        if not live:
            return False
        if self.snap.part(p).state is not None or self.fenced:
            return False  # another controller created the znode first
        self.create_leader_isr(p, live[0], live)
        self.send_leader_and_isr(p, live)
        self.broadcast_metadata()
        return True

    def _elect(self, p: int, selector: S.LeaderSelector) -> bool:
        pz = self.snap.part(p)
        st = pz.state
        r = self.ctx.reassign.get(p)
        view = S.PartitionView(
            assignment=self.assignment(p), leader=st.leader if st else 0,
            isr=frozenset(st.isr) if st else frozenset(), live=self.ctx.live,
            shutting_down=self.ctx.shutting_down, target=r.rar if r else (),
            unclean=self.cfg.unclean_leader_election)
        try:
            d = selector.select(view)
        except S.NoEligibleLeader:
            return False
        if not self.write_leader_isr(p, d.leader, d.isr):
            return False
        self.send_leader_and_isr(p, d.receivers)
        self.broadcast_metadata()
        return True

    # ------------------------------------------------------------------ replica state machine
    def replica_to(self, p: int, b: int, target: str) -> bool:
        source = self.ctx.replicas.check((p, b), target)
        st = self.snap.part(p).state
        if target == T.NEW_REPLICA:
            if st is not None and st.leader == b:
                return False  # a leader cannot be a new replica
            if st is not None:
                self.send_leader_and_isr(p, (b,))
        elif target == T.ONLINE_REPLICA:
            if source != T.NEW_REPLICA and st is not None:
                self.send_leader_and_isr(p, (b,))
        elif target == T.OFFLINE_REPLICA:
            if b in self.ctx.live or b in self.snap.registered:
                self.send(b, StopReplica(self.epoch, p, False))
            # else: a broker neither registered nor in this controller's view (its failure handled, the
            # connection closed) gets nothing; only a running broker whose session expired is there
            # (specs/05-replication.md, "Session expiry"), a stopped one would lose the request anyway
            if not self._remove_from_isr(p, b):
                return False
        elif target == T.DELETION_STARTED:
            self.send(b, StopReplica(self.epoch, p, True))
        self.ctx.replicas.move((p, b), target)
        return True

    def _remove_from_isr(self, p: int, b: int) -> bool:
        st = self.snap.part(p).state
        if st is None or b not in st.isr:
            return True
        # KAFKA-708 put back (reintroduce): the removal keeps a removed leader as the partition's leader,
        # so the store names a leader outside its own ISR; the fix leaves the partition leaderless
        keeps_removed_leader = self.cfg.reintroduces("KAFKA-708")
        leader = 0 if st.leader == b and not keeps_removed_leader else st.leader
        isr = tuple(x for x in st.isr if x != b)
        if not isr and not self.cfg.unclean_leader_election:
            isr = st.isr  # 0.8: the last member stays
        if not self.write_leader_isr(p, leader, isr):
            return False
        self.send_leader_and_isr(p, self.isr_removal_receivers(p, leader, b))
        self.broadcast_metadata()
        return True

    def isr_removal_receivers(self, p: int, leader: int, removed: int) -> tuple[int, ...]:
        """Who hears of an ISR removal by LeaderAndIsr: under ``high-watermark`` (0.8) only the leader,
        if any; from ``kip-101`` on (0.11) every replica of the assignment but the removed one, so that
        no follower is left behind on the old leader epoch (which ``kip-320`` would fence for good)."""
        if not self.cfg.traits.isr_removal_tells_replicas:
            return (leader,) if leader else ()
        return tuple(r for r in self.assignment(p) if r != removed)

    def bump_leader_epoch(self, p: int, to: tuple[int, ...]) -> bool:
        st = self.snap.part(p).state
        assert st is not None
        if not self.write_leader_isr(p, st.leader, st.isr):
            return False
        self.send_leader_and_isr(p, to)
        return True

    def elect_offline_and_new(self) -> None:
        for p in range(self.nparts):
            if self.electable(p) and self.ctx.partitions[p] in (T.OFFLINE_PARTITION, T.NEW_PARTITION):
                self.partition_to(p, T.ONLINE_PARTITION, S.OFFLINE)


# ---------------------------------------------------------------------------- operations
def op_failover(tx: Tx) -> str:
    """onControllerFailover: rebuild the context from the store, then drive everything online."""
    ctx, snap = tx.ctx, tx.snap
    ctx.live = frozenset(snap.registered)
    ctx.czxids = dict(snap.registered)
    for p in range(tx.nparts):
        pz = snap.part(p)
        if not pz.exists:
            continue
        for b in pz.replicas:
            ctx.replicas.set((p, b), T.ONLINE_REPLICA if b in ctx.live else T.OFFLINE_REPLICA)
        if pz.state is None:
            ctx.partitions.set(p, T.NEW_PARTITION)
        elif pz.state.leader and pz.state.leader in ctx.live:
            ctx.partitions.set(p, T.ONLINE_PARTITION)
        else:
            ctx.partitions.set(p, T.OFFLINE_PARTITION)
    for p in range(tx.nparts):  # replica state machine start-up
        if tx.electable(p):
            for b in snap.part(p).replicas:
                if b in ctx.live:
                    tx.replica_to(p, b, T.ONLINE_REPLICA)
    tx.elect_offline_and_new()  # partition state machine start-up
    for p in range(tx.nparts):  # resume reassignments
        if p in snap.reassign and tx.exists(p):
            ctx.reassign[p] = Reassignment(STEP_START)
    tx.broadcast_metadata()
    return DONE


def op_process_broker_change(tx: Tx, detect_restarts: bool = False) -> str:
    ctx, snap = tx.ctx, tx.snap
    registered = frozenset(snap.registered)
    bounced = frozenset()
    if detect_restarts:
        bounced = frozenset(b for b in registered & ctx.live if snap.registered[b] != ctx.czxids.get(b))
    if registered == ctx.live and not bounced:
        ctx.czxids = dict(snap.registered)  # the watch fired for a change that undid itself
        return DONE
    dead = (ctx.live - registered) | bounced
    new = (registered - ctx.live) | bounced
    ctx.czxids = dict(snap.registered)
    if new:
        if bounced:
            ctx.live = registered - bounced
            on_broker_failure(tx, bounced)
        ctx.live = registered
        on_broker_startup(tx, new)
    ctx.live = registered
    if dead - bounced:
        on_broker_failure(tx, dead - bounced)
    return DONE


def on_broker_failure(tx: Tx, dead: frozenset[int]) -> None:
    ctx = tx.ctx
    ctx.shutting_down = ctx.shutting_down - dead
    for p in range(tx.nparts):
        st = tx.snap.part(p).state
        if (tx.electable(p) and st is not None and st.leader in dead
                and ctx.partitions[p] != T.NON_EXISTENT_PARTITION):
            tx.partition_to(p, T.OFFLINE_PARTITION)
    tx.elect_offline_and_new()
    for p in range(tx.nparts):
        if not tx.exists(p):
            continue
        for b in tx.assignment(p):
            if b not in dead:
                continue
            state = ctx.replicas[(p, b)]
            if tx.deleting(p):
                if state in (T.DELETION_STARTED, T.OFFLINE_REPLICA):
                    tx.replica_to(p, b, T.DELETION_INELIGIBLE)
            elif state != T.NON_EXISTENT_REPLICA:
                tx.replica_to(p, b, T.OFFLINE_REPLICA)


def on_broker_startup(tx: Tx, new: frozenset[int]) -> None:
    md = tx.metadata()
    for b in sorted(new):
        tx.send(b, md)
    for p in range(tx.nparts):
        if not tx.exists(p):
            continue
        for b in tx.assignment(p):
            if b not in new:
                continue
            state = tx.ctx.replicas[(p, b)]
            if tx.deleting(p):
                if state == T.DELETION_INELIGIBLE and tx.replica_to(p, b, T.OFFLINE_REPLICA):
                    tx.replica_to(p, b, T.DELETION_STARTED)
            elif state != T.NON_EXISTENT_REPLICA:
                tx.replica_to(p, b, T.ONLINE_REPLICA)
    tx.elect_offline_and_new()
    # a reassignment still waiting for a target replica on a broker that came starts over: the
    # LeaderAndIsr that would create that replica was lost while the broker was down
    for p, r in list(tx.ctx.reassign.items()):
        if r.step == STEP_CAUGHT_UP and any(b in new for b in r.rar):
            tx.ctx.reassign[p] = Reassignment(STEP_START)


def op_create_topic(tx: Tx) -> str:
    """onNewPartitionCreation for every partition with an AR the controller does not know yet."""
    if tx.snap.deleting:
        return f"{NOT_ENABLED}: a deletion is queued"
    # only partitions with no leader/ISR znode: a deposed controller must not re-create what its
    # successor already brought online
    created = [p for p in range(tx.nparts) if tx.exists(p) and tx.ctx.partitions[p] == T.NON_EXISTENT_PARTITION
               and tx.snap.part(p).state is None]
    if not created:
        return f"{NOT_ENABLED}: no new partition"
    for p in created:
        tx.partition_to(p, T.NEW_PARTITION)
        for b in tx.assignment(p):
            tx.replica_to(p, b, T.NEW_REPLICA)
    for p in created:
        tx.partition_to(p, T.ONLINE_PARTITION)
        for b in tx.assignment(p):
            tx.replica_to(p, b, T.ONLINE_REPLICA)
    return DONE


def op_preferred_election(tx: Tx, p: int) -> str:
    if p not in tx.snap.preferred:
        return f"{NOT_ENABLED}: no preferred election requested for partition {p}"
    if (tx.electable(p) and p not in tx.ctx.reassign
            and tx.ctx.partitions[p] in (T.ONLINE_PARTITION, T.OFFLINE_PARTITION)):
        tx.partition_to(p, T.ONLINE_PARTITION, S.PREFERRED)
    tx.drop_preferred_request(p)
    return DONE


def op_controlled_shutdown(tx: Tx, b: int) -> str:
    ctx = tx.ctx
    if b not in ctx.live or b not in tx.snap.registered or b in ctx.shutting_down:
        return f"{NOT_ENABLED}: broker {b} is not a live broker outside a controlled shutdown"
    ctx.shutting_down = ctx.shutting_down | {b}
    for p in range(tx.nparts):
        if not tx.electable(p):
            continue
        ar = tx.assignment(p)
        if b not in ar or ctx.replicas[(p, b)] == T.NON_EXISTENT_REPLICA:
            continue
        st = tx.snap.part(p).state
        if st is not None and st.leader == b:
            if len(ar) > 1:
                tx.partition_to(p, T.ONLINE_PARTITION, S.CONTROLLED_SHUTDOWN)
        else:
            tx.replica_to(p, b, T.OFFLINE_REPLICA)
    return DONE


def deletion_started(tx: Tx) -> bool:
    nothing_created = True
    for p in tx.snap.deleting:
        if tx.ctx.partitions[p] != T.NON_EXISTENT_PARTITION or tx.snap.part(p).state is not None:
            nothing_created = False
        for b in tx.snap.part(p).replicas:
            if tx.ctx.replicas[(p, b)] in DELETION_STATES:
                return True
    return nothing_created


def deletion_complete(tx: Tx) -> bool:
    for p in tx.snap.deleting:
        for b in tx.snap.part(p).replicas:
            if tx.ctx.replicas[(p, b)] not in (T.DELETION_SUCCESSFUL, T.NON_EXISTENT_REPLICA):
                return False
    return True


def op_start_topic_deletion(tx: Tx) -> str:
    ctx = tx.ctx
    if not tx.snap.deleting:
        return f"{NOT_ENABLED}: no deletion is queued"
    if deletion_started(tx):
        return f"{NOT_ENABLED}: the deletion has started"
    if any(p in ctx.reassign for p in tx.snap.deleting):
        return f"{NOT_ENABLED}: a reassignment is in progress on a queued partition"
    for p in tx.snap.deleting:
        if not tx.exists(p) or ctx.partitions[p] == T.NON_EXISTENT_PARTITION:
            continue
        for b in tx.assignment(p):
            if ctx.replicas[(p, b)] == T.NON_EXISTENT_REPLICA:
                continue
            if not tx.replica_to(p, b, T.OFFLINE_REPLICA):
                return DONE  # fenced: a newer controller owns the deletion
            tx.replica_to(p, b, T.DELETION_STARTED if b in ctx.live else T.DELETION_INELIGIBLE)
        tx.partition_to(p, T.OFFLINE_PARTITION)
    return DONE


def op_complete_topic_deletion(tx: Tx) -> str:
    ctx = tx.ctx
    if not tx.snap.deleting:
        return f"{NOT_ENABLED}: no deletion is queued"
    if not deletion_started(tx) or not deletion_complete(tx):
        return f"{NOT_ENABLED}: some replica has not confirmed its deletion"
    for p in tx.snap.deleting:
        for b in tx.snap.part(p).replicas:
            if ctx.replicas[(p, b)] == T.DELETION_SUCCESSFUL:
                tx.replica_to(p, b, T.NON_EXISTENT_REPLICA)
        if ctx.partitions[p] != T.NON_EXISTENT_PARTITION:
            tx.partition_to(p, T.NON_EXISTENT_PARTITION)
        tx.remove_partition(p)
        tx.drop_reassignment_request(p)
        tx.drop_preferred_request(p)
        ctx.reassign.pop(p, None)
    tx.ops.append(Delete(L.delete_path(tx.topic)))
    if not any(tx.exists(p) for p in range(tx.nparts)):
        tx.ops.append(Delete(L.partitions_path(tx.topic)))
        tx.ops.append(Delete(L.topic_path(tx.topic)))
    tx.snap.deleting = ()
    tx.broadcast_metadata()
    return DONE


def reassignment_enabled(tx: Tx, p: int, active: bool) -> str:
    """'' when the next reassignment step of ``p`` may run now, else why not."""
    r = tx.ctx.reassign.get(p)
    if r is None or r.step == STEP_START:  # starting, or resuming after a failover: only the active controller
        if not active:
            return "a deposed controller does not start a reassignment"
        if p not in tx.snap.reassign:
            return f"no reassignment is requested for partition {p}"
        if not tx.exists(p) or tx.deleting(p):
            return f"partition {p} does not exist or is being deleted"
        return ""
    if r.step == STEP_CAUGHT_UP:
        st = tx.snap.part(p).state
        isr = st.isr if st else ()
        missing = [b for b in r.rar if b not in isr]
        if missing:
            return f"step {STEP_CAUGHT_UP} waits for {missing} to join the ISR"
    return ""


def op_reassign(tx: Tx, p: int, active: bool = True) -> str:
    """Perform the next step of ``p``'s reassignment. A step answers False when the reassignment ends
    there (nothing to do, or a refused write); after the last one the controller forgets it. With
    ``fenced_reassignment_steps`` a controller the snapshot shows deposed abandons it instead."""
    why = reassignment_enabled(tx, p, active)
    if why:
        return f"{NOT_ENABLED}: {why}"
    ctx = tx.ctx
    if tx.cfg.fenced_reassignment_steps and not active:
        # the snapshot's /controller_epoch is not ours: a deposed controller forgets the
        # reassignment (step, OAR, RAR) and performs nothing; the new controller resumed it
        ctx.reassign.pop(p, None)
        return "abandoned: a newer controller holds the epoch"
    r = ctx.reassign.get(p) or Reassignment(STEP_START)
    ctx.reassign[p] = r
    if not _STEPS[r.step](tx, r, p) or r.step == LAST_STEP:
        del ctx.reassign[p]
    else:
        r.step += 1
    return DONE


# One function per step of specs/protocol.toml, named after it ("bump-epoch": _step_bump_epoch).
def _step_start(tx: Tx, r: Reassignment, p: int) -> bool:
    target = tx.snap.reassign.get(p, ())
    current = tx.snap.part(p).replicas
    if not target:  # the request is gone (another controller completed it): nothing to resume
        return False
    if target == current or any(b not in tx.ctx.live for b in target):
        tx.drop_reassignment_request(p)
        return False
    r.oar, r.rar = current, target
    tx.write_assignment(p, current + tuple(b for b in target if b not in current))
    return True


def _step_bump_epoch(tx: Tx, r: Reassignment, p: int) -> bool:
    return tx.snap.part(p).state is None or tx.bump_leader_epoch(p, tx.assignment(p))


def _step_new_replicas(tx: Tx, r: Reassignment, p: int) -> bool:
    for b in r.rar:
        if b not in r.oar:
            tx.replica_to(p, b, T.NEW_REPLICA)
    return True


def _step_caught_up(tx: Tx, r: Reassignment, p: int) -> bool:
    return True  # enabled only once every replica of RAR is in the ISR


def _step_online(tx: Tx, r: Reassignment, p: int) -> bool:
    for b in r.rar:
        tx.replica_to(p, b, T.ONLINE_REPLICA)
    return True


def _step_ar_in_memory(tx: Tx, r: Reassignment, p: int) -> bool:
    return True  # from the next step on the controller's view of AR is RAR


def _step_leader(tx: Tx, r: Reassignment, p: int) -> bool:
    st = tx.snap.part(p).state
    leader = st.leader if st else 0
    if leader not in r.rar or leader not in tx.ctx.live:
        tx.partition_to(p, T.ONLINE_PARTITION, S.REASSIGNED)
        return True
    return st is None or tx.bump_leader_epoch(p, r.rar)


def _step_old_offline(tx: Tx, r: Reassignment, p: int) -> bool:
    for b in r.oar:
        if b not in r.rar and not tx.replica_to(p, b, T.OFFLINE_REPLICA):
            return False
    return True


def _step_old_deleted(tx: Tx, r: Reassignment, p: int) -> bool:
    for b in r.oar:
        if b not in r.rar:
            tx.replica_to(p, b, T.DELETION_STARTED)
            tx.replica_to(p, b, T.DELETION_SUCCESSFUL)
            tx.replica_to(p, b, T.NON_EXISTENT_REPLICA)
    return True


def _step_ar_in_zk(tx: Tx, r: Reassignment, p: int) -> bool:
    tx.write_assignment(p, r.rar)
    return True


def _step_clear_request(tx: Tx, r: Reassignment, p: int) -> bool:
    tx.drop_reassignment_request(p)
    return True


def _step_metadata(tx: Tx, r: Reassignment, p: int) -> bool:
    tx.broadcast_metadata()
    return True


def _step_function(name: str) -> Callable[[Tx, Reassignment, int], bool]:
    f = globals().get("_step_" + name.replace("-", "_"))
    if f is None:
        raise RuntimeError(f"specs/protocol.toml names the reassignment step {name!r}, "
                           "which impl/core/controller.py does not perform")
    return f


#: step number -> the function performing it, in the order of specs/protocol.toml
_STEPS: dict[int, Callable[[Tx, Reassignment, int], bool]] = {
    n: _step_function(name) for n, name in enumerate(REASSIGNMENT_STEPS, start=1)}


def op_deletion_response(tx: Tx, p: int, b: int) -> str:
    if tx.ctx.replicas[(p, b)] == T.DELETION_STARTED:
        tx.ctx.replicas.move((p, b), T.DELETION_SUCCESSFUL)
    return DONE


# ---------------------------------------------------------------------------- the core
Gen = Generator[tuple[str, tuple], tuple[Any, Any], str]


class ControllerCore:
    """One controller candidate; ``epoch`` is 0 until it wins an election."""

    def __init__(self, config: ImplConfig, name: str = "controller", autonomous: bool = False,
                 address: tuple[str, int] | None = None, detect_restarts: bool | None = None) -> None:
        self.cfg = config
        self.name = name
        self.autonomous = autonomous
        self.address = address
        self.detect_restarts = config.detect_restarts if detect_restarts is None else detect_restarts
        self.epoch = 0
        self.epoch_version = -1  # stat version of /controller_epoch when this controller raised it
        self.active = False  # elected and not resigned (a deposed controller that has not noticed stays active)
        self.resigned = False
        self.standby = False  # lost an election; watching /controller
        self.ctx = Context()
        self.last_status = ""
        self.history: list[tuple[str, tuple, str]] = []  # (operation, args, status)
        self._tokens = itertools.count(1)
        self._queue: deque[tuple[str, tuple]] = deque()
        self._op: Gen | None = None
        self._op_name: tuple[str, tuple] | None = None
        self._token: int | None = None
        self._out: list[Any] = []
        self._poll_scheduled = False
        self._shutdown_waiters: dict[int, list[Any]] = {}
        self._last_leaders: dict[int, int] = {}
        self._renewals = 0  # SessionRenewed inputs so far: which session an answer came from

    # ------------------------------------------------------------------ driver interface
    def handle(self, inp: Any) -> list[Any]:
        """Feed one input; returns the effects to perform, in order."""
        self._out = []
        if isinstance(inp, StoreResult):
            if inp.token != self._token:
                return []
            self._token = None
            self._resume((inp.value, inp.error))
        elif isinstance(inp, Command):
            self._command(inp)
        elif isinstance(inp, Notification):
            self._notification(inp)
        elif isinstance(inp, SessionRenewed):
            self._session_renewed()
        elif isinstance(inp, Receive):
            self._receive(inp)
        elif isinstance(inp, Timer):
            if inp.name == "recheck":
                self._poll_scheduled = False
                self._enqueue("_poll", ())
                if self.active and self.autonomous:
                    self._out.append(SetTimer("recheck", self.cfg.controller_recheck_ms))
                    self._poll_scheduled = True
        out, self._out = self._out, []
        return out

    @property
    def busy(self) -> bool:
        return self._op is not None or bool(self._queue)

    def observe(self) -> dict[str, Any]:
        """The controller's part of the observation (specs/observation.toml)."""
        return {
            "epoch": self.epoch,
            "live_brokers": sorted(self.ctx.live),
            "shutting_down": sorted(self.ctx.shutting_down),
            "partition_states": dict(self.ctx.partitions.states),
            "replica_states": dict(self.ctx.replicas.states),
            "reassign_steps": {p: r.step for p, r in self.ctx.reassign.items()},
        }

    # ------------------------------------------------------------------ inputs
    def _command(self, cmd: Command) -> None:
        if cmd.name == "Start":
            self._enqueue("_elect", ())
        elif cmd.name == "ResignController":
            self._resign("told to resign")
        elif cmd.name in OPERATIONS or cmd.name in ("_poll",):
            if not self.active:
                self.last_status = f"{NOT_ENABLED}: this controller is not acting"
                return
            self._enqueue(cmd.name, tuple(cmd.args))
        else:
            raise ValueError(f"unknown controller command {cmd.name!r}")

    def _notification(self, n: Notification) -> None:
        if n.kind == "expired":
            if self.active:
                self._resign("the store session expired")
            if self.autonomous:
                self._enqueue("_elect", ())
            return
        if n.path == L.CONTROLLER:
            if not self.active and (self.standby or self.autonomous):
                self._enqueue("_elect", ())
        elif self.active and self.autonomous:
            self._enqueue("_poll", ())

    def _session_renewed(self) -> None:
        """A new store session (autonomous mode): ``/controller`` and the watches were the old session's.

        The driver announces the new session after every answer of the old one and before any answer of
        the new one. So a controller still acting was elected in an older session: its znode is gone and
        a newer controller may already hold the epoch, and it resigns, as on the expiry notice, in case
        that notice never came. An election under way goes on: if its ``/controller`` create was
        answered before this input, it was made on the old session and :meth:`_g_elect` abandons it
        before acting (``_renewals``); if not, it belongs to the new session (aborting it then would
        leave our own live znode blocking every election, ours included). Either way the candidate runs
        the election again, which also re-arms its watch on ``/controller``."""
        self._renewals += 1
        if not self.autonomous:
            return
        if self.active:
            self._resign("the store session was renewed")
        self._enqueue("_elect", ())

    def _receive(self, r: Receive) -> None:
        msg = r.msg
        if isinstance(msg, StopReplicaResponse):
            if self.active and msg.delete and msg.controller_epoch == self.epoch:
                self._enqueue("_deleted", (msg.partition, msg.broker))
        elif isinstance(msg, ControlledShutdownRequest):
            if not self.active:
                self._out.append(Send(r.frm, ControlledShutdownResponse(msg.broker, "NotController")))
                return
            self._shutdown_waiters.setdefault(msg.broker, []).append(r.frm)
            self._enqueue("ControlledShutdown", (msg.broker,))

    def _resign(self, why: str) -> None:
        self.active = False
        self.resigned = True
        self._queue.clear()
        self._op = None
        self._token = None
        self.history.append(("ResignController", (), why))
        if self.autonomous:
            self.resigned = False  # a real controller becomes a candidate again
            self.ctx = Context()
            self.epoch = 0
        else:
            self._out.append(Stop(why))

    # ------------------------------------------------------------------ operation runner
    def _enqueue(self, name: str, args: tuple) -> None:
        if name == "_poll" and ("_poll", ()) in self._queue:
            return
        self._queue.append((name, args))
        if self._op is None:
            self._start_next()

    def _start_next(self) -> None:
        while self._op is None and self._queue:
            name, args = self._queue.popleft()
            self._op_name = (name, args)
            self._op = self._make(name, args)
            self._resume(None)

    def _resume(self, answer: Any) -> None:
        op = self._op
        if op is None:
            return
        try:
            req = next(op) if answer is None else op.send(answer)
        except StopIteration as stop:
            self._finish(str(stop.value))
            return
        except T.IllegalTransition as e:
            self._finish(f"illegal transition: {e}")
            if not self.autonomous:
                raise
            return
        kind, args = req
        self._token = next(self._tokens)
        self._out.append(StoreOp(self._token, kind, args))

    def _finish(self, status: str) -> None:
        name, args = self._op_name or ("?", ())
        self._op = None
        self._op_name = None
        self.last_status = status
        if not name.startswith("_") or name in ("_elect",):
            self.history.append((name, args, status))
        if name == "ControlledShutdown" and args:
            b = args[0]
            remaining = tuple(sorted(p for p, leader in self._last_leaders.items() if leader == b))
            for frm in self._shutdown_waiters.pop(b, []):
                err = "" if status == DONE or "controlled shutdown" in status else status
                self._out.append(Send(frm, ControlledShutdownResponse(b, err, remaining)))
        self._start_next()

    def _make(self, name: str, args: tuple) -> Gen:
        if name == "_elect":
            return self._g_elect()
        if name == "_poll":
            return self._g_poll()
        if name == "_deleted":
            return self._g_tx(op_deletion_response, *args)
        if name == "ProcessBrokerChange":
            return self._g_tx(op_process_broker_change, self.detect_restarts)
        if name == "CreateTopic":
            return self._g_tx(op_create_topic)
        if name == "ReassignPartition":
            return self._g_tx(op_reassign, int(args[0]), pass_active=True)
        if name == "ElectPreferredLeader":
            return self._g_tx(op_preferred_election, int(args[0]))
        if name == "StartTopicDeletion":
            return self._g_tx(op_start_topic_deletion)
        if name == "CompleteTopicDeletion":
            return self._g_tx(op_complete_topic_deletion)
        if name == "ControlledShutdown":
            return self._g_tx(op_controlled_shutdown, int(args[0]), require_current=True)
        raise ValueError(f"unknown operation {name!r}")

    def _g_tx(self, body: Callable[..., str], *args: Any, require_current: bool = False,
              pass_active: bool = False) -> Gen:
        """Run ``body`` on a fresh snapshot and commit its writes as one conditional multi."""
        for _attempt in range(MAX_ATTEMPTS):
            snap, err = yield ("snapshot", (self.cfg.topic, self.cfg.partitions))
            if err is not None:
                return f"store error: {err}"
            current = snap.controller_epoch == self.epoch
            if require_current and not current:
                return f"{NOT_ENABLED}: this controller was deposed"
            tx = Tx(self, snap)
            status = body(tx, *args, active=current) if pass_active else body(tx, *args)
            if status.startswith(NOT_ENABLED):
                return status
            if tx.ops:
                ops = tuple(tx.ops)
                if self.cfg.fenced_controller_writes:  # Kafka 2.1+: every write is tied to our epoch
                    ops = (Check(L.CONTROLLER_EPOCH, self.epoch_version),) + ops
                _res, err = yield ("multi", (ops,))
                if err is not None:
                    if (self.cfg.fenced_controller_writes and isinstance(err, TransactionFailed)
                            and err.index == 0):
                        return "fenced: a newer controller holds the epoch"
                    if isinstance(err, (TransactionFailed, BadVersion, NoNode, NodeExists)):
                        continue  # another writer got in between: run again on a fresh snapshot
                    return f"store error: {err}"
            self.ctx = tx.ctx
            self._last_leaders = {p: (pz.state.leader if pz.state else 0) for p, pz in tx.snap.partitions.items()}
            self._out.extend(tx.sends)
            return status
        return "gave up: the store kept changing under the operation"

    def _g_elect(self) -> Gen:
        if self.active:
            return "already the controller"
        _v, err = yield ("ensure_base", ())
        if err is not None:
            return f"store error: {err}"
        data = L.encode({"name": self.name, "address": list(self.address) if self.address else None})
        while True:
            _v, err = yield ("create", (L.CONTROLLER, data, True))
            if err is None:
                break
            if isinstance(err, NodeExists):
                stat, err2 = yield ("exists", (L.CONTROLLER, True))
                if err2 is None and stat is None:
                    continue  # it vanished meanwhile: try again
                self.standby = True
                return "standby"
            return f"store error: {err}"
        self.standby = False
        created_in = self._renewals  # the session the /controller znode belongs to
        while True:
            got, err = yield ("get", (L.CONTROLLER_EPOCH, False))
            if isinstance(err, NoNode):
                _v, err2 = yield ("create", (L.CONTROLLER_EPOCH, b"1", False))
                if err2 is None:
                    epoch = 1
                    epoch_version = 0
                    break
                continue
            if err is not None:
                return f"store error: {err}"
            old = int(L.decode(got[0]) or 0)
            _v, err2 = yield ("set", (L.CONTROLLER_EPOCH, str(old + 1).encode(), got[1].version))
            if err2 is None:
                epoch = old + 1
                epoch_version = _v.version
                break
            if not isinstance(err2, BadVersion):
                return f"store error: {err2}"
        if created_in != self._renewals:
            # the znode was made on a session that has ended since: it is gone, and acting now would
            # leave a controller that owns no /controller (the renewal queued another election)
            return f"abandoned: the store session ended during the election (epoch {epoch} raised)"
        self.epoch = epoch
        self.epoch_version = epoch_version
        self.active = True
        self.resigned = False
        self.ctx = Context()
        status = yield from self._g_tx(op_failover)
        if self.autonomous:
            self._out.append(SetTimer("recheck", self.cfg.controller_recheck_ms))
            self._poll_scheduled = True
            self._queue.append(("_poll", ()))
        return f"elected with epoch {epoch}: {status}"

    def _g_poll(self) -> Gen:
        """Autonomous mode: run every controller operation whose guard holds (one pass)."""
        if not self.active:
            return "not acting"
        snap, err = yield ("snapshot", (self.cfg.topic, self.cfg.partitions))
        if err is not None:
            return f"store error: {err}"
        for name, args in self.enabled_commands(snap):
            self._queue.append((name, args))
        return DONE

    def enabled_commands(self, snap: L.Snapshot) -> list[tuple[str, tuple]]:
        """The controller operations whose guards hold on ``snap`` (in the vocabulary's order)."""
        out: list[tuple[str, tuple]] = []
        tx = Tx(self, snap)
        active = snap.controller_epoch == self.epoch
        registered = frozenset(snap.registered)
        if registered != self.ctx.live or (self.detect_restarts and any(
                snap.registered[b] != self.ctx.czxids.get(b) for b in registered & self.ctx.live)):
            out.append(("ProcessBrokerChange", ()))
        if not snap.deleting and any(tx.exists(p) and self.ctx.partitions[p] == T.NON_EXISTENT_PARTITION
                                     and snap.part(p).state is None for p in range(tx.nparts)):
            out.append(("CreateTopic", ()))
        for p in range(tx.nparts):
            if (p in self.ctx.reassign or (active and p in snap.reassign)) and not reassignment_enabled(tx, p, active):
                out.append(("ReassignPartition", (p,)))
            if p in snap.preferred:
                out.append(("ElectPreferredLeader", (p,)))
        if snap.deleting:
            if not deletion_started(tx):
                if not any(p in self.ctx.reassign for p in snap.deleting):
                    out.append(("StartTopicDeletion", ()))
            elif deletion_complete(tx):
                out.append(("CompleteTopicDeletion", ()))
        return out
