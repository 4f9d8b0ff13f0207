"""Broker steps (model/broker.py): produce, fetch, ISR changes, HW, controller requests, crashes.

States are reached through enabled actions (``kafka(...)`` drives ``enabled_actions`` / ``apply``),
or hand-built from a reached state with ``edit``.
"""
from __future__ import annotations

import pytest

from isrcheck.model.records import make_record, record_epoch, record_id
from isrcheck.model.state import LEADER_AND_ISR, NO_LEADER, STOP_REPLICA, UPDATE_METADATA, LeaderAndIsr
from isrcheck.model.state import StopReplica, UpdateMetadata

from shared import M


def rec(rid: int, epoch: int = 0) -> int:
    return make_record(rid, epoch)


def lai(controller_epoch, leader, isr, leader_epoch, zk_version, replicas, partition=0):
    return LeaderAndIsr(LEADER_AND_ISR, controller_epoch, partition, leader, isr, leader_epoch, zk_version,
                        tuple(replicas))


# ---------------------------------------------------------------------------- produce
def test_initial_replicas(kafka, edit):
    d = kafka(brokers=3, replication_factor=3, max_records=1)
    leader, f2 = edit.replica(d.s, 1), edit.replica(d.s, 2)
    assert (leader.leader, leader.leader_epoch, leader.isr, leader.zk_version) == (1, 0, M(1, 2, 3), 1)
    assert leader.remote_leo == (0, 0, 0)
    assert (f2.leader, f2.leader_epoch, f2.log, f2.hw) == (1, 0, (), 0)
    # only the leader produces; followers fetch
    assert d.is_enabled("Produce", 1, 0)
    assert not d.is_enabled("Produce", 2, 0)
    assert d.is_enabled("Fetch", 2, 0) and d.is_enabled("Fetch", 3, 0)
    assert not d.is_enabled("Fetch", 1, 0)


def test_produce_appends_with_the_leaders_epoch(kafka, edit):
    d = kafka(brokers=3, replication_factor=3, max_records=2, faults={"crashes": 1})
    # a follower dies; the controller takes it out of the ISR with a leader-epoch bump
    d.do("Crash", 3)
    d.do("ProcessBrokerChange", 1)
    d.deliver_all(1)
    leader = edit.replica(d.s, 1)
    assert leader.leader_epoch == 1 == d.s.zk.partitions[0].leader_epoch
    d.do("Produce", 1, 0)
    log = edit.replica(d.s, 1).log
    assert len(log) == 1
    assert record_id(log[0]) == 1
    assert record_epoch(log[0]) == 1  # the leader's current epoch, not 0
    assert d.s.ghost[0].produced == 1
    assert edit.replica(d.s, 1).pending == 1 << 1  # record 1 awaits commitment
    d.do("Produce", 1, 0)
    assert edit.replica(d.s, 1).log == (rec(1, 1), rec(2, 1))


def test_produce_is_bounded_by_max_records(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=1)
    d.do("Produce", 1, 0)
    assert not d.is_enabled("Produce", 1, 0)


def test_single_replica_commits_and_acknowledges_at_once(kafka, edit):
    d = kafka(brokers=1, replication_factor=1, max_records=1)
    d.do("Produce", 1, 0)
    r = edit.replica(d.s, 1)
    assert r.hw == 1 and r.pending == 0
    assert d.s.ghost[0].acked == 1 << 1
    assert d.s.ghost[0].exposed == (rec(1),)


# ---------------------------------------------------------------------------- fetch and HW
def test_fetch_copies_from_the_follower_leo_and_hw_advances_on_the_next_fetch(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=2)
    d.do("Produce", 1, 0)
    d.do("Produce", 1, 0)
    assert edit.replica(d.s, 1).hw == 0  # follower 2 has not fetched: nothing committed
    d.do("Fetch", 2, 0)
    f, leader = edit.replica(d.s, 2), edit.replica(d.s, 1)
    assert f.log == leader.log == (rec(1), rec(2))
    assert leader.remote_leo[1] == 0  # the leader learned LEO 0, the offset of this fetch
    assert leader.hw == 0 and f.hw == 0
    assert d.s.ghost[0].acked == 0
    d.do("Fetch", 2, 0)
    leader = edit.replica(d.s, 1)
    assert leader.remote_leo[1] == 2
    assert leader.hw == 2
    assert d.s.ghost[0].acked == M(1, 2)  # min ISR 1 <= ISR size 2: acknowledged
    assert leader.pending == 0


def test_follower_hw_lags_leader_hw_by_one_fetch(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=1)
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)  # gets m1; leader HW 0
    d.do("Fetch", 2, 0)  # leader learns LEO 1 and advances HW to 1; the response carries the HW it had: 0
    assert edit.replica(d.s, 1).hw == 1
    assert edit.replica(d.s, 2).hw == 0
    d.do("Fetch", 2, 0)  # one fetch later the follower learns HW 1
    assert edit.replica(d.s, 2).hw == 1


def test_follower_hw_lags_while_another_isr_member_is_behind(kafka, edit):
    d = kafka(brokers=3, replication_factor=3, max_records=1)
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)
    d.do("Fetch", 3, 0)
    d.do("Fetch", 2, 0)  # 2 at LEO 1, 3 still recorded at 0: HW stays 0
    assert edit.replica(d.s, 1).hw == 0 and edit.replica(d.s, 2).hw == 0
    d.do("Fetch", 3, 0)  # now every ISR member reached 1: leader HW 1
    assert edit.replica(d.s, 1).hw == 1
    assert edit.replica(d.s, 2).hw == 0  # follower 2 has not fetched since: its HW lags
    d.do("Fetch", 2, 0)
    assert edit.replica(d.s, 2).hw == 1


def test_fetch_beyond_leader_leo_is_offset_out_of_range_and_truncates(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=2)
    s = edit.with_replica(d.s, 1, 0, log=(rec(1),))
    s = edit.with_replica(s, 2, 0, log=(rec(1), rec(7)), hw=2)
    d.state = s
    d.do("Fetch", 2, 0)
    f, leader = edit.replica(d.s, 2), edit.replica(d.s, 1)
    assert f.log == (rec(1),)  # truncated to the leader's LEO
    assert f.hw == 1  # never beyond the log end
    assert leader.remote_leo == (0, 0)  # the out-of-range fetch did not reach the leader's bookkeeping
    assert leader.hw == 0


def test_isr_expands_only_once_the_fetch_offset_reaches_the_leader_hw(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=2, faults={"isr_shrinks": 1})
    d.do("ShrinkIsr", 1, 0, 2)
    zp = d.s.zk.partitions[0]
    assert zp.isr == M(1) and zp.version == 2 and edit.replica(d.s, 1).zk_version == 2
    d.do("Produce", 1, 0)
    d.do("Produce", 1, 0)
    assert edit.replica(d.s, 1).hw == 2  # ISR {1}: committed at once
    d.do("Fetch", 2, 0)  # fetch offset 0 < HW 2: stays out
    assert d.s.zk.partitions[0].isr == M(1)
    assert edit.replica(d.s, 1).isr == M(1)
    assert edit.replica(d.s, 2).log == (rec(1), rec(2))
    d.do("Fetch", 2, 0)  # fetch offset 2 >= HW 2: joins, with a conditional write
    zp = d.s.zk.partitions[0]
    assert zp.isr == M(1, 2) and zp.version == 3
    assert edit.replica(d.s, 1).isr == M(1, 2) and edit.replica(d.s, 1).zk_version == 3
    assert zp.leader_epoch == 0  # an ISR change by the leader keeps the leader epoch


def test_partial_fetch_copies_one_record_and_the_follower_catches_up_in_several_fetches(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=3, max_fetch_records=1, faults={"isr_shrinks": 1})
    d.do("ShrinkIsr", 1, 0, 2)
    for _ in range(3):
        d.do("Produce", 1, 0)
    assert edit.replica(d.s, 1).hw == 3  # ISR {1}: committed at once
    logs, isrs, hws = [], [], []
    for _ in range(4):
        d.do("Fetch", 2, 0)
        f = edit.replica(d.s, 2)
        logs.append(f.log)
        isrs.append(d.s.zk.partitions[0].isr)
        hws.append(f.hw)
    # one record per fetch, from the follower's LEO
    assert logs == [(rec(1),), (rec(1), rec(2)), (rec(1), rec(2), rec(3)), (rec(1), rec(2), rec(3))]
    # it rejoins only with the fetch whose offset reached the leader's HW, the fourth
    assert isrs == [M(1), M(1), M(1), M(1, 2)]
    # the HW the response carries (3) is bounded by the follower's new log end
    assert hws == [1, 2, 3, 3]
    assert edit.replica(d.s, 1).remote_leo[1] == 3


def test_partial_fetch_of_n_records_takes_min_of_n_and_what_is_available(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=3, max_fetch_records=2)
    for _ in range(3):
        d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)
    assert edit.replica(d.s, 2).log == (rec(1), rec(2))
    d.do("Fetch", 2, 0)
    assert edit.replica(d.s, 2).log == (rec(1), rec(2), rec(3))  # only one was left
    assert edit.replica(d.s, 1).hw == 2  # the leader learned LEO 2 from the second fetch


def test_without_a_limit_one_fetch_copies_the_whole_suffix(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=3, max_fetch_records=0)
    for _ in range(3):
        d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)
    assert edit.replica(d.s, 2).log == (rec(1), rec(2), rec(3))


def test_isr_expansion_needs_the_znode_version_to_match(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=1, faults={"isr_shrinks": 1})
    d.do("ShrinkIsr", 1, 0, 2)
    # somebody else (a controller) wrote the znode since: the leader's cached version is stale
    d.state = edit.with_zk_partition(d.s, 0, version=5)
    d.do("Fetch", 2, 0)
    assert d.s.zk.partitions[0].isr == M(1) and d.s.zk.partitions[0].version == 5
    assert edit.replica(d.s, 1).isr == M(1)  # the leader keeps its old ISR and waits for LeaderAndIsr
    assert not d.is_enabled("ShrinkIsr", 1, 0, 2)


def test_shrink_isr_is_a_conditional_write_that_advances_hw(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=1, faults={"isr_shrinks": 1})
    d.do("Produce", 1, 0)
    assert edit.replica(d.s, 1).hw == 0
    d.do("ShrinkIsr", 1, 0, 2)
    assert edit.replica(d.s, 1).hw == 1
    assert d.s.ghost[0].acked == M(1)
    assert d.s.budget.isr_shrinks == 0
    assert "ShrinkIsr" not in d.names()


@pytest.mark.parametrize("min_isr, acked", [(1, True), (2, False)])
def test_hw_advance_acknowledges_only_with_min_insync_replicas(kafka, edit, min_isr, acked):
    d = kafka(brokers=2, replication_factor=2, max_records=1, min_insync_replicas=min_isr,
              faults={"isr_shrinks": 1})
    d.do("Produce", 1, 0)
    d.do("ShrinkIsr", 1, 0, 2)  # ISR {1}: HW advances to 1
    r = edit.replica(d.s, 1)
    assert r.hw == 1
    assert r.pending == 0  # the producer got its answer either way
    assert bool(d.s.ghost[0].acked) is acked


def test_produce_refused_when_isr_below_min_insync_replicas(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=2, min_insync_replicas=2, faults={"isr_shrinks": 1})
    assert d.is_enabled("Produce", 1, 0)
    d.do("ShrinkIsr", 1, 0, 2)
    assert not d.is_enabled("Produce", 1, 0)


def test_checkpoint_high_watermark(kafka, edit):
    d = kafka(brokers=1, replication_factor=1, max_records=1)
    assert not d.is_enabled("CheckpointHighWatermark", 1, 0)
    d.do("Produce", 1, 0)
    assert edit.replica(d.s, 1).checkpoint == 0
    d.do("CheckpointHighWatermark", 1, 0)
    assert edit.replica(d.s, 1).checkpoint == 1
    assert not d.is_enabled("CheckpointHighWatermark", 1, 0)


def test_every_change_checkpoint_mode_has_no_checkpoint_action(kafka):
    d = kafka(brokers=1, replication_factor=1, max_records=1, hw_checkpoint="every-change")
    d.do("Produce", 1, 0)
    assert "CheckpointHighWatermark" not in d.names()


# ---------------------------------------------------------------------------- controller requests
def _follower_with_uncommitted_suffix(kafka, edit):
    """Broker 2 follows 1 with log [m1, m2] and HW 1 (m2 above its HW)."""
    d = kafka(brokers=3, replication_factor=3, max_records=2)
    s = edit.with_replica(d.s, 2, 0, log=(rec(1), rec(2)), hw=1)
    s = edit.with_replica(s, 1, 0, log=(rec(1), rec(2)), hw=1)
    d.state = s
    return d


def test_become_follower_keeps_log_when_the_leader_is_unchanged(kafka, edit):
    d = _follower_with_uncommitted_suffix(kafka, edit)
    d.state = edit.with_inbox(d.s, 2, lai(1, 1, M(1, 2), 1, 2, (1, 2, 3)))
    d.do("DeliverRequest", 2)
    r = edit.replica(d.s, 2)
    assert r.log == (rec(1), rec(2))
    assert (r.leader, r.leader_epoch, r.hw) == (1, 1, 1)


def test_become_follower_truncates_to_hw_on_a_leader_change(kafka, edit):
    d = _follower_with_uncommitted_suffix(kafka, edit)
    d.state = edit.with_inbox(d.s, 2, lai(1, 3, M(2, 3), 1, 2, (1, 2, 3)))
    d.do("DeliverRequest", 2)
    r = edit.replica(d.s, 2)
    assert r.log == (rec(1),)
    assert (r.leader, r.leader_epoch, r.hw) == (3, 1, 1)
    assert (r.isr, r.remote_leo, r.pending) == (0, (), 0)  # no leader bookkeeping on a follower


def test_become_leader_takes_isr_and_version_from_the_request(kafka, edit):
    d = _follower_with_uncommitted_suffix(kafka, edit)
    d.state = edit.with_inbox(d.s, 2, lai(1, 2, M(2, 3), 1, 7, (1, 2, 3)))
    d.do("DeliverRequest", 2)
    r = edit.replica(d.s, 2)
    assert (r.leader, r.leader_epoch, r.isr, r.zk_version) == (2, 1, M(2, 3), 7)
    assert r.log == (rec(1), rec(2))  # a new leader keeps its log
    assert r.remote_leo == (0, 0, 0)
    assert d.is_enabled("Produce", 2, 0)
    assert not d.is_enabled("Fetch", 2, 0)


def test_stale_leader_epoch_request_is_rejected(kafka, edit):
    d = _follower_with_uncommitted_suffix(kafka, edit)
    before = edit.replica(d.s, 2)
    for epoch in (0, -1):  # equal to, and below, the replica's leader epoch 0
        d.state = edit.with_inbox(d.s, 2, lai(1, 3, M(3), epoch, 9, (1, 2, 3)))
        d.do("DeliverRequest", 2)
        assert edit.replica(d.s, 2) == before
        assert d.s.inbox[1] == ()


def test_stale_controller_epoch_request_is_rejected(kafka, edit):
    d = _follower_with_uncommitted_suffix(kafka, edit)
    d.state = edit.with_broker(d.s, 2, controller_epoch=2)
    before = edit.replica(d.s, 2)
    d.state = edit.with_inbox(d.s, 2, lai(1, 3, M(3), 5, 9, (1, 2, 3)))  # a newer leader epoch, old controller
    d.do("DeliverRequest", 2)
    assert edit.replica(d.s, 2) == before
    assert d.s.brokers[1].controller_epoch == 2
    # the same request from the current controller epoch is applied
    d.state = edit.with_inbox(d.s, 2, lai(2, 3, M(3), 5, 9, (1, 2, 3)))
    d.do("DeliverRequest", 2)
    assert edit.replica(d.s, 2).leader == 3


def test_newer_controller_epoch_is_remembered(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0)
    d.state = d.s._replace(inbox=((), (UpdateMetadata(UPDATE_METADATA, 4, ()),)))
    d.do("DeliverRequest", 2)
    assert d.s.brokers[1].controller_epoch == 4


def test_leader_and_isr_for_a_broker_outside_its_replicas_is_ignored(kafka, edit):
    d = kafka(brokers=3, replication_factor=2, max_records=0)  # AR [1, 2]
    d.state = edit.with_inbox(d.s, 3, lai(1, 1, M(1, 2), 1, 2, (1, 2)))
    d.do("DeliverRequest", 3)
    assert d.s.brokers[2].replicas[0] is None


def test_leader_and_isr_creates_a_missing_replica(kafka, edit):
    d = kafka(brokers=3, replication_factor=2, max_records=0)  # AR [1, 2]
    d.state = edit.with_inbox(d.s, 3, lai(1, 1, M(1, 2), 1, 2, (1, 2, 3)))
    d.do("DeliverRequest", 3)
    r = d.s.brokers[2].replicas[0]
    assert r is not None and r.log == () and (r.leader, r.leader_epoch) == (1, 1)
    # it fetches once the leader, too, has a LeaderAndIsr that assigns the partition to 3
    d.state = edit.with_inbox(d.s, 1, lai(1, 1, M(1, 2), 1, 2, (1, 2, 3)))
    d.do("DeliverRequest", 1)
    assert d.is_enabled("Fetch", 3, 0)
    d.do("Fetch", 3, 0)
    assert edit.replica(d.s, 1).remote_leo[2] == 0


def test_stop_replica_stops_fetching_and_delete_removes_the_replica(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=0)
    d.state = edit.with_inbox(d.s, 2, StopReplica(STOP_REPLICA, 1, 0, False), StopReplica(STOP_REPLICA, 1, 0, True))
    d.do("DeliverRequest", 2)
    assert edit.replica(d.s, 2).leader == NO_LEADER
    assert not d.is_enabled("Fetch", 2, 0)
    d.do("DeliverRequest", 2)
    assert d.s.brokers[1].replicas[0] is None


def test_requests_are_delivered_in_order_unless_delayed(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=0, faults={"delayed_requests": 1})
    first, second = UpdateMetadata(UPDATE_METADATA, 2, ()), UpdateMetadata(UPDATE_METADATA, 3, ())
    d.state = edit.with_inbox(d.s, 2, first, second)
    assert d.is_enabled("DeliverRequest", 2)
    assert d.is_enabled("DeliverDelayedRequest", 2, 1)
    d.do("DeliverDelayedRequest", 2, 1)  # overtakes the older one
    assert d.s.inbox[1] == (first,)
    assert d.s.brokers[1].controller_epoch == 3
    assert d.s.budget.delayed_requests == 0
    d.do("DeliverRequest", 2)  # the overtaken request is now stale
    assert d.s.brokers[1].controller_epoch == 3


# ---------------------------------------------------------------------------- crashes and restarts
def test_crash_keeps_only_log_and_checkpoint(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=2, faults={"crashes": 1})
    d.do("Produce", 1, 0)
    d.do("Fetch", 2, 0)
    d.do("Fetch", 2, 0)
    d.do("CheckpointHighWatermark", 1, 0)
    d.do("Produce", 1, 0)
    before = edit.replica(d.s, 1)
    assert (len(before.log), before.hw, before.checkpoint) == (2, 1, 1)
    d.do("Crash", 1)
    r = edit.replica(d.s, 1)
    assert r.log == before.log
    assert r.hw == r.checkpoint == 1  # HW comes back from the checkpoint
    assert (r.leader, r.leader_epoch, r.isr, r.zk_version, r.remote_leo, r.pending) == (NO_LEADER, -1, 0, 0, (), 0)
    br = d.s.brokers[0]
    assert br.alive is False and br.controller_epoch == 0
    assert not d.s.zk.live >> 1 & 1
    assert d.s.inbox[0] == ()
    assert d.s.budget.crashes == 0
    assert "Produce" not in d.names()  # a dead leader does nothing


def test_crash_without_checkpoint_loses_the_hw(kafka, edit):
    d = kafka(brokers=1, replication_factor=1, max_records=1, faults={"crashes": 1})
    d.do("Produce", 1, 0)
    assert edit.replica(d.s, 1).hw == 1
    d.do("Crash", 1)
    assert edit.replica(d.s, 1).hw == 0
    assert edit.replica(d.s, 1).log == (rec(1),)


def test_crash_with_every_change_checkpoint_keeps_the_hw(kafka, edit):
    d = kafka(brokers=1, replication_factor=1, max_records=1, hw_checkpoint="every-change", faults={"crashes": 1})
    d.do("Produce", 1, 0)
    d.do("Crash", 1)
    assert edit.replica(d.s, 1).hw == 1


def test_lossy_crash_keeps_the_chosen_prefix(kafka, edit):
    d = kafka(brokers=1, replication_factor=1, max_records=2, faults={"lossy_crashes": 1})
    d.do("Produce", 1, 0)
    d.do("Produce", 1, 0)
    d.do("CheckpointHighWatermark", 1, 0)
    lossy = sorted(a.args for a in d.enabled() if a.name == "LossyCrash")
    assert lossy == [(1, (0,)), (1, (1,))]  # every strict prefix, never the full log
    d.do("LossyCrash", 1, (1,))
    r = edit.replica(d.s, 1)
    assert r.log == (rec(1),)
    assert r.hw == 1  # checkpoint 2 clipped to the surviving log
    assert d.s.budget.lossy_crashes == 0


def test_restart_only_after_the_controller_noticed(kafka, edit):
    d = kafka(brokers=2, replication_factor=2, max_records=0, faults={"crashes": 1})
    d.do("Crash", 2)
    assert not d.is_enabled("Restart", 2)
    assert "QuickRestart" not in d.names()  # no budget for an undetected restart
    d.do("ProcessBrokerChange", 1)
    d.do("Restart", 2)
    assert d.s.brokers[1].alive and d.s.zk.live >> 2 & 1
    r = edit.replica(d.s, 2)
    assert r.leader == NO_LEADER and not d.is_enabled("Fetch", 2, 0)
    # the controller notices, sends LeaderAndIsr, and the broker follows again
    d.do("ProcessBrokerChange", 1)
    d.deliver_all(2)
    r = edit.replica(d.s, 2)
    assert r.leader == 1 and r.leader_epoch == d.s.zk.partitions[0].leader_epoch
    assert d.is_enabled("Fetch", 2, 0)


def test_quick_restart_before_the_controller_noticed(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, faults={"crashes": 1, "undetected_restarts": 1})
    d.do("Crash", 2)
    assert not d.is_enabled("Restart", 2)
    d.do("QuickRestart", 2)
    assert d.s.brokers[1].alive
    assert d.s.budget.undetected_restarts == 0
    assert d.s.zk.live == d.s.controller.live  # the 0.8 controller sees no change at all
    assert "ProcessBrokerChange" not in d.names()
