"""The parallel checker's visited set: one fingerprint table shared by forked worker processes.

Workers expand one breadth-first level at a time and all claim successor fingerprints in one
hash table that lives in shared memory (an anonymous ``MAP_SHARED`` mapping made by the parent
before fork, so every worker has it). Each entry holds a fingerprint, a *discovery key* and a
parent fingerprint.

Why keys, and why the smallest: several workers may find the same successor in one level, and the
checker's answers (which state was reached first, hence every counterexample trace) must not
depend on which worker got there first in wall-clock time. So a claim offers a key
``base | index`` (the level and the position of the discovering step in breadth-first order) and
the table keeps the *smallest* key ever claimed for the fingerprint, an atomic min: whatever the
interleaving, once the level is done the stored key is the same. Keys of earlier levels are
smaller than those of later ones, so a fingerprint visited earlier is never won again (its claim
answers 0). After the level each worker *settles* its claims: a worker whose key is still the
stored one is the unique winner and writes the parent.

Growing: the table never grows under a claim. A claim that takes the load past 3/4 raises a
grow-wanted flag in the shared header; from then on claims refuse (answer -1, nothing done), the
workers finish or hand back their level, and a single process calls :meth:`grow` while nobody
else uses the table. The capacity lives in the shared header too, so every process sees the
grown table. Memory is reserved up front for ``max_slots`` slots (``MAP_NORESERVE``: only
touched pages count), so growing never moves the mapping.

Two implementations with the same layout and answers: engine/_fptable.c (lock-free, with atomic
compare-and-swap on the shared words) and :class:`PyFingerprintTable` below (the same steps
under one ``multiprocessing.Lock``) for installs without a C compiler; :func:`new_table` picks.
"""
from __future__ import annotations

import mmap
from array import array
import multiprocessing
import weakref
from typing import Any

_WORD = (1 << 64) - 1
_EMPTY_KEY = _WORD  # key word of an empty slot; every real key is below 2**63
_MIX = 0x9E3779B97F4A7C15
_MIN_SLOTS = 16
_MOST_SLOTS = 1 << 48

# the shared header, in 64-bit words (as engine/_fptable.c)
_H_CAPACITY, _H_COUNT, _H_GROW, _H_ZERO_PRESENT, _H_ZERO_KEY, _H_ZERO_PARENT = range(6)
_HEADER_WORDS = 8
_SLOT_WORDS = 4  # fingerprint (0: empty), key, parent, spare (32 bytes: one cache line holds whole slots)
_EMPTY_SLOT = bytes(8) + b"\xff" * 8 + bytes(16)
_INIT_CHUNK = 4096  # slots initialised per write, to bound the temporary bytes


def _fp_word(fp: int) -> int:
    """A fingerprint as its unsigned 64-bit word (fingerprints are signed ``hash()`` values)."""
    if not isinstance(fp, int):
        raise TypeError(f"fingerprints must be ints (got {type(fp).__name__})")
    if not -(1 << 63) <= fp < (1 << 63):
        raise OverflowError("fingerprints must fit in 64 bits (got a larger int)")
    return fp & _WORD


def _signed(word: int) -> int:
    return word - (1 << 64) if word >> 63 else word


def _key_part(k: int) -> int:
    if not isinstance(k, int):
        raise TypeError(f"keys must be ints (got {type(k).__name__})")
    if k < 0:
        raise ValueError("keys must be non-negative")
    if k >> 63:
        raise OverflowError("keys must fit in 63 bits (got a larger int)")
    return k


def _words(b: bytes, what: str) -> list[int]:
    if len(b) % 8:
        raise ValueError(f"{what}: {len(b)} bytes are not a whole number of 64-bit keys")
    words = array("q")
    words.frombytes(b)
    return words.tolist()


def _round_up(n: int) -> int:
    p = _MIN_SLOTS
    while p < n and p < _MOST_SLOTS:
        p *= 2
    return p


def _home(fp: int, mask: int) -> int:
    h = (fp * _MIX) & _WORD
    return (h ^ (h >> 32)) & mask


def _release(view: memoryview, mm: mmap.mmap) -> None:
    view.release()
    mm.close()


class PyFingerprintTable:
    """engine/_fptable.c's ``FingerprintTable`` in Python: the same layout, the same answers, every
    method under one lock (made here, so forked children share it with the mapping)."""

    def __init__(self, max_slots: int, initial_slots: int = 1 << 16) -> None:
        if max_slots < 1:
            raise ValueError("max_slots must be positive")
        initial = _round_up(initial_slots)
        most = _round_up(max_slots)
        if most < initial:
            raise ValueError(f"max_slots ({most} rounded up) must be at least initial_slots ({initial})")
        flags = mmap.MAP_SHARED | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", 0)
        mm = None
        while most >= initial:
            try:
                mm = mmap.mmap(-1, (most * _SLOT_WORDS + _HEADER_WORDS) * 8, flags=flags)
                break
            except OSError:
                most //= 2
        if mm is None:
            raise MemoryError(f"could not reserve shared memory for a fingerprint table of {initial} slots")
        self._mm = mm
        self._words = memoryview(mm).cast("Q")
        self._reserved = most
        self._lock = multiprocessing.Lock()
        self._kept: list[tuple[int, int, int]] = []  # this process's claims for settle_kept()
        weakref.finalize(self, _release, self._words, mm)
        self._words[_H_CAPACITY] = initial
        self._words[_H_ZERO_KEY] = _EMPTY_KEY
        self._init_slots(initial)

    def _init_slots(self, n: int) -> None:
        """Empty slots [0, n): fingerprint 0, key all ones, parent 0."""
        start = _HEADER_WORDS * 8
        for first in range(0, n, _INIT_CHUNK):
            k = min(_INIT_CHUNK, n - first)
            at = start + first * _SLOT_WORDS * 8
            self._mm[at:at + k * _SLOT_WORDS * 8] = _EMPTY_SLOT * k

    def _find(self, fp: int) -> int:
        """The word index of fp's key (the zero slot's for 0), or -1 when fp is absent."""
        w = self._words
        if fp == 0:
            return _H_ZERO_KEY if w[_H_ZERO_PRESENT] else -1
        cap = w[_H_CAPACITY]
        i = _home(fp, cap - 1)
        for _ in range(cap):
            at = _HEADER_WORDS + i * _SLOT_WORDS
            seen = w[at]
            if seen == fp:
                return at + 1
            if seen == 0:
                return -1
            i = (i + 1) & (cap - 1)
        return -1

    def _counted(self) -> None:
        w = self._words
        w[_H_COUNT] += 1
        if w[_H_COUNT] * 4 > w[_H_CAPACITY] * 3:
            w[_H_GROW] = 1

    def _lower(self, at: int, key: int) -> int:
        w = self._words
        if w[at] > key:
            w[at] = key
            return 1
        return 0

    def claim(self, fp: int, base: int, index: int, parent: int | None = None) -> int:
        """Offer key ``base | index`` for fp: 1 if it is now the smallest, 0 if a key <= it was
        there, -1 (nothing done) while the table wants growth. With a parent, a successful claim
        is kept (in this process) for :meth:`settle_kept`."""
        got = self._claim(_fp_word(fp), _key_part(base) | _key_part(index))
        if got == 1 and parent is not None:
            self._kept.append((_key_part(base) | _key_part(index), fp, parent))
        return got

    def prefetch(self, fp: int) -> None:
        """A hint for the native table's memory (see engine/_fptable.c); here it only checks fp."""
        _fp_word(fp)

    def _claim(self, word: int, key: int) -> int:
        w = self._words
        with self._lock:
            if w[_H_GROW]:
                return -1
            if word == 0:
                if not w[_H_ZERO_PRESENT]:
                    w[_H_ZERO_PRESENT] = 1
                    self._counted()
                return self._lower(_H_ZERO_KEY, key)
            cap = w[_H_CAPACITY]
            i = _home(word, cap - 1)
            for _ in range(cap):
                at = _HEADER_WORDS + i * _SLOT_WORDS
                seen = w[at]
                if seen == 0:
                    w[at] = word
                    stored = self._lower(at + 1, key)
                    self._counted()
                    return stored
                if seen == word:
                    return self._lower(at + 1, key)
                i = (i + 1) & (cap - 1)
            w[_H_GROW] = 1
            return -1

    def settle(self, fp: int, key: int, parent: int) -> bool:
        """Store parent if key is fp's stored key (only the unique winner's is); whether it was."""
        word = _fp_word(fp)
        key = _key_part(key)
        parent_word = _fp_word(parent)
        with self._lock:
            at = self._find(word)
            if at < 0 or self._words[at] != key:
                return False
            self._words[at + 1] = parent_word
            return True

    def settle_kept(self) -> tuple[bytes, bytes, list[int]]:
        """:meth:`settle` every claim this process kept (``claim``'s parent), in the order made,
        and forget them: (a byte per kept claim, 1 for a winner; the winners' keys, as native
        int64 words; their fingerprints)."""
        kept, self._kept = self._kept, []
        won = bytes(self.settle(fp, key, parent) for key, fp, parent in kept)
        winners = [(key, fp) for (key, fp, _), w in zip(kept, won) if w]
        return won, array("q", [key for key, _ in winners]).tobytes(), [fp for _, fp in winners]

    @staticmethod
    def ranks_in_level(keys: bytes, runs: list[bytes]) -> list[int]:
        """For each of ``keys`` (sorted int64 words), how many keys of the level are smaller, the
        level being ``runs`` (sorted int64 words, one run per worker); each key must be in one."""
        own = _words(keys, "keys")
        level = [_words(run, "a run") for run in runs]
        walked = [0] * len(level)
        ranks: list[int] = []
        for j, key in enumerate(own):
            if j and key <= own[j - 1]:
                raise ValueError("ranks_in_level(): the keys are not in increasing order")
            position = 0
            present = False
            for r, run in enumerate(level):
                p, end = walked[r], len(run)
                while p < end and run[p] < key:
                    p += 1
                walked[r] = p
                position += p
                present = present or (p < end and run[p] == key)
            if not present:
                raise ValueError(f"a held state's key {key} is not among the level's keys")
            ranks.append(position)
        return ranks

    def entry(self, fp: int) -> tuple[int, int] | None:
        """(stored key, parent) of fp (parent 0 until settled), or None if absent."""
        word = _fp_word(fp)
        with self._lock:
            at = self._find(word)
            if at < 0:
                return None
            return self._words[at], _signed(self._words[at + 1])

    def key_of(self, fp: int) -> int | None:
        """The stored key of fp, or None if absent."""
        word = _fp_word(fp)
        with self._lock:
            at = self._find(word)
            return None if at < 0 else self._words[at]

    def pairs(self) -> bytes:
        """Every (fingerprint, parent) as two native 64-bit words, an initial state its own parent
        (engine/checkpoint.py's parent map): a snapshot of a parallel search. Only while no other
        process uses the table."""
        out = array("Q")
        with self._lock:
            w = self._words
            if w[_H_ZERO_PRESENT]:
                out.extend((0, w[_H_ZERO_PARENT]))
            for i in range(w[_H_CAPACITY]):
                at = _HEADER_WORDS + i * _SLOT_WORDS
                if w[at]:
                    out.extend((w[at], w[at + 2]))
        return out.tobytes()

    def absorb(self, pairs: bytes) -> None:
        """Enter the pairs of :meth:`pairs`, each with key 0 (below every key a search offers, so no
        state of them is won again) and its parent: a resumed parallel search's visited states.
        Grows as it needs; only while no other process uses the table."""
        if len(pairs) % 16:
            raise ValueError("absorb() takes whole 16-byte pairs")
        words = array("Q")
        words.frombytes(pairs)
        it = iter(words)
        for fp, parent in zip(it, it):
            while self._claim(fp, 0) < 0:
                self.grow()
            self.settle(_signed(fp), 0, _signed(parent))

    def flush(self) -> None:
        """Nothing to do: this table counts every entry as it inserts it (the C one counts in
        batches, and flushes its batch here)."""

    def wants_growth(self) -> bool:
        """Whether claims refuse until :meth:`grow` is called."""
        with self._lock:
            return bool(self._words[_H_GROW])

    def grow(self) -> None:
        """Double the capacity (more if still over 3/4 full) and rehash in place; only while no
        other process uses the table."""
        with self._lock:
            w = self._words
            cap, count = w[_H_CAPACITY], w[_H_COUNT]
            want = cap * 2
            while count * 4 > want * 3:
                want *= 2
            if want > self._reserved:
                raise MemoryError(f"the fingerprint table is full: {count} entries in its "
                                  f"{self._reserved} reserved slots")
            entries = []
            for i in range(cap):
                at = _HEADER_WORDS + i * _SLOT_WORDS
                if w[at]:
                    entries.append((w[at], w[at + 1], w[at + 2]))
            self._init_slots(want)
            for fp, key, parent in entries:
                i = _home(fp, want - 1)
                while w[_HEADER_WORDS + i * _SLOT_WORDS]:
                    i = (i + 1) & (want - 1)
                at = _HEADER_WORDS + i * _SLOT_WORDS
                w[at], w[at + 1], w[at + 2] = fp, key, parent
            w[_H_COUNT] = len(entries) + (1 if w[_H_ZERO_PRESENT] else 0)
            w[_H_CAPACITY] = want
            w[_H_GROW] = 0

    def __len__(self) -> int:
        with self._lock:
            return self._words[_H_COUNT]

    @property
    def capacity(self) -> int:
        """Slots in use."""
        with self._lock:
            return self._words[_H_CAPACITY]

    @property
    def reserved(self) -> int:
        """Slots the shared mapping has room for."""
        return self._reserved

    @property
    def nbytes(self) -> int:
        """Bytes in use: the header and ``capacity`` slots."""
        return (self.capacity * _SLOT_WORDS + _HEADER_WORDS) * 8

    def __reduce__(self) -> Any:
        raise TypeError("a FingerprintTable is shared by fork, never pickled")


def new_table(max_slots: int, initial_slots: int = 1 << 16) -> Any:
    """A fresh shared table: engine/_fptable.c's ``FingerprintTable`` when it is built and compiled
    code is wanted, else :class:`PyFingerprintTable` (the same answers, under a lock)."""
    from isrcheck import native

    if native.compiled_wanted():
        try:
            from ._fptable import FingerprintTable
        except ImportError:  # a pure install (ISRCHECK_BUILD_PURE=1)
            pass
        else:
            return FingerprintTable(max_slots, initial_slots)
    return PyFingerprintTable(max_slots, initial_slots)


__all__ = ["PyFingerprintTable", "new_table"]
