"""The documented expected refutations (specs/expected_refutations.toml), as data the commands read.

``prove transitions`` marks an obligation whose property is listed there as ``expected``
(:attr:`~.verdicts.Obligation.expected`): it is still shown, but it does not decide the verdict or
the exit status. specs/08-symbolic.md explains each entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from isrcheck.specs import load

from .verdicts import Obligation, Verdict

FILE = "expected_refutations.toml"


@dataclass(frozen=True)
class Expected:
    property: str
    why: str


@lru_cache(maxsize=None)
def expected_refutations(command: str = "transitions") -> tuple[Expected, ...]:
    """The expected refutations of ``prove <command>`` (a table of specs/expected_refutations.toml)."""
    rows = load(FILE).get(command, [])
    out = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not isinstance(r.get("property"), str) or not isinstance(r.get("why"), str):
            raise ValueError(f"{FILE}: [[{command}]] #{i + 1} needs the strings property and why")
        out.append(Expected(r["property"], r["why"]))
    return tuple(out)


def claim_of(property_text: str) -> str:
    """``invariant X: what it says`` -> ``invariant X`` (what the table names)."""
    return property_text.split(":", 1)[0].strip()


def mark_expected(obligations: list[Obligation], command: str = "transitions") -> list[Obligation]:
    """Mark the refuted obligations the table lists; the marked ones, in order."""
    names = {e.property for e in expected_refutations(command)}
    marked = []
    for o in obligations:
        if o.verdict == Verdict.REFUTED and claim_of(o.property) in names:
            o.expected = True
            marked.append(o)
    return marked


__all__ = ["Expected", "expected_refutations", "mark_expected", "claim_of"]
