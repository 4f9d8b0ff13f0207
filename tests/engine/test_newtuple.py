"""engine/_newtuple.c, the state classes' constructor in the compiled build, against tuple.__new__."""
from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from isrcheck import native
from isrcheck.model import state
from isrcheck.model.state import Broker, Budget, Replica

newtuple = pytest.importorskip("isrcheck.engine._newtuple", reason="a pure install builds no C extension")

SAMPLES = [
    (Replica, ((1, 2), 1, 0, 1, 0, 7, 1, (2, 2, 2), 0, 7, ((0, 0),), 0, (), (4,))),
    (Broker, (True, 3, (None,), ())),
    (Budget, tuple(range(len(Budget._fields)))),
]


@pytest.mark.parametrize("cls, items", SAMPLES, ids=[c.__name__ for c, _ in SAMPLES])
def test_the_same_value_as_tuple_new(cls: type, items: tuple) -> None:
    made = newtuple.new(cls, *items)
    want = tuple.__new__(cls, items)
    assert type(made) is cls
    assert made == want and hash(made) == hash(want) and repr(made) == repr(want)
    assert made._fields == cls._fields and made[-1] == items[-1]
    assert gc.is_tracked(made)  # as tuple.__new__ leaves a subclass instance


def test_refuses_what_is_not_a_tuple_subclass() -> None:
    with pytest.raises(TypeError, match="subclass of tuple"):
        newtuple.new(int, 1)
    with pytest.raises(TypeError, match="subclass of tuple"):
        newtuple.new()


def test_references_are_owned() -> None:
    item = object()
    before = sys.getrefcount(item)
    made = newtuple.new(Broker, item, 0, ())
    assert sys.getrefcount(item) == before + 1
    del made
    assert sys.getrefcount(item) == before


def test_the_compiled_build_uses_it_and_the_pure_one_does_not() -> None:
    if native.build() == "compiled":
        assert state._new is newtuple.new
    out = subprocess.run([sys.executable, "-c", "from isrcheck.model import state; print(state._new.__name__)"],
                         env={**os.environ, "ISRCHECK_PURE": "1"}, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "_tuple_new"
