"""A leader drops lagging followers from the ISR one conditional write at a time, as the model's
ShrinkIsr(leader, p, follower) does: a torture run whose leader was cut off from both followers wrote
ISR [1] in one write, which no model step explains (isrcheck validate failed there)."""
from __future__ import annotations

from types import SimpleNamespace

from isrcheck.impl.core import layout as L
from isrcheck.impl.core.broker import BrokerCore
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.messages import LeaderAndIsr, Receive, StoreOp, StoreResult, Timer


def _isr_writes(out):
    return [(e.token, L.LeaderIsr.decode(e.args[1]).isr) for e in out if isinstance(e, StoreOp)]


def test_two_lagging_followers_leave_the_isr_in_two_writes():
    b = BrokerCore(from_mapping({"brokers": 3, "replica_lag_time_max_ms": 100}), 1, autonomous=True)
    b.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 2, 3), 0, 0, (1, 2, 3), 1)), now=0)
    out = b.handle(Timer("lag"), now=150)  # neither 2 nor 3 has caught up since 0
    [(token, isr)] = _isr_writes(out)
    assert isr == (1, 3)  # the first lagging follower only
    assert _isr_writes(b.handle(Timer("lag"), now=160)) == []  # one write in flight at a time
    b.handle(StoreResult(token, SimpleNamespace(version=1)), now=170)
    assert b.replicas[0].isr == {1, 3}
    [(_, isr)] = _isr_writes(b.handle(Timer("lag"), now=200))
    assert isr == (1,)  # then the other one
