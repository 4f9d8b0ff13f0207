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
:func:`new_fingerprint_set` does the same for the ``--disk`` search's window, which asks only
whether a fingerprint is there (engine/_fpset.c: 8 bytes a slot).
"""
from __future__ import annotations

import importlib
from typing import Any


def new_parent_map() -> Any:
    """A fresh, empty map: engine/_parentmap.c's ``ParentMap`` where it is built and compiled code
    is wanted, else a dict."""
    return _native_or_dict("_parentmap", "ParentMap")


def new_fingerprint_set() -> Any:
    """A fresh, empty set for the ``--disk`` search's window (engine/disk.py): engine/_fpset.c's
    ``FingerprintSet`` (8 bytes a slot: the window asks membership only, no parent) where it is
    built and compiled code is wanted, else a dict (both answer ``fp in t`` and ``t[fp] = None``)."""
    return _native_or_dict("_fpset", "FingerprintSet")


def _native_or_dict(module: str, name: str) -> Any:
    """An instance of the C class ``name`` of ``isrcheck.engine.<module>``, or a dict in a pure
    install (ISRCHECK_BUILD_PURE=1) or where the source is asked for (ISRCHECK_PURE=1)."""
    from isrcheck import native

    if native.compiled_wanted():
        try:
            cls = getattr(importlib.import_module(f"isrcheck.engine.{module}"), name)
        except ImportError:
            pass
        else:
            return cls()
    return {}


__all__ = ["new_fingerprint_set", "new_parent_map"]
