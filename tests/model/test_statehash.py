"""The checker's fingerprint (model/statehash.py): part by part, order-free, the same in every process."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import pytest

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.model.statehash import NONE_HASH, StateHasher, broker_hash

from shared import reachable_states

# deposed controllers (a state's `stale` is None, then a Controller) and reassignments (brokers
# hosting no replica of a partition: None in Broker.replicas), plus a plain replication model
MODELS = ["deposed-controller-reassignment", "reassignment-broker-crash", "leader-crash-kip-320"]

# the first fingerprints in breadth-first order, as the checker finds them (run here and in a
# fresh interpreter)
FIRST_FINGERPRINTS = """
import json, sys
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
found = []
model = build_model(manifest.get(sys.argv[1]).config, properties=[])
Checker(model, max_states=int(sys.argv[2]), observer=lambda s, fp, d: found.append(fp)).run()
print(json.dumps(found))
"""


def reachable(name: str, limit: int) -> list[Any]:
    """The first ``limit`` states of manifest model ``name`` in breadth-first order, distinct by
    equality (not by fingerprint)."""
    return reachable_states(build_model(manifest.get(name).config), limit)


def _holds_none(states: list[Any]) -> tuple[bool, bool]:
    stale_none = any(s.stale is None for s in states) and any(s.stale is not None for s in states)
    replica_none = any(r is None for s in states for br in s.brokers for r in br.replicas)
    return stale_none, replica_none


@pytest.mark.parametrize("name", MODELS)
def test_the_fingerprint_is_the_same_in_another_process(name: str) -> None:
    """Before Python 3.12 hash(None) differs between processes; the fingerprint must not (the Spark
    workers and the driver compare fingerprints). A None hashed as itself anywhere fails this."""
    run = [subprocess.run([sys.executable, "-c", FIRST_FINGERPRINTS, name, "600"], capture_output=True, text=True,
                          check=True) for _ in range(2)]
    model = build_model(manifest.get(name).config)
    here = [model.fingerprint(s) for s in reachable(name, 600)]
    there = [json.loads(r.stdout) for r in run]
    assert there[0] == there[1] == here[:600]


def test_the_models_above_do_hold_none_where_the_hasher_replaces_it() -> None:
    stale = replica = False
    for name in MODELS:
        s, r = _holds_none(reachable(name, 600))
        stale, replica = stale or s, replica or r
    assert stale and replica


@pytest.mark.parametrize("name", MODELS)
def test_the_fingerprint_does_not_depend_on_the_state_hashed_before(name: str) -> None:
    states = reachable(name, 400)
    alone = [StateHasher().fingerprint(s) for s in states]
    shuffled = list(range(len(states)))
    random.Random(7).shuffle(shuffled)
    one = StateHasher()
    assert [one.fingerprint(states[i]) for i in shuffled] == [alone[i] for i in shuffled]
    assert [one.fingerprint(s) for s in states] == alone


@pytest.mark.parametrize("name", MODELS)
def test_distinct_states_have_distinct_fingerprints(name: str) -> None:
    states = reachable(name, 1500)
    hasher = StateHasher()
    assert len({hasher.fingerprint(s) for s in states}) == len(states)


def test_none_is_hashed_as_a_fixed_number() -> None:
    states = reachable("reassignment-broker-crash", 600)
    broker = next(br for s in states for br in s.brokers if None in br.replicas)
    swapped = tuple(NONE_HASH if r is None else r for r in broker.replicas)
    assert broker_hash(broker) == hash((broker.alive, broker.controller_epoch, swapped, broker.ext))
    full = next(br for s in states for br in s.brokers if None not in br.replicas)
    assert broker_hash(full) == hash(full)
