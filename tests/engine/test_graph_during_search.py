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
