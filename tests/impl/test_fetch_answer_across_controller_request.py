"""A fetch answer that crossed a controller request is dropped and the follower fetches again (issue
30, item 4): the model's Fetch is one step, so a follower may only take an answer that reflects the
leader after every step the follower has taken. Torture seed 8 (kip-320) held an answer with HW 15
across a split while a new controller's LeaderAndIsr reached the follower; applied afterwards, it
made an event log the model could not explain (specs/11-conformance.md)."""
from __future__ import annotations

from isrcheck.impl.core.broker import BrokerCore
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.messages import (FetchRequest, FetchResponse, LeaderAndIsr, Receive, Record, Send,
                                         SetTimer, Timer, UpdateMetadata)

CFG = from_mapping({"brokers": 3, "generation": "kip-320"})


def follower() -> tuple[BrokerCore, FetchRequest]:
    core = BrokerCore(CFG, 2, autonomous=True)
    core.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 2), 1, 0, (1, 2))), 0)
    out = core.handle(Timer("fetch", 0), 1)
    fetches = [e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, FetchRequest)]
    assert len(fetches) == 1 and core.replicas[0].fetching
    return core, fetches[0]


def answer(req: FetchRequest, hw: int) -> FetchResponse:
    return FetchResponse(0, 1, req.offset, "", (Record(7, 1, "x"),), hw, 1, req.leader_epoch, req.fetch_id)


def test_an_answer_that_crossed_a_new_controllers_request_is_dropped_and_the_follower_fetches_again():
    core, req = follower()
    # a new controller's LeaderAndIsr of the same leader epoch: ignored for the partition, but a step
    out = core.handle(Receive(("controller", 2), LeaderAndIsr(2, 0, 1, (1, 2), 1, 0, (1, 2))), 2)
    assert SetTimer("fetch", 0, 0) in out and not core.replicas[0].fetching
    core.handle(Receive(("broker", 1), answer(req, 1)), 3)
    assert core.replicas[0].log == [] and core.replicas[0].hw == 0  # dropped
    again = [e.msg for e in core.handle(Timer("fetch", 0), 4) if isinstance(e, Send)]
    assert [type(m).__name__ for m in again] == ["FetchRequest"] and again[0].fetch_id > req.fetch_id
    core.handle(Receive(("broker", 1), answer(again[0], 1)), 5)
    assert [r.id for r in core.replicas[0].log] == [7] and core.replicas[0].hw == 1  # the fresh one is taken


def test_an_answer_with_no_controller_request_in_between_is_taken():
    core, req = follower()
    core.handle(Receive(("broker", 1), answer(req, 1)), 3)
    assert [r.id for r in core.replicas[0].log] == [7]


def test_an_update_metadata_of_the_same_controller_does_not_fence_a_fetch():
    core, req = follower()
    core.handle(Receive(("controller", 1), UpdateMetadata(1, (1, 2), ())), 2)
    core.handle(Receive(("broker", 1), answer(req, 1)), 3)
    assert [r.id for r in core.replicas[0].log] == [7]



def test_an_answer_to_a_fetch_given_up_on_is_still_taken():
    """Not fenced: with a round trip longer than the fetch timeout (a 150 ms nemesis delay each way
    against a 200 ms timeout) every answer comes after its watchdog, and dropping them livelocked the
    follower (tests/impl/test_torture.py's scripted HW-truncation scenario stopped making progress)."""
    core, req = follower()
    out = core.handle(Timer("fetch", 0), 1 + core.fetch_timeout_ms)  # the watchdog: no answer in time
    again = [e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, FetchRequest)]
    assert len(again) == 1 and again[0].fetch_id == req.fetch_id + 1
    core.handle(Receive(("broker", 1), answer(req, 1)), 2 + core.fetch_timeout_ms)  # the late one
    assert [r.id for r in core.replicas[0].log] == [7]
