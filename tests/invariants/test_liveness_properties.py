"""Kafka's liveness properties (invariants/liveness.py) under weak fairness of the healing actions.

The known answers: the fairness of ResignController is what makes a deposed controller stop; the 0.8
bounce (an undetected quick restart) leaves a partition unled forever; a reassignment whose target
broker may never return never finishes. Every lasso found is checked against the model itself: each
step is enabled and leads to the next state, the loop closes (or nothing fair can happen at the last
state), the loop is weakly fair, and the goal never holds from the premise on. Then the masks of each
property on hand-picked states, which properties apply to which configuration, the ``unfair``
configuration key and ``KafkaModel.fair_key``.
"""
from __future__ import annotations

import dataclasses

import pytest

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants import liveness as live
from isrcheck.model.actions import Action
from isrcheck.model.config import ConfigError, from_mapping
from isrcheck.engine.core import ModelFault
from isrcheck.model.state import NO_LEADER
from isrcheck.specs.actions import fair_actions

from shared import M


def entry_config(name):
    return manifest.get(name).config


def verdict(result, name):
    (v,) = [v for v in result.verdicts if v.property == name]
    return v


def _successor(model, s, a):
    try:
        return model.next_state(s, a)
    except ModelFault:
        return None


def assert_valid_lasso(cfg, v):
    """``v`` (a broken verdict) is a real counterexample of ``cfg``'s model under weak fairness."""
    assert v.holds is False and v.violation is not None and v.lasso is not None
    model = build_model(cfg, symmetry=False, properties=[])
    trace, loop = v.violation.trace, v.violation.loop
    assert v.violation.kind == "liveness"
    assert loop == v.lasso.loop and 0 <= loop <= v.violation.length
    assert trace[0].action is None and trace[0].state in model.init_states()
    for prev, step in zip(trace, trace[1:]):
        assert step.action in model.actions(prev.state), step.action
        assert model.next_state(prev.state, step.action) == step.state
    # the goal never holds from the premise on, and the premise holds where the lasso says
    prop = live.liveness_property(v.property, cfg)
    bit = prop.instances.index(v.lasso.instance)
    premise, _ = prop.masks(trace[v.lasso.premise_at].state)
    assert premise >> bit & 1
    for st in trace[v.lasso.premise_at:]:
        assert not prop.masks(st.state)[1] >> bit & 1
    last = trace[-1].state
    if loop == len(trace) - 1:
        # it stutters: no fair action can change the last state
        for a in model.actions(last):
            if model.fair_key(a) is not None:
                assert _successor(model, last, a) in (None, last), f"{a} is fair and enabled at the last state"
    else:
        assert trace[loop].state == last
        cycle = [st.state for st in trace[loop:-1]]

        def fair_enabled(s):
            return {model.fair_key(a) for a in model.actions(s)
                    if model.fair_key(a) is not None and _successor(model, s, a) not in (None, s)}

        always = set.intersection(*(fair_enabled(s) for s in cycle))
        taken = {model.fair_key(st.action) for st in trace[loop + 1:]}
        assert always <= taken, f"the loop never takes {always - taken}"
    return prop, bit


# ---------------------------------------------------------------------------- DeposedControllerStops
@pytest.fixture(scope="module")
def failover_cfg():
    return entry_config("controller-failover")


def test_deposed_controller_stops_with_fairness_of_ResignController(failover_cfg):
    assert "ResignController" in fair_actions()
    res = live.check(failover_cfg, ["DeposedControllerStops"])
    assert res.complete
    assert [(v.property, v.holds) for v in res.verdicts] == [("DeposedControllerStops", True)]
    assert any("ResignController" in f for f in res.fairness)


@pytest.mark.parametrize("how", ["replace", "mapping"])
def test_deposed_controller_never_stops_without_fairness_of_ResignController(failover_cfg, how):
    if how == "replace":
        cfg = dataclasses.replace(failover_cfg, unfair=("ResignController",))
    else:
        raw = dict(manifest.get("controller-failover").raw_config)
        cfg = from_mapping({**raw, "unfair": ["ResignController"]})
    assert cfg.unfair == ("ResignController",)
    res = live.check(cfg, ["DeposedControllerStops"])
    v = verdict(res, "DeposedControllerStops")
    assert v.holds is False
    assert v.lasso.instance == "the deposed controller"
    assert_valid_lasso(cfg, v)
    trace = v.violation.trace
    (failover,) = [i for i, st in enumerate(trace) if st.action is not None and st.action.name == "ControllerFailover"]
    # a stale controller is there in every state from the failover (where the premise first holds)
    # on, and it never resigns
    assert trace[failover - 1].state.stale is None
    assert failover <= v.lasso.premise_at
    assert all(st.state.stale is not None for st in trace[failover:])
    assert all(st.action.name != "ResignController" for st in trace[failover + 1:])
    # resigning is possible at the end: only the missing fairness lets the behaviour wait forever
    model = build_model(cfg, symmetry=False, properties=[])
    last = trace[-1].state
    resign = [a for a in model.actions(last) if a.name == "ResignController"]
    assert resign and all(model.fair_key(a) is None for a in resign)
    assert any("not assumed for ResignController" in f for f in res.fairness)


def test_deposed_controller_stops_without_fairness_of_ResignController_for_another_epoch(failover_cfg):
    """Dropping the fairness of one instance only: the stale controller has epoch 1, not 2."""
    cfg = dataclasses.replace(failover_cfg, unfair=("ResignController(2)",))
    assert verdict(live.check(cfg, ["DeposedControllerStops"]), "DeposedControllerStops").holds is True
    cfg = dataclasses.replace(failover_cfg, unfair=("ResignController(1)",))
    assert verdict(live.check(cfg, ["DeposedControllerStops"]), "DeposedControllerStops").holds is False


# ---------------------------------------------------------------------------- the 0.8 bounce
@pytest.fixture(scope="module")
def bounce():
    cfg = entry_config("undetected-restart")
    return cfg, live.check(cfg)


def test_undetected_restart_leaves_the_partition_unled(bounce):
    cfg, res = bounce
    assert res.complete
    v = verdict(res, "PartitionEventuallyLed")
    assert v.holds is False
    assert_valid_lasso(cfg, v)
    trace = v.violation.trace
    restarts = [st.action for st in trace[1:] if st.action.name == "QuickRestart"]
    assert len(restarts) == 1
    (b,) = restarts[0].args
    last = trace[-1].state
    br = last.brokers[b - 1]
    assert br.alive
    assert br.replicas[0] is not None and br.replicas[0].leader == NO_LEADER  # alive, with no role
    assert last.zk.partitions[0].leader == b  # ZooKeeper still names it the leader
    assert last.zk.live >> b & 1 and last.controller.live >> b & 1  # nobody noticed the bounce
    assert v.violation.loop == v.violation.length  # it stutters: nothing fair is left to do


def test_undetected_restart_breaks_what_the_manifest_pins(bounce):
    _, res = bounce
    pinned = {x.property: x for x in manifest.get("undetected-restart").liveness}
    assert set(pinned) == {v.property for v in res.verdicts}
    for v in res.verdicts:
        assert v.holds is False
        assert (v.violation.length, v.violation.loop) == (pinned[v.property].length, pinned[v.property].loop)
    assert_valid_lasso(bounce[0], verdict(res, "IsrHeals"))
    assert_valid_lasso(bounce[0], verdict(res, "WriteEventuallyCommitted"))


def test_detecting_restarts_heals_the_bounce(bounce):
    cfg = dataclasses.replace(bounce[0], detect_restarts=True)
    res = live.check(cfg)
    assert res.complete
    assert [(v.property, v.holds) for v in res.verdicts] == [
        ("PartitionEventuallyLed", True), ("IsrHeals", True), ("WriteEventuallyCommitted", True)]


# ---------------------------------------------------------------------------- a target that never returns
def test_reassignment_target_that_never_returns():
    cfg = entry_config("reassignment-target-never-returns")
    assert cfg.unfair == ("Restart(3)",)
    v = verdict(live.check(cfg, ["ReassignmentCompletes"]), "ReassignmentCompletes")
    assert v.holds is False
    assert v.lasso.instance == "partition 0"
    assert_valid_lasso(cfg, v)
    last = v.violation.trace[-1].state
    assert not last.brokers[2].alive
    assert last.zk.reassign[0] == (2, 3)
    # broker 3 could come back: only its missing fairness lets the behaviour wait
    model = build_model(cfg, symmetry=False, properties=[])
    assert Action("Restart", (3,)) in model.actions(last)
    assert model.fair_key(Action("Restart", (3,))) is None


@pytest.fixture(scope="module")
def crash_cfg():
    return entry_config("reassignment-broker-crash")


def test_reassignment_with_every_restart_unfair_is_broken(crash_cfg):
    cfg = dataclasses.replace(crash_cfg, unfair=("Restart",))
    v = verdict(live.check(cfg, ["ReassignmentCompletes"]), "ReassignmentCompletes")
    assert v.holds is False
    assert_valid_lasso(cfg, v)
    last = v.violation.trace[-1].state
    assert last.zk.reassign[0] and not all(br.alive for br in last.brokers)


def test_reassignment_completes_when_restarts_are_fair(crash_cfg):
    assert crash_cfg.unfair == ()
    assert verdict(live.check(crash_cfg, ["ReassignmentCompletes"]), "ReassignmentCompletes").holds is True


def test_reassignment_completes_when_only_a_broker_outside_the_target_may_stay_down(crash_cfg):
    cfg = dataclasses.replace(crash_cfg, unfair=("Restart(1)",))
    assert verdict(live.check(cfg, ["ReassignmentCompletes"]), "ReassignmentCompletes").holds is True


# ---------------------------------------------------------------------------- masks on hand-picked states
def masks(name, cfg, s):
    return live.liveness_property(name, cfg).masks(s)


def test_PartitionEventuallyLed_masks(kafka, edit):
    d = kafka(brokers=3, replication_factor=2, max_records=1, faults={"crashes": 1})
    name = "PartitionEventuallyLed"
    assert live.liveness_property(name, d.cfg).instances == ("partition 0",)
    s0 = d.s
    assert masks(name, d.cfg, s0) == (0, 1)  # led by broker 1
    crashed = d.do("Crash", 1)
    assert masks(name, d.cfg, crashed) == (1, 0)  # broker 2 is a live ISR member, nobody leads
    no_live_isr = edit.with_zk_partition(crashed, 0, isr=M(1))
    assert masks(name, d.cfg, no_live_isr) == (0, 0)  # no premise: nobody may be elected
    stale_epoch = edit.with_zk_partition(s0, 0, leader_epoch=s0.zk.partitions[0].leader_epoch + 1)
    assert masks(name, d.cfg, stale_epoch) == (1, 0)  # the leader acts on an older epoch
    follower_named = edit.with_zk_partition(s0, 0, leader=2)
    assert masks(name, d.cfg, follower_named) == (1, 0)  # broker 2 does not know it leads
    leaderless = edit.with_zk_partition(crashed, 0, leader=NO_LEADER)
    assert masks(name, d.cfg, leaderless) == (1, 0)
    # a deleted or queued partition discharges the goal
    deleted = edit.with_zk_partition(leaderless, 0, replicas=())
    assert masks(name, d.cfg, deleted) == (0, 1)
    queued = leaderless._replace(zk=leaderless.zk._replace(deleting=1))
    assert masks(name, d.cfg, queued) == (0, 1)


def test_PartitionEventuallyLed_masks_are_per_partition(kafka, edit):
    d = kafka(brokers=2, partitions=2, replication_factor=2, max_records=0)
    s = edit.with_zk_partition(d.s, 1, leader=NO_LEADER)
    assert masks("PartitionEventuallyLed", d.cfg, s) == (0b10, 0b01)
    s = s._replace(zk=s.zk._replace(deleting=0b10))
    assert masks("PartitionEventuallyLed", d.cfg, s) == (0, 0b11)


def test_IsrHeals_masks(kafka, edit):
    d = kafka(brokers=3, replication_factor=2, max_records=1, faults={"crashes": 1})
    name = "IsrHeals"
    prop = live.liveness_property(name, d.cfg)
    assert prop.instances == ("broker 1 partition 0", "broker 2 partition 0", "broker 3 partition 0")
    s0 = d.s
    assert masks(name, d.cfg, s0) == (0, 0b111)  # both replicas in sync, broker 3 holds none
    out_of_isr = edit.with_zk_partition(s0, 0, isr=M(1))
    assert masks(name, d.cfg, out_of_isr) == (0b010, 0b101)
    lost = edit.with_replica(s0, 2, 0, leader=NO_LEADER)
    assert masks(name, d.cfg, lost) == (0b010, 0b101)  # in the ISR but following nobody
    other = edit.with_replica(s0, 2, 0, leader=3)
    assert masks(name, d.cfg, other) == (0b010, 0b101)  # following a broker ZooKeeper does not name
    lagging_epoch = edit.with_zk_partition(s0, 0, leader_epoch=1)
    leader_acting = edit.with_replica(lagging_epoch, 1, 0, leader_epoch=1)
    assert masks(name, d.cfg, leader_acting) == (0, 0b111)  # a follower's epoch may lag (no epoch in 0.8 fetches)
    assert masks(name, d.cfg, lagging_epoch) == (0b001, 0b110)  # the leader itself must act on the znode's epoch
    dead = edit.with_broker(out_of_isr, 2, alive=False)
    assert masks(name, d.cfg, dead) == (0, 0b111)  # a stopped broker is not waited for
    deleted = edit.with_zk_partition(out_of_isr, 0, replicas=())
    assert masks(name, d.cfg, deleted) == (0, 0b111)
    queued = out_of_isr._replace(zk=out_of_isr.zk._replace(deleting=1))
    assert masks(name, d.cfg, queued) == (0, 0b111)


def test_WriteEventuallyCommitted_masks(kafka, edit):
    d = kafka(brokers=3, replication_factor=2, max_records=2, min_insync_replicas=2, faults={"crashes": 1})
    name = "WriteEventuallyCommitted"
    prop = live.liveness_property(name, d.cfg)
    assert prop.instances == ("partition 0 record 1", "partition 0 record 2")
    assert masks(name, d.cfg, d.s) == (0, 0b11)  # nothing written: nothing to wait for
    produced = d.do("Produce", 1, 0)
    assert masks(name, d.cfg, produced) == (0b01, 0b10)
    assert masks(name, d.cfg, edit.with_broker(produced, 1, alive=False)) == (0, 0b11)  # the leader gave it up
    few = edit.with_broker(produced, 2, alive=False)
    assert masks(name, d.cfg, few) == (0, 0b11)  # fewer than min.insync.replicas live ISR members
    queued = produced._replace(zk=produced.zk._replace(deleting=1))
    assert masks(name, d.cfg, queued) == (0, 0b11)
    deleted = edit.with_zk_partition(produced, 0, replicas=())
    assert masks(name, d.cfg, deleted) == (0, 0b11)
    d.do("Fetch", 2, 0)
    acked = d.do("Fetch", 2, 0)
    assert acked.ghost[0].acked == M(1)
    assert masks(name, d.cfg, acked) == (0, 0b11)
    acked_but_pending = edit.with_replica(acked, 1, 0, pending=M(1))
    assert masks(name, d.cfg, acked_but_pending) == (0, 0b11)  # acknowledged is acknowledged


def test_ReassignmentCompletes_masks(kafka, edit):
    d = kafka(brokers=3, replication_factor=2, max_records=0,
              operations={"reassignments": [{"partition": 0, "target": [2, 3]}]})
    name = "ReassignmentCompletes"
    assert live.liveness_property(name, d.cfg).instances == ("partition 0",)
    assert masks(name, d.cfg, d.s) == (0, 1)  # not requested yet
    requested = d.do("RequestReassignment", 0, (2, 3))
    assert masks(name, d.cfg, requested) == (1, 0)
    done = requested._replace(zk=requested.zk._replace(reassign=((),)))
    assert masks(name, d.cfg, done) == (0, 1)


def test_ReassignmentCompletes_instances_are_the_reassigned_partitions(kafka):
    d = kafka(brokers=3, partitions=3, replication_factor=2, max_records=0,
              operations={"reassignments": [{"partition": 2, "target": [1, 3]}]})
    prop = live.liveness_property("ReassignmentCompletes", d.cfg)
    assert prop.instances == ("partition 2",)
    requested = d.do("RequestReassignment", 2, (1, 3))
    assert prop.masks(requested) == (1, 0)


def test_DeposedControllerStops_masks(kafka):
    d = kafka(brokers=2, replication_factor=2, max_records=0, faults={"controller_failovers": 1})
    name = "DeposedControllerStops"
    assert masks(name, d.cfg, d.s) == (0, 1)
    s = d.do("ControllerFailover")
    assert s.stale is not None
    assert masks(name, d.cfg, s) == (1, 0)
    s = d.do("ResignController", s.stale.epoch)
    assert s.stale is None
    assert masks(name, d.cfg, s) == (0, 1)


# ---------------------------------------------------------------------------- which properties apply
def names_of(props):
    return [p.name for p in props]


def test_applicable_liveness_by_configuration(edit):
    cfg = edit.config(brokers=3, max_records=1)
    assert names_of(live.applicable_liveness(cfg)) == ["PartitionEventuallyLed", "IsrHeals", "WriteEventuallyCommitted"]
    cfg = edit.config(brokers=3, max_records=0, faults={"controller_failovers": 1},
                      operations={"reassignments": [{"partition": 0, "target": [1, 2]}]}, replication_factor=2)
    assert names_of(live.applicable_liveness(cfg)) == [
        "ReassignmentCompletes", "PartitionEventuallyLed", "IsrHeals", "DeposedControllerStops"]
    cfg = edit.config(brokers=3, max_records=1, acks="1", stale_controller=False, faults={"controller_failovers": 1})
    assert names_of(live.applicable_liveness(cfg)) == ["PartitionEventuallyLed", "IsrHeals"]
    assert set(live.LIVENESS_NAMES) == set(live.LIVENESS_DESCRIPTIONS) == {
        "ReassignmentCompletes", "PartitionEventuallyLed", "IsrHeals", "WriteEventuallyCommitted",
        "DeposedControllerStops", "MetadataEventuallyCurrent"}
    cached = edit.config(brokers=3, max_records=0, metadata_cache=True)  # only with a metadata cache
    assert "MetadataEventuallyCurrent" in names_of(live.applicable_liveness(cached))


def test_applicable_liveness_keeps_the_order_asked_for(edit):
    cfg = edit.config(brokers=3, max_records=1)
    assert names_of(live.applicable_liveness(cfg, ["IsrHeals", "PartitionEventuallyLed"])) == [
        "IsrHeals", "PartitionEventuallyLed"]
    assert live.applicable_liveness(cfg, []) == []


@pytest.mark.parametrize("name, raw", [
    ("ReassignmentCompletes", {"brokers": 3, "max_records": 1}),
    ("DeposedControllerStops", {"brokers": 3, "max_records": 1}),
    ("DeposedControllerStops", {"brokers": 3, "max_records": 1, "stale_controller": False,
                                "faults": {"controller_failovers": 1}}),
    ("WriteEventuallyCommitted", {"brokers": 3, "max_records": 0}),
    ("WriteEventuallyCommitted", {"brokers": 3, "max_records": 1, "acks": "1"}),
])
def test_applicable_liveness_refuses_a_property_that_does_not_apply(edit, name, raw):
    with pytest.raises(ConfigError) as e:
        live.applicable_liveness(edit.config(**raw), [name])
    msg = str(e.value)
    assert name in msg and "does not apply" in msg and "\n" not in msg


def test_applicable_liveness_refuses_an_unknown_name(edit):
    with pytest.raises(ConfigError) as e:
        live.applicable_liveness(edit.config(brokers=3), ["IsrHeal"])
    msg = str(e.value)
    assert "unknown liveness property 'IsrHeal'" in msg and "IsrHeals" in msg and "\n" not in msg
    with pytest.raises(ConfigError):
        live.check(edit.config(brokers=3), ["Nope"])


def test_check_defaults_to_every_applicable_property(edit):
    cfg = edit.config(brokers=3, max_records=1)
    res = live.check(cfg)
    assert [v.property for v in res.verdicts] == ["PartitionEventuallyLed", "IsrHeals", "WriteEventuallyCommitted"]
    assert all(v.holds is True for v in res.verdicts)
    assert res.complete and res.states > 1 and res.edges >= res.states - 1


def test_check_with_a_depth_limit_proves_nothing(edit):
    res = live.check(edit.config(brokers=3, max_records=1), max_depth=1)
    assert not res.complete
    assert [v.holds for v in res.verdicts] == [None, None, None]
    assert res.broken == []


# ---------------------------------------------------------------------------- the unfair key
BASE = {"brokers": 3, "replication_factor": 2, "max_records": 1}


@pytest.mark.parametrize("given, stored", [
    ([], ()),
    (["Restart"], ("Restart",)),
    (["Restart(3)"], ("Restart(3)",)),
    (["Restart( 3 )"], ("Restart(3)",)),
    (["Fetch(2,0)", "ResignController"], ("Fetch(2, 0)", "ResignController")),
    (["DeliverRequest(1)", "ProcessBrokerChange"], ("DeliverRequest(1)", "ProcessBrokerChange")),
])
def test_unfair_accepts_fair_names_and_instances(given, stored):
    cfg = from_mapping({**BASE, "unfair": given})
    assert cfg.unfair == stored
    assert cfg.to_dict()["unfair"] == list(stored)
    assert from_mapping(cfg.to_dict()).unfair == stored


def test_unfair_defaults_to_nothing():
    assert from_mapping(BASE).unfair == ()


@pytest.mark.parametrize("given, fragments", [
    (["Crash"], ["'Crash' is not a fair action", "Restart"]),
    (["Crash(1)"], ["'Crash' is not a fair action"]),
    (["Produce"], ["'Produce' is not a fair action"]),
    (["Restart(9)"], ["Restart", "1..3", "9"]),
    (["Restart(0)"], ["Restart", "1..3"]),
    (["Fetch(2, 5)"], ["partition"]),
    (["Restart(1, 2)"], ["Restart takes 1 argument"]),
    (["Restart(3"], ["cannot read"]),
    (["Nope"], ["'Nope' is not a fair action"]),
    (["Nope(1)"], ["unknown action 'Nope'"]),
    ([""], ["is not a fair action"]),
    ("Restart", ["unfair must be a list"]),
    ({"Restart": 3}, ["unfair must be a list"]),
    ([3], ["unfair must be a list"]),
])
def test_unfair_rejects_with_one_line(given, fragments):
    with pytest.raises(ConfigError) as e:
        from_mapping({**BASE, "unfair": given})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("unfair")
    for f in fragments:
        assert f in msg, (f, msg)


# ---------------------------------------------------------------------------- fair_key
def test_fair_key_of_fair_and_unfair_actions():
    m = build_model(from_mapping(BASE), symmetry=False, properties=[])
    fetch = Action("Fetch", (2, 0))
    assert m.fair_key(fetch) == fetch
    assert m.fair_key(Action("Restart", (1,))) == Action("Restart", (1,))
    for never in (Action("Crash", (1,)), Action("Produce", (1, 0)), Action("QuickRestart", (1,)),
                  Action("ControllerFailover", ()), Action("ShrinkIsr", (1, 0, 2))):
        assert m.fair_key(never) is None, never
    assert m.fairness_assumptions() == [f"weak fairness of every instance of {', '.join(fair_actions())}"]


def test_fair_key_drops_an_instance_or_every_instance():
    m = build_model(from_mapping({**BASE, "unfair": ["Fetch(2,0)", "Restart"]}), symmetry=False, properties=[])
    assert m.fair_key(Action("Fetch", (2, 0))) is None  # that instance, written with other spacing
    assert m.fair_key(Action("Fetch", (3, 0))) == Action("Fetch", (3, 0))  # not the others
    assert m.fair_key(Action("Restart", (1,))) is None and m.fair_key(Action("Restart", (3,))) is None
    assert m.fair_key(Action("DeliverRequest", (1,))) == Action("DeliverRequest", (1,))
    assert "Restart" not in m.fair_names and "Fetch" in m.fair_names
    text = m.fairness_assumptions()
    assert text[0].startswith("weak fairness of every instance of ") and "Restart" not in text[0]
    assert any("not assumed for Restart" in t for t in text)
    assert any("Fetch(2, 0)" in t and "not assumed" in t for t in text)


def test_fair_key_of_an_unfair_instance_only():
    m = build_model(from_mapping({**BASE, "unfair": ["Restart(3)"]}), symmetry=False, properties=[])
    assert m.fair_key(Action("Restart", (3,))) is None
    assert m.fair_key(Action("Restart", (2,))) == Action("Restart", (2,))
    assert "Restart" in m.fair_names
    text = m.fairness_assumptions()
    assert "Restart" in text[0]  # every other instance stays fair
    assert any("Restart(3)" in t and "not assumed" in t for t in text)


def test_fairness_assumptions_with_every_fair_action_dropped():
    m = build_model(from_mapping({**BASE, "unfair": list(fair_actions())}), symmetry=False, properties=[])
    assert m.fair_names == frozenset()
    assert m.fair_key(Action("Fetch", (2, 0))) is None
    text = m.fairness_assumptions()
    assert text[0] == "no fairness"
    assert all(name in text[1] for name in fair_actions()) and "not assumed" in text[1]
