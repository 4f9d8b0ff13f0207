"""The controller: its state machines in action and its operations (specs/04-controller.md).

Every function here runs inside one atomic model step on a :class:`World`, on behalf of one
controller context ``c`` (the active controller, or a stale one that has not yet noticed it was
deposed). Requests carry ``c.epoch``; brokers that have seen a newer epoch reject them.
"""
from __future__ import annotations

from typing import Callable, Final

from isrcheck.specs.protocol import REASSIGNMENT_STEPS, step_number

from .brokersets import bit, members
from .selectors import Election, NoEligibleLeader, Selector, SelectorInput
from .state import (
    NO_LEADER,
    Controller,
    UpdateMetadata,
    Zk,
    make_ghost,
    make_stop_replica,
    make_update_metadata,
    make_zk_partition,
)
from .tables import PartitionState as PS
from .tables import ReplicaState as RS
from .tables import check_partition_move, check_replica_move
from .protocol import Protocol, Removal
from .world import ControllerWork, World


class Fenced(Exception):
    """A newer controller wrote this partition's leader/ISR znode; this controller must stop."""


# The reassignment steps the controller's logic names, numbered by specs/protocol.toml (step n is
# REASSIGNMENT_STEPS[n - 1]); ``reassign_step`` holds the number of the next step, 0 for none.
STEP_START: Final = step_number("start")
STEP_CAUGHT_UP: Final = step_number("caught-up")
STEP_AR_IN_MEMORY: Final = step_number("ar-in-memory")
LAST_STEP: Final = len(REASSIGNMENT_STEPS)


# ---------------------------------------------------------------------------- views
def assignment(w: World, c: ControllerWork, p: int) -> tuple[int, ...]:
    """The controller's view of AR: ZooKeeper's, except RAR once step ar-in-memory set it in memory."""
    if c.reassign_step[p] > STEP_AR_IN_MEMORY:
        return c.reassign_new[p]
    return w.parts[p].replicas


def exists(w: World, p: int) -> bool:
    return bool(w.parts[p].replicas)


def live_in(c: ControllerWork, brokers: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(b for b in brokers if c.live >> b & 1)


def update_metadata(w: World, c: ControllerWork) -> UpdateMetadata:
    """Controller ``c``'s UpdateMetadata: its epoch, and where brokers keep a metadata cache
    (``metadata_cache``) its live brokers and the leader epochs its context caches (0 and () otherwise,
    so that models without a cache keep their states)."""
    if not w.protocol.metadata_carries_live:
        return make_update_metadata(c.epoch, ())
    return make_update_metadata(c.epoch, (c.live,) + w.protocol.cached_leader_epochs(w, c))


def broadcast_metadata(w: World, c: ControllerWork) -> None:
    um = update_metadata(w, c)
    for b in members(c.live):
        w.send(b, um)


def send_leader_and_isr(w: World, c: ControllerWork, p: int, to: tuple[int, ...]) -> None:
    req = w.leader_and_isr(c.epoch, p, assignment(w, c, p))
    for b in to:
        if c.live >> b & 1:
            w.send(b, req)


def check_not_fenced(w: World, c: ControllerWork, p: int) -> None:
    """Raise :class:`Fenced` when ``c`` may not write partition ``p``'s leader/ISR znode: a newer
    controller wrote it (the 0.8 check-then-write), or ZooKeeper refuses a deposed controller."""
    if w.protocol.controller_write_refused(w, c, p):
        raise Fenced()


def write_leader_isr(w: World, c: ControllerWork, p: int, leader: int, isr: int,
                     fields: tuple[int, ...] | None = None, bump: bool = False) -> None:
    """Conditional write of the leader/ISR znode with a new leader epoch (and, when a variant's
    decision gave them, the partition's new variant ``fields``); ``bump``: a reassignment's leader
    epoch bump, which leaves leader and ISR as they are."""
    check_not_fenced(w, c, p)
    zp = w.parts[p]
    w.set_part(p, make_zk_partition(zp.replicas, leader, isr, zp.leader_epoch + 1, zp.version + 1, c.epoch,
                                    zp.ext if fields is None else fields))
    if not bump or w.protocol.caches_leader_epoch_bumps():
        w.protocol.cache_leadership(w, c, p)
    w.protocol.on_controller_write(w, c, p)


# ---------------------------------------------------------------------------- partition state machine
def partition_to(w: World, c: ControllerWork, p: int, target: PS, selector: Selector | None = None) -> bool:
    """Move partition ``p``; False when the move could not happen (no leader, or fenced)."""
    source = c.partition_states[p]
    check_partition_move(p, source, target)
    if target == PS.ONLINE:
        try:
            if source == PS.NEW:
                _initialize_leader_and_isr(w, c, p)
            else:
                _elect(w, c, p, selector or Selector.OFFLINE_PARTITION)
        except (NoEligibleLeader, Fenced):
            return False
    c.set_partition_state(p, target)
    return True


def _initialize_leader_and_isr(w: World, c: ControllerWork, p: int) -> None:
    ar = assignment(w, c, p)
    live = live_in(c, ar)
    if not live:
        raise NoEligibleLeader(Selector.OFFLINE_PARTITION, "no assigned replica is alive")
    zp = w.parts[p]
    if zp.version != 0 or w.protocol.controller_fenced(w, c):
        raise Fenced()  # another controller created the znode first
    first = w.protocol.initial_leader_and_isr(live)
    w.set_part(p, make_zk_partition(zp.replicas, first.leader, first.isr, 0, 1, c.epoch,
                                    zp.ext if first.fields is None else first.fields))
    send_leader_and_isr(w, c, p, live)
    broadcast_metadata(w, c)


def _elect(w: World, c: ControllerWork, p: int, selector: Selector) -> Election:
    zp = w.parts[p]
    inp = SelectorInput(assignment(w, c, p), zp.leader, zp.isr, c.live, c.shutting_down, c.reassign_new[p],
                        w.protocol.unclean_leader_election, p, zp.leader_epoch, zp.ext,
                        tuple([br.replicas[p] for br in w.brokers]))
    election = w.protocol.select(selector, inp)
    write_leader_isr(w, c, p, election.leader, election.isr, election.fields)
    send_leader_and_isr(w, c, p, election.receivers)
    broadcast_metadata(w, c)
    return election


# ---------------------------------------------------------------------------- replica state machine
def replica_to(w: World, c: ControllerWork, p: int, b: int, target: RS,
               cause: Removal = Removal.BROKER_FAILURE) -> bool:
    """Move replica ``b`` of ``p``; False when the move could not happen (fenced, or a leader that
    cannot be a new replica). ``cause``: why a replica goes OfflineReplica (the ISR removal's hook
    is told)."""
    source = c.replica_states[p][b - 1]
    check_replica_move(p, b, source, target)
    zp = w.parts[p]
    if target == RS.NEW:
        if zp.leader == b:
            return False  # a leader cannot be a new replica
        if zp.version:
            send_leader_and_isr(w, c, p, (b,))
    elif target == RS.ONLINE:
        if source != RS.NEW and zp.version:
            send_leader_and_isr(w, c, p, (b,))
    elif target == RS.OFFLINE:
        if c.live >> b & 1 or w.live >> b & 1:
            w.send(b, make_stop_replica(c.epoch, p, False))
        # else: a broker that has neither a registration nor a place in this controller's view (its
        # failure handled, the connection closed) gets nothing. Only a running broker whose session
        # expired is in that position; a stopped one would drop the request anyway.
        try:
            _remove_from_isr(w, c, p, b, cause)
        except Fenced:
            return False
    elif target == RS.DELETION_STARTED:
        w.send(b, make_stop_replica(c.epoch, p, True))
    c.set_replica_state(p, b, target)
    return True


def _remove_from_isr(w: World, c: ControllerWork, p: int, b: int, cause: Removal) -> None:
    """Take a replica out of the ISR in ZooKeeper and tell the leader (and, from 0.11 on, the
    other replicas): what the write leaves is the protocol's decision (``Protocol.isr_removal``:
    by default the last ISR member stays unless unclean election is enabled, and a removed
    leader leaves the partition leaderless). It bumps the leader epoch.
    """
    zp = w.parts[p]
    if not zp.version or not w.protocol.isr_membership_view(w, c, p) >> b & 1:
        return
    check_not_fenced(w, c, p)  # before the decision: a refused write must leave no trace of it
    change = w.protocol.isr_removal(w, c, p, b, cause)
    write_leader_isr(w, c, p, change.leader, change.isr, change.fields)
    send_leader_and_isr(w, c, p, w.protocol.isr_removal_receivers(change.leader, assignment(w, c, p), b))
    broadcast_metadata(w, c)


def bump_leader_epoch(w: World, c: ControllerWork, p: int, to: tuple[int, ...]) -> None:
    zp = w.parts[p]
    write_leader_isr(w, c, p, zp.leader, zp.isr, bump=True)
    send_leader_and_isr(w, c, p, to)


# ---------------------------------------------------------------------------- operations
def on_new_partition_creation(w: World, c: ControllerWork) -> None:
    """NonExistent -> New -> Online for every partition of the topic, replicas alongside."""
    # Only partitions that have no leader/ISR znode yet: a deposed controller must not re-create
    # what its successor already brought online.
    created = [p for p in range(len(w.parts)) if exists(w, p) and c.partition_states[p] == PS.NON_EXISTENT
               and w.parts[p].version == 0]
    for p in created:
        partition_to(w, c, p, PS.NEW)
        for b in assignment(w, c, p):
            replica_to(w, c, p, b, RS.NEW)
    for p in created:
        partition_to(w, c, p, PS.ONLINE)
        for b in assignment(w, c, p):
            replica_to(w, c, p, b, RS.ONLINE)


def _electable(w: World, p: int) -> bool:
    return exists(w, p) and not w.deleting >> p & 1


def on_broker_failure(w: World, c: ControllerWork, dead: int) -> None:
    c.shutting_down &= ~dead
    for p in range(len(w.parts)):
        if _electable(w, p) and dead >> w.parts[p].leader & 1 and c.partition_states[p] != PS.NON_EXISTENT:
            partition_to(w, c, p, PS.OFFLINE)
    _elect_offline_and_new(w, c)
    for p in range(len(w.parts)):
        if not exists(w, p):
            continue
        for b in assignment(w, c, p):
            if not dead >> b & 1:
                continue
            state = c.replica_states[p][b - 1]
            if w.deleting >> p & 1:
                if state in (RS.DELETION_STARTED, RS.OFFLINE):
                    replica_to(w, c, p, b, RS.DELETION_INELIGIBLE)
            elif state != RS.NON_EXISTENT:
                replica_to(w, c, p, b, RS.OFFLINE, Removal.BROKER_FAILURE)
    w.protocol.on_broker_failure(w, c, dead)


def on_broker_startup(w: World, c: ControllerWork, new: int) -> None:
    um = update_metadata(w, c)
    for b in members(new):
        w.send(b, um)
    for p in range(len(w.parts)):
        if not exists(w, p):
            continue
        for b in assignment(w, c, p):
            if not new >> b & 1:
                continue
            state = c.replica_states[p][b - 1]
            if w.deleting >> p & 1:
                if state == RS.DELETION_INELIGIBLE:  # retry the deletion on the returning broker
                    if replica_to(w, c, p, b, RS.OFFLINE, Removal.DELETION):
                        replica_to(w, c, p, b, RS.DELETION_STARTED)
            elif state != RS.NON_EXISTENT:
                replica_to(w, c, p, b, RS.ONLINE)
    _elect_offline_and_new(w, c)
    resume_reassignments_on(c, new)
    w.protocol.on_broker_startup(w, c, new)


def resume_reassignments_on(c: ControllerWork, new: int) -> None:
    """Restart, from its first step, every reassignment still waiting for a target replica on a
    broker that came (onPartitionReassignment called again, as onBrokerStartup does): the
    LeaderAndIsr that would create the replica was dropped while the broker was down, and a
    NewReplica moving to OnlineReplica sends none, so without the restart it would wait forever.
    Only a reassignment waiting at the caught-up step: one whose step 2 or 3 is still to come sends
    that LeaderAndIsr itself."""
    for p, step in enumerate(c.reassign_step):
        if step == STEP_CAUGHT_UP and any(new >> b & 1 for b in c.reassign_new[p]):
            c.set_reassign_step(p, STEP_START)


def _elect_offline_and_new(w: World, c: ControllerWork) -> None:
    for p in range(len(w.parts)):
        if _electable(w, p) and c.partition_states[p] in (PS.OFFLINE, PS.NEW):
            partition_to(w, c, p, PS.ONLINE, Selector.OFFLINE_PARTITION)


def process_broker_change(w: World, c: ControllerWork) -> None:
    """The broker-change watch fired: diff the registrations with what this controller knew."""
    listed, registered = w.protocol.broker_change_reads(w, c)
    bounced = 0
    if w.protocol.detects_restarts():
        for b in members(registered & c.live):
            if w.registrations[b - 1] != c.registrations[b - 1]:
                bounced |= bit(b)
    dead = (c.live & ~listed) | bounced
    new = (listed & ~c.live) | bounced
    c.live = registered
    c.registrations = w.registrations
    if new:
        c.live &= ~bounced
        if bounced:
            on_broker_failure(w, c, bounced)
        c.live = registered
        on_broker_startup(w, c, new)
    if dead & ~bounced:
        on_broker_failure(w, c, dead & ~bounced)


def on_controller_failover(w: World, c: ControllerWork) -> None:
    """Initialise a freshly elected controller from ZooKeeper and drive everything online."""
    c.live = w.live
    c.registrations = w.registrations
    w.protocol.on_controller_failover(w, c)
    metadata_first = w.protocol.failover_sends_metadata_first()
    if metadata_first:  # 0.10.2 on (KAFKA-4443's fix): the brokers learn who is alive first
        broadcast_metadata(w, c)
    for p, zp in enumerate(w.parts):
        if not zp.replicas:
            continue
        for b in zp.replicas:
            c.set_replica_state(p, b, RS.ONLINE if c.live >> b & 1 else RS.OFFLINE)
        if zp.version == 0:
            c.set_partition_state(p, PS.NEW)
        elif zp.leader != NO_LEADER and c.live >> zp.leader & 1:
            c.set_partition_state(p, PS.ONLINE)
        else:
            c.set_partition_state(p, PS.OFFLINE)
    # replica state machine start-up: every live replica -> OnlineReplica (LeaderAndIsr to each)
    for p, zp in enumerate(w.parts):
        if zp.replicas and not w.deleting >> p & 1:
            for b in zp.replicas:
                if c.live >> b & 1:
                    replica_to(w, c, p, b, RS.ONLINE)
    if w.protocol.failover_takes_dead_replicas_offline():  # 2.3+: dead replicas leave the ISR
        for p, zp in enumerate(w.parts):
            if zp.replicas and not w.deleting >> p & 1:
                for b in zp.replicas:
                    if not c.live >> b & 1:
                        replica_to(w, c, p, b, RS.OFFLINE, Removal.BROKER_FAILURE)
    _elect_offline_and_new(w, c)
    for p in range(len(w.parts)):
        if w.reassign[p] and exists(w, p):
            c.set_reassign_step(p, STEP_START)
    if not metadata_first:
        broadcast_metadata(w, c)


def on_preferred_replica_election(w: World, c: ControllerWork, p: int) -> None:
    """Elect the preferred replica of ``p`` (if this controller knows the partition as Online or
    Offline and no reassignment is moving it), then clear the request either way."""
    if (_electable(w, p) and c.reassign_step[p] == 0
            and c.partition_states[p] in (PS.ONLINE, PS.OFFLINE)):
        partition_to(w, c, p, PS.ONLINE, Selector.PREFERRED_REPLICA)
    if not w.protocol.controller_fenced(w, c):
        w.preferred &= ~bit(p)


def controlled_shutdown(w: World, c: ControllerWork, b: int) -> None:
    """Move leadership off ``b`` and take its follower replicas out of the ISR."""
    c.shutting_down |= bit(b)
    for p in range(len(w.parts)):
        if not _electable(w, p):
            continue
        zp = w.parts[p]
        ar = assignment(w, c, p)
        if b not in ar or c.replica_states[p][b - 1] == RS.NON_EXISTENT:
            continue
        if zp.leader == b:
            if len(ar) > 1:
                partition_to(w, c, p, PS.ONLINE, Selector.CONTROLLED_SHUTDOWN)
        else:
            replica_to(w, c, p, b, RS.OFFLINE, Removal.CONTROLLED_SHUTDOWN)


def start_topic_deletion(w: World, c: ControllerWork) -> None:
    """Replicas -> Offline -> DeletionStarted (StopReplica with delete), or DeletionIneligible
    when their broker is down. Partitions this controller never created need no deletion."""
    for p in members(w.deleting):
        if not exists(w, p) or c.partition_states[p] == PS.NON_EXISTENT:
            continue
        for b in assignment(w, c, p):
            if c.replica_states[p][b - 1] == RS.NON_EXISTENT:
                continue
            if not replica_to(w, c, p, b, RS.OFFLINE, Removal.DELETION):
                return  # fenced: a newer controller owns the deletion
            if c.live >> b & 1:
                replica_to(w, c, p, b, RS.DELETION_STARTED)
            else:
                replica_to(w, c, p, b, RS.DELETION_INELIGIBLE)
        partition_to(w, c, p, PS.OFFLINE)


_DELETION_STATES: Final = (RS.DELETION_STARTED, RS.DELETION_SUCCESSFUL, RS.DELETION_INELIGIBLE)


def deletion_started(zk: Zk | World, c: Controller | ControllerWork) -> bool:
    """Whether controller ``c`` has begun deleting (or has nothing of the topic to delete)."""
    parts = zk.partitions if isinstance(zk, Zk) else zk.parts
    nothing_created = True
    for p in members(zk.deleting):
        if c.partition_states[p] != PS.NON_EXISTENT or parts[p].version != 0:
            nothing_created = False
        for b in parts[p].replicas:
            if c.replica_states[p][b - 1] in _DELETION_STATES:
                return True
    return nothing_created


def deletion_complete(zk: Zk | World, c: Controller | ControllerWork) -> bool:
    parts = zk.partitions if isinstance(zk, Zk) else zk.parts
    for p in members(zk.deleting):
        for b in parts[p].replicas:
            if c.replica_states[p][b - 1] not in (RS.DELETION_SUCCESSFUL, RS.NON_EXISTENT):
                return False
    return True


def complete_topic_deletion(w: World, c: ControllerWork) -> None:
    if w.protocol.controller_fenced(w, c):
        return  # a deposed controller cannot delete znodes once writes are fenced
    for p in members(w.deleting):
        for b in w.parts[p].replicas:
            if c.replica_states[p][b - 1] == RS.DELETION_SUCCESSFUL:
                replica_to(w, c, p, b, RS.NON_EXISTENT)
        if c.partition_states[p] != PS.NON_EXISTENT:
            partition_to(w, c, p, PS.NON_EXISTENT)
        w.set_part(p, w.empty_zk_partition())
        w.set_reassign(p, ())
        w.preferred &= ~bit(p)
        c.set_reassign_step(p, 0)
    w.deleting = 0
    broadcast_metadata(w, c)


# ---------------------------------------------------------------------------- reassignment
def reassignment_step(w: World, c: ControllerWork, p: int) -> None:
    """Perform the next of the steps of onPartitionReassignment for partition ``p``.

    A step returns False when the reassignment ends there (nothing to do, or given up); a refused
    write (Fenced) ends it too, since a newer controller owns the partition. After the last step
    the controller forgets it; otherwise the next step is due.

    With ``fenced_reassignment_steps`` a controller first compares its epoch with ZooKeeper's
    (/controller_epoch, read in the same step) and, if it has been deposed, abandons the
    reassignment instead: it forgets the step, OAR and RAR (its view of AR is ZooKeeper's again)
    and performs nothing, neither state-machine moves nor requests nor writes. The request stays in
    /admin/reassign_partitions, where the active controller resumed it at its failover.
    """
    step = c.reassign_step[p]
    if w.protocol.reassignment_step_fenced(w, c):
        abandon_reassignment(c, p)
        return
    try:
        go_on = _REASSIGNMENT_STEPS[step](w, c, p)
    except Fenced:
        go_on = False
    if not go_on or step == LAST_STEP:
        c.set_reassign_step(p, 0)
    else:
        c.set_reassign_step(p, next_reassignment_step(c, step) + 1)


def abandon_reassignment(c: ControllerWork, p: int) -> None:
    """Forget partition ``p``'s reassignment (``fenced_reassignment_steps``: a deposed controller)."""
    c.set_reassign_step(p, 0)
    c.set_reassignment(p, (), ())


def reassignment_step_enabled(protocol: Protocol, zk: Zk, c: Controller, p: int) -> bool:
    """Whether controller ``c`` can perform the next step of partition ``p``'s reassignment.

    A reassignment starts (step start) only on the active controller, when the request is in
    ZooKeeper; step caught-up waits until the target has caught up (the protocol's
    :meth:`~.protocol.Protocol.reassignment_caught_up`: every target replica in the ISR); the others
    just proceed.
    """
    step = c.reassign_step[p]
    if step in (0, STEP_START):  # starting, or resuming after a failover: only the active controller,
        # and only for a partition it has created (a request for an unborn topic waits for creation)
        return (bool(zk.reassign[p]) and bool(zk.partitions[p].replicas) and not zk.deleting >> p & 1
                and c.epoch == zk.controller_epoch and c.partition_states[p] != PS.NON_EXISTENT)
    if step == STEP_CAUGHT_UP:
        return protocol.reassignment_caught_up(zk.partitions[p].isr, c.reassign_old[p], c.reassign_new[p])
    return True


def _start(w: World, c: ControllerWork, p: int) -> bool:
    """Read RAR; give up if it equals AR or names a dead broker; else write AR = OAR + RAR."""
    target = w.reassign[p]
    current = w.parts[p].replicas
    if not target:  # the request is gone (another controller completed it): nothing to resume
        return False
    if target == current or any(not c.live >> r & 1 for r in target):
        _drop_reassignment_request(w, c, p)
        return False
    c.set_reassignment(p, current, target)
    union = current + tuple(r for r in target if r not in current)
    zp = w.parts[p]
    w.set_part(p, make_zk_partition(union, zp.leader, zp.isr, zp.leader_epoch, zp.version, zp.controller_epoch,
                                    zp.ext))
    return True


def _bump_epoch(w: World, c: ControllerWork, p: int) -> bool:
    """LeaderAndIsr (AR = OAR + RAR, leader epoch + 1) to every replica of OAR + RAR."""
    if w.parts[p].version:
        bump_leader_epoch(w, c, p, assignment(w, c, p))
    return True


def _new_replicas(w: World, c: ControllerWork, p: int) -> bool:
    for b in c.reassign_new[p]:
        if b not in c.reassign_old[p]:
            replica_to(w, c, p, b, RS.NEW)
    return True


def _caught_up(w: World, c: ControllerWork, p: int) -> bool:
    """Enabled only once every RAR replica is in the ISR."""
    return True


def _online(w: World, c: ControllerWork, p: int) -> bool:
    for b in c.reassign_new[p]:
        replica_to(w, c, p, b, RS.ONLINE)
    return True


def _ar_in_memory(w: World, c: ControllerWork, p: int) -> bool:
    return True  # from the next step on assignment() answers RAR


def _leader(w: World, c: ControllerWork, p: int) -> bool:
    zp = w.parts[p]
    rar = c.reassign_new[p]
    if zp.leader not in rar or not c.live >> zp.leader & 1:
        partition_to(w, c, p, PS.ONLINE, Selector.REASSIGNED_PARTITION)
    elif zp.version:
        bump_leader_epoch(w, c, p, rar)
    return True


def _old_offline(w: World, c: ControllerWork, p: int) -> bool:
    for b in c.reassign_old[p]:
        if b not in c.reassign_new[p]:
            if not replica_to(w, c, p, b, RS.OFFLINE, Removal.REASSIGNMENT):
                raise Fenced()
    return True


def _old_deleted(w: World, c: ControllerWork, p: int) -> bool:
    for b in c.reassign_old[p]:
        if b not in c.reassign_new[p]:
            replica_to(w, c, p, b, RS.DELETION_STARTED)
            replica_to(w, c, p, b, RS.DELETION_SUCCESSFUL)
            replica_to(w, c, p, b, RS.NON_EXISTENT)
    return True


def _ar_in_zk(w: World, c: ControllerWork, p: int) -> bool:
    if w.protocol.controller_fenced(w, c):
        raise Fenced()
    zp = w.parts[p]
    w.set_part(p, make_zk_partition(c.reassign_new[p], zp.leader, zp.isr, zp.leader_epoch, zp.version,
                                    zp.controller_epoch, zp.ext))
    return True


def _clear_request(w: World, c: ControllerWork, p: int) -> bool:
    if w.protocol.controller_fenced(w, c):
        raise Fenced()
    _drop_reassignment_request(w, c, p)
    return True


def _metadata(w: World, c: ControllerWork, p: int) -> bool:
    broadcast_metadata(w, c)
    c.set_reassignment(p, (), ())
    return True


def _drop_reassignment_request(w: World, c: ControllerWork, p: int) -> None:
    """Controller ``c`` removes partition ``p``'s request from /admin/reassign_partitions."""
    w.set_reassign(p, ())
    g = w.ghost[p]
    w.set_ghost(p, make_ghost(g.produced, g.acked, g.exposed, ()))
    w.protocol.on_reassignment_request_removed(w, c, p)


StepFunction = Callable[[World, ControllerWork, int], bool]


def _step_function(name: str) -> StepFunction:
    """The function performing the step called ``name`` in specs/protocol.toml: ``_`` followed by
    the name with ``-`` as ``_`` (step "bump-epoch" is :func:`_bump_epoch`)."""
    f = globals().get("_" + name.replace("-", "_"))
    if f is None:
        raise RuntimeError(f"specs/protocol.toml names the reassignment step {name!r}, which model/controller.py "
                           "does not perform")
    return f  # type: ignore[no-any-return]


#: the function of each value of ``reassign_step``: step n at n (in the order of specs/protocol.toml),
#: and the first step at 0 (a reassignment not yet started)
_REASSIGNMENT_STEPS: Final[dict[int, StepFunction]] = {
    n: _step_function(name) for n, name in enumerate(REASSIGNMENT_STEPS, start=1)}
_REASSIGNMENT_STEPS[0] = _REASSIGNMENT_STEPS[STEP_START]


def next_reassignment_step(c: Controller | ControllerWork | None, step: int) -> int:
    """The step number an action performs (1..LAST_STEP) given the stored ``reassign_step``."""
    return STEP_START if step in (0, STEP_START) else step
