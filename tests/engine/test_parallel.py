"""The multi-process checker (engine/parallel.py) against the single-process one.

ParallelChecker must give the same result as Checker on every model: distinct states, depth,
outcome, transitions, coverage, unwitnessed properties and the same shortest counterexample,
also where Checker stops in the middle of a level (first violation, ``max_states``).
"""
from __future__ import annotations

import multiprocessing
import os
from typing import NamedTuple

import pytest

from isrcheck.invariants import build_model
from shared import result_summary
from isrcheck.engine.checker import Checker, CheckResult, ModelFault, Progress, Property
from isrcheck.model.config import from_mapping
from isrcheck.engine.parallel import ParallelChecker, WorkerError

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="the parallel checker forks"
)

REPLICATION = {"brokers": 3, "max_records": 2}
CLEAN_RF2 = {"brokers": 3, "replication_factor": 2, "max_records": 2, "faults": {"crashes": 1}}
HW_TRUNCATION = {"brokers": 3, "max_records": 2, "faults": {"crashes": 1}}  # breaks NoCommittedWriteLost
UNCLEAN = {"brokers": 3, "replication_factor": 2, "max_records": 2, "unclean_leader_election": True,
           "faults": {"crashes": 1, "isr_shrinks": 1}}
# two spare brokers: symmetry reduction, where the checker keeps the first representative it meets
SYMMETRIC = {"brokers": 4, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 1}}
KAFKA = {"replication": REPLICATION, "clean-rf2": CLEAN_RF2, "hw-truncation": HW_TRUNCATION, "unclean": UNCLEAN,
         "symmetric": SYMMETRIC}

_MODELS: dict[str, object] = {}
_SINGLE: dict[tuple, CheckResult] = {}


def kafka(name: str):
    if name not in _MODELS:
        _MODELS[name] = build_model(from_mapping(KAFKA[name]), symmetry=True if name == "symmetric" else None)
    return _MODELS[name]


def single(name: str, **limits) -> CheckResult:
    key = (name, tuple(sorted(limits.items())))
    if key not in _SINGLE:
        _SINGLE[key] = Checker(kafka(name), **limits).run()
    return _SINGLE[key]


def summary(r: CheckResult) -> dict:
    return result_summary(r, found=False)


@pytest.fixture(autouse=True)
def no_worker_left_behind():
    yield
    assert multiprocessing.active_children() == []


# ---------------------------------------------------------------------------- Kafka models
@pytest.mark.parametrize("name", list(KAFKA))
def test_same_result_as_the_single_process_checker(name):
    want = single(name)
    got = ParallelChecker(kafka(name), workers=2).run()
    assert got.distinct_states == want.distinct_states
    assert got.depth == want.depth
    assert got.outcome == want.outcome
    assert [(v.property, v.length) for v in got.violations] == [(v.property, v.length) for v in want.violations]
    assert summary(got) == summary(want)  # transitions, coverage, and the very same traces


@pytest.mark.parametrize("name", ["clean-rf2", "peer"])
def test_states_that_move_between_workers_travel_in_the_models_codec(name):
    """Both models carry a binary state codec; states the coordinator moves to even out the
    frontier are encoded and decoded with it, and the result is still the single process's."""
    if name == "peer":
        from isrcheck.peers.kafka_specification import PeerModel

        model, want = PeerModel("kip-320", 2, properties=[]), Checker(PeerModel("kip-320", 2, properties=[])).run()
    else:
        model, want = kafka(name), single(name)
    assert model.state_codec.decode(model.state_codec.encode(model.init_states()[0])) == model.init_states()[0]
    checker = ParallelChecker(model, workers=2)
    got = checker.run()
    assert checker.stats["moved_states"] > 0
    assert summary(got) == summary(want)


@pytest.mark.parametrize("name", ["clean-rf2", "hw-truncation"])
def test_a_table_that_fills_in_the_middle_of_a_level_grows_and_changes_nothing(name):
    """From 16 slots the shared fingerprint table fills up again and again while the workers
    claim: each time they pause, the coordinator doubles it, and they go on. The result is still
    the single process's (and the table was grown mid-level, not only between levels)."""
    checker = ParallelChecker(kafka(name), workers=2, table_slots=16)
    got = checker.run()
    assert checker.stats["table_grows"] > 0
    assert summary(got) == summary(single(name))
    assert checker.table_bytes >= 32 * got.distinct_states  # 32-byte slots, at most 3/4 full


def test_fingerprints_must_fit_in_64_bits():
    class Wide(Grid):
        def fingerprint(self, s):
            return hash(s) << 70

    with pytest.raises(OverflowError, match="64 bits"):
        ParallelChecker(Wide(), workers=2).run()


def test_a_table_smaller_than_16_slots_is_refused():
    with pytest.raises(ValueError, match="table_slots"):
        ParallelChecker(Grid(), workers=2, table_slots=8)


def test_the_expected_failures_fail():
    for name, prop in (("hw-truncation", "NoCommittedWriteLost"), ("unclean", "NoCommittedWriteLost")):
        r = ParallelChecker(kafka(name), workers=2).run()
        assert r.outcome == "safety_failure"
        assert prop in [v.property for v in r.violations]
        assert r.violations[0].length == single(name).violations[0].length


def test_parallel_runs_are_deterministic():
    a = ParallelChecker(kafka("hw-truncation"), workers=2).run()
    b = ParallelChecker(kafka("hw-truncation"), workers=2).run()
    assert summary(a) == summary(b)


@pytest.mark.parametrize(("workers", "name"), [(1, "hw-truncation"), (3, "hw-truncation"), (3, "clean-rf2"),
                                             (4, "hw-truncation")])
def test_any_number_of_workers(workers, name):
    assert summary(ParallelChecker(kafka(name), workers=workers).run()) == summary(single(name))


@pytest.mark.parametrize("limits", [
    {"max_states": 1}, {"max_states": 2}, {"max_states": 100}, {"max_states": 1000},
    {"max_depth": 0}, {"max_depth": 1}, {"max_depth": 5}, {"max_depth": 6, "max_states": 500},
])
@pytest.mark.parametrize("name", ["clean-rf2", "hw-truncation"])
def test_limits(name, limits):
    want = single(name, **limits)
    got = ParallelChecker(kafka(name), workers=2, **limits).run()
    assert summary(got) == summary(want)


def test_limits_not_reached():
    for limits in ({"max_states": 10**6}, {"max_depth": 100}):
        got = ParallelChecker(kafka("hw-truncation"), workers=2, **limits).run()
        assert summary(got) == summary(single("hw-truncation")) and got.limit_hit is None


def test_progress_reports_end_with_the_totals():
    seen: list[Progress] = []
    r = ParallelChecker(kafka("clean-rf2"), workers=2, progress=seen.append, progress_every=0).run()
    assert len(seen) >= 2
    assert all(isinstance(p, Progress) for p in seen)
    assert [p.states for p in seen] == sorted(p.states for p in seen)
    assert seen[-1].states == r.distinct_states and seen[-1].depth == r.depth


def test_worker_peak_memory_is_reported():
    pc = ParallelChecker(kafka("replication"), workers=2)
    pc.run()
    assert len(pc.worker_peak_rss_kib) == 2 and all(kib > 0 for kib in pc.worker_peak_rss_kib)
    # the shared table: each worker touched some of it (claims), never more than there is (give or
    # take a few pages of other shared memory, such as the pure table's lock), and the coordinator
    # (which wrote the initial states) too
    assert pc.table_bytes > 0
    most = pc.table_bytes // 1024 + 64
    assert len(pc.worker_shared_kib) == 2
    assert all(0 < kib <= most for kib in pc.worker_shared_kib)
    assert 0 < pc.coordinator_shared_kib <= most


# ---------------------------------------------------------------------------- toy models
class Act(NamedTuple):
    name: str
    arg: int = 0


class Grid:
    """Points (x, y) in 0..n-1 squared, stepping right or up: many paths to each state, so the
    parent and the first discovery must be chosen as Checker chooses them."""

    def __init__(self, n=12, props=(), fault_at=None, boom_at=None, init=((0, 0),)) -> None:
        self.n = n
        self.props = list(props)
        self.fault_at = fault_at
        self.boom_at = boom_at
        self.init = list(init)

    def init_states(self):
        return self.init

    def actions(self, s):
        x, y = s
        out = []
        if y + 1 < self.n:
            out.append(Act("Up", 1))
        if x + 1 < self.n:
            out.append(Act("Right", 1))
        if x + 2 < self.n:
            out.append(Act("Jump", 2))
        return out

    def next_state(self, s, a):
        if s == self.boom_at:
            raise ZeroDivisionError("the model itself is broken")
        if s == self.fault_at and a.name == "Right":
            raise ModelFault("OnlyValidTransitions", f"{a.name} from {s}")
        x, y = s
        return (x, y + 1) if a.name == "Up" else (x + a.arg, y)

    def properties(self):
        return self.props

    def fingerprint(self, s):
        return hash(s)


class Mirror(Grid):
    """(x, y) and (y, x) share a fingerprint: like symmetry reduction, the checker keeps the
    first concrete representative it meets, and the parallel one must keep the same."""

    def fingerprint(self, s):
        return hash((min(s), max(s)))


def same(model, **limits) -> CheckResult:
    want = Checker(model, **limits).run()
    got = ParallelChecker(model, workers=2, **limits).run()
    assert summary(got) == summary(want)
    return got


def test_toy_success_and_coverage():
    r = same(Grid())
    assert r.outcome == "success" and r.distinct_states == 144


def test_toy_always_violation_in_the_middle_of_a_level():
    r = same(Grid(props=[Property("Small", "always", lambda s: s[0] + s[1] < 9 or s[1] < 5)]))
    assert r.outcome == "safety_failure"


def test_toy_several_properties_broken_by_one_state():
    r = same(Grid(props=[Property("A", "always", lambda s: s != (3, 4)), Property("B", "always", lambda s: s != (3, 4))]))
    assert [v.property for v in r.violations] == ["A", "B"]


def test_toy_transition_property():
    r = same(Grid(props=[Property("NoBigJump", "transition", lambda s, t: not (t[0] - s[0] == 2 and s[1] >= 3))]))
    assert r.violations[0].kind == "transition" and r.violations[0].trace[-1].state is not None


def test_toy_model_fault():
    r = same(Grid(fault_at=(2, 3)))
    (v,) = r.violations
    assert v.property == "OnlyValidTransitions" and v.trace[-1].state is None


def test_toy_violation_in_an_initial_state():
    r = same(Grid(init=[(0, 0), (5, 5)], props=[Property("NotFive", "always", lambda s: s != (5, 5))]))
    assert r.violations[0].length == 0 and r.distinct_states == 2


def test_toy_sometimes_witnessed_and_vacuous():
    seen = same(Grid(props=[Property("Corner", "sometimes", lambda s: s == (11, 11))]))
    assert seen.outcome == "success"
    never = same(Grid(props=[Property("Never", "sometimes", lambda s: s == (99, 99))]))
    assert never.outcome == "vacuous" and never.unwitnessed == ["Never"]
    # cut short: witnessed only if Checker got to it before it stopped
    same(Grid(props=[Property("Corner", "sometimes", lambda s: s == (4, 4)),
                     Property("Bad", "always", lambda s: s != (2, 6))]))
    same(Grid(props=[Property("Corner", "sometimes", lambda s: s == (4, 4))]), max_states=40)


def test_toy_representatives_follow_first_discovery():
    m = Mirror(props=[Property("Bad", "always", lambda s: s != (7, 3))])
    r = same(m)
    assert r.outcome == "safety_failure"
    same(Mirror())


def test_toy_limits():
    for limits in ({"max_states": 1}, {"max_states": 7}, {"max_states": 50}, {"max_depth": 3}, {"max_depth": 0}):
        same(Grid(), **limits)
        same(Grid(props=[Property("Bad", "always", lambda s: s != (3, 3))]), **limits)


def test_a_model_error_in_a_worker_is_raised_and_workers_are_stopped():
    with pytest.raises(ZeroDivisionError) as info:
        ParallelChecker(Grid(boom_at=(3, 2)), workers=2).run()
    assert isinstance(info.value.__cause__, WorkerError)
    assert "ZeroDivisionError" in str(info.value.__cause__)


def test_a_killed_worker_is_reported():
    def kill_myself(s):
        if s == (4, 4):
            os._exit(3)
        return True

    with pytest.raises(WorkerError, match="exited unexpectedly"):
        ParallelChecker(Grid(props=[Property("Die", "always", kill_myself)]), workers=2).run()


def test_workers_are_stopped_when_the_caller_is_interrupted():
    def interrupt(p: Progress) -> None:
        if p.depth >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ParallelChecker(Grid(), workers=2, progress=interrupt, progress_every=0).run()


def test_bad_worker_count():
    with pytest.raises(ValueError):
        ParallelChecker(Grid(), workers=0)
