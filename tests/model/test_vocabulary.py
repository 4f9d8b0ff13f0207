"""specs/actions.toml against the model: the same names, arities, argument types and budgets."""
from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from isrcheck.model.actions import APPLY, Action, apply, enabled_actions
from isrcheck.model.config import from_mapping
from isrcheck.model.kafka import initial_state
from isrcheck.model.protocol import Protocol
from isrcheck.model.state import State
from isrcheck.model.tables import IllegalTransition
from isrcheck.specs.actions import ACTORS, ARG_TYPES, arg_problem, entry_problems, load_actions
from native_helpers import run_json

VOCAB = load_actions()

# Small configurations that, between them, enable every action of the model.
CONFIGS: dict[str, dict[str, Any]] = {
    "everything": {
        "brokers": 3, "partitions": 2, "replication_factor": 2, "max_records": 1,
        "faults": {"crashes": 1, "lossy_crashes": 1, "undetected_restarts": 1, "controller_failovers": 1,
                   "isr_shrinks": 1, "delayed_requests": 1},
        "operations": {"preferred_elections": 1, "controlled_shutdowns": 1, "topic_deletions": 1,
                       "reassignments": [{"partition": 0, "target": [3, 1]}]},
    },
    "creation": {"brokers": 3, "replication_factor": 2, "max_records": 1, "operations": {"topic_creation": True}},
    "replication": {"brokers": 2, "replication_factor": 2, "max_records": 2, "faults": {"crashes": 1}},
    # the leader-epoch generations: a follower with data that sees a new leader (or, under kip-320,
    # a new epoch) reconciles through OffsetsForLeaderEpoch and TruncateToEpochEndOffset
    "kip-320": {"brokers": 2, "replication_factor": 2, "max_records": 2, "generation": "kip-320",
                "acks": "1", "faults": {"crashes": 1, "isr_shrinks": 1}},
    "kip-101": {"brokers": 3, "replication_factor": 2, "max_records": 1, "generation": "kip-101",
                "detect_restarts": True, "fenced_controller_writes": True,
                "faults": {"crashes": 1, "undetected_restarts": 1, "controller_failovers": 1}},
    # a running broker's session expires and it registers again (ExpireSession, Reregister)
    "session": {"brokers": 2, "replication_factor": 2, "max_records": 1, "faults": {"session_expiries": 1}},
    # a leader handles a fetch whose answer is lost (FetchAnswerLost)
    "lost-fetch": {"brokers": 2, "replication_factor": 2, "max_records": 2, "faults": {"lost_fetch_answers": 1}},
}

#: actions only the leader-epoch generations enable, and the configurations that must meet them
EPOCH_ACTIONS = ("OffsetsForLeaderEpoch", "TruncateToEpochEndOffset")


def walk(raw: dict[str, Any], walks: int = 120, depth: int = 40, seed: int = 7) -> Iterator[tuple[Protocol, State, list[Action]]]:
    """Seeded random walks: yield (protocol, state, enabled actions) for every state visited."""
    protocol = Protocol(from_mapping(raw))
    rnd = random.Random(seed)
    for _ in range(walks):
        s = initial_state(protocol)
        for _ in range(depth):
            enabled = enabled_actions(protocol, s)
            yield protocol, s, enabled
            if not enabled:
                break
            try:
                s = apply(protocol, s, rnd.choice(enabled))
            except IllegalTransition:
                break  # a model fault is the checker's business (OnlyValidTransitions), not this test's


@pytest.fixture(scope="module")
def observed() -> dict[str, list[tuple[Protocol, State, Action]]]:
    """Every enabled action met in the walks over CONFIGS, by name (a sample per name)."""
    out: dict[str, list[tuple[Protocol, State, Action]]] = {}
    for raw in CONFIGS.values():
        for protocol, s, enabled in walk(raw):
            for a in enabled:
                seen = out.setdefault(a.name, [])
                if len(seen) < 40:
                    seen.append((protocol, s, a))
    return out


def test_names_are_exactly_the_models_actions() -> None:
    assert set(VOCAB) == set(APPLY), (
        f"only in specs/actions.toml: {sorted(set(VOCAB) - set(APPLY))}; "
        f"only in model/actions.py: {sorted(set(APPLY) - set(VOCAB))}"
    )


@pytest.mark.parametrize("name", sorted(VOCAB))
def test_entry_is_well_formed(name: str) -> None:
    assert entry_problems(VOCAB[name]) == []


@pytest.fixture(scope="module")
def apply_parameters() -> dict[str, list[str]]:
    """Each APPLY function's parameters, read from the Python source (compiled functions carry
    no signature), so the vocabulary is checked against the code, not against itself."""
    return run_json("""
        import inspect, json
        from isrcheck.model.actions import APPLY
        print(json.dumps({n: list(inspect.signature(f).parameters) for n, f in APPLY.items()}))
    """, pure=True)


@pytest.mark.parametrize("name", sorted(APPLY))
def test_arity_matches_the_apply_function(name: str, apply_parameters: dict[str, list[str]]) -> None:
    params = apply_parameters[name]
    assert len(params) - 1 == len(VOCAB[name]["args"]), f"{name}: APPLY takes {params[1:]}"


def test_controller_actions_are_named_by_their_controller() -> None:
    for name, entry in VOCAB.items():
        first = entry["args"][0]["type"] if entry["args"] else None
        assert (entry["actor"] == "controller") == (first == "controller_epoch"), name


def test_the_walks_meet_every_action(observed: dict[str, list]) -> None:
    assert set(observed) == set(APPLY), f"never enabled: {sorted(set(APPLY) - set(observed))}"


@pytest.mark.parametrize("generation", ["kip-101", "kip-320"])
def test_each_epoch_generation_meets_the_reconciliation_actions(generation: str) -> None:
    met = {a.name for _, _, enabled in walk(CONFIGS[generation]) for a in enabled}
    assert set(EPOCH_ACTIONS) <= met, f"{generation}: never enabled: {sorted(set(EPOCH_ACTIONS) - met)}"


def test_the_high_watermark_generation_never_reconciles() -> None:
    for raw in (CONFIGS["everything"], CONFIGS["replication"]):
        for _, _, enabled in walk(raw, walks=30):
            assert not {a.name for a in enabled} & set(EPOCH_ACTIONS)


@pytest.mark.parametrize("name", sorted(APPLY))
def test_enabled_actions_have_the_declared_arguments(name: str, observed: dict[str, list]) -> None:
    declared = VOCAB[name]["args"]
    for protocol, s, a in observed.get(name, []):
        cfg = protocol.config
        assert len(a.args) == len(declared), f"{a}: declared {[d['name'] for d in declared]}"
        for value, d in zip(a.args, declared):
            problem = arg_problem(d["type"], value, cfg.brokers, cfg.partitions)
            assert problem is None, f"{a}: argument {d['name']}={value!r}: {problem}"


_BUDGET_FIELD = {  # configuration key -> Budget field (RequestReassignment consumes a list instead)
    "faults.crashes": "crashes", "faults.lossy_crashes": "lossy_crashes",
    "faults.undetected_restarts": "undetected_restarts", "faults.controller_failovers": "controller_failovers",
    "faults.isr_shrinks": "isr_shrinks", "faults.delayed_requests": "delayed_requests",
    "faults.session_expiries": "session_expiries", "faults.lost_fetch_answers": "lost_fetch_answers",
    "operations.preferred_elections": "preferred_elections",
    "operations.controlled_shutdowns": "controlled_shutdowns", "operations.topic_deletions": "topic_deletions",
}


@pytest.mark.parametrize("name", sorted(APPLY))
def test_each_step_spends_the_declared_budget(name: str, observed: dict[str, list]) -> None:
    budget = VOCAB[name].get("budget")
    for protocol, s, a in observed.get(name, [])[:10]:
        try:
            t = apply(protocol, s, a)
        except IllegalTransition:
            continue
        spent = {f for f in s.budget._fields if getattr(t.budget, f) != getattr(s.budget, f)}
        if budget == "operations.reassignments":
            assert not spent and len(t.reassignments) == len(s.reassignments) - 1, str(a)
        elif budget is None:
            assert not spent and t.reassignments == s.reassignments, f"{a} spent {spent}"
        else:
            field = _BUDGET_FIELD[budget]
            assert spent == {field}, f"{a} spent {spent}, declared {budget}"
            assert getattr(t.budget, field) == getattr(s.budget, field) - 1


def test_budget_keys_are_configuration_keys() -> None:
    from isrcheck.model.config import Faults, Operations
    import dataclasses

    keys = {f"faults.{f.name}" for f in dataclasses.fields(Faults)}
    keys |= {f"operations.{f.name}" for f in dataclasses.fields(Operations)}
    for name, entry in VOCAB.items():
        if "budget" in entry:
            assert entry["budget"] in keys, name


def test_arg_problem_names_the_rule() -> None:
    assert arg_problem("broker", 0, 3, 1) == "must be a broker in 1..3, got 0"
    assert arg_problem("broker", True, 3, 1) is not None
    assert arg_problem("broker_list", (2, 2), 3, 1) is not None
    assert arg_problem("log_lengths", (1,), 3, 2) is not None
    assert arg_problem("step", 13, 3, 1) is not None
    assert arg_problem("nonsense", 1, 3, 1) == "unknown argument type 'nonsense'"
    assert set(ARG_TYPES) >= {a["type"] for e in VOCAB.values() for a in e["args"]}
    assert set(ACTORS) >= {e["actor"] for e in VOCAB.values()}
