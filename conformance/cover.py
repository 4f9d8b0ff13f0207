"""Exhaustive conformance for small bounds: replay paths that cover the model's whole state graph.

:func:`build_graph` explores a model breadth-first (no symmetry reduction: the implementation runs
concrete states) into a ``networkx.MultiDiGraph`` whose nodes are state fingerprints and whose
edges are the enabled actions (keyed by the action's text, so two actions between the same states
are two edges; a step that changes nothing is a self-loop, and is covered like any other edge).

Path sets (each path starts in the initial state, because that is where the implementation starts):

- ``edges``: :func:`edge_covering_paths`, a greedy walk: take an uncovered edge out of the current
  state when there is one (preferring edges into states that still have uncovered edges), otherwise
  walk the shortest route (networkx BFS) to the nearest state that has one; when none is reachable,
  start a new path from the initial state. Every edge of the graph is on some path, so every state
  is visited too.
- ``states``: :func:`state_covering_paths`, the BFS-tree path to every leaf of the BFS tree (every
  state is on one).
- ``depth``: :func:`depth_paths`, every path of exactly ``k`` actions, or shorter when it ends in a
  state with no enabled action (exponential: small ``k`` only).

:func:`cover` replays a path set on the implementation against the model's states stored in the
graph and reports the coverage the implementation achieved: the edges and states whose step
matched the model, out of the graph's totals.
"""
from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from isrcheck.invariants import build_model
from isrcheck.model.actions import Action
from isrcheck.engine.core import ModelFault
from isrcheck.engine.explore import BreadthFirst
from isrcheck.model.config import Config
from isrcheck.model.observe import acked_of, observe
from isrcheck.model.protocol import Protocol

from .replay import Divergence, compare_step
from .sides import ImplFailed, ImplRefused, ImplSide, impl_support

__all__ = ["CoverReport", "StateGraph", "build_graph", "cover", "depth_paths", "edge_covering_paths",
           "state_covering_paths"]

Edge = tuple[int, int, str]  # (source fingerprint, target fingerprint, action text)


@dataclass
class StateGraph:
    graph: nx.MultiDiGraph
    init: int
    states: dict[int, Any]  # fingerprint -> model state
    actions: dict[Edge, Action]
    faults: list[tuple[int, Action, str]] = field(default_factory=list)  # steps the model refuses (ModelFault)

    @property
    def n_states(self) -> int:
        return self.graph.number_of_nodes()

    @property
    def n_edges(self) -> int:
        return self.graph.number_of_edges()


class GraphTooLarge(ValueError):
    pass


def build_graph(config: Config, protocol: Protocol | None = None, max_states: int = 200_000) -> StateGraph:
    """The full reachable state graph of ``config`` (raises :class:`GraphTooLarge` past ``max_states``)."""
    model = build_model(config, protocol=protocol, symmetry=False, properties=[])
    g = nx.MultiDiGraph()
    states: dict[int, Any] = {}
    acts: dict[Edge, Action] = {}
    faults: list[tuple[int, Action, str]] = []
    depth: dict[int, int] = {}

    def on_state(fp: int, s: Any, d: int) -> None:
        if fp not in states:  # an initial state
            states[fp] = s
            depth[fp] = d
            g.add_node(fp, depth=d)

    def on_edge(fp: int, a: Action, tfp: int, t: Any, new: bool) -> None:
        if new:
            states[tfp] = t
            depth[tfp] = depth[fp] + 1
            g.add_node(tfp, depth=depth[tfp])
        key = str(a)
        g.add_edge(fp, tfp, key=key)
        acts[(fp, tfp, key)] = a

    def on_fault(fp: int, a: Action, e: ModelFault) -> None:
        faults.append((fp, a, str(e)))

    visit = BreadthFirst(model, key=hash, max_states=max_states).run(on_state, on_edge, on_fault)
    if not visit.complete:
        raise GraphTooLarge(f"more than {max_states} states: too large to cover")
    return StateGraph(g, hash(model.init_states()[0]), states, acts, faults)


# ---------------------------------------------------------------------------- path sets
def _edges_to(parent: Mapping[int, Edge | None], n: int) -> list[Edge]:
    """The edges from the root of a search tree down to node ``n``, where ``parent`` maps each node
    the tree reached to the edge into it (None for the root): the one path rebuilt by every cover
    mode (the BFS tree, the local search of :func:`edge_covering_paths`)."""
    path: list[Edge] = []
    e = parent[n]
    while e is not None:
        path.append(e)
        e = parent[e[0]]
    path.reverse()
    return path


def edge_covering_paths(sg: StateGraph, max_len: int | None = None) -> list[list[Edge]]:
    """Paths from the initial state that together take every edge of the graph (see the module doc)."""
    succ: dict[int, list[Edge]] = {n: [] for n in sg.graph.nodes}
    for u, v, k in sg.graph.edges(keys=True):
        succ[u].append((u, v, k))
    uncovered: dict[int, list[Edge]] = {n: list(es) for n, es in succ.items() if es}
    remaining = sum(len(x) for x in uncovered.values())

    # the BFS tree from the initial state: a new path walks down it to the shallowest state that
    # still has an uncovered edge (a heap by depth), which costs O(depth), not a search
    tree: dict[int, Edge | None] = {sg.init: None}
    depth = {sg.init: 0}
    q = deque([sg.init])
    while q:
        n = q.popleft()
        for e in succ[n]:
            if e[1] not in tree:
                tree[e[1]] = e
                depth[e[1]] = depth[n] + 1
                q.append(e[1])
    pending = [(depth[n], n) for n in uncovered]
    heapq.heapify(pending)

    def tree_path(n: int) -> list[Edge]:
        return _edges_to(tree, n)

    def route(src: int, budget: int = 4000) -> list[Edge] | None:
        """A shortest path (as edges) from src to a nearby node with uncovered out-edges."""
        if src == sg.init:
            while pending and not uncovered.get(pending[0][1]):
                heapq.heappop(pending)
            return tree_path(pending[0][1]) if pending else None
        prev: dict[int, Edge | None] = {src: None}
        q = deque([src])
        while q and len(prev) < budget:
            n = q.popleft()
            if uncovered.get(n):
                return _edges_to(prev, n)
            for e in succ[n]:
                if e[1] not in prev:
                    prev[e[1]] = e
                    q.append(e[1])
        return None

    paths: list[list[Edge]] = []
    while remaining:
        cur, path, fresh = sg.init, [], False
        while True:
            if max_len is not None and fresh and len(path) >= max_len:
                break  # a soft cap: a path always reaches and takes one uncovered edge, however deep
            out = uncovered.get(cur)
            if out:
                fresh = True
                pick = next((i for i, e in enumerate(out) if e[1] != cur and uncovered.get(e[1])), None)
                if pick is None:
                    pick = next((i for i, e in enumerate(out) if e[1] == cur), 0)  # self-loops first, then any
                e = out.pop(pick)
                remaining -= 1
                path.append(e)
                cur = e[1]
                continue
            r = route(cur)
            if not r or (max_len is not None and path and len(path) + len(r) >= max_len):
                break
            path += r
            cur = r[-1][1]
        if not path:
            break  # pragma: no cover - only if an uncovered edge were unreachable, which BFS rules out
        paths.append(path)
    return paths


def state_covering_paths(sg: StateGraph) -> list[list[Edge]]:
    """One BFS-tree path to every leaf of the BFS tree: every state lies on one of them."""
    g = sg.graph
    parent: dict[int, Edge | None] = {sg.init: None}
    order = [sg.init]
    for u, v in nx.bfs_edges(g, sg.init):
        k = next(iter(g.get_edge_data(u, v)))
        parent[v] = (u, v, k)
        order.append(v)
    has_child = {e[0] for e in parent.values() if e is not None}
    return [_edges_to(parent, n) for n in order if n not in has_child]


def depth_paths(sg: StateGraph, k: int) -> Iterator[list[Edge]]:
    """Every path of ``k`` edges from the initial state (shorter ones only where they cannot go on)."""
    g = sg.graph

    def walk(n: int, path: list[Edge]) -> Iterator[list[Edge]]:
        if len(path) == k:
            yield list(path)
            return
        out = list(g.out_edges(n, keys=True))
        if not out:
            yield list(path)
            return
        for e in out:
            path.append(e)
            yield from walk(e[1], path)
            path.pop()

    yield from walk(sg.init, [])


# ---------------------------------------------------------------------------- replay
@dataclass
class CoverReport:
    label: str
    mode: str
    states_total: int
    edges_total: int
    states_covered: int = 0
    edges_covered: int = 0
    paths: int = 0
    paths_total: int = 0
    steps: int = 0
    seconds: float = 0.0
    build_seconds: float = 0.0
    divergence: Divergence | None = None
    failing_path: list[tuple[str, tuple]] = field(default_factory=list)  # the actions up to the divergence
    skipped: str | None = None
    model_faults: int = 0

    @property
    def ok(self) -> bool:
        return self.divergence is None and self.skipped is None

    @property
    def edge_coverage(self) -> float:
        return self.edges_covered / self.edges_total if self.edges_total else 1.0

    @property
    def state_coverage(self) -> float:
        return self.states_covered / self.states_total if self.states_total else 1.0

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def cover(config: Config, mode: str = "edges", *, depth: int = 3, label: str = "model", seed: int = 0,
          protocol: Protocol | None = None, keep_going: bool = False, max_states: int = 200_000,
          max_len: int | None = None, ignore: tuple[str, ...] = (), validate: bool = True,
          graph: StateGraph | None = None) -> CoverReport:
    """Replay a covering path set of ``config``'s state graph on the implementation."""
    reason = impl_support(config)
    t0 = time.perf_counter()
    sg = graph if graph is not None else build_graph(config, protocol, max_states)
    build = time.perf_counter() - t0
    rep = CoverReport(label, mode, sg.n_states, sg.n_edges, build_seconds=build, model_faults=len(sg.faults))
    if reason is not None:
        rep.skipped = f"the implementation does not accept this configuration: {reason}"
        return rep
    if mode == "edges":
        paths: Any = edge_covering_paths(sg, max_len)
        rep.paths_total = len(paths)
    elif mode == "states":
        paths = state_covering_paths(sg)
        rep.paths_total = len(paths)
    elif mode == "depth":
        paths = depth_paths(sg, depth)
    else:
        raise ValueError(f"unknown cover mode {mode!r} (edges, states or depth)")
    seen_states: set[int] = set()
    seen_edges: set[Edge] = set()
    expected_cache: dict[int, tuple[dict, list]] = {}

    def expected(fp: int) -> tuple[dict, list]:
        e = expected_cache.get(fp)
        if e is None:
            s = sg.states[fp]
            e = expected_cache[fp] = (observe(s), acked_of(s))
        return e

    start = time.perf_counter()
    init_checked = False
    for path in paths:
        rep.paths += 1
        impl = ImplSide(config, seed=seed)
        if not init_checked:
            div = compare_step(0, None, expected(sg.init), impl, ignore, validate)
            init_checked = True
            if div is not None:
                rep.divergence = div
                break
            seen_states.add(sg.init)
        taken: list[tuple[str, tuple]] = []
        div = None
        for i, e in enumerate(path, start=1):
            a = sg.actions[e]
            act = (a.name, tuple(a.args))
            taken.append(act)
            rep.steps += 1
            try:
                impl.step(*act)
            except ImplRefused as ex:
                div = Divergence(i, act, "impl-refused", f"the implementation refused the action: {ex}")
            except ImplFailed as ex:
                div = Divergence(i, act, "impl-failed", f"the implementation failed: {ex}")
            else:
                div = compare_step(i, act, expected(e[1]), impl, ignore, validate)
            if div is not None:
                break
            seen_edges.add(e)
            seen_states.add(e[1])
        if div is not None and rep.divergence is None:
            rep.divergence = div
            rep.failing_path = taken
        if rep.divergence is not None and not keep_going:
            break
    rep.seconds = time.perf_counter() - start
    rep.states_covered = len(seen_states)
    rep.edges_covered = len(seen_edges)
    return rep
