"""The reachable state graph of a model as a networkx graph, and its DOT, GraphML and JSON forms.

``isrcheck graph`` is for looking at a model, not for checking it: a designer opens the DOT in
Graphviz, the GraphML in yEd or Gephi, or reads the JSON (each node with its whole state). So the
graph is built by the liveness checker's breadth-first graph builder
(:func:`isrcheck.engine.liveness.build_graph`, the one exploration that keeps every edge) with the
model seen through :class:`_Recorder`, which keeps what that builder has no use for: the states
themselves, the action of every edge (as the edge's label) and the steps that change nothing (the
builder drops them; here they are self-loops, so the edges are exactly the checker's transitions).

The counterexample drawn is the one ``isrcheck check`` prints first (the same search, stopping at
the first violation), so its highlighted path has the length ``check`` reports.

With symmetry reduction a node stands for an orbit of states under renaming of broker ids: its
id is the fingerprint of the orbit's canonical representative, and its label and state are those
of the first member the search reached (the actions on its outgoing edges name brokers of that
member). The graph says which it is in its ``symmetry`` attribute.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from isrcheck.engine.checker import Checker, Violation
from isrcheck.engine.core import Step
from isrcheck.engine.liveness import LeadsTo, build_graph
from isrcheck.model.brokersets import render as render_set
from isrcheck.model.kafka import KafkaModel
from isrcheck.model.records import render_log
from isrcheck.model.state import NO_LEADER, State
from isrcheck.render.json_form import state_to_json
from isrcheck.render.statefields import fields

FORMATS = ("dot", "graphml", "json")
DEFAULT_MAX_STATES = 20_000
_MASK64 = (1 << 64) - 1
SYMMETRY_NOTE = ("each node is an orbit under renaming of broker ids (its label and state: the first member "
                 "reached)")


class GraphTooLarge(ValueError):
    """The reachable graph has more states than the limit (one line for the user)."""


def node_id(fp: int) -> str:
    """A node's id: the state's 64-bit fingerprint in hex (JSON numbers lose bits past 2**53)."""
    return f"{fp & _MASK64:016x}"


def short_label(state: State) -> str:
    """A node's label: per partition the leader, ISR and epoch in ZooKeeper and the acknowledged
    writes, then each replica's log and high watermark (``-`` for a broker that is down)."""
    lines = []
    for p, zp in enumerate(state.zk.partitions):
        leader = "none" if zp.leader == NO_LEADER else str(zp.leader)
        acked = state.ghost[p].acked
        lines.append(f"p{p} L{leader} ISR{render_set(zp.isr)} e{zp.leader_epoch} acked{render_set(acked)}")
    for i, br in enumerate(state.brokers):
        parts = []
        for r in br.replicas:
            if r is not None:
                parts.append(f"{render_log(r.log)} hw{r.hw}")
        text = " ".join(parts) if parts else "-"
        lines.append(f"b{i + 1} {text}" + ("" if br.alive else " down"))
    return "\n".join(lines)


def distinguish_labels(G: nx.MultiDiGraph) -> None:
    """Make every node's label unique. The short label shows the fields a reader looks at first;
    two distinct states that agree on those (they differ in a checkpoint, a remote LEO, a queued
    request, a controller's replica state, or a variant's own field) would be drawn as identical
    boxes. Each such group gets, below the short label, every field in which its members differ,
    read from the state's structure (render/statefields.py, what -v shows), so a field added to
    the model is covered too; members that differ in no rendered field get their node id."""
    groups: dict[str, list[str]] = {}
    for n, data in G.nodes(data=True):
        groups.setdefault(data["label"], []).append(n)
    for members in groups.values():
        if len(members) < 2:
            continue
        values = {n: {(f.group, f.name): f.value for f in fields(G.nodes[n]["state"])} for n in members}
        keys = list(dict.fromkeys(k for n in members for k in values[n]))
        differing = [k for k in keys if len({values[n].get(k) for n in members}) > 1]
        for n in members:
            extra = [f"{group}: {name}={values[n].get((group, name), '-')}" for group, name in differing]
            G.nodes[n]["label"] += "\n" + "\n".join(extra) if extra else f"\nstate {n}"
        seen: dict[str, int] = {}
        for n in members:  # two members equal in every rendered field: their ids tell them apart
            seen[G.nodes[n]["label"]] = seen.get(G.nodes[n]["label"], 0) + 1
        for n in members:
            if seen[G.nodes[n]["label"]] > 1:
                G.nodes[n]["label"] += f"\nstate {n}"


class _Recorder:
    """``model`` as :func:`build_graph` sees it: the action is each edge's label, states are kept in
    the order they become nodes, and steps that change nothing are noted (the builder skips them)."""

    def __init__(self, model: KafkaModel) -> None:
        self.model = model
        self.states: list[State] = []
        self.stutters: list[tuple[int, Any]] = []  # (fingerprint, action) of every step that changes nothing
        self._current = 0

    def init_states(self) -> Sequence[State]:
        return self.model.init_states()

    def actions(self, state: State) -> list[Any]:
        self._current = self.model.fingerprint(state)  # the builder expands one state at a time
        return self.model.actions(state)

    def next_state(self, state: State, action: Any) -> State:
        t = self.model.next_state(state, action)
        if self.model.fingerprint(t) == self._current:
            self.stutters.append((self._current, action))
        return t

    def properties(self) -> list[Any]:
        return []

    def fingerprint(self, state: State) -> int:
        return self.model.fingerprint(state)

    def fair_key(self, action: Any) -> Hashable:
        return action  # every edge labelled with its action (no liveness is checked here)

    def keep(self, state: State) -> tuple[int, int]:
        """The builder's per-state hook (a property's masks), called once per new node, in order."""
        self.states.append(state)
        return 0, 0


@dataclass(frozen=True)
class StateGraph:
    """The exported graph and what a reader must know about it."""

    graph: nx.MultiDiGraph
    complete: bool  # False: a limit cut the graph (see ``graph.graph["truncated"]``)
    counterexample: Violation | None


def counterexample_of(model: KafkaModel, max_depth: int | None = None,
                      max_states: int | None = None) -> Violation | None:
    """The counterexample ``isrcheck check`` prints first (shortest, first found), or None."""
    found = counterexamples_of(model, max_depth, max_states)
    return found[0] if found else None


def counterexamples_of(model: KafkaModel, max_depth: int | None = None, max_states: int | None = None,
                       keep_going: bool = False) -> list[Violation]:
    """The counterexamples ``isrcheck check`` prints: the first, or with ``keep_going`` one per property."""
    return Checker(model, max_depth=max_depth, max_states=max_states, stop_on_first=not keep_going).run().violations


def mark_counterexample(sg: StateGraph, model: KafkaModel, v: Violation) -> None:
    """Mark one more counterexample on a built graph (``graph --keep-going``: one per property)."""
    _mark(sg.graph, model, v)


def build_state_graph(model: KafkaModel, label: str, *, max_states: int = DEFAULT_MAX_STATES,
                      max_depth: int | None = None, truncate: bool = False,
                      counterexample: Violation | None = None) -> StateGraph:
    """The reachable graph of ``model``: a node per distinct state (per orbit under symmetry), an
    edge per transition (self-loops included), the counterexample's path marked.

    More than ``max_states`` states raise :class:`GraphTooLarge` unless ``truncate``, which keeps
    the first ``max_states`` in breadth-first order with every edge between them.
    """
    rec = _Recorder(model)
    keeper = LeadsTo("states", (), rec.keep)
    g = build_graph(rec, [keeper], max_states=max_states, max_depth=max_depth)
    cut_by_states = not g.complete and len(g.fps) >= max_states
    if cut_by_states and not truncate:
        raise GraphTooLarge(f"{label} has more than {max_states:,} reachable states; raise --max-states, "
                            "give --truncate to export the first ones, or choose a smaller configuration")
    G = nx.MultiDiGraph()
    G.graph.update({
        "model": label,
        "symmetry": SYMMETRY_NOTE if model.symmetry else "off: each node is one state",
        "truncated": not g.complete,
        "truncated_by": ("" if g.complete else "states" if cut_by_states else "depth"),
    })
    for v, state in enumerate(rec.states):
        fp = g.fps[v]
        G.add_node(node_id(fp), label=short_label(state), depth=g.depth[v], initial=g.parent[v] < 0,
                   counterexample=False, state=state)
    for v in range(g.states):
        src = node_id(g.fps[v])
        for k in g.out(v):
            G.add_edge(src, node_id(g.fps[g.dst[k]]), action=str(g.keys[g.label[k]]), stutter=False,
                       counterexample=False)
    for fp, action in rec.stutters:
        G.add_edge(node_id(fp), node_id(fp), action=str(action), stutter=True, counterexample=False)
    distinguish_labels(G)
    G.graph["states"] = G.number_of_nodes()
    G.graph["transitions"] = G.number_of_edges()
    G.graph["counterexample"] = ""
    if counterexample is not None:
        _mark(G, model, counterexample)
    return StateGraph(G, g.complete, counterexample)


def _mark(G: nx.MultiDiGraph, model: KafkaModel, v: Violation) -> None:
    """Mark the counterexample's nodes and edges (``counterexample=True``); a last step that broke a
    state machine has no target state, so its source node carries ``fault`` (the action) instead."""
    text = f"{v.property} broken after {v.length} step{'s' if v.length != 1 else ''}"
    G.graph["counterexample"] = f"{G.graph['counterexample']}; {text}" if G.graph.get("counterexample") else text
    prev: str | None = None
    for st in v.trace:
        if st.state is None:
            if prev is not None:
                G.nodes[prev]["fault"] = f"{st.action} breaks {v.property}"
            break
        n = node_id(model.fingerprint(st.state))
        if n not in G:
            break  # beyond a truncated graph
        G.nodes[n]["counterexample"] = True
        if prev is not None:
            for _key, data in G.get_edge_data(prev, n, default={}).items():
                if data["action"] == str(st.action):
                    data["counterexample"] = True
                    break
        prev = n


# ---------------------------------------------------------------------------- writers
def _scalar_graph(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """A copy without the state objects (GraphML and DOT hold scalars only)."""
    H = nx.MultiDiGraph()
    H.graph.update(G.graph)
    for n, data in G.nodes(data=True):
        H.add_node(n, **{k: v for k, v in data.items() if k != "state"})
    H.add_edges_from(G.edges(keys=True, data=True))
    return H


def to_json(G: nx.MultiDiGraph) -> dict[str, Any]:
    """networkx's node-link form, each node's ``state`` as ``check --json`` writes states."""
    H = _scalar_graph(G)
    for n, data in G.nodes(data=True):
        H.nodes[n]["state"] = state_to_json(data["state"])
    doc = nx.node_link_data(H, edges="edges")
    doc["format"] = "isrcheck-state-graph"
    doc["version"] = 1
    return doc


def _dot_quote(text: Any) -> str:
    s = str(text).lower() if isinstance(text, bool) else str(text)
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l") + '"'


#: past this many states a drawing is not readable (289 states: about 17,000 x 3,400 pixels)
READABLE_STATES = 60


def to_dot(G: nx.MultiDiGraph) -> str:
    """Graphviz DOT, written here (pydot is not a dependency): the counterexample in red, initial
    states doubled, self-loops dashed (a node's several self-loops as one edge listing their
    actions, with ``transitions=N``); ``counterexample=true`` on the marked nodes and edges."""
    g = G.graph
    title = f"{g['model']}  states={g['states']} transitions={g['transitions']}  symmetry: {g['symmetry']}"
    if g["truncated"]:
        title += f"  TRUNCATED by the {g['truncated_by']} limit"
    if g["counterexample"]:
        title += f"  counterexample (red): {g['counterexample']}"
    out = ["digraph isrcheck {",
           f"  graph [label={_dot_quote(title)}, labelloc=t, fontname=\"monospace\"];",
           "  node [shape=box, fontname=\"monospace\", fontsize=9];",
           "  edge [fontname=\"monospace\", fontsize=8];"]
    for n, data in G.nodes(data=True):
        attrs = [f"label={_dot_quote(data['label'] + chr(10))}", f"depth={data['depth']}"]
        if data["initial"]:
            attrs.append("peripheries=2")
        if data["counterexample"]:
            attrs += ["color=red", "penwidth=2", "counterexample=true"]
        if data.get("fault"):
            attrs.append(f"xlabel={_dot_quote(data['fault'])}")
        out.append(f"  {_dot_quote(n)} [{', '.join(attrs)}];")
    loops: dict[str, list[str]] = {}  # node -> the actions of its self-loops
    for a, b, data in G.edges(data=True):
        if a == b:
            loops.setdefault(a, []).append(str(data["action"]))
    drawn: set[str] = set()
    for a, b, data in G.edges(data=True):
        if a == b and len(loops[a]) > 1:
            # Graphviz stacks a node's self-loops on one spot, their labels over each other: one
            # loop stands for them all, its label listing every action, transitions= their number
            if a in drawn:
                continue
            drawn.add(a)
            attrs = [f"label={_dot_quote(chr(10).join(loops[a]) + chr(10))}", f"transitions={len(loops[a])}"]
        else:
            attrs = [f"label={_dot_quote(data['action'])}"]
        if data["stutter"]:
            attrs.append("style=dashed")
        if data["counterexample"]:
            attrs += ["color=red", "fontcolor=red", "penwidth=2", "counterexample=true"]
        out.append(f"  {_dot_quote(a)} -> {_dot_quote(b)} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def to_graphml(G: nx.MultiDiGraph) -> str:
    """GraphML by networkx (``nx.read_graphml`` reads it back)."""
    return "\n".join(nx.generate_graphml(_scalar_graph(G))) + "\n"


def render_graph(G: nx.MultiDiGraph, fmt: str) -> str:
    if fmt == "dot":
        return to_dot(G)
    if fmt == "graphml":
        return to_graphml(G)
    if fmt == "json":
        return json.dumps(to_json(G), indent=1) + "\n"
    raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def format_for(path: str | None, fmt: str | None) -> str:
    """``--format`` if given, else from the file's suffix (.dot/.gv, .graphml, .json), else DOT."""
    if fmt:
        return fmt
    if path:
        lower = path.lower()
        if lower.endswith(".graphml"):
            return "graphml"
        if lower.endswith(".json"):
            return "json"
    return "dot"


def action_counts(G: nx.MultiDiGraph) -> Counter[str]:
    """Edges per action name (the checker's coverage, when the graph is whole)."""
    return Counter(data["action"].split("(", 1)[0] for _a, _b, data in G.edges(data=True))


def trace_nodes(model: KafkaModel, trace: Sequence[Step]) -> list[str]:
    """The node ids a concrete trace passes through."""
    return [node_id(model.fingerprint(st.state)) for st in trace if st.state is not None]
