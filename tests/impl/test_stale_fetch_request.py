"""A fetch request older than one the leader already handled from the same follower is refused and
counts for nothing (KIP-227's fetch session epoch: each fetch carries the follower's strictly increasing
``fetch_id``, the leader keeps the newest per follower while it leads).

Torture seed 27 of issue 30: broker 2's fetch at offset 32 was held by a split and a pause of the
leader; its watchdog sent it again, that one was answered and broker 2 went on to log end 33 and fetched
from there. The first request then reached the leader, which counted broker 2 at offset 32 (below its
log end), took it back into the ISR it had just been shrunk out of, and held the HW there: a state the
model never has, since its Fetch counts a follower at its log end, so `isrcheck validate` failed at the
leader's line "ISR expansion to [1, 2, 3]". The tests below fail if the leader counts a stale request, and
show that the refusal does not strand a follower whose ids began again (a restart)."""
from __future__ import annotations

from isrcheck.impl.core import layout as L
from isrcheck.impl.core.broker import STALE_FETCH, BrokerCore, DiskImage
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.messages import (Command, FetchRequest, FetchResponse, LeaderAndIsr, ProduceRequest, Receive,
                                         Record, Send, StoreOp, StoreResult, Timer)
from isrcheck.impl.core.store import Stat
from isrcheck.impl.rigs.simulator import Simulator


def _answers(out):
    return [e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, FetchResponse)]


def _writes(out):
    return [e for e in out if isinstance(e, StoreOp)]


def _leader_with_broker_2_shrunk_out() -> BrokerCore:
    """Leader 1 of [1, 2, 3], log end 3. Broker 3 is counted at offset 2, broker 2 fetched at 2 (id 2),
    got record 2, fetched again at 3 (id 3), and was then shrunk out: ISR [1, 3], HW 2. Its first fetch
    (id 1, offset 2) is still on the way."""
    b = BrokerCore(from_mapping({"brokers": 3, "min_insync_replicas": 1}), 1)
    b.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 2, 3), 0, 0, (1, 2, 3), 1)))
    for i in range(3):
        b.handle(Receive(("client", "c"), ProduceRequest(i, 0, i + 1, f"v{i}", acks="1")))
    b.handle(Receive(("broker", 3), FetchRequest(0, 3, 2, 0, 1)))
    b.handle(Receive(("broker", 2), FetchRequest(0, 2, 2, 0, 2)))
    b.handle(Receive(("broker", 2), FetchRequest(0, 2, 3, 0, 3)))
    [shrink] = _writes(b.handle(Command("ShrinkIsr", (0, 2))))
    b.handle(StoreResult(shrink.token, Stat(1, 0, 0, 0)))
    r = b.replicas[0]
    assert (r.isr, r.hw, r.leo, r.remote_leo[2]) == (frozenset({1, 3}), 2, 3, 3)
    return b


def test_a_stale_fetch_request_is_refused_and_counts_for_nothing():
    b = _leader_with_broker_2_shrunk_out()
    out = b.handle(Receive(("broker", 2), FetchRequest(0, 2, 2, 0, 1)))  # the late first request
    r = b.replicas[0]
    assert _writes(out) == []  # counted, offset 2 reached the HW: it took broker 2 back into the ISR
    assert r.isr == frozenset({1, 3}) and r.remote_leo[2] == 3 and r.hw == 2  # broker 2 not moved back to 2
    [answer] = _answers(out)
    assert (answer.error, answer.fetch_id, answer.records) == (STALE_FETCH, 1, ())
    # a newer request is counted as always: broker 2 at its log end joins again
    out = b.handle(Receive(("broker", 2), FetchRequest(0, 2, 3, 0, 4)))
    [join] = _writes(out)
    assert L.LeaderIsr.decode(join.args[1]).isr == (1, 2, 3)


def test_a_request_held_behind_an_isr_write_is_judged_when_it_is_served():
    """Two requests of one follower held while an ISR write is out, the newer first (the older one was
    delayed): the newer is counted when the write is done, the older refused, not counted after it."""
    b = _leader_with_broker_2_shrunk_out()
    [shrink] = _writes(b.handle(Command("ShrinkIsr", (0, 3))))
    b.handle(Receive(("broker", 2), FetchRequest(0, 2, 3, 0, 5)))
    b.handle(Receive(("broker", 2), FetchRequest(0, 2, 2, 0, 4)))
    out = b.handle(StoreResult(shrink.token, Stat(2, 0, 0, 0)))
    r = b.replicas[0]
    assert r.remote_leo[2] == 3 and [a.error for a in _answers(out)] == [STALE_FETCH]
    [join] = _writes(out)  # id 5 at offset 3 takes broker 2 in; id 4 at offset 2 did not lower it after
    assert L.LeaderIsr.decode(join.args[1]).isr == (1, 2)


def test_the_follower_ignores_the_refusal_of_a_stale_request_and_resumes_after_its_own():
    f = BrokerCore.recover(from_mapping({"brokers": 3}), 2, DiskImage({0: [Record(1, 0)]}, {0: 1}), autonomous=True)
    f.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 2, 3), 0, 0, (1, 2, 3), 1)), now=0)
    [first] = [e.msg for e in f.handle(Timer("fetch", 0), now=1) if isinstance(e, Send)]
    [again] = [e.msg for e in f.handle(Timer("fetch", 0), now=10_000) if isinstance(e, Send)]
    assert (first.fetch_id, again.fetch_id) == (1, 2)
    out = f.handle(Receive(("broker", 1), FetchResponse(0, 1, 1, STALE_FETCH, leader_epoch=0, fetch_id=1,
                                                        newest_fetch_id=2)), now=10_001)
    assert [e for e in out if isinstance(e, Send)] == [] and f.replicas[0].fetching  # id 2 is still out
    # its own latest refused (the leader had handled ids up to 40 from an earlier life of this replica):
    # it goes on above them at once
    out = f.handle(Receive(("broker", 1), FetchResponse(0, 1, 1, STALE_FETCH, leader_epoch=0, fetch_id=2,
                                                        newest_fetch_id=40)), now=10_002)
    [next_fetch] = [e.msg for e in out if isinstance(e, Send)]
    assert (next_fetch.offset, next_fetch.fetch_id) == (1, 41)


def _deliver_all(sim: Simulator) -> None:
    for b in (1, 2, 3):
        while sim.inbox.get(b):
            sim.apply("DeliverRequest", (b,))


def test_a_restarted_follower_is_counted_again_in_the_step_simulator():
    """Its ids begin again at 1 after a restart while the leader keeps its old newest: the refusal and
    the fetch that follows are one Fetch step, which moves the follower as the model's does."""
    sim = Simulator({"brokers": 3, "max_records": 3, "min_insync_replicas": 1}, seed=1)
    leader = next(b for b in (1, 2, 3) if sim.broker(b).leads(0))
    f = next(b for b in (1, 2, 3) if b != leader)
    for i in range(2):
        sim.apply("Produce", (leader, 0))
        sim.apply("Fetch", (f, 0))
    assert sim.broker(leader).replicas[0].fetch_seen[f] == 2
    sim.apply("Crash", (f,))
    sim.apply("ProcessBrokerChange", (sim.active.core.epoch,))
    _deliver_all(sim)
    sim.apply("Restart", (f,))
    sim.apply("ProcessBrokerChange", (sim.active.core.epoch,))
    _deliver_all(sim)
    assert sim.broker(f).replicas[0].fetch_id == 0  # its ids begin again
    sim.apply("Produce", (leader, 0))
    start = sim.broker(f).replicas[0].leo  # (truncated to its checkpointed HW on becoming follower)
    sim.apply("Fetch", (f, 0))
    assert sim.broker(f).replicas[0].leo == 3  # served
    lr = sim.broker(leader).replicas[0]
    assert lr.remote_leo[f] == start and lr.fetch_seen[f] == 3  # counted: id 1 refused, then id 3
