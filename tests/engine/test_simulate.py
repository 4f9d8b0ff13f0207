"""isrcheck.engine.simulate: seeded random walks over any model."""
from __future__ import annotations

from dataclasses import asdict

import pytest

from isrcheck.invariants import build_model
from isrcheck.model.actions import Action
from isrcheck.engine.checker import ModelFault, Progress, Property, replay_actions
from isrcheck.model.config import from_mapping
from isrcheck.engine.simulate import SimulationResult, simulate

SMALL = {"brokers": 3, "max_records": 1}
SMALL_CRASH = {"brokers": 3, "max_records": 1, "faults": {"crashes": 1}}
# A bug random walks find quickly: an unclean election after an ISR shrink loses the write.
SMALL_UNCLEAN = {"brokers": 2, "replication_factor": 2, "max_records": 1, "unclean_leader_election": True,
                 "faults": {"crashes": 1, "isr_shrinks": 1}}


class Counter:
    """A toy model: a counter from 0 that may go up (to ``top``), stay put, or reset.

    ``fault_at``: stepping up from this value raises ModelFault.
    """

    def __init__(self, top=5, props=(), fault_at=None, stay=True, reset=True):
        self.top, self.props, self.fault_at = top, list(props), fault_at
        self.stay, self.reset = stay, reset

    def init_states(self):
        return [0]

    def actions(self, s):
        out = []
        if s < self.top:
            out.append(Action("Up", ()))
        if self.stay:
            out.append(Action("Stay", ()))
        if self.reset and s:
            out.append(Action("Reset", ()))
        return out

    def next_state(self, s, a):
        if a.name == "Up":
            if s == self.fault_at:
                raise ModelFault("NoFault", f"fault at {s}")
            return s + 1
        if a.name == "Stay":
            return s
        return 0

    def properties(self):
        return self.props

    def fingerprint(self, s):
        return hash(s)


def _comparable(r: SimulationResult) -> dict:
    d = asdict(r)
    d.pop("seconds")
    return d


def test_same_seed_same_result_on_the_kafka_model():
    model = build_model(from_mapping(SMALL_CRASH))
    a = simulate(model, seed=11, walks=40, max_depth=30)
    b = simulate(build_model(from_mapping(SMALL_CRASH)), seed=11, walks=40, max_depth=30)
    assert _comparable(a) == _comparable(b)
    assert a.steps > 0 and a.coverage


def test_different_seeds_walk_differently():
    model = Counter(top=50, stay=False)
    runs = {tuple(sorted(simulate(model, seed=s, walks=3, max_depth=20).coverage.items())) for s in range(8)}
    assert len(runs) > 1


def test_clean_small_config_witnesses_and_covers():
    r = simulate(build_model(from_mapping(SMALL)), seed=0, walks=30, max_depth=50)
    assert r.outcome == "success"
    assert r.violations == []
    assert "WriteCommitted" in r.witnessed and r.unwitnessed == []
    assert r.coverage.get("Produce", 0) >= 1 and r.coverage.get("Fetch", 0) >= 1
    assert r.walks == 30 and r.distinct_states > 1
    # walks end once nothing changes the state (follower fetches with nothing new are skipped)
    assert r.dead_ends == 30 and r.deepest < 50


def test_violation_trace_replays_to_a_bad_state():
    model = build_model(from_mapping(SMALL_UNCLEAN))
    found = None
    for seed in range(20):
        r = simulate(model, seed=seed, walks=100, max_depth=40)
        if r.outcome == "safety_failure":
            found = r
            break
    assert found is not None, "no seed found the unclean-election counterexample"
    v = found.violations[0]
    assert v.kind == "always" and v.trace[0].action is None
    assert found.walks < 100  # the run stopped after the violation (and its bounded shrinking)
    steps = replay_actions(model, [s.action for s in v.trace[1:]])
    assert steps[-1].state == v.trace[-1].state
    prop = next(p for p in model.properties() if p.name == v.property)
    assert not prop.check(steps[-1].state)
    assert all(p.check(s.state) for s in v.trace[:-1] for p in model.properties() if p.kind == "always")


def test_always_property_on_the_walk():
    model = Counter(props=[Property("BelowThree", "always", lambda s: s < 3)], reset=False)
    r = simulate(model, seed=1, walks=10, max_depth=10)
    assert r.outcome == "safety_failure"
    v = r.violations[0]
    assert v.property == "BelowThree" and v.length == 3
    assert [s.state for s in v.trace] == [0, 1, 2, 3]


def test_always_property_broken_initially():
    model = Counter(props=[Property("Positive", "always", lambda s: s > 0)])
    r = simulate(model, seed=0, walks=5, max_depth=5)
    assert r.outcome == "safety_failure" and r.violations[0].length == 0 and r.steps == 0


def test_transition_property():
    model = Counter(props=[Property("NeverReset", "transition", lambda s, t: t >= s)])
    r = simulate(model, seed=2, walks=50, max_depth=10)
    assert r.outcome == "safety_failure"
    v = r.violations[0]
    assert v.property == "NeverReset" and v.kind == "transition"
    assert v.trace[-1].action == Action("Reset", ()) and v.trace[-1].state == 0


def test_model_fault_is_a_violation_with_a_stateless_last_step():
    model = Counter(fault_at=2, reset=False)
    r = simulate(model, seed=0, walks=5, max_depth=10)
    assert r.outcome == "safety_failure"
    v = r.violations[0]
    assert v.property == "NoFault" and v.message == "fault at 2"
    assert v.trace[-1].state is None and v.trace[-1].action.name == "Up" and v.length == 3


def test_sometimes_properties():
    seen = Property("ReachesFour", "sometimes", lambda s: s == 4)
    never = Property("ReachesNine", "sometimes", lambda s: s == 9)
    r = simulate(Counter(props=[seen, never], reset=False), seed=0, walks=3, max_depth=10)
    assert r.outcome == "vacuous"
    assert r.witnessed == ["ReachesFour"] and r.unwitnessed == ["ReachesNine"]


def test_stuttering_steps_are_not_taken():
    r = simulate(Counter(top=3, reset=False), seed=0, walks=4, max_depth=100)
    assert "Stay" not in r.coverage
    assert r.coverage == {"Up": 12} and r.dead_ends == 4 and r.deepest == 3
    assert r.distinct_states == 4


def test_max_depth_bounds_each_walk():
    r = simulate(Counter(top=100, stay=False, reset=False), seed=0, walks=3, max_depth=7)
    assert r.deepest == 7 and r.steps == 21 and r.dead_ends == 0


def test_progress_reports():
    seen: list[Progress] = []
    simulate(Counter(), seed=0, walks=5, max_depth=5, progress=seen.append, progress_every=0.0)
    assert seen and seen[-1].queue == 0 and seen[-1].states >= 1


def test_zero_walks_and_bad_arguments():
    r = simulate(Counter(), seed=0, walks=0, max_depth=5)
    assert r.walks == 0 and r.steps == 0 and r.outcome == "success"
    with pytest.raises(ValueError):
        simulate(Counter(), seed=0, walks=-1, max_depth=5)


# ---------------------------------------------------------------------------- swarm walks and shrinking
HW_TRUNCATION = {"brokers": 3, "max_records": 2, "faults": {"crashes": 1}}  # hw-truncation-one-crash


def test_swarm_walks_find_what_uniform_walks_miss():
    """The README's main weakness: 1,000 uniform walks miss it with seed 0; swarm walks find it."""
    model = build_model(from_mapping(HW_TRUNCATION))
    uniform = simulate(model, seed=0, walks=1000, max_depth=100, strategy="uniform", shrink=False)
    assert uniform.outcome == "success" and uniform.walks == 1000 and uniform.strategy == "uniform"
    swarm = simulate(model, seed=0, walks=1000, max_depth=100, shrink=False)
    assert swarm.outcome == "safety_failure" and swarm.strategy == "swarm"
    assert [v.property for v in swarm.violations] == ["NoCommittedWriteLost"]
    assert swarm.walks == swarm.first_found < 1000  # without shrinking the run stops there


def test_shrinking_reports_a_shorter_violation_of_a_real_trace():
    model = build_model(from_mapping(HW_TRUNCATION))
    first = simulate(model, seed=0, walks=10_000, max_depth=100, shrink=False)
    shrunk = simulate(model, seed=0, walks=10_000, max_depth=100)
    assert shrunk.first_found == first.first_found  # the same walks up to the first violation
    assert shrunk.walks == first.first_found + max(first.first_found, 1000)  # then max(i, walks/10) more
    v, w = shrunk.violations[0], first.violations[0]
    assert v.length < w.length and v.property == "NoCommittedWriteLost"
    steps = replay_actions(model, [s.action for s in v.trace[1:]])
    prop = next(p for p in model.properties() if p.name == v.property)
    assert steps[-1].state == v.trace[-1].state and not prop.check(steps[-1].state)


def test_every_property_the_violating_step_breaks_is_reported():
    """A lossy crash and a quick restart lose an acknowledged write and break the strong ISR in one
    state: both properties are reported, with the same trace."""
    cfg = {"brokers": 2, "replication_factor": 2, "max_records": 1,
           "faults": {"lossy_crashes": 1, "undetected_restarts": 1}}
    r = simulate(build_model(from_mapping(cfg)), seed=0, walks=200, max_depth=50)
    names = [v.property for v in r.violations]
    assert {"NoCommittedWriteLost", "StrongIsr"} <= set(names), names
    assert len({id(v.trace) for v in r.violations}) == 1


def test_swarm_walks_are_a_function_of_the_seed():
    model = build_model(from_mapping(SMALL_CRASH))
    a, b = (simulate(model, seed=5, walks=60, max_depth=30) for _ in range(2))
    assert _comparable(a) == _comparable(b) and a.strategy == "swarm"
    assert _comparable(a) != _comparable(simulate(model, seed=6, walks=60, max_depth=30))


def test_unknown_strategy():
    with pytest.raises(ValueError, match="strategy"):
        simulate(Counter(), seed=0, walks=1, max_depth=1, strategy="clever")
