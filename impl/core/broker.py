"""A broker as a sans-IO state machine (specs/05-replication.md).

``BrokerCore.handle(input, now) -> list[effect]``: inputs are messages (:class:`~.messages.Receive`),
store results, timers and commands; effects are sends, store calls (registration, the leader's
conditional ISR writes), disk writes (:class:`~.messages.Persist`: the log segment and the HW
checkpoint file), timers and reports of committed acks=1 writes (:class:`~.messages.Committed`). The core keeps the replica state in memory; what survives a crash is
what it asked the driver to persist, and a restarted broker is rebuilt from it
(:meth:`BrokerCore.recover`).

What the broker does, in the seeds' design:

- **Controller requests** carry the sender's controller epoch; one below the highest seen is
  ignored, one above raises it. LeaderAndIsr creates the replica if missing (startReplica), is
  ignored unless its leader epoch is higher than the replica's, and makes the broker leader or
  follower. StopReplica stops fetching (or deletes the replica, answering the controller that asked).
- **Becoming follower** truncates the log to the HW when the leader changed (``generation =
  "high-watermark"``); the HW becomes min(HW, LEO). From ``kip-101`` on the log is kept and a
  follower with a non-empty log reconciles first (on a leader change; under ``kip-320`` on every
  leader-epoch change): its replica moves to ``ask-epoch-end``.
- **Fetch**: the follower asks from its LEO; the leader records the follower's LEO, may add it to the
  ISR by a write conditional on the znode version it knows (fetch offset >= HW, and only replicas
  of its assignment may fetch; under ``kip-320`` also >= the start of the leader's current epoch,
  KAFKA-7128), advances its HW, and answers with the records and the HW it had *before* counting
  this fetch. The follower appends and takes min(that HW, its LEO). A fetch that arrives while the
  leader's ISR write is in flight is counted when the write is done (Kafka's leaderIsrUpdateLock; the
  model's ShrinkIsr and Fetch are one step each). An answer to a fetch sent before
  a controller request for the partition (or from a newer controller) reached the follower is
  dropped and the follower fetches again: the model's Fetch is one step (``_fence_fetch``). (An
  answer to a fetch the watchdog gave up on is still taken: dropping those livelocks a follower
  whose round trip is longer than its fetch timeout, as a 150 ms nemesis delay makes it.)
  A fetch request carries the follower's strictly increasing ``fetch_id`` (KIP-227's fetch session
  epoch, one session per follower replica); the leader refuses one not newer than the newest it handled
  from that follower (``InvalidFetchSessionEpoch``, nothing counted): a late duplicate sits below the
  follower's log end, where the model's Fetch never counts it.
- **Leader epochs** (``generation`` = ``kip-101``, ``kip-279``, ``kip-320``; :mod:`.epoch_cache`): every
  replica keeps a leader-epoch cache on disk (``Persist("epochs", p, entries)``), extended when a
  leader takes over and when records of a newer epoch are appended, cut with the log. A reconciling
  follower sends :class:`~.messages.OffsetsForLeaderEpochRequest` about its latest epoch; the leader
  answers by its generation's rule; the answer waits in the replica (``truncate-pending``) until the
  follower applies it (``Command("TruncateToEpochEndOffset")``, or at once when autonomous): it cuts
  its log and cache, then fetches, or under ``kip-279``/``kip-320`` may walk back and ask again.
  Under ``kip-320`` fetches and epoch queries carry the follower's leader epoch, and a leader answers
  ``FencedLeaderEpoch`` (older) or ``UnknownLeaderEpoch`` (newer) unless it equals its own.
- **Commit**: the HW is the smallest LEO of the ISR; records below it are committed and their
  producers acknowledged (acks=all), unless the ISR is below ``min_insync_replicas``
  (NotEnoughReplicasAfterAppend). Produce is refused while the ISR is that small. A record written
  with acks=1 was answered at the append; when it commits at the leader that appended it, the core
  reports it with a :class:`~.messages.Committed` effect (what the history counts as acknowledged).
- **ISR shrink**: a follower that has not caught up for ``replica_lag_time_max_ms`` is dropped by a
  conditional write (autonomous mode), or when told to (``Command("ShrinkIsr", (p, f))``).
- **Registration**: the ephemeral ``/brokers/ids/<id>`` znode, created at ``Command("Start")`` and
  again on :class:`~.messages.SessionRenewed` (a new store session after the old one expired), retried
  on a timer while an old session's node is still there.

Driven step by step (``autonomous=False``) the core sets no timers: a driver triggers each fetch,
shrink and checkpoint by command, which is how the simulator replays the action vocabulary.

Where the generations differ, the core reads the generation's traits (``config.traits``,
specs/protocol.toml), never its name.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from . import epoch_cache as EC
from . import layout as L
from .config import ImplConfig, check_generation
from .messages import (CancelTimer, Command, Committed, ConsumeRequest, ConsumeResponse,
                       ControlledShutdownRequest, ControlledShutdownResponse, ErrorResponse, FetchRequest,
                       FetchResponse, LeaderAndIsr, MetadataRequest, MetadataResponse,
                       OffsetsForLeaderEpochRequest, OffsetsForLeaderEpochResponse, Persist, ProduceRequest,
                       ProduceResponse, Receive, Record, Send, SessionRenewed, SetTimer, Stop, StopReplica,
                       StopReplicaResponse, StoreOp, StoreResult, Timer, UpdateMetadata, broker, controller)
from .store import NodeExists, NoNode

NO_LEADER = 0
UNKNOWN_EPOCH = -1
# a follower's reconciliation state (specs/05-replication.md#reconciling-a-follower)
FETCHING = "fetching"
ASK_EPOCH_END = "ask-epoch-end"
TRUNCATE_PENDING = "truncate-pending"
ACTIVE_CONTROLLER = controller(0)
STALE_FETCH = "InvalidFetchSessionEpoch"  # Kafka's error for a fetch session epoch not the one expected
STORAGE_ERROR = "KafkaStorageError"  # a produce whose broker's disk refused a write: retriable elsewhere  # the driver resolves epoch 0 to the active controller


@dataclass
class Replica:
    """One broker's copy of one partition."""

    log: list[Record] = field(default_factory=list)
    hw: int = 0
    ckpt: int = 0  # the HW last written to the checkpoint file
    leader: int = NO_LEADER  # whom this broker believes leads; itself when it leads
    leader_epoch: int = UNKNOWN_EPOCH
    # leader-only state
    isr: frozenset[int] = frozenset()
    zk_version: int = -1
    state_controller_epoch: int = 0
    assigned: tuple[int, ...] = ()
    remote_leo: dict[int, int] = field(default_factory=dict)
    caught_up_at: dict[int, int] = field(default_factory=dict)
    # record id -> (client, request id, offset, acks): appended by this leader, not yet committed
    pending: dict[int, tuple[Any, int, int, str]] = field(default_factory=dict)
    isr_write: tuple[int, frozenset[int], Any] | None = None  # (token, new ISR, continuation)
    parked: dict[int, tuple[Any, FetchRequest]] = field(default_factory=dict)  # leader: waiting fetches
    # leader: fetches that came while an ISR write was in flight, served in order when it is done
    held: list[tuple[Any, FetchRequest]] = field(default_factory=list)
    # leader: per follower, the id of the newest fetch it handled (a fetch session's epoch, KIP-227); an
    # older request (one the follower's watchdog sent again meanwhile, held by the network) is refused
    fetch_seen: dict[int, int] = field(default_factory=dict)
    fetching: bool = False  # follower: a fetch or an epoch query is in flight (autonomous mode)
    fetch_sent_at: int = 0
    fetch_id: int = 0  # follower: the id of its latest fetch
    fetch_answered: int = 0  # follower: the id of the latest fetch whose answer it took
    fetch_fence: int = 0  # follower: answers to fetches up to this id crossed a controller request: dropped
    dirty: bool = False  # appended or truncated since the last flush
    # leader epochs (kip-101 on): the cache (on disk), the reconciliation state and the held answer
    epochs: list[tuple[int, int]] = field(default_factory=list)
    fetch_state: str = FETCHING
    answer: tuple[int, int] | None = None  # (epoch, end offset) while truncate-pending
    # record id -> its first offset in the log: a produce of a record already there is not appended again
    index: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for offset, rec in enumerate(self.log):
            self.index.setdefault(rec.id, offset)

    @property
    def leo(self) -> int:
        return len(self.log)

    def forget_leadership(self) -> None:
        self.isr, self.zk_version, self.state_controller_epoch = frozenset(), -1, 0
        self.assigned, self.remote_leo, self.caught_up_at = (), {}, {}
        self.isr_write = None
        self.held = []  # no longer the leader: dropped, each follower's watchdog sends its fetch again
        self.fetch_seen = {}  # the sessions end with the leadership: a later leader starts afresh


@dataclass
class DiskImage:
    """What a broker finds on disk at start-up: each partition's log, the HW checkpoint file and each
    partition's leader-epoch checkpoint."""

    logs: dict[int, list[Record]] = field(default_factory=dict)
    checkpoints: dict[int, int] = field(default_factory=dict)
    epochs: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


class BrokerCore:
    def __init__(self, config: ImplConfig, broker_id: int, autonomous: bool = False,
                 address: tuple[str, int] | None = None) -> None:
        check_generation(config.generation)
        self.cfg = config
        self.id = broker_id
        self.autonomous = autonomous
        self.address = address
        self.controller_epoch = 0
        self.replicas: dict[int, Replica] = {}
        self.registered = False
        self._registering = False  # a registration create (or the base paths it needs) is in flight
        self.stopping = False
        self.live_brokers: tuple[int, ...] = ()
        self.metadata: dict[int, tuple[int, int, tuple[int, ...]]] = {}  # p -> (leader, leader epoch, isr)
        self.now = 0
        self.fetch_wait_ms = config.replica_fetch_wait_max_ms if autonomous else 0
        self.fetch_timeout_ms = max(200, 3 * self.fetch_wait_ms)
        self._tokens = itertools.count(1)
        self._store_waits: dict[int, tuple[str, Any]] = {}
        self._out: list[Any] = []
        self._shutdown_attempts = 0
        self._cut_checkpoints: list[int] = []
        self._cut_epochs: list[int] = []
        traits = config.traits
        self.leader_epochs = traits.leader_epochs  # replicas keep a leader-epoch cache and reconcile
        self.epoch_answer = traits.epoch_answer  # the form of an OffsetsForLeaderEpoch answer
        self.fenced = traits.fenced_by_leader_epoch  # fetches and epoch queries carry the leader epoch
        self.reconcile_on_epoch_change = traits.reconcile_on_epoch_change  # KAFKA-7164
        self.isr_join_needs_epoch_start = traits.isr_join_needs_epoch_start  # KAFKA-7128
        # Kafka's bugs put back (reintroduce, specs/history.toml): each a named switch read at its decision
        self.serves_unassigned_followers = config.reintroduces("KAFKA-1097")
        self.truncates_on_every_leader_and_isr = config.reintroduces("KAFKA-1188")
        self.rebuilds_epochs_without_epoch_0 = config.reintroduces("KAFKA-10432")
        self.reconciles_only_on_leader_change = config.reintroduces("KAFKA-7164")
        self.truncation_at_log_end_keeps_epochs = config.reintroduces("KAFKA-10706")

    @classmethod
    def recover(cls, config: ImplConfig, broker_id: int, image: DiskImage, **kw: Any) -> BrokerCore:
        """A broker restarted from its disk: logs as they survived, HW from the checkpoint (cut to the log)."""
        core = cls(config, broker_id, **kw)
        for p, log in sorted(image.logs.items()):
            hw = min(image.checkpoints.get(p, 0), len(log))
            r = Replica(log=list(log), hw=hw, ckpt=hw)
            core.replicas[p] = r
            if image.checkpoints.get(p, 0) != hw:
                core._cut_checkpoints.append(p)  # the file names an offset beyond the log: rewrite it
            if core.leader_epochs:
                # the cache survives with the log, less the entries at or beyond the surviving LEO
                r.epochs = [(int(e), int(s)) for e, s in image.epochs.get(p, [])]
                if EC.cut(r.epochs, r.leo):
                    core._cut_epochs.append(p)
                # every start-up is a recovery from an unclean stop (no clean-shutdown marker on disk)
                if EC.after_unclean_stop(r.epochs, core.rebuilds_epochs_without_epoch_0) and p not in core._cut_epochs:
                    core._cut_epochs.append(p)
        return core

    # ------------------------------------------------------------------ driver interface
    def handle(self, inp: Any, now: int | None = None) -> list[Any]:
        if now is not None:
            self.now = now
        self._out = []
        if isinstance(inp, Receive):
            self._receive(inp.frm, inp.msg)
        elif isinstance(inp, StoreResult):
            self._store_result(inp)
        elif isinstance(inp, Timer):
            self._timer(inp)
        elif isinstance(inp, Command):
            self._command(inp)
        elif isinstance(inp, SessionRenewed):
            self._session_renewed()
        out, self._out = self._out, []
        return out

    def storage_failed(self, inp: Any) -> list[Any]:
        """The answers owed once a disk write of ``inp``'s step failed and this broker's log directory
        goes offline (specs/05-replication.md, "Storage errors"). The driver sends none of that step's
        own effects (its records were not written, so nothing of it may be acknowledged or served) and
        stops the broker after these: a produce in ``inp`` and every produce still waiting for its
        commit get ``KafkaStorageError``, which producers retry on the partition's next leader. Nothing
        else is said: the controller learns of the offline directory from the broker's registration,
        which goes with its store session."""
        self._out = []
        if isinstance(inp, Receive) and isinstance(inp.msg, ProduceRequest) and inp.msg.acks != "0":
            m = inp.msg
            self._send(inp.frm, ProduceResponse(m.request_id, m.partition, STORAGE_ERROR))
            for r in self.replicas.values():
                r.pending.pop(m.record_id, None)  # answered just now
        for r in self.replicas.values():
            self._fail_pending(r, STORAGE_ERROR)
        out, self._out = self._out, []
        return out

    def leads(self, p: int) -> bool:
        r = self.replicas.get(p)
        return r is not None and r.leader == self.id

    def observe(self) -> dict[str, Any]:
        """This broker's part of the observation (specs/observation.toml)."""
        reps = {}
        for p, r in sorted(self.replicas.items()):
            role = "leader" if r.leader == self.id else ("follower" if r.leader != NO_LEADER else "none")
            reps[p] = {"present": True, "log": [{"id": x.id, "epoch": x.epoch} for x in r.log], "leo": r.leo,
                       "hw": r.hw, "leader_epoch": r.leader_epoch, "role": role,
                       "epochs": [{"epoch": e, "start_offset": s} for e, s in r.epochs],
                       "fetch_state": r.fetch_state}
        return {"id": self.id, "alive": True, "controller_epoch": self.controller_epoch, "replicas": reps}

    # ------------------------------------------------------------------ helpers
    def _send(self, to: Any, msg: Any) -> None:
        self._out.append(Send(to, msg))

    def _store(self, kind: str, args: tuple, why: str, data: Any = None) -> int:
        token = next(self._tokens)
        self._store_waits[token] = (why, data)
        self._out.append(StoreOp(token, kind, args))
        return token

    def _set_hw(self, p: int, r: Replica, hw: int) -> None:
        if hw != r.hw:
            r.hw = hw
            if self.cfg.hw_checkpoint == "every-change":
                self._checkpoint(p, r)

    def _checkpoint(self, p: int, r: Replica) -> None:
        r.ckpt = r.hw
        self._out.append(Persist("checkpoint", p, r.hw))

    def _truncate(self, p: int, r: Replica, length: int) -> None:
        """Cut the log to ``length`` records, and the leader-epoch cache with it (entries starting at
        ``length`` or later go, even when the log already has that length)."""
        if length < r.leo:
            for rec in r.log[length:]:
                if r.index.get(rec.id, -1) >= length:
                    del r.index[rec.id]
            del r.log[length:]
            r.dirty = True
            self._out.append(Persist("truncate", p, length))
        if EC.cut(r.epochs, length):
            self._persist_epochs(p, r)

    def _append(self, p: int, r: Replica, records: list[Record]) -> None:
        if records:
            first = r.leo
            for i, rec in enumerate(records):
                r.index.setdefault(rec.id, first + i)
            r.log.extend(records)
            r.dirty = True
            self._out.append(Persist("append", p, tuple(records)))
            if self.leader_epochs and EC.assign_records(r.epochs, first, (x.epoch for x in records)):
                self._persist_epochs(p, r)

    def _assign_epoch(self, p: int, r: Replica, epoch: int, start: int) -> None:
        if self.leader_epochs and EC.assign(r.epochs, epoch, start):
            self._persist_epochs(p, r)

    def _persist_epochs(self, p: int, r: Replica) -> None:
        self._out.append(Persist("epochs", p, tuple(r.epochs)))

    # ------------------------------------------------------------------ commands
    def _command(self, cmd: Command) -> None:
        name, args = cmd.name, tuple(cmd.args)
        if name == "Start":
            for p in self._cut_checkpoints:
                self._checkpoint(p, self.replicas[p])
            self._cut_checkpoints = []
            for p in self._cut_epochs:
                self._persist_epochs(p, self.replicas[p])
            self._cut_epochs = []
            self._register()
            if self.autonomous:
                self._out.append(SetTimer("checkpoint", self.cfg.hw_checkpoint_interval_ms))
                self._out.append(SetTimer("flush", self.cfg.log_flush_interval_ms))
                self._out.append(SetTimer("lag", max(1, self.cfg.replica_lag_time_max_ms // 2)))
        elif name == "Fetch":
            self._fetch(int(args[0]))
        elif name == "OffsetsForLeaderEpoch":
            self._ask_epoch_end(int(args[0]))
        elif name == "TruncateToEpochEndOffset":
            self._truncate_to_epoch_end(int(args[0]))
        elif name == "ShrinkIsr":
            self._shrink(int(args[0]), (int(args[1]),))
        elif name == "CheckpointHighWatermark":
            r = self.replicas.get(int(args[0]))
            if r is not None:
                self._checkpoint(int(args[0]), r)
        elif name == "CheckpointAll":
            for p, r in sorted(self.replicas.items()):
                self._checkpoint(p, r)
        elif name == "FlushAll":
            for p, r in sorted(self.replicas.items()):
                self._out.append(Persist("flush", p))
                r.dirty = False
        elif name == "ControlledShutdown":
            self.stopping = True
            self._shutdown_attempts += 1
            self._send(ACTIVE_CONTROLLER, ControlledShutdownRequest(self.id))
        else:
            raise ValueError(f"unknown broker command {name!r}")

    def _register(self) -> None:
        data = L.encode({"host": self.address[0], "port": self.address[1]} if self.address else {})
        self._registering = True
        self._store("create", (L.broker_path(self.id), data, True), "register")

    def _session_renewed(self) -> None:
        """A new store session: the registration was an ephemeral node of the old one, so it is gone and
        the controller counts this broker as dead until it registers again (Kafka's broker re-registers on
        a new ZooKeeper session; the controller then handles the reappearance as a broker start-up and
        tells this broker the current leaders and ISRs, ending any leadership it still believes in).

        A create already in flight is left alone: the driver hands this input over before the answer of
        any call made on the new session, so that answer belongs to the new session (and a second create
        would only meet the first one's node and retry forever). A retry waiting on its timer is replaced
        by a create now."""
        self.registered = False
        if self._registering:
            return
        self._out.append(CancelTimer("register"))
        self._register()

    # ------------------------------------------------------------------ timers (autonomous mode)
    def _timer(self, t: Timer) -> None:
        if t.name == "fetch":
            p = t.key
            r = self.replicas.get(p)
            # a fetch whose answer never came (a lost connection) is given up after a timeout
            if r is not None and r.fetch_state == TRUNCATE_PENDING:
                self._truncate_to_epoch_end(p)  # (an answer is applied on arrival; this is a safety net)
            elif r is not None and r.leader not in (NO_LEADER, self.id) and (
                    not r.fetching or self.now - r.fetch_sent_at >= self.fetch_timeout_ms):
                if r.fetch_state == ASK_EPOCH_END:
                    self._ask_epoch_end(p)
                else:
                    self._fetch(p)
        elif t.name == "checkpoint":
            if self.cfg.hw_checkpoint == "periodic":
                for p, r in sorted(self.replicas.items()):
                    if r.ckpt != r.hw:
                        self._checkpoint(p, r)
            self._out.append(SetTimer("checkpoint", self.cfg.hw_checkpoint_interval_ms))
        elif t.name == "flush":
            for p, r in sorted(self.replicas.items()):
                if r.dirty:
                    r.dirty = False
                    self._out.append(Persist("flush", p))
            self._out.append(SetTimer("flush", self.cfg.log_flush_interval_ms))
        elif t.name == "lag":
            limit = self.cfg.replica_lag_time_max_ms
            for p, r in sorted(self.replicas.items()):
                if r.leader != self.id or r.isr_write is not None:
                    continue
                lagging = tuple(f for f in sorted(r.isr) if f != self.id
                                and self.now - r.caught_up_at.get(f, self.now) > limit)
                if lagging:  # one follower per write, as the model's ShrinkIsr: the next tick drops the next
                    self._shrink(p, lagging[:1])
            self._out.append(SetTimer("lag", max(1, limit // 2)))
        elif t.name == "fetch-wait":
            p, f = t.key
            r = self.replicas.get(p)
            if r is not None and f in r.parked:
                frm, m = r.parked.pop(f)
                if r.leader != self.id:
                    self._send(frm, FetchResponse(p, self.id, m.offset, "NotLeader", leader_epoch=m.leader_epoch,
                                                  fetch_id=m.fetch_id))
                elif self._epoch_error(m.leader_epoch, r):
                    self._send(frm, FetchResponse(p, self.id, m.offset, self._epoch_error(m.leader_epoch, r),
                                                  leader_epoch=m.leader_epoch, fetch_id=m.fetch_id))
                else:
                    self._send(frm, FetchResponse(p, self.id, m.offset, "", self._served(r, m.offset), r.hw, r.leo,
                                                  m.leader_epoch, fetch_id=m.fetch_id))
        elif t.name == "register":
            self._register()
        elif t.name == "shutdown-retry":
            self._command(Command("ControlledShutdown"))

    # ------------------------------------------------------------------ messages
    def _receive(self, frm: Any, msg: Any) -> None:
        if isinstance(msg, (LeaderAndIsr, StopReplica, UpdateMetadata)):
            if msg.controller_epoch < self.controller_epoch:
                return  # from a deposed controller
            raised = msg.controller_epoch > self.controller_epoch
            self.controller_epoch = msg.controller_epoch
            if self.autonomous:
                for q in sorted(self.replicas) if raised else [getattr(msg, "partition", -1)]:
                    self._fence_fetch(q)
            if isinstance(msg, LeaderAndIsr):
                self._leader_and_isr(msg)
            elif isinstance(msg, StopReplica):
                self._stop_replica(frm, msg)
            else:
                self.live_brokers = msg.live_brokers
                self.metadata = {p: (leader, le, isr) for p, leader, le, isr in msg.partitions}
        elif isinstance(msg, FetchRequest):
            self._serve_fetch(frm, msg)
        elif isinstance(msg, FetchResponse):
            self._fetched(msg)
        elif isinstance(msg, OffsetsForLeaderEpochRequest):
            self._serve_epoch_query(frm, msg)
        elif isinstance(msg, OffsetsForLeaderEpochResponse):
            self._epoch_answered(msg)
        elif isinstance(msg, ProduceRequest):
            self._produce(frm, msg)
        elif isinstance(msg, ConsumeRequest):
            self._consume(frm, msg)
        elif isinstance(msg, MetadataRequest):
            self._send(frm, self._metadata_response(msg.request_id))
        elif isinstance(msg, ControlledShutdownResponse):
            self._shutdown_answer(msg)
        elif hasattr(msg, "request_id"):
            self._send(frm, ErrorResponse(getattr(msg, "request_id", 0), f"unexpected {type(msg).__name__}"))

    def _metadata_response(self, request_id: int) -> MetadataResponse:
        parts = tuple((p, leader, le, isr) for p, (leader, le, isr) in sorted(self.metadata.items()))
        mine = tuple((p, "leader" if r.leader == self.id else ("follower" if r.leader else "none"),
                      r.leader_epoch, r.leo, r.hw) for p, r in sorted(self.replicas.items()))
        return MetadataResponse(request_id, self.id, self.controller_epoch, self.live_brokers, parts, mine)

    def _leader_and_isr(self, m: LeaderAndIsr) -> None:
        if self.id not in m.replicas:
            return
        p = m.partition
        r = self.replicas.get(p)
        if r is None:  # startReplica: create the partition locally
            r = Replica()
            self.replicas[p] = r
            self._out.append(Persist("create", p))
        if m.leader_epoch <= r.leader_epoch:
            return  # not newer than what this replica applied
        if m.leader == self.id:
            self._become_leader(p, r, m)
        else:
            self._become_follower(p, r, m)

    def _become_leader(self, p: int, r: Replica, m: LeaderAndIsr) -> None:
        if r.leader != self.id:
            self._fail_pending(r, "NotLeader")
            r.remote_leo = {b: 0 for b in self.cfg.broker_ids}
            r.caught_up_at = {b: self.now for b in m.isr}
            r.pending = {}
            r.isr_write = None
            r.held = []
            r.fetch_seen = {}
            if self.autonomous:
                self._out.append(CancelTimer("fetch", p))
            r.fetching = False
        r.leader = self.id
        r.leader_epoch = m.leader_epoch
        r.isr = frozenset(m.isr)
        r.zk_version = m.zk_version
        r.state_controller_epoch = m.state_controller_epoch
        r.assigned = tuple(m.replicas)
        # kip-101 on: the new epoch starts at the LEO (unless the cache holds it or a later one), and a
        # reconciliation under way is abandoned: the log as it stands is the history it leads with
        self._assign_epoch(p, r, m.leader_epoch, r.leo)
        r.fetch_state, r.answer = FETCHING, None
        for b in r.isr:
            r.caught_up_at.setdefault(b, self.now)
        self._advance_hw(p, r)

    def _become_follower(self, p: int, r: Replica, m: LeaderAndIsr) -> None:
        if not self.leader_epochs:
            # the seeds' rule: truncate to the HW on a change of leader; KAFKA-1188 put back (reintroduce):
            # on every LeaderAndIsr applied as follower, the same leader's epoch bump included
            if r.leader != m.leader or self.truncates_on_every_leader_and_isr:
                self._truncate(p, r, r.hw)
        elif r.leader != m.leader or (self.reconcile_on_epoch_change and not self.reconciles_only_on_leader_change
                                      and r.leader_epoch != m.leader_epoch):
            # kip-101/kip-279: keep the log and reconcile with the new leader before fetching;
            # kip-320 (KAFKA-7164's fix): on every change of leader epoch; KAFKA-7164 put back (reintroduce):
            # on a change of leader only, as before the fix. An empty log has nothing to reconcile.
            r.fetch_state = ASK_EPOCH_END if r.log else FETCHING
            r.answer = None
        # (same leader under kip-101/kip-279: a reconciliation under way goes on, a held answer stays)
        self._set_hw(p, r, min(r.hw, r.leo))
        if r.leader == self.id:
            self._fail_pending(r, "NotLeader")
            self._release_parked(p, r, "NotLeader")
        r.pending = {}
        r.forget_leadership()
        r.leader = m.leader
        r.leader_epoch = m.leader_epoch
        r.fetching = False
        if self.autonomous and m.leader != NO_LEADER:
            self._out.append(SetTimer("fetch", 0, p))

    def _stop_replica(self, frm: Any, m: StopReplica) -> None:
        p = m.partition
        r = self.replicas.get(p)
        if m.delete:
            if r is not None:
                self._fail_pending(r, "NotLeader")
                del self.replicas[p]
                self._out.append(Persist("delete", p))
            self._send(frm, StopReplicaResponse(m.controller_epoch, p, self.id, True))
        elif r is not None and r.leader != self.id:
            r.leader = NO_LEADER  # stop fetching; 0.8 ignores a non-deleting StopReplica on a leader
            r.fetching = False

    # ------------------------------------------------------------------ replication: leader side
    @staticmethod
    def _isr_counted(r: Replica) -> frozenset[int]:
        """The ISR the HW and min.insync.replicas count: with an expansion being written, the new one (the
        model's Fetch takes the follower in, in the step that counts its fetch; should the write fail,
        the cached ISR stays and the HW counts it again)."""
        if r.isr_write is not None and r.isr_write[1] > r.isr:
            return r.isr_write[1]
        return r.isr

    def _advance_hw(self, p: int, r: Replica) -> None:
        """HW = the smallest LEO in the ISR; commit and acknowledge what it passes."""
        candidate = r.leo
        isr = self._isr_counted(r)
        for m in isr:
            if m != self.id:
                candidate = min(candidate, r.remote_leo.get(m, 0))
        if candidate <= r.hw:
            return
        self._set_hw(p, r, candidate)
        if r.parked:
            self._release_parked(p, r)
        if r.pending:
            enough = len(isr) >= self.cfg.min_insync_replicas
            committed_1: list[int] = []
            for rid, (client, request_id, offset, acks) in sorted(r.pending.items(), key=lambda kv: kv[1][2]):
                if offset < r.hw:
                    del r.pending[rid]
                    if acks == "1":
                        # answered at the append; its commit is what the history counts as acknowledged,
                        # whatever the ISR's size
                        committed_1.append(rid)
                    elif client is not None:
                        err = "" if enough else "NotEnoughReplicasAfterAppend"
                        self._send(client, ProduceResponse(request_id, p, err, offset))
            if committed_1:
                self._out.append(Committed(p, tuple(committed_1)))

    def _fail_pending(self, r: Replica, error: str) -> None:
        for rid, (client, request_id, offset, _acks) in sorted(r.pending.items(), key=lambda kv: kv[1][2]):
            if client is not None:
                self._send(client, ProduceResponse(request_id, -1, error, offset))
        r.pending = {}

    def _produce(self, frm: Any, m: ProduceRequest) -> None:
        p = m.partition
        r = self.replicas.get(p)
        if r is None or r.leader != self.id:
            if m.acks != "0":
                self._send(frm, ProduceResponse(m.request_id, p, "NotLeader"))
            return
        if m.acks == "all" and len(self._isr_counted(r)) < self.cfg.min_insync_replicas:
            if m.acks != "0":
                self._send(frm, ProduceResponse(m.request_id, p, "NotEnoughReplicas"))
            return
        known = r.index.get(m.record_id)
        if known is not None:
            self._produce_again(frm, p, r, m, known)
            return
        offset = r.leo
        self._append(p, r, [Record(m.record_id, r.leader_epoch, m.value)])
        if m.acks == "all":
            r.pending[m.record_id] = (frm, m.request_id, offset, m.acks)
        else:
            r.pending[m.record_id] = (None, m.request_id, offset, m.acks)
            if m.acks == "1":
                self._send(frm, ProduceResponse(m.request_id, p, "", offset))
        self._advance_hw(p, r)
        if r.parked:  # after the HW moved (the model's Produce is one step): the held fetches get the record
            self._release_parked(p, r)

    def _produce_again(self, frm: Any, p: int, r: Replica, m: ProduceRequest, offset: int) -> None:
        """Idempotent produce: the record id is the producer's identity of one write (a client keeps it
        across its retries), so a retried or replayed produce of a record already in the leader's log
        is not appended again. Committed: answered with its offset. Not yet: it waits for its commit
        like the first send (which a new request of the same write replaces), so it is acknowledged
        once it is on the ISR, and refused if the leader loses it. Kafka's KIP-98 keys the same check
        on (producer id, sequence); the record id is this project's equivalent, unique per write."""
        if m.acks == "0":
            return
        if offset < r.hw:
            self._send(frm, ProduceResponse(m.request_id, p, "", offset))
            return
        pending = r.pending.get(m.record_id)
        acks = pending[3] if pending is not None else m.acks
        if acks == "1":  # answered at the first append; its commit is reported when the HW passes it
            self._send(frm, ProduceResponse(m.request_id, p, "", offset))
            if pending is None:
                r.pending[m.record_id] = (None, m.request_id, offset, acks)
            return
        r.pending[m.record_id] = (frm, m.request_id, offset, "all")

    def _consume(self, frm: Any, m: ConsumeRequest) -> None:
        p = m.partition
        r = self.replicas.get(p)
        if r is None or r.leader != self.id:
            self._send(frm, ConsumeResponse(m.request_id, p, "NotLeader"))
            return
        if m.offset > r.leo or m.offset < 0:
            self._send(frm, ConsumeResponse(m.request_id, p, "OffsetOutOfRange", (), r.hw))
            return
        end = min(r.hw, m.offset + max(0, m.max_records))  # only what is committed is served
        self._send(frm, ConsumeResponse(m.request_id, p, "", tuple(r.log[m.offset:end]), r.hw))

    def _serve_fetch(self, frm: Any, m: FetchRequest) -> None:
        p, f = m.partition, m.follower
        r = self.replicas.get(p)
        if r is None or r.leader != self.id:
            self._send(frm, FetchResponse(p, self.id, m.offset, "NotLeader", fetch_id=m.fetch_id))
            return
        error = self._epoch_error(m.leader_epoch, r)
        if error:  # kip-320: a fetch of another leader epoch is fenced and changes nothing
            self._send(frm, FetchResponse(p, self.id, m.offset, error, leader_epoch=m.leader_epoch,
                                          fetch_id=m.fetch_id))
            return
        # KAFKA-1097 put back (reintroduce): the leader serves any broker that believes it follows, an
        # unassigned one (a replica a reassignment removed, before its StopReplica) included, and may
        # add it to the ISR; the fix answers UnknownReplica
        if not self.serves_follower(r, f):
            self._send(frm, FetchResponse(p, self.id, m.offset, "UnknownReplica", leader_epoch=m.leader_epoch,
                                          fetch_id=m.fetch_id))
            return
        seen = r.fetch_seen.get(f, 0)
        if m.fetch_id and m.fetch_id <= seen:
            # older than a fetch already handled from this follower (KIP-227's fetch session epoch): its
            # offset may be below the follower's log end, and counted it lowered the follower's LEO here,
            # could take it back into the ISR and hold the HW (torture seed 27 of issue 30): a state the
            # model, whose Fetch counts a follower at its log end, never has. Refused, nothing counted; the
            # answer tells a restarted follower (whose ids began again) where to go on from
            self._send(frm, FetchResponse(p, self.id, m.offset, STALE_FETCH, leader_epoch=m.leader_epoch,
                                          fetch_id=m.fetch_id, newest_fetch_id=seen))
            return
        if m.offset > r.leo:
            if m.fetch_id:
                r.fetch_seen[f] = m.fetch_id
            self._send(frm, FetchResponse(p, self.id, m.offset, "OffsetOutOfRange", leader_leo=r.leo,
                                          leader_epoch=m.leader_epoch, fetch_id=m.fetch_id))
            return
        if r.isr_write is not None and r.isr_write[2][0] == "fetch" and r.isr_write[2][1][1].follower == f:
            return  # its fetch that joins the ISR is answered when the write is done (this one was resent)
        if r.isr_write is not None:
            # an ISR change is being written: the fetch is counted once it is done, never during it. Kafka
            # holds the partition's leaderIsrUpdateLock across the ZooKeeper write, and the model's
            # ShrinkIsr and Fetch are one step each; counted now, a fetch that qualified to join the ISR
            # was answered with the HW of before a shrink and without joining, a state the model never
            # has (torture seed 37 of issue 30's batches)
            r.held.append((frm, m))
            return
        if m.fetch_id:
            r.fetch_seen[f] = m.fetch_id
        answered_hw = r.hw  # the response carries the HW from before this fetch is counted
        r.remote_leo[f] = m.offset
        if m.offset >= r.leo:
            r.caught_up_at[f] = self.now
        # the records too are this moment's, even when the answer waits for an ISR write (the model's Fetch
        # is one step: a produce meanwhile is not in it)
        reply = (frm, m, answered_hw, self._served(r, m.offset))
        if f not in r.isr and self._may_join_isr(r, m.offset) and r.isr_write is None:
            self._write_isr(p, r, r.isr | {f}, ("fetch", reply))
            return
        self._answer_fetch(p, r, reply)

    def _served(self, r: Replica, offset: int) -> tuple[Record, ...]:
        """The records a fetch from ``offset`` gets: the log from there, at most ``max_fetch_records`` of them."""
        limit = self.cfg.max_fetch_records
        return tuple(r.log[offset:offset + limit] if limit else r.log[offset:])

    def serves_follower(self, r: Replica, f: int) -> bool:
        """Whether this leader serves broker ``f``'s fetches of the partition of ``r``: a replica of the
        assignment it was given (the fix of KAFKA-1097), or anyone when the bug is put back. One rule, also
        read by the step-mode simulator's scheduler, so that it offers exactly the fetches served."""
        return f in r.assigned or self.serves_unassigned_followers

    def _epoch_error(self, follower_epoch: int, r: Replica) -> str:
        """kip-320: a fetch or epoch query is served only with the leader's own leader epoch."""
        if not self.fenced or follower_epoch == r.leader_epoch:
            return ""
        return "FencedLeaderEpoch" if follower_epoch < r.leader_epoch else "UnknownLeaderEpoch"

    def _may_join_isr(self, r: Replica, offset: int) -> bool:
        """The fetch offset reached the leader's HW; under kip-320 also the start of the leader's current
        epoch in its cache (KAFKA-7128; no bound when the cache does not hold that epoch)."""
        if offset < r.hw:
            return False
        if self.isr_join_needs_epoch_start:
            return offset >= EC.start_of(r.epochs, r.leader_epoch)
        return True

    def _answer_fetch(self, p: int, r: Replica, reply: tuple[Any, FetchRequest, int, tuple[Record, ...]]) -> None:
        frm, m, answered_hw, served = reply
        hw_before = r.hw
        self._advance_hw(p, r)
        if self.fetch_wait_ms and m.offset >= r.leo and answered_hw >= hw_before and r.hw == hw_before:
            # caught up and nothing new to tell: hold the fetch until data or the HW moves (long poll)
            r.parked[m.follower] = (frm, m)
            self._out.append(SetTimer("fetch-wait", self.fetch_wait_ms, (p, m.follower)))
            return
        self._send(frm, FetchResponse(p, self.id, m.offset, "", served, answered_hw, r.leo, m.leader_epoch,
                                      fetch_id=m.fetch_id))

    def _release_parked(self, p: int, r: Replica, error: str = "") -> None:
        """Answer every held fetch of ``p`` (new records, a new HW, or no longer the leader)."""
        for f, (frm, m) in sorted(r.parked.items()):
            self._out.append(CancelTimer("fetch-wait", (p, f)))
            err = error or self._epoch_error(m.leader_epoch, r)
            if err:
                self._send(frm, FetchResponse(p, self.id, m.offset, err, leader_epoch=m.leader_epoch,
                                              fetch_id=m.fetch_id))
            elif f not in r.isr:
                # answered now, it would be the model's Fetch now (held, it changed nothing), which takes a
                # follower shrunk out of the ISR meanwhile back in; it is dropped instead (the follower may be
                # gone): a live one sends it again when its wait for an answer times out
                continue
            else:
                self._send(frm, FetchResponse(p, self.id, m.offset, "", self._served(r, m.offset), r.hw, r.leo,
                                              m.leader_epoch, fetch_id=m.fetch_id))
        r.parked = {}

    def _write_isr(self, p: int, r: Replica, isr: frozenset[int], then: Any) -> None:
        """The leader's conditional write of a new ISR (leader, epochs unchanged)."""
        state = L.LeaderIsr(self.id, tuple(sorted(isr)), r.leader_epoch, r.state_controller_epoch)
        token = self._store("set", (L.state_path(self.cfg.topic, p), state.encode(), r.zk_version), "isr",
                            (p, r.leader_epoch))
        r.isr_write = (token, isr, then)

    def _shrink(self, p: int, followers: tuple[int, ...]) -> None:
        r = self.replicas.get(p)
        if r is None or r.leader != self.id or r.isr_write is not None:
            return
        drop = [f for f in followers if f != self.id and f in r.isr]
        if drop:
            self._write_isr(p, r, r.isr - set(drop), ("shrink", None))

    def _isr_written(self, res: StoreResult, p: int, leader_epoch: int) -> None:
        r = self.replicas.get(p)
        if r is None or r.isr_write is None or r.isr_write[0] != res.token:
            return
        _token, isr, (kind, reply) = r.isr_write
        r.isr_write = None
        held, r.held = r.held, []
        if r.leader == self.id and r.leader_epoch == leader_epoch:
            if res.error is None:
                r.isr = isr
                r.zk_version = res.value.version
            # else: the znode moved on (a controller wrote it): keep the cached ISR until a LeaderAndIsr
            if kind == "fetch":
                self._answer_fetch(p, r, reply)
            else:
                self._advance_hw(p, r)
        for frm, m in held:  # in arrival order; one may start the next write, and those after it wait again
            self._serve_fetch(frm, m)

    # ------------------------------------------------------------------ replication: follower side
    def _fence_fetch(self, p: int) -> None:
        """A controller request reached this follower while its fetch of ``p`` is in flight: the answer,
        computed by the leader before this step, is dropped when it comes, and a new fetch goes out.
        Why: the model's Fetch is one step, so a follower's half must show the leader as it is after
        every step the follower has taken; an answer that crossed a logged step of the follower (held
        by the network across a partition, say) cannot be explained and is not needed (issue 30,
        specs/11-conformance.md). Kafka's fetcher likewise forgets a partition it is told about."""
        r = self.replicas.get(p)
        if r is None or not r.fetching or r.leader in (NO_LEADER, self.id) or r.fetch_state != FETCHING:
            return  # (an epoch query in flight is answered by its own rules: its epochs say when it is stale)
        r.fetch_fence = r.fetch_id
        r.fetching = False
        self._out.append(SetTimer("fetch", 0, p))

    def _fetch(self, p: int) -> None:
        r = self.replicas.get(p)
        if r is None or r.leader in (NO_LEADER, self.id) or r.fetch_state != FETCHING:
            return
        r.fetching = True
        r.fetch_sent_at = self.now
        r.fetch_id += 1  # an answer to an earlier fetch is stale if it comes after a later one's
        self._send(broker(r.leader), FetchRequest(p, self.id, r.leo, r.leader_epoch, r.fetch_id))
        if self.autonomous:  # the watchdog: retried if no answer comes (replaced by the next SetTimer)
            self._out.append(SetTimer("fetch", self.fetch_timeout_ms, p))

    def _fetched(self, m: FetchResponse) -> None:
        p = m.partition
        r = self.replicas.get(p)
        if r is None or r.leader != m.leader or r.leader == self.id:
            return  # the follower moved on meanwhile
        if m.fetch_id and m.fetch_id < r.fetch_answered:
            return  # older than an answer taken already (a fetch sent again was answered first): stale
        if m.fetch_id and m.fetch_id <= r.fetch_fence:
            return  # asked before a controller request this follower has since taken (_fence_fetch)
        if m.error == STALE_FETCH:
            # the leader had handled a newer fetch of this follower than the one refused: a stale
            # duplicate (its newer one is answered on its own) changes nothing; the follower's own latest
            # fetch refused means its ids began again (a restart, a replica deleted and created again):
            # they go on above the leader's newest, and it fetches again at once (KIP-227: a fetcher
            # whose session epoch is refused starts a new session)
            if m.fetch_id == r.fetch_id and r.fetching:
                r.fetch_id = max(r.fetch_id, m.newest_fetch_id)
                r.fetching = False
                self._fetch(p)
            return
        r.fetch_answered = max(r.fetch_answered, m.fetch_id)
        r.fetching = False
        got = 0
        if r.fetch_state != FETCHING or (self.fenced and m.leader_epoch != r.leader_epoch):
            pass  # asked before a LeaderAndIsr that started a reconciliation (or a new epoch): stale
        elif m.error == "OffsetOutOfRange":
            self._truncate(p, r, m.leader_leo)
            self._set_hw(p, r, min(r.hw, r.leo))
        elif m.error == "" and m.offset == r.leo:
            got = len(m.records)
            self._append(p, r, list(m.records))
            self._set_hw(p, r, min(m.hw, r.leo))
        if self.autonomous:
            again = got or (m.error == "" and self.fetch_wait_ms > 0) or r.fetch_state != FETCHING
            self._out.append(SetTimer("fetch", 0 if again else self.cfg.fetch_interval_ms, p))

    # ------------------------------------------------------------------ leader-epoch reconciliation
    def _ask_epoch_end(self, p: int) -> None:
        """OffsetsForLeaderEpoch: ask the leader where this replica's latest epoch ends."""
        r = self.replicas.get(p)
        if r is None or r.leader in (NO_LEADER, self.id) or r.fetch_state != ASK_EPOCH_END:
            return
        r.fetching = True
        r.fetch_sent_at = self.now
        self._send(broker(r.leader), OffsetsForLeaderEpochRequest(p, self.id, EC.latest(r.epochs), r.leader_epoch))
        if self.autonomous:
            self._out.append(SetTimer("fetch", self.fetch_timeout_ms, p))

    def _serve_epoch_query(self, frm: Any, m: OffsetsForLeaderEpochRequest) -> None:
        """The leader reads its own cache and answers (whether or not the asker is assigned)."""
        p = m.partition
        r = self.replicas.get(p)
        if r is None or r.leader != self.id:
            self._send(frm, OffsetsForLeaderEpochResponse(p, self.id, m.epoch, m.current_leader_epoch, "NotLeader"))
            return
        error = self._epoch_error(m.current_leader_epoch, r)
        if error:
            self._send(frm, OffsetsForLeaderEpochResponse(p, self.id, m.epoch, m.current_leader_epoch, error))
            return
        epoch, end = EC.leader_answer(self.epoch_answer, r.epochs, r.leo, m.epoch)
        self._send(frm, OffsetsForLeaderEpochResponse(p, self.id, m.epoch, m.current_leader_epoch, "", epoch, end))

    def _epoch_answered(self, m: OffsetsForLeaderEpochResponse) -> None:
        p = m.partition
        r = self.replicas.get(p)
        if r is None or r.leader != m.leader or r.leader == self.id:
            return  # the follower moved on meanwhile
        r.fetching = False
        if (r.fetch_state == ASK_EPOCH_END and m.error == "" and m.current_leader_epoch == r.leader_epoch
                and m.asked_epoch == EC.latest(r.epochs)):
            r.answer = (m.epoch, m.end_offset)
            r.fetch_state = TRUNCATE_PENDING  # the answer waits here until the follower applies it
            if self.autonomous:
                self._truncate_to_epoch_end(p)
        # (an answer to a question asked before the last LeaderAndIsr is dropped: the question is asked again)
        if self.autonomous:
            again = m.error == "" or r.fetch_state != ASK_EPOCH_END
            self._out.append(SetTimer("fetch", 0 if again else self.cfg.fetch_interval_ms, p))

    def _truncate_to_epoch_end(self, p: int) -> None:
        """TruncateToEpochEndOffset: apply the held answer; then fetch, or (walking back) ask again."""
        r = self.replicas.get(p)
        if r is None or r.fetch_state != TRUNCATE_PENDING or r.answer is None:
            return
        cut, ask_again = EC.truncation_point(self.epoch_answer, r.epochs, r.leo, r.hw, r.answer)
        # KAFKA-10706 put back (reintroduce): a truncation at or beyond the log end returns early, leaving
        # the epoch cache as it is (an entry starting at the LEO survives, so the same question is asked
        # forever); the fix cuts the cache at the truncation point whatever the log's length
        if not (cut >= r.leo and self.truncation_at_log_end_keeps_epochs):
            self._truncate(p, r, cut)
        self._set_hw(p, r, min(r.hw, cut))
        r.answer = None
        r.fetch_state = ASK_EPOCH_END if ask_again and r.log else FETCHING

    # ------------------------------------------------------------------ store results
    def _store_result(self, res: StoreResult) -> None:
        why, data = self._store_waits.pop(res.token, (None, None))
        if why == "isr":
            self._isr_written(res, *data)
        elif why == "register":
            self._registering = False
            if res.error is None:
                self.registered = True
            elif isinstance(res.error, NoNode):
                self._registering = True
                self._store("ensure_base", (), "base")
            elif isinstance(res.error, NodeExists):
                # an old session's registration has not expired yet: try again shortly
                self._out.append(SetTimer("register", 200))
            else:
                self._out.append(SetTimer("register", 500))
        elif why == "base":
            self._register()

    def _shutdown_answer(self, m: ControlledShutdownResponse) -> None:
        if not self.stopping:
            return
        if m.error and self._shutdown_attempts < 5:
            self._out.append(SetTimer("shutdown-retry", 300))
            return
        for p, r in sorted(self.replicas.items()):
            self._out.append(Persist("flush", p))
            if self.cfg.hw_checkpoint == "periodic":
                self._checkpoint(p, r)
        self._out.append(Stop("controlled shutdown"))
