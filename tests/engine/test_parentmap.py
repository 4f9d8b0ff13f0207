"""The single-process checker's flat fingerprint-to-parent map (engine/parentmap.py,
engine/_parentmap.c): the dict's answers for everything the checker asks, growth, the edge
fingerprints, refusals, and its size per entry."""
from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from native_helpers import run_json

SMALLEST, LARGEST = -(1 << 63), (1 << 63) - 1
fingerprints = st.integers(SMALLEST, LARGEST)


def _parent_map() -> Any:
    module = pytest.importorskip("isrcheck.engine._parentmap", reason="a pure install builds no C extension")
    return module.ParentMap()


def test_an_empty_map_knows_nothing() -> None:
    m = _parent_map()
    assert len(m) == 0 and 0 not in m and 5 not in m and m.get(5) is None and m.get(5, "absent") == "absent"
    with pytest.raises(KeyError):
        m[5]


@pytest.mark.parametrize("fp", [0, 1, -1, SMALLEST, LARGEST, 1 << 32])
def test_edge_fingerprints_and_initial_states(fp: int) -> None:
    m = _parent_map()
    m[fp] = None  # an initial state
    assert fp in m and m[fp] is None and m.get(fp, "absent") is None and len(m) == 1
    other = 0 if fp != 0 else LARGEST
    assert other not in m
    m[other] = fp
    assert m[other] == fp and len(m) == 2
    m[fp] = other  # overwriting, as a dict does: no new entry
    assert m[fp] == other and len(m) == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(fingerprints, st.one_of(st.none(), fingerprints)), max_size=300),
       st.lists(fingerprints, max_size=50))
def test_answers_like_a_dict(entries: list[tuple[int, int | None]], probes: list[int]) -> None:
    m, d = _parent_map(), {}
    for fp, parent in entries:
        if parent == fp:
            continue  # refused by the map (below); never asked by a search
        m[fp] = parent
        d[fp] = parent
        assert len(m) == len(d)
    for fp in list(d) + probes:
        assert (fp in m) == (fp in d)
        assert m.get(fp, "absent") == d.get(fp, "absent")


def test_growth_keeps_every_entry_and_stays_flat() -> None:
    """A search's worth of entries, with colliding low bits: every parent is found again, and the
    slots cost at most 16 / (3/8) bytes an entry (grown by doubling at a load of 3/4)."""
    m = _parent_map()
    rng = random.Random(11)
    fps = list(dict.fromkeys(rng.randint(SMALLEST, LARGEST) for _ in range(100_000)))
    fps += [n << 40 for n in range(1, 2000)]  # the same low bits
    m[fps[0]] = None
    for parent, fp in zip(fps, fps[1:]):
        m[fp] = parent
    assert len(m) == len(fps)
    assert m[fps[0]] is None
    assert all(m[fp] == parent for parent, fp in zip(fps, fps[1:]))
    assert m.nbytes / len(m) <= 16 / (3 / 8)
    assert m.nbytes >= 16 * len(m) * 4 // 3


def test_refusals_are_clear() -> None:
    m = _parent_map()
    with pytest.raises(ValueError, match="its own parent"):
        m[7] = 7
    m[7] = None
    with pytest.raises(TypeError, match="cannot be deleted"):
        del m[7]
    with pytest.raises(TypeError, match="fingerprints must be ints"):
        m["7"] = None
    with pytest.raises(TypeError, match="fingerprints must be ints"):
        m[8] = 7.0
    with pytest.raises(TypeError, match="fingerprints must be ints"):
        _ = (1.5 in m)
    with pytest.raises(OverflowError, match="64 bits"):
        m[1 << 64] = None
    with pytest.raises(OverflowError, match="64 bits"):
        m[9] = SMALLEST - 1
    with pytest.raises(TypeError, match="unhashable"):
        hash(m)
    assert len(m) == 1 and m[7] is None


NEW_MAP = """
import json
from isrcheck import native
from isrcheck.engine.parentmap import new_parent_map
m = new_parent_map()
m[-5] = None
m[6] = -5
print(json.dumps([native.compiled_wanted(), type(m).__module__, type(m).__name__, m[-5], m[6], len(m)]))
"""


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_new_parent_map_picks_the_build(pure: bool) -> None:
    if not pure:
        _parent_map()
    wanted, module, name, *answers = run_json(NEW_MAP, pure=pure)
    if not pure and not wanted:
        pytest.skip("the compiled modules are stale, so this interpreter runs the Python source")
    assert (module, name) == (("builtins", "dict") if pure else ("isrcheck.engine._parentmap", "ParentMap"))
    assert answers == [None, -5, 2]


def test_enumerate_and_numbers_are_the_one_at_a_time_answers() -> None:
    """The liveness graph's index filled and read in bulk (engine/liveness.py, GraphBuilder.assemble):
    ``enumerate(fps, first)`` stores what ``m[fps[i]] = first + i`` would, across growth, and
    ``numbers(fps, base, out)`` reads them back less ``base``, for runs of a repeated fingerprint too."""
    from array import array

    tag = 1 << 62
    rng = random.Random(5)
    fps = array("q", dict.fromkeys([0, -1, SMALLEST, LARGEST, *(rng.randint(SMALLEST, LARGEST) for _ in range(5000))]))
    m = _parent_map()
    m.enumerate(fps, tag)
    assert len(m) == len(fps) and all(m[fp] == tag + i for i, fp in enumerate(fps))
    m.enumerate(fps[:3].tobytes(), tag)  # bytes as a worker sends them; again: the same entries
    assert len(m) == len(fps) and m.nbytes / len(m) <= 16 / (3 / 8)
    probes = array("q", [fps[9], fps[9], fps[9], fps[0], *fps[::-7]])
    out = array("i", [-7]) * (len(probes) + 1)
    m.numbers(probes.tobytes(), tag, out)
    assert list(out) == [9, 9, 9, 0, *range(len(fps) - 1, -1, -7), -7]  # the entry past them untouched


def test_bulk_refusals_are_clear() -> None:
    from array import array

    m = _parent_map()
    with pytest.raises(ValueError, match="its own parent"):
        m.enumerate(array("q", [5, 6]), 5)
    with pytest.raises(ValueError, match="whole 8-byte words"):
        m.enumerate(b"1234", 0)
    m.enumerate(array("q", [10, 11]), 100)
    m[12] = None
    with pytest.raises(KeyError, match="13"):
        m.numbers(array("q", [10, 13]), 100, array("i", [0, 0]))
    with pytest.raises(ValueError, match="no state number"):
        m.numbers(array("q", [12]), 0, array("i", [0]))  # an initial state's mark
    with pytest.raises(ValueError, match="no state number"):
        m.numbers(array("q", [10]), 101, array("i", [0]))  # below the base
    with pytest.raises(ValueError, match="at least as long"):
        m.numbers(array("q", [10, 11]), 100, array("i", [0]))
    with pytest.raises(ValueError, match="array\\('i'\\)"):
        m.numbers(array("q", [10]), 100, array("q", [0]))
