"""The ``--disk`` search's window set (engine/_fpset.c's ``FingerprintSet``, engine/disk.py's
``new_fingerprint_set``): a set's answers for everything the window asks (membership, adding one
fingerprint, adding a level's array at once, the count), growth, the edge fingerprints, refusals,
and its size per fingerprint."""
from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

np = pytest.importorskip("numpy")

SMALLEST, LARGEST = -(1 << 63), (1 << 63) - 1
fingerprints = st.integers(SMALLEST, LARGEST)


def _fpset() -> Any:
    module = pytest.importorskip("isrcheck.engine._fpset", reason="a pure install builds no C extension")
    return module.FingerprintSet()


@pytest.mark.parametrize("fp", [0, 1, -1, SMALLEST, LARGEST, 1 << 32])
def test_edge_fingerprints(fp: int) -> None:
    s = _fpset()
    assert fp not in s and len(s) == 0
    with pytest.raises(KeyError):
        s[fp]
    s[fp] = None
    assert fp in s and s[fp] is None and len(s) == 1
    s[fp] = None  # again: no new entry
    assert len(s) == 1
    other = 0 if fp != 0 else LARGEST
    assert other not in s


@settings(max_examples=60, deadline=None)
@given(st.lists(fingerprints, max_size=3_000), st.lists(fingerprints, max_size=200))
def test_the_same_answers_as_a_set(added: list[int], probes: list[int]) -> None:
    """One at a time for half, the level's array at once for the other (as disk.py fills a level)."""
    s, want = _fpset(), set()
    half = len(added) // 2
    for fp in added[:half]:
        s[fp] = None
        want.add(fp)
    s.update(np.array(added[half:], dtype=np.int64))
    want.update(added[half:])
    assert len(s) == len(want)
    assert all(fp in s for fp in want)
    assert [fp in s for fp in probes] == [fp in want for fp in probes]


def test_growth_keeps_every_fingerprint_at_11_to_21_bytes_each() -> None:
    rng = random.Random(7)
    fps = [rng.randrange(SMALLEST, LARGEST) for _ in range(200_000)]
    s = _fpset()
    s.update(np.array(fps, dtype=np.int64).tobytes())  # bytes work as well as an array
    assert len(s) == len(set(fps)) and all(fp in s for fp in fps[::97])
    assert 8 * 4 / 3 * len(s) <= s.nbytes <= 8 * 8 / 3 * len(s)  # 8-byte slots at a load of 3/8 to 3/4


def test_refusals() -> None:
    s = _fpset()
    with pytest.raises(TypeError, match="holds no values"):
        s[1] = 2
    s[1] = None
    with pytest.raises(TypeError, match="cannot be deleted"):
        del s[1]
    with pytest.raises(ValueError, match="whole 8-byte fingerprints"):
        s.update(b"\0" * 12)
    with pytest.raises((OverflowError, ValueError)):
        s[1 << 64] = None
    assert len(s) == 1 and 1 in s


def test_the_window_uses_it_where_compiled_code_is_wanted(monkeypatch: pytest.MonkeyPatch) -> None:
    """engine/disk.py's window: the C set in the compiled build, a dict when ISRCHECK_PURE asks for
    the interpreted code; both answer the window's questions alike."""
    from isrcheck.engine.disk import _fingerprint_set, new_fingerprint_set

    cls = type(_fpset())
    assert type(new_fingerprint_set()) is cls
    fps = np.array([5, -3, 0, 5], dtype=np.int64)
    assert type(_fingerprint_set(np, [fps])) is cls and len(_fingerprint_set(np, [fps])) == 3
    monkeypatch.setenv("ISRCHECK_PURE", "1")
    pure = _fingerprint_set(np, [fps])
    assert isinstance(pure, dict) and sorted(pure) == [-3, 0, 5]
