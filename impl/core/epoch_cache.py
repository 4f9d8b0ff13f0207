"""The leader-epoch cache and the rules of the OffsetsForLeaderEpoch exchange (specs/05-replication.md,
"Protocol generations"), as pure functions over ``[(epoch, start_offset), ...]`` lists.

A cache lists where each leader epoch a replica knows begins in its log: epochs strictly ascending,
start offsets never decreasing; an epoch ends where the next entry starts, the last one at the LEO.

- :func:`assign`: an entry is added only at the end, for an epoch later than the last entry's (a
  leader taking over at its LEO; a record of a newer epoch appended by a leader or a follower).
- :func:`cut`: cutting the log to length ``n`` drops every entry that starts at ``n`` or later
  (``TruncateToEpochEndOffset``, OffsetOutOfRange in a fetch, a crash).
- :func:`after_unclean_stop`: the cache after a recovery from an unclean stop (the pre-fix rule of
  KAFKA-10432 when it is put back: the entry of epoch 0 lost).
- :func:`leader_answer`: the leader's answer to a question about epoch ``e``, in the answer form
  of the generation (its trait ``epoch_answer``, specs/protocol.toml): ``end-offset`` (``kip-101``:
  an end offset only) or ``epoch-and-end-offset`` (``kip-279`` and ``kip-320``: an epoch and its end).
- :func:`truncation_point`: what the follower makes of the answer: the length to cut its log to,
  and whether it must ask again (walking back, with ``epoch-and-end-offset``, where the follower
  reads its own cache with the leader's rule).

``UNDEFINED`` (-1) stands for an unknown epoch or offset, as in Kafka's protocol.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from isrcheck.specs.protocol import EpochAnswer

UNDEFINED = -1

Entry = tuple[int, int]


def assign(cache: list[Entry], epoch: int, start: int) -> bool:
    """Append ``(epoch, start)`` unless the cache already holds ``epoch`` or a later one; True if added."""
    if cache and cache[-1][0] >= epoch:
        return False
    cache.append((epoch, start))
    return True


def assign_records(cache: list[Entry], first_offset: int, epochs: Iterable[int]) -> bool:
    """Entries for records appended at ``first_offset`` on, whose epochs are ``epochs`` (in order)."""
    changed = False
    for i, e in enumerate(epochs):
        changed |= assign(cache, e, first_offset + i)
    return changed


def cut(cache: list[Entry], length: int) -> bool:
    """Drop the entries that start at ``length`` or later (the log was cut there); True if any was."""
    keep = [x for x in cache if x[1] < length]
    if len(keep) == len(cache):
        return False
    cache[:] = keep
    return True


def after_unclean_stop(cache: list[Entry], skips_epoch_0: bool) -> bool:
    """The cache a broker starts with after an unclean stop (a crash: every stop of the simulator, a
    killed process), once :func:`cut` to the surviving log. Fixed (Kafka 2.6.1/2.7.0): nothing more.
    KAFKA-10432 put back (``skips_epoch_0``, ``reintroduce``): the rebuild from the log skipped the
    records of epoch 0, so the entry of epoch 0 is gone and the cache no longer covers those records
    (EpochCacheCoversLog). True if an entry was dropped."""
    if not skips_epoch_0:
        return False
    keep = [x for x in cache if x[0] != 0]
    if len(keep) == len(cache):
        return False
    cache[:] = keep
    return True


def latest(cache: Sequence[Entry]) -> int:
    return cache[-1][0] if cache else UNDEFINED


def start_of(cache: Sequence[Entry], epoch: int) -> int:
    """Where ``epoch`` starts in the log, or UNDEFINED when the cache does not hold it."""
    for e, start in cache:
        if e == epoch:
            return start
    return UNDEFINED


def leader_answer(form: EpochAnswer, cache: Sequence[Entry], leo: int, asked: int) -> Entry:
    """The leader's answer ``(epoch, end offset)`` to a question about epoch ``asked``.

    ``end-offset`` (kip-101): if ``asked`` is the leader's latest epoch, its LEO; if the leader knows an epoch later
    than ``asked`` and ``asked`` is not older than its first epoch, the start of the first epoch later
    than ``asked``; otherwise undefined. No epoch is given with the offset (UNDEFINED).

    ``epoch-and-end-offset`` (kip-279, kip-320): if ``asked`` is the latest epoch, (``asked``, LEO); if no epoch is later
    than ``asked``, undefined; if ``asked`` is older than every epoch, (``asked``, start of the first
    epoch); otherwise the largest epoch not later than ``asked`` and where it ends (the start of the
    next one).

    A follower with an empty cache asks about UNDEFINED and gets an undefined answer.
    """
    if asked == UNDEFINED or not cache:
        return UNDEFINED, UNDEFINED
    if asked == cache[-1][0]:
        return (asked if form is EpochAnswer.EPOCH_AND_END_OFFSET else UNDEFINED), leo
    later = [(e, s) for e, s in cache if e > asked]
    if not later:
        return UNDEFINED, UNDEFINED  # newer than every epoch the leader knows
    if form is not EpochAnswer.EPOCH_AND_END_OFFSET:
        if asked < cache[0][0]:
            return UNDEFINED, UNDEFINED  # older than every epoch the leader knows
        return UNDEFINED, later[0][1]
    earlier = [e for e, _ in cache if e <= asked]
    return (earlier[-1] if earlier else asked), later[0][1]


def is_undefined(form: EpochAnswer, answer: Entry) -> bool:
    epoch, end = answer
    return end == UNDEFINED or (form is EpochAnswer.EPOCH_AND_END_OFFSET and epoch == UNDEFINED)


def truncation_point(form: EpochAnswer, cache: Sequence[Entry], leo: int, hw: int, answer: Entry) -> tuple[int, bool]:
    """Where a follower holding ``answer`` cuts its log, and whether it must ask again afterwards.

    An undefined answer falls back to the HW, in every generation: min(HW, LEO), then fetch.
    ``end-offset``: min(end, LEO), then fetch. ``epoch-and-end-offset``, given (``a``, ``end``), the follower
    looks ``a`` up in its own cache by the leader's rule (:func:`leader_answer`), which gives an epoch
    ``m`` and where ``m`` ends in its own log (``m_end``):

    - ``m == a`` (``a`` itself; also when ``a`` is older than every epoch it knows, ``m_end`` being the
      start of its first one): min(end, ``m_end``), then fetch;
    - ``m < a`` (an older epoch, ``a`` being unknown to it): min(end, ``m_end``), then ask again (about ``m``);
    - undefined (``a`` is newer than every epoch it knows, or its cache is empty): min(HW, LEO), then fetch.

    The caller fetches rather than asking again when the log became empty.
    """
    a, end = answer
    if is_undefined(form, answer):
        return min(hw, leo), False
    if form is not EpochAnswer.EPOCH_AND_END_OFFSET:
        return min(end, leo), False
    m, m_end = leader_answer(form, cache, leo, a)
    if m == UNDEFINED:
        return min(hw, leo), False
    return min(end, m_end), m != a


__all__ = ["UNDEFINED", "assign", "assign_records", "cut", "latest", "start_of", "leader_answer", "is_undefined",
           "truncation_point"]
