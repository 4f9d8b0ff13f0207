"""The checker's fingerprint of a :class:`State`: computed part by part, the same in every process.

Why part by part: ``hash(state)`` rehashes every nested tuple of every successor, a quarter of the
single-process checker's time on the larger models. An action changes one or two parts of a state
(a broker, an inbox, the controller) and :class:`World` hands every other part on as the very same
object, so the successors of one state, checked one after another, share most of their parts by
identity. :class:`StateHasher` remembers the parts of the state it hashed last with their hashes,
and hashes again only the parts that are not the same objects.

Why the same in every process: before Python 3.12 ``hash(None)`` comes from None's address, which
differs between interpreters, and a state holds None in two places (no deposed controller; a broker
hosting no replica of a partition). The hasher puts a fixed number in None's place there, so the
fingerprint depends on ints, bools and tuples alone, whose hashes Python fixes (no salt). The Spark
workers, separate interpreters, can then use the checker's own fingerprint instead of a digest of
each state's encoding (see ``pipeline/fingerprint.py``).

The fingerprint is a function of the state's value alone, whatever state was hashed before: the
hash of the tuple of the parts' hashes, the parts in a fixed order (the top-level fields, with the
brokers and the inboxes one part per broker). It is 64 bits, like ``hash(state)``, but a different
number, so it is only ever compared with fingerprints from this function.
"""
from __future__ import annotations

from typing import Any, Final

from .state import State

#: what stands for None in a fingerprint (an int: a part holding it cannot equal one holding a tuple)
NONE_HASH: Final = 0x6E6F6E65  # "none"

_BROKERS: Final = 3  # State.brokers: one part per broker
_INBOX: Final = 4  # State.inbox: one part per broker
_FIELDS: Final = 8  # len(State._fields)
_REPLICAS: Final = 2  # Broker.replicas: per partition, None where the broker hosts no replica


def part_hash(x: Any) -> int:
    """The hash of one part, with None (the absent deposed controller) as :data:`NONE_HASH`."""
    if x is None:
        return NONE_HASH
    return hash(x)


def broker_hash(broker: Any) -> int:
    """The hash of one broker, with :data:`NONE_HASH` for every partition it hosts no replica of."""
    b: tuple[Any, ...] = broker
    replicas: tuple[Any, ...] = b[_REPLICAS]
    for r in replicas:
        if r is None:
            return hash((b[0], b[1], tuple([NONE_HASH if x is None else x for x in replicas])) + b[_REPLICAS + 1:])
    return hash(broker)


_UNSET = object()  # in no state: the parts of a hasher that has hashed nothing yet


class StateHasher:
    """Fingerprints of states, reusing the hash of every part unchanged since the last state."""

    def __init__(self) -> None:
        self._parts: list[object] = []
        self._hashes: list[int] = []

    def fingerprint(self, state: State) -> int:
        top: tuple[Any, ...] = state
        brokers: tuple[Any, ...] = top[_BROKERS]
        inbox: tuple[Any, ...] = top[_INBOX]
        parts = self._parts
        hashes = self._hashes
        count = _FIELDS - 2 + len(brokers) + len(inbox)
        if len(parts) != count:  # the first state (a model's states all have as many brokers)
            parts = self._parts = [_UNSET] * count
            hashes = self._hashes = [0] * count
        n = 0
        for k in range(_FIELDS):
            if k == _BROKERS:
                for x in brokers:
                    if x is not parts[n]:
                        parts[n] = x
                        hashes[n] = broker_hash(x)
                    n += 1
            elif k == _INBOX:
                for x in inbox:
                    if x is not parts[n]:
                        parts[n] = x
                        hashes[n] = hash(x)
                    n += 1
            else:
                x = top[k]
                if x is not parts[n]:
                    parts[n] = x
                    hashes[n] = part_hash(x)
                n += 1
        return hash(tuple(hashes))


def new_hasher() -> Any:
    """A fresh hasher: model/_partshash.c's ``PartsHasher`` when it is built and compiled code is
    wanted, else :class:`StateHasher`. Both give every state the same number (a test compares
    them); the C one also remembers the parent's parts and each broker's replicas by identity
    (see that file), so it hashes about a third as much."""
    from isrcheck import native

    if native.compiled_wanted():
        try:
            from ._partshash import PartsHasher
        except ImportError:  # a pure install (ISRCHECK_BUILD_PURE=1)
            pass
        else:
            return PartsHasher(_FIELDS, _BROKERS, _INBOX, _REPLICAS, NONE_HASH)
    return StateHasher()


__all__ = ["NONE_HASH", "StateHasher", "broker_hash", "new_hasher", "part_hash"]
