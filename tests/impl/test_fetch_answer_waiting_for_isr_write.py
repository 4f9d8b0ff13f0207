"""A fetch that takes its follower back into the ISR is answered when the leader's conditional ISR
write is done, with what the leader had when it counted the fetch, and until then the HW counts the
follower in (the model's Fetch is one step, the ISR expansion in it): a torture run whose leader, alone
in the ISR, appended a record meanwhile moved its HW past the joining follower and then sent it that
record with the older HW, states the model never has; and a fetch the follower sent again meanwhile was
answered first, so the waiting answer then lowered the follower's HW (isrcheck validate failed at each)."""
from __future__ import annotations

from isrcheck.impl.core import layout as L
from isrcheck.impl.core.broker import BrokerCore, DiskImage
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.messages import (Command, FetchRequest, FetchResponse, LeaderAndIsr, ProduceRequest, Receive, Send,
                                    Record, StoreOp, StoreResult, Timer)
from isrcheck.impl.core.store import Stat


def _leader(records: int, isr=(1, 2)) -> BrokerCore:
    b = BrokerCore(from_mapping({"brokers": 3, "min_insync_replicas": 1}), 1)
    b.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, isr, 0, 0, (1, 2, 3), 1)))
    for i in range(records):
        b.handle(Receive(("client", "c"), ProduceRequest(i, 0, i + 1, f"v{i}", acks="1")))
    return b


def _answers(out):
    return [e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, FetchResponse)]


def test_the_answer_waiting_for_the_isr_write_is_what_the_leader_had_when_it_counted_the_fetch():
    b = _leader(2, isr=(1,))
    assert b.replicas[0].hw == 2  # alone in the ISR
    out = b.handle(Receive(("broker", 3), FetchRequest(0, 3, 2)))  # caught up: it joins the ISR
    [op] = [e for e in out if isinstance(e, StoreOp)]
    assert L.LeaderIsr.decode(op.args[1]).isr == (1, 3) and not _answers(out)
    b.handle(Receive(("client", "c"), ProduceRequest(9, 0, 3, "v3", acks="1")))  # appended meanwhile
    assert b.replicas[0].hw == 2  # the joining follower counts: the HW waits for it
    assert _answers(b.handle(Receive(("broker", 3), FetchRequest(0, 3, 2)))) == []  # sent again: it waits
    [resp] = _answers(b.handle(StoreResult(op.token, Stat(1, 0, 0, 0))))
    assert resp.records == () and resp.hw == 2  # not record 3 with the HW of before it
    assert b.replicas[0].isr == frozenset({1, 3}) and b.replicas[0].hw == 2


def test_a_held_fetch_released_after_its_follower_left_the_isr_is_dropped():
    """A caught-up follower's fetch held (long poll), the follower shrunk out of the ISR meanwhile, a
    produce releases the fetch: answered as if from a member (a torture run's leader did, and its HW ran
    ahead of the model's, whose Fetch then takes the follower back in), it is dropped instead; the
    follower sends it again when its wait times out, and that fetch takes it back in."""
    b = BrokerCore(from_mapping({"brokers": 3}), 1, autonomous=True)
    b.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 2, 3), 0, 0, (1, 2, 3), 1)), now=0)
    assert _answers(b.handle(Receive(("broker", 2), FetchRequest(0, 2, 0)), now=10)) == []  # held
    [shrink] = [e for e in b.handle(Command("ShrinkIsr", (0, 2)), now=20) if isinstance(e, StoreOp)]
    b.handle(StoreResult(shrink.token, Stat(1, 0, 0, 0)), now=21)
    assert b.replicas[0].isr == frozenset({1, 3})
    out = b.handle(Receive(("client", "c"), ProduceRequest(1, 0, 1, "v", acks="1")), now=22)
    assert not _answers(out) and not b.replicas[0].parked
    out = b.handle(Receive(("broker", 2), FetchRequest(0, 2, 0, 0, 2)), now=30)  # sent again
    [op] = [e for e in out if isinstance(e, StoreOp)]
    assert L.LeaderIsr.decode(op.args[1]).isr == (1, 2, 3)


def test_the_answer_to_a_fetch_sent_again_since_is_stale():
    """A follower whose fetch got no answer in time sends it again; the first answer, late (a delayed
    link, a paused leader), is dropped if the later one's came first: applied after the fresher one it
    lowered the follower's HW. (Coming first, it is taken: a link slower than the wait would otherwise
    never deliver an answer the follower takes.)"""
    f = BrokerCore.recover(from_mapping({"brokers": 3}), 2, DiskImage({0: [Record(1, 0)]}, {0: 1}), autonomous=True)
    f.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 2, 3), 0, 0, (1, 2, 3), 1)), now=0)
    assert (f.replicas[0].leo, f.replicas[0].hw) == (1, 1)
    sent = [e.msg for e in f.handle(Timer("fetch", 0), now=1) if isinstance(e, Send)]
    again = [e.msg for e in f.handle(Timer("fetch", 0), now=10_000) if isinstance(e, Send)]  # timed out: again
    assert [(m.offset, m.fetch_id) for m in sent + again] == [(1, 1), (1, 2)]
    f.handle(Receive(("broker", 1), FetchResponse(0, 1, 1, "", (), 1, 1, 0, fetch_id=2)), now=10_001)
    f.handle(Receive(("broker", 1), FetchResponse(0, 1, 1, "", (), 0, 1, 0, fetch_id=1)), now=10_002)  # late
    assert f.replicas[0].hw == 1  # not lowered to the stale answer's 0
    # an answer coming before the later fetch's is taken
    g = BrokerCore.recover(from_mapping({"brokers": 3}), 2, DiskImage({0: [Record(1, 0)]}, {0: 0}), autonomous=True)
    g.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 2, 3), 0, 0, (1, 2, 3), 1)), now=0)
    g.handle(Timer("fetch", 0), now=1)
    g.handle(Timer("fetch", 0), now=10_000)
    g.handle(Receive(("broker", 1), FetchResponse(0, 1, 0, "", (Record(1, 0),), 1, 1, 0, fetch_id=1)), now=10_001)
    assert (g.replicas[0].leo, g.replicas[0].hw) == (1, 1)
