"""Fault-injection runs of the *autonomous* implementation, logged as event logs for :func:`validate_log`.

The step-mode simulator does only what it is told; the real processes decide for themselves when to
fetch, shrink the ISR, checkpoint, react to watches. A run here drives either

- :class:`AutoRun`: :class:`isrcheck.impl.rigs.simulator.AutoSimulator`, the very cores the real processes
  run (timers, watches, long-polled fetches, lag-based ISR shrink, two controller candidates), on a
  discrete-event loop in virtual milliseconds; or
- :class:`ClusterRun`: the real multi-process cluster on loopback (:class:`isrcheck.impl.process.cluster.LocalCluster`),

through client operations and faults (produce with acks=all, crash a broker, restart it, kill the
active controller). After each operation the run waits until the cluster is quiet, then logs one
event: the operation, named in the vocabulary (``Produce(leader, p)``, ``Crash(b)``, ``Restart(b)``,
``ControllerFailover()``), with the facts the driver can see then (``"facts": "partial"``). Everything
the cluster does on its own in between (deliveries, fetches, controller reactions, checkpoints,
lag-based ISR shrinks) is left to the validator as *silent* steps, at most ``max_silent`` per event.

The log's configuration is the run's, with budgets just large enough for what was injected (so the
model may crash as often as the run did, and shrink the ISR as a leader may on its own).
"""
from __future__ import annotations

import dataclasses
import signal
import time
from collections.abc import Callable, Mapping
from typing import Any

from isrcheck.model.config import Faults, from_mapping

from .eventlog import EventLog, Recorder
from .observations import flatten

__all__ = ["AutoRun", "ClusterRun", "SELFLOG_CONFIG", "SETTLE", "SILENT", "SelfLoggedRun", "controlled_shutdowns",
           "fault_injection", "reassignment", "self_logged_run", "two_partitions"]

#: housekeeping a quiet cluster has finished: its HW checkpoints (written every
#: hw_checkpoint_interval_ms, far below the time a run waits to call the cluster quiet)
SETTLE = ("CheckpointHighWatermark",)

#: what a cluster does on its own, unlogged
SILENT = ("DeliverRequest", "Fetch", "ProcessBrokerChange", "ResignController", "CheckpointHighWatermark",
          "ShrinkIsr", "ElectPreferredLeader", "ReassignPartition", "CreateTopic", "StartTopicDeletion",
          "CompleteTopicDeletion")


class _Run:
    source = "run"

    def __init__(self, raw: Mapping[str, Any], max_silent: int, keep: Callable[[str], bool] | None) -> None:
        self.raw = dict(raw)
        self.config = from_mapping(self.raw)
        self.keep = keep or (lambda path: True)
        self.used = {"crashes": 0, "controller_failovers": 0, "produced": 0}
        self._settle()  # the initial facts are those of a quiet cluster too
        self.recorder = Recorder(self.config, self._facts(), facts="partial", source=self.source,
                                 silent=SILENT, max_silent=max_silent, quiet=True, settle=SETTLE)

    # the driver's view and operations -------------------------------------------------------------
    def _observe(self) -> dict[str, Any]:
        raise NotImplementedError

    def _settle(self) -> None:
        raise NotImplementedError

    def _facts(self) -> dict[str, Any]:
        return {p: v for p, v in self._observe().items() if self.keep(p)}

    def _log(self, action: tuple[str, tuple], note: str = "") -> None:
        self._settle()
        self.recorder.event(action, self._facts(), t=self._now(), note=note)

    def _now(self) -> int | None:
        return None

    # the faults: each counted against the budgets and logged here, once for every driver; the
    # driver's hooks below only make it happen --------------------------------------------------
    def produce(self, p: int = 0) -> None:
        leader = self._produce(p)
        self.used["produced"] += 1
        self._log(("Produce", (leader, p)))

    def crash(self, b: int) -> None:
        self._crash(b)
        self.used["crashes"] += 1
        self._log(("Crash", (b,)))

    def restart(self, b: int) -> None:
        self._restart(b)
        self._log(("Restart", (b,)))

    def kill_controller(self) -> None:
        note = self._kill_controller()
        self.used["controller_failovers"] += 1
        self._log(("ControllerFailover", ()), note=note)

    def _produce(self, p: int) -> int:
        """Produce one record to partition ``p``; the leader it went to, as the log names it."""
        raise NotImplementedError

    def _crash(self, b: int) -> None:
        raise NotImplementedError

    def _restart(self, b: int) -> None:
        raise NotImplementedError

    def _kill_controller(self) -> str:
        """Kill the active controller; a note for the log line ("" for none)."""
        raise NotImplementedError

    def log(self) -> EventLog:
        """The event log so far, its configuration's budgets fitted to the run."""
        cfg = self.config
        faults = dataclasses.replace(cfg.faults, crashes=max(cfg.faults.crashes, self.used["crashes"]),
                                     controller_failovers=max(cfg.faults.controller_failovers,
                                                              self.used["controller_failovers"]),
                                     isr_shrinks=max(cfg.faults.isr_shrinks, 2 * self.used["crashes"] + 1))
        cfg = dataclasses.replace(cfg, faults=Faults(**dataclasses.asdict(faults)),
                                  max_records=max(cfg.max_records, self.used["produced"]))
        log = self.recorder.log
        return dataclasses.replace(log, config=cfg, events=list(log.events))


class AutoRun(_Run):
    """A fault-injection run of :class:`~isrcheck.impl.rigs.simulator.AutoSimulator`, logged."""

    source = "auto-simulator"

    def __init__(self, raw: Mapping[str, Any], seed: int = 0, settle_ms: int = 2_000, max_silent: int = 24,
                 keep: Callable[[str], bool] | None = None) -> None:
        from isrcheck.impl.rigs.simulator import AutoSimulator

        self.sim = AutoSimulator(dict(raw), seed=seed)
        self.settle_ms = settle_ms
        super().__init__(raw, max_silent, keep)
        self.recorder.log.seed = seed
        self.recorder.log.description = f"AutoSimulator (the autonomous cores) seeded with {seed}, fault injection"

    def _observe(self) -> dict[str, Any]:
        acked = [sorted(self.sim.acked[p]) for p in range(self.config.partitions)]
        return flatten(self.sim.observe(), acked)

    def _settle(self) -> None:
        self.sim.run_for(self.settle_ms)

    def _now(self) -> int:
        return self.sim.now

    def _produce(self, p: int) -> int:
        leader = self.sim.leader_of(p)
        self.sim.produce(p)
        return leader

    def _crash(self, b: int) -> None:
        self.sim.crash(b)

    def _restart(self, b: int) -> None:
        self.sim.restart(b)

    def _kill_controller(self) -> str:
        self.sim.kill_controller()
        return ""


def cluster_facts(status: Mapping[str, Any], brokers: int, partitions: int, acked: list[list[int]],
                  logs: Mapping[tuple[int, int], list[dict[str, int]]] | None = None) -> dict[str, Any]:
    """The facts a client of the real cluster can see: ZooKeeper's view of every partition (replicas,
    leader, ISR, leader epoch, version, pending reassignment, deletion), which brokers are registered,
    each registered broker's replicas (role, leader epoch, LEO, HW) from its metadata answer, the
    committed log read from each leader, and the writes acknowledged to the client."""
    out: dict[str, Any] = {}
    registered = {int(b) for b in status["brokers"]}
    out["controller.epoch"] = status["controller"]["epoch"]
    for b in range(1, brokers + 1):
        out[f"brokers[{b}].alive"] = b in registered
    seen = {p["partition"]: p for p in status["partitions"]}
    for p in range(partitions):
        st = seen.get(p)
        if st is None:
            continue
        out[f"partitions[{p}].exists"] = bool(st["replicas"])
        out[f"partitions[{p}].replicas"] = list(st["replicas"])
        out[f"partitions[{p}].leader"] = st["leader"]
        out[f"partitions[{p}].isr"] = sorted(st["isr"])
        out[f"partitions[{p}].leader_epoch"] = st["leader_epoch"]
        out[f"partitions[{p}].zk_version"] = st["zk_version"]
        out[f"partitions[{p}].reassignment"] = list(st["reassignment"])
        out[f"partitions[{p}].deleting"] = p in status.get("deleting", [])
        for b, rs in st["replica_status"].items():
            b = int(b)
            out[f"replicas[{b},{p}].role"] = rs["role"]
            out[f"replicas[{b},{p}].leader_epoch"] = rs["leader_epoch"]
            out[f"replicas[{b},{p}].leo"] = rs["leo"]
            out[f"replicas[{b},{p}].hw"] = rs["hw"]
            out[f"replicas[{b},{p}].present"] = True
    for (b, p), log in (logs or {}).items():
        out[f"replicas[{b},{p}].log"] = log
    for p, ids in enumerate(acked):
        out[f"acked[{p}]"] = sorted(ids)
    return out


class ClusterRun(_Run):
    """A fault-injection run of the real multi-process cluster (:class:`~isrcheck.impl.process.cluster.LocalCluster`).

    The cluster must be up with the topic created (``assignment`` of the configuration); the run
    settles by waiting until every live assigned replica has the leader's LEO and HW and the
    registrations, ISR and leader stop changing.
    """

    source = "cluster"

    def __init__(self, cluster: Any, raw: Mapping[str, Any], max_silent: int = 24, settle_s: float = 0.6,
                 timeout_s: float = 30.0) -> None:
        self.cluster = cluster
        self.client = cluster.client()
        self.settle_s = settle_s
        self.timeout_s = timeout_s
        self.acked: list[list[int]] = [[] for _ in range(from_mapping(dict(raw)).partitions)]
        self.next_id = [0] * len(self.acked)
        super().__init__(raw, max_silent, None)
        self.recorder.log.description = "the real multi-process cluster on loopback, fault injection"

    def close(self) -> None:
        self.client.close()

    def _observe(self) -> dict[str, Any]:
        cfg = self.config
        st = self.client.status()
        logs: dict[tuple[int, int], list[dict[str, int]]] = {}
        for pst in st["partitions"]:
            p, leader = pst["partition"], pst["leader"]
            if leader:
                try:
                    recs = self.client.consume(p, 0, timeout=2.0)
                except Exception:  # noqa: BLE001 - a leader that cannot answer now: log no records
                    continue
                hw = pst["replica_status"].get(leader, {}).get("hw")
                if hw is not None and len(recs) == hw == pst["replica_status"][leader]["leo"]:
                    logs[(leader, p)] = [{"id": r.id, "epoch": r.epoch} for r in recs]
        return cluster_facts(st, cfg.brokers, cfg.partitions, self.acked, logs)

    def _quiet(self, st: Mapping[str, Any]) -> bool:
        for pst in st["partitions"]:
            leader = pst["leader"]
            rs = pst["replica_status"]
            if leader and leader in rs:
                lead = rs[leader]
                for b, r in rs.items():
                    if b in pst["replicas"] and b in pst["isr"] and (r["leo"], r["hw"]) != (lead["leo"], lead["hw"]):
                        return False
        return True

    def _settle(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        last = None
        stable_since = time.monotonic()
        while time.monotonic() < deadline:
            try:
                st = self.client.status()
            except Exception:  # noqa: BLE001 - a process going down mid-call: ask again
                time.sleep(0.05)
                continue
            key = repr((st["controller"]["epoch"], sorted(st["brokers"]), st["partitions"]))
            if key != last:
                last, stable_since = key, time.monotonic()
            elif self._quiet(st) and time.monotonic() - stable_since >= self.settle_s:
                return
            time.sleep(0.05)
        raise TimeoutError(f"the cluster did not go quiet within {self.timeout_s:.0f} s")

    def _zk_leader(self, p: int) -> int:
        st = self.client.snapshot(self.config.partitions).part(p).state
        return st.leader if st else 0

    def _produce(self, p: int) -> int:
        leader = self._zk_leader(p)
        self.next_id[p] += 1
        rid = self.next_id[p]
        self.client.produce(p, f"r{rid}", record_id=rid)
        self.acked[p].append(rid)
        return leader

    def _crash(self, b: int) -> None:
        self.cluster.kill(f"broker-{b}")

    def _restart(self, b: int) -> None:
        self.cluster.start_broker(b)

    def _kill_controller(self) -> str:
        name = self.cluster.active_controller()
        self.cluster.kill(name)
        return f"killed {name}"


class SelfLoggedRun:
    """Fault injection on a real cluster whose processes write their own event logs.

    ``cluster`` is a :class:`~isrcheck.impl.process.cluster.LocalCluster` made with ``event_log=DIR`` and up,
    with the topic created. Unlike :class:`ClusterRun` nothing waits for the cluster to go quiet and
    nothing is observed from outside: the processes log every step themselves, the launcher logs the
    crashes and controller kills it injects, and this driver logs the writes acknowledged to it
    (``acked[p]``). Validate the directory with :func:`.selflog.validate_selflogs` after
    ``cluster.down()``.
    """

    def __init__(self, cluster: Any, partitions: int = 1, timeout_s: float = 20.0) -> None:
        if not getattr(cluster, "event_log", None):
            raise ValueError("the cluster must be made with event_log=DIR")
        self.cluster = cluster
        self.client = cluster.client(timeout=timeout_s)
        self.timeout_s = timeout_s
        self.next_id = [0] * partitions

    def close(self) -> None:
        self.client.close()

    def leader(self, p: int = 0) -> int:
        return self.client.leader(p)

    def produce(self, p: int = 0, n: int = 1) -> None:
        """``n`` writes with acks=all, one after the other; each is logged once acknowledged."""
        for _ in range(n):
            self.next_id[p] += 1
            rid = self.next_id[p]
            self.client.produce(p, f"r{rid}", acks="all", timeout=self.timeout_s, record_id=rid)
            self.cluster.note_acked(p, [rid])

    def crash(self, b: int) -> None:
        self.cluster.kill(f"broker-{b}")

    def restart(self, b: int, in_sync: bool = True) -> None:
        """Start broker ``b`` again; with ``in_sync``, wait until it is back in every ISR it left."""
        self.cluster.start_broker(b)
        if in_sync:
            self.cluster.wait_for(lambda c: all(b in st["isr"] for st in c.status()["partitions"]
                                                if b in st["replicas"]), self.timeout_s, f"broker {b} in sync")

    def kill_controller(self) -> str | None:
        name = self.cluster.active_controller()
        if name:
            self.cluster.kill(name)
        return name

    def reassign(self, p: int, target: list[int]) -> None:
        """Request that partition ``p`` move to ``target`` (logged as ``RequestReassignment``) and wait
        until the controller has finished: AR is the target and the request is gone."""
        self.cluster.request_reassignment(self.client, p, target)
        self.cluster.wait_for(lambda c: list(c.snapshot(p + 1).part(p).replicas) == list(target)
                              and p not in c.snapshot(p + 1).reassign, self.timeout_s, "the reassignment to complete")

    def shutdown(self, b: int) -> None:
        """SIGTERM broker ``b``: a controlled shutdown (the controller moves its leaderships and ISR
        memberships away, then the broker checkpoints and stops); returns once the process is gone."""
        self.cluster.kill(f"broker-{b}", signal.SIGTERM)
        if self.cluster.alive(f"broker-{b}"):
            raise RuntimeError(f"broker {b} did not stop after SIGTERM")


#: a fast-reacting cluster (lag-based ISR shrink after 1 s) without a deposed controller acting on
SELFLOG_CONFIG = {"replica_lag_time_max_ms": 1000, "fetch_interval_ms": 5, "controller_recheck_ms": 100,
                  "stale_controller": False, "replication_factor": 3, "max_records": 0}


def fault_injection(run: SelfLoggedRun) -> None:
    """Six acks=all writes around: SIGKILL the leader; restart it; kill the active controller; SIGKILL a
    follower; restart it."""
    run.produce(0, 2)
    leader = run.leader()
    run.crash(leader)
    run.produce(0)
    run.restart(leader)
    run.kill_controller()
    run.produce(0)
    follower = next(b for b in (1, 2, 3) if b != run.leader())
    run.crash(follower)
    run.produce(0)
    run.restart(follower)
    run.produce(0)


def two_partitions(run: SelfLoggedRun) -> None:
    """Writes to both partitions (led by brokers 1 and 2) around: SIGKILL partition 1's leader, restart
    it; kill the active controller."""
    run.produce(0)
    run.produce(1)
    leader = run.leader(1)
    run.crash(leader)
    run.produce(0)
    run.produce(1)
    run.restart(leader)
    run.kill_controller()
    run.produce(0)
    run.produce(1)


def controlled_shutdowns(run: SelfLoggedRun) -> None:
    """Writes around two controlled shutdowns (SIGTERM): of the leader (its leadership moves), then of
    a follower (it leaves the ISR); each broker is restarted and back in sync before the next write."""
    run.produce(0)
    leader = run.leader()
    run.shutdown(leader)
    run.produce(0)
    run.restart(leader)
    follower = next(b for b in (1, 2, 3) if b not in (leader, run.leader()))
    run.shutdown(follower)
    run.produce(0)
    run.restart(follower)
    run.produce(0)


def reassignment(run: SelfLoggedRun) -> None:
    """A write, then a reassignment of partition 0 from [1, 2, 3] to [2, 3] (the leader, broker 1, is
    moved out), a write on the new replica list, then SIGKILL the new leader and a last write."""
    run.produce(0)
    run.reassign(0, [2, 3])
    run.produce(0)
    run.crash(run.leader())
    run.produce(0)


def _every_replica_knows_its_leader(client: Any) -> bool:
    parts = client.status()["partitions"]
    return bool(parts) and all(
        st["leader"] and set(st["replica_status"]) >= set(st["replicas"])
        and all(st["replica_status"][b]["role"] in ("leader", "follower")
                and st["replica_status"][b]["leader_epoch"] == st["leader_epoch"] for b in st["replicas"])
        for st in parts)


def self_logged_run(directory: Any, zookeeper: str | None = None,
                    scenario: Callable[[SelfLoggedRun], None] = fault_injection,
                    config: Mapping[str, Any] | None = None) -> Any:
    """Start a 3-broker, 2-controller cluster in ``directory/cluster`` whose processes log to
    ``directory/events``, configured with :data:`SELFLOG_CONFIG` updated by ``config`` (e.g. another
    ``generation``, or ``partitions = 2``); create the topic with the model's assignment
    (partition p on brokers p+1, p+2, p+3 counted round the ring), run ``scenario``, take the cluster
    down; the events directory (a :class:`pathlib.Path`)."""
    from pathlib import Path

    from isrcheck.impl.process.cluster import LocalCluster
    from isrcheck.impl.core.config import from_mapping as impl_config

    raw = {**SELFLOG_CONFIG, **(config or {})}
    cfg = impl_config(raw)
    assignment = [list(cfg.replicas_of(p)) for p in range(cfg.partitions)]
    events = Path(directory) / "events"
    c = LocalCluster(Path(directory) / "cluster", brokers=3, controllers=2, session_timeout=2.0,
                     zookeeper=zookeeper, config=raw, event_log=events)
    try:
        c.up(wait=30)
        with c.client() as k:
            k.create_topic(cfg.partitions, cfg.replication_factor, assignment=assignment)
        # the model's initial state: every replica has taken its LeaderAndIsr before the scenario's first
        # write (the merge also places a slow replica's first LeaderAndIsr before a step that beat it, such
        # as its leader dropping it from the ISR: conformance/selflog.py's _the_start)
        c.wait_for(_every_replica_knows_its_leader, 30, "every replica to know its partition's leader")
        run = SelfLoggedRun(c, partitions=cfg.partitions)
        try:
            scenario(run)
        finally:
            run.close()
    finally:
        c.down()
    return events
