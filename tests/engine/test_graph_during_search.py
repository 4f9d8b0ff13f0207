"""The liveness graph recorded by the safety search (engine/liveness.py's GraphBuilder handed to the
Checker) is the graph the liveness search builds on its own: the same states in the same numbers,
depths, parents, rows, edges, labels and masks; so one exploration serves both and every liveness
verdict and lasso stays the same (issue 32: liveness at the price of safety)."""
from __future__ import annotations

import pytest

from isrcheck.engine import liveness as L
from isrcheck.engine.checker import Checker
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants import liveness as live

#: manifest models with liveness pins, with and without faults, one with a pinned liveness failure
MODELS = ["replication", "clean-election", "leader-crash-kip-320", "undetected-restart", "controller-failover"]


def _arrays(g: L.Graph) -> dict[str, object]:
    return {"fps": list(g.fps), "depth": list(g.depth), "parent": list(g.parent), "offsets": list(g.offsets),
            "dst": list(g.dst), "label": list(g.label), "keys": list(g.keys),
            "premise": [list(a) for a in g.premise], "goal": [list(a) for a in g.goal],
            "complete": g.complete}


def _setup(name: str):
    tg = manifest.resolve(name, None, ())
    props = live.applicable_liveness(tg.config, None)
    return tg, props, build_model(tg.config, symmetry=False)


@pytest.mark.parametrize("name", MODELS)
def test_the_recorded_graph_is_the_built_one(name: str) -> None:
    tg, props, model = _setup(name)
    assert props, name
    rec = L.GraphBuilder(model, props)
    result = Checker(model, stop_on_first=False, graph=rec).run()
    recorded = rec.finish(result.limit_hit is None)
    built = L.build_graph(build_model(tg.config, symmetry=False, properties=[]), props)
    assert recorded.states == result.distinct_states == built.states
    assert _arrays(recorded) == _arrays(built)


@pytest.mark.parametrize("name", ["replication", "leader-crash-kip-320", "undetected-restart"])
def test_the_workers_parts_assemble_into_the_built_graph(name: str) -> None:
    """Two workers: each records its own steps and settled states; the parts, numbered by discovery
    key, are the built graph array for array (balancing between levels moves states, not steps)."""
    from isrcheck.engine.parallel import ParallelChecker

    tg, props, model = _setup(name)
    rec = L.GraphBuilder(model, props)
    result = ParallelChecker(model, workers=2, graph=rec).run()
    assert result.limit_hit is None and (not result.violations or name == "undetected-restart")
    built = L.build_graph(build_model(tg.config, symmetry=False, properties=[]), props)
    if result.violations:  # stopped at its first violation: nothing assembled
        assert rec.graph.states == 0
        return
    recorded = rec.finish(True)
    assert _arrays(recorded) == _arrays(built)
    assert [L.INDEX_TAG + v for v in range(built.states)] == [recorded.index.get(fp) for fp in built.fps]


@pytest.mark.parametrize("name", ["undetected-restart", "leader-crash-kip-320"])
@pytest.mark.parametrize("workers", [1, 2])
def test_check_reads_the_same_liveness_verdicts_and_lassos(name: str, workers: int) -> None:
    from isrcheck.commands.evaluate import evaluate
    from isrcheck.commands.options import Inputs

    tg, props, model = _setup(name)
    ev = evaluate(Inputs((name,)), liveness=True, workers=workers)
    alone = live.check(tg.config, [p.name for p in props])
    got = [(v.property, v.holds, v.violation.trace if v.violation else None) for v in ev.lres.verdicts]
    want = [(v.property, v.holds, v.violation.trace if v.violation else None) for v in alone.verdicts]
    assert got == want and (ev.lres.states, ev.lres.edges) == (alone.states, alone.edges)
    if name == "undetected-restart":
        assert any(h is False for _, h, _ in got)  # a lasso compared, not only verdicts


def test_a_search_stopped_short_leaves_the_graph_to_the_liveness_search(monkeypatch) -> None:
    """A search that stops at its first violation saw only part of the graph: the check then builds
    the whole graph itself, and the verdicts are those of the liveness search alone."""
    from isrcheck.commands import evaluate as E
    from isrcheck.commands.options import Inputs

    handed: list[object] = []
    real = E.live.check

    def spy(*args, **kwargs):
        handed.append(kwargs.get("graph"))
        return real(*args, **kwargs)

    monkeypatch.setattr(E.live, "check", spy)
    ev = E.evaluate(Inputs(("hw-truncation-one-crash",)), liveness=True)  # a pinned safety failure
    assert ev.result.violations and handed == [None] and ev.lres.verdicts
    handed.clear()
    E.evaluate(Inputs(("replication",)), liveness=True)
    assert len(handed) == 1 and isinstance(handed[0], L.Graph) and handed[0].complete


def test_a_recorded_search_cannot_be_checkpointed(tmp_path) -> None:
    from isrcheck.engine.checkpoint import Checkpoints, SnapshotError

    tg, props, model = _setup("replication")
    ck = Checkpoints(tmp_path, {"model": "replication"}, every=0, resume=False)
    with pytest.raises(SnapshotError, match="liveness graph"):
        Checker(model, graph=L.GraphBuilder(model, props), checkpoint=ck).run()


class _Keeper:
    """A recorder for the parallel checker that keeps the workers' parts (and assembles them as the
    real one does), so that one search's parts can be assembled again."""

    def __init__(self, model, props) -> None:
        self.builder = L.GraphBuilder(model, props)
        self.properties = self.builder.properties
        self.args: tuple = ()

    def assemble(self, *args):
        self.args = args
        return self.builder.assemble(*args)


@pytest.mark.parametrize("name", ["replication", "clean-election", "leader-crash-kip-320"])
def test_the_c_assembly_is_the_python_assembly(name: str) -> None:
    """engine/_assemble.c (with the index filled and read in bulk) against the Python loops that
    define it, on the same parts: the same arrays, fair labels and index; the Python loops run
    where the index is a dict (the pure build's)."""
    pytest.importorskip("isrcheck.engine._assemble", reason="a pure install builds no C extension")
    from isrcheck import native
    from isrcheck.engine.parallel import ParallelChecker

    if not native.compiled_wanted():
        pytest.skip("the compiled modules are stale, so this interpreter runs the Python source")
    tg, props, model = _setup(name)
    keeper = _Keeper(model, props)
    result = ParallelChecker(model, workers=2, graph=keeper).run()
    assert result.limit_hit is None and not result.violations and keeper.args
    in_c = keeper.builder.finish(True)
    python = L.GraphBuilder(model, props)
    python.graph.index = {}
    in_python = python.assemble(*keeper.args)
    assert not isinstance(in_c.index, dict) and in_c.states > 100 and in_c.keys
    assert _arrays(in_c) == _arrays(in_python)
    assert [in_c.index.get(fp) for fp in in_c.fps] == [in_python.index[fp] for fp in in_c.fps]


def _parts(keys, fps, e_src, e_dst, e_lab, labels):
    from array import array

    return {"keys": array("q", keys).tobytes(), "fps": array("q", fps).tobytes(), "masks": [],
            "e_src": array("q", e_src).tobytes(), "e_dst": array("q", e_dst).tobytes(),
            "e_lab": array("i", e_lab).tobytes(), "labels": labels}


SHIFT, ACTION = 48, 16


@pytest.mark.parametrize("part, message", [
    # two keys of the first level out of key order
    (_parts([1 << SHIFT | 1, 1 << SHIFT], [20, 21], [10], [20], [-1], []), "discovery order"),
    # a parent rank past the initial states (there is one)
    (_parts([1 << SHIFT | 3 << ACTION], [20], [10], [20], [-1], []), "outside its parent's level"),
    # the sources out of state order: 20 (state 1) expanded before 10 (state 0)
    (_parts([1 << SHIFT], [20], [20, 10], [10, 20], [-1, -1], []), "state order"),
    # a label with no instance
    (_parts([1 << SHIFT], [20], [10], [20], [0], []), "no instance"),
])
def test_parts_out_of_the_search_order_are_refused(part, message) -> None:
    """The C assembly checks the parts before it trusts them (the Python loops would build another
    graph from them, or fail on an index)."""
    pytest.importorskip("isrcheck.engine._assemble", reason="a pure install builds no C extension")
    from isrcheck import native

    if not native.compiled_wanted():
        pytest.skip("the compiled modules are stale, so this interpreter runs the Python source")
    b = L.GraphBuilder(_Line(), [])
    with pytest.raises(ValueError, match=message):
        b.assemble([(0, 10, 0)], [part], SHIFT, ACTION, (1 << 32) - 1)


class _Line:
    def fair_key(self, action):
        return action
