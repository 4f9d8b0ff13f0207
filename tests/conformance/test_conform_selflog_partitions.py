"""The merge's rules on a run of two partitions (conformance/selflog.py): the fenced-answer rule
(``_answers_fenced``) and the windows of fetches in flight (``_checkpoints_before_fetch``).

A follower drops the answer to a fetch of partition ``p`` sent before a controller request for ``p``,
or before any request of a newer controller (impl/core/broker.py, ``_fence_fetch``); a request for
another partition of the same controller leaves that fetch alone, and its answer is taken. The merge
marks the leader's half of a dropped answer as the model's ``FetchAnswerLost`` (one unit of the fitted
``lost_fetch_answers``, the follower's facts held across it). It used to mark the open half of every
partition at any controller-request line of the follower (torture, which had one partition, never
showed the difference): with two partitions it turned a fetch the follower completed into a lost
answer. The line does not name the request's partition; what it changed does."""
from __future__ import annotations

import dataclasses

from isrcheck.conformance import selflog
from isrcheck.conformance.selflog import SelfLine, _checkpoints_before_fetch


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


# ---------------------------------------------------------------------------- fetches in flight
def test_each_partitions_fetch_in_flight_has_its_own_window():
    """Broker 2's fetches of both partitions in flight (both leaders logged their half first): its half
    of partition 0 still shows partition 1 as before that fetch, which the model's one-step Fetch(2, 1)
    (at the leader's half) has moved on, so those facts are not checked until its half of partition 1.
    The windows were one per follower: the second leader's half opened none, and the line was checked
    against a state the model never has."""
    lines = _lines(_broker_2(1, (2, 1, 0), (2, 1, 0)))
    lines = lines[:3] + [dataclasses.replace(lines[4], facts=_broker_2(1, (3, 2, 0), (2, 1, 0))),
                         _sl("broker-2", 7, 14, "observation", ("Fetch", (2, 1)), _broker_2(1, (3, 2, 0), (3, 2, 0)))]
    out, changed = _checkpoints_before_fetch(lines)
    assert changed == 1 and [(x.process, x.seq) for x in out] == [(x.process, x.seq) for x in lines]
    assert not any(k.startswith("replicas[2,1].") for k in out[3].facts)  # in flight: not checked
    assert out[3].facts["replicas[2,0].leo"] == 3  # its own half: checked
    assert out[4].facts == lines[4].facts  # partition 1's own half: checked whole


def test_a_checkpoint_goes_before_the_earliest_leaders_half_in_flight():
    lines = _lines(_broker_2(1, (2, 1, 0), (2, 1, 0)))[:3] + [
        _sl("broker-2", 5, 12, "action", ("CheckpointHighWatermark", (2, 0)), _broker_2(1, (2, 1, 0), (2, 1, 0)))]
    out, changed = _checkpoints_before_fetch(lines)
    assert changed == 1
    assert [(x.process, x.seq) for x in out] == [("broker-2", 4), ("broker-2", 5), ("broker-1", 7), ("broker-3", 6)]
    assert out[1].t == 10


def test_a_request_for_one_partition_ends_only_that_partitions_window():
    """A LeaderAndIsr of partition 1 ends partition 1's window (its answer is dropped); partition 0's fetch
    is still in flight, so a later line of broker 2 shows partition 0 as before it: not checked."""
    request = _broker_2(1, (2, 1, 0), (2, 1, 1))
    lines = _lines(request)[:4] + [
        _sl("broker-2", 6, 13, "action", ("CheckpointHighWatermark", (2, 1)), request),
        _sl("broker-2", 7, 14, "observation", ("Fetch", (2, 0)), _broker_2(1, (3, 2, 0), (2, 1, 1)))]
    out, _ = _checkpoints_before_fetch(lines)
    assert [(x.process, x.seq) for x in out] == [(x.process, x.seq) for x in lines]  # nothing moves
    assert not any(k.startswith("replicas[2,0].") for k in out[3].facts)  # the request's line
    assert out[3].facts["replicas[2,1].leader_epoch"] == 1
    assert not any(k.startswith("replicas[2,0].") for k in out[4].facts)  # partition 0 still in flight
    assert out[5].facts == lines[5].facts  # its half of partition 0
    # from a newer controller the request ends both windows: the checkpoint after it is checked whole
    newer = _broker_2(2, (2, 1, 0), (2, 1, 1))
    lines = _lines(newer)[:4] + [
        _sl("broker-2", 6, 13, "action", ("CheckpointHighWatermark", (2, 1)), newer)]
    out, _ = _checkpoints_before_fetch(lines)
    assert out[3].facts == newer and out[4].facts == newer
