"""Brokers: controller requests, the replication path and crashes (specs/05-replication.md).

Each function is one atomic model step (or a part of one) on a :class:`World`. A fetch is a
request and its response in one step, as in the public TLA+ specifications: the follower sends
its log end offset, the leader records it, may expand the ISR and advance its high watermark,
and answers with the records from that offset (all of them, or at most ``max_fetch_records``) and
the high watermark it had then — which is why a follower's HW lags the leader's by one fetch. The
follower takes that HW bounded by its new log end. ``FetchAnswerLost`` (a budgeted fault) is the
leader's half alone: the answer is lost on its way.
"""
from __future__ import annotations

from . import epochs as E
from .brokersets import bit, mask_of, members
from .records import ids_in, make_record
from .state import (
    ASK_EPOCH_END,
    FETCHING,
    LEADER_AND_ISR,
    NO_LEADER,
    STOP_REPLICA,
    TRUNCATE_PENDING,
    LeaderAndIsr,
    Replica,
    Request,
    StopReplica,
    make_broker,
    make_ghost,
    make_replica,
    make_zk_partition,
)
from .extension import Scope
from .protocol import Stop
from .tables import ReplicaState as RS
from .tables import check_replica_move
from .world import World


# ---------------------------------------------------------------------------- controller requests
def handle_request(w: World, b: int, req: Request) -> None:
    br = w.brokers[b - 1]
    if not w.protocol.accepts_controller_epoch(req[1], br.controller_epoch):
        return  # from a deposed controller: rejected
    if req[1] > br.controller_epoch:
        w.set_broker(b - 1, make_broker(br.alive, req[1], br.replicas, br.ext))
    if req[0] == LEADER_AND_ISR:
        _leader_and_isr(w, b, req)  # type: ignore[arg-type]
    elif req[0] == STOP_REPLICA:
        _stop_replica(w, b, req)  # type: ignore[arg-type]
    else:  # UpdateMetadata: the controller epoch above, and what a variant's broker keeps of it
        w.protocol.on_update_metadata(w, b, req)  # type: ignore[arg-type]


def _leader_and_isr(w: World, b: int, req: LeaderAndIsr) -> None:
    if b not in req.replicas:
        return
    p = req.partition
    r = w.replica(b, p)
    if r is None:
        r = w.fresh_replica()  # startReplica: create the partition locally
    if not w.protocol.accepts_leader_epoch(req.leader_epoch, r.leader_epoch):
        w.set_replica(b, p, r)
        return  # stale leader epoch: rejected
    if req.leader == b:
        _become_leader(w, b, p, r, req)
    elif w.protocol.follows_leader(w, b, req):
        w.set_replica(b, p, w.protocol.become_follower(w, b, p, r, req))
    else:  # the leader is unknown to it: this partition's entry is skipped (its replica exists)
        w.set_replica(b, p, r)


def _become_leader(w: World, b: int, p: int, r: Replica, req: LeaderAndIsr) -> None:
    r = advance_hw(w, b, p, w.protocol.become_leader(w, b, p, r, req))
    w.set_replica(b, p, r)
    w.expose(p, r.log, r.hw)


def offsets_for_leader_epoch(w: World, f: int, p: int) -> None:
    """The follower asks its leader where its latest epoch ends; the answer waits in its replica."""
    rf = w.replica(f, p)
    assert rf is not None
    rl = w.replica(rf.leader, p)
    assert rl is not None
    answer = w.protocol.epoch_end_answer(rl, E.latest(rf.epochs))
    hw = w.protocol.hw_with_epoch_answer(rf, rl.hw)
    w.set_replica(f, p, make_replica(rf.log, hw, rf.checkpoint, rf.leader, rf.leader_epoch, rf.isr, rf.zk_version,
                                     rf.remote_leo, rf.pending, rf.assigned, rf.epochs, TRUNCATE_PENDING, answer,
                                     rf.ext))


def truncate_to_epoch_end(w: World, f: int, p: int) -> None:
    """Apply the OffsetsForLeaderEpoch answer: truncate, then fetch (or ask again, KIP-279)."""
    rf = w.replica(f, p)
    assert rf is not None
    cut, done = w.protocol.truncation_point(rf)
    log = rf.log[:cut]
    state = FETCHING if done or not log else ASK_EPOCH_END
    w.set_replica(f, p, make_replica(log, min(rf.hw, cut), rf.checkpoint, rf.leader, rf.leader_epoch, rf.isr,
                                     rf.zk_version, rf.remote_leo, rf.pending, rf.assigned,
                                     w.protocol.epoch_cache_after_truncation(rf, cut), state, (), rf.ext))


def _stop_replica(w: World, b: int, req: StopReplica) -> None:
    p = req.partition
    r = w.replica(b, p)
    if req.delete:
        w.set_replica(b, p, None)
        c = w.controller(req.controller_epoch)  # the response reaches the controller that asked
        if c is not None and c.replica_states[p][b - 1] == RS.DELETION_STARTED:
            check_replica_move(p, b, RS.DELETION_STARTED, RS.DELETION_SUCCESSFUL)
            c.set_replica_state(p, b, RS.DELETION_SUCCESSFUL)
    elif r is not None and r.leader != b:
        # stop fetching
        w.set_replica(b, p, make_replica(r.log, r.hw, r.checkpoint, NO_LEADER, r.leader_epoch, r.isr, r.zk_version,
                                         r.remote_leo, r.pending, r.assigned, r.epochs, r.fetch_state, r.answer, r.ext))


# ---------------------------------------------------------------------------- replication path
def advance_hw(w: World, leader: int, p: int, r: Replica) -> Replica:
    """Advance the leader's HW by the protocol's rule (``Protocol.high_watermark``: by default the
    smallest LEO in its ISR) and acknowledge what that commits. The HW never goes back, and never
    past the leader's own log end."""
    new_hw = min(w.protocol.high_watermark(w, leader, p, r), len(r.log))
    if new_hw <= r.hw:
        return r
    pending = r.pending
    if pending:
        committed = ids_in(r.log[:new_hw]) & pending
        if committed:
            if w.protocol.acknowledges(r, committed):
                w.acknowledge(p, committed)
            pending &= ~committed
    r = make_replica(r.log, new_hw, r.checkpoint, r.leader, r.leader_epoch, r.isr, r.zk_version,
                     r.remote_leo, pending, r.assigned, r.epochs, r.fetch_state, r.answer, r.ext)
    w.expose(p, r.log, new_hw)
    return r


def produce(w: World, leader: int, p: int) -> None:
    r = w.replica(leader, p)
    assert r is not None
    g = w.ghost[p]
    rid = g.produced + 1
    w.set_ghost(p, make_ghost(rid, g.acked, g.exposed, g.reassign_origin))
    epochs = r.epochs
    if w.protocol.uses_leader_epochs:
        epochs = E.assign(epochs, r.leader_epoch, len(r.log))
    r = make_replica(r.log + (make_record(rid, r.leader_epoch),), r.hw, r.checkpoint, r.leader, r.leader_epoch, r.isr,
                     r.zk_version, r.remote_leo, r.pending | 1 << rid, r.assigned, epochs, r.fetch_state, r.answer,
                     r.ext)
    w.set_replica(leader, p, advance_hw(w, leader, p, r))


def _leader_counts_fetch(w: World, f: int, p: int, offset: int) -> tuple[Replica, int]:
    """The leader's half of ``f``'s fetch of ``p`` from ``offset`` (at most its LEO): it records the
    offset, may add ``f`` to its ISR, and recomputes its HW; its replica after that, and the HW it had
    before (the one its answer carries)."""
    rf = w.replica(f, p)
    assert rf is not None
    leader = rf.leader
    rl = w.replica(leader, p)
    assert rl is not None
    answered_hw = rl.hw  # the response carries the HW read before this fetch is recorded
    remote = rl.remote_leo
    isr, zk_version = rl.isr, rl.zk_version
    ext = rl.ext
    if not isr >> f & 1 and w.protocol.may_expand_isr(rl, f, offset, isr | bit(f)):
        proposed = w.protocol.propose_isr(w, leader, p, rl, isr | bit(f))
        if proposed is not None:  # asynchronous: the controller applies it later
            ext = proposed.ext
        else:
            written = write_isr(w, leader, p, rl, isr | bit(f))
            if written is not None:
                zk_version, isr = written
    rl = make_replica(rl.log, rl.hw, rl.checkpoint, rl.leader, rl.leader_epoch, isr, zk_version,
                      remote[: f - 1] + (offset,) + remote[f:], rl.pending, rl.assigned, rl.epochs, rl.fetch_state,
                      rl.answer, ext)
    rl = advance_hw(w, leader, p, rl)
    w.set_replica(leader, p, rl)
    return rl, answered_hw


def fetch(w: World, f: int, p: int) -> None:
    rf = w.replica(f, p)
    assert rf is not None
    rl = w.replica(rf.leader, p)
    assert rl is not None
    offset = len(rf.log)
    if offset > len(rl.log):  # OffsetOutOfRange: the follower truncates to the leader's LEO
        log = rf.log[: len(rl.log)]
        w.set_replica(f, p, make_replica(log, min(rf.hw, len(log)), rf.checkpoint, rf.leader, rf.leader_epoch,
                                         rf.isr, rf.zk_version, rf.remote_leo, rf.pending, rf.assigned,
                                         E.truncate(rf.epochs, len(log)), rf.fetch_state, rf.answer, rf.ext))
        return
    rl, answered_hw = _leader_counts_fetch(w, f, p, offset)
    end = len(rl.log)
    limit = w.protocol.max_fetch_records
    if limit and offset + limit < end:  # a partial fetch: at most max_fetch_records from the offset
        end = offset + limit
    log = rf.log + rl.log[offset:end]
    epochs = E.after_append(rf.epochs, log, offset) if w.protocol.uses_leader_epochs else rf.epochs
    w.set_replica(f, p, make_replica(log, min(answered_hw, len(log)), rf.checkpoint, rf.leader, rf.leader_epoch,
                                     rf.isr, rf.zk_version, rf.remote_leo, rf.pending, rf.assigned, epochs,
                                     rf.fetch_state, rf.answer, rf.ext))


def fetch_answer_lost(w: World, f: int, p: int) -> None:
    """``FetchAnswerLost(f, p)``: the leader handles ``f``'s fetch exactly as in :func:`fetch` (it
    records the offset, may add ``f`` to its ISR and advance its HW) but the answer never reaches
    ``f``, which changes nothing and will fetch again from the same offset (specs/05-replication.md,
    "Fetch"). Enabled only where the offset is within the leader's log: an OffsetOutOfRange answer
    changes only the follower, so losing it is no step."""
    rf = w.replica(f, p)
    assert rf is not None
    rl = w.replica(rf.leader, p)
    assert rl is not None
    if len(rf.log) > len(rl.log):
        raise ValueError(f"broker {f}'s fetch of partition {p} is beyond its leader's log end: nothing to lose")
    _leader_counts_fetch(w, f, p, len(rf.log))


def write_isr(w: World, leader: int, p: int, rl: Replica, isr: int) -> tuple[int, int] | None:
    """The leader's conditional write of its leader/ISR view: the new znode version and the ISR
    written, or None if refused.

    The leader writes what it believes (itself as leader, its leader epoch, the new ISR: what
    ``Protocol.leader_isr_change`` decides), on the condition that the znode still has the version
    it last saw. A refused write leaves ZooKeeper and the leader's cached ISR unchanged until the
    controller's LeaderAndIsr arrives.
    """
    zp = w.parts[p]
    if not w.protocol.isr_write_succeeds(zp.version, rl.zk_version):
        return None
    change = w.protocol.leader_isr_change(w, leader, p, rl, isr)
    ext = zp.ext if change.fields is None else change.fields
    w.set_part(p, make_zk_partition(zp.replicas, change.leader, change.isr, rl.leader_epoch, zp.version + 1,
                                    zp.controller_epoch, ext))
    return zp.version + 1, change.isr


def shrink_isr(w: World, leader: int, p: int, follower: int) -> None:
    rl = w.replica(leader, p)
    assert rl is not None
    proposed = w.protocol.propose_isr(w, leader, p, rl, rl.isr & ~bit(follower))
    if proposed is not None:  # asynchronous: the controller applies it later
        w.set_replica(leader, p, advance_hw(w, leader, p, proposed))
        return
    written = write_isr(w, leader, p, rl, rl.isr & ~bit(follower))
    assert written is not None, "ShrinkIsr is enabled only when the conditional write succeeds"
    version, new_isr = written
    rl = make_replica(rl.log, rl.hw, rl.checkpoint, rl.leader, rl.leader_epoch, new_isr, version, rl.remote_leo,
                      rl.pending, rl.assigned, rl.epochs, rl.fetch_state, rl.answer, rl.ext)
    w.set_replica(leader, p, advance_hw(w, leader, p, rl))


def _checkpointed(r: Replica) -> Replica:
    """``r`` with its HW written to the checkpoint file."""
    return make_replica(r.log, r.hw, r.hw, r.leader, r.leader_epoch, r.isr, r.zk_version, r.remote_leo,
                        r.pending, r.assigned, r.epochs, r.fetch_state, r.answer, r.ext)


def checkpoint_hw(w: World, b: int, p: int) -> None:
    r = w.replica(b, p)
    assert r is not None
    w.set_replica(b, p, _checkpointed(r))


# ---------------------------------------------------------------------------- crashes
def crash(w: World, b: int, kept: tuple[int, ...] | None = None, how: Stop = Stop.CRASH) -> None:
    """The broker stops; what survives of each replica is ``Protocol.replica_after_stop`` (its log,
    or with ``kept`` the surviving lengths, and its HW checkpoint); the broker's variant fields
    that are not persistent go back to their initial values."""
    br = w.brokers[b - 1]
    protocol = w.protocol
    replicas: list[Replica | None] = []
    for p, r in enumerate(br.replicas):
        if r is None:
            replicas.append(None)
        else:
            replicas.append(protocol.replica_after_stop(r, len(r.log) if kept is None else kept[p], how))
    w.set_broker(b - 1, make_broker(False, 0, tuple(replicas), protocol.extension.after_crash(Scope.BROKER, br.ext)))
    w.set_inbox(b - 1, ())
    w.live &= ~bit(b)
    protocol.on_stop(w, b, how)


def graceful_stop(w: World, b: int) -> None:
    """Controlled shutdown's last act: flush and checkpoint, then stop."""
    br = w.brokers[b - 1]
    if w.protocol.periodic_checkpoints:
        w.set_broker(b - 1, make_broker(br.alive, br.controller_epoch, tuple(
            None if r is None else _checkpointed(r) for r in br.replicas), br.ext))
    crash(w, b, None, Stop.CONTROLLED_SHUTDOWN)


def restart(w: World, b: int, noticed: bool) -> None:
    br = w.brokers[b - 1]
    w.set_broker(b - 1, make_broker(True, br.controller_epoch, br.replicas, br.ext))
    _register(w, b)
    w.protocol.on_restart(w, b, noticed)


def _register(w: World, b: int) -> None:
    """Create ``b``'s ephemeral registration. Its registration count (the czxid) is only tracked
    where a controller reads it (``detect_restarts``), so models without it keep their states."""
    w.live |= bit(b)
    if w.protocol.detects_restarts():
        registrations = list(w.registrations)
        registrations[b - 1] += 1
        w.registrations = tuple(registrations)


# ---------------------------------------------------------------------------- session expiry
def expire_session(w: World, b: int) -> None:
    """``b``'s ZooKeeper session expires: its ephemeral registration vanishes, nothing else.

    The process keeps running with its logs, its high watermarks, its role and cached ISR, and
    the controller requests already on their way; the controller will see a broker failure.
    """
    w.live &= ~bit(b)


def reregister(w: World, b: int) -> None:
    """``b`` opens a new session and registers again, with a new czxid, as a restart registers;
    its in-memory state is unchanged, so until the controller's requests arrive it acts on it."""
    _register(w, b)
