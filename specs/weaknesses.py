"""The known weaknesses (specs/weaknesses.toml): what the gallery shows and conformance replays.

Each weakness names manifest models: the one whose shortest counterexample the gallery prints, and
one model per protocol generation of the same bounds. ``isrcheck gallery``
(isrcheck/analyses/gallery.py) runs them and writes specs/10-weaknesses.md;
``isrcheck.conformance.weaknesses`` replays their counterexamples on the implementation. The list
is data both use, so it lives here as a file; whether the named models exist and share their
bounds is checked against the manifest by tests/test_gallery.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import load

__all__ = ["Weakness", "WeaknessError", "load_weaknesses"]

FILE = "weaknesses.toml"
_KEYS = ("title", "summary", "example", "generations")


class WeaknessError(ValueError):
    """specs/weaknesses.toml is malformed; the message is one line."""


@dataclass(frozen=True)
class Weakness:
    title: str
    summary: str
    example: str  # the manifest model whose counterexample is shown
    generations: tuple[str, ...]  # manifest models of the same bounds, one per generation


def _parse(raw: Any, index: int) -> Weakness:
    where = f"{FILE}: weakness #{index + 1}"
    if not isinstance(raw, dict) or set(raw) != set(_KEYS):
        raise WeaknessError(f"{where}: must be a table with exactly {', '.join(_KEYS)}")
    if not all(isinstance(raw[k], str) and raw[k] for k in ("title", "summary", "example")):
        raise WeaknessError(f"{where}: title, summary and example must be non-empty strings")
    gens = raw["generations"]
    if not isinstance(gens, list) or not gens or not all(isinstance(g, str) for g in gens):
        raise WeaknessError(f"{where}: generations must be a non-empty list of model names")
    if raw["example"] not in gens:
        raise WeaknessError(f"{where}: example {raw['example']!r} is not one of its generations")
    return Weakness(raw["title"], raw["summary"], raw["example"], tuple(gens))


@lru_cache(maxsize=1)
def load_weaknesses() -> tuple[Weakness, ...]:
    """The weaknesses of specs/weaknesses.toml, validated, in the file's order."""
    return tuple(_parse(raw, i) for i, raw in enumerate(load(FILE).get("weakness", [])))
