"""The searches' memory ceiling (``max_memory``, engine/memory.py): past it, Checker,
ParallelChecker and simulate stop with ``limit_hit = "memory"`` and the incomplete outcome;
below it (or without it) they give their usual result.

A ceiling of 1 byte is below any process's resident memory, so the first reading trips it; a
ceiling of 1 TiB is never reached. Whether the search stops is decided by the ceiling alone. The
first reading comes before the first state is expanded (or the first walk taken) and the last
after the search ended: a model smaller than ``CHECK_EVERY`` states must not finish unenforced.
"""
from __future__ import annotations

import multiprocessing
import os

from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping
from isrcheck.engine.memory import CHECK_EVERY, resident_bytes
from isrcheck.engine.parallel import ParallelChecker
from isrcheck.engine.simulate import simulate

# clean election, one crash, one ISR shrink: 9,222 states, several readings' worth
CONFIG = {"brokers": 3, "replication_factor": 2, "max_records": 2, "faults": {"crashes": 1, "isr_shrinks": 1}}
TIB = 1 << 40


def _model():
    return build_model(from_mapping(CONFIG))


def test_resident_bytes_reads_this_process_or_another():
    mine = resident_bytes()
    assert 1 << 20 < mine < TIB
    assert resident_bytes(os.getpid()) > 1 << 20  # a process named by its id
    assert resident_bytes(2**22 + 12345) == 0  # no such process: 0, not an error


def test_the_checker_stops_at_the_ceiling_at_the_first_reading_before_any_expansion():
    full = Checker(_model(), max_memory=TIB).run()
    assert full.outcome == "success" and full.limit_hit is None and full.distinct_states > 2 * CHECK_EVERY
    cut = Checker(_model(), max_memory=1).run()
    assert cut.outcome == "incomplete" and cut.limit_hit == "memory"
    assert cut.distinct_states == len(_model().init_states()) < full.distinct_states


# replication alone: 289 states, fewer than one reading's interval
SMALL = {"brokers": 3, "replication_factor": 3, "max_records": 2}


def test_a_model_smaller_than_one_interval_is_still_held_to_the_ceiling():
    small = build_model(from_mapping(SMALL))
    assert Checker(small).run().distinct_states < CHECK_EVERY
    cut = Checker(small, max_memory=1).run()
    assert cut.outcome == "incomplete" and cut.limit_hit == "memory"
    walks = simulate(small, seed=1, walks=2, max_depth=5, max_memory=1)
    assert walks.outcome == "incomplete" and walks.limit_hit == "memory" and walks.walks == 0


def test_the_ceiling_is_read_again_when_the_search_ends(monkeypatch):
    """Memory grown past the ceiling during a search too short for a periodic reading is caught by
    the reading at its end (the reading at its start passes here)."""
    import isrcheck.engine.checker as checker_mod
    import isrcheck.engine.simulate as simulate_mod

    small = build_model(from_mapping(SMALL))
    for mod in (checker_mod, simulate_mod):
        readings = iter([0] + [TIB] * 10_000)
        monkeypatch.setattr(mod, "resident_bytes", lambda pid=None, r=readings: next(r))
    done = Checker(small, max_memory=1 << 30).run()
    assert done.limit_hit == "memory" and done.outcome == "incomplete"
    assert done.distinct_states == Checker(small).run().distinct_states  # the search itself finished
    walks = simulate(small, seed=1, walks=2, max_depth=5, max_memory=1 << 30)
    assert walks.limit_hit == "memory" and walks.outcome == "incomplete" and walks.walks == 2


def test_the_parallel_checker_stops_at_the_ceiling_and_stops_its_workers():
    full = ParallelChecker(_model(), workers=2, max_memory=TIB).run()
    assert full.outcome == "success" and full.limit_hit is None
    assert full.distinct_states == Checker(_model()).run().distinct_states
    checker = ParallelChecker(_model(), workers=2, max_memory=1)
    cut = checker.run()
    assert cut.outcome == "incomplete" and cut.limit_hit == "memory"
    assert cut.distinct_states < full.distinct_states
    assert multiprocessing.active_children() == []  # the workers were stopped, none is left behind


def test_simulate_stops_at_the_ceiling():
    free = simulate(_model(), seed=1, walks=300, max_depth=50, max_memory=TIB)
    assert free.limit_hit is None and free.walks == 300 and free.outcome != "incomplete"
    assert free.steps > 2 * CHECK_EVERY  # long enough for a reading
    cut = simulate(_model(), seed=1, walks=300, max_depth=50, max_memory=1)
    assert cut.outcome == "incomplete" and cut.limit_hit == "memory"
    assert cut.walks == 0 and cut.steps == 0  # the reading before the first walk
