"""Plain helpers shared by the conformance tests, importable by a name unique across tests/ (a
``from conftest import`` would pick whichever conftest.py pytest imported first)."""
from __future__ import annotations

from pathlib import Path

from isrcheck.model.action_text import parse

HERE = Path(__file__).resolve().parent
REGRESSIONS = HERE / "regressions"


def acts(*texts: str) -> list[tuple[str, tuple]]:
    """``acts("Fetch(2, 0)", ...)`` -> [("Fetch", (2, 0)), ...]"""
    return [(a.name, tuple(a.args)) for a in map(parse, texts)]
