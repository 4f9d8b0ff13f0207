"""A trace as a message sequence: who sent what to whom at each step, read off the model's states.

The model's steps are atomic (a fetch is its request and its response in one action,
specs/actions.toml), so the messages are not in the state; this module reconstructs them from the
action and from what the step changed, for the report's sequence diagram. The lanes are the
controller (active or deposed: the label names the controller epoch), the metadata store
(ZooKeeper), each broker, and the clients (producers and administrators).

Controller requests are drawn when a broker takes them from its inbox (``DeliverRequest``), as an
arrow from the controller; the controller's own step notes which brokers it queued requests for.
A step without a message (a crash, a checkpoint) is a note on its actor's lane, so every step
shows. Nothing here decides a verdict.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from isrcheck.engine.core import Step
from isrcheck.model.brokersets import members
from isrcheck.model.brokersets import render as render_set
from isrcheck.model.records import record_id
from isrcheck.model.state import LEADER_AND_ISR, NO_LEADER, STOP_REPLICA, Request, State, Zk
from isrcheck.specs.actions import actions as vocabulary

CONTROLLER = "controller"
STORE = "zk"
CLIENTS = "clients"


@dataclass(frozen=True)
class Lane:
    key: str  # "controller", "zk", "b1", ..., "clients"
    title: str


@dataclass(frozen=True)
class Message:
    """An arrow: a request (solid) or a response (dashed) from lane ``src`` to lane ``dst``."""

    step: int
    src: str
    dst: str
    label: str
    response: bool = False


@dataclass(frozen=True)
class Note:
    """Something that happens on one lane alone (``fault``: a crash, an illegal transition)."""

    step: int
    lane: str
    text: str
    fault: bool = False


Event = Message | Note


def lanes(state: State) -> list[Lane]:
    """The lanes of a model of ``state``'s size, left to right."""
    out = [Lane(CONTROLLER, "controller"), Lane(STORE, "ZooKeeper")]
    out += [Lane(f"b{i + 1}", f"broker {i + 1}") for i in range(len(state.brokers))]
    out.append(Lane(CLIENTS, "clients"))
    return out


def broker_lane(b: int) -> str:
    return f"b{b}"


def request_text(req: Request) -> str:
    """A controller request in words (the fields a reader needs to follow the protocol)."""
    if req[0] == LEADER_AND_ISR:
        leader = "none" if req[3] == NO_LEADER else str(req[3])
        return (f"LeaderAndIsr p{req[2]} leader {leader} ISR {render_set(req[4])} epoch {req[5]}"
                f" (controller {req[1]})")
    if req[0] == STOP_REPLICA:
        return f"StopReplica p{req[2]}{' delete' if req[3] else ''} (controller {req[1]})"
    if req[2]:  # with a metadata cache: the live brokers it carries
        return f"UpdateMetadata live {{{','.join(str(b) for b in range(1, req[2][0].bit_length()) if req[2][0] >> b & 1)}}} (controller {req[1]})"
    return f"UpdateMetadata (controller {req[1]})"


def store_writes(a: Zk, b: Zk) -> list[str]:
    """What changed in the store's partition and admin paths, one text per write."""
    out: list[str] = []
    for p, (x, y) in enumerate(zip(a.partitions, b.partitions)):
        if x == y:
            continue
        parts = []
        if x.replicas != y.replicas:
            parts.append("deleted" if not y.replicas else "AR [" + ",".join(map(str, y.replicas)) + "]")
        if (x.leader, x.isr, x.leader_epoch) != (y.leader, y.isr, y.leader_epoch) and y.replicas:
            leader = "none" if y.leader == NO_LEADER else str(y.leader)
            parts.append(f"leader {leader} ISR {render_set(y.isr)} epoch {y.leader_epoch}")
        out.append(f"p{p} " + (", ".join(parts) if parts else f"version {y.version}"))
    for p, (x, y) in enumerate(zip(a.reassign, b.reassign)):
        if x != y:
            out.append(f"reassign p{p} " + ("[" + ",".join(map(str, y)) + "]" if y else "done"))
    if a.preferred != b.preferred:
        out.append(f"preferred election {render_set(b.preferred) if b.preferred else 'done'}")
    if a.deleting != b.deleting:
        out.append(f"delete topics {render_set(b.deleting) if b.deleting else 'done'}")
    return out


def _queued(s: State, t: State) -> list[int]:
    """Brokers whose inbox grew at its end during the step."""
    out = []
    for i, (x, y) in enumerate(zip(s.inbox, t.inbox)):
        if len(y) > len(x) and y[:len(x)] == x:
            out.append(i + 1)
    return out


def _acks(i: int, s: State, t: State, lane: str) -> list[Event]:
    out: list[Event] = []
    for p, (x, y) in enumerate(zip(s.ghost, t.ghost)):
        new = y.acked & ~x.acked
        if new:
            ids = ", ".join(f"m{r}" for r in members(new))
            out.append(Message(i, lane, CLIENTS, f"ack p{p} {ids}", response=True))
    return out


def _replica_leader(s: State, broker: int, partition: int) -> int:
    r = s.brokers[broker - 1].replicas[partition]
    return NO_LEADER if r is None else r.leader


def step_events(i: int, s: State, action: object, t: State | None) -> list[Event]:
    """The messages and notes of step ``i``: ``action`` took ``s`` to ``t`` (None: it broke a state
    machine)."""
    name: str = getattr(action, "name")
    args: tuple = getattr(action, "args")
    spec = vocabulary().get(name)
    actor = spec.actor if spec is not None else "controller"
    own = (CONTROLLER if actor == "controller" else CLIENTS if actor == "admin"
           else broker_lane(args[0]) if args else STORE)
    if t is None:
        return [Note(i, own, "illegal transition", fault=True)]
    ev: list[Event] = []
    if name == "Produce":
        leader, p = args
        before, after = s.brokers[leader - 1].replicas[p], t.brokers[leader - 1].replicas[p]
        rec = f" m{record_id(after.log[-1])}" if before is not None and after is not None and \
            len(after.log) > len(before.log) else ""
        ev.append(Message(i, CLIENTS, broker_lane(leader), f"Produce p{p}{rec}"))
        ev += _acks(i, s, t, broker_lane(leader))
    elif name in ("Fetch", "OffsetsForLeaderEpoch"):
        f, p = args
        leader = _replica_leader(s, f, p)
        before, after = s.brokers[f - 1].replicas[p], t.brokers[f - 1].replicas[p]
        if leader == NO_LEADER or before is None or after is None:
            ev.append(Note(i, broker_lane(f), f"{action}: no leader known"))
        elif name == "Fetch":
            ev.append(Message(i, broker_lane(f), broker_lane(leader), f"Fetch p{p} from offset {len(before.log)}"))
            n = len(after.log) - len(before.log)
            ev.append(Message(i, broker_lane(leader), broker_lane(f),
                              f"{max(n, 0)} record{'s' if n != 1 else ''}, HW {after.hw}", response=True))
            ev += [Message(i, broker_lane(leader), STORE, w) for w in store_writes(s.zk, t.zk)]
            ev += _acks(i, s, t, broker_lane(leader))
        else:
            ev.append(Message(i, broker_lane(f), broker_lane(leader), f"OffsetsForLeaderEpoch p{p}"))
            answer = f"epoch {after.answer[0]} ends at {after.answer[1]}" if len(after.answer) >= 2 else "answer"
            ev.append(Message(i, broker_lane(leader), broker_lane(f), answer, response=True))
    elif name == "FetchAnswerLost":
        f, p = args
        leader = _replica_leader(s, f, p)
        before = s.brokers[f - 1].replicas[p]
        if leader == NO_LEADER or before is None:
            ev.append(Note(i, broker_lane(f), f"{action}: no leader known"))
        else:
            ev.append(Message(i, broker_lane(f), broker_lane(leader), f"Fetch p{p} from offset {len(before.log)}"))
            ev.append(Note(i, broker_lane(leader), f"answer to b{f} lost", fault=True))
            ev += [Message(i, broker_lane(leader), STORE, w) for w in store_writes(s.zk, t.zk)]
            ev += _acks(i, s, t, broker_lane(leader))
    elif name == "ShrinkIsr":
        leader, p, follower = args
        writes = store_writes(s.zk, t.zk)
        ev.append(Message(i, broker_lane(leader), STORE, f"shrink ISR p{p}: drop {follower}"))
        ev.append(Message(i, STORE, broker_lane(leader), "ok: " + "; ".join(writes) if writes else "rejected",
                          response=True))
    elif name in ("DeliverRequest", "DeliverDelayedRequest"):
        b = args[0]
        k = args[1] if name == "DeliverDelayedRequest" else 0
        inbox = s.inbox[b - 1]
        text = request_text(inbox[k]) if 0 <= k < len(inbox) else "request"
        ev.append(Message(i, CONTROLLER, broker_lane(b), text + (" (overtook older ones)" if k else "")))
    elif actor == "controller":
        if name == "ProcessBrokerChange":
            ev.append(Message(i, STORE, CONTROLLER, f"broker change: live {render_set(t.zk.live)}"))
        elif name == "ControlledShutdown":
            ev.append(Message(i, broker_lane(args[1]), CONTROLLER, "ControlledShutdown"))
        ev += [Message(i, CONTROLLER, STORE, w) for w in store_writes(s.zk, t.zk)]
        queued = _queued(s, t)
        if queued:
            ev.append(Note(i, CONTROLLER, "queued for " + ", ".join(f"b{b}" for b in queued)))
        if name == "ResignController":
            ev.append(Note(i, CONTROLLER, f"controller {args[0]} resigns"))
    elif actor == "admin":
        ev += [Message(i, CLIENTS, STORE, w) for w in store_writes(s.zk, t.zk)]
    elif name == "ControllerFailover":
        ev.append(Note(i, CONTROLLER, "session expired", fault=True))
        ev.append(Message(i, STORE, CONTROLLER, f"controller {t.zk.controller_epoch} elected"))
    elif name in ("Crash", "LossyCrash"):
        ev.append(Note(i, broker_lane(args[0]), "crash" + (" (unflushed data lost)" if name == "LossyCrash" else ""),
                       fault=True))
    elif name in ("Restart", "QuickRestart"):
        b = args[0]
        ev.append(Note(i, broker_lane(b), "restart" + (" (unnoticed)" if name == "QuickRestart" else "")))
        if t.zk.registrations != s.zk.registrations or (t.zk.live & ~s.zk.live):
            ev.append(Message(i, broker_lane(b), STORE, f"register broker {b}"))
    elif name == "ExpireSession":  # the process runs on; only its registration is gone
        ev.append(Note(i, broker_lane(args[0]), "session expired (still running)", fault=True))
    elif name == "Reregister":
        b = args[0]
        ev.append(Note(i, broker_lane(b), "new session"))
        ev.append(Message(i, broker_lane(b), STORE, f"register broker {b}"))
    elif name == "TruncateToEpochEndOffset":
        f, p = args
        r = t.brokers[f - 1].replicas[p]
        ev.append(Note(i, broker_lane(f), f"truncate p{p} to {len(r.log) if r is not None else 0}"))
    elif name == "CheckpointHighWatermark":
        b, p = args
        r = t.brokers[b - 1].replicas[p]
        ev.append(Note(i, broker_lane(b), f"checkpoint p{p} HW {r.hw if r is not None else 0}"))
    if not ev:  # the step changed only what its actor holds in memory (or nothing)
        ev.append(Note(i, own, "no message"))
    return ev


def sequence(trace: Sequence[Step]) -> list[Event]:
    """Every step's events in order (step 0, the initial state, has none)."""
    out: list[Event] = []
    prev: State | None = None
    for i, st in enumerate(trace):
        if prev is not None and st.action is not None:
            out += step_events(i, prev, st.action, st.state)
        if st.state is not None:
            prev = st.state
    return out
