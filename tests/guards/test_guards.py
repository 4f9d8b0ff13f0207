"""Every guard must matter (specs/guards.toml): removing it through the designer API makes the
checker find a violation, while the unmodified protocol keeps every property on the same model.
Guards that survive removal are listed with the reason; their test pins that they still survive,
so a change to the model that makes them matter shows up here."""
from __future__ import annotations

import pytest

from isrcheck import specs
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping
from isrcheck.model.protocol import Protocol

from .mutants import MUTANTS

GUARDS = specs.load("guards.toml")["guard"]


def _model(guard, protocol_cls):
    if "model" in guard:
        e = manifest.get(guard["model"])
        cfg, props, sym = e.config, (list(e.properties) if e.properties else None), e.symmetry
    else:
        cfg, props, sym = from_mapping(guard["config"]), None, None
    return build_model(cfg, protocol=protocol_cls(cfg), symmetry=sym, properties=props)


def test_every_mutant_is_listed_and_every_guard_has_its_mutant():
    listed = {g["mutant"] for g in GUARDS}
    assert listed == set(MUTANTS) - {"NoControllerEpochFence", "NoLeaderEpochFence"}
    for g in GUARDS:
        assert ("killed_by" in g) != ("survives" in g), g["name"]
        assert "model" in g or "config" in g, g["name"]


@pytest.mark.parametrize("guard", GUARDS, ids=[g["mutant"] for g in GUARDS])
def test_guard_matters(guard):
    original = Checker(_model(guard, Protocol)).run()
    assert original.outcome == "success", [(v.property, v.length) for v in original.violations]
    mutated = Checker(_model(guard, MUTANTS[guard["mutant"]])).run()
    if "killed_by" in guard:
        assert mutated.outcome == "safety_failure"
        v = mutated.violations[0]
        assert (v.property, v.length) == (guard["killed_by"], guard["length"])
    else:
        assert mutated.outcome == "success", (guard["name"], [(v.property, v.length) for v in mutated.violations])
