"""model/_partshash.c, the state fingerprint of the compiled build, against model/statehash.py's
StateHasher: the same number for every state, whatever was hashed before."""
from __future__ import annotations

import gc
import os
import random
import subprocess
import sys

import pytest

from isrcheck import native
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.engine.explore import successors
from isrcheck.model.state import Broker, State
from isrcheck.model.statehash import NONE_HASH, StateHasher

from test_statehash import MODELS, reachable

partshash = pytest.importorskip("isrcheck.model._partshash", reason="a pure install builds no C extension")

# the models of test_statehash (None in both places) and the largest states of the manifest (two
# controllers, two partitions, inboxes of LeaderAndIsr requests)
HASHED = MODELS + ["deposed-controller-ar-write"]


def c_hasher() -> object:
    """The C hasher with the state's layout (built directly: also tested under ISRCHECK_PURE=1,
    where the model uses StateHasher)."""
    return partshash.PartsHasher(len(State._fields), State._fields.index("brokers"), State._fields.index("inbox"),
                                 Broker._fields.index("replicas"), NONE_HASH)


@pytest.mark.parametrize("name", HASHED)
def test_the_same_number_as_the_python_hasher_in_any_order(name: str) -> None:
    states = reachable(name, 1500)
    expected = [StateHasher().fingerprint(s) for s in states]
    one = c_hasher()
    assert [one.fingerprint(s) for s in states] == expected  # type: ignore[attr-defined]
    shuffled = list(range(len(states)))
    random.Random(11).shuffle(shuffled)
    assert [one.fingerprint(states[i]) for i in shuffled] == [expected[i] for i in shuffled]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", HASHED)
def test_the_same_number_for_the_successors_of_each_state(name: str) -> None:
    """The checker's order: the successors of one state one after another, where the remembered
    parts pay (a parent's part met again after other successors changed it)."""
    model = build_model(manifest.get(name).config)
    c, py = c_hasher(), StateHasher()
    compared = 0
    for s in reachable(name, 150):
        for a, t in successors(model, s):
            assert c.fingerprint(t) == py.fingerprint(t), (name, s, a)  # type: ignore[attr-defined]
            compared += 1
    assert compared > 300


def test_remembered_parts_are_kept_alive() -> None:
    """Identity is a sound test only while the remembered part cannot be freed and its address
    reused by another value: the hasher holds a reference to what it remembers."""
    s = reachable("leader-crash-kip-320", 50)[-1]
    zk = s.zk
    hasher = c_hasher()
    before = sys.getrefcount(zk)
    hasher.fingerprint(s)  # type: ignore[attr-defined]
    held = sys.getrefcount(zk)
    del hasher
    gc.collect()
    after = sys.getrefcount(zk)
    assert (held, after) == (before + 1, before)


def test_none_is_hashed_as_the_fixed_number() -> None:
    states = reachable("reassignment-broker-crash", 600)
    s = next(s for s in states if any(None in br.replicas for br in s.brokers))
    assert c_hasher().fingerprint(s) == StateHasher().fingerprint(s)  # type: ignore[attr-defined]
    # and the C hasher was told the same number
    other = partshash.PartsHasher(len(State._fields), State._fields.index("brokers"), State._fields.index("inbox"),
                                  Broker._fields.index("replicas"), NONE_HASH + 1)
    assert other.fingerprint(s) != StateHasher().fingerprint(s)


@pytest.mark.parametrize("bad, message", [
    (42, "wants a state"),
    ((1, 2, 3), "wants a state"),
    ((0, 0, 0, 5, (), 0, 0, 0), "brokers and inboxes must be tuples"),
    ((0, 0, 0, ((True, 1, 5),), ((),), 0, 0, 0), "replicas must be a tuple"),
])
def test_what_is_not_a_state_is_refused(bad: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        c_hasher().fingerprint(bad)  # type: ignore[attr-defined]


def test_field_positions_outside_the_state_are_refused() -> None:
    with pytest.raises(ValueError, match="field positions"):
        partshash.PartsHasher(8, 3, 3, 2, NONE_HASH)
    with pytest.raises(ValueError, match="field positions"):
        partshash.PartsHasher(8, 9, 4, 2, NONE_HASH)


def test_the_compiled_build_uses_it_and_the_pure_one_does_not() -> None:
    probe = ("from isrcheck.inputs import manifest; from isrcheck.invariants import build_model; "
             "print(type(build_model(manifest.get('replication').config)._hasher).__name__)")
    if native.build() == "compiled":
        assert isinstance(build_model(manifest.get("replication").config)._hasher, partshash.PartsHasher)
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "ISRCHECK_PURE": "1"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "StateHasher"


def test_a_copy_is_a_fresh_hasher_with_the_same_numbers() -> None:
    """A model holding the C hasher can still be copied or pickled: the copy starts with nothing
    remembered and gives the same fingerprints."""
    import pickle

    states = reachable("deposed-controller-reassignment", 300)
    hasher = c_hasher()
    expected = [hasher.fingerprint(s) for s in states]  # type: ignore[attr-defined]
    copy = pickle.loads(pickle.dumps(hasher))
    assert type(copy) is type(hasher)
    assert [copy.fingerprint(s) for s in reversed(states)] == expected[::-1]
