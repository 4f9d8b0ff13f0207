"""BMC and exhaustive search agree on the manifest's models (issue: "on every small model").

For every model of the default gate the symbolic encoding covers:

- from the initial state, BMC's shortest violation per property within ``SHALLOW`` steps equals the
  explicit checker's (usually: none in both);
- for a model the manifest expects to fail, BMC started ``TAIL`` steps before the end of the explicit
  checker's shortest counterexample finds the manifest's property in exactly ``TAIL`` more steps, and
  the explicit checker started from that same state agrees on every property within ``TAIL`` steps.
  Together with the first point this pins the known weaknesses' lengths without unrolling 17 steps.

Models the encoding does not cover are listed with the reason `unsupported_reason` gives, and the
list is pinned: covering a model (or losing one) must show up here.
Full-depth agreement from the initial state is in the slow tests (``ISRCHECK_SLOW=1``).
"""
from __future__ import annotations

import os

import pytest

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants.symbolic.bmc import bmc
from isrcheck.invariants.symbolic.replication import (
    ALWAYS,
    REASSIGNMENT_PROPERTIES,
    STEP_FAULTS,
    TRANSITION,
    unsupported_reason,
)
from isrcheck.invariants.symbolic.verdicts import Verdict
from isrcheck.engine.checker import Checker

SHALLOW = 3
TAIL = 3
ENCODED = set(ALWAYS) | set(REASSIGNMENT_PROPERTIES) | set(TRANSITION) | set(STEP_FAULTS)
# the default gate's models of the model's own protocol (a variant's code is not encoded: z3 refuses it)
DEFAULT = [e for e in manifest.load() if e.gate == "default" and e.variant is None
           and not e.config.reintroduce]  # a re-introduced bug is a protocol mixin, not encoded either
COVERED = [e for e in DEFAULT if not unsupported_reason(e.config)]
# Pinned: the default-gate models outside the symbolic encoding, and why (specs/08-symbolic.md#not-covered).
# Since the deposed controller's reassignment steps are encoded (symbolic/reassignment.py), there is none.
NOT_COVERED: dict[str, str] = {
    # a liveness model: the bounce of undetected-restart with detection on (the encoding has no bounces)
    "undetected-restart-detected": "the symbolic encoding does not cover bounce detection (detect_restarts)",
    # one connection per controller: a delivery out of queue order that spends no budget
    "deposed-controller-requests":
        "the symbolic encoding does not cover per-controller connections (controller_connections)",
    # fetches of one record: the encoding copies the leader's whole suffix
    "partial-fetch-isr-shrink": "the symbolic encoding does not cover partial fetches (max_fetch_records)",
    "partial-fetch-lossy-leader-kip-320":
        "the symbolic encoding does not cover partial fetches (max_fetch_records)",
    # the fixed sides of the history pairs on the model's later growths (specs/05: AlterIsr, metadata cache)
    "history-kafka-13091-fixed": "the symbolic encoding does not cover ISR changes through the controller "
                                 "(isr_change = \"alter-isr\")",
    "history-kafka-12686-fixed": "the symbolic encoding does not cover ISR changes through the controller "
                                 "(isr_change = \"alter-isr\")",
    "history-kafka-14144-fixed": "the symbolic encoding does not cover ISR changes through the controller "
                                 "(isr_change = \"alter-isr\")",
    "history-kafka-4443-fixed": "the symbolic encoding does not cover the brokers' metadata cache (metadata_cache)",
    "history-kafka-9212-fixed": "the symbolic encoding does not cover the brokers' metadata cache (metadata_cache)",
}


class _From:
    """The manifest model's Model, started from one given state."""

    def __init__(self, model, state) -> None:
        self._model, self._state = model, state

    def init_states(self):
        return [self._state]

    def __getattr__(self, k):
        return getattr(self._model, k)


def _model(entry):
    """The explicit model, checking the manifest entry's properties (all of them unless it names some)."""
    return build_model(entry.config, symmetry=False, properties=list(entry.properties) if entry.properties else None)


def _checked(entry) -> set[str]:
    return set(entry.properties) & ENCODED if entry.properties else ENCODED


def _explicit(entry, model, depth: int) -> dict[str, int]:
    r = Checker(model, stop_on_first=False, max_depth=depth).run()
    return {v.property: v.length for v in r.violations if v.property in _checked(entry) and v.length <= depth}


def _bmc(entry, depth: int, **kw) -> dict[str, int]:
    res = bmc(entry.config, depth, **kw)
    assert all(o.verdict != Verdict.UNKNOWN for o in res.obligations), [o.detail for o in res.obligations]
    return {o.property: o.counterexample["length"] for o in res.obligations
            if o.verdict == Verdict.REFUTED and o.property in _checked(entry)}


def test_the_models_outside_the_encoding_are_the_pinned_ones():
    outside = {e.name: unsupported_reason(e.config) for e in DEFAULT if unsupported_reason(e.config)}
    assert outside == NOT_COVERED


#: the two deposed-controller reassignment models are the slowest to unroll (30-52 s each at depth 3):
#: their shallow agreement runs with ISRCHECK_SLOW=1 (CI's 30 minutes); their encoding stays covered in
#: the suite by the known weakness at its length below and by test_symbolic_reassignment_encoding.py
SLOW_SHALLOW = {"deposed-controller-ar-write", "deposed-controller-reassignment"}
_SLOW = pytest.mark.skipif(not os.environ.get("ISRCHECK_SLOW"), reason="slow z3 unrolling: set ISRCHECK_SLOW=1")


@pytest.mark.parametrize("entry", [pytest.param(e, marks=_SLOW) if e.name in SLOW_SHALLOW else e for e in COVERED],
                         ids=[e.name for e in COVERED])
def test_bmc_agrees_from_the_initial_state(entry):
    assert _bmc(entry, SHALLOW) == _explicit(entry, _model(entry), SHALLOW)


FAILING = [e for e in COVERED if e.expect == "safety_failure"]


@pytest.mark.parametrize("entry", FAILING, ids=[e.name for e in FAILING])
def test_bmc_finds_the_known_weakness_at_its_length(entry):
    model = _model(entry)
    r = Checker(model).run()
    v = r.violations[0]
    assert (v.property, v.length) == (entry.property, entry.length)
    states = [st.state for st in v.trace]
    if states[-1] is None:  # the last action is itself the violation (a transition property)
        states = states[:-1]
    start = states[entry.length - TAIL]
    got = _bmc(entry, TAIL, init_state=start)
    assert got.get(entry.property) == TAIL
    assert got == _explicit(entry, _From(model, start), TAIL)


FULL_DEPTH = [e for e in FAILING if e.length <= 9]  # 17-step unrollings take hours; their tails are above


@pytest.mark.skipif(not os.environ.get("ISRCHECK_SLOW"), reason="full-depth BMC: set ISRCHECK_SLOW=1")
@pytest.mark.parametrize("entry", FULL_DEPTH, ids=[e.name for e in FULL_DEPTH])
def test_bmc_full_depth_on_the_known_weaknesses(entry):
    assert _bmc(entry, entry.length, stop_at_first=True) == {entry.property: entry.length}


@pytest.mark.parametrize("entry", COVERED, ids=[e.name for e in COVERED])
def test_the_default_queue_capacity_holds_every_reachable_queue(entry):
    """The encoding's default request-queue capacity is a bound, reported as UNKNOWN when reached; for
    the manifest's models it must never be reached: no reachable state queues more (first 50,000
    states, breadth first)."""
    from isrcheck.invariants.symbolic.replication import Encoding

    longest = [0]

    def observe(state, depth, count):
        longest[0] = max(longest[0], max(len(q) for q in state.inbox))

    Checker(build_model(entry.config, symmetry=False), stop_on_first=False, max_states=50_000, observer=observe).run()
    assert longest[0] <= Encoding(entry.config).Q
