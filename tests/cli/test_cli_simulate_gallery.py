"""`isrcheck simulate MODEL` with its defaults (swarm walks, shrinking, seed 0, 10,000 walks at most)
finds every weakness of the default gate: each manifest model the default `isrcheck gate` runs that
expects a violation, with the property the manifest names. About 25 s in all (pure Python)."""
from __future__ import annotations

import pytest

from isrcheck.inputs import manifest
from isrcheck.specs.manifest import select

WEAKNESSES = [e for e in select(manifest.load()) if e.expect == "safety_failure"]


def test_the_default_gate_has_weaknesses_to_find():
    assert len(WEAKNESSES) >= 12 and all(e.gate == "default" and e.property for e in WEAKNESSES)


@pytest.mark.parametrize("entry", WEAKNESSES, ids=lambda e: e.name)
def test_simulate_with_its_defaults_finds_the_weakness(cli, entry):
    code, doc = cli.json("simulate", entry.name, "--json")
    assert code == 1 and doc["outcome"] == "safety_failure", doc["outcome"]
    assert doc["seed"] == 0 and doc["strategy"] == "swarm" and doc["first_found"] >= 1
    found = {v["property"] for v in doc["violations"]}
    assert entry.property in found, found
    v = next(v for v in doc["violations"] if v["property"] == entry.property)
    # a real trace, never shorter than the checker's shortest, and a message that says what broke
    assert len(v["trace"]) == v["length"] + 1 and v["length"] >= entry.length
    assert v["message"] and "broken after" not in v["message"].lower()  # the offending values, not a fallback
