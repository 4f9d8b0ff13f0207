"""Three-valued verdicts for the symbolic checks (specs/08-symbolic.md).

Every question put to z3 ends as one :class:`Obligation`: ``PROVED`` (the solver showed that no
counterexample exists within the stated scope), ``REFUTED`` (it produced one, which is decoded
into concrete model values and shown), or ``UNKNOWN`` (it gave up, usually at the time limit).
An unknown is never reported as proved: the logic layer (:mod:`.logic`, which alone turns z3's
answers into verdicts) maps z3's ``unknown`` to ``UNKNOWN`` and only ``unsat`` to ``PROVED``. This
module is plain data, without z3, so that the command line can report verdicts without it.

``prove inductive`` adds ``NOT INDUCTIVE``: z3 found a counterexample to induction whose pre-state
is not known to be reachable (the property may still hold); it is ``REFUTED`` only when the
explicit checker reaches that pre-state. An obligation may be ``expected`` (a documented refutation,
specs/expected_refutations.toml): it is shown and kept in the JSON but does not decide the verdict.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Verdict(str, Enum):
    PROVED = "PROVED"
    REFUTED = "REFUTED"
    UNKNOWN = "UNKNOWN"
    #: a counterexample to induction whose pre-state is not known to be reachable (prove inductive)
    NOT_INDUCTIVE = "NOT INDUCTIVE"


@dataclass
class Obligation:
    """One checked claim and its verdict.

    ``kind`` is the command family (selectors, transitions, inductive, bmc), ``property`` the claim,
    ``generation`` the protocol generation or variant it was checked for, ``scope`` what was
    quantified over (the bounds), ``counterexample`` plain JSON data and ``lines`` the same as text.
    """

    kind: str
    property: str
    generation: str
    verdict: Verdict
    seconds: float
    scope: str = ""
    detail: str = ""
    counterexample: Any = None
    lines: list[str] = field(default_factory=list)
    method: str = "z3"  # "z3" (symbolic) or "exhaustive" (concrete enumeration of every input)
    expected: bool = False  # a documented refutation (specs/expected_refutations.toml): not decisive

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "property": self.property,
            "generation": self.generation,
            "verdict": self.verdict.value,
            "seconds": round(self.seconds, 6),
            "scope": self.scope,
            "method": self.method,
            "expected": self.expected,
            "detail": self.detail,
            "counterexample": self.counterexample,
            "counterexample_text": list(self.lines),
        }


class Note(str):
    """An informational line (a documented behaviour z3 exhibited); it never decides a verdict."""


def overall(obligations: Iterable[Obligation]) -> Verdict:
    """REFUTED if any is refuted (the expected refutations aside); else UNKNOWN if any is unknown;
    else NOT INDUCTIVE if any is not inductive; else PROVED."""
    seen = {o.verdict for o in obligations if not (o.expected and o.verdict == Verdict.REFUTED)}
    for v in (Verdict.REFUTED, Verdict.UNKNOWN, Verdict.NOT_INDUCTIVE):
        if v in seen:
            return v
    return Verdict.PROVED


EXIT_PROVED = 0
EXIT_REFUTED = 1
EXIT_BAD_INPUT = 2
EXIT_UNKNOWN = 3


def exit_code(obligations: Sequence[Obligation]) -> int:
    """0 when everything is proved (but the expected refutations), 1 when something is refuted, 3
    when something is unknown or not inductive and nothing is refuted (2 is reserved for bad input)."""
    v = overall(obligations)
    return {Verdict.PROVED: EXIT_PROVED, Verdict.REFUTED: EXIT_REFUTED, Verdict.UNKNOWN: EXIT_UNKNOWN,
            Verdict.NOT_INDUCTIVE: EXIT_UNKNOWN}[v]


Progress = Callable[[str], None]
"""A progress callback: receives a short description of the query about to run."""


def no_progress(_: str) -> None:
    return None
