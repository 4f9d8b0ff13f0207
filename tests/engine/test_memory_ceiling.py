"""The searches' memory ceiling (``max_memory``, engine/memory.py): past it, Checker,
ParallelChecker and simulate stop with ``limit_hit = "memory"`` and the incomplete outcome;
below it (or without it) they give their usual result.

A ceiling of 1 byte is below any process's resident memory, so the first reading trips it; a
ceiling of 1 TiB is never reached. Whether the search stops is decided by the ceiling alone.
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


def test_the_checker_stops_at_the_ceiling_after_the_first_reading():
    full = Checker(_model(), max_memory=TIB).run()
    assert full.outcome == "success" and full.limit_hit is None and full.distinct_states > 2 * CHECK_EVERY
    cut = Checker(_model(), max_memory=1).run()
    assert cut.outcome == "incomplete" and cut.limit_hit == "memory"
    assert CHECK_EVERY <= cut.distinct_states < 2 * CHECK_EVERY < full.distinct_states


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
    assert cut.walks < 300 and cut.steps >= CHECK_EVERY
