"""The protocol generations of the replication path (specs/05-replication.md, "Protocol generations"):
``generation`` = high-watermark | kip-101 | kip-279 | kip-320, in the implementation.

The scenarios are the ones where the generations differ, each driven by action name in the step-mode
simulator (and a few in the autonomous simulator): the HW-truncation loss after one leader crash,
the walk back of KIP-279, the KIP-320 fencing of a stale fetch, the reconciliation on an epoch change
with the same leader (KAFKA-7164) and the ISR-join condition (KAFKA-7128). The pure rules of
:mod:`isrcheck.impl.core.epoch_cache` are checked against the spec's wording first.
"""
from __future__ import annotations

import pytest

from isrcheck.impl.core import epoch_cache as EC
from isrcheck.impl.core.broker import BrokerCore, DiskImage
from isrcheck.impl.core.config import from_mapping
from isrcheck.impl.core.messages import (
    Command,
    FetchRequest,
    FetchResponse,
    LeaderAndIsr,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    Persist,
    Receive,
    Record,
    Send,
    StoreOp,
    from_wire,
    to_wire,
)
from isrcheck.impl.disk.checkpoint_format import encode as encode_checkpoint
from isrcheck.impl.disk.log import EPOCH_FILE, FileDisk, SimDisk
from isrcheck.impl.rigs.simulator import AutoSimulator, NotEnabled, Simulator
from isrcheck.specs.observation import validate
from isrcheck.specs.protocol import GENERATION_NAMES, Generation

GENERATIONS = GENERATION_NAMES
LEADER_EPOCHS = tuple(g for g in GENERATION_NAMES if Generation(g).traits.leader_epochs)
U = EC.UNDEFINED


def form(generation):
    """The generation's OffsetsForLeaderEpoch answer form (its trait in specs/protocol.toml)."""
    return Generation(generation).traits.epoch_answer


def replica(obs, b, p=0):
    return next(r for r in obs["replicas"] if r["broker"] == b and r["partition"] == p)


def ids(sim, b, p=0):
    return [r["id"] for r in replica(sim.observe(), b, p)["log"]]


def epochs(sim, b, p=0):
    return [(e["epoch"], e["start_offset"]) for e in replica(sim.observe(), b, p)["epochs"]]


def state(sim, b, p=0):
    return replica(sim.observe(), b, p)["fetch_state"]


def run(sim, actions):
    for name, args in actions:
        sim.apply(name, args)
        validate(sim.observe())


def deliver_all(sim, *brokers):
    for b in brokers:
        while sim.inbox[b]:
            sim.apply("DeliverRequest", (b,))


# ==================================================================================== the pure rules
def test_the_cache_grows_only_at_the_end_and_is_cut_with_the_log():
    cache: list[tuple[int, int]] = []
    assert EC.assign(cache, 0, 0) and not EC.assign(cache, 0, 3)  # the epoch is known already
    assert EC.assign_records(cache, 1, [0, 2, 2, 5])
    assert cache == [(0, 0), (2, 2), (5, 4)]
    assert not EC.assign(cache, 3, 9)  # not later than the last entry
    assert not EC.cut(cache, 5) and EC.cut(cache, 4)  # an entry starting at the cut goes too
    assert cache == [(0, 0), (2, 2)]
    assert EC.latest(cache) == 2 and EC.latest([]) == U
    assert EC.start_of(cache, 2) == 2 and EC.start_of(cache, 1) == U


LEADER = [(1, 0), (3, 4), (5, 7)]  # epochs 1, 3, 5 starting at 0, 4, 7; LEO 9


@pytest.mark.parametrize("asked, kip101, kip279", [
    (5, (U, 9), (5, 9)),  # the latest epoch ends at the LEO
    (3, (U, 7), (3, 7)),  # a known epoch ends where the next starts
    (4, (U, 7), (3, 7)),  # an epoch the leader never had: kip-101 gives the next start; kip-279 names 3
    (2, (U, 4), (1, 4)),
    (0, (U, U), (0, 0)),  # older than every epoch: undefined under kip-101, (asked, first start) after
    (6, (U, U), (U, U)),  # newer than every epoch
    (U, (U, U), (U, U)),  # the follower's cache is empty
])
def test_the_leaders_answer_per_generation(asked, kip101, kip279):
    assert EC.leader_answer(form("kip-101"), LEADER, 9, asked) == kip101
    assert EC.leader_answer(form("kip-279"), LEADER, 9, asked) == kip279
    assert EC.leader_answer(form("kip-320"), LEADER, 9, asked) == kip279


FOLLOWER = [(1, 0), (2, 3), (4, 5)]  # LEO 6, HW 2


@pytest.mark.parametrize("rule, answer, expected", [
    ("kip-101", (U, 4), (4, False)),  # min(end, LEO), then fetch
    ("kip-101", (U, 8), (6, False)),
    ("kip-101", (U, U), (2, False)),  # undefined: back to the HW
    ("kip-279", (4, 9), (6, False)),  # m = a = 4: min(end, end of m = LEO)
    ("kip-279", (2, 4), (4, False)),  # m = a = 2: min(4, 5)
    ("kip-279", (3, 9), (5, True)),  # m = 2 < a = 3: cut to the end of 2 and ask again
    ("kip-279", (2, 2), (2, False)),
    # 0 is older than every epoch here: by the leader's rule the follower finds (0, start of its first
    # epoch = 0), so it keeps nothing of epochs the leader does not know: min(1, 0), then fetch
    ("kip-279", (0, 1), (0, False)),
    ("kip-279", (5, 9), (2, False)),  # newer than every epoch it knows: undefined, back to the HW
    ("kip-279", (U, U), (2, False)),
    ("kip-320", (3, 9), (5, True)),
    ("kip-320", (0, 1), (0, False)),
])
def test_the_followers_truncation_point_per_generation(rule, answer, expected):
    assert EC.truncation_point(form(rule), FOLLOWER, 6, 2, answer) == expected


@pytest.mark.parametrize("rule", ("kip-279", "kip-320"))
def test_the_follower_reads_its_own_cache_with_the_leaders_rule(rule):
    """From kip-279 on the follower looks the answered epoch up exactly as a leader would answer it."""
    for a in range(0, 7):
        for end in range(0, 8):
            mine = EC.leader_answer(form(rule), FOLLOWER, 6, a)
            expected = (2, False) if mine[0] == U else (min(end, mine[1]), mine[0] != a)
            assert EC.truncation_point(form(rule), FOLLOWER, 6, 2, (a, end)) == expected
    # an empty cache finds nothing: back to the HW (with LEO 3 and HW 1)
    assert EC.truncation_point(form(rule), [], 3, 1, (2, 3)) == (1, False)


def test_epoch_messages_travel_on_the_wire():
    for msg in (FetchRequest(0, 2, 5, 3), FetchResponse(0, 1, 5, "FencedLeaderEpoch", leader_epoch=3),
                OffsetsForLeaderEpochRequest(1, 2, 4, 7), OffsetsForLeaderEpochResponse(1, 3, 4, 7, "", 3, 12)):
        assert from_wire(to_wire(msg)) == msg
    # a peer that does not send the new fields is still understood (unknown leader epoch)
    assert from_wire({"type": "FetchRequest", "partition": 0, "follower": 2, "offset": 1}).leader_epoch == -1


# ==================================================================================== step by step
def three(generation, **extra):
    return Simulator({"brokers": 3, "max_records": 4, "generation": generation, **extra})


def test_the_initial_state_has_the_leaders_epoch_in_its_cache_only():
    for t in GENERATIONS:
        obs = three(t).observe()
        validate(obs)
        assert [(r["epochs"], r["fetch_state"]) for r in obs["replicas"]] == [
            ([{"epoch": 0, "start_offset": 0}] if (t != "high-watermark" and r["broker"] == 1) else [], "fetching")
            for r in obs["replicas"]]


ONE_CRASH = [("Produce", (1, 0)), ("Fetch", (2, 0)), ("Fetch", (2, 0)), ("Fetch", (3, 0)), ("Fetch", (3, 0)),
             ("Crash", (1,)), ("ProcessBrokerChange", (1,)), ("DeliverRequest", (3,))]


@pytest.mark.parametrize("generation", GENERATIONS)
def test_hw_truncation_loses_an_acknowledged_write_only_under_high_watermark(generation):
    """specs/10-weaknesses.md, the first gallery entry (8 actions): 3 follows the new leader 2 with an
    HW one fetch behind; then 2 crashes too and 3, still in the ISR, takes over."""
    sim = three(generation, faults={"crashes": 2})
    run(sim, ONE_CRASH)
    assert sim.acked[0] == {1} and sim.leader_of(0) == 2 and 3 in sim.isr_of(0)
    if generation == "high-watermark":
        assert ids(sim, 3) == [] and state(sim, 3) == "fetching"  # cut to its HW (0)
    else:
        assert ids(sim, 3) == [1] and state(sim, 3) == "ask-epoch-end"  # kept; reconciles first
        with pytest.raises(NotEnabled, match="does not lead"):  # 2 has not applied its LeaderAndIsr yet
            sim.apply("OffsetsForLeaderEpoch", (3, 0))
        deliver_all(sim, 2)
        with pytest.raises(NotEnabled, match="reconciling"):
            sim.apply("Fetch", (3, 0))
        assert ("OffsetsForLeaderEpoch", (3, 0)) in sim.enabled()
        sim.apply("OffsetsForLeaderEpoch", (3, 0))
        assert state(sim, 3) == "truncate-pending" and ids(sim, 3) == [1]  # the answer waits at 3
        assert ("TruncateToEpochEndOffset", (3, 0)) in sim.enabled()
        sim.apply("TruncateToEpochEndOffset", (3, 0))  # epoch 0 ends at 1 in 2's log: nothing to cut
        assert state(sim, 3) == "fetching" and ids(sim, 3) == [1] and epochs(sim, 3) == [(0, 0)]
    deliver_all(sim, 2)
    run(sim, [("Crash", (2,)), ("ProcessBrokerChange", (1,))])
    deliver_all(sim, 3)
    assert sim.leader_of(0) == 3 and sim.broker(3).leads(0)
    lost = sim.acked[0] - set(ids(sim, 3))
    assert lost == ({1} if generation == "high-watermark" else set())


WALK_BACK = [  # 2 leads epoch 1 (record 2), 3 leads epoch 2 (record 3), 2 leads again (unclean) in epoch 4
    ("Produce", (1, 0)), ("Fetch", (2, 0)), ("Fetch", (3, 0)), ("Fetch", (2, 0)), ("Fetch", (3, 0)),
    ("Crash", (1,)), ("ProcessBrokerChange", (1,)), ("DeliverRequest", (2,)), ("Produce", (2, 0)),
    ("Crash", (2,)), ("ProcessBrokerChange", (1,)), ("DeliverRequest", (3,)), ("DeliverRequest", (3,)),
    ("Produce", (3, 0)), ("Crash", (3,)), ("ProcessBrokerChange", (1,)), ("Restart", (2,)),
    ("ProcessBrokerChange", (1,)), ("DeliverRequest", (2,)), ("DeliverRequest", (2,)), ("DeliverRequest", (2,)),
    ("Restart", (3,)), ("ProcessBrokerChange", (1,)), ("DeliverRequest", (3,)), ("DeliverRequest", (3,))]


@pytest.mark.parametrize("generation", LEADER_EPOCHS)
def test_a_follower_walks_back_epoch_by_epoch_from_kip_279_on(generation):
    sim = three(generation, unclean_leader_election=True, faults={"crashes": 3})
    run(sim, WALK_BACK)
    assert sim.leader_of(0) == 2 and ids(sim, 2) == [1, 2] and epochs(sim, 2) == [(0, 0), (1, 1), (4, 2)]
    assert ids(sim, 3) == [1, 3] and epochs(sim, 3) == [(0, 0), (2, 1)] and state(sim, 3) == "ask-epoch-end"
    sim.apply("OffsetsForLeaderEpoch", (3, 0))  # about epoch 2, which 2 never had
    sim.apply("TruncateToEpochEndOffset", (3, 0))
    if generation == "kip-101":
        # the answer is where 2's next epoch (4) starts: 2, beyond record 3, which 3 keeps
        assert ids(sim, 3) == [1, 3] and state(sim, 3) == "fetching"
        sim.apply("Fetch", (3, 0))
        assert ids(sim, 3) == [1, 3] and 3 in sim.isr_of(0)  # diverged, and in sync
    else:
        # 2 answers (1, 2); 3 knows no epoch 1: it cuts to the end of its epoch 0 and asks again
        assert ids(sim, 3) == [1] and epochs(sim, 3) == [(0, 0)] and state(sim, 3) == "ask-epoch-end"
        sim.apply("OffsetsForLeaderEpoch", (3, 0))  # about epoch 0: (0, 1), agreed
        sim.apply("TruncateToEpochEndOffset", (3, 0))
        assert ids(sim, 3) == [1] and state(sim, 3) == "fetching"
        sim.apply("Fetch", (3, 0))
        assert ids(sim, 3) == [1, 2] and epochs(sim, 3) == [(0, 0), (1, 1)]


# specs/10-weaknesses.md, "A lossy crash lets a diverged follower back into the ISR": 2 fetches record 1
# from leader 1, which loses it in a lossy crash and leads again in epoch 3 with record 2 at offset 0
LOSSY_HEAD = [("Produce", (1, 0)), ("Crash", (2,)), ("ProcessBrokerChange", (1,)), ("Restart", (2,)),
              ("ProcessBrokerChange", (1,)), ("DeliverRequest", (2,)), ("DeliverRequest", (2,))]
LOSSY_TAIL = [("LossyCrash", (1, (0,))), ("ProcessBrokerChange", (1,)), ("Restart", (1,)),
              ("ProcessBrokerChange", (1,)), ("DeliverRequest", (1,)), ("DeliverRequest", (1,)),
              ("DeliverRequest", (1,)), ("Produce", (1, 0))]


@pytest.mark.parametrize("generation", GENERATIONS)
def test_a_fetch_with_a_stale_leader_epoch_is_fenced_only_under_kip_320(generation):
    sim = Simulator({"brokers": 2, "max_records": 2, "generation": generation,
                     "faults": {"lossy_crashes": 1, "crashes": 1}})
    run(sim, LOSSY_HEAD)  # 2 follows 1 in epoch 1; 1 has not applied epoch 1 yet
    if generation != "kip-320":
        run(sim, [("Fetch", (2, 0))] + LOSSY_TAIL)  # the gallery's 17 steps
    else:
        with pytest.raises(NotEnabled, match="fenced"):  # 2 is ahead of its leader: UnknownLeaderEpoch
            sim.apply("Fetch", (2, 0))
        # once 1 applies epoch 1 (which starts at its LEO, 1), 2 fetches record 1 but, short of the
        # epoch's start at its fetch offset 0, does not join the ISR (KAFKA-7128)
        run(sim, [("DeliverRequest", (1,)), ("Fetch", (2, 0))] + LOSSY_TAIL)
    assert sim.isr_of(0) == (1,)
    leader, follower = sim.broker(1).replicas[0], sim.broker(2).replicas[0]
    assert (leader.leader_epoch, follower.leader_epoch) == (3, 1)  # 2 has not heard of epochs 2 and 3
    assert ids(sim, 1) == [2] and ids(sim, 2) == [1]
    if generation != "kip-320":
        sim.apply("Fetch", (2, 0))  # step 17: 2 rejoins the ISR with record 1 where 1 has record 2
        assert sim.isr_of(0) == (1, 2) and ids(sim, 2) == [1] and replica(sim.observe(), 2)["hw"] == 1
        return
    assert ("Fetch", (2, 0)) not in sim.enabled()
    with pytest.raises(NotEnabled, match="fenced"):
        sim.apply("Fetch", (2, 0))
    # the same requests reaching the leader's core are answered with errors and change nothing
    out = sim.broker(1).handle(Receive(("broker", 2), FetchRequest(0, 2, 1, 1)))
    assert out == [Send(("broker", 2), FetchResponse(0, 1, 1, "FencedLeaderEpoch", leader_epoch=1))]
    out = sim.broker(1).handle(Receive(("broker", 2), FetchRequest(0, 2, 1, 4)))
    assert out[0].msg.error == "UnknownLeaderEpoch"
    out = sim.broker(1).handle(Receive(("broker", 2), OffsetsForLeaderEpochRequest(0, 2, 0, 1)))
    assert out[0].msg.error == "FencedLeaderEpoch" and out[0].msg.end_offset == -1
    assert sim.isr_of(0) == (1,)
    # once 2 applies epoch 3 (same leader), it reconciles: record 1 is cut, record 2 fetched
    deliver_all(sim, 2)
    assert state(sim, 2) == "ask-epoch-end"
    sim.settle()
    assert ids(sim, 2) == [2] and sim.isr_of(0) == (1, 2)


# follower 3 crashes: the controller takes it out of the ISR with a new leader epoch, leader 1 staying
FOLLOWER_CRASH = [("Produce", (1, 0)), ("Fetch", (2, 0)), ("Fetch", (3, 0)), ("Fetch", (2, 0)), ("Fetch", (3, 0)),
                  ("Crash", (3,)), ("ProcessBrokerChange", (1,))]


@pytest.mark.parametrize("generation", GENERATIONS)
def test_an_isr_removal_is_told_to_the_leader_only_under_high_watermark(generation):
    """specs/02-state-machines.md: after taking a replica out of the ISR the controller tells the leader
    (0.8), and from kip-101 on every remaining replica of the assignment."""
    sim = three(generation, faults={"crashes": 1})
    run(sim, FOLLOWER_CRASH)
    assert sim.isr_of(0) == (1, 2) and sim.leader_of(0) == 1
    told = {b for b in (1, 2, 3) for item in sim.inbox[b] if isinstance(item.msg, LeaderAndIsr)}
    assert told == ({1} if generation == "high-watermark" else {1, 2})
    deliver_all(sim, 1, 2)
    assert sim.broker(2).replicas[0].leader_epoch == (0 if generation == "high-watermark" else 1)


@pytest.mark.parametrize("generation", GENERATIONS)
def test_an_epoch_change_with_the_same_leader_starts_a_reconciliation_only_under_kip_320(generation):
    sim = three(generation, faults={"crashes": 1})
    run(sim, FOLLOWER_CRASH)
    deliver_all(sim, 1, 2)
    r = sim.broker(2).replicas[0]
    assert (r.leader, sim.leader_of(0)) == (1, 1)
    if generation == "kip-320":
        assert state(sim, 2) == "ask-epoch-end"  # same leader, new epoch (KAFKA-7164)
        sim.apply("OffsetsForLeaderEpoch", (2, 0))  # about epoch 0, which ends at 1 on the leader
        sim.apply("TruncateToEpochEndOffset", (2, 0))
    assert state(sim, 2) == "fetching" and ids(sim, 2) == [1]
    sim.apply("Produce", (1, 0))
    sim.apply("Fetch", (2, 0))
    assert sim.isr_of(0) == (1, 2) and ids(sim, 2) == [1, 2]


def test_kip_320_a_follower_keeps_fetching_after_the_other_follower_crashes_and_returns():
    """Without the LeaderAndIsr of the ISR removal, follower 2 would stay on epoch 0 while its leader
    moved to epoch 1, and every fetch of it would be fenced (FencedLeaderEpoch) for good."""
    sim = three("kip-320", faults={"crashes": 1})
    run(sim, FOLLOWER_CRASH)
    deliver_all(sim, 1)
    assert ("Fetch", (2, 0)) not in sim.enabled()  # fenced until its own LeaderAndIsr arrives ...
    deliver_all(sim, 2)  # ... which it gets: it reconciles and fetches in epoch 1
    sim.settle()
    assert sim.broker(2).replicas[0].leader_epoch == sim.broker(1).replicas[0].leader_epoch == 1
    run(sim, [("Produce", (1, 0)), ("Fetch", (2, 0)), ("Restart", (3,)), ("ProcessBrokerChange", (1,))])
    sim.settle()
    assert sim.isr_of(0) == (1, 2, 3) and ids(sim, 1) == ids(sim, 2) == ids(sim, 3) == [1, 2]
    assert ("Fetch", (2, 0)) in sim.enabled() and ("Fetch", (3, 0)) in sim.enabled()
    sim.apply("Produce", (1, 0))
    sim.settle()
    assert ids(sim, 2) == ids(sim, 3) == [1, 2, 3] and replica(sim.observe(), 1)["hw"] == 3


def test_autonomous_kip_320_follower_crash_and_restart_keep_the_other_follower_in_sync():
    s = AutoSimulator({"brokers": 3, "replica_lag_time_max_ms": 300, "generation": "kip-320"}, seed=5)
    for _ in range(3):
        s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 3, 1_000)
    leader = s.leader_of(0)
    a, b = (x for x in (1, 2, 3) if x != leader)
    fenced: list[FetchResponse] = []
    s.add_filter(lambda src, dst, msg: fenced.append(msg) if isinstance(msg, FetchResponse) and src == ("broker", leader)
                 and dst == ("broker", a) and msg.error == "FencedLeaderEpoch" else None)
    s.crash(b)
    assert s.run_until(lambda s: s.isr_of(0) == tuple(sorted((leader, a))), 3_000)
    s.run_for(1_000)  # several lag periods: follower a must not fall out
    assert s.isr_of(0) == tuple(sorted((leader, a)))
    assert s.brokers[a].core.replicas[0].leader_epoch == s.brokers[leader].core.replicas[0].leader_epoch
    for _ in range(3):
        s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 6 and s.log_ids(a, 0) == s.log_ids(leader, 0), 2_000)
    s.restart(b)
    assert s.run_until(lambda s: s.isr_of(0) == (1, 2, 3), 3_000)
    s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 7 and all(s.log_ids(x, 0) == s.log_ids(leader, 0)
                                                              for x in (1, 2, 3)), 2_000)
    assert s.isr_of(0) == (1, 2, 3) and s.leader_of(0) == leader
    validate(s.observe())


@pytest.mark.parametrize("generation, kept", [("kip-101", True), ("kip-279", True), ("kip-320", False)])
def test_a_held_answer_survives_a_same_leader_epoch_change_only_before_kip_320(generation, kept):
    sim = three(generation, faults={"crashes": 2})
    run(sim, ONE_CRASH)  # 2 leads epoch 1; 3 follows it and must reconcile
    deliver_all(sim, 2)
    sim.apply("OffsetsForLeaderEpoch", (3, 0))
    assert state(sim, 3) == "truncate-pending"
    # 1 comes back, rejoins the ISR and crashes again: its removal gives 2 and 3 epoch 2, same leader
    run(sim, [("Restart", (1,)), ("ProcessBrokerChange", (1,))])
    deliver_all(sim, 1)
    run(sim, [("OffsetsForLeaderEpoch", (1, 0)), ("TruncateToEpochEndOffset", (1, 0)), ("Fetch", (1, 0))])
    assert sim.isr_of(0) == (1, 2, 3)
    run(sim, [("Crash", (1,)), ("ProcessBrokerChange", (1,))])
    deliver_all(sim, 2, 3)
    r = sim.broker(3).replicas[0]
    assert (r.leader, r.leader_epoch) == (2, 2)
    assert state(sim, 3) == ("truncate-pending" if kept else "ask-epoch-end")
    assert (r.answer is not None) == kept
    sim.settle()
    assert ids(sim, 3) == ids(sim, 2) == [1] and sim.isr_of(0) == (2, 3)


def test_kafka_7128_a_follower_joins_the_isr_only_past_the_start_of_the_leaders_epoch():
    """A leader that took over epoch 3 at LEO 2 with its HW at 0; follower 3 fetches from offset 0."""
    for generation, joins in (("kip-279", True), ("kip-320", False)):
        cfg = from_mapping({"brokers": 3, "generation": generation})
        core = BrokerCore.recover(cfg, 1, DiskImage({0: [Record(1, 0), Record(2, 0)]}, {0: 0}, {0: [(0, 0)]}))
        core.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 2), 3, 5, (1, 2, 3))))
        assert core.replicas[0].epochs == [(0, 0), (3, 2)] and core.replicas[0].hw == 0
        out = core.handle(Receive(("broker", 3), FetchRequest(0, 3, 0, 3)))
        assert any(isinstance(e, StoreOp) for e in out) == joins  # the conditional ISR write
        if not joins:
            assert [e.msg.records for e in out if isinstance(e, Send)] == [(Record(1, 0), Record(2, 0))]
            out = core.handle(Receive(("broker", 3), FetchRequest(0, 3, 2, 3)))
            assert any(isinstance(e, StoreOp) for e in out)  # now at the epoch's start: it may join


def test_acks_1_answers_on_append_even_below_min_insync_replicas_and_counts_the_write_at_commit():
    sim = Simulator({"brokers": 3, "max_records": 3, "min_insync_replicas": 3, "acks": "1",
                     "faults": {"isr_shrinks": 1, "crashes": 1}})
    sim.apply("ShrinkIsr", (1, 0, 3))
    assert ("Produce", (1, 0)) in sim.enabled()  # acks=1 ignores min_insync_replicas
    sim.apply("Produce", (1, 0))
    # the producer has its answer, but the write is not acknowledged in the history's sense until it commits
    assert sim.answered[0] == {1} and sim.acked[0] == set() and replica(sim.observe(), 1)["hw"] == 0
    sim.apply("Fetch", (2, 0))  # 2 gets record 1; the leader learns of it at the next fetch
    assert replica(sim.observe(), 1)["hw"] == 0 and sim.acked[0] == set()
    sim.apply("Fetch", (2, 0))
    assert replica(sim.observe(), 1)["hw"] == 1 and sim.acked[0] == {1} and not sim.refused[0]
    # acks=all with the same ISR refuses the write (the step is not taken by the scheduler)
    strict = Simulator({"brokers": 3, "max_records": 3, "min_insync_replicas": 3, "faults": {"isr_shrinks": 1}})
    strict.apply("ShrinkIsr", (1, 0, 3))
    assert ("Produce", (1, 0)) not in strict.enabled()
    # an acks=1 write the leader takes with it when it crashes is lost, but it was never committed:
    # the producer was answered, the history does not count it
    sim.apply("Produce", (1, 0))
    assert sim.answered[0] == {1, 2} and sim.acked[0] == {1}
    run(sim, [("Crash", (1,)), ("ProcessBrokerChange", (1,))])
    assert sim.leader_of(0) == 2 and 2 not in ids(sim, 2)
    deliver_all(sim, 2)
    sim.settle()
    assert sim.acked[0] == {1} and set(ids(sim, 2)) >= sim.acked[0]


def test_acks_1_a_write_committed_by_a_later_leader_is_not_counted():
    """The history counts an acks=1 write only when the leader that appended it commits it."""
    sim = Simulator({"brokers": 2, "max_records": 2, "acks": "1", "generation": "kip-320",
                     "faults": {"crashes": 1}})
    run(sim, [("Produce", (1, 0)), ("Fetch", (2, 0)), ("Crash", (1,)), ("ProcessBrokerChange", (1,))])
    deliver_all(sim, 2)  # 2 leads with record 1 in its log; its new epoch's HW passes it at once
    assert sim.leader_of(0) == 2 and ids(sim, 2) == [1] and replica(sim.observe(), 2)["hw"] == 1
    assert sim.answered[0] == {1} and sim.acked[0] == set()


def test_acks_1_reports_commits_as_an_effect_of_the_core_and_still_answers_at_append():
    from isrcheck.impl.core.messages import Committed, ProduceRequest, ProduceResponse

    cfg = from_mapping({"brokers": 2, "acks": "1"})
    core = BrokerCore.recover(cfg, 1, DiskImage({0: []}, {0: 0}, {0: []}))
    core.handle(Receive(("controller", 1), LeaderAndIsr(1, 0, 1, (1, 2), 0, 1, (1, 2))))
    out = core.handle(Receive(("client", "p"), ProduceRequest(1, 0, 7, "x", "1")))
    assert [e.msg for e in out if isinstance(e, Send)] == [ProduceResponse(1, 0, "", 0)]
    assert not [e for e in out if isinstance(e, Committed)]
    core.handle(Receive(("broker", 2), FetchRequest(0, 2, 0)))
    out = core.handle(Receive(("broker", 2), FetchRequest(0, 2, 1)))
    assert [e for e in out if isinstance(e, Committed)] == [Committed(0, (7,))]
    assert not [e for e in out if isinstance(e, Send) and isinstance(e.msg, ProduceResponse)]


# ==================================================================================== disks and restarts
@pytest.mark.parametrize("generation", LEADER_EPOCHS)
def test_the_cache_is_on_disk_and_a_crash_cuts_it_to_the_surviving_log(generation):
    sim = Simulator({"brokers": 2, "max_records": 3, "generation": generation, "faults": {"crashes": 1}})
    run(sim, [("Produce", (1, 0)), ("Fetch", (2, 0)), ("Crash", (2,)), ("ProcessBrokerChange", (1,)),
              ("DeliverRequest", (1,)), ("Produce", (1, 0))])
    assert epochs(sim, 1) == [(0, 0), (1, 1)]
    assert sim.disks[1].epochs_on_disk(0) == ((0, 0), (1, 1))
    assert epochs(sim, 2) == [(0, 0)] and replica(sim.observe(), 2)["fetch_state"] == "fetching"
    sim.apply("Restart", (2,))
    sim.apply("ProcessBrokerChange", (1,))
    sim.settle()
    assert epochs(sim, 2) == [(0, 0), (1, 1)]
    assert epochs(sim, 1)[-1][0] >= 1
    # a lossy crash cuts the cache with the log (the file is cut when the broker starts again)
    sim.apply("LossyCrash", (1, (1,)))
    assert epochs(sim, 1) == [(0, 0)]  # a stopped broker shows what a restart keeps
    validate(sim.observe())
    core = BrokerCore.recover(sim.cfg, 1, sim.disks[1].image())
    assert core.replicas[0].epochs == [(0, 0)] and core.replicas[0].fetch_state == "fetching"
    out = core.handle(Command("Start"))
    assert Persist("epochs", 0, ((0, 0),)) in out


def test_a_whole_crash_forgets_the_epoch_a_leader_took_over_without_records():
    sim = Simulator({"brokers": 2, "max_records": 2, "generation": "kip-320", "faults": {"crashes": 2}})
    run(sim, [("Produce", (1, 0)), ("Fetch", (2, 0)), ("Crash", (1,)), ("ProcessBrokerChange", (1,))])
    deliver_all(sim, 2)
    assert epochs(sim, 2) == [(0, 0), (1, 1)]
    sim.apply("Crash", (2,))
    assert epochs(sim, 2) == [(0, 0)]


def test_the_file_disk_keeps_a_kafka_style_leader_epoch_checkpoint(tmp_path):
    disk = FileDisk(tmp_path)
    disk.apply(Persist("create", 0))
    disk.apply(Persist("append", 0, (Record(1, 0), Record(2, 3), Record(3, 3))))
    disk.apply(Persist("epochs", 0, ((0, 0), (3, 1), (5, 3))))
    text = (tmp_path / "0" / EPOCH_FILE).read_text()  # Kafka's lines, with a format version and a checksum
    assert text.startswith("1\n3\n0 0\n3 1\n5 3\ncrc32c ")
    assert text.encode() == encode_checkpoint([(0, 0), (3, 1), (5, 3)])
    disk.close()
    image = FileDisk(tmp_path).image()
    assert image.epochs == {0: [(0, 0), (3, 1), (5, 3)]}
    core = BrokerCore.recover(from_mapping({"generation": "kip-101"}), 1, image)
    assert core.replicas[0].epochs == [(0, 0), (3, 1)]  # (5, 3) starts at the LEO: dropped
    # under high-watermark the file, if any, is ignored
    assert BrokerCore.recover(from_mapping({}), 1, image).replicas[0].epochs == []
    sim = SimDisk()
    sim.apply(Persist("create", 1))
    sim.apply(Persist("epochs", 1, ((2, 0),)))
    sim.apply(Persist("delete", 1))
    assert sim.image().epochs == {}


# ==================================================================================== scheduled runs
@pytest.mark.parametrize("generation", LEADER_EPOCHS)
def test_scheduled_runs_are_deterministic_and_well_formed(generation):
    cfg = {"brokers": 3, "max_records": 3, "generation": generation,
           "faults": {"crashes": 2, "lossy_crashes": 1, "isr_shrinks": 1, "controller_failovers": 1}}
    seen: set[str] = set()
    for seed in range(12):
        a, b = Simulator(cfg, seed=seed), Simulator(cfg, seed=seed)
        for _ in range(60):
            step = a.step()
            assert step == b.step()
            if step is None:
                break
            seen.add(step[0])
            obs = a.observe()
            validate(obs)
            for r in obs["replicas"]:
                es = [(e["epoch"], e["start_offset"]) for e in r["epochs"]]
                assert all(x[0] < y[0] and x[1] <= y[1] for x, y in zip(es, es[1:]))
                assert all(s <= r["leo"] for _, s in es)
                if r["role"] == "leader":
                    assert r["fetch_state"] == "fetching"
        assert a.events == b.events
    assert {"OffsetsForLeaderEpoch", "TruncateToEpochEndOffset"} <= seen


# ==================================================================================== autonomous
def _hw_loss_run(generation):
    """Broker 3's fetch responses carrying the new HW are lost, so its HW stays 0 after the write
    commits; the leader crashes, 2 takes over, and 3 cannot reach 2 before 2 crashes too."""
    s = AutoSimulator({"brokers": 3, "replica_lag_time_max_ms": 2_000, "generation": generation}, seed=11)
    phase = {"n": 1}

    def lossy(src, dst, msg):
        if phase["n"] == 1 and dst == ("broker", 3) and isinstance(msg, FetchResponse) and msg.hw >= 1:
            return "drop"
        if phase["n"] == 2 and src == ("broker", 3) and dst == ("broker", 2):
            return "drop"
        return None

    s.add_filter(lossy)
    s.produce(0)
    assert s.run_until(lambda s: s.acked[0] == [1] and s.log_ids(3, 0) == [1], 1_000)
    s.run_for(50)
    assert s.brokers[3].core.replicas[0].hw == 0
    phase["n"] = 2
    s.crash(1)
    assert s.run_until(lambda s: s.leader_of(0) == 2 and s.brokers[3].core.replicas[0].leader == 2, 2_000)
    s.run_for(20)
    s.crash(2)
    assert s.run_until(lambda s: s.leader_of(0) == 3 and s.brokers[3].core.leads(0), 2_000)
    validate(s.observe())
    return s


@pytest.mark.parametrize("generation", GENERATIONS)
def test_autonomous_hw_truncation_loss_only_under_high_watermark(generation):
    s = _hw_loss_run(generation)
    assert s.log_ids(3, 0) == ([] if generation == "high-watermark" else [1])


def test_autonomous_kip_320_fences_a_follower_until_its_leader_and_isr_arrives():
    """A reassignment's step 2 raises the leader epoch with the same leader; broker 3 hears of it late."""
    from isrcheck.impl.core import layout as L

    s = AutoSimulator({"brokers": 4, "replica_lag_time_max_ms": 5_000, "generation": "kip-320",
                       "assignment": [[1, 2, 3]]}, seed=12)
    for _ in range(3):
        s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 3, 1_000)
    held = {"on": True}
    s.add_filter(lambda src, dst, msg: 300 if held["on"] and dst == ("broker", 3)
                 and isinstance(msg, LeaderAndIsr) else None)
    fenced: list[FetchResponse] = []
    s.add_filter(lambda src, dst, msg: fenced.append(msg) if isinstance(msg, FetchResponse)
                 and msg.error == "FencedLeaderEpoch" else None)
    L.request_reassignment(s.admin, s.cfg.topic, 0, (1, 2, 3, 4))
    assert s.run_until(lambda s: s.brokers[1].core.replicas[0].leader_epoch >= 1, 1_000)
    held["on"] = False  # (what is already on its way still arrives late)
    s.run_for(100)
    assert fenced and s.brokers[3].core.replicas[0].leader_epoch == 0
    assert s.log_ids(3, 0) == s.log_ids(1, 0) and len(s.log_ids(3, 0)) == 3
    # it applies the new epoch, with the same leader, and reconciles before it fetches again
    assert s.run_until(lambda s: any("OffsetsForLeaderEpochRequest(partition=0, follower=3" in e for e in s.events),
                       1_000)
    assert s.brokers[3].core.replicas[0].leader_epoch >= 1
    assert s.run_until(lambda s: s.snapshot().part(0).replicas == (1, 2, 3, 4) and not s.snapshot().reassign,
                       5_000)
    s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 4 and all(s.log_ids(b, 0) == s.log_ids(1, 0)
                                                              for b in (2, 3, 4)), 2_000)
    validate(s.observe())


@pytest.mark.parametrize("generation", LEADER_EPOCHS)
def test_autonomous_leader_crash_and_restart_reconcile(generation):
    s = AutoSimulator({"brokers": 3, "replica_lag_time_max_ms": 300, "generation": generation}, seed=3)
    for _ in range(10):
        s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 10, 2_000)
    s.crash(1)
    assert s.run_until(lambda s: s.leader_of(0) not in (0, 1), 3_000)
    for _ in range(5):
        s.produce(0)
    assert s.run_until(lambda s: len(s.acked[0]) == 15, 3_000)
    s.restart(1)
    assert s.run_until(lambda s: 1 in s.isr_of(0), 3_000)
    leader = s.leader_of(0)
    assert s.log_ids(1, 0) == s.log_ids(leader, 0) and set(s.acked[0]) <= set(s.log_ids(1, 0))
    obs = s.observe()
    validate(obs)
    assert replica(obs, 1)["epochs"] == replica(obs, leader)["epochs"]


# ==================================================================================== real processes
@pytest.mark.cluster
def test_a_kip_320_cluster_of_real_processes_reconciles_after_a_sigkill(tmp_path):
    import signal

    from isrcheck.impl.process.cluster import LocalCluster

    c = LocalCluster(tmp_path / "cluster", brokers=3, controllers=1, session_timeout=2.0,
                     config={"replica_lag_time_max_ms": 1000, "fetch_interval_ms": 5, "controller_recheck_ms": 100,
                             "generation": "kip-320", "fenced_controller_writes": True})
    try:
        c.up(wait=30)
        k = c.client()
        k.create_topic(1, 3)
        c.wait_for(lambda k: k.leader(0) and len(k.snapshot().part(0).state.isr) == 3, 20, "the topic in sync")
        acked = [k.produce(0, f"a{i}", timeout=10)[1] for i in range(10)]
        old = k.leader(0)
        c.kill(f"broker-{old}", signal.SIGKILL)
        c.wait_for(lambda k: k.leader(0) not in (0, old), 20, "a new leader")
        acked += [k.produce(0, f"b{i}", timeout=10)[1] for i in range(5)]
        c.start_broker(old)
        c.wait_for(lambda k: old in k.snapshot().part(0).state.isr, 30, "the old leader back in the ISR")
        got = [r.id for r in k.consume(0, 0, timeout=10)]
        assert set(acked) <= set(got) and len(got) == len(set(got))
        state = k.snapshot().part(0).state
        k.close()
        # read while the cluster runs (stopping it kills the brokers one by one, and the controller
        # keeps electing new leaders meanwhile)
        caches = {b: (tmp_path / "cluster" / f"data-{b}" / "0" / EPOCH_FILE).read_text() for b in (1, 2, 3)}
    finally:
        c.down()
    # Kafka's lines (impl/disk/checkpoint_format.py); epoch 0 from offset 0, and the new leader's epoch from offset 10
    # (after the records of epoch 0) on every broker: the leader took over there, the others fetched from it
    expected = encode_checkpoint([(0, 0), (state.leader_epoch, 10)]).decode()
    assert state.leader_epoch >= 1 and caches == {1: expected, 2: expected, 3: expected}
