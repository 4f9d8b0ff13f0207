"""The generic BFS checker (engine/checker.py) on toy models that know nothing about Kafka."""
from __future__ import annotations

from typing import NamedTuple

import pytest

from isrcheck.engine.checker import (
    Checker,
    ModelFault,
    Property,
    Step,
    replay_actions,
    replay_fingerprints,
)


class Act(NamedTuple):
    name: str
    arg: int = 0


class Toy:
    """A model from a plain transition table: state -> [(action, next state)]."""

    def __init__(self, edges, init=(0,), props=(), faults=None) -> None:
        self.edges = edges
        self.init = list(init)
        self.props = list(props)
        self.faults = faults or {}  # (state, action) -> property name raised as ModelFault
        self.calls = 0

    def init_states(self):
        return self.init

    def actions(self, s):
        return [a for a, _ in self.edges.get(s, [])]

    def next_state(self, s, a):
        self.calls += 1
        if (s, a) in self.faults:
            raise ModelFault(self.faults[(s, a)], f"{a.name} broke it in {s}")
        for b, t in self.edges.get(s, []):
            if b == a:
                return t
        raise AssertionError("not enabled")

    def properties(self):
        return self.props

    def fingerprint(self, s):
        return hash(s)


class Counters:
    """Two counters a, b in 0..2 with b <= a: IncA while a < 2, IncB while b < a.

    Reachable, by hand: (0,0) (1,0) (1,1) (2,0) (2,1) (2,2) -- six states.
    IncA is enabled in (0,0) (1,0) (1,1): 3 transitions; IncB in (1,0) (2,0) (2,1): 3 transitions.
    BFS depths: (0,0)=0, (1,0)=1, (2,0)=(1,1)=2, (2,1)=3, (2,2)=4.
    """

    def __init__(self, props=()) -> None:
        self.props = list(props)

    def init_states(self):
        return [(0, 0)]

    def actions(self, s):
        a, b = s
        out = []
        if a < 2:
            out.append(Act("IncA"))
        if b < a:
            out.append(Act("IncB"))
        return out

    def next_state(self, s, act):
        a, b = s
        return (a + 1, b) if act.name == "IncA" else (a, b + 1)

    def properties(self):
        return self.props

    def fingerprint(self, s):
        return hash(s)


def _states(trace):
    return [step.state for step in trace]


def _actions(trace):
    return [step.action for step in trace]


# ---------------------------------------------------------------------------- exploration
def test_distinct_states_transitions_depth_match_the_hand_computed_reachable_set():
    r = Checker(Counters()).run()
    assert r.outcome == "success"
    assert r.distinct_states == 6
    assert r.transitions == 6
    assert r.depth == 4
    assert r.coverage == {"IncA": 3, "IncB": 3}
    assert r.violations == [] and r.unwitnessed == [] and r.limit_hit is None


def test_every_reachable_state_is_visited_once():
    seen = []

    def record(s):
        seen.append(s)
        return True

    Checker(Counters([Property("Record", "always", record)])).run()
    assert sorted(seen) == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]


def test_duplicate_initial_states_count_once():
    m = Toy({0: [(Act("Go"), 1)]}, init=(0, 0, 1))
    r = Checker(m).run()
    assert r.distinct_states == 2
    assert r.transitions == 1


def test_coverage_counts_edges_into_visited_states_too():
    # a diamond: 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, and a self loop on 3
    m = Toy({0: [(Act("L"), 1), (Act("R"), 2)], 1: [(Act("Join"), 3)], 2: [(Act("Join"), 3)],
             3: [(Act("Loop"), 3)]})
    r = Checker(m).run()
    assert r.distinct_states == 4
    assert r.transitions == 5
    assert r.coverage == {"Join": 2, "L": 1, "Loop": 1, "R": 1}
    assert r.depth == 2


# ---------------------------------------------------------------------------- shortest counterexample
def _long_and_short():
    # the long path comes first in action order, so a depth-first search would report it
    edges = {
        0: [(Act("Long"), 1), (Act("Short"), 10)],
        1: [(Act("Long"), 2)],
        2: [(Act("Long"), 3)],
        3: [(Act("Long"), 99)],
        10: [(Act("Short"), 99)],
    }
    return Toy(edges, props=[Property("NotBad", "always", lambda s: s != 99)])


def test_bfs_reports_the_shortest_counterexample():
    r = Checker(_long_and_short()).run()
    assert r.outcome == "safety_failure"
    (v,) = r.violations
    assert v.property == "NotBad" and v.kind == "always"
    assert v.length == 2
    assert _states(v.trace) == [0, 10, 99]
    assert _actions(v.trace) == [None, Act("Short"), Act("Short")]


def test_counterexample_in_the_initial_state_has_length_zero():
    m = Toy({0: [(Act("Go"), 1)]}, props=[Property("Positive", "always", lambda s: s > 0)])
    (v,) = Checker(m).run().violations
    assert v.length == 0 and _states(v.trace) == [0]


def test_stop_on_first_false_collects_every_violation_sorted_by_length():
    m = Toy({0: [(Act("A"), 1)], 1: [(Act("A"), 2)], 2: []},
            props=[Property("Not2", "always", lambda s: s != 2), Property("Not1", "always", lambda s: s != 1)])
    r = Checker(m, stop_on_first=False).run()
    assert [(v.property, v.length) for v in r.violations] == [("Not1", 1), ("Not2", 2)]
    assert r.distinct_states == 3
    first = Checker(m).run()
    assert [v.property for v in first.violations] == ["Not1"]


def test_trace_states_are_replayed_concrete_states():
    m = _long_and_short()
    (v,) = Checker(m).run().violations
    replayed = replay_actions(m, [step.action for step in v.trace[1:]])
    assert replayed == v.trace
    fps = [m.fingerprint(s) for s in _states(v.trace)]
    assert replay_fingerprints(m, fps) == v.trace


def test_replay_actions_rejects_a_disabled_action():
    with pytest.raises(ValueError, match="step 1"):
        replay_actions(_long_and_short(), [Act("Missing")])


# ---------------------------------------------------------------------------- limits and outcomes
def test_depth_limit_gives_incomplete():
    r = Checker(Counters(), max_depth=2).run()
    assert r.outcome == "incomplete"
    assert r.limit_hit == "depth"
    # discovered: depth 0, 1 and 2 -- (0,0) (1,0) (2,0) (1,1); depth-2 states are not expanded
    assert r.distinct_states == 4
    assert r.depth == 2
    assert r.transitions == 3  # IncA from (0,0); IncA and IncB from (1,0)


def test_state_limit_gives_incomplete():
    r = Checker(Counters(), max_states=3).run()
    assert r.outcome == "incomplete"
    assert r.limit_hit == "states"
    assert r.distinct_states == 3


def test_limits_do_not_hide_a_violation_found_within_them():
    r = Checker(_long_and_short(), max_depth=2).run()
    assert r.outcome == "safety_failure"
    assert r.violations[0].length == 2


def test_violation_beyond_depth_limit_is_incomplete_not_success():
    m = Toy({0: [(Act("A"), 1)], 1: [(Act("A"), 2)], 2: [(Act("A"), 3)]},
            props=[Property("Not3", "always", lambda s: s != 3)])
    assert Checker(m, max_depth=2).run().outcome == "incomplete"
    assert Checker(m).run().outcome == "safety_failure"


def test_never_witnessed_sometimes_property_is_vacuous():
    r = Checker(Counters([Property("ReachesThree", "sometimes", lambda s: s[0] == 3)])).run()
    assert r.outcome == "vacuous"
    assert r.unwitnessed == ["ReachesThree"]
    assert r.distinct_states == 6  # the search still ran to the end


def test_witnessed_sometimes_property_succeeds():
    props = [Property("BothTwo", "sometimes", lambda s: s == (2, 2)),
             Property("Start", "sometimes", lambda s: s == (0, 0))]
    r = Checker(Counters(props)).run()
    assert r.outcome == "success" and r.unwitnessed == []


# ---------------------------------------------------------------------------- transition properties
def test_transition_property_is_checked_on_an_edge_into_a_visited_state():
    # 0 -> 1 (Up) and 1 -> 0 (Reset): the only decreasing step leads back to the initial state
    m = Toy({0: [(Act("Up"), 1)], 1: [(Act("Reset"), 0)]},
            props=[Property("NeverDecreases", "transition", lambda s, t: t >= s)])
    r = Checker(m).run()
    assert r.outcome == "safety_failure"
    (v,) = r.violations
    assert v.property == "NeverDecreases" and v.kind == "transition"
    assert _states(v.trace) == [0, 1, 0]
    assert v.trace[-1].action == Act("Reset")
    assert r.distinct_states == 2


def test_transition_property_holding_everywhere_passes():
    m = Toy({0: [(Act("Up"), 1)], 1: [(Act("Up"), 2)], 2: [(Act("Stay"), 2)]},
            props=[Property("NeverDecreases", "transition", lambda s, t: t >= s)])
    assert Checker(m).run().outcome == "success"


# ---------------------------------------------------------------------------- ModelFault
def test_model_fault_is_a_violation_of_its_property_with_the_action_last():
    edges = {0: [(Act("A"), 1)], 1: [(Act("A"), 2), (Act("Boom"), 3)], 2: [], 3: []}
    m = Toy(edges, faults={(1, Act("Boom")): "OnlyLegalMoves"})
    r = Checker(m).run()
    assert r.outcome == "safety_failure"
    (v,) = r.violations
    assert v.property == "OnlyLegalMoves"
    assert v.kind == "transition"
    assert v.message == "Boom broke it in 1"
    assert _actions(v.trace) == [None, Act("A"), Act("Boom")]
    assert v.trace[-1] == Step(Act("Boom"), None)
    assert v.length == 2
    assert 3 not in [s for s in _states(v.trace)]  # the faulting step produced no state


def test_model_fault_does_not_count_as_a_transition():
    m = Toy({0: [(Act("A"), 1), (Act("Boom"), 2)], 1: []}, faults={(0, Act("Boom")): "P"})
    r = Checker(m, stop_on_first=False).run()
    assert r.transitions == 1
    assert r.coverage == {"A": 1}
    assert r.distinct_states == 2
    assert [v.property for v in r.violations] == ["P"]


# ---------------------------------------------------------------------------- determinism
def test_two_runs_are_identical():
    def run():
        r = Checker(_long_and_short(), stop_on_first=False).run()
        return (r.outcome, r.distinct_states, r.transitions, r.depth, r.coverage,
                [(v.property, v.trace) for v in r.violations])

    assert run() == run()


def test_progress_callback_reports_final_counts():
    reports = []
    r = Checker(Counters(), progress=reports.append, progress_every=0.0).run()
    assert reports, "progress was never reported"
    assert reports[-1].states == r.distinct_states == 6
    assert reports[-1].queue == 0
