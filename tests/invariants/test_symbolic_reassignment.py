"""Reassignment state and controller logic in z3 (invariants/symbolic/reassignment.py).

On sampled reachable states of the single-controller reassignment models of the manifest (and on
the states of reassignment-target-crash's counterexample):

- pinning and decoding: the encoded fields pin to the model's and a z3 model decodes back to them;
- the controller's view of AR (``controller.assignment``), whether the active controller's
  ReassignPartition / the next RequestReassignment is enabled, and the ReassignedPartition selector
  agree with the model;
- each enabled ReassignPartition step and RequestReassignment leads to the model successor's
  reassignment fields (steps, OAR/RAR, AR, the request, its origin), every one of the 12 steps seen;
- IsrSubsetOfReplicas and ReassignmentRecoverable agree with invariants/properties.py, on violating
  states too.
"""
from __future__ import annotations


import pytest
import z3

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants.symbolic.reassignment import Reassignment, list_table, universe
from isrcheck.model import controller as C
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping
from isrcheck.model.selectors import NoEligibleLeader, SelectorInput, reassigned_partition
from isrcheck.model.world import World
from z3_compare import BY_NAME, model_of
from z3_states import reachable_with_model as reachable

MODELS = {"reassignment": 612, "reassignment-broker-crash": 1500, "reassignment-with-data": 1500,
          "reassignment-target-crash": 1500}


def ev(pairs, term):
    """``term`` evaluated with the leaves fixed by ``pairs`` (a concrete state)."""
    v = z3.simplify(z3.substitute(term, *pairs))
    return z3.is_true(v) if z3.is_bool(v) else v.as_signed_long()


def sym_inputs(cfg, s):
    """ZooKeeper's ISR and the controller's view, over each partition's universe, as z3 values."""
    isr = tuple({b: z3.BoolVal(bool(s.zk.partitions[p].isr >> b & 1)) for b in universe(cfg, p)}
                for p in range(cfg.partitions))
    live = {b: z3.BoolVal(bool(s.controller.live >> b & 1)) for b in range(1, cfg.brokers + 1)}
    return isr, live


def test_list_tables():
    cfg = manifest.get("deposed-controller-ar-write").config
    assert list_table(cfg, 0) == ((), (1, 2), (2, 3), (1, 2, 3), (2, 3, 1))
    assert universe(cfg, 0) == (1, 2, 3)
    cfg = manifest.get("reassignment-target-crash").config
    assert list_table(cfg, 0) == ((), (1, 2), (3,), (1, 2, 3))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_controller_logic_agrees_with_the_model(name):
    cfg = manifest.get(name).config
    model, states = reachable(cfg, MODELS[name])
    R = Reassignment(cfg)
    sym = R.fresh("s")
    steps_seen: set[int] = set()
    requests_seen = 0
    chosen = set(range(0, len(states), max(1, len(states) // 150)))
    first: dict[int, int] = {}  # plus the first state where each step is due
    for i, s in enumerate(states):
        for a in model.actions(s):
            if a.name == "ReassignPartition":
                first.setdefault(a.args[2], i)
    chosen |= set(first.values())
    for s in (states[i] for i in sorted(chosen)):
        pairs = R.values_of(sym, s)
        # decode: a z3 model of the pinned fields gives back the model's fields
        back = R.decode(model_of(*[a == v for a, v in pairs]), sym, s._replace(reassignments=()))
        assert back == s
        isr, live = sym_inputs(cfg, s)
        w = World(model.protocol, s)
        c = w.controller(s.controller.epoch)
        acts = model.actions(s)
        for p in range(cfg.partitions):
            assert R.tables[p][ev(pairs, R.assignment(sym, p))] == C.assignment(w, c, p)
            enabled = any(a.name == "ReassignPartition" and a.args[1] == p for a in acts)
            assert ev(pairs, R.step_enabled(sym, p, isr[p])) == enabled, (s, p)
            if c.reassign_new[p]:
                inp = SelectorInput(assignment=C.assignment(w, c, p), leader=s.zk.partitions[p].leader,
                                    isr=s.zk.partitions[p].isr, live=c.live, shutting_down=0,
                                    target=c.reassign_new[p], unclean_election=False)
                found, leader = R.reassigned_partition(sym, p, live, isr[p])
                try:
                    expect = (True, reassigned_partition(inp).leader)
                except NoEligibleLeader:
                    expect = (False, 0)
                assert (ev(pairs, found), ev(pairs, leader)) == expect
        for a in acts:
            if a.name == "ReassignPartition":
                p = a.args[1]
                steps_seen.add(a.args[2])
                after = R.bookkeeping(sym, p, live)
            elif a.name == "RequestReassignment":
                requests_seen += 1
                p, tgt = a.args
                [(q, t, guard, after)] = [x for x in R.request(sym) if ev(pairs, x[2])]
                assert (q, t) == (p, tgt)
            else:
                continue
            t = model.next_state(s, a)
            fresh = R.fresh("t")
            expect = {x.get_id(): ev([], v) for x, v in R.values_of(fresh, t)}
            got = [ev(pairs, x) for x in after.leaves()]
            assert got == [expect[x.get_id()] for x in fresh.leaves()], (s, a)
        if not any(a.name == "RequestReassignment" for a in acts):
            assert not any(ev(pairs, g) for _, _, g, _ in R.request(sym))
    assert requests_seen
    if name == "reassignment":  # every one of the 12 steps is exercised
        assert steps_seen == set(range(1, 13))


def _violation_states(name: str):
    model = build_model(manifest.get(name).config, symmetry=False)
    v = Checker(model).run().violations[0]
    return [st.state for st in v.trace if st.state is not None]


@pytest.mark.parametrize("name", ["reassignment", "reassignment-target-crash"])
def test_properties_agree_with_the_model(name):
    cfg = manifest.get(name).config
    R = Reassignment(cfg)
    sym = R.fresh("s")
    _, states = reachable(cfg, 600)
    if name == "reassignment-target-crash":
        states += _violation_states(name)
    # a state that lost an original replica while the request is pending (ReassignmentRecoverable)
    pending = [s for s in states if s.zk.reassign[0] and s.ghost[0].reassign_origin]
    assert pending
    s = pending[0]
    lost = s._replace(zk=s.zk._replace(partitions=(s.zk.partitions[0]._replace(replicas=s.zk.reassign[0]),)))
    lost = lost._replace(zk=lost.zk._replace(reassign=(R.tables[0][-1],)))
    states.append(lost)
    values = {"IsrSubsetOfReplicas": set(), "ReassignmentRecoverable": set()}
    for s in states:
        pairs = R.values_of(sym, s)
        isr, _ = sym_inputs(cfg, s)
        got = {"IsrSubsetOfReplicas": ev(pairs, R.isr_subset_of_replicas(sym, isr)),
               "ReassignmentRecoverable": ev(pairs, R.reassignment_recoverable(sym))}
        for k, v in got.items():
            assert v == BY_NAME[k].check(s), (k, s)
            values[k].add(v)
    assert values["ReassignmentRecoverable"] == {True, False}
    if name == "reassignment-target-crash":
        assert values["IsrSubsetOfReplicas"] == {True, False}


def test_a_list_outside_the_table_is_an_error():
    cfg = from_mapping({"brokers": 3, "replication_factor": 2, "max_records": 0,
                        "operations": {"reassignments": [{"partition": 0, "target": [2, 3]}]}})
    R = Reassignment(cfg)
    with pytest.raises(ValueError, match="not in the reassignment table"):
        R.index(0, (3, 1))


@pytest.mark.parametrize("name", ["deposed-controller-ar-write", "deposed-controller-reassignment"])
def test_tables_cover_the_failover_models(name):
    """Every list a deposed controller's steps leave (AR, request, origin, OAR, RAR of the active
    controller) is in the table and pins and decodes back (the stale controller's fields are
    not encoded yet)."""
    cfg = manifest.get(name).config
    _, states = reachable(cfg, 3000)
    R = Reassignment(cfg)
    sym = R.fresh("s")
    lists = set()
    for i, s in enumerate(states):
        pairs = R.values_of(sym, s)  # raises for a list outside the table
        lists.add(s.zk.partitions[0].replicas)
        if s.stale is not None:
            lists |= {s.stale.reassign_old[0], s.stale.reassign_new[0]}
            assert {s.stale.reassign_old[0], s.stale.reassign_new[0]} <= set(R.tables[0])
        if i % 10:
            continue
        assert R.decode(model_of(*[a == v for a, v in pairs]), sym, s._replace(reassignments=())) == s
    assert lists <= set(R.tables[0]) and len(lists) >= 3
