"""Fingerprints that are the same in every process.

The engine fingerprints a state with Python's ``hash`` of its tuple of ints (``model.fingerprint``).
That is deterministic across processes for ints, bools and tuples — but **not for ``None`` before
Python 3.12**: ``hash(None)`` is derived from None's address, which address-space randomisation
changes in every process (``python3.11 -c 'print(hash(None))'`` twice). Model states hold ``None``
(no deposed controller, a broker hosting no replica), so on Python 3.11 the driver and Spark's
Python workers disagree about fingerprints. (Forked workers inherit the parent's address space,
which is why a fork-based parallel checker does not notice.)

:class:`StableModel` wraps a model and keeps everything but the fingerprint. On Python 3.12 and
later it uses ``model.fingerprint`` itself; before, it uses :func:`isrcheck.model.codec.digest`,
the first 8 bytes of BLAKE2b over the state's binary encoding (the canonical representative's,
when the model uses symmetry reduction, as ``model.fingerprint`` does). Both are 64-bit and
define the same equivalence on this project's states (equal states have equal encodings; IntEnums
encode as their ints). :data:`SCHEME` names the one in use, with the codec's signature for the
digest; run directories and corpora record it. (Before the binary codec the digest was over the
states' compact JSON, scheme ``blake2b-64-json``: faster in pure Python, where ``json`` runs in C,
but slower than the mypyc-compiled binary codec; runs recorded under it are refused.)
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from isrcheck.model.codec import kafka_state_codec

NONE_HASH_IS_STABLE = sys.version_info >= (3, 12)
DIGEST_SCHEME = f"blake2b-64-binary:{kafka_state_codec().signature}"
SCHEME = "python-hash-64" if NONE_HASH_IS_STABLE else DIGEST_SCHEME


class StableModel:
    """``model`` with a process-independent :meth:`fingerprint` (see the module docstring)."""

    def __init__(self, model: Any, *, force_digest: bool = False) -> None:
        self.model = model
        self.use_digest = force_digest or not NONE_HASH_IS_STABLE
        self.scheme = DIGEST_SCHEME if self.use_digest else "python-hash-64"
        self._digest = kafka_state_codec().fingerprint
        if getattr(model, "symmetry", False):
            from isrcheck.model.symmetry import canonical

            self._key = canonical
        else:
            self._key = None

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
