"""The history checker on hand-made histories: each anomaly alone, and a clean run."""
from __future__ import annotations

from isrcheck.impl.rigs.history import Anomaly, History, Write, check


def _writes(*spec: tuple[int, int, int | None]) -> tuple[Write, ...]:
    return tuple(Write(0, rid, sent, acked) for rid, sent, acked in spec)


CLEAN_WRITES = _writes((1, 0, 5), (2, 10, 15), (3, 20, 25))


def test_a_clean_history_has_no_finding():
    h = History(CLEAN_WRITES, {0: (1, 2, 3)}, {(1, 0): (1, 2, 3), (2, 0): (1, 2, 3), (3, 0): (1, 2)})
    v = check(h)
    assert v.ok and v.findings == ()
    assert (v.acked, v.written, v.lost_count) == (3, 3, 0)


def test_an_acknowledged_write_missing_from_the_consumed_log_is_lost():
    h = History(CLEAN_WRITES, {0: (1, 3)}, {(1, 0): (1, 3), (2, 0): (1, 3)})
    v = check(h)
    assert not v.ok
    assert v.lost == {0: (2,)} and v.lost_count == 1
    assert [f.kind for f in v.violations] == [Anomaly.LOST]


def test_an_unacknowledged_write_may_vanish():
    h = History(_writes((1, 0, 5), (2, 10, None)), {0: (1,)}, {(1, 0): (1,)})
    assert check(h).ok


def test_a_write_read_before_one_acknowledged_before_it_was_sent_is_reordered():
    # 1 acknowledged at 5, 2 sent at 10: 2 must not be read before 1
    h = History(CLEAN_WRITES, {0: (2, 1, 3)}, {(1, 0): (2, 1, 3)})
    v = check(h)
    [f] = v.violations
    assert f.kind is Anomaly.REORDERED and f.records == (1, 2)
    assert "2 before 1" in f.detail


def test_concurrent_writes_may_land_in_either_order():
    # 2 was sent (at 3) before 1 was acknowledged (at 5): no order is promised between them
    h = History(_writes((1, 0, 5), (2, 3, 8)), {0: (2, 1)}, {(1, 0): (2, 1)})
    assert check(h).ok


def test_a_retried_write_appearing_twice_is_a_duplicate_not_a_violation():
    h = History(CLEAN_WRITES, {0: (1, 2, 2, 3)}, {(1, 0): (1, 2, 2, 3), (2, 0): (1, 2, 2)})
    v = check(h)
    assert v.ok
    dups = v.of(Anomaly.DUPLICATED)
    assert [(f.brokers, f.records) for f in dups] == [((), (2,)), ((1,), (2,)), ((2,), (2,))]


def test_a_duplicate_does_not_hide_a_reorder_and_first_copies_decide_order():
    # 1's first copy precedes 2: fine although a retry appended 1 again later
    assert check(History(CLEAN_WRITES, {0: (1, 2, 1, 3)}, {})).ok
    # 3 (sent after 1 and 2 were acknowledged) read first: a reorder
    v = check(History(CLEAN_WRITES, {0: (3, 1, 2)}, {}))
    assert [f.kind for f in v.violations] == [Anomaly.REORDERED]


def test_replicas_that_disagree_at_one_offset_have_diverged_a_shorter_prefix_only_lags():
    h = History(CLEAN_WRITES, {0: (1, 2, 3)},
                {(1, 0): (1, 2, 3), (2, 0): (1, 9, 3), (3, 0): (1,)})
    v = check(h)
    [f] = v.violations
    assert f.kind is Anomaly.DIVERGED and f.brokers == (1, 2) and f.records == (2, 9)
    assert "offset 1" in f.detail


def test_without_a_leader_the_partition_is_unavailable_and_loss_is_judged_on_every_replica():
    h = History(CLEAN_WRITES, {0: None}, {(1, 0): (1, 2), (2, 0): (1,)})
    v = check(h)
    assert [f.kind for f in v.findings] == [Anomaly.UNAVAILABLE, Anomaly.LOST]
    assert v.lost == {0: (3,)}
    # the record some replica still holds is not counted lost
    assert check(History(CLEAN_WRITES, {0: None}, {(1, 0): (1, 2, 3)})).ok


def test_the_verdict_as_json():
    v = check(History(CLEAN_WRITES, {0: (1, 3)}, {}))
    out = v.to_json()
    assert out["ok"] is False and out["lost"] == 1 and out["acked"] == 3
    assert out["findings"][0]["kind"] == "lost" and out["findings"][0]["records"] == [2]
