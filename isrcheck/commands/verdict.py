"""One verdict for a run: safety, liveness, vacuity and the manifest's pins read together.

Before this module each part had its own answer: the safety search's ``outcome`` said
``success`` while a liveness property was broken, the exit status disagreed with it, and only
``gate`` compared a model with its pins. Every command that reports a check (``check``, its
``--json``, ``report``, JUnit, ``gate``) now asks :func:`decide` and prints what it returns, so a
CI script reading only ``outcome`` or only the exit status gets the answer a human reads.

Outcomes, from the worst down (the first that applies is the finding):

``safety_failure``   a safety property is broken
``liveness_failure`` a liveness property is broken (a lasso)
``incomplete``       a limit stopped the search, or a liveness verdict is unknown
``vacuous``          a sometimes-property was never witnessed, or (``--strict``) a part of the
                     configuration never took effect (:mod:`isrcheck.analyses.vacuity`)
``success``          everything holds

A manifest model checked as the manifest defines it is then compared with its pins, as ``gate``
does: ``as_pinned`` when the finding is the pinned failure (exit 0, as the gate passes it),
``not_as_pinned`` when a success differs from its pins (a state count); a finding worse than
its pins keeps its own name. Exit status 0 exactly for ``success`` and ``as_pinned``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from isrcheck.analyses.vacuity import VacuityWarning
from isrcheck.inputs import manifest

__all__ = ["Verdict", "compared", "decide", "found_outcome", "PASSING", "OUTCOMES"]

#: every value ``outcome`` takes (specs/check-result.schema.json lists the same)
OUTCOMES = ("success", "as_pinned", "safety_failure", "liveness_failure", "incomplete", "vacuous", "not_as_pinned")
#: the outcomes that exit 0
PASSING = frozenset({"success", "as_pinned"})


@dataclass
class Verdict:
    """What a run found (``found``), what the run's verdict is (``outcome``, after the pins), the
    warnings, the pin comparison (None when the pins do not apply) and the exit status."""

    outcome: str
    found: str
    warnings: list[VacuityWarning] = field(default_factory=list)
    pinned: bool = False  # the pins applied and were compared
    mismatches: list[str] = field(default_factory=list)
    strict: bool = False

    @property
    def exit_status(self) -> int:
        return 0 if self.outcome in PASSING else 1

    def pins_json(self) -> dict[str, Any] | None:
        if not self.pinned:
            return None
        return {"as_pinned": not self.mismatches, "mismatches": list(self.mismatches)}


def found_outcome(result: Any, lres: Any, warnings: Sequence[VacuityWarning] = (), strict: bool = False) -> str:
    """The finding of a safety result and (optionally) a liveness result, worst first."""
    if result is not None and result.outcome == "safety_failure":
        return "safety_failure"
    verdicts = lres.verdicts if lres is not None else []
    if any(v.holds is False for v in verdicts):
        return "liveness_failure"
    if (result is not None and result.outcome == "incomplete") or any(v.holds is None for v in verdicts):
        return "incomplete"
    if (result is not None and result.outcome == "vacuous") or (strict and warnings):
        return "vacuous"
    return "success"


def decide(result: Any, lres: Any = None, warnings: Sequence[VacuityWarning] = (), strict: bool = False,
           entry: Any = None) -> Verdict:
    """The one verdict. ``entry``: the manifest entry whose pins apply (the caller passes it only
    when the model is checked as the manifest defines it: no --set, --variant, --property or
    limit), or None."""
    found = found_outcome(result, lres, warnings, strict)
    if entry is None:
        return Verdict(found, found, list(warnings), strict=strict)
    mismatches = manifest.compare(entry, result)
    if lres is not None:
        mismatches += manifest.compare_liveness(entry, lres)
    return compared(found, mismatches, warnings, strict)


def compared(found: str, mismatches: Sequence[str], warnings: Sequence[VacuityWarning] = (),
             strict: bool = False) -> Verdict:
    """The verdict of a finding compared with its pins, whoever keeps them: the manifest
    (:func:`decide`) or, for ``check --peer``, TLC's recorded figures
    (peers/kafka_specification/expected.toml). ``mismatches``: how the run differs from them."""
    mismatches = list(mismatches)
    if strict and warnings:
        mismatches.append("vacuity: " + "; ".join(w.message for w in warnings) + " (--strict)")
    if not mismatches:
        outcome = "success" if found == "success" else "as_pinned"
    else:
        outcome = found if found != "success" else "not_as_pinned"  # a mismatch never passes
    return Verdict(outcome, found, list(warnings), pinned=True, mismatches=mismatches, strict=strict)

