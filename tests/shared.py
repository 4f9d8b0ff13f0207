"""What tests of several packages share, written once: a broker mask, the reachable states of a
model, and the cases that two sides (model and implementation, CLI and library) are tested on.

Importable from any test (pytest puts ``tests/`` on the path, as for ``native_helpers``). Nothing
here imports the code under test beyond the engine's visit and what a case needs to be built."""
from __future__ import annotations

import json

import textwrap
from typing import Any

from isrcheck.engine.core import Model
from isrcheck.engine.explore import BreadthFirst


def M(*brokers: int) -> int:
    """The broker set of ``brokers`` as the state holds it, a bitmask with bit ``b`` for broker
    ``b``: written out here rather than taken from ``model/brokersets.py``, which it checks."""
    out = 0
    for b in brokers:
        out |= 1 << b
    return out


def reachable_states(model: Model[Any, Any], limit: int | None = None) -> list[Any]:
    """The reachable states of ``model`` in breadth-first order of discovery, the first ``limit`` of
    them (every one without a limit). States are told apart by equality, not by the model's
    fingerprint, so that the tests of the fingerprint do not assume what they check; the visit
    itself is the engine's (no test writes a search loop of its own)."""
    ids: dict[Any, int] = {}

    def key(s: Any) -> int:
        return ids.setdefault(s, len(ids))

    BreadthFirst(model, key=key, max_states=limit).run()
    return list(ids)[:limit]


#: A designer's variant (a file a user writes) whose controlled-shutdown election takes the first
#: in-sync replica of the assignment, even the broker shutting down: z3's ``prove selectors``
#: refutes it, through the command line and the library alike.
SLOPPY_SELECTOR_VARIANT = textwrap.dedent('''
    from isrcheck.model.protocol import Protocol
    from isrcheck.model.selectors import Election, NoEligibleLeader, Selector

    class Sloppy(Protocol):
        name = "sloppy"

        def select(self, selector, inp):
            if selector == Selector.CONTROLLED_SHUTDOWN:
                for r in inp.assignment:
                    if inp.isr >> r & 1:
                        return Election(r, inp.isr, ())
                raise NoEligibleLeader(selector, "none")
            return super().select(selector, inp)
''')

#: The manifest model deposed-controller-reassignment (its configuration, as a mapping) and the
#: first 14 actions of its counterexample: controller 1 performs steps 1-2 of [1] -> [2], a
#: failover, and controller 2 resumes and performs steps 1-7 (broker 2 leads now), before the
#: deposed controller's step 3. The model and the implementation are both tested from there.
DEPOSED_REASSIGNMENT_CONFIG = {
    "brokers": 2, "replication_factor": 1, "max_records": 0, "fenced_controller_writes": True,
    "operations": {"reassignments": [{"partition": 0, "target": [2]}, {"partition": 0, "target": [1]}]},
    "faults": {"controller_failovers": 1},
}
DEPOSED_REASSIGNMENT_PREFIX = [
    ("RequestReassignment", (0, (2,))),
    ("ReassignPartition", (1, 0, 1)),
    ("ReassignPartition", (1, 0, 2)),
    ("DeliverRequest", (1,)),
    ("DeliverRequest", (2,)),
    ("Fetch", (2, 0)),
    ("ControllerFailover", ()),
    *[("ReassignPartition", (2, 0, n)) for n in range(1, 8)],
]


def to_toml(raw: dict[str, Any], prefix: str = "") -> str:
    """A tiny TOML writer for flat configurations with one level of sub-tables (tests write their
    configuration files with it; ``from conftest import`` would pick whichever conftest.py pytest
    imported first)."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in raw.items() if not isinstance(v, dict)]
    for k, v in raw.items():
        if isinstance(v, dict):
            lines.append(f"[{prefix}{k}]")
            lines.extend(f"{kk} = {json.dumps(vv)}" for kk, vv in v.items())
    return "\n".join(lines) + "\n"


def result_summary(r: Any, found: bool = True) -> dict[str, Any]:
    """Everything in a search's result but its time, traces as (action, state) pairs: what two
    searches of one model must agree on (the in-memory, parallel and disk checkers). ``found``:
    include each violation's ``found`` (the parallel checker's tests leave it out)."""
    return {
        "outcome": r.outcome,
        "distinct_states": r.distinct_states,
        "depth": r.depth,
        "transitions": r.transitions,
        "limit_hit": r.limit_hit,
        "unwitnessed": r.unwitnessed,
        "coverage": r.coverage,
        "violations": [(v.property, v.kind, v.length, v.message, *((v.found,) if found else ()),
                        [(s.action, s.state) for s in v.trace]) for v in r.violations],
    }
