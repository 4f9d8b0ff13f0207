"""The generic liveness checker (engine/liveness.py) on toy models that know nothing about Kafka.

Every model here is a transition table over small ints; ``fair_key`` says which actions are weakly
fair. The property-based tests compare the checker with independent oracles: networkx for the
strongly connected components, and a brute force over every set of states for the verdicts.
"""
from __future__ import annotations

import itertools
from collections import deque
from typing import NamedTuple

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from isrcheck.engine.core import ModelFault
from isrcheck.engine.liveness import (
    NO_LABEL,
    LeadsTo,
    LivenessError,
    build_graph,
    check_liveness,
    components,
    is_fair,
    lasso_for,
    lasso_steps,
)


class Act(NamedTuple):
    name: str
    arg: int = 0


class Toy:
    """A model from a plain transition table: state -> [(action, next state)].

    ``fair`` names the weakly fair actions (their fairness instance is the action's name unless
    ``key`` maps an action to another instance); ``faults`` are (state, action) pairs whose step
    raises :class:`ModelFault`.
    """

    def __init__(self, edges, init=(0,), fair=(), key=None, faults=()) -> None:
        self.edges = edges
        self.init = list(init)
        self.fair = set(fair)
        self.key = key or (lambda a: a.name)
        self.faults = set(faults)

    def init_states(self):
        return self.init

    def actions(self, s):
        return [a for a, _ in self.edges.get(s, [])]

    def next_state(self, s, a):
        if (s, a) in self.faults:
            raise ModelFault("Fault", f"{a} in {s}")
        for b, t in self.edges.get(s, []):
            if b == a:
                return t
        raise AssertionError(f"{a} is not enabled in {s}")

    def properties(self):
        return []

    def fingerprint(self, s):
        return hash(s)

    def fair_key(self, a):
        return self.key(a) if a.name in self.fair else None


def eventually(goal, name="Eventually") -> LeadsTo:
    """``<> goal`` as ``TRUE ~> goal`` with one instance (the premise holds everywhere, so at init)."""
    return LeadsTo(name, ("it",), lambda s: (1, int(bool(goal(s)))))


def leads_to(premise, goal, name="LeadsTo") -> LeadsTo:
    return LeadsTo(name, ("it",), lambda s: (int(bool(premise(s))), int(bool(goal(s)))))


def states(trace):
    return [step.state for step in trace]


def assert_real_lasso(model, verdict, goal=None):
    """The violation's trace is a run of ``model`` from an initial state, and a lasso: the last
    state equals the loop's first one, or the behaviour stutters there. With ``goal`` (a
    predicate), the goal fails from the premise state on."""
    v = verdict.violation
    assert verdict.holds is False and v is not None and verdict.lasso is not None
    trace, loop = v.trace, v.loop
    assert v.kind == "liveness" and loop == verdict.lasso.loop
    assert len(trace) == len(verdict.lasso.chain)
    assert 0 <= loop <= len(trace) - 1
    assert trace[0].action is None and trace[0].state in model.init_states()
    for prev, step in itertools.pairwise(trace):
        assert step.action in model.actions(prev.state)
        assert model.next_state(prev.state, step.action) == step.state
        assert step.state != prev.state  # no stuttering step is ever shown
    if loop < len(trace) - 1:
        assert trace[-1].state == trace[loop].state
    else:
        assert verdict.lasso.stutters
    if goal is not None:
        assert all(not goal(s) for s in states(trace[verdict.lasso.premise_at:]))


def fair_enabled(model, s):
    """The fair instances enabled at ``s``: actions that change the state (and do not fault)."""
    out = set()
    for a in model.actions(s):
        if (s, a) in getattr(model, "faults", ()):
            continue
        if model.fair_key(a) is not None and model.next_state(s, a) != s:
            out.add(model.fair_key(a))
    return out


def bfs_distance(model, targets):
    """Fewest steps from an initial state to a state of ``targets``, by a plain BFS."""
    dist = {s: 0 for s in model.init_states()}
    queue = deque(model.init_states())
    while queue:
        s = queue.popleft()
        if s in targets:
            return dist[s]
        for a in model.actions(s):
            t = model.next_state(s, a)
            if t not in dist:
                dist[t] = dist[s] + 1
                queue.append(t)
    return None


# ---------------------------------------------------------------------------- 1. fairness decides
class Counter:
    """x in 0..n: ``Inc`` while x < n, and ``Stay`` (a step that changes nothing) always."""

    def __init__(self, n=3, inc_fair=True) -> None:
        self.n = n
        self.inc_fair = inc_fair

    def init_states(self):
        return [0]

    def actions(self, x):
        return ([Act("Inc")] if x < self.n else []) + [Act("Stay")]

    def next_state(self, x, a):
        return x + 1 if a.name == "Inc" else x

    def properties(self):
        return []

    def fingerprint(self, x):
        return hash(x)

    def fair_key(self, a):
        return "Inc" if a.name == "Inc" and self.inc_fair else None


def test_eventually_holds_when_the_only_way_forward_is_weakly_fair():
    m = Counter(3, inc_fair=True)
    r = check_liveness(m, [eventually(lambda x: x == 3, "ReachesN")])
    assert [(v.property, v.holds) for v in r.verdicts] == [("ReachesN", True)]
    assert r.broken == [] and r.complete
    assert r.states == 4 and r.edges == 3  # Stay changes nothing: never an edge


def test_without_fairness_the_behaviour_may_stutter_at_the_initial_state():
    m = Counter(3, inc_fair=False)
    r = check_liveness(m, [eventually(lambda x: x == 3, "ReachesN")])
    (v,) = r.verdicts
    assert v.holds is False and r.broken == [v]
    assert v.violation.loop == 0 and len(v.violation.trace) == 1
    assert states(v.violation.trace) == [0]
    assert v.lasso.stutters and v.lasso.premise_at == 0 and v.lasso.instance == "it"
    assert "stutters" in v.violation.message
    assert_real_lasso(m, v, lambda x: x == 3)


def test_an_unfair_action_only_at_the_last_step_stutters_just_before_the_goal():
    fair_up_to_2 = Toy({0: [(Act("Inc"), 1)], 1: [(Act("Inc"), 2)], 2: [(Act("Last"), 3)]}, fair={"Inc"})
    r = check_liveness(fair_up_to_2, [eventually(lambda x: x == 3)])
    (v,) = r.verdicts
    assert states(v.violation.trace) == [0, 1, 2] and v.violation.loop == 2
    assert_real_lasso(fair_up_to_2, v, lambda x: x == 3)


# ---------------------------------------------------------------------------- 2. a real cycle
#
#   0 --Go--> 1 --Tick--> 2 --Tick--> 3 --Tick--> 1        (Tick is fair: the cycle 1 2 3 takes it)
#   0 --Slow--> 5 --Slow--> 6 --Slow--> 2                  (a longer way into the cycle)
#   2 --Escape--> 9                                        (the goal, never forced: Escape is unfair)
# Go and Slow are fair too, so that no behaviour may stutter before the cycle.
CYCLE = {
    0: [(Act("Slow"), 5), (Act("Go"), 1)],
    5: [(Act("Slow"), 6)],
    6: [(Act("Slow"), 2)],
    1: [(Act("Tick"), 2)],
    2: [(Act("Escape"), 9), (Act("Tick"), 3)],
    3: [(Act("Tick"), 1)],
    9: [],
}


CYCLE_FAIR = {"Go", "Slow", "Tick"}


def test_a_fair_cycle_that_avoids_the_goal_is_a_replayable_shortest_stem_lasso():
    m = Toy(CYCLE, fair=CYCLE_FAIR)
    r = check_liveness(m, [eventually(lambda s: s == 9, "Escapes")])
    (v,) = r.verdicts
    assert_real_lasso(m, v, lambda s: s == 9)
    trace, loop = v.violation.trace, v.violation.loop
    assert loop < len(trace) - 1, "a real loop, not stuttering"
    assert trace[-1].state == trace[loop].state
    cycle_states = set(states(trace[loop:]))
    assert cycle_states == {1, 2, 3}  # the only cycle; it must go all the way round
    assert any(step.action.name == "Tick" for step in trace[loop + 1:])
    # the stem is a shortest path into the cycle (0 -> 1, not 0 -> 5 -> 6 -> 2)
    assert loop == bfs_distance(m, cycle_states) == 1
    assert states(trace[: loop + 1]) == [0, 1]
    assert len(trace) - 1 - loop == 3  # the loop has three steps: 1 -> 2 -> 3 -> 1
    assert "loop from step 1" in v.violation.message


def test_leads_to_with_a_premise_deep_in_the_graph_starts_the_lasso_there():
    # P holds only at 3: the stem must go through 3, then stay in the cycle (which 3 is part of)
    m = Toy(CYCLE, fair=CYCLE_FAIR)
    r = check_liveness(m, [leads_to(lambda s: s == 3, lambda s: s == 9)])
    (v,) = r.verdicts
    assert_real_lasso(m, v, lambda s: s == 9)
    assert v.violation.trace[v.lasso.premise_at].state == 3
    assert v.lasso.premise_at == 3  # 0 1 2 3 is the shortest way to 3


def test_the_goal_holding_at_the_premise_discharges_it():
    m = Toy(CYCLE, fair=CYCLE_FAIR)
    r = check_liveness(m, [leads_to(lambda s: s == 2, lambda s: s in (2, 9))])
    assert r.verdicts[0].holds is True


def test_premise_never_holds_is_vacuously_true():
    m = Toy(CYCLE, fair=CYCLE_FAIR)
    r = check_liveness(m, [leads_to(lambda s: s == 42, lambda s: False)])
    assert r.verdicts[0].holds is True


# ---------------------------------------------------------------------------- 3. an unfair cycle
#   0 <--A/B--> 1 ; Exit (enabled at 0 and at 1) leads to the goal 2
def exit_model(exit_fair: bool, exit_key=None, cycle_fair=True):
    edges = {
        0: [(Act("A"), 1), (Act("Exit", 0), 2)],
        1: [(Act("B"), 0), (Act("Exit", 1), 2)],
        2: [],
    }
    fair = ({"A", "B"} if cycle_fair else set()) | ({"Exit"} if exit_fair else set())
    return Toy(edges, fair=fair, key=exit_key)


def test_a_cycle_that_never_takes_a_continuously_enabled_fair_action_is_not_a_counterexample():
    r = check_liveness(exit_model(exit_fair=True), [eventually(lambda s: s == 2)])
    assert r.verdicts[0].holds is True
    r = check_liveness(exit_model(exit_fair=True, cycle_fair=False), [eventually(lambda s: s == 2)])
    assert r.verdicts[0].holds is True


def test_the_same_cycle_is_the_counterexample_once_the_exit_is_not_fair():
    m = exit_model(exit_fair=False)
    (v,) = check_liveness(m, [eventually(lambda s: s == 2)]).verdicts
    assert_real_lasso(m, v, lambda s: s == 2)
    assert states(v.violation.trace) == [0, 1, 0] and v.violation.loop == 0
    assert [step.action.name for step in v.violation.trace[1:]] == ["A", "B"]


def test_with_nothing_fair_the_lasso_stutters_at_the_initial_state():
    m = exit_model(exit_fair=False, cycle_fair=False)
    (v,) = check_liveness(m, [eventually(lambda s: s == 2)]).verdicts
    assert v.violation.loop == 0 and len(v.violation.trace) == 1 and v.lasso.stutters


def test_fairness_is_per_instance_an_exit_instance_disabled_somewhere_on_the_cycle_is_not_owed():
    # Exit(0) and Exit(1) are two fairness instances: each is disabled at one state of the cycle,
    # so going round forever is fair to both (weak fairness, not strong)
    m = exit_model(exit_fair=True, exit_key=lambda a: ("Exit", a.arg))
    (v,) = check_liveness(m, [eventually(lambda s: s == 2)]).verdicts
    assert_real_lasso(m, v, lambda s: s == 2)
    assert set(states(v.violation.trace[v.violation.loop:])) == {0, 1}


# ---------------------------------------------------------------------------- 4. weak fairness subtleties
#   0 -> 1 -> 2 -> 0 by Step (unfair); Leave (fair) goes to the goal 3 from the states listed
def ring_model(leave_at):
    edges = {s: [(Act("Step"), (s + 1) % 3)] + ([(Act("Leave"), 3)] if s in leave_at else []) for s in range(3)}
    edges[3] = []
    return Toy(edges, fair={"Leave"})


def test_a_fair_action_enabled_all_around_the_cycle_forces_the_exit():
    r = check_liveness(ring_model({0, 1, 2}), [eventually(lambda s: s == 3)])
    assert r.verdicts[0].holds is True


def test_a_fair_action_disabled_at_one_state_of_the_cycle_does_not_force_anything():
    m = ring_model({0, 1})
    (v,) = check_liveness(m, [eventually(lambda s: s == 3)]).verdicts
    assert_real_lasso(m, v, lambda s: s == 3)
    trace, loop = v.violation.trace, v.violation.loop
    assert set(states(trace[loop:])) == {0, 1, 2}  # the loop must pass through 2, where Leave is off
    assert loop == 0 and len(trace) == 4


def test_a_self_loop_does_not_make_a_fair_action_enabled_on_a_cycle():
    # 0 <-> 1 by unfair steps; fair F goes to the goal from 1 but changes nothing at 0: at 0, F is
    # not ENABLED <<F>>_vars, so the cycle is fair. Counting the self-loop would make it hold.
    edges = {0: [(Act("F"), 0), (Act("A"), 1)], 1: [(Act("F"), 2), (Act("B"), 0)], 2: []}
    m = Toy(edges, fair={"F"})
    (v,) = check_liveness(m, [eventually(lambda s: s == 2)]).verdicts
    assert_real_lasso(m, v, lambda s: s == 2)
    assert v.violation.loop == 0  # at 0 nothing fair is enabled: stuttering there is fair
    # with F enabled for real at 0 too (to the goal), the property holds
    edges2 = {0: [(Act("F"), 2), (Act("A"), 1)], 1: [(Act("F"), 2), (Act("B"), 0)], 2: []}
    assert check_liveness(Toy(edges2, fair={"F"}), [eventually(lambda s: s == 2)]).verdicts[0].holds is True


def test_a_state_whose_only_fair_action_is_a_self_loop_may_stutter_forever():
    m = Toy({0: [(Act("F"), 0), (Act("G"), 1)], 1: []}, fair={"F"})
    (v,) = check_liveness(m, [eventually(lambda s: s == 1)]).verdicts
    assert v.lasso.stutters and states(v.violation.trace) == [0]
    g = build_graph(m, [])
    assert g.edges == 1 and g.fair_enabled(0) == set()
    assert is_fair(g, [0])


def test_a_step_that_raises_model_fault_is_not_an_enabled_fair_action():
    # F at 0 would lead to the goal but raises ModelFault: the graph leaves it out, so nothing fair
    # is enabled at 0 and the behaviour may stutter there
    m = Toy({0: [(Act("F"), 1)], 1: []}, fair={"F"}, faults={(0, Act("F"))})
    (v,) = check_liveness(m, [eventually(lambda s: s == 1)]).verdicts
    assert v.holds is False and v.lasso.stutters
    assert check_liveness(Toy(m.edges, fair={"F"}), [eventually(lambda s: s == 1)]).verdicts[0].holds


def test_a_cycle_that_takes_a_fair_instance_inside_is_fair_even_when_the_instance_also_exits():
    # Tick is enabled everywhere on 0 <-> 1 (to 1, back to 0) and also from 1 to the goal: the
    # behaviour that always picks the cycle's Tick is fair (weak fairness on the instance)
    edges = {0: [(Act("Tick", 0), 1)], 1: [(Act("Tick", 1), 2), (Act("Tick", 2), 0)], 2: []}
    m = Toy(edges, fair={"Tick"})
    (v,) = check_liveness(m, [eventually(lambda s: s == 2)]).verdicts
    assert_real_lasso(m, v, lambda s: s == 2)
    assert states(v.violation.trace) == [0, 1, 0]


def test_is_fair_on_hand_built_components():
    m = ring_model({0, 1, 2})
    g = build_graph(m, [])
    assert g.states == 4
    ring = [g.number(m.fingerprint(s)) for s in (0, 1, 2)]
    assert not is_fair(g, ring)  # Leave enabled at all three, never taken inside
    assert is_fair(g, [g.number(m.fingerprint(3))])  # the goal: a deadlock, nothing enabled
    m2 = ring_model({0, 1})
    g2 = build_graph(m2, [])
    assert is_fair(g2, [g2.number(m2.fingerprint(s)) for s in (0, 1, 2)])
    assert not is_fair(g2, [g2.number(m2.fingerprint(0))])  # Leave enabled at 0: no stuttering there
    assert is_fair(g2, [g2.number(m2.fingerprint(2))])  # only the unfair Step at 2


# ---------------------------------------------------------------------------- 5. instances
def test_only_the_broken_instance_is_named():
    # x in 0..3 by fair Inc. Instance a: premise never -> holds; b: goal never -> broken;
    # c: goal x == 3 -> holds under fairness.
    m = Counter(3, inc_fair=True)

    def masks(x):
        premise = 0b110  # b and c at every state, a never
        goal = (1 << 2) if x == 3 else 0
        return premise, goal

    prop = LeadsTo("Progress", ("a", "b", "c"), masks)
    r = check_liveness(m, [prop])
    (v,) = r.verdicts
    assert v.holds is False and v.lasso.instance == "b"
    assert v.violation.message.startswith("b:")
    assert_real_lasso(m, v)
    # b's goal never holds; fair Inc drives the counter to 3, where nothing fair is enabled
    assert states(v.violation.trace) == [0, 1, 2, 3] and v.lasso.stutters


def test_each_instance_is_checked_on_its_own_bit():
    m = Counter(3, inc_fair=True)
    # instance i's premise is x == 0 and its goal x == i for i in 0..2 (all reached: the counter
    # passes every value), instance 3's premise is x == 1 and its goal x == 0 (never again): only
    # instance 3 is broken
    names = ("x0", "x1", "x2", "back")

    def masks(x):
        premise = (0b0111 if x == 0 else 0) | (0b1000 if x == 1 else 0)
        goal = (1 << x if x < 3 else 0) | (0b1000 if x == 0 else 0)
        return premise, goal

    (v,) = check_liveness(m, [LeadsTo("P", names, masks)]).verdicts
    assert v.lasso.instance == "back"
    assert v.violation.trace[v.lasso.premise_at].state == 1
    # instance x1 alone is fine even though its premise holds at 0 and its goal comes later
    ok = LeadsTo("Q", names[:3], lambda x: (0b111 if x == 0 else 0, 1 << x if x < 3 else 0))
    assert check_liveness(m, [ok]).verdicts[0].holds is True
    # with the premises everywhere, x0 (the lowest bit, first among equal stems) is broken from
    # x == 1 on: the lasso stutters at 3 (x1 and x2 are broken too, by stems as long)
    everywhere = LeadsTo("R", names[:3], lambda x: (0b111, 1 << x if x < 3 else 0))
    (v,) = check_liveness(m, [everywhere]).verdicts
    assert v.lasso.instance == "x0" and v.lasso.premise_at >= 1
    assert states(v.violation.trace) == [0, 1, 2, 3] and v.lasso.stutters


def test_several_properties_get_one_verdict_each_in_order():
    m = Counter(3, inc_fair=True)
    props = [eventually(lambda x: x == 3, "Good"), eventually(lambda x: x == 7, "Bad"),
             eventually(lambda x: x >= 2, "AlsoGood")]
    r = check_liveness(m, props, fairness=["WF(Inc)"])
    assert [(v.property, v.holds) for v in r.verdicts] == [("Good", True), ("Bad", False), ("AlsoGood", True)]
    assert [v.property for v in r.broken] == ["Bad"]
    assert r.fairness == ["WF(Inc)"]


# ---------------------------------------------------------------------------- 6. components vs networkx
class GraphModel:
    """States are ints 0..n-1, all initial; an action is an edge (u, v, label)."""

    def __init__(self, n, edges, init=None) -> None:
        self.n = n
        self.out = {u: [] for u in range(n)}
        for i, (u, v, lab) in enumerate(edges):
            self.out[u].append((i, u, v, lab))
        self.init = list(range(n)) if init is None else list(init)

    def init_states(self):
        return self.init

    def actions(self, s):
        return self.out[s]

    def next_state(self, s, a):
        return a[2]

    def properties(self):
        return []

    def fingerprint(self, s):
        return hash(s)

    def fair_key(self, a):
        return a[3]


@st.composite
def digraphs(draw, max_nodes=9, labels=(None,)):
    n = draw(st.integers(1, max_nodes))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from(labels)),
                          max_size=3 * n))
    return n, edges


@settings(max_examples=300, deadline=None)
@given(digraphs())
def test_components_agree_with_networkx(graph):
    n, edges = graph
    m = GraphModel(n, edges)
    g = build_graph(m, [])
    assert g.states == n
    fp_to_state = {m.fingerprint(s): s for s in range(n)}
    ours = {frozenset(fp_to_state[g.fps[v]] for v in comp) for comp in components(g, range(g.states))}
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from((u, v) for u, v, _ in edges)
    theirs = {frozenset(c) for c in nx.strongly_connected_components(G)}
    assert ours == theirs
    assert sum(len(c) for c in ours) == n  # a partition


@settings(max_examples=200, deadline=None)
@given(digraphs(), st.data())
def test_components_of_an_induced_subgraph_agree_with_networkx(graph, data):
    n, edges = graph
    m = GraphModel(n, edges)
    g = build_graph(m, [])
    keep = data.draw(st.sets(st.integers(0, n - 1)))
    sub = sorted(g.number(m.fingerprint(s)) for s in keep)
    members = set(sub)
    ours = {frozenset(int(g.fps[v]) for v in comp) for comp in components(g, sub, members.__contains__)}
    G = nx.DiGraph()
    G.add_nodes_from(keep)
    G.add_edges_from((u, v) for u, v, _ in edges if u in keep and v in keep)
    theirs = {frozenset(hash(s) for s in c) for c in nx.strongly_connected_components(G)}
    assert ours == theirs


def test_components_survive_a_long_chain_and_a_big_cycle_without_recursion():
    n = 5000  # deeper than CPython's default recursion limit
    chain = GraphModel(n, [(i, i + 1, None) for i in range(n - 1)], init=[0])
    g = build_graph(chain, [])
    assert len(components(g, range(g.states))) == n
    ring = GraphModel(n, [(i, (i + 1) % n, None) for i in range(n)], init=[0])
    g = build_graph(ring, [])
    (comp,) = components(g, range(g.states))
    assert len(comp) == n


# ---------------------------------------------------------------------------- 7. shortest stem
def test_the_shallower_of_two_bad_sinks_is_chosen():
    # deep:    0 -> 1 -> 2 -> 3 (a deadlock, not the goal)   listed first, so found first
    # shallow: 0 -> 10 -> 11 <-> 12 (a fair cycle avoiding the goal)
    # and 0 -> 20 (the goal); everything is fair
    edges = {
        0: [(Act("Deep"), 1), (Act("Shallow"), 10), (Act("Win"), 20)],
        1: [(Act("Deep"), 2)], 2: [(Act("Deep"), 3)], 3: [],
        10: [(Act("Shallow"), 11)], 11: [(Act("Spin"), 12)], 12: [(Act("Spin"), 11)],
        20: [],
    }
    m = Toy(edges, fair={"Deep", "Shallow", "Spin", "Win"})
    # Deep/Shallow/Win share nothing: each is its own instance. At 0 they are all enabled, but the
    # behaviour leaves 0 at once, so weak fairness says nothing about them.
    (v,) = check_liveness(m, [eventually(lambda s: s == 20)]).verdicts
    assert_real_lasso(m, v, lambda s: s == 20)
    assert v.violation.loop == 2 and states(v.violation.trace[:3]) == [0, 10, 11]
    assert set(states(v.violation.trace[2:])) == {11, 12}
    # and with the shallow branch ending in the goal, the deep deadlock is the counterexample
    edges2 = dict(edges)
    edges2[11] = [(Act("Spin"), 20)]
    edges2[12] = []
    m2 = Toy(edges2, fair={"Deep", "Shallow", "Spin", "Win"})
    (v2,) = check_liveness(m2, [eventually(lambda s: s in (12, 20))]).verdicts
    assert states(v2.violation.trace) == [0, 1, 2, 3] and v2.lasso.stutters


def test_the_stem_is_shortest_over_every_premise_state_not_the_shallowest_premise():
    # premise at 1 (depth 1) far from the bad sink: 1 -> 2 -> 3 -> 4 -> 5 -> 9
    # premise at 7 (depth 3) right next to it:       0 -> 6 -> 8 -> 7 -> 9
    # 9 is a deadlock; the goal is 99, reachable by an unfair step from everywhere on the way
    edges = {
        0: [(Act("L"), 1), (Act("R"), 6)],
        1: [(Act("L"), 2)], 2: [(Act("L"), 3)], 3: [(Act("L"), 4)], 4: [(Act("L"), 5)], 5: [(Act("L"), 9)],
        6: [(Act("R"), 8)], 8: [(Act("R"), 7)], 7: [(Act("R"), 9)],
        9: [],
    }
    m = Toy(edges, fair={"L", "R"})
    (v,) = check_liveness(m, [leads_to(lambda s: s in (1, 7), lambda s: s == 99)]).verdicts
    assert_real_lasso(m, v, lambda s: s == 99)
    assert states(v.violation.trace) == [0, 6, 8, 7, 9]
    assert v.lasso.premise_at == 3 and v.lasso.stutters
    # the goal at 8 forbids the way through it before the premise? No: the goal only matters after
    # the premise, so the same stem stands when 8 is a goal state
    (v2,) = check_liveness(m, [leads_to(lambda s: s in (1, 7), lambda s: s == 8)]).verdicts
    assert states(v2.violation.trace) == [0, 6, 8, 7, 9]
    # but a goal at 7 itself discharges that premise: the long way is the only counterexample
    (v3,) = check_liveness(m, [leads_to(lambda s: s in (1, 7), lambda s: s == 7)]).verdicts
    assert states(v3.violation.trace) == [0, 1, 2, 3, 4, 5, 9] and v3.lasso.premise_at == 1


def test_the_instance_with_the_shortest_stem_is_reported():
    # instance "far" fails only at the deadlock 3 (depth 3), instance "near" at the deadlock 10 (depth 1)
    edges = {0: [(Act("Go"), 1), (Act("Near"), 10)], 1: [(Act("Go"), 2)], 2: [(Act("Go"), 3)], 3: [], 10: []}
    m = Toy(edges, fair={"Go", "Near"})

    def masks(s):
        goal_far = 0 if s == 3 else 1
        goal_near = 0 if s == 10 else 2
        return 0b11, goal_far | goal_near

    (v,) = check_liveness(m, [LeadsTo("Two", ("far", "near"), masks)]).verdicts
    assert v.lasso.instance == "near" and states(v.violation.trace) == [0, 10]
    g = build_graph(m, [LeadsTo("Two", ("far", "near"), masks)])
    lasso = lasso_for(g, LeadsTo("Two", ("far", "near"), masks), 0)
    assert lasso is not None and lasso.instance == "near"
    assert [step.state for step in lasso_steps(m, g, lasso)] == [0, 10]


# ---------------------------------------------------------------------------- 8. incomplete graphs
def test_a_graph_cut_short_gives_no_verdict():
    m = Counter(10, inc_fair=False)
    props = [eventually(lambda x: x == 10, "Broken"), eventually(lambda x: x >= 0, "Trivial")]
    g = build_graph(m, props, max_states=4)
    assert not g.complete and g.states == 4
    r = check_liveness(m, props, max_states=4)
    assert not r.complete
    assert [(v.property, v.holds, v.violation) for v in r.verdicts] == [("Broken", None, None), ("Trivial", None, None)]
    assert r.broken == []


def test_a_limit_that_is_not_reached_leaves_the_graph_complete():
    m = Counter(3, inc_fair=False)
    assert build_graph(m, [], max_states=4).complete
    r = check_liveness(m, [eventually(lambda x: x == 3)], max_states=4)
    assert r.complete and r.verdicts[0].holds is False


# ---------------------------------------------------------------------------- 9. too many instances
def test_more_than_64_instances_is_refused():
    m = Counter(1)
    names = tuple(f"i{k}" for k in range(65))
    prop = LeadsTo("Wide", names, lambda x: (0, 0))
    with pytest.raises(LivenessError, match="65 instances"):
        check_liveness(m, [prop])
    with pytest.raises(LivenessError):
        build_graph(m, [prop])


def test_exactly_64_instances_work_and_the_top_bit_is_checked():
    m = Counter(1, inc_fair=True)
    names = tuple(f"i{k}" for k in range(64))
    all_bits = (1 << 64) - 1
    # every instance's goal is x == 1, except the last one (bit 63) whose goal never holds
    prop = LeadsTo("Wide", names, lambda x: (all_bits, (all_bits >> 1) if x == 1 else 0))
    (v,) = check_liveness(m, [prop]).verdicts
    assert v.holds is False and v.lasso.instance == "i63"


# ---------------------------------------------------------------------------- graph layout
def test_graph_keeps_only_edges_that_change_the_state_with_their_fair_labels():
    m = Toy(CYCLE, fair=CYCLE_FAIR)
    g = build_graph(m, [eventually(lambda s: s == 9)])
    assert g.states == 7 and g.complete
    assert g.edges == 8  # every edge of CYCLE
    assert sorted(g.keys) == ["Go", "Slow", "Tick"]
    names = [g.keys[lab] if lab != NO_LABEL else None for lab in g.label]
    assert sorted(names, key=str) == sorted(["Slow", "Go", "Slow", "Slow", "Tick", None, "Tick", "Tick"], key=str)
    assert list(g.depth) == sorted(g.depth)  # breadth first
    for v in range(g.states):
        chain = g.chain(v)
        assert len(chain) == g.depth[v] + 1 and chain[-1] == v
    assert g.bytes > 0 and g.seconds >= 0


# ---------------------------------------------------------------------------- against a brute force
def _oracle(model, n, instances, masks):
    """Per instance: the fewest steps of a stem to a fair lasso, or None when it holds. Every set of
    states is tried as the set a behaviour visits forever (no maximal components, no greedy loop)."""
    init = model.init_states()
    reach = set(init)
    queue = deque(init)
    succ = {}
    while queue:
        s = queue.popleft()
        succ[s] = [(model.next_state(s, a), model.fair_key(a)) for a in model.actions(s)]
        succ[s] = [(t, k) for t, k in succ[s] if t != s]
        for t, _ in succ[s]:
            if t not in reach:
                reach.add(t)
                queue.append(t)
    enabled = {s: {k for _, k in succ[s] if k is not None} for s in reach}
    out = []
    for bit in range(len(instances)):
        notq = {s for s in reach if not masks(s)[1] >> bit & 1}
        prem = {s for s in notq if masks(s)[0] >> bit & 1}
        loop_states = set()
        for r in range(1, len(notq) + 1):
            for S in itertools.combinations(sorted(notq), r):
                S = set(S)
                if loop_states >= S:
                    continue
                if len(S) == 1:
                    (s,) = S
                    if not enabled[s]:
                        loop_states |= S
                    continue
                G = nx.DiGraph()
                G.add_nodes_from(S)
                G.add_edges_from((u, t) for u in S for t, _ in succ[u] if t in S)
                if not nx.is_strongly_connected(G):
                    continue
                always = set.intersection(*(enabled[s] for s in S))
                taken = {k for u in S for t, k in succ[u] if t in S}
                if always <= taken:
                    loop_states |= S
        # BFS over (state, premise seen)
        start = [(s, 0) for s in init] + [(s, 1) for s in init if s in prem]
        dist = {x: 0 for x in start}
        queue = deque(start)
        best = None
        while queue:
            s, ph = queue.popleft()
            if ph == 1 and s in loop_states:
                best = dist[(s, ph)]
                break
            for t, _ in succ[s]:
                nxt = [(t, 0)] + ([(t, 1)] if t in prem else [])
                if ph == 1:
                    nxt = [(t, 1)] if t in notq else []
                for y in nxt:
                    if y not in dist:
                        dist[y] = dist[(s, ph)] + 1
                        queue.append(y)
        out.append(best)
    return out, succ


@st.composite
def fair_systems(draw):
    n, edges = draw(digraphs(max_nodes=6, labels=(None, "a", "b")))
    instances = ("i", "j")
    goal = [draw(st.integers(0, 3)) for _ in range(n)]
    premise = [draw(st.integers(0, 3)) for _ in range(n)]
    return n, edges, instances, premise, goal


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fair_systems())
def test_verdicts_and_lassos_agree_with_a_brute_force(system):
    n, edges, instances, premise, goal = system
    m = GraphModel(n, edges, init=[0])

    def masks(s):
        return premise[s], goal[s]

    prop = LeadsTo("Random", instances, masks)
    expected, succ = _oracle(m, n, instances, masks)
    (v,) = check_liveness(m, [prop]).verdicts
    broken = [d for d in expected if d is not None]
    assert v.holds is (not broken)
    if not broken:
        return
    bit = instances.index(v.lasso.instance)
    assert expected[bit] is not None
    assert v.lasso.loop == expected[bit] == min(broken)  # the shortest stem over every instance
    trace, loop = v.violation.trace, v.violation.loop
    assert_real_lasso(m, v)
    at = v.lasso.premise_at
    assert masks(trace[at].state)[0] >> bit & 1
    assert all(not masks(s)[1] >> bit & 1 for s in states(trace[at:]))
    seen = states(trace[loop:])
    enabled = {s: {k for t, k in succ[s] if k is not None} for s in seen}
    if v.lasso.stutters:
        assert not enabled[seen[-1]]
    else:
        # weak fairness of the loop, judged on pairs of states: every instance enabled all along
        # is satisfied by some step of the loop
        always = set.intersection(*enabled.values())
        steps = set(itertools.pairwise(seen))
        taken = {k for u, t in steps for t2, k in succ[u] if t2 == t}
        assert always <= taken


# ---------------------------------------------------------------------------- the trace names the fair steps
def test_the_trace_shows_the_fair_action_the_loop_relies_on():
    # 0 -> 1 by the unfair Push (listed first) or by the fair Fetch; 1 -> 0 by the unfair Back;
    # Fetch is also enabled at 1, to the goal 2. The loop 0 -> 1 -> 0 is fair only because its
    # first step is a Fetch step: the counterexample must say so. Replaying by fingerprints alone
    # picks the first action that reaches 1 (Push), and shows a loop on which Fetch is enabled all
    # along and never taken: an unfair behaviour, which is no counterexample under WF(Fetch).
    edges = {0: [(Act("Push"), 1), (Act("Fetch"), 1)], 1: [(Act("Back"), 0), (Act("Fetch"), 2)], 2: []}
    m = Toy(edges, fair={"Fetch"})
    (v,) = check_liveness(m, [eventually(lambda s: s == 2)]).verdicts
    assert_real_lasso(m, v, lambda s: s == 2)
    trace, loop = v.violation.trace, v.violation.loop
    assert states(trace) == [0, 1, 0] and loop == 0
    loop_actions = [step.action.name for step in trace[loop + 1:]]
    assert "Fetch" in loop_actions, f"the loop shown takes {loop_actions}, never the fair Fetch enabled all along"
