"""Sets of broker ids as bitmasks.

Broker ids start at 1 (as in the seed documents); bit ``b`` of a mask stands for broker ``b``.
Masks hash and compare in C, which is what keeps the checker's hot path fast; these helpers keep
the call sites readable.
"""
from __future__ import annotations

from collections.abc import Iterable


def bit(broker: int) -> int:
    return 1 << broker


def mask_of(brokers: Iterable[int]) -> int:
    m = 0
    for b in brokers:
        m |= 1 << b
    return m


def members(mask: int) -> tuple[int, ...]:
    """The brokers in ``mask`` in ascending id order."""
    out = []
    b = 0
    while mask:
        if mask & 1:
            out.append(b)
        mask >>= 1
        b += 1
    return tuple(out)


def size(mask: int) -> int:
    return mask.bit_count()


def contains(mask: int, broker: int) -> bool:
    return bool(mask >> broker & 1)


def render(mask: int) -> str:
    return "{" + ",".join(str(b) for b in members(mask)) + "}"
