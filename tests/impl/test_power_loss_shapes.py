"""The two simulator seeds issue 30 found without a known shape are classified: acknowledged records
that no log ever cut, lost because the logs diverged after a power loss (the mechanism the manifest
model ``lossy-divergence`` shows), now matched to the power-loss shape."""
from __future__ import annotations

import pytest

from isrcheck.impl.rigs.fault_run import run_seed
from isrcheck.impl.rigs.fault_schedule import Setting
from isrcheck.impl.rigs.history import Anomaly
from isrcheck.impl.rigs.loss_shape import POWER_LOSS_SHAPE, explain, explain_cut_loss

SETTING = Setting(generation="high-watermark", min_isr=2, power_loss=2)


@pytest.mark.parametrize("seed", [1110, 1503])
def test_a_never_cut_loss_after_a_power_loss_is_explained(seed):
    result = run_seed(seed, SETTING)
    lost = [r for f in result.verdict.violations if f.kind is Anomaly.LOST for r in f.records]
    # some lost record was never cut from any log: the cut-based shapes alone leave it unexplained
    never_cut = [r for r in lost if not explain_cut_loss(result.cuts, result.elections, r).explained
                 and not any(r in c.removed for c in result.cuts)]
    assert never_cut
    shapes = explain(result)
    assert shapes and all(x.shape == POWER_LOSS_SHAPE for x in shapes), [x.detail for x in shapes]
    for r in never_cut:
        x = next(x for x in shapes if x.record == r)
        assert "diverged" in x.detail and "power loss" in x.detail
