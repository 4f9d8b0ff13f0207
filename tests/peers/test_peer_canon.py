"""peers/kafka_specification/_canon.c, the peer's symmetric fingerprint in the compiled build,
against the Python path it replaces: ``hash(model.canonical(s))``, the same number for every state
(tied signatures included), so a symmetric search counts the same orbits either way."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from isrcheck.peers.kafka_specification import MODULES, PeerModel
from isrcheck.peers.kafka_specification.model import PeerState

canon = pytest.importorskip("isrcheck.peers.kafka_specification._canon",
                            reason="a pure install builds no C extension")


def _successors(model: PeerModel, limit: int) -> list[PeerState]:
    """Every successor met by a breadth-first search of ``model`` up to ``limit`` of them (repeats
    included: each is a state the checker fingerprints)."""
    seen: set[int] = set()
    frontier = model.init_states()
    out: list[PeerState] = list(frontier)
    while frontier and len(out) < limit:
        nxt = []
        for s in frontier:
            for a in model.actions(s):
                t = model.next_state(s, a)
                out.append(t)
                fp = hash(model.canonical(t))
                if fp not in seen:
                    seen.add(fp)
                    nxt.append(t)
        frontier = nxt
    return out


def _ties(model: PeerModel, states: list[PeerState]) -> int:
    return sum(1 for s in states if len(set(model._signatures(s))) < model.n)


@pytest.mark.parametrize("module", list(MODULES))
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
def test_the_same_number_as_the_python_canonical_form(module: str, replicas: int) -> None:
    model = PeerModel(module, replicas, symmetry=True, properties=[])
    c = canon.PeerCanon(replicas, model.log_size)
    states = _successors(model, 20_000 if replicas < 4 else 6_000)
    if replicas >= 3:  # the tie path (several candidate renamings) is exercised, not only the sort
        assert _ties(model, states) > 100
    for s in states:
        assert c.fingerprint(s) == hash(model.canonical(s)), s


@pytest.mark.parametrize("log_size,max_records,max_leader_epoch", [(3, 3, 2), (4, 2, 5), (1, 1, 1)])
def test_other_bounds(log_size: int, max_records: int, max_leader_epoch: int) -> None:
    model = PeerModel("kip-101", 3, symmetry=True, properties=[], log_size=log_size, max_records=max_records,
                      max_leader_epoch=max_leader_epoch)
    c = canon.PeerCanon(3, log_size)
    for s in _successors(model, 15_000):
        assert c.fingerprint(s) == hash(model.canonical(s))


def test_renamed_states_get_one_number() -> None:
    model = PeerModel("truncate-to-hw", 3, symmetry=True, properties=[])
    c = canon.PeerCanon(3, model.log_size)
    for s in _successors(model, 3_000)[::7]:
        fps = {c.fingerprint(model.renamed(s, p)) for p in model.perms_p}
        assert fps == {c.fingerprint(s)}


def test_a_state_it_cannot_read_exactly_falls_back() -> None:
    model = PeerModel("kip-320", 2, symmetry=True, properties=[])
    c = canon.PeerCanon(2, model.log_size)
    s = model.init_states()[0]
    assert c.fingerprint(s._replace(hw=(0, 9))) is None  # beyond the bounds the signature holds
    assert c.fingerprint(s._replace(logs=((1 << 21,), ()))) is None
    assert c.fingerprint((1, 2)) is None
    big = s._replace(logs=((1, 2, 3),) + s.logs[1:])  # longer than log_size: the Python path
    assert model.fingerprint(big) == hash(model.canonical(big))
    with pytest.raises(ValueError):
        canon.PeerCanon(5, 2)
    with pytest.raises(ValueError):
        canon.PeerCanon(3, 5)


def test_the_compiled_build_uses_it() -> None:
    """The model takes the C path whenever compiled code is in use, never under ISRCHECK_PURE=1."""
    code = ("from isrcheck import native; from isrcheck.peers.kafka_specification import PeerModel;"
            "print(native.compiled_wanted(), PeerModel('kip-320', 3, symmetry=True).canon_c is not None,"
            " PeerModel('kip-320', 3).canon_c is not None)")
    env = {k: v for k, v in os.environ.items() if k != "ISRCHECK_PURE"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    wanted, used, without_symmetry = out.stdout.split()
    assert used == wanted and without_symmetry == "False"
    pure = subprocess.run([sys.executable, "-c", code], env={**env, "ISRCHECK_PURE": "1"}, capture_output=True,
                          text=True, check=True)
    assert pure.stdout.split() == ["False", "False", "False"]
