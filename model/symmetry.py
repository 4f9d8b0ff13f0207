"""Symmetry reduction over broker ids (filled in below)."""
from __future__ import annotations

from .state import State


def canonical(state: State) -> State:
    return state


def symmetry_allowed(cfg) -> bool:  # refined below once canonicalisation is written
    return False
