"""Leader epochs on replicas: the epoch cache and the OffsetsForLeaderEpoch exchange.

From KIP-101 on, every replica keeps a leader-epoch cache: ``(epoch, start_offset)`` pairs in
ascending order, recording where each leader epoch's records begin in its log (a leader also
records its own new epoch at its log end when it takes over, before any record of it exists).
A follower that must reconcile its log with a new leader asks the leader where one of its epochs
ends and truncates there, instead of truncating to its high watermark. The generations differ in
how the leader answers and how the follower uses the answer (specs/05-replication.md):

- ``kip-101``: the follower sends its latest epoch; the leader answers the start offset of the
  first epoch it knows that is larger (or its log end); the follower truncates there, once.
- ``kip-279``: the leader answers with the largest epoch it knows that is not larger than the one
  asked, and where that epoch ends; a follower that does not know that epoch truncates to its own
  end of the previous one and asks again, until both agree.
- ``kip-320``: as kip-279, and fetches and epoch queries carry the follower's current leader epoch,
  which the leader fences when it differs from its own.

Pure functions over tuples: they are on the checker's hot path only in those generations.
"""
from __future__ import annotations

from typing import Final

from .records import record_epoch

Epochs = tuple[tuple[int, int], ...]
UNDEFINED: Final = -1


def assign(epochs: Epochs, epoch: int, start: int) -> Epochs:
    """Record that ``epoch`` starts at ``start`` (no-op unless it is newer than the last entry)."""
    if epochs and epochs[-1][0] >= epoch:
        return epochs
    return epochs + ((epoch, start),)


def after_append(epochs: Epochs, log: tuple[int, ...], first_new: int) -> Epochs:
    """Entries for the epochs of records appended at offsets ``first_new`` onwards."""
    for offset in range(first_new, len(log)):
        epochs = assign(epochs, record_epoch(log[offset]), offset)
    return epochs


def truncate(epochs: Epochs, end: int) -> Epochs:
    """Drop the entries of epochs that start at or after ``end`` (the log was cut there)."""
    if not epochs or epochs[-1][1] < end:
        return epochs
    return tuple(e for e in epochs if e[1] < end)


def latest(epochs: Epochs) -> int:
    return epochs[-1][0] if epochs else UNDEFINED


def start_of(epochs: Epochs, epoch: int) -> int:
    """Start offset of ``epoch`` in the cache, or UNDEFINED."""
    for e, start in epochs:
        if e == epoch:
            return start
    return UNDEFINED


def end_offset_kip101(epochs: Epochs, leo: int, asked: int) -> tuple[int, int]:
    """KIP-101's answer: the log end for the latest epoch, else where the first larger epoch
    starts; UNDEFINED when the asked epoch is older than every known one or newer than all."""
    if asked == UNDEFINED or not epochs:
        return UNDEFINED, UNDEFINED
    if asked == epochs[-1][0]:
        return asked, leo
    if asked < epochs[0][0]:
        return UNDEFINED, UNDEFINED
    for e, start in epochs:
        if e > asked:
            return asked, start
    return UNDEFINED, UNDEFINED


def end_offset_kip279(epochs: Epochs, leo: int, asked: int) -> tuple[int, int]:
    """KIP-279's answer: the largest known epoch not larger than ``asked`` and where it ends.

    For an epoch older than every known one, the asked epoch and where the first known epoch
    starts (the data before it is gone); UNDEFINED for an epoch newer than every known one.
    """
    if asked == UNDEFINED or not epochs:
        return UNDEFINED, UNDEFINED
    if asked == epochs[-1][0]:
        return asked, leo
    previous = UNDEFINED
    for e, start in epochs:
        if e > asked:
            return (asked if previous == UNDEFINED else previous), start
        previous = e
    return UNDEFINED, UNDEFINED
