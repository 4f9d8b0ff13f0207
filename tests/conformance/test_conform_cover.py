"""Exhaustive conformance for small bounds: covering path sets of the model's state graph."""
from __future__ import annotations

import dataclasses

import networkx as nx
import pytest

from isrcheck.inputs import manifest
from isrcheck.conformance.sides import supported_generations
from isrcheck.conformance.cover import (
    StateGraph,
    build_graph,
    cover,
    depth_paths,
    edge_covering_paths,
    state_covering_paths,
)
from isrcheck.model.actions import Action


def _toy() -> StateGraph:
    """0 -a-> 1 -b-> 2 -c-> 0, 1 -d-> 3 (a sink), 2 -e-> 2 (a self-loop), 0 -f-> 3."""
    g = nx.MultiDiGraph()
    edges = [(0, 1, "a"), (1, 2, "b"), (2, 0, "c"), (1, 3, "d"), (2, 2, "e"), (0, 3, "f")]
    acts = {}
    for u, v, k in edges:
        g.add_edge(u, v, key=k)
        acts[(u, v, k)] = Action(k, ())
    return StateGraph(g, 0, {n: n for n in g.nodes}, acts)


def _connected_from_init(sg: StateGraph, path) -> bool:
    cur = sg.init
    for u, v, _ in path:
        if u != cur:
            return False
        cur = v
    return True


def test_edge_covering_paths_take_every_edge_from_the_initial_state():
    sg = _toy()
    paths = edge_covering_paths(sg)
    assert all(_connected_from_init(sg, p) for p in paths)
    assert {e for p in paths for e in p} == set(sg.graph.edges(keys=True))


def test_edge_covering_paths_respect_a_length_cap():
    sg = build_graph(manifest.get("replication").config)
    deepest = max(d for _, d in sg.graph.nodes(data="depth"))
    paths = edge_covering_paths(sg, max_len=8)
    assert all(len(p) <= max(8, deepest + 1) for p in paths) and all(_connected_from_init(sg, p) for p in paths)
    assert len(paths) > len(edge_covering_paths(sg))  # shorter paths, so more of them
    assert {e for p in paths for e in p} == set(sg.graph.edges(keys=True))


def test_state_covering_and_depth_paths():
    sg = _toy()
    paths = state_covering_paths(sg)
    assert {sg.init} | {e[1] for p in paths for e in p} == set(sg.graph.nodes)
    two = list(depth_paths(sg, 2))
    # from 0: a then b/d, f then (3 is a sink: the path stops)
    assert sorted(tuple(k for _, _, k in p) for p in two) == [("a", "b"), ("a", "d"), ("f",)]


def test_graph_matches_the_checker_counts():
    e = manifest.get("replication")
    sg = build_graph(e.config)
    assert sg.n_states == e.states  # symmetry is off for this model, so the counts agree
    assert sg.n_edges > sg.n_states and not sg.faults


@pytest.mark.parametrize("name", ["replication", "controlled-shutdown", "reassignment", "controller-failover",
                                  "delayed-requests", "clean-election"])
def test_covering_paths_of_small_models_conform_with_full_edge_coverage(name):
    rep = cover(manifest.get(name).config, "edges", label=name)
    assert rep.ok, rep.divergence.summary() if rep.divergence else rep.skipped
    assert rep.edges_covered == rep.edges_total and rep.edge_coverage == 1.0
    assert rep.states_covered == rep.states_total and rep.state_coverage == 1.0
    assert rep.paths == rep.paths_total and rep.steps >= rep.edges_total


@pytest.mark.parametrize("generation", ["kip-320", "high-watermark"])
def test_session_expiry_conforms_with_full_edge_coverage(generation):
    """session-expiry-kip-320 shrunk to two brokers and one record (the full model conforms too, in
    minutes: `isrcheck conform --model session-expiry-kip-320`). An expired broker keeps acting, and the
    controller must send it nothing once it handled the expiry (no StopReplica): that shows here."""
    base = manifest.get("session-expiry-kip-320").config
    cfg = dataclasses.replace(base, brokers=2, replication_factor=2, assignment=((1, 2),), max_records=1,
                              min_insync_replicas=1, generation=type(base.generation)(generation))
    rep = cover(cfg, "edges", label=f"session expiry ({generation})")
    assert rep.ok, rep.divergence.summary() if rep.divergence else rep.skipped
    assert rep.edge_coverage == 1.0 and rep.paths == rep.paths_total
    assert any(a.name == "Reregister" for a in build_graph(cfg).actions.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["topic-deletion", "topic-creation", "preferred-election", "lossy-crash",
                                  "undetected-restart"])
def test_covering_paths_of_larger_models(name):
    rep = cover(manifest.get(name).config, "edges", label=name)
    assert rep.ok and rep.edge_coverage == 1.0, rep.divergence.summary() if rep.divergence else rep.skipped


def test_all_paths_up_to_a_depth():
    cfg = manifest.get("controlled-shutdown").config
    rep = cover(cfg, "depth", depth=3)
    sg = build_graph(cfg)
    assert rep.ok and rep.paths == len(list(depth_paths(sg, 3)))
    assert 0 < rep.edges_covered < rep.edges_total  # depth 3 does not reach everything


def test_states_mode_visits_every_state():
    rep = cover(manifest.get("replication").config, "states")
    assert rep.ok and rep.state_coverage == 1.0 and rep.edge_coverage < 1.0


OTHER_GENERATIONS = [g for g in supported_generations() if g != "high-watermark"]


@pytest.mark.parametrize("gen", OTHER_GENERATIONS or ["(none yet)"])
@pytest.mark.parametrize("name", ["replication", "controller-failover",
                                  pytest.param("clean-election", marks=pytest.mark.slow)])
def test_generations_the_implementation_accepts_are_covered_too(name, gen):
    """Every protocol generation the implementation accepts (asked of impl, so a new one is picked up
    as soon as it is there) is covered like the seeds' rule."""
    if gen not in supported_generations():
        pytest.skip("the implementation accepts no generation but high-watermark yet")
    cfg = dataclasses.replace(manifest.get(name).config, generation=gen)
    rep = cover(cfg, "edges", label=f"{name} ({gen})")
    assert rep.ok and rep.edge_coverage == 1.0, rep.divergence.summary() if rep.divergence else rep.skipped
