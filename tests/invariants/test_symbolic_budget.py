"""The fault budget in the z3 encoding, by the model's names (invariants/symbolic/types.py).

- the model's Budget (model/state.py) is the counters of config.Faults and config.Operations;
- the symbolic budget's keys (the state's, the controller side's, topic administration's, and the
  counters the encoding refuses) are exactly the model's, each in one place;
- a fault added to the model is refused by the encoding with a clear error until it is given a home;
- budget_limit reads a counter from either section of the configuration.
"""
from __future__ import annotations

import dataclasses

from isrcheck.inputs import manifest
from isrcheck.invariants.symbolic.replication import Encoding, unsupported_reason
from isrcheck.invariants.symbolic.types import (
    BUDGET_HOME,
    CONTROLLER_BUDGET,
    STATE_BUDGET,
    budget_counters,
    budget_home,
    budget_limit,
    uncovered_budget,
)
from isrcheck.model.config import Faults, Operations, from_mapping
from isrcheck.model.state import Budget


def test_the_models_budget_is_the_configurations_counters():
    assert sorted(Budget._fields) == sorted(budget_counters(Faults) + budget_counters(Operations))
    assert "reassignments" not in budget_counters(Operations) and "topic_creation" not in budget_counters(Operations)


def test_the_symbolic_budgets_keys_are_the_models():
    homes = {where: budget_home(where) for where in set(BUDGET_HOME.values())}
    uncovered = [n for n in Budget._fields if n not in BUDGET_HOME]
    keys = [n for names in homes.values() for n in names] + uncovered
    assert sorted(keys) == sorted(Budget._fields) and len(set(keys)) == len(keys)
    # refused by unsupported_reason (test_symbolic_manifest_agreement.py); lost AlterIsr answers need
    # isr_change = "alter-isr", which the encoding refuses too; lost fetch answers are refused by name
    assert uncovered == ["session_expiries", "lost_isr_answers", "lost_fetch_answers"]
    # the encoding's own dictionaries use exactly these keys, in this order (the order of its variables)
    assert STATE_BUDGET == ("crashes", "lossy_crashes", "undetected_restarts", "isr_shrinks", "delayed_requests")
    assert CONTROLLER_BUDGET == ("preferred_elections", "controlled_shutdowns", "controller_failovers")
    assert homes["admin"] == ("topic_deletions",)
    s = Encoding(manifest.get("controller-failover").config).fresh("s")
    assert tuple(s.budget) == STATE_BUDGET and tuple(s.ops.budget) == CONTROLLER_BUDGET


def test_a_fault_added_to_the_model_is_refused_until_it_is_encoded():
    @dataclasses.dataclass(frozen=True)
    class MoreFaults(Faults):
        zk_partitions: int = 0  # a fault the encoding has never heard of

    cfg = from_mapping({"brokers": 3, "replication_factor": 2, "faults": {"crashes": 1}})
    assert unsupported_reason(cfg) == "" and uncovered_budget(cfg) == ""
    grown = dataclasses.replace(cfg, faults=MoreFaults(crashes=1, zk_partitions=1))
    assert unsupported_reason(grown) == "the symbolic encoding does not cover zk partitions (faults.zk_partitions)"
    assert unsupported_reason(dataclasses.replace(cfg, faults=MoreFaults(crashes=1))) == ""  # not granted: harmless


def test_budget_limit_reads_either_section():
    cfg = from_mapping({"brokers": 3, "replication_factor": 2, "faults": {"crashes": 2, "controller_failovers": 1},
                        "operations": {"preferred_elections": 3}})
    names = ("crashes", "controller_failovers", "preferred_elections", "topic_deletions")
    assert [budget_limit(cfg, n) for n in names] == [2, 1, 3, 0]
    assert isinstance(cfg.operations, Operations)
