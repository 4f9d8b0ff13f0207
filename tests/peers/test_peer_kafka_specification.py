"""The transcription of the public TLA+ specification reproduces TLC's figures exactly (2 replicas).

TLC's conventions (expected.toml): depth counts Init as 1; counterexample lengths count states,
Init included. isrcheck counts actions, so both are one less here.
"""
from __future__ import annotations

from itertools import permutations

import pytest

from isrcheck.engine.checker import Checker
from isrcheck.peers.kafka_specification import (
    MODULES,
    PeerAction,
    PeerModel,
    PeerModelError,
    UnknownPeerModule,
    expected,
    load_expected,
)


def _states(module: str, symmetry: bool) -> tuple[int, int]:
    r = Checker(PeerModel(module, 2, symmetry, properties=[])).run()
    assert r.outcome == "success"
    return r.distinct_states, r.depth + 1


def _length(module: str, prop: str) -> int | str:
    r = Checker(PeerModel(module, 2, False, properties=[prop])).run()
    if not r.violations:
        assert r.outcome == "success"
        return "holds"
    assert r.violations[0].property == prop
    return r.violations[0].length + 1


@pytest.mark.parametrize("module", list(MODULES))
def test_reproduces_tlc_figures_with_two_replicas(module: str) -> None:
    e = expected(module, 2)
    assert e["tla_module"] == MODULES[module]
    assert _states(module, False) == (e["states_no_symmetry"], e["depth"])
    assert _states(module, True) == (e["states_symmetry"], e["depth"])
    assert _length(module, "StrongIsr") == e["StrongIsr"]
    assert _length(module, "WeakIsr") == e["WeakIsr"]


def test_type_ok_holds_on_the_whole_reachable_set() -> None:
    assert Checker(PeerModel("truncate-to-hw", 2, properties=["TypeOk"])).run().outcome == "success"


def test_expected_toml_has_tlc_speed_rows() -> None:
    doc = load_expected()
    rows = {(r["module"], r["replicas"], r["symmetry"]): r for r in doc["speed"]}
    assert rows[("kip-320", 3, False)]["states"] == 9_985_570
    assert rows[("kip-320", 3, True)]["states"] == 1_665_204


@pytest.mark.parametrize("module", ["kip-101", "kip-320"])
def test_canonical_form_is_invariant_under_renaming(module: str) -> None:
    """Every renaming of a reachable state gets the same representative, and states with the
    same representative are renamings of one another (exhaustive over a small run)."""
    model = PeerModel(module, 3, symmetry=True, properties=[])
    seen: list = []
    Checker(model, max_states=3000, observer=lambda s, fp, d: seen.append(s)).run()
    by_rep: dict = {}
    for s in seen:
        rep = model.canonical(s)
        for perm in permutations(range(3)):
            t = model.renamed(s, perm)
            assert model.canonical(t) == rep
            assert model.fingerprint(t) == model.fingerprint(s)
        by_rep.setdefault(rep, []).append(s)
    for group in by_rep.values():
        orbit = {model.renamed(group[0], perm) for perm in permutations(range(3))}
        assert all(s in orbit for s in group)


def test_bad_arguments_give_a_clear_error() -> None:
    with pytest.raises(UnknownPeerModule, match="known: truncate-to-hw, kip-101, kip-279, kip-320-first-try, kip-320"):
        PeerModel("kip-999")
    assert issubclass(UnknownPeerModule, ValueError)
    for n in (0, 5):
        with pytest.raises(PeerModelError, match="replicas must be between 1 and 4"):
            PeerModel("kip-320", replicas=n)
    with pytest.raises(ValueError, match="unknown property"):
        PeerModel("kip-320", properties=["NoSuchProperty"])


def test_actions_read_well() -> None:
    assert str(PeerAction("BecomeLeader", (1, 0))) == "BecomeLeader(r2, e0)"
    assert str(PeerAction("FencedBecomeFollowerAndTruncate", (0, 2, 3))) == "FencedBecomeFollowerAndTruncate(r1, r3, e3)"


@pytest.mark.parametrize("replicas", [1, 3])
def test_other_replica_counts_run(replicas: int) -> None:
    r = Checker(PeerModel("kip-320", replicas, symmetry=True), max_states=2000).run()
    assert r.outcome in ("success", "incomplete")
