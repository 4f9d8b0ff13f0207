"""The deterministic simulator: the implementation's cores in one process, on an embedded store,
with simulated disks, a virtual clock and controllable message delivery.

It has two ways of running, over the same machinery:

**Step by step, by action name** (:meth:`Simulator.apply`). Every action of specs/actions.toml is
drivable: ``sim.apply("Fetch", (2, 0))``, ``sim.apply("Crash", (1,))``, ``sim.apply("DeliverRequest",
(3,))``. The cores run non-autonomously, so nothing happens between actions. This is the mode the
conformance harness uses; it follows the model's atomicity choices (specs/00-scope.md):

- controller requests wait in one FIFO inbox per broker and are handled by ``DeliverRequest`` /
  ``DeliverDelayedRequest``; a request to a stopped broker is lost, and the inbox is lost when the
  broker stops; an UpdateMetadata is not queued behind a request of the same controller epoch
  (item 9: it could not change anything more); with ``controller_connections = "per-controller"``
  each controller has its own connection, so ``DeliverDelayedRequest`` of the oldest request of its
  controller in the inbox (every request ahead of it from other controllers) is enabled without
  spending ``faults.delayed_requests`` (:meth:`Simulator.overtakes_other_controllers`);
- a fetch is one step: the request, the leader's handling (including its conditional ISR write in
  the store) and the response are delivered within ``Fetch``; a broker's answer to a deleting
  StopReplica reaches the controller that sent it within the delivery;
- leader-epoch reconciliation (``generation`` = ``kip-101`` / ``kip-279`` / ``kip-320``) is two steps:
  ``OffsetsForLeaderEpoch(f, p)`` delivers the follower's question to its leader and the leader's
  answer back, where it waits in the follower's replica (``truncate-pending``);
  ``TruncateToEpochEndOffset(f, p)`` has the follower apply it. Under ``kip-320`` a fetch or a
  question whose leader epoch differs from the leader's is fenced: not an enabled step;
- the store is instantaneous: a crash expires the broker's session (its registration vanishes in the
  same step) and a controller learns of it only when it performs ``ProcessBrokerChange``;
- ``ExpireSession(b)`` expires a running broker's session and nothing else: the broker is not told and
  keeps its state; ``Reregister(b)`` opens it a new session and feeds it ``SessionRenewed``, and its
  registration is created within the step;
- a deposed controller keeps its context and acts until ``ResignController``; its store calls go
  through a new session (as a ZooKeeper client reconnecting after expiry would).

An action whose guard does not hold raises :class:`NotEnabled` (for example ``Fetch`` by a broker that
follows nobody); a malformed one raises :class:`ActionError`.

**Scheduled** (:meth:`Simulator.run`): a scheduler seeded with ``random.Random(seed)`` picks, at every
step, one of the actions enabled in the current state (:meth:`Simulator.enabled`), within the
budgets of the configuration's ``[faults]`` and ``[operations]``; the virtual clock advances by one
tick per step. Two runs with the same configuration and seed produce identical event logs
(:attr:`Simulator.events`).

Messages can be controlled in both modes: :meth:`delay` moves a queued controller request to the back
of its inbox, :meth:`drop` loses it.

**Autonomous, in virtual time** (:class:`AutoSimulator`): the cores as the real processes run them
(timers, watches, long-polled fetches, lag-based ISR shrink, controller candidates electing through the
store), on a discrete-event loop in virtual milliseconds with seeded message latencies, message
filters (drop or delay), crashes with or without power loss, and a retrying producer client.
"""
from __future__ import annotations

import heapq
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

from isrcheck.specs.actions import action_text

from ..core import layout as L
from ..core.broker import ASK_EPOCH_END, FETCHING, NO_LEADER, STALE_FETCH, TRUNCATE_PENDING, BrokerCore
from ..core.config import ImplConfig, from_mapping
from ..core.controller import NOT_ENABLED, STEP_START, ControllerCore
from ..core.messages import (CancelTimer, Command, Committed, FetchResponse, LeaderAndIsr, Notification, Persist,
                             ProduceRequest, ProduceResponse, Receive, Send, SessionRenewed, SetTimer, Stop,
                             StopReplica, StoreOp, Timer, UpdateMetadata, client)
from ..core.observation import assemble, stopped_replica
from ..core import epoch_cache as EC
from ..core.store import StoreError
from ..disk.log import SimDisk
from ..store.embedded import EmbeddedSession, EmbeddedStore


class ActionError(ValueError):
    """An unknown action or malformed arguments."""


class NotEnabled(RuntimeError):
    """The action's guard does not hold in the current state."""


ACTIONS = ("DeliverRequest", "Produce", "Fetch", "FetchAnswerLost", "OffsetsForLeaderEpoch", "TruncateToEpochEndOffset",
           "ShrinkIsr", "CheckpointHighWatermark", "ProcessBrokerChange",
           "CreateTopic", "ReassignPartition", "ElectPreferredLeader", "StartTopicDeletion",
           "CompleteTopicDeletion", "ControlledShutdown", "ResignController", "RequestReassignment",
           "RequestPreferredElection", "RequestTopicDeletion", "DeliverDelayedRequest", "ControllerFailover",
           "Crash", "LossyCrash", "Restart", "QuickRestart", "ExpireSession", "Reregister")

#: actions of the vocabulary the implementation cannot drive yet, and why (none left)
NOT_YET_DRIVABLE: dict[str, str] = {}

PRODUCER = client("producer")


@dataclass
class _Proc:
    """A running core and its store session."""

    core: Any
    session: EmbeddedSession
    kind: str  # "broker" | "controller"


@dataclass
class _Inbound:
    frm: Any
    msg: Any


@dataclass
class Budget:
    left: dict[str, int] = field(default_factory=dict)

    def has(self, key: str) -> bool:
        return self.left.get(key, 0) > 0

    def spend(self, key: str) -> None:
        self.left[key] = self.left.get(key, 0) - 1


def _config(config: ImplConfig | dict[str, Any] | None) -> ImplConfig:
    """A simulator's configuration: given, read from a specs/03 mapping, or the defaults."""
    if config is None:
        return from_mapping({})
    return from_mapping(config) if isinstance(config, dict) else config


class _ClusterView:
    """What both simulators show of the cluster they run: the store's snapshot, a partition's leader
    and ISR, and the observation of specs/observation.toml.

    Written once because the observation is what conformance compares with the model's: the
    step-by-step and the autonomous simulator must not differ in how they observe, say, a stopped
    broker's disk. They differ only in their controllers (:meth:`_controllers_observed`).
    """

    cfg: ImplConfig
    admin: EmbeddedSession
    brokers: dict[int, Any]  # broker id -> its running process (``core``), None while stopped
    disks: dict[int, SimDisk]

    def snapshot(self) -> L.Snapshot:
        return L.read_snapshot(self.admin, self.cfg.topic, self.cfg.partitions, watch=False)

    def leader_of(self, p: int) -> int:
        st = self.snapshot().part(p).state
        return st.leader if st else 0

    def isr_of(self, p: int) -> tuple[int, ...]:
        st = self.snapshot().part(p).state
        return tuple(sorted(st.isr)) if st else ()

    def observe(self) -> dict[str, Any]:
        """The observation of the current state (specs/observation.toml)."""
        brokers: dict[int, dict[str, Any]] = {}
        for b in self.cfg.broker_ids:
            proc = self.brokers[b]
            if proc is not None:
                o = proc.core.observe()
                brokers[b] = {"alive": True, "controller_epoch": o["controller_epoch"], "replicas": o["replicas"]}
            else:
                disk = self.disks[b]
                reps = {p: stopped_replica(seg.records, disk.hw_on_disk(p), self._epochs_after_stop(disk, p))
                        for p, seg in disk.segments.items()}
                brokers[b] = {"alive": False, "controller_epoch": 0, "replicas": reps}
        controller, deposed_epoch = self._controllers_observed()
        return assemble(self.cfg.brokers, self.cfg.partitions, self.snapshot(), controller, deposed_epoch, brokers)

    def _epochs_after_stop(self, disk: Any, p: int) -> list[tuple[int, int]]:
        """A stopped broker's leader-epoch cache as its recovery will hold it (its every stop is a crash,
        so KAFKA-10432's rule applies when it is put back): the observation shows what a restart keeps."""
        cache = [(int(e), int(s)) for e, s in disk.epochs_on_disk(p)]
        EC.after_unclean_stop(cache, self.cfg.reintroduces("KAFKA-10432"))
        return cache

    def _controllers_observed(self) -> tuple[dict[str, Any], int]:
        """The acting controller's observation, and the epoch of a deposed controller still acting
        (0: none)."""
        raise NotImplementedError


class Simulator(_ClusterView):
    def __init__(self, config: ImplConfig | dict[str, Any] | None = None, seed: int = 0,
                 coalesce_metadata: bool = True) -> None:
        self.cfg = config = _config(config)
        self.seed = seed
        self.rng = random.Random(seed)
        self.now = 0  # virtual milliseconds
        self.coalesce_metadata = coalesce_metadata
        self.store = EmbeddedStore()
        self.admin = self.store.session()
        self.disks = {b: SimDisk() for b in config.broker_ids}
        self.brokers: dict[int, _Proc | None] = {b: None for b in config.broker_ids}
        self.inbox: dict[int, deque[_Inbound]] = {b: deque() for b in config.broker_ids}
        self.controllers: list[_Proc] = []  # the active controller last; a deposed one before it
        self.events: list[str] = []
        self.produced = {p: 0 for p in range(config.partitions)}
        #: the acknowledged writes, as the history of specs/05-replication.md ("Produce") counts them:
        #: with acks=all the producer's successful answers (at commitment); with acks=1 the records
        #: that committed at the leader that appended them (the producer was answered earlier)
        self.acked: dict[int, set[int]] = {p: set() for p in range(config.partitions)}
        #: every write the producer was told succeeded (with acks=1: on the leader's append)
        self.answered: dict[int, set[int]] = {p: set() for p in range(config.partitions)}
        self.refused: dict[int, set[int]] = {p: set() for p in range(config.partitions)}
        self.budget = Budget({**{f"faults.{k}": int(v) for k, v in config.faults.items()},
                              **{f"operations.{k}": int(v) for k, v in config.operations.items()
                                 if isinstance(v, int) and not isinstance(v, bool)}})
        self.pending_reassignments: list[tuple[int, tuple[int, ...]]] = [
            (int(r["partition"]), tuple(r["target"])) for r in config.operations.get("reassignments", [])]
        self._request_ids = 0
        #: (follower, partition) whose fetch answer the next step loses (FetchAnswerLost), or None
        self._losing_answer_to: tuple[int, int] | None = None
        self._last_record: dict[int, tuple[int, int]] = {}
        self._bootstrap()

    # ------------------------------------------------------------------ bootstrap
    def _bootstrap(self) -> None:
        L.ensure_base(self.admin)
        for b in self.cfg.broker_ids:
            self._start_broker(b, fresh=True)
        self._start_controller()
        if not self.cfg.topic_creation:
            self.admin.multi(L.create_topic_ops(self.cfg.topic, self.cfg.assignment))
            self._controller_cmd(self.active, "CreateTopic", ())
            for b in self.cfg.broker_ids:
                while self.inbox[b]:
                    self._deliver(b, 0)
        else:
            for b in self.cfg.broker_ids:  # brokers have not heard from the controller yet
                self.inbox[b].clear()
            self.admin.multi(L.create_topic_ops(self.cfg.topic, self.cfg.assignment))
        for proc in self._procs():
            proc.session.poll_events()
        self.events.append(f"# bootstrap done: {self.cfg.brokers} brokers, {self.cfg.partitions} partitions, "
                           f"seed {self.seed}")

    def _start_broker(self, b: int, fresh: bool) -> None:
        if fresh:
            core = BrokerCore(self.cfg, b)
        else:
            core = BrokerCore.recover(self.cfg, b, self.disks[b].image())
        proc = _Proc(core, self.store.session(), "broker")
        self.brokers[b] = proc
        self._run(proc, core.handle(Command("Start"), self.now))

    def _start_controller(self) -> None:
        name = f"controller-{len(self.controllers) + 1}"
        core = ControllerCore(self.cfg, name=name)
        proc = _Proc(core, self.store.session(), "controller")
        self.controllers.append(proc)
        self._run(proc, core.handle(Command("Start")))
        if not core.active:
            raise RuntimeError(f"the new controller was not elected: {core.last_status}")

    # ------------------------------------------------------------------ processes
    @property
    def active(self) -> _Proc:
        return self.controllers[-1]

    @property
    def deposed(self) -> _Proc | None:
        return self.controllers[-2] if len(self.controllers) > 1 else None

    def controller(self, epoch: int) -> _Proc:
        for proc in self.controllers:
            if proc.core.epoch == epoch:
                return proc
        raise NotEnabled(f"no controller with epoch {epoch} is acting")

    def broker(self, b: int) -> BrokerCore:
        proc = self.brokers.get(b)
        if proc is None:
            raise NotEnabled(f"broker {b} is not running")
        return proc.core

    def _procs(self) -> list[_Proc]:
        return [p for p in self.brokers.values() if p is not None] + list(self.controllers)

    # ------------------------------------------------------------------ effects
    def _run(self, proc: _Proc, effects: Iterable[Any]) -> None:
        """Perform effects in order; store results and immediate messages feed back at once."""
        work = deque((proc, e) for e in effects)
        while work:
            src, eff = work.popleft()
            out = self._perform(src, eff)
            for item in reversed(out):
                work.appendleft(item)

    def _session(self, proc: _Proc) -> EmbeddedSession:
        if proc.session.expired:  # a client whose session expired reconnects with a new one
            proc.session = self.store.session()
        return proc.session

    def _perform(self, src: _Proc, eff: Any) -> list[tuple[_Proc, Any]]:
        core = src.core
        if isinstance(eff, StoreOp):
            res = L.execute(self._session(src), eff)
            return [(src, e) for e in self._feed(src, res)]
        if isinstance(eff, Send):
            return self._route(src, eff)
        if isinstance(eff, Persist):
            self.disks[core.id].apply(eff)
            return []
        if isinstance(eff, (SetTimer, CancelTimer)):
            return []  # step mode: no timers (the cores are not autonomous)
        if isinstance(eff, Committed):  # acks=1 records committed: acknowledged, in the history's sense
            self.acked[eff.partition].update(eff.record_ids)
            self.events.append(f"  committed acks=1 record(s) {', '.join(map(str, eff.record_ids))} "
                               f"of partition {eff.partition}")
            return []
        if isinstance(eff, Stop):
            if src.kind == "controller":
                if src in self.controllers:
                    self.controllers.remove(src)
                    self.events.append(f"  controller {core.epoch} stops: {eff.reason}")
            return []
        raise RuntimeError(f"unknown effect {eff!r}")

    def _feed(self, proc: _Proc, inp: Any) -> list[Any]:
        if proc.kind == "broker":
            return proc.core.handle(inp, self.now)
        return proc.core.handle(inp)

    def _route(self, src: _Proc, eff: Send) -> list[tuple[_Proc, Any]]:
        kind, key = eff.to
        frm = ("controller", src.core.epoch) if src.kind == "controller" else ("broker", src.core.id)
        msg = eff.msg
        if kind == "broker":
            dest = self.brokers.get(key)
            if dest is None:
                self.events.append(f"  lost {_short(msg)} to stopped broker {key}")
                return []
            if src.kind == "controller":
                queue = self.inbox[key]
                if self.coalesce_metadata and isinstance(msg, UpdateMetadata) and any(
                        q.msg.controller_epoch == msg.controller_epoch for q in queue):
                    return []
                queue.append(_Inbound(frm, msg))
                self.events.append(f"  {frm[0]} {frm[1]} -> broker {key}: {_short(msg)}")
                return []
            if isinstance(msg, FetchResponse) and self._losing_answer_to == (key, msg.partition) \
                    and msg.error != STALE_FETCH:  # (a refused fetch counted nothing: the follower's next does)
                self.events.append(f"  lost broker {frm[1]} -> broker {key}: {_short(msg)}")
                return []
            self.events.append(f"  broker {frm[1]} -> broker {key}: {_short(msg)}")
            return [(dest, e) for e in self._feed(dest, Receive(frm, msg))]
        if kind == "controller":
            procs = [p for p in self.controllers if p.core.epoch == key] if key else [self.active]
            if not procs:
                self.events.append(f"  lost {_short(msg)} to controller {key}")
                return []
            dest = procs[0]
            self.events.append(f"  broker {frm[1]} -> controller {dest.core.epoch}: {_short(msg)}")
            return [(dest, e) for e in self._feed(dest, Receive(frm, msg))]
        if kind == "client":
            if isinstance(msg, ProduceResponse) and msg.error == "" and msg.request_id in self._last_record:
                rid = self._last_record.get(msg.request_id)
                if rid is not None:
                    p, record = rid
                    self.answered[p].add(record)
                    if self.cfg.acks == "all":
                        self.acked[p].add(record)
                    self.events.append(f"  ack record {record} of partition {p}")
            elif isinstance(msg, ProduceResponse):
                rid = self._last_record.get(msg.request_id)
                if rid is not None:
                    self.refused[rid[0]].add(rid[1])
                    self.events.append(f"  refused record {rid[1]}: {msg.error}")
            return []
        raise RuntimeError(f"unknown address {eff.to!r}")

    def _controller_cmd(self, proc: _Proc, name: str, args: tuple) -> str:
        self._run(proc, proc.core.handle(Command(name, args)))
        status = proc.core.last_status
        if status.startswith(NOT_ENABLED):
            raise NotEnabled(f"{name}{args}: {status}")
        return status

    def _broker_cmd(self, b: int, name: str, args: tuple) -> None:
        proc = self.brokers.get(b)
        if proc is None:
            raise NotEnabled(f"broker {b} is not running")
        self._run(proc, proc.core.handle(Command(name, args), self.now))

    def _deliver(self, b: int, index: int) -> None:
        queue = self.inbox[b]
        if index >= len(queue):
            raise NotEnabled(f"broker {b}'s inbox has no request at position {index}")
        item = queue[index]
        del queue[index]
        proc = self.brokers[b]
        assert proc is not None
        self.events.append(f"  broker {b} handles {_short(item.msg)}")
        self._run(proc, proc.core.handle(Receive(item.frm, item.msg), self.now))

    def overtakes_other_controllers(self, b: int, index: int) -> bool:
        """With one connection per controller (``controller_connections = "per-controller"``): whether
        the request at ``index`` of broker ``b``'s inbox is the oldest one its controller sent there,
        so that it may be handled before the requests ahead of it (all from other controllers)."""
        if self.cfg.controller_connections != "per-controller":
            return False
        queue = self.inbox[b]
        if not 0 < index < len(queue):
            return False
        frm = queue[index].frm
        return all(queue[k].frm != frm for k in range(index))

    # ------------------------------------------------------------------ message control
    def delay(self, b: int, index: int = 0) -> None:
        """Move the request at ``index`` of broker ``b``'s inbox to the back."""
        q = self.inbox[b]
        item = q[index]
        del q[index]
        q.append(item)

    def drop(self, b: int, index: int = 0) -> None:
        """Lose the request at ``index`` of broker ``b``'s inbox."""
        del self.inbox[b][index]

    # ------------------------------------------------------------------ actions
    def apply(self, name: str, args: tuple | list = ()) -> None:
        """Perform one action of the vocabulary (specs/actions.toml)."""
        args = tuple(tuple(a) if isinstance(a, list) else a for a in args)
        if name in NOT_YET_DRIVABLE:
            raise ActionError(f"{name} is not drivable: {NOT_YET_DRIVABLE[name]}")
        fn = getattr(self, f"_a_{name}", None)
        if fn is None or name not in ACTIONS:
            raise ActionError(f"unknown action {name!r}")
        arity = fn.__code__.co_argcount - 1
        if len(args) != arity:
            raise ActionError(f"{name} takes {arity} argument(s), got {len(args)}")
        self.now += 1
        self.events.append(f"t={self.now} {action_text(name, args)}")
        fn(*args)

    def _a_DeliverRequest(self, b: int) -> None:
        self.broker(b)
        if not self.inbox[b]:
            raise NotEnabled(f"broker {b} has no request waiting")
        self._deliver(b, 0)

    def _a_DeliverDelayedRequest(self, b: int, k: int) -> None:
        self.broker(b)
        if k < 1:
            raise ActionError("DeliverDelayedRequest needs a position >= 1")
        self._deliver(b, k)

    def _a_Produce(self, b: int, p: int) -> None:
        core = self.broker(b)
        if not core.leads(p):
            raise NotEnabled(f"broker {b} does not lead partition {p}")
        self.produced[p] = self.produced.get(p, 0) + 1
        record = self.produced[p]
        self._request_ids += 1
        self._last_record[self._request_ids] = (p, record)
        req = ProduceRequest(self._request_ids, p, record, f"r{record}", self.cfg.acks)
        proc = self.brokers[b]
        assert proc is not None
        self._run(proc, core.handle(Receive(PRODUCER, req), self.now))

    def _followed_leader(self, f: int, p: int) -> tuple[Any, Any]:
        """The follower's replica and its leader's, when ``f`` follows a broker that leads ``p``."""
        core = self.broker(f)
        r = core.replicas.get(p)
        if r is None or r.leader in (NO_LEADER, f):
            raise NotEnabled(f"broker {f} does not follow anyone for partition {p}")
        leader = self.brokers.get(r.leader)
        if leader is None or not leader.core.leads(p):
            raise NotEnabled(f"broker {r.leader} does not lead partition {p}")
        return r, leader.core.replicas[p]

    def _check_fenced(self, r: Any, lr: Any, what: str) -> None:
        if self.cfg.traits.fenced_by_leader_epoch and r.leader_epoch != lr.leader_epoch:
            raise NotEnabled(f"{what} is fenced: the follower's leader epoch {r.leader_epoch} is not the "
                             f"leader's {lr.leader_epoch} ({self.cfg.generation})")

    def _fetch_served(self, f: int, p: int) -> tuple[Any, Any]:
        """Broker ``f``'s replica of ``p`` and its leader's, when a fetch of ``f`` would be served:
        ``f`` fetching (not reconciling), counted among the leader's replicas, not fenced."""
        r, lr = self._followed_leader(f, p)
        if r.fetch_state != FETCHING:
            raise NotEnabled(f"broker {f} is reconciling partition {p} ({r.fetch_state}), not fetching")
        if not self.broker(r.leader).serves_follower(lr, f):
            raise NotEnabled(f"broker {r.leader} does not count broker {f} among partition {p}'s replicas")
        self._check_fenced(r, lr, f"broker {f}'s fetch")
        return r, lr

    def _a_Fetch(self, f: int, p: int) -> None:
        self._fetch_served(f, p)
        self._broker_cmd(f, "Fetch", (p,))

    def _a_FetchAnswerLost(self, f: int, p: int) -> None:
        """The follower's fetch reaches the leader, which handles it as always; its answer is lost."""
        r, lr = self._fetch_served(f, p)
        if r.leo > lr.leo:
            raise NotEnabled(f"broker {f}'s fetch offset {r.leo} is beyond its leader's log end {lr.leo}: "
                             f"the answer only truncates the follower, losing it changes nothing")
        self._losing_answer_to = (f, p)
        try:
            self._broker_cmd(f, "Fetch", (p,))
        finally:
            self._losing_answer_to = None

    def _a_OffsetsForLeaderEpoch(self, f: int, p: int) -> None:
        core = self.broker(f)
        r = core.replicas.get(p)
        if r is None or r.fetch_state != ASK_EPOCH_END:
            raise NotEnabled(f"broker {f} has no question to ask about partition {p} "
                             f"({r.fetch_state if r is not None else 'no replica'})")
        r, lr = self._followed_leader(f, p)
        self._check_fenced(r, lr, f"broker {f}'s OffsetsForLeaderEpoch")
        self._broker_cmd(f, "OffsetsForLeaderEpoch", (p,))
        if r.fetch_state != TRUNCATE_PENDING:
            raise RuntimeError(f"broker {f}'s question about partition {p} was not answered")

    def _a_TruncateToEpochEndOffset(self, f: int, p: int) -> None:
        core = self.broker(f)
        r = core.replicas.get(p)
        if r is None or r.fetch_state != TRUNCATE_PENDING:
            raise NotEnabled(f"broker {f} holds no OffsetsForLeaderEpoch answer for partition {p}")
        self._broker_cmd(f, "TruncateToEpochEndOffset", (p,))

    def _a_ShrinkIsr(self, leader: int, p: int, f: int) -> None:
        core = self.broker(leader)
        r = core.replicas.get(p)
        if r is None or r.leader != leader or f == leader or f not in r.isr:
            raise NotEnabled(f"broker {leader} cannot drop {f} from partition {p}'s ISR")
        self._broker_cmd(leader, "ShrinkIsr", (p, f))

    def _a_CheckpointHighWatermark(self, b: int, p: int) -> None:
        core = self.broker(b)
        if p not in core.replicas:
            raise NotEnabled(f"broker {b} hosts no replica of partition {p}")
        self._broker_cmd(b, "CheckpointHighWatermark", (p,))

    def _a_ProcessBrokerChange(self, e: int) -> None:
        self._controller_cmd(self.controller(e), "ProcessBrokerChange", ())

    def _a_CreateTopic(self, e: int) -> None:
        self._controller_cmd(self.controller(e), "CreateTopic", ())

    def _a_ReassignPartition(self, e: int, p: int, step: int) -> None:
        proc = self.controller(e)
        r = proc.core.ctx.reassign.get(p)
        expected = r.step if r is not None else STEP_START
        if step != expected:
            raise NotEnabled(f"controller {e}'s next reassignment step of partition {p} is {expected}, not {step}")
        self._controller_cmd(proc, "ReassignPartition", (p,))

    def _a_ElectPreferredLeader(self, e: int, p: int) -> None:
        self._controller_cmd(self.controller(e), "ElectPreferredLeader", (p,))

    def _a_StartTopicDeletion(self, e: int) -> None:
        self._controller_cmd(self.controller(e), "StartTopicDeletion", ())

    def _a_CompleteTopicDeletion(self, e: int) -> None:
        self._controller_cmd(self.controller(e), "CompleteTopicDeletion", ())

    def _a_ControlledShutdown(self, e: int, b: int) -> None:
        proc = self.controller(e)
        if proc is not self.active:
            raise NotEnabled("only the active controller serves a controlled shutdown")
        self.broker(b)
        self._controller_cmd(proc, "ControlledShutdown", (b,))
        if self.cfg.hw_checkpoint == "periodic":  # the broker writes its checkpoints, flushes and stops
            self._broker_cmd(b, "CheckpointAll", ())
        self._broker_cmd(b, "FlushAll", ())
        self._stop_broker(b, lossy=None)

    def _a_ResignController(self, e: int) -> None:
        proc = self.controller(e)
        if proc is self.active:
            raise NotEnabled("the active controller does not resign")
        self._run(proc, proc.core.handle(Command("ResignController")))
        if proc in self.controllers:
            self.controllers.remove(proc)

    def _a_RequestReassignment(self, p: int, target: tuple[int, ...]) -> None:
        try:
            L.request_reassignment(self.admin, self.cfg.topic, p, target)
        except StoreError as e:
            raise NotEnabled(f"cannot request a reassignment of partition {p}: {e}") from None
        if self.pending_reassignments and self.pending_reassignments[0] == (p, tuple(target)):
            self.pending_reassignments.pop(0)

    def _a_RequestPreferredElection(self, p: int) -> None:
        L.request_preferred_election(self.admin, self.cfg.topic, p)

    def _a_RequestTopicDeletion(self) -> None:
        snap = self.snapshot()
        parts = [p for p in range(self.cfg.partitions) if snap.part(p).exists]
        try:
            L.request_topic_deletion(self.admin, self.cfg.topic, parts)
        except StoreError as e:
            raise NotEnabled(f"cannot queue the topic for deletion: {e}") from None

    def _a_ControllerFailover(self) -> None:
        old = self.active
        self.store.expire(old.session.session_id)  # its session ends: /controller vanishes
        if self.cfg.stale_controller:
            self.controllers = [old]  # an earlier deposed controller is taken to have noticed
        else:
            self.controllers = []
        self._start_controller()

    def _a_Crash(self, b: int) -> None:
        self.broker(b)
        self._stop_broker(b, lossy=None)

    def _a_LossyCrash(self, b: int, kept: tuple[int, ...]) -> None:
        self.broker(b)
        if len(kept) != self.cfg.partitions:
            raise ActionError(f"LossyCrash needs one length per partition ({self.cfg.partitions})")
        self._stop_broker(b, lossy={p: int(n) for p, n in enumerate(kept)})

    def _a_Restart(self, b: int) -> None:
        if self.brokers.get(b) is not None:
            raise NotEnabled(f"broker {b} is running")
        if b in self.active.core.ctx.live:
            raise NotEnabled(f"the controller has not noticed that broker {b} stopped (QuickRestart)")
        self._start_broker(b, fresh=False)

    def _a_QuickRestart(self, b: int) -> None:
        if self.brokers.get(b) is not None:
            raise NotEnabled(f"broker {b} is running")
        if b not in self.active.core.ctx.live:
            raise NotEnabled(f"the controller noticed that broker {b} stopped (Restart)")
        self._start_broker(b, fresh=False)

    def _a_ExpireSession(self, b: int) -> None:
        proc = self.brokers.get(b)
        if proc is None:
            raise NotEnabled(f"broker {b} is not running")
        if b not in self.snapshot().registered:
            raise NotEnabled(f"broker {b} is not registered (Reregister)")
        # the registration vanishes with the session; the broker hears nothing and keeps its state (a
        # store call it makes meanwhile goes through a new session, unannounced, as an ISR write would)
        self.store.expire(proc.session.session_id)
        self.events.append(f"  session of broker {b} expires")

    def _a_Reregister(self, b: int) -> None:
        proc = self.brokers.get(b)
        if proc is None:
            raise NotEnabled(f"broker {b} is not running (Restart)")
        if b in self.snapshot().registered:
            raise NotEnabled(f"broker {b} is registered")
        session = self._session(proc)  # a new one unless a store call since the expiry opened it
        self.events.append(f"  broker {b} opens store session {session.session_id}")
        self._run(proc, proc.core.handle(SessionRenewed(session.session_id), self.now))
        if b not in self.snapshot().registered:
            raise RuntimeError(f"broker {b} did not register again: {proc.core.registered=}")

    def _stop_broker(self, b: int, lossy: dict[int, int] | None) -> None:
        proc = self.brokers[b]
        assert proc is not None
        self.store.expire(proc.session.session_id)
        self.brokers[b] = None
        self.inbox[b].clear()
        self.disks[b].crash()
        if lossy is not None:
            self.disks[b].power_loss(lossy)

    # ------------------------------------------------------------------ observation
    def _controllers_observed(self) -> tuple[dict[str, Any], int]:
        dep = self.deposed
        return self.active.core.observe(), dep.core.epoch if dep is not None else 0

    # ------------------------------------------------------------------ scheduling
    def enabled(self) -> list[tuple[str, tuple]]:
        """The actions whose guards hold now, within the budgets (a fixed order)."""
        cfg = self.cfg
        out: list[tuple[str, tuple]] = []
        snap = self.snapshot()
        for b in cfg.broker_ids:
            proc = self.brokers[b]
            if proc is None:
                continue
            core: BrokerCore = proc.core
            if self.inbox[b]:
                out.append(("DeliverRequest", (b,)))
                if self.budget.has("faults.delayed_requests"):
                    out += [("DeliverDelayedRequest", (b, k)) for k in range(1, len(self.inbox[b]))]
                else:
                    out += [("DeliverDelayedRequest", (b, k)) for k in range(1, len(self.inbox[b]))
                            if self.overtakes_other_controllers(b, k)]
            for p, r in sorted(core.replicas.items()):
                if r.leader == b:
                    if (self.produced.get(p, 0) < cfg.max_records and snap.part(p).exists
                            and (cfg.acks == "1" or len(r.isr) >= cfg.min_insync_replicas)):
                        out.append(("Produce", (b, p)))
                    if self.budget.has("faults.isr_shrinks") and snap.part(p).state_version == r.zk_version:
                        out += [("ShrinkIsr", (b, p, f)) for f in sorted(r.isr) if f != b]
                elif r.leader != NO_LEADER and r.fetch_state in (FETCHING, ASK_EPOCH_END):
                    lp = self.brokers.get(r.leader)
                    if lp is not None and lp.core.leads(p):
                        lr = lp.core.replicas[p]
                        served = not cfg.traits.fenced_by_leader_epoch or r.leader_epoch == lr.leader_epoch
                        if r.fetch_state == ASK_EPOCH_END and served:
                            out.append(("OffsetsForLeaderEpoch", (b, p)))
                        elif r.fetch_state == FETCHING and served and lp.core.serves_follower(lr, b):
                            out.append(("Fetch", (b, p)))
                            if self.budget.has("faults.lost_fetch_answers") and r.leo <= lr.leo and (
                                    lr.remote_leo.get(b, 0) != r.leo or b not in lr.isr):
                                out.append(("FetchAnswerLost", (b, p)))
                if r.fetch_state == TRUNCATE_PENDING:
                    out.append(("TruncateToEpochEndOffset", (b, p)))
                if cfg.hw_checkpoint == "periodic" and r.ckpt != r.hw:
                    out.append(("CheckpointHighWatermark", (b, p)))
        for proc in self.controllers:
            e = proc.core.epoch
            for name, args in proc.core.enabled_commands(snap):
                if name == "ReassignPartition":
                    r = proc.core.ctx.reassign.get(args[0])
                    args = (args[0], r.step if r is not None else STEP_START)
                out.append((name, (e, *args)))
            if proc is self.active and self.budget.has("operations.controlled_shutdowns"):
                for b in sorted(proc.core.ctx.live - proc.core.ctx.shutting_down):
                    if b in snap.registered:
                        out.append(("ControlledShutdown", (e, b)))
            if proc is not self.active:
                out.append(("ResignController", (e,)))
        if self.budget.has("faults.controller_failovers"):
            out.append(("ControllerFailover", ()))
        if self.pending_reassignments:
            p, target = self.pending_reassignments[0]
            if snap.part(p).exists and p not in snap.reassign and p not in snap.deleting:
                out.append(("RequestReassignment", (p, target)))
        if self.budget.has("operations.preferred_elections"):
            for p in range(cfg.partitions):
                if snap.part(p).exists and p not in snap.preferred and not snap.deleting:
                    out.append(("RequestPreferredElection", (p,)))
        if (self.budget.has("operations.topic_deletions") and not snap.deleting
                and any(snap.part(p).exists for p in range(cfg.partitions))):
            out.append(("RequestTopicDeletion", ()))
        live_view = self.active.core.ctx.live
        for b in cfg.broker_ids:
            if self.brokers[b] is not None:
                if b not in snap.registered:
                    out.append(("Reregister", (b,)))
                elif self.budget.has("faults.session_expiries"):
                    out.append(("ExpireSession", (b,)))
                if self.budget.has("faults.crashes"):
                    out.append(("Crash", (b,)))
                if self.budget.has("faults.lossy_crashes"):
                    kept = tuple(self.rng.randrange(0, len(s.records) + 1) if s.records else 0
                                 for p in range(cfg.partitions) for s in [self.disks[b].segments.get(p) or _EMPTY])
                    full = tuple(len((self.disks[b].segments.get(p) or _EMPTY).records) for p in range(cfg.partitions))
                    if kept != full:
                        out.append(("LossyCrash", (b, kept)))
            elif b not in live_view:
                out.append(("Restart", (b,)))
            elif self.budget.has("faults.undetected_restarts"):
                out.append(("QuickRestart", (b,)))
        return out

    _BUDGETED = {"ShrinkIsr": "faults.isr_shrinks", "DeliverDelayedRequest": "faults.delayed_requests",
                 "ControllerFailover": "faults.controller_failovers", "Crash": "faults.crashes",
                 "LossyCrash": "faults.lossy_crashes", "QuickRestart": "faults.undetected_restarts",
                 "ExpireSession": "faults.session_expiries", "FetchAnswerLost": "faults.lost_fetch_answers",
                 "ControlledShutdown": "operations.controlled_shutdowns",
                 "RequestPreferredElection": "operations.preferred_elections",
                 "RequestTopicDeletion": "operations.topic_deletions"}

    def spends_budget(self, name: str, args: tuple) -> str | None:
        """The budget ``name(*args)`` spends now (a key of ``_BUDGETED``), or None.

        With ``controller_connections = "per-controller"`` a ``DeliverDelayedRequest`` that only
        overtakes other controllers' requests is free: they came over other connections.
        """
        if name == "DeliverDelayedRequest" and self.overtakes_other_controllers(*args):
            return None
        return self._BUDGETED.get(name)

    def step(self) -> tuple[str, tuple] | None:
        """Take one scheduled step; None when nothing is enabled."""
        choices = self.enabled()
        if not choices:
            return None
        name, args = self.rng.choice(choices)
        key = self.spends_budget(name, args)
        if key is not None:
            self.budget.spend(key)
        self.apply(name, args)
        return name, args

    def run(self, steps: int) -> list[tuple[str, tuple]]:
        """Up to ``steps`` scheduled steps; the actions taken."""
        taken = []
        for _ in range(steps):
            a = self.step()
            if a is None:
                break
            taken.append(a)
        return taken

    # ------------------------------------------------------------------ conveniences for tests
    def settle(self, max_steps: int = 1000) -> int:
        """Take every healing step until none is left: deliveries, fetches, controller reactions.

        Deterministic (always the first enabled healing action); returns the number of steps taken.
        """
        healing = ("DeliverRequest", "Fetch", "OffsetsForLeaderEpoch", "TruncateToEpochEndOffset",
                   "ProcessBrokerChange", "CreateTopic", "ReassignPartition", "ElectPreferredLeader",
                   "StartTopicDeletion", "CompleteTopicDeletion", "ResignController")
        n = 0
        while n < max_steps:
            options = [a for a in self.enabled() if a[0] in healing]
            if not options:
                return n
            others = [a for a in options if a[0] != "Fetch"]
            busy = [a for a in options if a[0] == "Fetch" and not self._fetch_is_idle(*a[1])]
            if not others and not busy:
                return n  # only idle fetches remain
            self.apply(*(others[0] if others else busy[0]))
            n += 1
        return n

    def _fetch_is_idle(self, f: int, p: int) -> bool:
        r = self.broker(f).replicas[p]
        lr = self.broker(r.leader).replicas[p]
        return r.leo == lr.leo and r.hw == lr.hw and f in lr.isr and lr.remote_leo.get(f) == r.leo


class _Empty:
    records: list = []


_EMPTY = _Empty()


def _short(msg: Any) -> str:
    if isinstance(msg, LeaderAndIsr):
        return (f"LeaderAndIsr(c{msg.controller_epoch} p{msg.partition} leader={msg.leader} isr={list(msg.isr)} "
                f"le={msg.leader_epoch} v={msg.zk_version} ar={list(msg.replicas)})")
    if isinstance(msg, StopReplica):
        return f"StopReplica(c{msg.controller_epoch} p{msg.partition} delete={msg.delete})"
    if isinstance(msg, UpdateMetadata):
        return f"UpdateMetadata(c{msg.controller_epoch})"
    return repr(msg)


# ==================================================================================================
# The autonomous simulator: the real processes' cores, in virtual time
# ==================================================================================================


@dataclass
class _AutoProc:
    uid: str  # unique per incarnation: "broker-2#3"
    core: Any
    session: EmbeddedSession
    kind: str


class AutoSimulator(_ClusterView):
    """The cores as the real cluster runs them (``autonomous=True``: timers, watches, long-polled
    fetches, lag-based ISR shrink, controller candidates electing through the store), driven by a
    discrete-event loop in virtual milliseconds. Deterministic for a seed: message latencies come
    from ``random.Random(seed)`` and ties are broken by a sequence number.

    Messages can be controlled with :meth:`add_filter`: a function ``(src, dst, msg) -> None | "drop"
    | int`` (an extra delay in ms). Faults: :meth:`crash` (a process crash, or ``power_loss=True`` to
    lose the unflushed log suffix), :meth:`restart`, :meth:`kill_controller`, :meth:`expire_session`
    (a running broker's store session expires; it reconnects and registers again). The producer client
    (:meth:`produce`) sends to the leader named in the store and retries on errors and time-outs;
    :attr:`answered` holds the writes the producer was told succeeded, :attr:`acked` the acknowledged
    writes as the history counts them (the same with acks=all; with acks=1, those that committed at
    the leader that appended them).
    """

    def __init__(self, config: ImplConfig | dict[str, Any] | None = None, seed: int = 0, controllers: int = 2,
                 latency: tuple[int, int] = (1, 3)) -> None:
        self.cfg = config = _config(config)
        self.rng = random.Random(seed)
        self.seed = seed
        self.latency = latency
        self.now = 0
        self._seq = 0
        self._heap: list[tuple[int, int, str, Any]] = []
        self._timer_seq: dict[tuple[str, str, Any], int] = {}
        self._channel_last: dict[tuple[Any, Any], int] = {}
        self._incarnation = 0
        self.filters: list[Any] = []
        self.store = EmbeddedStore()
        self.admin = self.store.session()
        L.ensure_base(self.admin)
        self.disks = {b: SimDisk() for b in config.broker_ids}
        self.brokers: dict[int, _AutoProc | None] = {b: None for b in config.broker_ids}
        self.controllers: list[_AutoProc] = []
        self.events: list[str] = []
        self.acked: dict[int, list[int]] = {p: [] for p in range(config.partitions)}
        self.answered: dict[int, list[int]] = {p: [] for p in range(config.partitions)}
        self.refused: dict[int, list[int]] = {p: [] for p in range(config.partitions)}
        self._requests: dict[int, tuple[int, int, str, int]] = {}  # request id -> (p, record id, value, deadline)
        self._next_request = 0
        self._next_record = 0
        for b in config.broker_ids:
            self.start_broker(b, fresh=True)
        for _ in range(controllers):
            self.start_controller()
        self.run_until(lambda s: len(s.snapshot().registered) == config.brokers and s.active is not None, 5_000)
        if not config.topic_creation:
            self.admin.multi(L.create_topic_ops(config.topic, config.assignment))
            self.run_until(lambda s: all(s.isr_of(p) == tuple(sorted(config.assignment[p]))
                                         for p in range(config.partitions)), 10_000)

    # ------------------------------------------------------------------ processes
    def _uid(self, name: str) -> str:
        self._incarnation += 1
        return f"{name}#{self._incarnation}"

    def _session(self, uid_holder: list[_AutoProc]) -> EmbeddedSession:
        s = self.store.session()

        def on_event(ev: Any) -> None:
            proc = uid_holder[0]
            self._push(self.now + 1, "notify", (proc.uid, Notification(ev.kind, ev.path)))

        s.on_event = on_event
        return s

    def start_broker(self, b: int, fresh: bool = False) -> None:
        if self.brokers.get(b) is not None:
            raise NotEnabled(f"broker {b} is running")
        core = BrokerCore(self.cfg, b, autonomous=True) if fresh else \
            BrokerCore.recover(self.cfg, b, self.disks[b].image(), autonomous=True)
        holder: list[_AutoProc] = []
        proc = _AutoProc(self._uid(f"broker-{b}"), core, None, "broker")  # type: ignore[arg-type]
        holder.append(proc)
        proc.session = self._session(holder)
        self.brokers[b] = proc
        self.events.append(f"t={self.now} start broker {b}")
        self._feed(proc, Command("Start"))

    def start_controller(self) -> None:
        name = f"controller-{len(self.controllers) + 1}"
        core = ControllerCore(self.cfg, name=name, autonomous=True)
        holder: list[_AutoProc] = []
        proc = _AutoProc(self._uid(name), core, None, "controller")  # type: ignore[arg-type]
        holder.append(proc)
        proc.session = self._session(holder)
        self.controllers.append(proc)
        self._feed(proc, Command("Start"))

    @property
    def active(self) -> _AutoProc | None:
        live = [c for c in self.controllers if c.core.active]
        return max(live, key=lambda c: c.core.epoch) if live else None

    def _proc(self, uid: str) -> _AutoProc | None:
        for p in list(self.brokers.values()) + self.controllers:
            if p is not None and p.uid == uid:
                return p
        return None

    # ------------------------------------------------------------------ faults
    def crash(self, b: int, power_loss: bool = False) -> None:
        proc = self.brokers.get(b)
        if proc is None:
            raise NotEnabled(f"broker {b} is not running")
        self.brokers[b] = None
        self.store.expire(proc.session.session_id)
        if power_loss:
            self.disks[b].power_loss()
        self.events.append(f"t={self.now} crash broker {b}{' (power loss)' if power_loss else ''}")

    def restart(self, b: int) -> None:
        self.start_broker(b)

    def kill_controller(self) -> int:
        """Kill the active controller's process; returns its epoch."""
        proc = self.active
        if proc is None:
            raise NotEnabled("no controller is active")
        self.controllers.remove(proc)
        self.store.expire(proc.session.session_id)
        self.events.append(f"t={self.now} kill controller {proc.core.name} (epoch {proc.core.epoch})")
        return proc.core.epoch

    def expire_session(self, b: int, reconnect_ms: int = 50) -> None:
        """Broker ``b``'s store session expires while the process goes on running (a cut from the store
        longer than the session timeout): its registration vanishes now; the broker hears of the expiry
        and opens a new session ``reconnect_ms`` later (sooner if a store call of its own needs one), as
        the real runtime does."""
        proc = self.brokers.get(b)
        if proc is None:
            raise NotEnabled(f"broker {b} is not running")
        self._expire(proc, reconnect_ms)
        self.events.append(f"t={self.now} session of broker {b} expires")

    def expire_controller_session(self, reconnect_ms: int = 50) -> int:
        """The active controller's store session expires while it runs; returns its epoch."""
        proc = self.active
        if proc is None:
            raise NotEnabled("no controller is active")
        self._expire(proc, reconnect_ms)
        self.events.append(f"t={self.now} session of controller {proc.core.name} (epoch {proc.core.epoch}) expires")
        return proc.core.epoch

    def _expire(self, proc: _AutoProc, reconnect_ms: int) -> None:
        sid = proc.session.session_id
        self.store.expire(sid)
        self._push(self.now + 1, "expired", (proc.uid, sid))
        self._push(self.now + max(1, reconnect_ms), "renew", proc.uid)

    def add_filter(self, fn: Any) -> None:
        self.filters.append(fn)

    # ------------------------------------------------------------------ the producer client
    def produce(self, p: int, value: str = "", timeout_ms: int = 2000) -> int:
        """Start one write with the configuration's ``acks``; returns its record id (see :attr:`acked`)."""
        self._next_record += 1
        rid = self._next_record
        self._send_produce(p, rid, value or f"r{rid}", self.now + timeout_ms)
        return rid

    def _send_produce(self, p: int, rid: int, value: str, deadline: int) -> None:
        self._next_request += 1
        req = self._next_request
        self._requests[req] = (p, rid, value, deadline)
        leader = self.leader_of(p)
        if leader:
            self._schedule(("client", "producer"), ("broker", leader),
                           ProduceRequest(req, p, rid, value, self.cfg.acks))
        self._push(self.now + 200, "client-timeout", req)

    def _client_answer(self, msg: Any) -> None:
        if not isinstance(msg, ProduceResponse) or msg.request_id not in self._requests:
            return
        p, rid, value, deadline = self._requests.pop(msg.request_id)
        if msg.error == "":
            if rid not in self.answered[p]:
                self.answered[p].append(rid)
                if self.cfg.acks == "all":
                    self.acked[p].append(rid)
                self.events.append(f"t={self.now} acked record {rid} of partition {p} at offset {msg.offset}")
        elif msg.error == "NotEnoughReplicasAfterAppend" or self.now >= deadline:
            self.refused[p].append(rid)
        else:
            self._push(self.now + 20, "client-retry", (p, rid, value, deadline))

    # ------------------------------------------------------------------ the event loop
    def _push(self, t: int, kind: str, payload: Any) -> int:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, payload))
        return self._seq

    def _schedule(self, src: Any, dst: Any, msg: Any) -> None:
        extra = 0
        for f in self.filters:
            verdict = f(src, dst, msg)
            if verdict == "drop":
                self.events.append(f"t={self.now} drop {src} -> {dst}: {type(msg).__name__}")
                return
            if isinstance(verdict, int):
                extra += verdict
        t = self.now + self.rng.randint(*self.latency) + extra
        t = max(t, self._channel_last.get((src, dst), 0))  # one channel is FIFO, like a TCP connection
        self._channel_last[(src, dst)] = t
        self._push(t, "msg", (src, dst, msg))

    def _feed(self, proc: _AutoProc, inp: Any) -> None:
        work = deque([inp])
        while work:
            item = work.popleft()
            effects = proc.core.handle(item, self.now) if proc.kind == "broker" else proc.core.handle(item)
            for eff in effects:
                if isinstance(eff, StoreOp):
                    if proc.session.expired:  # renewed here: announced before the answers of the new session
                        self._renew(proc, work)
                    work.append(L.execute(proc.session, eff))
                elif isinstance(eff, Send):
                    src = ("broker", proc.core.id) if proc.kind == "broker" else ("controller", proc.core.epoch)
                    self._schedule(src, eff.to, eff.msg)
                elif isinstance(eff, Persist):
                    self.disks[proc.core.id].apply(eff)
                elif isinstance(eff, SetTimer):
                    seq = self._push(self.now + eff.delay_ms, "timer", (proc.uid, Timer(eff.name, eff.key)))
                    self._timer_seq[(proc.uid, eff.name, eff.key)] = seq
                elif isinstance(eff, CancelTimer):
                    self._timer_seq.pop((proc.uid, eff.name, eff.key), None)
                elif isinstance(eff, Committed):
                    for rid in eff.record_ids:
                        if rid not in self.acked[eff.partition]:
                            self.acked[eff.partition].append(rid)
                elif isinstance(eff, Stop):
                    if proc.kind == "broker":
                        b = proc.core.id
                        if self.brokers.get(b) is proc:
                            self.brokers[b] = None
                            self.store.expire(proc.session.session_id)
                            self.events.append(f"t={self.now} broker {b} stops: {eff.reason}")
                    return

    def _renew(self, proc: _AutoProc, work: deque[Any]) -> None:
        proc.session = self._session([proc])
        work.append(SessionRenewed(proc.session.session_id))
        self.events.append(f"t={self.now} {proc.uid} opens store session {proc.session.session_id}")

    def _resolve(self, dst: Any) -> _AutoProc | None:
        kind, key = dst
        if kind == "broker":
            return self.brokers.get(key)
        if kind == "controller":
            if key == 0:
                return self.active
            for c in self.controllers:
                if c.core.epoch == key and c.core.active:
                    return c
        return None

    def _dispatch(self, kind: str, payload: Any, seq: int) -> None:
        if kind == "timer":
            uid, timer = payload
            if self._timer_seq.get((uid, timer.name, timer.key)) != seq:
                return  # replaced or cancelled
            del self._timer_seq[(uid, timer.name, timer.key)]
            proc = self._proc(uid)
            if proc is not None:
                self._feed(proc, timer)
        elif kind == "notify":
            uid, note = payload
            proc = self._proc(uid)
            if proc is not None:
                self._feed(proc, note)
        elif kind == "expired":
            uid, sid = payload
            proc = self._proc(uid)
            # as the runtime does: the end of a session already replaced is old news (the core had its
            # SessionRenewed), and told late it would depose a controller elected on the new session
            if proc is not None and proc.session.session_id == sid:
                self._feed(proc, Notification("expired", ""))
        elif kind == "renew":
            proc = self._proc(payload)
            if proc is not None and proc.session.expired:
                work: deque[Any] = deque()
                self._renew(proc, work)
                self._feed(proc, work.popleft())
        elif kind == "msg":
            src, dst, msg = payload
            if dst[0] == "client":
                self._client_answer(msg)
                return
            proc = self._resolve(dst)
            if proc is None:
                self.events.append(f"t={self.now} lost {src} -> {dst}: {_short(msg)}")
                return  # nobody there: lost
            self.events.append(f"t={self.now} {src} -> {dst}: {_short(msg)}")
            self._feed(proc, Receive(src, msg))
        elif kind == "client-timeout":
            if payload in self._requests:
                p, rid, value, deadline = self._requests.pop(payload)
                if self.now < deadline:
                    self._send_produce(p, rid, value, deadline)
                else:
                    self.refused[p].append(rid)
        elif kind == "client-retry":
            p, rid, value, deadline = payload
            self._send_produce(p, rid, value, deadline)

    def run_for(self, ms: int) -> None:
        self.run_until(lambda s: False, ms)

    def run_until(self, pred: Any, max_ms: int) -> bool:
        """Process events until ``pred(self)`` holds (checked after each event) or ``max_ms`` pass."""
        end = self.now + max_ms
        while self._heap and self._heap[0][0] <= end:
            t, seq, kind, payload = heapq.heappop(self._heap)
            self.now = max(self.now, t)
            self._dispatch(kind, payload, seq)
            if pred(self):
                return True
        self.now = max(self.now, end)
        return pred(self)

    # ------------------------------------------------------------------ views
    def log_ids(self, b: int, p: int) -> list[int]:
        proc = self.brokers.get(b)
        if proc is not None:
            r = proc.core.replicas.get(p)
            return [x.id for x in r.log] if r else []
        seg = self.disks[b].segments.get(p)
        return [x.id for x in seg.records] if seg else []

    def _controllers_observed(self) -> tuple[dict[str, Any], int]:
        act = self.active  # between two controllers the observation shows the store's epoch
        return (act.core.observe() if act is not None else {"epoch": self.snapshot().controller_epoch}), 0
