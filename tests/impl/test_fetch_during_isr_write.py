"""A fetch that arrives while the leader's ISR write is in flight is counted when the write is done.

Torture seed 37 of issue 30's batches: the leader was writing a shrink (broker 3 out, ISR [1]) when
broker 2's fetch came, at an offset that reached the HW of before the shrink. Counted at once, it was
answered with that older HW and without taking broker 2 in (an ISR write was already in flight), and
the expansions were written later in another order: states the model never has (its ShrinkIsr and
Fetch are one step each), so `validate` failed at the leader's line "ISR expansion to [1, 3]". Kafka
holds the partition's leaderIsrUpdateLock across the ZooKeeper write, so a fetch waits for it; so does
this leader now (impl/core/broker.py, ``Replica.held``)."""
from __future__ import annotations

from isrcheck.impl.core import layout as L
from isrcheck.impl.core.broker import BrokerCore
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.messages import (Command, FetchRequest, FetchResponse, LeaderAndIsr, ProduceRequest, Receive, Send,
                                         StoreOp, StoreResult)
from isrcheck.impl.core.store import Stat


def _answers(out):
    return [e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, FetchResponse)]


def _writes(out):
    return [e for e in out if isinstance(e, StoreOp)]


def _leader_writing_a_shrink() -> tuple[BrokerCore, StoreOp]:
    """Leader 1 of ISR [1, 3] (broker 2 out), log end 2, HW 1, writing the shrink of broker 3."""
    b = BrokerCore(from_mapping({"brokers": 3, "min_insync_replicas": 1}), 1)
    b.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 3), 0, 0, (1, 2, 3), 1)))
    b.handle(Receive(("client", "c"), ProduceRequest(1, 0, 1, "v1", acks="1")))
    b.handle(Receive(("broker", 3), FetchRequest(0, 3, 1)))
    b.handle(Receive(("client", "c"), ProduceRequest(2, 0, 2, "v2", acks="1")))
    r = b.replicas[0]
    assert (r.leo, r.hw, r.isr) == (2, 1, frozenset({1, 3}))
    [shrink] = _writes(b.handle(Command("ShrinkIsr", (0, 3))))
    assert L.LeaderIsr.decode(shrink.args[1]).isr == (1,)
    return b, shrink


def test_a_fetch_during_a_shrink_write_is_counted_after_it_with_the_new_hw():
    b, shrink = _leader_writing_a_shrink()
    out = b.handle(Receive(("broker", 2), FetchRequest(0, 2, 1)))  # offset 1 reaches the HW of before
    assert _answers(out) == [] and _writes(out) == []  # neither answered nor counted yet
    assert b.replicas[0].remote_leo.get(2, 0) == 0
    out = b.handle(StoreResult(shrink.token, Stat(1, 0, 0, 0)))
    r = b.replicas[0]
    assert r.isr == frozenset({1}) and r.hw == 2  # the shrink, then the fetch: as the model's two steps
    [answer] = _answers(out)
    assert answer.hw == 2 and [x.id for x in answer.records] == [2]
    assert _writes(out) == [] and r.remote_leo[2] == 1  # offset 1 is below the HW now: no expansion


def test_fetches_held_behind_a_write_are_served_in_order_and_may_start_the_next_write():
    b, shrink = _leader_writing_a_shrink()
    b.handle(Receive(("broker", 3), FetchRequest(0, 3, 2)))  # broker 3, caught up: it will rejoin
    b.handle(Receive(("broker", 2), FetchRequest(0, 2, 2)))  # broker 2, caught up too
    out = b.handle(StoreResult(shrink.token, Stat(1, 0, 0, 0)))
    [join3] = _writes(out)  # broker 3's fetch joins it (its answer waits for that write) ...
    assert L.LeaderIsr.decode(join3.args[1]).isr == (1, 3) and _answers(out) == []
    out = b.handle(StoreResult(join3.token, Stat(2, 0, 0, 0)))
    [join2] = _writes(out)  # ... and broker 2's, held behind it, then starts the next one
    assert L.LeaderIsr.decode(join2.args[1]).isr == (1, 2, 3)
    assert [(a.offset, a.hw) for a in _answers(out)] == [(2, 2)]  # broker 3's answer
    out = b.handle(StoreResult(join2.token, Stat(3, 0, 0, 0)))
    assert [(a.offset, a.hw) for a in _answers(out)] == [(2, 2)] and b.replicas[0].isr == frozenset({1, 2, 3})


def test_fetches_held_by_a_leader_that_lost_its_leadership_are_refused():
    b, shrink = _leader_writing_a_shrink()
    b.handle(Receive(("broker", 2), FetchRequest(0, 2, 1)))
    b.handle(Receive(("controller", 2), LeaderAndIsr(2, 0, 3, (3,), 1, 0, (1, 2, 3), 2)))  # broker 3 leads now
    assert b.replicas[0].held == []  # dropped: the follower's watchdog sends its fetch again, to broker 3
