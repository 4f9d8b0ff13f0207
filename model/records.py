"""Log records.

A record is one int: the leader epoch in which it was appended and a per-partition id that is
unique across the whole run (the model's ghost counter hands them out). The id is what
"acknowledged write" properties track; the epoch is what epoch-based truncation reads.
"""
from __future__ import annotations

from typing import Final

ID_BITS: Final = 8
_ID_MASK: Final = (1 << ID_BITS) - 1


def make_record(record_id: int, epoch: int) -> int:
    return (epoch << ID_BITS) | record_id


def record_id(record: int) -> int:
    return record & _ID_MASK


def record_epoch(record: int) -> int:
    return record >> ID_BITS


def ids_in(log: tuple[int, ...]) -> int:
    """The ids of a log's records as a bitmask (bit ``i`` for record id ``i``)."""
    m = 0
    for r in log:
        m |= 1 << (r & _ID_MASK)
    return m


def render_record(record: int) -> str:
    """``m3@e1``: record 3, appended in leader epoch 1."""
    return f"m{record_id(record)}@e{record_epoch(record)}"


def render_log(log: tuple[int, ...]) -> str:
    return "[" + " ".join(render_record(r) for r in log) + "]"
