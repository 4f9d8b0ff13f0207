"""The shared fingerprint table (engine/fptable.py, engine/_fptable.c): smallest-key claims, settling,
growth, sharing across fork; the C and the Python table alike."""
from __future__ import annotations

import multiprocessing
from array import array
import pickle
import random
from collections.abc import Callable
from typing import Any

import pytest
from isrcheck.engine.fptable import PyFingerprintTable
from native_helpers import run_json

SMALLEST, LARGEST = -(1 << 63), (1 << 63) - 1


def _c_table() -> Any:
    module = pytest.importorskip("isrcheck.engine._fptable", reason="a pure install builds no C extension")
    return module.FingerprintTable


@pytest.fixture(params=["c", "python"])
def make(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """The table class under test (the C one skips in a pure install, the Python one always runs)."""
    return _c_table() if request.param == "c" else PyFingerprintTable


def test_claim_keeps_the_smallest_key(make: Callable[..., Any]) -> None:
    t = make(1 << 10, 16)
    assert t.claim(77, 1 << 40, 5) == 1
    assert t.key_of(77) == (1 << 40) | 5
    assert t.claim(77, 1 << 40, 9) == 0  # larger
    assert t.key_of(77) == (1 << 40) | 5
    assert t.claim(77, 1 << 40, 2) == 1  # smaller
    assert t.key_of(77) == (1 << 40) | 2
    assert t.claim(77, 1 << 40, 2) == 0  # equal
    assert t.claim(77, 1 << 41, 0) == 0  # a later level never wins again
    assert t.claim(78, 1 << 41, 0) == 1  # another fingerprint is independent
    assert t.key_of(77) == (1 << 40) | 2 and t.key_of(78) == 1 << 41
    assert len(t) == 2


def test_extreme_fingerprints_are_distinct_entries(make: Callable[..., Any]) -> None:
    t = make(1 << 10, 16)
    fps = [0, -1, SMALLEST, LARGEST, 1]
    for k, fp in enumerate(fps):
        assert t.claim(fp, 0, 10 + k) == 1
    for k, fp in enumerate(fps):
        assert t.key_of(fp) == 10 + k
        assert t.claim(fp, 0, 100) == 0
    assert len(t) == len(fps)
    assert t.claim(0, 0, 3) == 1 and t.key_of(0) == 3 and t.key_of(-1) == 11


def test_out_of_range_arguments_are_refused(make: Callable[..., Any]) -> None:
    t = make(1 << 10, 16)
    for fp in (1 << 63, SMALLEST - 1, 1 << 100):
        with pytest.raises(OverflowError, match="64 bits"):
            t.claim(fp, 0, 0)
        with pytest.raises(OverflowError, match="64 bits"):
            t.key_of(fp)
    with pytest.raises(ValueError, match="non-negative"):
        t.claim(1, -1, 0)
    with pytest.raises(ValueError, match="non-negative"):
        t.claim(1, 0, -5)
    with pytest.raises(OverflowError, match="63 bits"):
        t.claim(1, 1 << 63, 0)
    with pytest.raises(OverflowError, match="63 bits"):
        t.settle(1, 1 << 64, 0)
    with pytest.raises(TypeError):
        t.claim("1", 0, 0)
    assert len(t) == 0 and t.key_of(1) is None
    with pytest.raises(ValueError):
        make(16, 32)  # max_slots below initial_slots


def test_prefetch_is_a_hint_that_checks_its_argument_and_changes_nothing(make: Callable[..., Any]) -> None:
    t = make(1 << 10, 16)
    assert t.claim(5, 0, 1) == 1
    for fp in (0, 5, 6, SMALLEST, LARGEST):
        assert t.prefetch(fp) is None
    assert len(t) == 1 and t.key_of(5) == 1 and t.key_of(6) is None and t.key_of(0) is None
    with pytest.raises(OverflowError, match="64 bits"):
        t.prefetch(1 << 64)
    with pytest.raises(TypeError):
        t.prefetch("5")


def test_settle_writes_the_parent_of_the_stored_key_only(make: Callable[..., Any]) -> None:
    t = make(1 << 10, 16)
    t.claim(5, 0, 7)
    t.claim(5, 0, 3)
    assert t.entry(5) == (3, 0)  # unsettled
    assert t.settle(5, 7, 111) is False  # a loser
    assert t.entry(5) == (3, 0)
    assert t.settle(5, 3, SMALLEST) is True
    assert t.entry(5) == (3, SMALLEST)
    t.claim(0, 0, 4)
    assert t.settle(0, 4, -9) is True and t.entry(0) == (4, -9)
    assert t.entry(6) is None and t.key_of(6) is None and t.settle(6, 3, 1) is False
    assert t.entry(-1) is None and t.settle(-1, 0, 0) is False


def test_settle_kept_settles_the_claims_kept_with_a_parent(make: Callable[..., Any]) -> None:
    t = make(1 << 12, 1 << 10)
    rng = random.Random(7)
    fps = rng.sample(range(-(1 << 40), 1 << 40), 300) + [0]
    for n, fp in enumerate(fps):
        assert t.claim(fp, 0, 2 * n + 1, n - 1000) == 1  # kept, with its parent
    assert t.claim(fps[0], 0, 999) == 0  # a lost claim is not kept
    assert t.claim(12345, 0, 7) == 1  # nor one without a parent
    # every other fingerprint is then won by a smaller key: its first claimant loses
    for fp in fps[::2]:
        t.claim(fp, 0, 0)
    won, keys, winners = t.settle_kept()
    assert isinstance(won, bytes) and list(won) == [n % 2 for n in range(len(fps))]
    assert isinstance(keys, bytes) and array("q", keys).tolist() == [2 * n + 1 for n in range(len(fps)) if n % 2]
    assert winners == [fp for n, fp in enumerate(fps) if n % 2]
    for n, fp in enumerate(fps):
        assert t.entry(fp) == ((0, 0) if n % 2 == 0 else (2 * n + 1, n - 1000))
    assert t.entry(12345) == (7, 0)  # never settled
    assert t.settle_kept() == (b"", b"", [])  # forgotten once settled
    assert len(t) == len(fps) + 1


def _words(*keys: int) -> bytes:
    return array("q", keys).tobytes()


def test_ranks_in_level_counts_the_smaller_keys_of_every_run(make: Callable[..., Any]) -> None:
    runs = [_words(2, 9, 40), _words(), _words(5, 7, 41, 50)]
    # each held key's rank is its position in the merged level: 2 5 7 9 40 41 50
    assert make.ranks_in_level(_words(5, 9, 50), runs) == [1, 3, 6]
    assert make.ranks_in_level(_words(2, 7, 40, 41), runs) == [0, 2, 4, 5]
    assert make.ranks_in_level(_words(), runs) == []
    rng = random.Random(3)
    level = sorted(rng.sample(range(1 << 50), 2000))
    split: list[list[int]] = [[], [], []]  # each key of the level in one worker's run
    for k in level:
        split[rng.randrange(3)].append(k)
    held = sorted(rng.sample(level, 500))
    assert make.ranks_in_level(_words(*held), [_words(*r) for r in split]) == [level.index(k) for k in held]


def test_ranks_in_level_refuses_what_is_not_a_level(make: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match="not among the level's keys"):
        make.ranks_in_level(_words(3), [_words(1, 2), _words(4)])
    with pytest.raises(ValueError, match="increasing order"):
        make.ranks_in_level(_words(2, 1), [_words(1, 2)])
    with pytest.raises(ValueError, match="whole number of 64-bit keys"):
        make.ranks_in_level(b"\x01\x02", [_words(1)])
    with pytest.raises(ValueError, match="whole number of 64-bit keys"):
        make.ranks_in_level(_words(1), [_words(1) + b"\x00"])


def test_growth_is_asked_for_and_keeps_every_entry(make: Callable[..., Any]) -> None:
    t = make(64, 16)
    assert t.capacity == 16 and t.reserved == 64 and t.nbytes == 16 * 32 + 64
    for i in range(1, 13):
        assert t.claim(i * 1000, 0, i) == 1
        assert not t.wants_growth()
    assert t.claim(0, 0, 13) == 1  # the 13th new fingerprint (the zero slot counts) crosses 3/4
    assert t.wants_growth()
    assert t.claim(1000, 0, 0) == -1 and t.claim(99, 0, 0) == -1  # refused, nothing changed
    assert t.key_of(1000) == 1 and t.key_of(99) is None and len(t) == 13
    for i in range(1, 13):
        assert t.settle(i * 1000, i, -i)
    t.grow()
    assert not t.wants_growth() and t.capacity == 32 and t.nbytes == 32 * 32 + 64 and len(t) == 13
    for i in range(1, 13):
        assert t.entry(i * 1000) == (i, -i)
    assert t.entry(0) == (13, 0)
    assert t.claim(1000, 0, 0) == 1 and t.claim(99, 0, 1) == 1


def test_grow_at_the_reservation_is_a_clear_memory_error(make: Callable[..., Any]) -> None:
    t = make(16, 16)
    i = 1
    while not t.wants_growth():
        t.claim(i, 0, i)
        i += 1
    with pytest.raises(MemoryError, match="the fingerprint table is full: 13 entries in its 16 reserved slots"):
        t.grow()
    assert t.wants_growth() and t.capacity == 16 and t.key_of(1) == 1


def test_many_fingerprints_survive_several_grows(make: Callable[..., Any]) -> None:
    rng = random.Random(7)
    fps = list({rng.randrange(SMALLEST, LARGEST + 1) for _ in range(100_000)} | {0, -1})
    t = make(1 << 20, 16)
    grows = 0
    for i, fp in enumerate(fps):
        answer = t.claim(fp, 1 << 32, i)
        if answer == -1:
            t.grow()
            grows += 1
            answer = t.claim(fp, 1 << 32, i)
        assert answer == 1
        assert t.settle(fp, (1 << 32) | i, fp ^ i)
    assert grows >= 10 and len(t) == len(fps) and t.capacity >= len(fps) * 4 // 3
    for i, fp in enumerate(fps):
        assert t.entry(fp) == ((1 << 32) | i, fp ^ i)


def _claim_all(t: Any, fps: list[int], p: int) -> None:
    """Worker p claims fingerprint i with key 2*i + p, p=0 front to back, p=1 back to front."""
    order = range(len(fps)) if p == 0 else range(len(fps) - 1, -1, -1)
    for i in order:
        assert t.claim(fps[i], 0, 2 * i + p) in (0, 1)
    t.flush()  # the C table counts new entries in batches: a worker's expansion ends so


def _settle_all(t: Any, fps: list[int], p: int) -> None:
    for i, fp in enumerate(fps):
        if t.settle(fp, 2 * i + p, p + 10):
            assert p == 0


def _grow_in_child(t: Any) -> None:
    t.grow()
    assert t.claim(123456, 0, 1) == 1


def _run(ctx: Any, target: Callable[..., None], *args: Any) -> list[Any]:
    return [ctx.Process(target=target, args=(*args, p)) for p in range(2)]


def test_forked_workers_agree_on_the_smallest_key(make: Callable[..., Any]) -> None:
    ctx = multiprocessing.get_context("fork")
    rng = random.Random(3)
    fps = list({rng.randrange(SMALLEST, LARGEST + 1) for _ in range(20_000)})
    t = make(1 << 16, 1 << 16)
    for phase in (_claim_all, _settle_all):
        procs = _run(ctx, phase, t, fps)
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
            assert proc.exitcode == 0
    assert len(t) == len(fps)
    for i, fp in enumerate(fps):
        assert t.entry(fp) == (2 * i, 10)  # worker 0's key, settled by worker 0 alone


def test_a_grow_in_a_child_is_seen_by_the_parent(make: Callable[..., Any]) -> None:
    ctx = multiprocessing.get_context("fork")
    t = make(1 << 10, 16)
    for i in range(1, 14):
        t.claim(i, 0, i)
        t.settle(i, i, -i)
    assert t.wants_growth()
    child = ctx.Process(target=_grow_in_child, args=(t,))
    child.start()
    child.join()
    assert child.exitcode == 0
    assert t.capacity == 32 and not t.wants_growth() and len(t) == 14
    assert t.key_of(123456) == 1
    for i in range(1, 14):
        assert t.entry(i) == (i, -i)


def test_pickling_is_refused(make: Callable[..., Any]) -> None:
    t = make(1 << 10, 16)
    with pytest.raises(TypeError, match="shared by fork"):
        pickle.dumps(t)


NEW_TABLE = """
import json
from isrcheck import native
from isrcheck.engine.fptable import new_table
t = new_table(1 << 10, 16)
answer = t.claim(-5, 0, 1)
print(json.dumps([native.compiled_wanted(), type(t).__module__, type(t).__name__, answer, t.key_of(-5)]))
"""


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_new_table_picks_the_build(pure: bool) -> None:
    if not pure:
        _c_table()
    wanted, module, name, answer, key = run_json(NEW_TABLE, pure=pure)
    if not pure and not wanted:
        pytest.skip("the compiled modules are stale, so this interpreter runs the Python source")
    if pure:
        assert (module, name) == ("isrcheck.engine.fptable", "PyFingerprintTable")
    else:
        assert (module, name) == ("isrcheck.engine._fptable", "FingerprintTable")
    assert (answer, key) == (1, 1)

