"""The reassignment state inside the replication encoding (invariants/symbolic/reassignment.py via
operations.SymOps.reassign), with one controller and with a deposed one carrying on.

On sampled reachable states of reassignment and reassignment-broker-crash:

- the state ranges over every broker that can be assigned (``universe``): it pins to the model's
  state, and a z3 model of the pin decodes back to the model's reassignment fields, the leaders'
  ``assigned`` masks and the AR every queued LeaderAndIsr carries;
- RequestReassignment is enabled exactly when the model enables it, and leads to exactly the model's
  successor, every leaf of the state compared;
- a delivered request (but step 9's deleting StopReplica, not encoded yet) leaves the carried-AR
  numbers of the queue shifted as the model's queue is, and a leader that takes a LeaderAndIsr gets
  the AR it carries as its ``assigned`` mask (a follower none);
- Fetch is enabled exactly when the model enables it, for every follower/leader pair of the
  universe, the leader's ``assigned`` mask gating it (the samples must include a gated pair);
- ProcessBrokerChange, outside a running reassignment (before it, or after it changed AR), leads to
  exactly the model's successor: elections, ISR removal and LeaderAndIsr recipients over the current
  AR, each LeaderAndIsr carrying it;
- every action, on sampled states and on the explicit checker's counterexample: the encoding enables
  exactly the model's actions, each leads to exactly the model's successor, and it is flagged illegal
  (``Instance.illegal``) exactly when the model refuses it with IllegalTransition — with controller
  failover too, the deposed controller's own steps included (deposed-controller-*);
- a deposed controller's refused writes end its steps as the model's Fenced does (steps 2, 8, 10).
"""
from __future__ import annotations

import dataclasses
import os

import pytest
import z3

from isrcheck.inputs import manifest
from isrcheck.invariants.symbolic import replication as R
from isrcheck.invariants.symbolic.instance import Unsupported
from isrcheck.invariants.symbolic.replication import Encoding, concrete, evaluate
from isrcheck.model.actions import Action
from isrcheck.engine.checker import Checker, ModelFault
from isrcheck.model.state import LeaderAndIsr, StopReplica
from z3_compare import AtStates, OneStep, comparable, model_of
from z3_states import reachable_with_model as reachable

MODELS = {"reassignment": (612, 40), "reassignment-broker-crash": (1500, 40)}


def projection(s, hosted=None):
    """What the reassignment state encodes of a model State (``assigned`` of the replicas ``hosted``
    hosts: whether a broker hosts a replica is not encoded yet, see specs/08-symbolic.md)."""
    hosted = s if hosted is None else hosted
    return (tuple(zp.replicas for zp in s.zk.partitions), s.zk.reassign, s.controller.reassign_step,
            s.controller.reassign_old, s.controller.reassign_new, tuple(g.reassign_origin for g in s.ghost),
            s.reassignments,
            tuple(tuple(None if h is None else r.assigned for r, h in zip(br.replicas, hb.replicas))
                  for br, hb in zip(s.brokers, hosted.brokers)),
            tuple(tuple(req.replicas if isinstance(req, LeaderAndIsr) else None for req in q) for q in s.inbox))


def gated_pairs(s) -> list[tuple[int, int, int]]:
    """(follower, partition, leader): the follower fetches from a live leader whose ``assigned`` mask
    leaves it out."""
    out = []
    for p in range(len(s.zk.partitions)):
        for f, br in enumerate(s.brokers, start=1):
            rf = br.replicas[p]
            if rf is None or rf.leader in (0, f):
                continue
            lb = s.brokers[rf.leader - 1]
            rl = lb.replicas[p]
            if lb.alive and rl is not None and rl.leader == rf.leader and not rl.assigned >> f & 1:
                out.append((f, p, rf.leader))
    return out


def leaf_values(sym) -> list:
    return evaluate(sym.leaves())


def test_reassignments_are_encoded_with_and_without_failover():
    assert R.unsupported_reason(manifest.get("reassignment").config) == ""
    assert R.unsupported_reason(manifest.get("deposed-controller-ar-write").config) == ""
    assert Encoding(manifest.get("reassignment").config).always()[-2:] == R.REASSIGNMENT_PROPERTIES
    assert Encoding(manifest.get("deposed-controller-reassignment").config).step_faults() == R.STEP_FAULTS
    assert "IsrSubsetOfReplicas" not in Encoding(manifest.get("clean-election").config).always()
    assert Encoding(manifest.get("clean-election").config).step_faults() == ()
    with pytest.raises(Unsupported, match="only without topic creation"):
        Encoding(dataclasses.replace(manifest.get("reassignment").config, operations=dataclasses.replace(
            manifest.get("reassignment").config.operations, preferred_elections=1)))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_state_and_request_agree_with_the_model(name):
    cfg = manifest.get(name).config
    limit, samples = MODELS[name]
    enc = Encoding(cfg)
    assert enc.U[0] == (1, 2, 3) and enc.AR[0] == (1, 2)  # the state ranges over the brokers a reassignment adds
    model, states = reachable(cfg, limit)
    chosen = set(range(0, len(states), max(1, len(states) // samples)))
    chosen.add(next(i for i, s in enumerate(states) if any(a.name == "RequestReassignment" for a in model.actions(s))))
    # states where a LeaderAndIsr carrying a list other than the initial AR is queued
    moved = [i for i, s in enumerate(states)
             if any(isinstance(r, LeaderAndIsr) and r.replicas != cfg.replicas_of(r.partition)
                    for q in s.inbox for r in q)]
    assert moved
    chosen |= set(moved[:: max(1, len(moved) // 10)])
    gated_states = [i for i, s in enumerate(states) if gated_pairs(s)]
    assert gated_states
    chosen |= set(gated_states[:: max(1, len(gated_states) // 10)])
    sym = enc.fresh("s")
    R_ = enc.ops.reassign
    requests = delivered = carried = fetches = gated = 0
    for s in (states[i] for i in sorted(chosen)):
        # pin and decode
        assert projection(sym.decode(model_of(sym.pin(s)), enc.init_state), s) == projection(s)
        cs = concrete(enc, s)
        acts = model.actions(s)
        # RequestReassignment: same enabled instances, same successor leaf by leaf
        mine = [i for i in enc.ops.request_reassignment(cs) if evaluate([i.guard])[0]]
        theirs = [a for a in acts if a.name == "RequestReassignment"]
        assert sorted(i.args for i in mine) == sorted(a.args for a in theirs), s
        for inst in mine:
            requests += 1
            t = model.next_state(s, next(a for a in theirs if a.args == inst.args))
            assert leaf_values(inst.effect) == leaf_values(concrete(enc, t)), (s, inst.args)
        # a delivered request: the carried-AR numbers follow the queue; a leader takes the AR it is sent
        for a in acts:
            if a.name != "DeliverRequest":
                continue
            b = a.args[0]
            head = s.inbox[b - 1][0]
            if isinstance(head, StopReplica) and head.delete:
                continue  # step 9's deleting StopReplica is not encoded yet
            [inst] = [i for i in enc.deliveries(cs, b, 0, "DeliverRequest", (b,), z3.BoolVal(True), None)
                      if evaluate([i.guard])[0]]
            t = model.next_state(s, a)
            got, want = inst.effect.ops.reassign, concrete(enc, t).ops.reassign
            assert evaluate(list(got.req_list[b])) == evaluate(list(want.req_list[b])), (s, a)
            for p in range(cfg.partitions):
                if b in enc.AR[p] or s.brokers[b - 1].replicas[p] is not None:
                    row = sorted(got.assigned[p][b])
                    assert (evaluate([got.assigned[p][b][m] for m in row])
                            == evaluate([want.assigned[p][b][m] for m in row])), (s, a)
            delivered += 1
            carried += any(isinstance(r, LeaderAndIsr) and r.replicas != cfg.replicas_of(r.partition)
                           for r in s.inbox[b - 1][:1])
        # Fetch is gated by the leader's assigned mask (every follower/leader pair of the universe)
        for p in range(cfg.partitions):
            for f in enc.U[p]:
                rf = s.brokers[f - 1].replicas[p]
                for L in enc.U[p]:
                    if L == f or rf is None:
                        continue
                    want_on = Action("Fetch", (f, p)) in acts and rf.leader == L
                    got_on = evaluate([enc.fetch(cs, f, p, L).guard])[0]
                    assert got_on == want_on, (s, f, L)
                    fetches += want_on
        gated += bool(gated_pairs(s))
    assert requests and delivered and carried and fetches and gated, (requests, delivered, carried, fetches, gated)


@pytest.mark.parametrize("name", ["reassignment-broker-crash", "reassignment-target-crash"])
def test_broker_change_over_the_current_assignment(name):
    """ProcessBrokerChange while no reassignment step is under way (before, or after one completed and
    AR changed): the same successor as the model's, every leaf compared — elections, ISR removal and
    the LeaderAndIsr recipients follow ZooKeeper's current AR, and each LeaderAndIsr carries it."""
    cfg = manifest.get(name).config
    enc = Encoding(cfg)
    # enough states to pass a completed reassignment (a broker's start-up restarts one waiting at
    # step 4, which puts more states before the first completion in breadth-first order)
    model, states = reachable(cfg, 20000)
    steps = OneStep(enc)
    seen, after_move = 0, 0
    for s in states:
        if any(s.controller.reassign_step):
            continue  # the replica states of a running reassignment are not encoded yet
        moved = s.zk.partitions[0].replicas != cfg.replicas_of(0)
        if (seen - after_move >= 8 and not moved) or after_move >= 8:
            continue
        for a in model.actions(s):
            if a.name != "ProcessBrokerChange":
                continue
            t = model.next_state(s, a)
            [effect] = [eff for i, g, _, eff in steps.values(s) if i.name == "ProcessBrokerChange" and g]
            assert effect == leaf_values(concrete(enc, t)), (s, a)
            seen += 1
            after_move += moved
    assert seen and after_move, (seen, after_move)


# name -> (reachable states explored, states sampled)
ONE_STEP = {"reassignment": (612, 25), "reassignment-broker-crash": (6000, 12),
            "reassignment-with-data": (6000, 12), "reassignment-target-crash": (6000, 12),
            # the leader-epoch generations: epoch caches and OffsetsForLeaderEpoch across AR changes
            "reassignment-with-data-kip-320": (6000, 12), "reassignment-broker-crash-kip-320": (6000, 12),
            # a deposed controller's own steps, fenced writes, and the illegal moves of their counterexamples
            "deposed-controller-reassignment": (3000, 5), "deposed-controller-ar-write": (3000, 4)}


#: every model above is in the suite: with the instances built once and valued at each sampled
#: state (z3_compare.OneStep), the eight take 6-13 s each, where building them over each state's
#: values took 30-83 s and kept four of them out of CI's 30 minutes
@pytest.mark.parametrize("name", sorted(ONE_STEP))
def test_one_step_agrees_with_the_model(name):
    """Every action: the encoding enables exactly the model's actions and each leads to exactly the
    model's successor, field by field; every one of the 12 steps and the deleting StopReplica seen."""
    cfg = manifest.get(name).config
    limit, n = ONE_STEP[name]
    enc = Encoding(cfg)
    model, states = reachable(cfg, limit)
    trace: list = []
    if manifest.get(name).expect == "safety_failure":  # the counterexample's last states, the refused step's included
        trace = [st.state for st in Checker(model).run().violations[0].trace if st.state is not None][-8:]
        states = states + [s for s in trace if s not in set(states)]
    shape = enc.fresh("shape")
    names = [str(x) for x in shape.leaves()]
    firsts: dict[str, int] = {}
    for i, s in enumerate(states):
        for a in model.actions(s):
            key = f"step {a.args[2]}" if a.name == "ReassignPartition" else a.name
            if a.name == "DeliverRequest":
                key += repr(s.inbox[a.args[0] - 1][0])[:12] + str(getattr(s.inbox[a.args[0] - 1][0], "delete", ""))
            firsts.setdefault(key, i)
    chosen = set(range(0, len(states), max(1, len(states) // n))) | set(firsts.values())
    chosen |= {states.index(s) for s in trace}
    kinds: set[str] = set()
    refused: set[str] = set()
    steps = OneStep(enc)  # the instances built once, valued at each state
    assert len(steps.plain) == len(steps.instances)
    steps.assert_as_built_over(states[min(chosen)])
    for s in (states[i] for i in sorted(chosen)):
        valued = steps.values(s)
        acts = model.actions(s)
        assert {label(i) for i, g, _, _ in valued if g} == {str(a) for a in acts}, (name, s)
        for a in acts:
            matching = [(i, bad, eff) for i, g, bad, eff in valued if g and label(i) == str(a)]
            assert len(matching) == 1, (str(a), [i.kind for i, _, _ in matching])
            inst, bad, got = matching[0]
            kinds.add(inst.kind)
            try:
                after = model.next_state(s, a)
            except ModelFault:
                assert bad, (name, str(a), inst.kind, "the model refuses it, the encoding does not", s)
                refused.add(inst.kind)
                continue
            assert not bad, (name, str(a), inst.kind, "the encoding refuses it, the model does not", s)
            want = comparable(enc, after, shape)
            diff = [names[i] for i, (g, w) in enumerate(zip(got, want)) if w is not None and g != w]
            assert not diff, (name, str(a), inst.kind, diff, s)
    steps = {k for k in kinds if k.startswith("ReassignPartition") and "deposed" not in k}
    deposed = {k for k in kinds if k.startswith("ReassignPartition") and "deposed" in k}
    if not cfg.faults.controller_failovers:
        assert len(steps) == 12, sorted(steps)
        assert "DeliverRequest: StopReplica (delete)" in kinds
    else:  # the samples stop short of the end: most steps of both controllers, and the refused move
        assert len(steps) >= 10 and len(deposed) >= 3, (sorted(steps), sorted(deposed))
        assert "ControllerFailover" in kinds
        assert bool(refused) == (manifest.get(name).property == "OnlyValidTransitions"), refused


def label(inst) -> str:
    return str(Action(inst.name, inst.args))


@pytest.mark.parametrize("name", ["reassignment-with-data", "reassignment-target-crash"])
def test_encoded_properties_agree_with_the_model(name):
    """The encoded properties, now over every broker of the universe (an unhosted replica being a
    fresh one), agree with invariants/properties.py on reachable states and on the states of the
    explicit checker's counterexample, and EpochsMonotonic on their steps (a replica deleted by step
    9 and created again is skipped, as properties.py skips a replica that is None)."""
    from isrcheck.invariants import ALL_PROPERTIES
    from isrcheck.invariants.symbolic.replication import ALWAYS, TRANSITION

    by_name = {p.name: p for p in ALL_PROPERTIES}
    cfg = manifest.get(name).config
    enc = Encoding(cfg)
    model, states = reachable(cfg, 6000)
    trace = [st.state for st in Checker(model).run().violations[0].trace if st.state is not None]
    samples = states[:: max(1, len(states) // 25)] + trace
    broken = 0
    names = (*ALWAYS, "IsrSubsetOfReplicas", "ReassignmentRecoverable")  # the last two: terms only, so far
    at = AtStates(enc, lambda sym: [enc.properties(sym)[n] for n in names])
    for s in samples:
        got = at.values(s)
        want = [by_name[n].check(s) for n in names]
        assert got == want, (s, [n for n, g, w in zip(names, got, want) if g != w])
        broken += not all(want)
    steps = list(zip(trace, trace[1:]))
    # a step that deletes a replica (step 9's StopReplica delivered), then one that creates it again
    for s in states:
        for a in model.actions(s):
            t = model.next_state(s, a)
            if any((x is None) != (y is None) for bx, by in zip(s.brokers, t.brokers)
                   for x, y in zip(bx.replicas, by.replicas)):
                steps.append((s, t))
        if len(steps) > len(trace) + 12:
            break
    for s, t in steps:
        got = evaluate([enc.step_properties(concrete(enc, s), concrete(enc, t))[n] for n in TRANSITION])
        assert got == [by_name[n].check(s, t) for n in TRANSITION], (s, t)
    assert len(steps) > len(trace) - 1
    assert broken  # reassignment-with-data breaks NoCommittedWriteLost in 17, -target-crash IsrSubsetOfReplicas in 16


def test_a_deposed_controllers_refused_writes_end_its_steps_as_the_model_does():
    """Fenced writes, a move of two replicas ([1,2] -> [3]) and a failover: on sampled states where
    the deposed controller is at a step that writes, its step leads to exactly the model's successor;
    among them steps the model ends with Fenced — step 2's epoch bump, step 8's ISR removal of the
    first of two old replicas (the second then not moved) and step 10's AR write."""
    import random

    from isrcheck.model.config import from_mapping

    cfg = from_mapping({"brokers": 3, "replication_factor": 2, "max_records": 0, "fenced_controller_writes": True,
                        "operations": {"reassignments": [{"partition": 0, "target": [3]}]},
                        "faults": {"controller_failovers": 1}})
    enc = Encoding(cfg)
    model, states = reachable(cfg, 20000)
    writing = [s for s in states if s.stale is not None and s.stale.reassign_step[0] in (2, 7, 8, 10, 11)]
    shape = enc.fresh("shape")
    names = [str(x) for x in shape.leaves()]
    ended: list[int] = []
    steps = OneStep(enc)
    for s in random.Random(1).sample(writing, 16):
        valued = steps.values(s)
        acts = model.actions(s)
        assert {label(i) for i, g, _, _ in valued if g} == {str(a) for a in acts}, s
        for a in acts:
            if a.name != "ReassignPartition" or a.args[0] != s.stale.epoch:
                continue
            (got,) = [eff for i, g, _, eff in valued if g and label(i) == str(a)]
            after = model.next_state(s, a)
            diff = [names[i] for i, (g, w) in enumerate(zip(got, comparable(enc, after, shape)))
                    if w is not None and g != w]
            assert not diff, (str(a), diff, s)
            if after.stale is not None and after.stale.reassign_step[0] == 0:
                ended.append(a.args[2])
    assert {2, 8, 10} <= set(ended), sorted(ended)
