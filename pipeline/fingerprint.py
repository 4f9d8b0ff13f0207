"""Fingerprints that are the same in every process.

Spark's Python workers are separate interpreters, not forks, so the driver and every worker must
compute a state's fingerprint alike. Python's ``hash`` of ints, bools and tuples is the same in every
process, but **not ``hash(None)`` before Python 3.12**: it is derived from None's address, which
address-space randomisation changes in every process (``python3.11 -c 'print(hash(None))'`` twice).
Model states hold ``None`` (no deposed controller, a broker hosting no replica).

The model's own fingerprint (:class:`isrcheck.model.statehash.StateHasher`) puts a fixed number in
None's place, so it is the same in every process on every supported Python, and the pipeline uses
it: scheme :data:`SCHEME`, recorded by run directories and corpora (a resume or a corpus of another
scheme is refused). Before it, the pipeline digested each state's binary encoding with BLAKE2b
(:func:`isrcheck.engine.codec.digest`, scheme ``blake2b-64-binary:<codec signature>``): four times
the cost of the fingerprint per successor, on top of the encoding. :class:`StableModel` can still
use that digest (``force_digest=True``), to check the two define the same equivalence.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from isrcheck.model.statecodec import kafka_state_codec

DIGEST_SCHEME = f"blake2b-64-binary:{kafka_state_codec().signature}"
SCHEME = "parts-hash-64"


class StableModel:
    """``model`` with a process-independent :meth:`fingerprint` (see the module docstring)."""

    def __init__(self, model: Any, *, force_digest: bool = False) -> None:
        self.model = model
        self.use_digest = force_digest
        self.scheme = DIGEST_SCHEME if self.use_digest else SCHEME
        self._digest = kafka_state_codec().fingerprint
        if getattr(model, "symmetry", False):
            from isrcheck.model.symmetry import canonical

            self._key = canonical
        else:
            self._key = None
        # The model's own bound methods, so that a step through this wrapper costs no extra call
        # (a Spark map task makes millions); the methods below are what they stand for.
        self.actions = model.actions  # type: ignore[method-assign]
        self.next_state = model.next_state  # type: ignore[method-assign]
        if not self.use_digest:
            self.fingerprint = model.fingerprint  # type: ignore[method-assign]

    def __getattr__(self, name: str) -> Any:  # config, protocol, symmetry, ...
        return getattr(self.model, name)

    def init_states(self) -> Sequence[Any]:
        return self.model.init_states()

    def actions(self, state: Any) -> Iterable[Any]:
        return self.model.actions(state)

    def next_state(self, state: Any, action: Any) -> Any:
        return self.model.next_state(state, action)

    def properties(self) -> Sequence[Any]:
        return self.model.properties()

    def fingerprint(self, state: Any) -> int:
        if not self.use_digest:
            return self.model.fingerprint(state)
        return self._digest(state if self._key is None else self._key(state))
