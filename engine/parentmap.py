"""The single-process checker's map from each visited state's fingerprint to its parent's.

It is the checker's whole memory of the states it has seen (the states themselves are not kept;
see specs/07-checker.md), so its size per state is what bounds how wide a model can be checked.
A dict of Python ints costs about 90 bytes a state: its entry and index slot, and a 48-byte int
object for every 64-bit fingerprint it holds. engine/_parentmap.c's ``ParentMap`` holds the two
fingerprints in one 16-byte slot of a flat array (open addressing, grown by doubling at a load of
3/4): 21-43 bytes a state, with one cache miss per lookup instead of three.

Both are mappings with the same answers for what the checker asks (``fp in m``, ``m[fp]``,
``m[fp] = parent``, ``len(m)``, ``m.get(fp)``), a parent being a fingerprint or None for an initial
state, so the checker's code is one; :func:`new_parent_map` picks the C one when it is built and
compiled code is wanted, else a plain dict (the pure-Python build's reference).
"""
from __future__ import annotations

from typing import Any


def new_parent_map() -> Any:
    """A fresh, empty map: engine/_parentmap.c's ``ParentMap`` where it is built and compiled code
    is wanted, else a dict."""
    from isrcheck import native

    if native.compiled_wanted():
        try:
            from ._parentmap import ParentMap
        except ImportError:  # a pure install (ISRCHECK_BUILD_PURE=1)
            pass
        else:
            return ParentMap()
    return {}


__all__ = ["new_parent_map"]
