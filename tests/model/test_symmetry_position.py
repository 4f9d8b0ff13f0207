"""model/symmetry.py's ``_position``, the lookup every broker signature makes (a loop since the
compiled build paid a traceback per caught ValueError): the answer of ``tuple.index``, -1 where
the broker is absent, so the signatures, the representatives and the counts are unchanged."""
from __future__ import annotations

from itertools import product

from isrcheck.model.symmetry import _position


def _by_index(b: int, ids: tuple[int, ...]) -> int:
    return ids.index(b) if b in ids else -1


def test_the_answer_of_tuple_index() -> None:
    for size in range(4):
        for ids in product(range(4), repeat=size):  # duplicates included: the first position wins
            for b in range(5):
                assert _position(b, ids) == _by_index(b, ids), (b, ids)
