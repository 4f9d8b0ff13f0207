"""``isrcheck cluster torture``: a seeded nemesis against a real 3-broker cluster, judged by its history.

Why: the simulator (impl/rigs/fault_run.py) runs the same cores under seeded faults, but only real processes
have real sockets, real signals, real disks and, with ZooKeeper, real sessions. This module starts a
cluster whose every connection goes through the nemesis (:mod:`.nemesis_proxy`, one proxy per link,
routes handed to each process by :meth:`TortureCluster.extra_env` and its ``--store``), runs an
``acks=all`` producer, an ``acks=1`` producer and a consumer through the proxies too, plays the
schedule of :mod:`.torture_schedule` (partitions, pauses, kills, session expiry, delays, drops), heals
everything, waits for the cluster to settle and hands the history to :mod:`.history`:

- the **promise** (``verdict``): the acks=all writes, which under ``min_insync_replicas >= 2`` and a
  clean election must never be lost, reordered, or left on diverged replicas;
- the **acks=1 writes** (``verdict_acks1``): their loss is allowed by Kafka's promise; it is reported.

The event log of the run (every process's, ``<dir>/events``) is validated by the caller
(isrcheck/commands/cluster_torture.py): impl/ does not import the conformance package.
"""
from __future__ import annotations

import heapq
import itertools
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import layout as L
from ..core.store import StoreError
from ..disk.log import SEGMENT_FILE
from ..disk.segment_format import scan
from ..process.client import Client, ClientError
from ..process.cluster import ClusterError, LocalCluster
from ..process.event_log import clock_ns, step
from ..process.routes import ENV as ROUTES_ENV
from ..process.routes import encode
from .history import History, Verdict, Write, check
from .nemesis_proxy import FaultLimit, Nemesis, NemesisError
from .torture_schedule import CONTROLLER_KINDS, Fault, schedule

__all__ = ["TortureResult", "TortureSetting", "run_config", "run_torture"]

BROKERS = 3
CONTROLLERS = 2
PARTITION = 0


@dataclass(frozen=True)
class TortureSetting:
    generation: str = "kip-320"
    min_isr: int = 2
    unclean: bool = False
    store: str = "embedded"  # or "zookeeper"
    zookeeper: str | None = None  # HOST:PORT of the server, for store == "zookeeper"
    duration: float = 10.0  # the nemesis window, seconds
    kinds: tuple[str, ...] | None = None  # fault kinds drawn from (None: all)
    pace: float = 0.02  # seconds between two writes of one producer
    settle: float = 30.0  # how long to wait for the healed cluster to agree
    # The controller tells a restart from a registration that never went away by its czxid (Kafka 2.2
    # and later). Without it a broker killed and restarted within its ZooKeeper session's timeout can
    # re-register before the controller reads the broker list, and is never told it leads: the
    # model's `undetected_restarts` weakness. On by default, since the run judges today's promise.
    undetected_restarts: bool = False
    # How long a leader keeps a follower that has not caught up in the ISR. The random schedule uses
    # the implementation's default; a scripted scenario whose next step needs a cut-off follower still
    # in the ISR raises it, so that the step does not race the shrink on a loaded machine.
    replica_lag_time_max_ms: int = 500

    def config(self) -> dict[str, Any]:
        return {"brokers": BROKERS, "generation": self.generation, "min_insync_replicas": self.min_isr,
                "unclean_leader_election": self.unclean, "acks": "all",
                "detect_restarts": not self.undetected_restarts,
                "replica_lag_time_max_ms": self.replica_lag_time_max_ms}


@dataclass
class TortureResult:
    seed: int
    setting: TortureSetting
    faults: list[tuple[Fault, str]]  # each with what was done ("" when refused or nothing to do)
    verdict: Verdict  # acks=all writes: the promise
    verdict_acks1: Verdict  # acks=1 writes: loss allowed, reported
    writes_all: int
    acked_all: int
    writes_one: int
    acked_one: int
    consumed: int  # records read by the concurrent consumer
    read_then_lost: tuple[int, ...]  # read below the HW during the run, missing after healing
    settled: bool
    failovers: list[float]  # seconds from a fault striking the leader to another leader in the store
    unregistered: list[int]  # brokers restarted for running unregistered: none since brokers re-register
    link_frames: dict[str, int]  # "src->dst": frames (raw links: chunks) the nemesis forwarded
    directory: str
    event_log: str
    seconds: float
    notes: list[str] = field(default_factory=list)
    # seconds from a fault ending the active controller's session (killed, or cut from the store) to a
    # higher controller epoch in the store
    controller_failovers: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict.ok


def _hostport(spec_rest: str) -> tuple[str, int, str]:
    hostport, slash, chroot = spec_rest.partition("/")
    host, _, port = hostport.rpartition(":")
    return host, int(port), slash + chroot


class RoutedClient(Client):
    """A client whose broker connections go through the nemesis links of node ``client``."""

    def __init__(self, store_spec: str, topic: str, secret: bytes | None, nemesis: Nemesis,
                 timeout: float = 2.0) -> None:
        super().__init__(store_spec, topic, timeout=timeout, secret=secret)
        self.nemesis = nemesis

    def brokers(self) -> dict[int, tuple[str, int]]:
        return {b: self.nemesis.address("client", f"broker-{b}") for b in super().brokers()}


class TortureCluster(LocalCluster):
    """A LocalCluster whose processes reach each other and the store through the nemesis."""

    nemesis: Nemesis

    def routed_spec(self, src: str) -> str:
        kind, _, rest = self.store_spec.partition(":")
        _, _, chroot = _hostport(rest)
        host, port = self.nemesis.address(src, "store")
        return f"{kind}:{host}:{port}{chroot}"

    def extra_env(self, name: str) -> dict[str, str]:
        routes = {dst: self.nemesis.address(src, dst) for (src, dst) in self.nemesis.links
                  if src == name and dst != "store"}
        return {ROUTES_ENV: encode(routes)} if routes else {}

    def _launch(self, name: str, role: str, args: list[str], ready: str, timeout: float = 20.0) -> dict[str, Any]:
        if "--store" in args and name != "store":
            args = list(args)
            args[args.index("--store") + 1] = self.routed_spec(name)
        return super()._launch(name, role, args, ready, timeout)

    def upstream(self, dst: str) -> tuple[str, int] | None:
        """Where ``dst`` listens now (read at every proxied connection: a restarted process is found)."""
        if dst == "store" and self.zookeeper:
            host, port, _ = _hostport(self.zookeeper)
            return host, port
        info = self.procs.get(dst)
        return ("127.0.0.1", int(info["port"])) if info else None


def _nodes() -> tuple[list[str], list[str]]:
    brokers = [f"broker-{b}" for b in range(1, BROKERS + 1)]
    return brokers, [f"controller-{i}" for i in range(1, CONTROLLERS + 1)]


def make_zk_chroot(zookeeper: str, prefix: str = "isrcheck-torture") -> str:
    """A fresh, empty chroot on the server (``HOST:PORT/<prefix>-<random>``), so that runs never see
    each other's znodes."""
    from kazoo.client import KazooClient

    root = f"/{prefix}-{os.urandom(6).hex()}"
    k = KazooClient(hosts=zookeeper)
    k.start(timeout=10)
    try:
        k.create(root, b"")
    finally:
        k.stop()
        k.close()
    return zookeeper + root


def run_config(setting: TortureSetting, plan: Sequence[Fault]) -> dict[str, Any]:
    """The cluster's configuration for a run of ``plan``: the setting's, and the model's fault budgets
    the schedule calls for, so that every process's event-log header declares them to ``validate``.
    A ``drop`` fault loses frames between two brokers, among them answers to fetches the leader has
    already counted (it recorded the follower's offset, maybe raised its HW or grew its ISR): the
    model's ``FetchAnswerLost`` (specs/05-replication.md, "Fetch"). The follower fetches again from the
    same offset, so a drop costs one such answer that changes the leader, save where some answers got
    through in between; one per drop fault (at most the key's bound, 16) keeps the validation's
    candidate states few (each unit of budget multiplies them)."""
    out = setting.config()
    drops = sum(1 for f in plan if f.kind == "drop")
    if drops:
        out["faults"] = {"lost_fetch_answers": min(16, drops)}
    return out


def _registered(k: Client | None, b: int) -> bool:
    """Whether broker ``b`` is registered in the store now (True when it cannot be read: the cut is
    then logged as before)."""
    if k is None:
        return True
    try:
        return b in k.brokers()
    except (ClientError, StoreError, OSError):
        return True


def _knows_its_role(k: Any, b: int) -> bool:
    """Whether broker ``b`` hosts the torture partition as its leader or a follower."""
    return any(p == PARTITION and role != "none" for p, role, *_ in k.metadata(b).replicas)


class _Run:
    """One torture run's moving parts (the threads share ``lock``)."""

    def __init__(self, seed: int, setting: TortureSetting, directory: Path, plan: Sequence[Fault] = ()) -> None:
        self.seed, self.s, self.dir = seed, setting, directory
        self.lock = threading.Lock()
        # the producers take turns, one request each: the model numbers writes 1, 2, ... in the order the
        # leader appends them, so ids handed out concurrently would reach the leader out of order
        self.turn = threading.Lock()
        self.stop = threading.Event()
        self.writes: dict[str, list[Write]] = {"all": [], "1": []}
        self.seen: list[int] = []
        self.undo: list[tuple[float, int, str, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.timeline: list[tuple[float, int]] = []  # (monotonic s, leader) samples
        self.strikes: list[tuple[float, int]] = []  # (when, victim) of faults against the leader
        self.epochs: list[tuple[float, int]] = []  # (monotonic s, controller epoch) samples
        self.controller_strikes: list[tuple[float, int]] = []  # (when, epoch then) of controller session ends
        self.notes: list[str] = []
        self.started: dict[str, float] = {}  # process -> when the run last started it (monotonic s)
        #: process -> until when (monotonic s) an expiry fault cuts it from the store: a second one in that
        #: window ends no second session, so it is not logged as a second expiry or failover
        self.store_cut: dict[str, float] = {}
        self.unregistered: list[int] = []  # stays empty: a broker re-registers on a new session itself
        self.missing: set[int] = set()  # running brokers without a registration at the last look
        zk = make_zk_chroot(setting.zookeeper) if setting.store == "zookeeper" and setting.zookeeper else None
        self.c = TortureCluster(directory, brokers=BROKERS, zookeeper=zk, config=run_config(setting, plan),
                                controllers=CONTROLLERS, event_log=directory / "events")
        self.nem = Nemesis(self.c.upstream, seed=seed, max_faults=1000, max_fault_seconds=30.0)
        self.c.nemesis = self.nem
        brokers, controllers = _nodes()
        for src in [*brokers, *controllers, "client"]:
            self.nem.add_link(src, "store", framed=False)
            for dst in [*brokers, *controllers]:
                if dst != src and not (src.startswith("controller") and dst.startswith("controller")):
                    self.nem.add_link(src, dst, framed=True)

    # ------------------------------------------------------------------ clients
    def _next_id(self) -> int:
        with self.lock:
            return self.c.next_record_id(PARTITION)

    def _routed(self) -> RoutedClient:
        return RoutedClient(self.c.routed_spec("client"), self.c.topic, self.c.secret, self.nem)

    def producer(self, acks: str) -> None:
        """Write until told to stop. A write that fails is sent again with the same id until it is
        acknowledged (at-least-once, as a retrying producer without idempotence): ids are never skipped."""
        pending: tuple[int, int] | None = None  # (id, first sent) of a write not yet acknowledged
        with self._routed() as k:
            while not self.stop.is_set():
                with self.turn:  # the model numbers writes in the order the leader appends them
                    rid, sent = pending if pending else (self._next_id(), time.monotonic_ns())
                    try:
                        k.produce(PARTITION, f"{acks}-{rid}", acks=acks, timeout=3.0, record_id=rid)
                        pending = None
                    except (ClientError, OSError):
                        pending = (rid, sent)
                if pending is None:
                    with self.lock:  # not note_acked: the model has one acks setting, this run mixes two, so
                        # its acked[p] (every committed write under acks=all) is no client's view here
                        self.writes[acks].append(Write(PARTITION, rid, sent, time.monotonic_ns()))
                self.stop.wait(self.s.pace)
        if pending is not None:
            with self.lock:
                self.writes[acks].append(Write(PARTITION, pending[0], pending[1], None))

    def consumer(self) -> None:
        offset = 0
        with self._routed() as k:
            while not self.stop.is_set():
                try:
                    got = k.consume(PARTITION, offset, 500, timeout=1.0)
                except (ClientError, OSError):
                    self.stop.wait(0.1)
                    continue
                self.seen.extend(r.id for r in got)
                offset += len(got)
                if not got:
                    self.stop.wait(0.05)

    # ------------------------------------------------------------------ the nemesis
    def leader(self, k: Client) -> int:
        try:
            st = k.snapshot().partitions[PARTITION].state
            return st.leader if st else 0
        except (ClientError, KeyError, AttributeError):
            return 0

    def later(self, at: float, what: str, fn: Callable[[], None]) -> None:
        heapq.heappush(self.undo, (at, next(self._seq), what, fn))

    def run_due(self, now: float | None = None) -> None:
        while self.undo and (now is None or self.undo[0][0] <= now):
            _, _, what, fn = heapq.heappop(self.undo)
            try:
                fn()
            except (ClusterError, ClientError, OSError) as e:
                self.notes.append(f"{what}: {e}")

    def sample(self, k: Client) -> tuple[int, int]:
        """(leader, controller epoch) from one snapshot; (0, 0) when the store cannot be read."""
        try:
            snap = k.snapshot()
        except (ClientError, KeyError, AttributeError):
            return 0, 0
        st = snap.partitions[PARTITION].state if PARTITION in snap.partitions else None
        return (st.leader if st else 0), snap.controller_epoch

    def until(self, k: Client, deadline: float) -> None:
        while (now := time.monotonic()) < deadline:
            self.run_due(now)
            leader, epoch = self.sample(k)
            self.timeline.append((now, leader))
            if epoch:
                self.epochs.append((now, epoch))
            time.sleep(0.05)

    def signal(self, name: str, sig: int) -> bool:
        """Send ``sig`` only to a live process this cluster provably started (impl/process/cluster_state.py)."""
        if not self.c.alive(name):
            return False
        os.kill(self.c.pid(name), sig)
        return True

    def strike(self, f: Fault, k: Client) -> str:
        now = time.monotonic()
        if f.kind in CONTROLLER_KINDS:
            return self.strike_controller(f, k)
        b = f.target
        if b is None:
            b = self.leader(k) or 1
            self.strikes.append((now, b))
        name = f"broker-{b}"
        peer = f"broker-{(b or 0) % BROKERS + 1}"
        brokers, _ = _nodes()
        if f.kind == "partition":
            self.nem.isolate(name, f.seconds)
            return f"isolated {name}"
        if f.kind == "split":
            self.nem.partition([name], [x for x in brokers if x != name], f.seconds)
            return f"cut {name} from the other brokers"
        if f.kind == "expire":
            self.expire_broker(b, k)
            return f"cut {name} from the store (session expiry)"
        if f.kind == "delay":
            self.nem.delay(name, peer, f.amount, f.seconds)
            return f"delayed {name}<->{peer}"
        if f.kind == "drop":
            self.nem.drop(name, peer, f.amount, f.seconds)
            return f"dropping {name}<->{peer}"
        if f.kind == "pause":
            if not self.signal(name, signal.SIGSTOP):
                return ""
            self.later(now + f.seconds, f"SIGCONT {name}", lambda: self._resume(name))
            return f"SIGSTOP {name}"
        if f.kind == "kill":
            if not self.c.alive(name):
                return ""
            self.c.kill(name)
            self.later(now + f.seconds, f"restart {name}", lambda: self._restart(name))
            return f"SIGKILL {name}"
        raise NemesisError(f"unknown fault kind {f.kind!r}")

    def expire_broker(self, b: int, k: Client | None = None) -> None:
        """Cut broker ``b`` from the store until its session expires; logged as the model's
        ``ExpireSession(b)`` (the broker logs its ``Reregister(b)`` when it has registered again).

        Not logged when there is no session to end: an earlier cut still on, or (read from the store
        through ``k``) a broker not registered at all, whose earlier session ended and which has not
        registered again yet (seed 104 of a batch: a second expiry of broker 1 before its
        ``Reregister(1)``, a step the model cannot take twice in a row)."""
        name = f"broker-{b}"
        alive = self.c.alive(name)
        registered = _registered(k, b)
        again = self._cut_from_store(name)
        if alive and registered and not again:
            self.c._log(name, "action", step("ExpireSession", b), {}, f"cut {name} from the store")

    def _cut_from_store(self, name: str) -> bool:
        """Cut ``name`` from the store until its session expires; True if an earlier cut was still on (the
        session this one ends is the one that one ends: the model's step was logged then, not again)."""
        now = time.monotonic()
        again = self.store_cut.get(name, 0.0) > now
        self.nem.expire(name, self.c.session_timeout)
        self.store_cut[name] = now + min(self.nem.max_fault_seconds, 1.5 * self.c.session_timeout + 0.5)
        return again

    def strike_controller(self, f: Fault, k: Client) -> str:
        """A controller fault, against the controller active now (or a standby one): chosen when it strikes,
        as a leader fault is, since which controller is active is known only then."""
        active = self.active_controller(k)
        now = time.monotonic()
        if not active or not self.c.alive(active):
            return ""
        brokers, controllers = _nodes()
        if f.kind == "standby-store":
            standby = next((c for c in controllers if c != active and self.c.alive(c)), None)
            if standby is None:
                return ""
            self._cut_from_store(standby)
            return f"cut {standby} (standby) from the store (session expiry)"
        if f.kind == "controller-brokers":
            self.nem.partition([active], brokers, f.seconds)
            return f"cut {active} from every broker"
        if f.kind == "controller-some":
            cut = [f"broker-{b}" for b in f.brokers]
            self.nem.partition([active], cut, f.seconds)
            return f"cut {active} from {', '.join(cut)}"
        if f.kind == "controller-store":
            # the model's ControllerFailover (the active controller's session ends, another is elected; it
            # goes on deposed until it notices), its clock read before the cut so every reaction comes after;
            # a controller still cut by an earlier such fault (the store still names it: its session has not
            # ended yet) is cut longer, and no second failover is logged (torture seed 11: two cuts 70 ms
            # apart, one election, and the model's controller epoch one too high)
            t = clock_ns()
            if self._cut_from_store(active):
                return f"cut {active} from the store again (its session is already ending: no second failover)"
            self.controller_strikes.append((now, self.sample(k)[1]))
            self.c._log(active, "action", step("ControllerFailover"), {}, f"cut {active}, the active controller, "
                                                                          f"from the store", t)
            return f"cut {active} from the store (session expiry)"
        self.controller_strikes.append((now, self.sample(k)[1]))
        self.c.kill(active)  # kill-controller
        self.later(now + f.seconds, f"restart {active}", lambda: self._restart(active))
        return f"SIGKILL {active}"

    def active_controller(self, k: Client) -> str | None:
        """The controller named in the store's ``/controller``, read from the store alone. Why not
        ``LocalCluster.active_controller``: its status asks every broker too, and a SIGSTOPped broker held
        each such call for the client's whole timeout, so a controller fault struck seconds late."""
        try:
            got = k.session.get_or_none(L.CONTROLLER)
            name = (L.decode(got[0]) or {}).get("name") if got is not None else None
        except (StoreError, ValueError, TypeError, AttributeError):
            return None
        return str(name) if name else None

    def _resume(self, name: str) -> None:
        self.signal(name, signal.SIGCONT)

    def _restart(self, name: str) -> None:
        if self.c.alive(name):
            return
        self.started[name] = time.monotonic()
        if name.startswith("broker-"):
            self.c.start_broker(int(name.rsplit("-", 1)[1]))
        else:
            self.c.start_controller(int(name.rsplit("-", 1)[1]))

    def heal(self) -> None:
        self.nem.heal()
        self.run_due(None)  # every SIGCONT and restart still pending, now
        brokers, controllers = _nodes()
        for name in [*brokers, *controllers]:
            if name.startswith("broker-") and self.c.alive(name):
                self.signal(name, signal.SIGCONT)
            try:
                self._restart(name)
            except ClusterError as e:
                self.notes.append(f"heal: {e}")

    def reregister(self, k: Client) -> None:
        """Find the running brokers that have no registration in the store (``missing``). The nemesis
        found that a broker whose session expired (``expire``) never registered again, and this harness
        used to restart such a broker; the broker now registers again by itself on its new session
        (``SessionRenewed``), so nothing is restarted (``unregistered`` stays empty). Being missing for a
        while is normal (on ZooKeeper a client learns of its expiry only once it reaches the server
        again); still missing when the run fails to settle is a finding, and :meth:`settle` notes it."""
        try:
            registered = set(k.brokers())
        except ClientError as e:
            self.notes.append(f"reading the registrations: {e}")
            return
        self.missing = set()
        for b in range(1, BROKERS + 1):
            name = f"broker-{b}"
            young = time.monotonic() - self.started.get(name, 0.0) < self.c.session_timeout + 1.0
            if b not in registered and self.c.alive(name) and not young:  # young: still registering
                self.missing.add(b)

    # ------------------------------------------------------------------ after healing
    def settled(self, k: Client) -> bool:
        """One leader, the full ISR, every replica back in a role (the leader and followers of that
        leader epoch) at one LEO and HW, and an active controller: after a controller fault the cluster
        is not settled until some controller won an election again."""
        status = k.status()
        part = status["partitions"][0]
        self.last_status = {**part, "controller": status["controller"]}
        if status["controller"]["epoch"]:  # a failover may end only after the heal: keep measuring
            self.epochs.append((time.monotonic(), status["controller"]["epoch"]))
        if not status["controller"]["name"]:
            return False
        reps = part["replica_status"]
        leos = {r["leo"] for r in reps.values()}
        roles = sorted(r["role"] for r in reps.values())
        return (bool(part["leader"]) and sorted(part["isr"]) == list(range(1, BROKERS + 1))
                and len(reps) == BROKERS and len(leos) == 1 and all(r["hw"] == r["leo"] for r in reps.values())
                and roles == ["follower"] * (BROKERS - 1) + ["leader"]
                and {r["leader_epoch"] for r in reps.values()} == {part["leader_epoch"]})

    def settle(self) -> bool:
        """Wait until :meth:`settled`; if it never is, note the brokers that run unregistered then (a
        broker re-registers by itself on its new session, so one still missing explains the failure)."""
        deadline = time.monotonic() + self.s.settle
        with self.c.client(timeout=2.0) as k:
            while time.monotonic() < deadline:
                try:
                    if self.settled(k):
                        return True
                except (ClientError, KeyError, IndexError, ValueError):
                    pass
                time.sleep(0.1)
            self.reregister(k)
        self.notes.append(f"did not settle within {self.s.settle:g} s; last seen: {getattr(self, 'last_status', None)}")
        for b in sorted(self.missing):
            self.notes.append(f"broker-{b} runs unregistered: its store session ended and it did not register again")
        return False

    def final_consume(self) -> tuple[int, ...] | None:
        out: list[int] = []
        try:
            with self.c.client(timeout=5.0) as k:
                while True:
                    got = k.consume(PARTITION, len(out), 1000, timeout=10.0)
                    if not got:
                        return tuple(out)
                    out.extend(r.id for r in got)
        except ClientError as e:
            self.notes.append(f"final consume: {e}")
            return None

    def final_logs(self) -> dict[tuple[int, int], tuple[int, ...]]:
        """Every replica's log, (broker, partition) -> record ids, read from its segment after ``down``."""
        logs = {}
        for b in range(1, BROKERS + 1):
            path = self.dir / f"data-{b}" / str(PARTITION) / SEGMENT_FILE
            if path.exists():
                logs[(b, PARTITION)] = tuple(r.id for r in scan(path, path.read_bytes()).records)
        return logs

    def failovers(self) -> list[float]:
        out = []
        for at, victim in self.strikes:
            after = [t for t, ld in self.timeline if t >= at and ld not in (0, victim)]
            if after:
                out.append(round(after[0] - at, 3))
        return out

    def controller_failovers(self) -> list[float]:
        """Per controller session ended by a fault: seconds until the store held a higher controller epoch
        (a strike whose epoch was unknown, or that no new epoch followed within the run, is left out)."""
        out = []
        for at, epoch in self.controller_strikes:
            after = [t for t, e in self.epochs if t >= at and e > epoch > 0]
            if after:
                out.append(round(after[0] - at, 3))
        return out


def run_torture(seed: int, setting: TortureSetting, directory: str | os.PathLike[str] | None = None,
                progress: Callable[[str], None] | None = None) -> TortureResult:
    """One run: up, create the topic, clients and the nemesis for ``setting.duration`` s, heal, settle, judge.
    The cluster is always taken down; the directory (logs, data, event logs) is left for the caller."""
    say = progress or (lambda _m: None)
    start = time.monotonic()
    kinds = setting.kinds or None
    plan = schedule(seed, setting.duration, BROKERS, kinds, CONTROLLERS)
    d = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="isrcheck-torture-"))
    run = _Run(seed, setting, d, plan)
    threads: list[threading.Thread] = []
    done: list[tuple[Fault, str]] = []
    settled = False
    try:
        say(f"starting a {BROKERS}-broker cluster in {d} (store {setting.store})")
        run.c.up()
        with run.c.client() as k:
            k.create_topic(1, BROKERS)
        run.c.wait_for(lambda k: sorted(getattr(k.snapshot().partitions[PARTITION].state, "isr", ())) == [1, 2, 3], 30,
                       "the topic's ISR to hold every broker")
        # and every replica to know its role: a write the leader takes before a follower's LeaderAndIsr
        # arrived is a run that never passed through the model's initial state (seed 118 of a batch)
        run.c.wait_for(lambda k: all(_knows_its_role(k, b) for b in range(1, BROKERS + 1)), 30,
                       "every replica to know its role")
        threads = [threading.Thread(target=run.producer, args=("all",), daemon=True),
                   threading.Thread(target=run.producer, args=("1",), daemon=True),
                   threading.Thread(target=run.consumer, daemon=True)]
        for t in threads:
            t.start()
        say(f"nemesis: {len(plan)} fault(s) in {setting.duration:g} s")
        t0 = time.monotonic()
        with run.c.client(timeout=2.0) as k:
            for f in plan:
                run.until(k, t0 + f.at)
                try:
                    done.append((f, run.strike(f, k)))
                except (FaultLimit, NemesisError, ClusterError, ClientError, OSError) as e:
                    done.append((f, ""))
                    run.notes.append(f"{f.describe()}: not done: {e}")
            run.until(k, t0 + setting.duration)
            say("healing")
            run.heal()
            run.until(k, time.monotonic() + 1.0)  # writes go on for a second on the healed cluster
        run.stop.set()
        for t in threads:
            t.join(15)
        settled = run.settle()
        consumed = run.final_consume()
    finally:
        run.stop.set()
        for t in threads:
            t.join(15)
        try:
            run.c.down()
        except ClusterError as e:
            run.notes.append(f"down: {e}")
        run.nem.close()
    logs = run.final_logs()
    with run.lock:
        w_all, w_one = list(run.writes["all"]), list(run.writes["1"])
    verdict = check(History(tuple(w_all), {PARTITION: consumed}, logs))
    verdict_one = check(History(tuple(w_one), {PARTITION: consumed}, logs))
    final = set(consumed or ())
    lost_reads = tuple(sorted({r for r in run.seen if r not in final})) if consumed is not None else ()
    return TortureResult(seed, setting, done, verdict, verdict_one, len(w_all), sum(w.acked_at is not None for w in w_all),
                         len(w_one), sum(w.acked_at is not None for w in w_one), len(run.seen), lost_reads,
                         settled, run.failovers(), run.unregistered,
                         {f"{a}->{b}": ln.frames for (a, b), ln in run.nem.links.items()}, str(d), str(d / "events"), time.monotonic() - start, run.notes,
                         run.controller_failovers())


def remove(result: TortureResult) -> None:
    shutil.rmtree(result.directory, ignore_errors=True)
