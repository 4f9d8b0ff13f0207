"""The sans-IO cores on their own: inputs in, effects out (a tiny driver runs their store calls)."""
from __future__ import annotations

from collections import deque

import pytest

from isrcheck.impl.core import layout as L
from isrcheck.impl.core.broker import BrokerCore, DiskImage
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.controller import ControllerCore
from isrcheck.impl.core.messages import (
    Command, ConsumeRequest, ConsumeResponse, FetchRequest, FetchResponse, LeaderAndIsr, Notification, Persist,
    ProduceRequest, ProduceResponse, Receive, Record, Send, SetTimer, StopReplica, StopReplicaResponse, StoreOp,
    StoreResult, Timer, UpdateMetadata,
)
from isrcheck.impl.core.store import SetData
from isrcheck.impl.store.embedded import EmbeddedStore

CFG = from_mapping({"brokers": 3})
C1 = ("controller", 1)
CLIENT = ("client", "c")


def drive(core, session, inp, hook=None):
    """Feed ``inp``; run store calls on ``session`` until the core waits for nothing; other effects out."""
    out, work = [], deque([inp])
    while work:
        effects = core.handle(work.popleft())
        for e in effects:
            if isinstance(e, StoreOp):
                if hook is not None:
                    hook(e)
                work.append(L.execute(session, e))
            else:
                out.append(e)
    return out


# ---------------------------------------------------------------------------- controller
def registered_store(brokers=(1, 2, 3)):
    store = EmbeddedStore()
    admin = store.session()
    L.ensure_base(admin)
    sessions = {}
    for b in brokers:
        sessions[b] = store.session()
        sessions[b].create(L.broker_path(b), L.encode({"host": "h", "port": b}), ephemeral=True)
    return store, admin, sessions


def test_election_through_the_store_and_takeover():
    store, admin, _ = registered_store()
    a, b = ControllerCore(CFG, "a"), ControllerCore(CFG, "b")
    sa, sb = store.session(), store.session()
    out = drive(a, sa, Command("Start"))
    assert a.active and a.epoch == 1 and admin.get(L.CONTROLLER_EPOCH)[0] == b"1"
    assert {e.to for e in out if isinstance(e, Send)} == {("broker", 1), ("broker", 2), ("broker", 3)}
    drive(b, sb, Command("Start"))
    assert not b.active and b.standby
    store.expire(sa.session_id)  # a's session ends: /controller vanishes, b's watch fires
    events = sb.poll_events()
    assert ("deleted", L.CONTROLLER) in [(e.kind, e.path) for e in events]
    for e in events:
        drive(b, sb, Notification(e.kind, e.path))
    assert b.active and b.epoch == 2 and admin.get(L.CONTROLLER_EPOCH)[0] == b"2"


def test_a_deposed_controller_is_fenced_by_the_znode_epoch():
    store, admin, sessions = registered_store()
    admin.multi(L.create_topic_ops("isrcheck", [[1, 2, 3]]))
    old, new = ControllerCore(CFG, "old"), ControllerCore(CFG, "new")
    so, sn = store.session(), store.session()
    drive(old, so, Command("Start"))
    drive(old, so, Command("CreateTopic"))
    store.expire(so.session_id)
    so = store.session()  # the deposed controller's client reconnects
    drive(new, sn, Command("Start"))
    assert new.epoch == 2
    # the new controller rewrites the znode (a broker leaves), then the deposed one tries too
    store.expire(sessions[1].session_id)
    drive(new, sn, Command("ProcessBrokerChange"))
    state = L.LeaderIsr.decode(admin.get(L.state_path("isrcheck", 0))[0])
    assert state.leader == 2 and state.controller_epoch == 2
    version = admin.get(L.state_path("isrcheck", 0))[1].version
    out = drive(old, so, Command("ProcessBrokerChange"))
    assert admin.get(L.state_path("isrcheck", 0))[1].version == version  # nothing written
    assert not [e for e in out if isinstance(e, Send) and isinstance(e.msg, LeaderAndIsr)]


def test_an_operation_reruns_when_the_store_changed_under_it():
    store, admin, sessions = registered_store()
    admin.multi(L.create_topic_ops("isrcheck", [[1, 2, 3]]))
    c = ControllerCore(CFG)
    s = store.session()
    drive(c, s, Command("Start"))
    drive(c, s, Command("CreateTopic"))
    store.expire(sessions[1].session_id)
    interfered = []

    def hook(op):  # a leader's ISR write lands between the controller's snapshot and its multi
        if op.kind == "multi" and not interfered:
            path = L.state_path("isrcheck", 0)
            data, st = admin.get(path)
            cur = L.LeaderIsr.decode(data)
            admin.multi([SetData(path, L.LeaderIsr(cur.leader, (1, 2), cur.leader_epoch, cur.controller_epoch).encode(),
                                 st.version)])
            interfered.append(True)

    drive(c, s, Command("ProcessBrokerChange"), hook)
    assert interfered
    final = L.LeaderIsr.decode(admin.get(L.state_path("isrcheck", 0))[0])
    assert final.leader == 2 and final.isr == (2,)  # computed on the re-read ISR {1,2}, not the stale one
    assert c.history[-1] == ("ProcessBrokerChange", (), "done")


# ---------------------------------------------------------------------------- broker
def lai(epoch=1, leader=1, isr=(1, 2, 3), le=0, v=0, ar=(1, 2, 3), p=0):
    return Receive(C1 if epoch == 1 else ("controller", epoch), LeaderAndIsr(epoch, p, leader, isr, le, v, ar, epoch))


def sends(effects, kind=None):
    return [e.msg for e in effects if isinstance(e, Send) and (kind is None or isinstance(e.msg, kind))]


def leader_with_records(n=2, isr=(1, 2, 3)):
    b = BrokerCore(CFG, 1)
    b.handle(lai(isr=isr))
    for i in range(n):
        b.handle(Receive(CLIENT, ProduceRequest(i, 0, i + 1, f"v{i}")))
    return b


def test_controller_epoch_and_leader_epoch_fencing():
    b = BrokerCore(CFG, 2)
    b.handle(lai(epoch=2, leader=1, le=3))
    assert b.controller_epoch == 2 and b.replicas[0].leader_epoch == 3
    b.handle(lai(epoch=1, leader=3, le=9))  # a deposed controller
    assert b.replicas[0].leader == 1 and b.replicas[0].leader_epoch == 3
    b.handle(lai(epoch=2, leader=3, le=3))  # not a newer leader epoch
    assert b.replicas[0].leader == 1
    b.handle(Receive(("controller", 3), UpdateMetadata(3)))
    assert b.controller_epoch == 3
    b.handle(lai(epoch=2, leader=3, le=4))
    assert b.replicas[0].leader == 1  # the epoch moved on: rejected


def test_become_follower_truncates_to_the_hw_only_on_a_leader_change():
    b = BrokerCore.recover(CFG, 2, DiskImage({0: [Record(1, 0), Record(2, 0), Record(3, 0)]}, {0: 1}))
    b.handle(lai(leader=1, le=1))  # after a restart the leader is unknown: a change, truncate to HW 1
    assert [r.id for r in b.replicas[0].log] == [1]
    b.replicas[0].log.append(Record(4, 1))
    out = b.handle(lai(leader=1, le=2))  # same leader, new epoch: keep the log
    assert len(b.replicas[0].log) == 2 and not [e for e in out if isinstance(e, Persist) and e.kind == "truncate"]
    out = b.handle(lai(leader=3, le=3))
    assert len(b.replicas[0].log) == 1 and Persist("truncate", 0, 1) in out


def test_fetch_answers_the_hw_from_before_the_fetch_and_expands_the_isr_conditionally():
    b = leader_with_records(2, isr=(1, 2))
    out = b.handle(Receive(("broker", 2), FetchRequest(0, 2, 2)))
    resp = sends(out, FetchResponse)[0]
    assert resp.hw == 0 and b.replicas[0].hw == 2  # counted after answering
    out = b.handle(Receive(("broker", 3), FetchRequest(0, 3, 0)))
    assert not [e for e in out if isinstance(e, StoreOp)]  # offset 0 < HW 2: not caught up enough to join
    assert sends(out, FetchResponse)[0].records == tuple(b.replicas[0].log)
    out = b.handle(Receive(("broker", 3), FetchRequest(0, 3, 2)))
    op = [e for e in out if isinstance(e, StoreOp)][0]
    assert op.kind == "set" and op.args[2] == 0  # conditional on the version it cached
    assert L.LeaderIsr.decode(op.args[1]) == L.LeaderIsr(1, (1, 2, 3), 0, 1)  # leader and epochs unchanged


def test_isr_join_waits_for_the_store_and_a_failed_write_keeps_the_isr():
    b = leader_with_records(1, isr=(1, 2))
    out = b.handle(Receive(("broker", 3), FetchRequest(0, 3, 0)))
    ops = [e for e in out if isinstance(e, StoreOp)]
    assert ops and not sends(out, FetchResponse)  # the answer waits for the write
    from isrcheck.impl.core.store import BadVersion
    out = b.handle(StoreResult(ops[0].token, None, BadVersion("x")))
    assert b.replicas[0].isr == frozenset({1, 2}) and sends(out, FetchResponse)
    out = b.handle(Receive(("broker", 3), FetchRequest(0, 3, 0)))
    ops = [e for e in out if isinstance(e, StoreOp)]
    from isrcheck.impl.core.store import Stat
    b.handle(StoreResult(ops[0].token, Stat(1, 0, 0, 0), None))
    assert b.replicas[0].isr == frozenset({1, 2, 3}) and b.replicas[0].zk_version == 1


def test_only_assigned_replicas_may_fetch():
    b = leader_with_records(1, isr=(1,))
    b.replicas[0].assigned = (1, 2)
    out = b.handle(Receive(("broker", 3), FetchRequest(0, 3, 0)))
    assert sends(out, FetchResponse)[0].error == "UnknownReplica"


def test_acks_all_waits_for_the_isr_and_min_insync_replicas():
    cfg = from_mapping({"brokers": 3, "min_insync_replicas": 2})
    b = BrokerCore(cfg, 1)
    b.handle(lai(isr=(1,)))
    out = b.handle(Receive(CLIENT, ProduceRequest(1, 0, 1)))
    assert sends(out, ProduceResponse)[0].error == "NotEnoughReplicas" and b.replicas[0].leo == 0
    b = BrokerCore(cfg, 1)
    b.handle(lai(isr=(1, 2)))
    out = b.handle(Receive(CLIENT, ProduceRequest(1, 0, 1)))
    assert not sends(out, ProduceResponse) and b.replicas[0].leo == 1  # waiting for 2
    out = b.handle(Receive(("broker", 2), FetchRequest(0, 2, 1)))
    assert sends(out, ProduceResponse)[0] == ProduceResponse(1, 0, "", 0)


def test_consumers_read_only_below_the_hw():
    b = leader_with_records(3, isr=(1, 2))
    out = b.handle(Receive(CLIENT, ConsumeRequest(9, 0, 0)))
    assert sends(out, ConsumeResponse)[0].records == ()
    b.handle(Receive(("broker", 2), FetchRequest(0, 2, 2)))
    out = b.handle(Receive(CLIENT, ConsumeRequest(9, 0, 0)))
    assert [r.id for r in sends(out, ConsumeResponse)[0].records] == [1, 2]


def test_deleting_stop_replica_answers_the_controller_that_asked():
    b = BrokerCore(CFG, 2)
    b.handle(lai(leader=1))
    out = b.handle(Receive(C1, StopReplica(1, 0, True)))
    assert 0 not in b.replicas and Persist("delete", 0) in out
    assert [e for e in out if isinstance(e, Send)][0] == Send(C1, StopReplicaResponse(1, 0, 2, True))


def test_autonomous_leader_shrinks_a_lagging_follower():
    cfg = from_mapping({"brokers": 3, "replica_lag_time_max_ms": 100})
    b = BrokerCore(cfg, 1, autonomous=True)
    b.handle(lai(isr=(1, 2, 3)), now=0)
    b.handle(Receive(("broker", 2), FetchRequest(0, 2, 0)), now=90)
    out = b.handle(Timer("lag"), now=150)  # 3 has not caught up since 0, 2 caught up at 90
    op = [e for e in out if isinstance(e, StoreOp)][0]
    assert L.LeaderIsr.decode(op.args[1]).isr == (1, 2)
    assert any(isinstance(e, SetTimer) and e.name == "lag" for e in out)
