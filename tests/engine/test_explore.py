"""The exploration kit (engine/explore.py) and the verdicts of engine/core.py, on toy models.

The kit is what the simulator, the pipeline and conformance's exports share with the checker: a
level, a walk, a replay. These tests pin each piece against the checker's own answers.
"""
from __future__ import annotations

import random

import pytest

from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping
from isrcheck.engine.core import Checks, ModelFault, Property, Step, action_name
from isrcheck.engine.explore import (ALWAYS, FAULT, TRANSITION, count_until, expand, first_event_key, initial_level,
                                    replay_checked, replay_fingerprints, sorted_new, verdicts, walk)

from test_checker_engine import Act, Counters, Toy


def _levels_by_expand(model):
    """Every level of a breadth-first search, computed only with the kit's expand."""
    checks = Checks.of(model)
    rows, _ = initial_level(model, checks)
    frontier = [(s.fingerprint, rank, s.state) for rank, s in enumerate(rows)]
    seen = {fp for fp, _, _ in frontier}
    sizes = [len(frontier)]
    transitions = 0
    while frontier:
        exp = expand(model, frontier, skip=seen, checks=checks)
        transitions += exp.transitions
        new = sorted_new(exp)
        seen.update(s.fingerprint for s in new)
        frontier = [(s.fingerprint, rank, s.state) for rank, s in enumerate(new)]
        if new:
            sizes.append(len(new))
    return sizes, len(seen), transitions


def test_checks_sort_properties_by_kind_and_give_every_verdict():
    props = [
        Property("Small", "always", lambda s: s[0] < 2),
        Property("NoB", "always", lambda s: s[1] == 0),
        Property("Grows", "transition", lambda a, b: b >= a),
        Property("Two", "sometimes", lambda s: s[0] == 2),
    ]
    checks = Checks(props)
    assert [p.name for p in checks.always] == ["Small", "NoB"]
    assert checks.broken_always((2, 1)) == ["Small", "NoB"]
    assert checks.broken_always((0, 0)) == []
    assert checks.broken_transition((1, 0), (0, 0)) == ["Grows"]
    assert checks.witnessed((2, 0), ["Two"]) == ["Two"]
    assert checks.witnessed((2, 0), []) == []  # only the pending ones are asked
    assert action_name(Act("IncA")) == "IncA" and action_name(3) == "int"


def test_level_expansion_reproduces_the_checkers_levels_on_a_kafka_model():
    model = build_model(from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 1}}),
                        symmetry=True)
    sizes, distinct, transitions = _levels_by_expand(model)
    result = Checker(model).run()
    assert result.outcome == "success"
    assert distinct == result.distinct_states
    assert transitions == result.transitions
    assert len(sizes) - 1 == result.depth


def test_a_level_keeps_each_successor_at_its_smallest_key_whatever_the_batch_order():
    model = Counters()
    checks = Checks.of(model)
    level1 = [(hash((1, 0)), 0, (1, 0))]
    level2 = expand(model, level1, checks=checks)
    rows = [(s.fingerprint, rank, s.state) for rank, s in enumerate(sorted_new(level2))]
    forward = expand(model, rows, checks=checks)
    backward = expand(model, list(reversed(rows)), checks=checks)
    assert {fp: s.key for fp, s in forward.successors.items()} == {fp: s.key for fp, s in backward.successors.items()}
    # (2,1) is reached from (2,0) (rank 0, IncB its only action) and from (1,1) (rank 1): the first wins
    assert forward.successors[hash((2, 1))].key == (0, 0)


def test_seen_among_drops_what_skip_drops_and_asks_once_per_expansion():
    model = build_model(from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 1}}))
    checks = Checks.of(model)
    rows, _ = initial_level(model, checks)
    frontier = [(s.fingerprint, rank, s.state) for rank, s in enumerate(rows)]
    for _ in range(4):  # a level a few steps in, where successors include old states
        exp = expand(model, frontier, checks=checks)
        frontier = [(s.fingerprint, rank, s.state) for rank, s in enumerate(sorted_new(exp))]
    everything = expand(model, frontier, checks=checks)
    old = set(list(everything.successors)[::2])
    asked: list[list[int]] = []

    def among(fps: list[int]) -> list[int]:
        asked.append(fps)
        return [fp for fp in fps if fp in old]

    by_skip = expand(model, frontier, skip=old, checks=checks)
    by_among = expand(model, frontier, seen_among=among, checks=checks)
    assert len(asked) == 1 and set(asked[0]) == set(everything.successors)
    assert set(by_among.successors) == set(by_skip.successors) == set(everything.successors) - old
    for fp, x in by_among.successors.items():
        y = by_skip.successors[fp]
        assert (x.key, x.action, x.broken, x.parent) == (y.key, y.action, y.broken, y.parent)
        assert isinstance(x.action, str)
    assert by_among.transitions == everything.transitions and by_among.coverage == everything.coverage


def test_actions_that_cannot_be_dict_keys_are_still_named():
    toy = Toy({0: [(Act("a"), 1)], 1: []})
    exp = expand(toy, [(hash(0), 0, 0)], action_text=lambda a: "named")
    assert [s.action for s in exp.successors.values()] == ["named"]

    class Unhashable(Toy):
        def actions(self, s):
            return [[name] for name in ("x", "y")] if s == 0 else []

        def next_state(self, s, a):
            return 1 if a == ["x"] else 2

    exp = expand(Unhashable({}), [(hash(0), 0, 0)], action_text=lambda a: f"step {a[0]}")
    assert sorted(s.action for s in exp.successors.values()) == ["step x", "step y"]


def test_events_and_the_first_violation_key():
    toy = Toy({0: [(Act("a"), 1), (Act("b"), 2)], 1: [], 2: []}, faults={(0, Act("a")): "Legal"},
              props=[Property("NotTwo", "always", lambda s: s != 2)])
    exp = expand(toy, [(hash(0), 0, 0)])
    assert [(e.kind, e.prop, e.key) for e in exp.events] == [(FAULT, "Legal", (0, 0))]
    new = sorted_new(exp)
    assert [(s.state, s.broken, s.action) for s in new] == [(2, ["NotTwo"], str(Act("b")))]
    assert first_event_key(exp.events, new) == (0, 0)
    assert count_until(toy, [(hash(0), 0, 0)], (0, 1)) == (1, {"b": 1})  # the faulting step is not a transition


def test_a_walk_is_a_function_of_its_random_state():
    model = build_model(from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 2}), symmetry=False)
    one = [ps.step() for ps in walk(model, random.Random(7), 12)]
    two = [ps.step() for ps in walk(model, random.Random(7), 12)]
    assert one == two
    assert one[0].action is None and 1 < len(one) <= 13
    assert all(a.state != b.state for a, b in zip(one, one[1:]))  # no step leaves the state as it is


def test_a_walk_ends_at_quiescence_and_never_exceeds_max_depth():
    chain = Toy({0: [(Act("go"), 1)], 1: [(Act("stay"), 1)]})
    path = list(walk(chain, random.Random(0), 5))
    assert [ps.state for ps in path] == [0, 1]  # "stay" changes nothing: the walk is over
    assert len(list(walk(Counters(), random.Random(0), 2))) == 3


@pytest.mark.parametrize("kind", [FAULT, TRANSITION, ALWAYS])
def test_a_walk_stops_at_the_first_step_that_breaks_a_property(kind):
    faults = {(0, Act("go")): "Legal"} if kind == FAULT else {}
    props = {
        FAULT: [],
        TRANSITION: [Property("Down", "transition", lambda a, b: b < a or a == 0 and b == 0)],
        ALWAYS: [Property("Zero", "always", lambda s: s == 0)],
    }[kind]
    toy = Toy({0: [(Act("go"), 1)], 1: [(Act("go"), 2)]}, faults=faults, props=props)
    path = list(walk(toy, random.Random(0), 5))
    assert len(path) == 2 and path[-1].kind == kind
    assert path[-1].state is (None if kind == FAULT else 1)
    assert path[-1].broken == [{FAULT: "Legal", TRANSITION: "Down", ALWAYS: "Zero"}[kind]]


def test_a_walk_can_pass_over_faulting_actions():
    toy = Toy({0: [(Act("bad"), 5), (Act("go"), 1)]}, faults={(0, Act("bad")): "Legal"})
    for seed in range(6):
        path = list(walk(toy, random.Random(seed), 3, skip_faults=True))
        assert [ps.state for ps in path] == [0, 1]


def test_replay_gives_the_checkers_trace_and_the_verdict_of_each_step():
    props = [Property("BelowTwoTwo", "always", lambda s: s != (2, 2))]
    model = Counters(props)
    checker = Checker(model)
    result = checker.run()
    v = result.violations[0]
    chain = checker.chain_to(hash((2, 2)))
    assert replay_fingerprints(model, chain) == v.trace
    path = replay_checked(model, chain)
    assert [ps.kind for ps in path] == ["", "", "", "", ALWAYS]
    assert path[-1].broken == ["BelowTwoTwo"]
    ended = verdicts([Step(None, (0, 0)), Step(Act("IncA"), None)], Checks(props))
    assert [ps.kind for ps in ended] == ["", FAULT]


def test_the_simulator_and_the_kit_walk_the_same_path():
    """simulate() is built on walk(): its first walk from a seed is the kit's walk from that seed."""
    from isrcheck.engine.simulate import simulate

    model = build_model(from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1}), symmetry=False)
    result = simulate(model, seed=11, walks=1, max_depth=9)
    path = list(walk(model, random.Random(11), 9))
    assert result.steps == len(path) - 1
    assert result.deepest == len(path) - 1


def test_model_fault_is_the_engines():
    with pytest.raises(ModelFault):
        Toy({0: [(Act("x"), 1)]}, faults={(0, Act("x")): "P"}).next_state(0, Act("x"))


def test_judged_as_made_or_after_the_batch_the_verdicts_and_witness_keys_agree():
    """Without seen_among a successor is judged as it is made; with it, after the batch: the same
    broken properties, and the same smallest witness key, whatever the order of the rows."""
    model = Counters([Property("NoB", "always", lambda s: s[1] == 0),
                      Property("BisOne", "sometimes", lambda s: s[1] == 1)])
    checks = Checks.of(model)
    level1 = [(hash((1, 0)), 0, (1, 0))]
    rows = [(s.fingerprint, rank, s.state) for rank, s in enumerate(sorted_new(expand(model, level1, checks=checks)))]
    # rows: (2,0) at rank 0 and (1,1) at rank 1; both reach (2,1), which breaks NoB and witnesses
    # BisOne, first at key (0,0); the rows backwards meet it first at (1,0)
    early = expand(model, rows, unwitnessed=["BisOne"], checks=checks)
    late = expand(model, rows, unwitnessed=["BisOne"], checks=checks, seen_among=lambda fps: [])
    backward = expand(model, list(reversed(rows)), unwitnessed=["BisOne"], checks=checks)
    for exp in (early, late, backward):
        assert {fp: x.broken for fp, x in exp.successors.items()} == {hash((2, 1)): ["NoB"]}
        assert exp.witness_keys == {"BisOne": (0, 0)} and exp.witnessed == {"BisOne"}
