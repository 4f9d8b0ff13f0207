"""Every action of the model: when it is enabled and what it does.

An :class:`Action` is a name and a tuple of arguments, exactly as listed in specs/actions.toml
(the vocabulary the reference implementation and the conformance harness share), and ``str`` of it
is the vocabulary's text form (:func:`isrcheck.specs.actions.action_text`). Controllers are named
by their epoch, brokers by id, partitions by index.
"""
from __future__ import annotations

from itertools import product
from typing import Any, Callable, Final, NamedTuple

from isrcheck.specs.actions import action_text

from . import broker as B
from . import controller as C
from .brokersets import members
from isrcheck.engine.core import tuple_constructor
from .extension import Scope
from .protocol import Protocol, Stop
from .state import (
    ASK_EPOCH_END,
    FETCHING,
    NO_LEADER,
    TRUNCATE_PENDING,
    Budget,
    Controller,
    Request,
    State,
    budget_with,
    make_controller,
    make_ghost,
)
from .tables import PartitionState as PS
from .world import ControllerWork, World


class Action(NamedTuple):
    name: str
    args: tuple

    def __str__(self) -> str:
        return action_text(self.name, self.args)


# Every state's enabled actions are built anew, most of them the same few values (Fetch(2, 0), ...).
# They are built with the state classes' constructor (engine/_newtuple.c in the compiled build, see
# state.py), which costs less than looking an already built one up: interning them in a table
# (done before that constructor existed) hashed a key tuple per action, 4% of a step.
_new: Final[Callable[..., Any]] = tuple_constructor()
_ACTION: Final = Action  # a Final name is a C variable in the compiled build, not a dict lookup


def make_action(name: str, args: tuple) -> Action:
    """``Action(name, args)``, without the NamedTuple's interpreted constructor (see state.py)."""
    return _new(_ACTION, name, args)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- enumeration
def enabled_actions(protocol: Protocol, s: State) -> list[Action]:
    """All actions enabled in ``s``, in a fixed order (which keeps runs deterministic)."""
    out: list[Action] = []
    zk = s.zk
    budget = s.budget
    nparts = len(zk.partitions)

    # -- brokers: deliveries, replication, checkpoints
    for i, br in enumerate(s.brokers):
        b = i + 1
        if not br.alive:
            continue
        queue = s.inbox[i]
        if queue:
            out.append(make_action("DeliverRequest", (b,)))
            if budget.delayed_requests:
                for k in range(1, len(queue)):
                    out.append(make_action("DeliverDelayedRequest", (b, k)))
            elif protocol.per_controller_connections:
                for k in range(1, len(queue)):
                    if overtakes_other_controllers(queue, k):
                        out.append(make_action("DeliverDelayedRequest", (b, k)))
        for p, r in enumerate(br.replicas):
            if r is None:
                continue
            if r.leader == b:
                if (s.ghost[p].produced < protocol.max_records and zk.partitions[p].replicas
                        and protocol.accepts_produce(r)):
                    out.append(make_action("Produce", (b, p)))
                if budget.isr_shrinks and protocol.isr_write_succeeds(zk.partitions[p].version, r.zk_version):
                    for f in members(r.isr):
                        if f != b and protocol.may_shrink_isr(r, f, r.isr & ~(1 << f)):
                            out.append(make_action("ShrinkIsr", (b, p, f)))
            elif r.leader != NO_LEADER:
                if r.fetch_state == FETCHING:
                    lb = s.brokers[r.leader - 1]
                    lr = lb.replicas[p]
                    if (lb.alive and lr is not None and lr.leader == r.leader and protocol.serves_fetch(lr, b)
                            and protocol.epoch_matches(r.leader_epoch, lr.leader_epoch)):
                        out.append(make_action("Fetch", (b, p)))
                        # the answer lost: a step only where the leader's half changes something (the
                        # offset not yet recorded, or the follower out of its ISR) and is not an
                        # OffsetOutOfRange answer, which changes only the follower
                        offset = len(r.log)
                        if budget.lost_fetch_answers and offset <= len(lr.log) and (
                                lr.remote_leo[i] != offset or not lr.isr >> b & 1):
                            out.append(make_action("FetchAnswerLost", (b, p)))
                elif r.fetch_state == ASK_EPOCH_END:
                    lb = s.brokers[r.leader - 1]
                    lr = lb.replicas[p]
                    if (lb.alive and lr is not None and lr.leader == r.leader
                            and protocol.epoch_matches(r.leader_epoch, lr.leader_epoch)):
                        out.append(make_action("OffsetsForLeaderEpoch", (b, p)))
            if r.fetch_state == TRUNCATE_PENDING:
                out.append(make_action("TruncateToEpochEndOffset", (b, p)))
            if protocol.periodic_checkpoints and r.checkpoint != r.hw:
                out.append(make_action("CheckpointHighWatermark", (b, p)))

    # -- controllers (active first, then a stale one)
    for c, active in ((s.controller, True), (s.stale, False)):
        if c is None:
            continue
        e = c.epoch
        if c.live != zk.live or (protocol.detects_restarts() and c.registrations != zk.registrations):
            out.append(make_action("ProcessBrokerChange", (e,)))
        if protocol.topic_creation and not zk.deleting and any(
                zk.partitions[p].replicas and zk.partitions[p].version == 0
                and c.partition_states[p] == PS.NON_EXISTENT for p in range(nparts)):
            out.append(make_action("CreateTopic", (e,)))
        for p in range(nparts):
            step = c.reassign_step[p]
            if (step or (active and zk.reassign[p])) and C.reassignment_step_enabled(protocol, zk, c, p):
                out.append(make_action("ReassignPartition", (e, p, C.next_reassignment_step(c, step))))
            if zk.preferred >> p & 1:
                out.append(make_action("ElectPreferredLeader", (e, p)))
        if zk.deleting:
            if not C.deletion_started(zk, c):
                if not any(c.reassign_step[p] for p in members(zk.deleting)):
                    out.append(make_action("StartTopicDeletion", (e,)))
            elif C.deletion_complete(zk, c):
                out.append(make_action("CompleteTopicDeletion", (e,)))
        if active and budget.controlled_shutdowns:
            for b in members(c.live & zk.live & ~c.shutting_down):
                out.append(make_action("ControlledShutdown", (e, b)))
        if not active:
            out.append(make_action("ResignController", (e,)))
    if budget.controller_failovers:
        out.append(make_action("ControllerFailover", ()))

    # -- administrators
    if s.reassignments:
        p, target = s.reassignments[0]
        if zk.partitions[p].replicas and not zk.reassign[p] and not zk.deleting >> p & 1:
            out.append(make_action("RequestReassignment", (p, target)))
    if budget.preferred_elections:
        for p in range(nparts):
            if zk.partitions[p].replicas and not zk.preferred >> p & 1 and not zk.deleting:
                out.append(make_action("RequestPreferredElection", (p,)))
    if budget.topic_deletions and not zk.deleting and any(zp.replicas for zp in zk.partitions):
        out.append(make_action("RequestTopicDeletion", ()))

    # -- faults
    for i, br in enumerate(s.brokers):
        b = i + 1
        if br.alive:
            if budget.crashes:
                out.append(make_action("Crash", (b,)))
            if budget.lossy_crashes:
                choices = [range(len(r.log) + 1) if r is not None else (0,) for r in br.replicas]
                full = tuple(len(r.log) if r is not None else 0 for r in br.replicas)
                for kept in product(*choices):
                    if kept != full:
                        out.append(make_action("LossyCrash", (b, kept)))
            # a running broker is unregistered only after its session expired (and budget 0 never gets
            # there), so Reregister can never appear in a model without session expiries
            if zk.live >> b & 1:
                if budget.session_expiries:
                    out.append(make_action("ExpireSession", (b,)))
            else:
                out.append(make_action("Reregister", (b,)))
        else:
            noticed = not s.controller.live >> b & 1
            if noticed:
                out.append(make_action("Restart", (b,)))
            elif budget.undetected_restarts:
                out.append(make_action("QuickRestart", (b,)))
    if protocol.has_extra_actions:
        out.extend(protocol.extra_enabled(s))
    return out


# ---------------------------------------------------------------------------- application
def _controller(w: World, epoch: int) -> ControllerWork:
    c = w.controller(epoch)
    if c is None:
        raise ValueError(f"no controller with epoch {epoch}")
    return c


_BUDGET_FIELD: Final = {name: i for i, name in enumerate(Budget._fields)}


def _spend(w: World, field: str) -> None:
    i = _BUDGET_FIELD[field]
    left = w.budget[i]
    if left <= 0:
        raise ValueError(f"no {field} left in the budget")
    w.budget = budget_with(w.budget, i, left - 1)


def _deliver(w: World, b: int, index: int) -> None:
    queue = w.inbox[b - 1]
    req = queue[index]
    w.set_inbox(b - 1, queue[:index] + queue[index + 1:])
    B.handle_request(w, b, req)


def overtakes_other_controllers(queue: tuple[Request, ...], index: int) -> bool:
    """Whether the request at ``index`` is the oldest of its controller in ``queue``: every request
    before it comes from another controller (another controller epoch), so with one connection per
    controller it may arrive first without any message being delayed (specs/05-replication.md)."""
    epoch = queue[index][1]
    for k in range(index):
        if queue[k][1] == epoch:
            return False
    return True


def _deliver_delayed(w: World, b: int, index: int) -> None:
    queue = w.inbox[b - 1]
    if not 0 < index < len(queue):
        raise ValueError(f"broker {b}'s queue has no request at position {index} to deliver early")
    if not (w.protocol.per_controller_connections and overtakes_other_controllers(queue, index)):
        _spend(w, "delayed_requests")  # it overtakes an older request of its own controller
    _deliver(w, b, index)


def _controller_failover(w: World) -> None:
    _spend(w, "controller_failovers")
    w.controller_epoch += 1
    cfg = w.protocol.config
    nb, np_ = cfg.brokers, cfg.partitions
    new = ControllerWork(initial_controller(w.controller_epoch, nb, np_,
                                            w.protocol.extension.initial(Scope.CONTROLLER)))
    w.replace_active(new, keep_old_as_stale=cfg.stale_controller)
    C.on_controller_failover(w, new)


def _reassignment_step(w: World, e: int, p: int, step: int) -> None:
    c = _controller(w, e)
    due = C.next_reassignment_step(c, c.reassign_step[p])
    if step != due:
        raise ValueError(f"controller {e} is at step {due} of partition {p}'s reassignment, not {step}")
    C.reassignment_step(w, c, p)


def _controlled_shutdown(w: World, e: int, b: int) -> None:
    _spend(w, "controlled_shutdowns")
    C.controlled_shutdown(w, _controller(w, e), b)
    B.graceful_stop(w, b)


def _request_reassignment(w: World, p: int, target: tuple[int, ...]) -> None:
    w.set_reassign(p, target)
    g = w.ghost[p]
    w.set_ghost(p, make_ghost(g.produced, g.acked, g.exposed, w.parts[p].replicas))
    w.reassignments = w.reassignments[1:]


def _request_preferred(w: World, p: int) -> None:
    _spend(w, "preferred_elections")
    w.preferred |= 1 << p


def _request_deletion(w: World) -> None:
    _spend(w, "topic_deletions")
    for p, zp in enumerate(w.parts):
        if zp.replicas:
            w.deleting |= 1 << p


def _crash(w: World, b: int) -> None:
    _spend(w, "crashes")
    B.crash(w, b)


def _lossy_crash(w: World, b: int, kept: tuple[int, ...]) -> None:
    _spend(w, "lossy_crashes")
    B.crash(w, b, kept, Stop.LOSSY_CRASH)


def _restart(w: World, b: int) -> None:
    B.restart(w, b, noticed=True)


def _quick_restart(w: World, b: int) -> None:
    _spend(w, "undetected_restarts")
    B.restart(w, b, noticed=False)


def _expire_session(w: World, b: int) -> None:
    _spend(w, "session_expiries")
    B.expire_session(w, b)


def _fetch_answer_lost(w: World, f: int, p: int) -> None:
    _spend(w, "lost_fetch_answers")
    B.fetch_answer_lost(w, f, p)


def _shrink(w: World, leader: int, p: int, follower: int) -> None:
    _spend(w, "isr_shrinks")
    B.shrink_isr(w, leader, p, follower)


APPLY: Final[dict[str, Callable[..., None]]] = {
    "DeliverRequest": lambda w, b: _deliver(w, b, 0),
    "DeliverDelayedRequest": _deliver_delayed,
    "Produce": B.produce,
    "Fetch": B.fetch,
    "FetchAnswerLost": _fetch_answer_lost,
    "OffsetsForLeaderEpoch": B.offsets_for_leader_epoch,
    "TruncateToEpochEndOffset": B.truncate_to_epoch_end,
    "ShrinkIsr": _shrink,
    "CheckpointHighWatermark": B.checkpoint_hw,
    "ProcessBrokerChange": lambda w, e: C.process_broker_change(w, _controller(w, e)),
    "CreateTopic": lambda w, e: C.on_new_partition_creation(w, _controller(w, e)),
    "ReassignPartition": lambda w, e, p, step: _reassignment_step(w, e, p, step),
    "ElectPreferredLeader": lambda w, e, p: C.on_preferred_replica_election(w, _controller(w, e), p),
    "StartTopicDeletion": lambda w, e: C.start_topic_deletion(w, _controller(w, e)),
    "CompleteTopicDeletion": lambda w, e: C.complete_topic_deletion(w, _controller(w, e)),
    "ControlledShutdown": _controlled_shutdown,
    "ControllerFailover": _controller_failover,
    "ResignController": lambda w, e: w.drop_stale() if w.protocol.resignation_stops_controller() else None,
    "RequestReassignment": _request_reassignment,
    "RequestPreferredElection": _request_preferred,
    "RequestTopicDeletion": _request_deletion,
    "Crash": _crash,
    "LossyCrash": _lossy_crash,
    "Restart": _restart,
    "QuickRestart": _quick_restart,
    "ExpireSession": _expire_session,
    "Reregister": B.reregister,
}


def apply(protocol: Protocol, s: State, action: Action) -> State:
    """The state after ``action``; raises IllegalTransition if a state machine forbids a move."""
    w = World(protocol, s)
    effect = APPLY.get(action.name)
    if effect is not None:
        effect(w, *action.args)
    else:  # one of a variant's own actions (or a name nobody knows: the variant says so)
        protocol.extra_apply(w, action)
    return w.freeze()


def initial_controller(epoch: int, brokers: int, partitions: int, ext: tuple[int, ...] = ()) -> Controller:
    """A controller's context as it is elected, before it reads anything (``ext``: a variant's
    controller fields at their initial values)."""
    return make_controller(
        epoch, 0, (0,) * brokers, (PS.NON_EXISTENT,) * partitions,
        tuple((0,) * brokers for _ in range(partitions)), (0,) * partitions,
        ((),) * partitions, ((),) * partitions, 0, ext,
    )
