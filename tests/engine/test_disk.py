"""engine/disk.py's DiskChecker (``check --disk DIR``, issue 32 item 3) against the in-memory Checker.

The two must give the same result field for field: outcome, distinct states, depth, transitions,
coverage, the limit hit, the unwitnessed properties and every violation with its counterexample
(actions and states, step by step), on every model of the default gate (each as the manifest
defines it, stop_on_first as ``check`` runs it), under ``--max-states`` and ``--max-depth`` cuts,
with ``--keep-going``, on the peer transcription and on toy models built to hit every place a
level can stop (a back edge to an old level, a fault, a transition property, an unsafe state, a
witness after the cut). Only the time differs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import pytest

pytest.importorskip("numpy")

from isrcheck.commands.options import protocol_for  # noqa: E402
from shared import result_summary
from isrcheck.engine.checker import Checker, CheckResult, ModelFault, Property  # noqa: E402
from isrcheck.engine.disk import MARKER, DiskChecker, DiskError  # noqa: E402
from isrcheck.inputs import manifest  # noqa: E402
from isrcheck.invariants import build_model  # noqa: E402
from isrcheck.specs import manifest as manifests  # noqa: E402

#: the default gate's models (85): each is cut at this many states (every state through the codec
#: and the level files: buffer 0), which with the models run in full below keeps the file at a few
#: minutes of CPU in the pure build; the cuts land mid-level
CUT = 1500
#: run in full: between them they stop at a counterexample mid-level, run to the end, use symmetry,
#: a variant, a property selection and many levels
FULL = ["hw-truncation-one-crash", "clean-election", "unclean-election", "reassignment-target-crash",
        "spare-brokers", "elr-high-watermark", "quorum-high-watermark-leader", "lossy-divergence",
        "failover-misses-crash", "history-kafka-1097", "topic-deletion", "undetected-restart"]


def summary(r: CheckResult) -> dict:
    return result_summary(r)


def same(model, tmp_path: Path, buffers=(0,), **limits) -> CheckResult:
    """Checker's result and DiskChecker's, the same, with each of ``buffers`` states of a level held
    in memory (0: every state goes through the codec and the level's file)."""
    want = Checker(model, **limits).run()
    for buffer in buffers:
        got = DiskChecker(model, tmp_path / "disk", buffer=buffer, **limits).run()
        assert summary(got) == summary(want), buffer
        assert not (tmp_path / "disk").exists()  # made by the run, removed with its files
    return want


_MODELS: dict[str, object] = {}


def gate_model(name: str):
    """The manifest entry's model as ``check NAME`` builds it (variant, symmetry, properties)."""
    if name not in _MODELS:
        e = manifest.get(name)
        protocol, _ = protocol_for(e.target(), None)
        _MODELS[name] = build_model(e.config, protocol=protocol, symmetry=e.symmetry,
                                    properties=list(e.properties) if e.properties else None)
    return _MODELS[name]


GATE = [e.name for e in manifests.select(manifest.load())]


# ---------------------------------------------------------------------------- the gate's models
@pytest.mark.parametrize("name", GATE)
def test_every_gate_model_cut_at_a_few_states(name, tmp_path):
    same(gate_model(name), tmp_path, max_states=CUT)


@pytest.mark.parametrize("name", FULL)
def test_gate_models_in_full(name, tmp_path):
    r = same(gate_model(name), tmp_path, buffers=(300,))  # a level's first 300 states held, the rest on file
    assert r.outcome == manifest.get(name).expect


@pytest.mark.parametrize("limits", [{"max_states": 1}, {"max_states": 2}, {"max_states": 77}, {"max_states": 4000},
                                    {"max_states": 9221}, {"max_depth": 0}, {"max_depth": 1}, {"max_depth": 9},
                                    {"max_depth": 15, "max_states": 9000}])
def test_limits(limits, tmp_path):
    same(gate_model("clean-election-isr-shrink"), tmp_path, buffers=(0, 200), **limits)


@pytest.mark.parametrize("name,limits", [("unclean-election", {}), ("hw-truncation-one-crash", {"max_states": 5000}),
                                         ("hw-truncation-one-crash", {"max_depth": 12})])
def test_keep_going(name, limits, tmp_path):
    """Every violation, each the first of its property in BFS order, with the search going on."""
    r = same(gate_model(name), tmp_path, buffers=(100,), stop_on_first=False, **limits)
    assert r.violations


def test_peer_transcription(tmp_path):
    from isrcheck.peers.kafka_specification import PeerModel

    for symmetry in (False, True):
        same(PeerModel("kip-320", 2, symmetry), tmp_path, buffers=(0, 1000), stop_on_first=False)
    same(PeerModel("truncate-to-hw", 2, False), tmp_path)


# ---------------------------------------------------------------------------- toy models
class Act(NamedTuple):
    name: str
    arg: int = 0


class IntCodec:
    """A toy's state codec: an int (or a pair of ints) as bytes."""

    signature = "toy"

    def encode(self, s) -> bytes:
        return b"".join(int(x).to_bytes(4, "little", signed=True) for x in (s if isinstance(s, tuple) else (s,)))

    def decode(self, b):
        b = bytes(b)
        xs = tuple(int.from_bytes(b[i:i + 4], "little", signed=True) for i in range(0, len(b), 4))
        return xs if len(xs) > 1 else xs[0]


class Ring:
    """States 0..n-1 with steps +1, +5, doubling and a reset to 0: many edges back to old levels,
    so candidates are often states the seen file already holds (not only the window's)."""

    def __init__(self, n=400, props=(), fault_at=None, init=(0,)) -> None:
        self.n = n
        self.props = list(props)
        self.fault_at = fault_at
        self.init = list(init)
        self.state_codec = IntCodec()

    def init_states(self):
        return self.init

    def actions(self, s):
        return [Act("Inc", 1), Act("Skip", 5), Act("Double"), Act("Reset")]

    def next_state(self, s, a):
        if s == self.fault_at and a.name == "Double":
            raise ModelFault("OnlyValidTransitions", f"Double from {s}")
        if a.name == "Reset":
            return 0
        if a.name == "Double":
            return (2 * s) % self.n
        return (s + a.arg) % self.n

    def properties(self):
        return self.props

    def fingerprint(self, s):
        return hash(("ring", s))


class Mirror:
    """Points (x, y) stepping right or up; (x, y) and (y, x) share a fingerprint: the checker keeps
    the first concrete representative it meets, and so must the disk search."""

    def __init__(self, n=12, props=()) -> None:
        self.n = n
        self.props = list(props)
        self.state_codec = IntCodec()

    def init_states(self):
        return [(0, 0)]

    def actions(self, s):
        x, y = s
        return [a for a, ok in ((Act("Up", 1), y + 1 < self.n), (Act("Right", 1), x + 1 < self.n),
                                (Act("Jump", 2), x + 2 < self.n)) if ok]

    def next_state(self, s, a):
        x, y = s
        return (x, y + 1) if a.name == "Up" else (x + a.arg, y)

    def properties(self):
        return self.props

    def fingerprint(self, s):
        return hash((min(s), max(s)))


def test_toy_ring_back_edges(tmp_path):
    r = same(Ring(), tmp_path, buffers=TOY_BUFFERS)
    assert r.outcome == "success" and r.distinct_states == 400
    checker = DiskChecker(Ring(), tmp_path / "again", buffer=0)
    checker.run()
    assert checker.candidates > 399  # some candidates were found old in the seen file, not the window


TOY_BUFFERS = (0, 7, 1 << 15)


def test_toy_ring_every_kind_of_stop(tmp_path):
    for stop_on_first in (True, False):
        kw = {"stop_on_first": stop_on_first, "buffers": TOY_BUFFERS}
        same(Ring(props=[Property("Small", "always", lambda s: s != 333)]), tmp_path, **kw)
        same(Ring(props=[Property("A", "always", lambda s: s != 77), Property("B", "always", lambda s: s != 77)]),
             tmp_path, **kw)
        same(Ring(props=[Property("NoWrap", "transition", lambda s, t: t >= s or t == 0 or s < 300)]), tmp_path, **kw)
        same(Ring(fault_at=123), tmp_path, **kw)
        same(Ring(init=[0, 5, 0, 399], props=[Property("Not399", "always", lambda s: s != 399)]), tmp_path, **kw)
        # a witness found after the cut must not count
        for cut in (10, 101, 250):
            same(Ring(props=[Property("Seen200", "sometimes", lambda s: s == 200),
                             Property("Never", "sometimes", lambda s: s == 9999)]), tmp_path, max_states=cut, **kw)
        for depth in (0, 1, 3, 6):
            same(Ring(props=[Property("Seen200", "sometimes", lambda s: s == 200)]), tmp_path, max_depth=depth, **kw)


def test_toy_stop_and_limit_in_one_level(tmp_path):
    """An unsafe state and the max_states-th state in the same level: whichever comes first wins."""
    for cut in range(1, 40, 3):
        same(Ring(props=[Property("Not30", "always", lambda s: s != 30)]), tmp_path, max_states=cut, buffers=TOY_BUFFERS)
        same(Ring(fault_at=16), tmp_path, max_states=cut, buffers=TOY_BUFFERS)


def test_toy_representatives_follow_first_discovery(tmp_path):
    r = same(Mirror(props=[Property("Bad", "always", lambda s: s != (7, 3))]), tmp_path, buffers=TOY_BUFFERS)
    assert r.outcome == "safety_failure"
    same(Mirror(), tmp_path, buffers=TOY_BUFFERS)


# ---------------------------------------------------------------------------- the directory
def test_a_model_without_a_codec_is_refused(tmp_path):
    model = Ring()
    model.state_codec = None
    with pytest.raises(DiskError, match="no binary state codec"):
        DiskChecker(model, tmp_path / "d")
    assert not (tmp_path / "d").exists()


def test_a_directory_of_someone_elses_files_is_refused(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    with pytest.raises(DiskError, match="not empty"):
        DiskChecker(Ring(), d).run()
    assert (d / "notes.txt").read_text() == "mine"
    (d / MARKER).write_text("{}")
    with pytest.raises(DiskError, match="no disk run wrote"):
        DiskChecker(Ring(), d).run()
    assert (d / "notes.txt").read_text() == "mine"


def test_kept_files_and_a_second_run_in_the_same_directory(tmp_path):
    d = tmp_path / "d"
    first = DiskChecker(Ring(), d, keep=True)
    r1 = first.run()
    names = set(os.listdir(d))
    assert MARKER in names and "seen.i64" in names and "L00001.fps" in names
    assert first.disk_peak > 0 and first.levels > 0 and first.candidates >= r1.distinct_states - 1
    r2 = DiskChecker(Ring(), d).run()  # a previous run's directory is cleared and used
    assert summary(r2) == summary(r1)
    assert os.listdir(d) == []  # not made by this run: emptied, kept


def test_an_empty_existing_directory_is_used_and_kept(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    DiskChecker(Ring(), d).run()
    assert d.is_dir() and os.listdir(d) == []


def test_a_memory_ceiling_stops_it_as_it_stops_checker(tmp_path):
    """Read before the first state is expanded: a ceiling below the process's size stops both at once."""
    r = same(Ring(), tmp_path, max_memory=1)
    assert r.limit_hit == "memory" and r.outcome == "incomplete"


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_the_window_tables_hold_exactly_the_level_given(pure, monkeypatch):
    """A level's fingerprints, filled in bulk into the window's table a block of its file at a time
    (engine/_fpset.c's where it is built, a dict in the pure build): every one is in it, fingerprint
    0 and the extremes of the signed range included, and nothing else is."""
    import numpy as np

    from isrcheck.engine.disk import _fingerprint_set

    if pure:
        monkeypatch.setenv("ISRCHECK_PURE", "1")
    fps = np.array([0, 1, -1, 2**63 - 1, -2**63, 123456789, -987654321] + list(range(10, 5000, 7)),
                   dtype=np.int64)
    table = _fingerprint_set(np, [fps[:300], fps[300:301], fps[301:]])
    assert len(table) == len(fps)
    assert all(int(fp) in table for fp in fps)
    assert not any(x in table for x in (3, -2, 2**62, 11, 5001))
    assert isinstance(table, dict) == pure or not _compiled_map_available()


def _compiled_map_available() -> bool:
    try:
        from isrcheck.engine._fpset import FingerprintSet  # noqa: F401
    except ImportError:
        return False
    return True


def test_a_states_cut_stops_generating_once_the_cut_is_among_the_candidates(tmp_path):
    """A --max-states cut in the middle of a wide level: the search counts the really new candidates
    (a probe of the seen file) once there could be enough of them, and stops generating the level
    as soon as there are, so it writes fewer candidates than the whole level has; the result is
    still Checker's."""
    from isrcheck.peers.kafka_specification import PeerModel

    model = PeerModel("kip-320", 2, False)
    want = Checker(model, max_states=20_000).run()
    cut = DiskChecker(model, tmp_path / "cut", buffer=0, max_states=20_000)
    assert summary(cut.run()) == summary(want)
    whole = DiskChecker(model, tmp_path / "whole", buffer=0, max_depth=want.depth + 1)
    whole.run()
    assert 20_000 - 1 <= cut.candidates < whole.candidates
