"""FetchAnswerLost on both sides: the model's step and the simulator's lost answer agree.

The simulator delivers the follower's fetch to the leader and loses the leader's answer
(impl/rigs/simulator.py); the model does the leader's half of Fetch alone (model/broker.py). After
each step the two observations and the acknowledged writes must be equal, and each side enables the
lost answer only within its budget (specs/05-replication.md#fetch).
"""
from __future__ import annotations

import pytest
from conform_helpers import acts

from isrcheck.conformance.observations import diff, flatten
from isrcheck.conformance.sides import ImplRefused, ImplSide, ModelSide
from isrcheck.impl.rigs.simulator import Simulator
from isrcheck.model.config import from_mapping

RUN = acts("Produce(1, 0)", "Fetch(2, 0)", "Fetch(3, 0)",  # both followers hold record 1, the HW is 0
           "FetchAnswerLost(2, 0)",  # the leader records offset 1 for broker 2 (broker 3 still at 0)
           "FetchAnswerLost(3, 0)",  # and for broker 3: the HW goes to 1, record 1 is acknowledged
           "Fetch(2, 0)", "Produce(1, 0)", "Fetch(3, 0)",
           "FetchAnswerLost(3, 0)",  # offset 2 for broker 3, the HW waits for broker 2
           "Fetch(2, 0)", "Fetch(3, 0)")


@pytest.mark.parametrize("generation", ["high-watermark", "kip-320"])
def test_the_model_and_the_simulator_lose_the_same_answers(generation: str) -> None:
    cfg = from_mapping({"brokers": 3, "replication_factor": 3, "max_records": 2, "generation": generation,
                        "faults": {"lost_fetch_answers": 3}})
    model, impl = ModelSide(cfg), ImplSide(cfg)
    for name, args in RUN:
        model.step(name, args)
        impl.step(name, args)
        assert diff(model.observation(), impl.observation()) == [], f"after {name}{args}"
        assert model.acked() == impl.acked(), f"after {name}{args}"
    assert model.state.budget.lost_fetch_answers == 0


def test_the_lost_answer_changes_the_leader_only() -> None:
    sim = Simulator({"brokers": 3, "max_records": 2, "faults": {"lost_fetch_answers": 2}})
    sim.apply("Produce", (1, 0))
    sim.apply("Fetch", (2, 0))
    sim.apply("Fetch", (3, 0))
    before = flatten(sim.observe())
    sim.apply("FetchAnswerLost", (2, 0))
    sim.apply("FetchAnswerLost", (3, 0))  # both offsets (1) recorded: the HW goes to 1, record 1 is acked
    after = flatten(sim.observe())
    assert sim.acked[0] == {1}
    for f in (2, 3):
        assert {k: v for k, v in after.items() if k.startswith(f"replicas[{f},")} == \
            {k: v for k, v in before.items() if k.startswith(f"replicas[{f},")}
    assert after["replicas[1,0].hw"] == 1 and before["replicas[1,0].hw"] == 0
    sim.apply("Fetch", (2, 0))
    assert flatten(sim.observe())["replicas[2,0].hw"] == 1


def test_the_simulator_schedules_it_only_within_its_budget() -> None:
    sim = Simulator({"brokers": 3, "max_records": 1})
    sim.apply("Produce", (1, 0))
    sim.apply("Fetch", (2, 0))
    assert ("Fetch", (2, 0)) in sim.enabled() and not any(n == "FetchAnswerLost" for n, _ in sim.enabled())
    sim = Simulator({"brokers": 3, "max_records": 1, "faults": {"lost_fetch_answers": 1}})
    sim.apply("Produce", (1, 0))
    sim.apply("Fetch", (2, 0))
    assert ("FetchAnswerLost", (2, 0)) in sim.enabled()
    assert sim.spends_budget("FetchAnswerLost", (2, 0)) == "faults.lost_fetch_answers"

