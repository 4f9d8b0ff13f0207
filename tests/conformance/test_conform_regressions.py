"""Every trace saved under tests/conformance/regressions/ replays on the implementation.

They are shrunk lockstep failures (run_lockstep saves them there) and hand-picked paths that once
told the two sides apart; each must keep conforming, against its stored observations and against a
fresh replay of the model.
"""
from __future__ import annotations

import pytest

from isrcheck.conformance.replay import conform_trace
from isrcheck.conformance.traces import load_trace

from conform_helpers import REGRESSIONS

FILES = sorted(p for p in REGRESSIONS.glob("*") if p.name.endswith((".jsonl", ".itf.json")))


def test_there_are_saved_regressions():
    assert FILES, f"no regression traces in {REGRESSIONS}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_saved_regression_trace_conforms(path):
    trace = load_trace(path)
    r = conform_trace(trace, against="both")
    if r.skipped:
        pytest.skip(r.skipped)
    assert r.ok, r.divergence.summary()
