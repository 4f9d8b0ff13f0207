"""Idempotent produce (issue 30, item 2): a retried or replayed produce of a write already in the
leader's log is appended once, and answered as the first send would have been."""
from __future__ import annotations

from isrcheck.impl.core.broker import BrokerCore, DiskImage
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.messages import (FetchRequest, LeaderAndIsr, Persist, ProduceRequest, ProduceResponse,
                                         Receive, Record, Send)

CLIENT = ("conn", 1)
C = ("controller", 1)


def answers(effects):
    return [e.msg for e in effects if isinstance(e, Send) and isinstance(e.msg, ProduceResponse)]


def appends(effects):
    return [e for e in effects if isinstance(e, Persist) and e.kind == "append"]


def leader(isr=(1,), min_isr=1, image=None):
    cfg = from_mapping({"brokers": 3, "min_insync_replicas": min_isr})
    core = BrokerCore.recover(cfg, 1, image) if image is not None else BrokerCore(cfg, 1)
    core.handle(Receive(C, LeaderAndIsr(1, 0, 1, isr, 1, 0, (1, 2, 3))), 0)
    return core


def test_a_committed_write_sent_again_is_answered_with_its_offset_and_not_appended():
    core = leader()
    first = core.handle(Receive(CLIENT, ProduceRequest(1, 0, 77, "a")), 0)
    assert answers(first) == [ProduceResponse(1, 0, "", 0)] and len(appends(first)) == 1
    again = core.handle(Receive(CLIENT, ProduceRequest(2, 0, 77, "a")), 0)
    assert answers(again) == [ProduceResponse(2, 0, "", 0)]
    assert appends(again) == [] and [r.id for r in core.replicas[0].log] == [77]


def test_a_retry_of_a_pending_write_waits_for_its_commit_and_is_acknowledged_once_it_is_on_the_isr():
    core = leader(isr=(1, 2), min_isr=2)
    assert answers(core.handle(Receive(CLIENT, ProduceRequest(1, 0, 5, "x")), 0)) == []
    retry = core.handle(Receive(("conn", 2), ProduceRequest(2, 0, 5, "x")), 0)
    assert answers(retry) == [] and appends(retry) == []
    done = core.handle(Receive(("broker", 2), FetchRequest(0, 2, 1)), 0)  # the follower has the record
    got = [(e.to, e.msg) for e in done if isinstance(e, Send) and isinstance(e.msg, ProduceResponse)]
    assert got == [(("conn", 2), ProduceResponse(2, 0, "", 0))]
    assert [r.id for r in core.replicas[0].log] == [5]


def test_a_new_leader_knows_the_writes_in_its_log_after_a_restart():
    image = DiskImage({0: [Record(9, 1, "v"), Record(10, 1, "w")]}, {0: 2})
    core = leader(image=image)
    again = core.handle(Receive(CLIENT, ProduceRequest(3, 0, 10, "w")), 0)
    assert answers(again) == [ProduceResponse(3, 0, "", 1)] and appends(again) == []


def test_a_write_cut_from_the_log_is_appended_again():
    core = leader()
    core.handle(Receive(CLIENT, ProduceRequest(1, 0, 4, "a")), 0)
    core._truncate(0, core.replicas[0], 0)
    again = core.handle(Receive(CLIENT, ProduceRequest(2, 0, 4, "a")), 0)
    assert len(appends(again)) == 1 and [r.id for r in core.replicas[0].log] == [4]
