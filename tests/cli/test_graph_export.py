"""`isrcheck graph`: the exported state graph is the checker's, in three formats that parse.

Counts are compared with ``check --keep-going --json`` on the same configuration (the checker
explores everything then, as the graph does); the counterexample marked in the graph is the one
``check`` prints, step for step.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import networkx as nx
import pytest


CRASH = {"brokers": 3, "max_records": 1, "faults": {"crashes": 1}}  # NoCommittedWriteLost in 8
SPARES = {"brokers": 4, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 1}}  # brokers 3, 4 spare


def _config(tmp_path: Path, raw: dict[str, Any], name: str = "cfg.toml") -> str:
    """``raw`` (keys, and one level of tables) as a TOML file."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in raw.items() if not isinstance(v, dict)]
    for table, body in ((k, v) for k, v in raw.items() if isinstance(v, dict)):
        lines += [f"[{table}]"] + [f"{k} = {json.dumps(v)}" for k, v in body.items()]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def _check(cli, cfg: str, *extra: str) -> dict[str, Any]:
    _code, doc = cli.json("check", "--config", cfg, "--json", *extra)
    return doc


def _load_json_graph(path: Path) -> nx.MultiDiGraph:
    doc = json.loads(path.read_text())
    assert doc["format"] == "isrcheck-state-graph" and doc["version"] == 1
    return nx.node_link_graph(doc, edges="edges")


_DOT_NODE = re.compile(r'^  "([0-9a-f]{16})" \[(.*)\];$')
_DOT_EDGE = re.compile(r'^  "([0-9a-f]{16})" -> "([0-9a-f]{16})" \[(.*)\];$')
_DOT_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,\s]+)')


def _parse_dot(text: str) -> nx.MultiDiGraph:
    """A reader for the DOT subset `graph` writes (no pydot here): every line must be a header
    line, a node, an edge or the closing brace, and every attribute list must tokenize whole."""
    lines = text.splitlines()
    assert lines[0] == "digraph isrcheck {" and lines[-1] == "}"
    G = nx.MultiDiGraph()
    for line in lines[1:-1]:
        if line.startswith(("  graph [", "  node [", "  edge [")):
            continue
        m = _DOT_EDGE.match(line)
        if m:
            attrs = dict(_DOT_ATTR.findall(m.group(3)))
            assert ", ".join(f"{k}={v}" for k, v in attrs.items()) == m.group(3), line
            G.add_edge(m.group(1), m.group(2), **attrs)
            continue
        m = _DOT_NODE.match(line)
        assert m, f"not a DOT statement of ours: {line!r}"
        attrs = dict(_DOT_ATTR.findall(m.group(2)))
        assert ", ".join(f"{k}={v}" for k, v in attrs.items()) == m.group(2), line
        G.add_node(m.group(1), **attrs)
    return G


def _marked_path(G: nx.MultiDiGraph, flag: Any) -> list[str]:
    """The actions along the marked edges, in order from the marked initial node."""
    edges = [(a, b, d) for a, b, d in G.edges(data=True) if d.get("counterexample") == flag]
    nxt = {a: (b, d) for a, b, d in edges}
    assert len(nxt) == len(edges), "the marked edges branch"
    starts = set(nxt) - {b for _a, b, _d in edges}
    assert len(starts) == 1
    node, actions = starts.pop(), []
    while node in nxt:
        node, d = nxt[node]
        actions.append(d.get("action") or d.get("label"))
    return actions


@pytest.mark.parametrize("fmt", ["json", "graphml", "dot"])
def test_graph_counts_equal_the_checkers_and_the_counterexample_is_checks(cli, tmp_path, fmt):
    cfg = _config(tmp_path, CRASH)
    full = _check(cli, cfg, "--keep-going")
    first = _check(cli, cfg)["violations"][0]
    out = tmp_path / f"g.{fmt}"
    result = cli("graph", "--config", cfg, "--format", fmt, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert f"{full['distinct_states']:,} states, {full['transitions']:,} transitions" in result.stdout
    if fmt == "json":
        G = _load_json_graph(out)
        flag: Any = True
    elif fmt == "graphml":
        G = nx.read_graphml(out, force_multigraph=True)
        flag = True
    else:
        G = _parse_dot(out.read_text())
        flag = "true"
    assert G.number_of_nodes() == full["distinct_states"]
    # DOT draws a node's several self-loops as one edge with transitions=N (their labels would overlap)
    assert sum(int(d.get("transitions", 1)) for _a, _b, d in G.edges(data=True)) == full["transitions"]
    if fmt != "dot":
        assert G.graph["truncated"] is False
    want = [f"{s['action']['name']}({', '.join(map(str, s['action']['args']))})" for s in first["trace"][1:]]
    got = [a.strip('"') for a in _marked_path(G, flag)]
    assert len(got) == first["length"] == 8
    assert got == want
    marked = [n for n, d in G.nodes(data=True) if d.get("counterexample") == flag]
    assert len(marked) == first["length"] + 1
    if fmt == "dot":
        red = [d for _a, _b, d in G.edges(data=True) if d.get("color") == "red"]
        assert len(red) == first["length"]


def test_json_nodes_carry_the_whole_state_and_edges_the_action(cli, tmp_path):
    cfg = _config(tmp_path, CRASH)
    out = tmp_path / "g.json"
    assert cli("graph", "--config", cfg, "-o", str(out)).exit_code == 0  # format from the suffix
    G = _load_json_graph(out)
    initial = [d for _n, d in G.nodes(data=True) if d["initial"]]
    assert len(initial) == 1 and initial[0]["depth"] == 0
    state = initial[0]["state"]
    assert [b["id"] for b in state["brokers"]] == [1, 2, 3]
    assert state["zk"]["partitions"][0]["leader"] == 1
    actions = {d["action"].split("(")[0] for _a, _b, d in G.edges(data=True)}
    assert {"Produce", "Fetch", "Crash"} <= actions
    # a stutter step is a self-loop, and only those are
    assert all((a == b) == d["stutter"] for a, b, d in G.edges(data=True))


def test_graph_with_symmetry_has_one_node_per_orbit(cli, tmp_path):
    cfg = _config(tmp_path, SPARES)
    sizes = {}
    for flag in ("--symmetry", "--no-symmetry"):
        full = _check(cli, cfg, "--keep-going", flag)
        out = tmp_path / f"g{flag}.json"
        assert cli("graph", "--config", cfg, flag, "-o", str(out)).exit_code == 0
        G = _load_json_graph(out)
        assert (G.number_of_nodes(), G.number_of_edges()) == (full["distinct_states"], full["transitions"])
        assert ("orbit" in G.graph["symmetry"]) == (flag == "--symmetry")
        sizes[flag] = G.number_of_nodes()
    assert sizes["--symmetry"] < sizes["--no-symmetry"]


def test_max_states_refuses_a_larger_graph(cli, tmp_path, assert_input_error):
    cfg = _config(tmp_path, CRASH)
    out = tmp_path / "g.json"
    assert_input_error(cli("graph", "--config", cfg, "--max-states", "100", "-o", str(out)),
                       "more than 100 reachable states", "--truncate")
    assert not out.exists()


def test_truncate_keeps_the_first_states_and_says_so(cli, tmp_path):
    cfg = _config(tmp_path, CRASH)
    out = tmp_path / "g.graphml"
    result = cli("graph", "--config", cfg, "--max-states", "100", "--truncate", "-o", str(out))
    assert result.exit_code == 0
    assert "truncated" in result.stderr
    G = nx.read_graphml(out, force_multigraph=True)
    assert G.number_of_nodes() == 100
    assert G.graph["truncated"] is True and G.graph["truncated_by"] == "states"
    depths = [d["depth"] for _n, d in G.nodes(data=True)]
    assert max(depths) <= 5  # breadth first: the shallowest states


def test_max_depth_cuts_the_graph_at_that_depth(cli, tmp_path):
    cfg = _config(tmp_path, CRASH)
    result = cli("graph", "--config", cfg, "--max-depth", "2", "--format", "json")
    assert result.exit_code == 0
    G = nx.node_link_graph(json.loads(result.stdout), edges="edges")  # stdout without -o
    assert max(d["depth"] for _n, d in G.nodes(data=True)) == 2
    assert G.graph["truncated_by"] == "depth"


def test_graph_of_a_manifest_model_and_bad_input(cli, fake_manifest, tmp_path, assert_input_error):
    result = cli("graph", "tiny", "--format", "dot")
    assert result.exit_code == 0
    G = _parse_dot(result.stdout)
    assert G.number_of_nodes() == fake_manifest[0].states
    assert_input_error(cli("graph", "no-such-model"), "unknown model")
    assert_input_error(cli("graph", "tiny", "--set", "brokers=zero"), "brokers")
    assert_input_error(cli("graph", "tiny", "-o", str(tmp_path / "missing" / "g.dot")), "cannot write")


# ---------------------------------------------------------------------------- drawings (issue 31)
def test_dot_labels_tell_every_state_apart(cli, tmp_path):
    """replication's 289 states had 41 distinct labels (checkpoints and remote LEOs missing): every
    label is now unique, and the fields that tell two look-alikes apart are in it."""
    out = tmp_path / "g.dot"
    res = cli("graph", "replication", "-o", str(out))
    assert res.exit_code == 0, res.output
    G = _parse_dot(out.read_text())
    labels = [d["label"] for _n, d in G.nodes(data=True)]
    assert len(labels) == 289 and len(set(labels)) == len(labels)
    assert any("checkpoint=" in x for x in labels) and any("remote_leo[b2]=" in x for x in labels)


def test_dot_draws_one_self_loop_per_node_and_warns_past_a_readable_size(cli, tmp_path):
    out = tmp_path / "g.dot"
    res = cli("graph", "replication", "-o", str(out))
    assert "too many to read as a drawing" in res.stderr and "isrcheck report replication" in res.stderr
    G = _parse_dot(out.read_text())
    loops = [a for a, b in G.edges() if a == b]
    assert loops and len(loops) == len(set(loops))  # one loop per node, whatever it stands for
    small = _config(tmp_path, {"brokers": 3, "max_records": 1})
    res = cli("graph", "--config", small, "-o", str(tmp_path / "s.dot"))
    assert res.exit_code == 0 and res.stderr == ""  # 27 states: drawn without a warning
