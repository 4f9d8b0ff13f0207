"""A running broker whose store session expires registers again on its new session.

Why: the registration (``/brokers/ids/<id>``) is an ephemeral znode of the session that created it.
Before this, a broker registered only at start-up, so one whose session expired while it ran stayed
out of the cluster for good: the controller counted it dead, and the broker went on as a zombie of
its old leader epoch (the torture harness restarted it to get it back). Now the driver announces the
new session (``SessionRenewed``), the broker re-creates its registration, the controller handles the
reappearance as a start-up and tells the broker who leads, and the broker catches up and rejoins the
ISR. Checked on the core alone, in the autonomous simulator (also the controller's own expiry), and
on real processes whose store connection the nemesis cuts.
"""
from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from isrcheck.impl.core import layout as L
from isrcheck.impl.core.broker import BrokerCore
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.controller import ControllerCore
from isrcheck.impl.core.messages import (
    CancelTimer,
    Command,
    Notification,
    SessionRenewed,
    SetTimer,
    StoreOp,
    StoreResult,
    Timer,
)
from isrcheck.impl.core.store import NodeExists, Stat
from isrcheck.impl.process.client import Client, ClientError
from isrcheck.impl.process.cluster import ClusterError
from isrcheck.impl.process.runtime import Runtime
from isrcheck.impl.rigs.history import Verdict, Write
from isrcheck.impl.rigs.simulator import AutoSimulator
from isrcheck.impl.store.remote import RemoteStore, StoreServer
from isrcheck.conformance.selflog import validate_selflogs
from isrcheck.impl.rigs.torture import PARTITION, TortureSetting, _Run
from isrcheck.impl.rigs.torture_scenarios import judge, settle_and_consume, take_down

CFG = {"brokers": 3, "replica_lag_time_max_ms": 300}


# ---------------------------------------------------------------------------- the broker core
def _creates(effects: list) -> list[StoreOp]:
    return [e for e in effects if isinstance(e, StoreOp) and e.kind == "create"]


def _registered_broker() -> BrokerCore:
    core = BrokerCore(from_mapping(CFG), 2, autonomous=True, address=("127.0.0.1", 9092))
    (op,) = _creates(core.handle(Command("Start"), 0))
    core.handle(StoreResult(op.token, L.broker_path(2)), 1)
    assert core.registered
    return core


def test_a_new_session_makes_the_broker_register_again_and_retry_while_the_old_node_lingers() -> None:
    core = _registered_broker()
    out = core.handle(SessionRenewed(7), 10)
    (op,) = _creates(out)
    assert op.args[0] == L.broker_path(2) and op.args[2] is True  # the ephemeral registration
    assert L.decode(op.args[1]) == {"host": "127.0.0.1", "port": 9092}
    assert CancelTimer("register") in out  # a retry pending from before must not create a second time
    assert not core.registered
    out = core.handle(StoreResult(op.token, None, NodeExists(L.broker_path(2))), 20)
    assert SetTimer("register", 200) in out and not _creates(out)
    (again,) = _creates(core.handle(Timer("register"), 220))
    core.handle(StoreResult(again.token, L.broker_path(2)), 230)
    assert core.registered


def test_a_create_in_flight_is_not_doubled() -> None:
    """The answer of a create still in flight comes from the new session (the driver's order): a second
    create would only find the first one's node and retry for ever."""
    core = BrokerCore(from_mapping(CFG), 2, autonomous=True)
    (op,) = _creates(core.handle(Command("Start"), 0))
    assert not _creates(core.handle(SessionRenewed(7), 5))
    core.handle(StoreResult(op.token, L.broker_path(2)), 6)
    assert core.registered


# ---------------------------------------------------------------------------- the runtime
class _Spy(BrokerCore):
    """A broker core that records its inputs."""

    def __init__(self) -> None:
        super().__init__(from_mapping(CFG), 1, autonomous=True, address=("127.0.0.1", 9091))
        self.inputs: list[object] = []

    def handle(self, inp: object, now: int | None = None) -> list:
        self.inputs.append(inp)
        return super().handle(inp, now)


async def _until(pred: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not pred() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return pred()


def test_the_runtime_renews_a_lost_session_unasked_and_the_broker_registers_again() -> None:
    """The store connection (the session) of an idle broker is lost: nothing is pending, yet the core
    hears of the end, then of the new session, and the registration is back under the new session."""

    async def scenario() -> None:
        server = StoreServer("127.0.0.1", 0)
        port = await server.start()
        core = _Spy()
        rt = Runtime(core, RemoteStore("127.0.0.1", port, timeout=5.0), feed_now=True, name="broker-1")
        await rt.open_session()
        rt.feed(Command("Start"))
        path = L.broker_path(1)
        assert await _until(lambda: core.registered)
        first = server.store.dump()[path][1].ephemeral_owner
        rt.session._sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]  # the connection is lost
        assert await _until(lambda: any(isinstance(i, SessionRenewed) for i in core.inputs))
        assert await _until(lambda: core.registered)
        owner = server.store.dump()[path][1].ephemeral_owner
        assert owner != first and owner == rt.session.session_id
        kinds = [type(i).__name__ for i in core.inputs if isinstance(i, (Notification, SessionRenewed))]
        assert kinds == ["Notification", "SessionRenewed"]  # the end first, then the new session, once
        rt.stopped.set()
        await rt.shutdown()
        await server.close()

    asyncio.run(scenario())


# ---------------------------------------------------------------------------- the controller core
def _answer(core: ControllerCore, effects: list, value: object = None) -> list:
    (op,) = [e for e in effects if isinstance(e, StoreOp)]
    return core.handle(StoreResult(op.token, value))


def _elect_until_epoch_write(core: ControllerCore, renew_before_create_answer: bool) -> list:
    """Start an election and answer it up to the epoch write; a new session is announced just before
    or just after the answer to the ``/controller`` create."""
    out = _answer(core, core.handle(Command("Start")))  # ensure_base done: the create is asked
    assert [e.kind for e in out if isinstance(e, StoreOp)] == ["create"]
    if renew_before_create_answer:
        assert core.handle(SessionRenewed(8)) == []  # another election is queued behind this one
    out = _answer(core, out, L.CONTROLLER)
    if not renew_before_create_answer:
        core.handle(SessionRenewed(8))
    out = _answer(core, out, (b"4", Stat(2, 1, 1, 0)))  # /controller_epoch read: set it to 5
    return _answer(core, out, Stat(3, 1, 9, 0))


def test_an_election_whose_znode_was_made_on_the_ended_session_is_abandoned() -> None:
    core = ControllerCore(from_mapping(CFG), autonomous=True)
    out = _elect_until_epoch_write(core, renew_before_create_answer=False)
    assert not core.active and core.epoch == 0
    assert ("_elect", (), "abandoned: the store session ended during the election (epoch 5 raised)") in core.history
    assert [e.kind for e in out if isinstance(e, StoreOp)] == ["ensure_base"]  # the queued election starts


def test_an_election_whose_znode_is_on_the_new_session_goes_on() -> None:
    core = ControllerCore(from_mapping(CFG), autonomous=True)
    _elect_until_epoch_write(core, renew_before_create_answer=True)
    assert core.active and core.epoch == 5


# ---------------------------------------------------------------------------- the autonomous simulator
def test_an_expired_leader_loses_leadership_registers_again_and_rejoins_the_isr() -> None:
    s = AutoSimulator(CFG, seed=3)
    for _ in range(10):
        s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 10, 2_000)
    old = s.leader_of(0)
    czxid, uid = s.snapshot().registered[old], s.brokers[old].uid
    s.expire_session(old, reconnect_ms=300)
    assert s.run_until(lambda s: s.leader_of(0) not in (0, old), 1_000)
    for _ in range(10):
        s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 20, 2_000)
    assert s.run_until(lambda s: s.snapshot().registered.get(old, czxid) != czxid, 1_000)
    assert s.run_until(lambda s: old in s.isr_of(0), 3_000)
    assert s.brokers[old].uid == uid  # the same incarnation, never restarted
    assert not s.brokers[old].core.leads(0)  # told by the controller that it leads no more
    assert set(s.acked[0]) <= set(s.log_ids(old, 0))
    assert s.log_ids(old, 0) == s.log_ids(s.leader_of(0), 0)


def test_an_expired_controller_stops_acting_and_a_higher_epoch_takes_over() -> None:
    s = AutoSimulator(CFG, seed=5, controllers=2)
    epoch = s.expire_controller_session()
    assert s.run_until(lambda s: s.active is not None and s.active.core.epoch > epoch, 1_000)
    assert not [c for c in s.controllers if c.core.active and c.core.epoch == epoch]  # the old epoch stopped
    assert s.snapshot().controller_epoch == s.active.core.epoch
    # the acting controller owns /controller on its live session (not an orphan of the expired one)
    _data, stat = s.admin.get(L.CONTROLLER)
    assert stat.ephemeral_owner == s.active.session.session_id and not s.active.session.expired
    s.crash(s.leader_of(0))
    assert s.run_until(lambda s: len(s.isr_of(0)) == 2 and s.leader_of(0) in s.isr_of(0), 1_000)


# ---------------------------------------------------------------------------- real processes
def _acked_write(run: _Run, k: Client, writes: list[Write], tag: str) -> None:
    rid = run._next_id()
    sent = time.monotonic_ns()
    k.produce(PARTITION, f"{tag}-{rid}", acks="all", timeout=15.0, record_id=rid)
    writes.append(Write(PARTITION, rid, sent, time.monotonic_ns()))


def _isr(k: Client) -> list[int]:
    return sorted(getattr(k.snapshot().partitions[PARTITION].state, "isr", ()))


def _expire_the_leader(directory: Path, zookeeper: str | None) -> tuple[Verdict, list[str], tuple[int, ...] | None]:
    """Cut the leader from the store long enough for its session to expire, write on through the new
    leader, and wait, without restarting anything, for the old leader to register again and rejoin
    the ISR; then write again. The verdict of every acks=all write, the steps, what was consumed."""
    setting = TortureSetting(generation="kip-320", min_isr=2, store="zookeeper" if zookeeper else "embedded",
                             zookeeper=zookeeper, settle=20.0)
    run = _Run(0, setting, directory)
    run.c.session_timeout = 1.0  # ZooKeeper's lowest here (scripts/zookeeper.sh): the cut lasts 2 s
    steps: list[str] = []
    writes: list[Write] = []
    consumed: tuple[int, ...] | None = None
    try:
        run.c.up()
        with run.c.client() as k:
            k.create_topic(1, 3)
        run.c.wait_for(lambda k: _isr(k) == [1, 2, 3], 30, "the full ISR")
        with run.c.client() as k:
            leader = run.leader(k)
            czxid = k.snapshot().registered[leader]
        name, pid = f"broker-{leader}", run.c.pid(f"broker-{leader}")
        with run._routed() as k:
            for _ in range(3):
                _acked_write(run, k, writes, "before")
            run.expire_broker(leader)  # logged as ExpireSession(leader)
            steps.append(f"cut {name} (the leader) from the store")
            run.c.wait_for(lambda k: leader not in k.snapshot().registered and run.leader(k) not in (0, leader),
                           20, "the registration to vanish and another leader")
            steps.append(f"registration gone; broker-{run.leader(k)} leads")
            for _ in range(3):
                _acked_write(run, k, writes, "during")
            run.c.wait_for(lambda k: k.snapshot().registered.get(leader) not in (None, czxid), 30,
                           f"{name} to register again")
            steps.append(f"{name} registered again")
            run.c.wait_for(lambda k: _isr(k) == [1, 2, 3], 30, f"{name} to rejoin the ISR")
            steps.append(f"{name} rejoined the ISR")
            if run.c.pid(name) == pid and run.c.alive(name):
                steps.append(f"{name} never restarted")
            roles = [role for p, role, *_ in k.metadata(leader).replicas if p == PARTITION]
            steps.append(f"{name} is now {roles[0] if roles else 'absent'}")
            for _ in range(3):
                _acked_write(run, k, writes, "after")
        consumed = settle_and_consume(run, steps)
    except (ClientError, ClusterError) as e:
        steps.append(f"stopped: {e}")
    finally:
        take_down(run)
    steps.extend(f"note: {n}" for n in run.notes)
    return judge(run, writes, consumed), steps, consumed


def _assert_came_back(verdict: Verdict, steps: list[str], consumed: tuple[int, ...] | None) -> None:
    for expected in ("registered again", "rejoined the ISR", "never restarted", "is now follower", "settled"):
        assert any(expected in s for s in steps), steps
    assert not any(s.startswith("note:") for s in steps), steps  # nothing found running unregistered
    assert verdict.acked == 9
    assert verdict.ok and verdict.lost_count == 0, (steps, verdict.to_json())
    assert consumed is not None and set(range(1, 10)) <= set(consumed)


@pytest.mark.cluster
def test_an_expired_leader_registers_again_on_real_processes(tmp_path: Path) -> None:
    _assert_came_back(*_expire_the_leader(tmp_path / "c", None))
    # the processes' own event logs: the launcher's ExpireSession, the broker's Reregister, and the
    # merged run is a behaviour of the model (the steps of specs/05-replication.md, "Session expiry")
    merged, r = validate_selflogs([tmp_path / "c" / "events"])
    named = [e.action[0] for e in merged.log.events if e.kind == "action" and e.action is not None]
    assert named.count("ExpireSession") == 1 and named.count("Reregister") == 1, named
    assert named.index("ExpireSession") < named.index("Reregister")
    assert r.ok, r.summary()


@pytest.mark.cluster
@pytest.mark.zookeeper
def test_an_expired_leader_registers_again_on_zookeeper(tmp_path: Path, zookeeper: str) -> None:
    _assert_came_back(*_expire_the_leader(tmp_path / "c", zookeeper))
