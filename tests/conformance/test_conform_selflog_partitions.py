"""The merge's fenced-answer rule on a run of two partitions (conformance/selflog.py, ``_answers_fenced``).

A follower drops the answer to a fetch of partition ``p`` sent before a controller request for ``p``,
or before any request of a newer controller (impl/core/broker.py, ``_fence_fetch``); a request for
another partition of the same controller leaves that fetch alone, and its answer is taken. The merge
marks the leader's half of a dropped answer as the model's ``FetchAnswerLost`` (one unit of the fitted
``lost_fetch_answers``, the follower's facts held across it). It used to mark the open half of every
partition at any controller-request line of the follower (torture, which had one partition, never
showed the difference): with two partitions it turned a fetch the follower completed into a lost
answer. The line does not name the request's partition; what it changed does."""
from __future__ import annotations

from isrcheck.conformance import selflog
from isrcheck.conformance.selflog import SelfLine


def _sl(process: str, seq: int, t: int, kind: str, action, facts=None) -> SelfLine:
    return SelfLine(process, "broker", f"{process}.1.events.jsonl", seq + 1, seq, t, kind, action, facts or {}, "")


def _broker_2(ce: int, p0: tuple[int, int, int], p1: tuple[int, int, int]) -> dict:
    """Broker 2's facts: its controller epoch and, per partition, (log end, HW, leader epoch)."""
    out = {"brokers[2].alive": True, "brokers[2].controller_epoch": ce}
    for p, (leo, hw, epoch) in enumerate((p0, p1)):
        pre = f"replicas[2,{p}]."
        out.update({pre + "leo": leo, pre + "hw": hw, pre + "role": "follower", pre + "leader_epoch": epoch})
    return out


def _lines(request: dict) -> list[SelfLine]:
    """Broker 2 follows partition 0 (leader 1) and partition 1 (leader 3); both leaders log their half of
    its fetch; then broker 2 logs the controller request ``request`` (its facts), then its own half of
    partition 0's fetch (log end 3)."""
    return [
        _sl("broker-2", 4, 5, "observation", ("Fetch", (2, 0)), _broker_2(1, (2, 1, 0), (2, 1, 0))),
        _sl("broker-1", 7, 10, "observation", ("Fetch", (2, 0))),  # the leader of partition 0 counted it
        _sl("broker-3", 6, 11, "observation", ("Fetch", (2, 1))),  # the leader of partition 1 counted it
        _sl("broker-2", 5, 12, "observation", ("DeliverRequest", (2,)), request),
        _sl("broker-2", 6, 13, "observation", ("Fetch", (2, 0)), _broker_2(1, (3, 2, 0), (2, 1, 1))),
    ]


def test_a_request_for_one_partition_fences_only_that_partitions_fetch():
    # a LeaderAndIsr of partition 1 (its leader epoch 0 -> 1) from the same controller
    lines = _lines(_broker_2(1, (2, 1, 0), (2, 1, 1)))
    out, n = selflog._answers_fenced(lines)
    assert n == 1 and [x.lost for x in out] == [False, False, True, False, False]  # partition 0's was answered


def test_a_request_of_a_newer_controller_fences_every_partitions_fetch():
    # the new controller's first request reached broker 2: it drops every answer in flight
    lines = _lines(_broker_2(2, (2, 1, 0), (2, 1, 1)))
    out, n = selflog._answers_fenced(lines)
    assert n == 2 and [x.lost for x in out] == [False, True, True, False, False]


def test_a_request_of_a_broker_not_logged_before_fences_every_partitions_fetch():
    """Nothing to compare with (its first line since it started): in doubt, every fetch in flight is
    taken as dropped, as the rule did before it told partitions apart."""
    lines = _lines(_broker_2(1, (2, 1, 0), (2, 1, 1)))
    lines[0] = _sl("broker-2", 1, 5, "action", ("Restart", (2,)), {"brokers[2].alive": True})
    out, n = selflog._answers_fenced(lines)
    assert n == 2 and [x.lost for x in out] == [False, True, True, False, False]
