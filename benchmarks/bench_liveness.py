"""Time and memory of the liveness checker (isrcheck.engine.liveness) on manifest models.

    .venv/bin/python benchmarks/bench_liveness.py             # the default models (a minute or two)
    .venv/bin/python benchmarks/bench_liveness.py --quick     # the first default model only
    .venv/bin/python benchmarks/bench_liveness.py --models seed-reassignment,replication-stress --max-states 500000
    make bench-liveness                                       # = bench_liveness.py

For each model, in a fresh interpreter (so that peak memory is that model's alone), the graph is
built with ``build_graph`` (every applicable liveness property of invariants/liveness.py, the model
built without symmetry as ``invariants.liveness.check`` does), then:

* graph: build time, states, edges, ``Graph.bytes`` and what it means per state and per GiB, the
  same with the fingerprint index's int objects counted (``Graph.bytes`` counts the index's hash
  table only), and the resident memory the build added at its peak (``getrusage().ru_maxrss`` after
  the build minus the resident size before it, /proc/self/statm: the graph, the BFS queue of states
  and whatever the model caches);
* components: the project's iterative Tarjan (``components(g, range(n))``) against networkx's
  ``strongly_connected_components`` on a ``DiGraph`` built from the same CSR arrays (its build time
  and size reported apart, size measured with tracemalloc), with an assertion that both give the
  same partition. SCC times are the fastest of ``--repeat`` (3) runs; memory of each SCC run is
  the tracemalloc peak of one more, traced run (the timed runs are untraced). The Kafka graphs are acyclic (every component is a single state), so
  each model also gets a ``+rev`` row: the same graph with every edge's reverse added, which makes
  each weakly connected part (here: all of it) one strongly connected component;
* verdicts: ``_Components(g)`` (the SCCs shared by every property) and ``lasso_for`` of every
  applicable property on the graph already built, then the whole ``invariants.liveness.check``
  (graph, components, verdicts and the replay of any lasso) from scratch.

The garbage collector stays on (as in a real check); ``gc.collect()`` runs before each timed part.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from typing import Any

import children

DEFAULT_MODELS = ["reassignment-broker-crash", "failover-misses-crash-kip-320", "deposed-controller-reassignment"]
GIB = 1 << 30
MIB = 1 << 20


# ---------------------------------------------------------------------------- one model (child)
def _maxrss_bytes() -> int:
    import resource

    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib * 1024 if sys.platform != "darwin" else kib  # Linux reports KiB, macOS bytes


def _current_rss_bytes() -> int:
    """Resident memory now (/proc/self/statm on Linux; elsewhere the peak so far, which can only
    understate the growth that follows)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return _maxrss_bytes()


def _index_ints_bytes(g: Any) -> int:
    """The int objects the fingerprint index holds (keys, and values outside CPython's small-int cache),
    which ``Graph.bytes`` (``sys.getsizeof`` of the dict) leaves out."""
    total = 0
    for fp, v in g.index.items():
        total += sys.getsizeof(fp)
        if not -5 <= v <= 256:
            total += sys.getsizeof(v)
    return total


def _with_reverse(g: Any) -> Any:
    """A graph with the rows of ``g`` plus every edge reversed (only offsets and dst are filled:
    that is all ``components`` reads)."""
    from array import array

    from isrcheck.engine.liveness import Graph

    n = g.states
    offsets, dst = g.offsets, g.dst
    rev: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for k in range(offsets[v], offsets[v + 1]):
            rev[dst[k]].append(v)
    h = Graph([])
    h.offsets = array("q", [0])
    h.dst = array("i")
    for v in range(n):
        h.dst.extend(dst[offsets[v]:offsets[v + 1]])
        h.dst.extend(rev[v])
        h.offsets.append(len(h.dst))
    return h


def _to_digraph(g: Any, n: int) -> Any:
    import networkx as nx

    offsets, dst = g.offsets, g.dst
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from((v, dst[k]) for v in range(n) for k in range(offsets[v], offsets[v + 1]))
    return G


def _same_partition(ours: list[list[int]], theirs: list[set[int]], n: int) -> None:
    """Assert that both lists of components partition range(n) identically."""
    from array import array

    comp = array("i", [-1]) * n
    for i, c in enumerate(ours):
        for v in c:
            assert comp[v] == -1, f"state {v} in two of the project's components"
            comp[v] = i
    assert -1 not in comp, "a state in none of the project's components"
    assert len(ours) == len(theirs), f"{len(ours)} components against networkx's {len(theirs)}"
    for s in theirs:
        ids = {comp[v] for v in s}
        assert len(ids) == 1 and len(ours[ids.pop()]) == len(s), "networkx splits the states differently"


def _timed(fn: Any, repeat: int) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs of ``fn()`` and the last result."""
    import gc

    best, out = float("inf"), None
    for _ in range(max(1, repeat)):
        out = None
        gc.collect()
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _traced_peak(fn: Any) -> tuple[int, int, Any]:
    """(peak, retained) bytes tracemalloc sees during ``fn()``, and its result."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        out = fn()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, current, out


def _scc_figures(g: Any, n: int, repeat: int) -> dict[str, Any]:
    import gc

    import networkx as nx
    from isrcheck.engine.liveness import components

    r: dict[str, Any] = {}
    r["tarjan_s"], ours = _timed(lambda: components(g, range(n)), repeat)
    ours = None
    r["tarjan_peak"], _, ours = _traced_peak(lambda: components(g, range(n)))
    sizes = [len(c) for c in ours]
    r["sccs"] = len(ours)
    r["nontrivial"] = sum(1 for s in sizes if s > 1)
    r["largest"] = max(sizes, default=0)

    r["nx_build_s"], G = _timed(lambda: _to_digraph(g, n), 1)
    G = None
    gc.collect()
    _, r["nx_bytes"], G = _traced_peak(lambda: _to_digraph(g, n))
    r["nx_edges"] = G.number_of_edges()
    r["nx_scc_s"], theirs = _timed(lambda: list(nx.strongly_connected_components(G)), repeat)
    theirs = None
    r["nx_scc_peak"], _, theirs = _traced_peak(lambda: list(nx.strongly_connected_components(G)))
    _same_partition(ours, theirs, n)
    r["same"] = True
    return r


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Every figure of one model (called in a child interpreter)."""
    import gc

    from isrcheck.invariants import build_model
    from isrcheck.invariants import liveness as kafka_liveness
    from isrcheck.engine import liveness

    from isrcheck import native
    from isrcheck.inputs import manifest

    r: dict[str, Any] = {"model": spec["model"], "load_start": os.getloadavg()[0], "build": native.describe(),
                         "liveness_module": "compiled" if not liveness.__file__.endswith(".py") else "pure Python"}
    cfg = manifest.get(spec["model"]).config
    props = kafka_liveness.applicable_liveness(cfg)
    model = build_model(cfg, symmetry=False, properties=[])
    r["properties"] = [p.name for p in props]

    # ---- the graph
    gc.collect()
    rss0 = _current_rss_bytes()
    t = time.perf_counter()
    g = liveness.build_graph(model, props, max_states=spec.get("max_states"))
    r["build_s"] = time.perf_counter() - t
    r["rss_growth"] = _maxrss_bytes() - rss0
    n = g.states
    r.update(states=n, edges=g.edges, complete=g.complete, graph_bytes=g.bytes, index_ints=_index_ints_bytes(g))

    # ---- components, as the Kafka graph is and with every edge reversed too
    r["scc"] = _scc_figures(g, n, spec["repeat"])
    if spec.get("cyclic", True):
        h = _with_reverse(g)
        r["scc_rev"] = _scc_figures(h, n, spec["repeat"])
        r["scc_rev"]["edges"] = len(h.dst)
        h = None
    gc.collect()

    # ---- verdicts on the graph built above, then the whole check from scratch
    if g.complete:
        r["components_s"], comps = _timed(lambda: liveness._Components(g), 1)
        holds: dict[str, bool] = {}
        t = time.perf_counter()
        for k, p in enumerate(props):
            holds[p.name] = liveness.lasso_for(g, p, k, comps) is None
        r["lasso_s"] = time.perf_counter() - t
        r["holds"] = holds
        comps = None
        g = model = None
        gc.collect()
        t = time.perf_counter()
        result = kafka_liveness.check(cfg)
        r["check_s"] = time.perf_counter() - t
        r["check_holds"] = {v.property: v.holds for v in result.verdicts}
        assert r["check_holds"] == holds, f"check() and lasso_for disagree: {r['check_holds']} != {holds}"
        expected = {e.property: e.holds for e in (manifest.get(spec["model"]).liveness or ())}
        r["expected_mismatch"] = {k: v for k, v in holds.items() if k in expected and expected[k] != v}
    r["load_end"] = os.getloadavg()[0]
    return r


def run_child(spec: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    return children.run_child(__file__, spec, timeout, pure=bool(spec.get("pure")))


# ---------------------------------------------------------------------------- the tables
def table(columns: list[tuple[str, str, int]], rows: list[list[Any]]) -> list[str]:
    def line(values: list[Any]) -> str:
        return "  ".join(f"{v!s:{a}{w}}" for v, (_, a, w) in zip(values, columns)).rstrip()

    return [line([c for c, _, _ in columns]), line(["-" * w for _, _, w in columns])] + [line(r) for r in rows]


def mib(b: float) -> str:
    return f"{b / MIB:.1f}"


def per_gib(count: int, nbytes: int) -> str:
    return f"{count * GIB / nbytes / 1e6:.1f}M" if nbytes > 0 else "-"


GRAPH_COLUMNS = [("model", "<", 31), ("states", ">", 7), ("edges", ">", 7), ("build s", ">", 7),
                 ("states/s", ">", 8), ("Graph MiB", ">", 9), ("B/state", ">", 7), ("states/GiB", ">", 10),
                 ("edges/GiB", ">", 9), ("+ints B/st", ">", 10), ("RSS+ MiB", ">", 8), ("RSS B/st", ">", 8)]

SCC_COLUMNS = [("model", "<", 36), ("edges", ">", 7), ("SCCs", ">", 6), (">1", ">", 3), ("largest", ">", 7),
               ("tarjan s", ">", 8), ("tarjan MiB", ">", 10), ("nx build s", ">", 10), ("nx MiB", ">", 7),
               ("nx B/st", ">", 7), ("nx scc s", ">", 8), ("nx scc MiB", ">", 10), ("scc x", ">", 5),
               ("+build x", ">", 8), ("same", "<", 4)]

VERDICT_COLUMNS = [("model", "<", 31), ("props", ">", 5), ("_Components s", ">", 13), ("lasso_for s", ">", 11),
                   ("check s", ">", 7), ("verdicts", "<", 60)]


def graph_row(r: dict[str, Any]) -> list[Any]:
    n, gb = r["states"], r["graph_bytes"]
    return [r["model"] + ("" if r["complete"] else " (cut)"), n, r["edges"], f"{r['build_s']:.2f}",
            f"{n / r['build_s']:,.0f}", mib(gb), f"{gb / n:.0f}", per_gib(n, gb), per_gib(r["edges"], gb),
            f"{(gb + r['index_ints']) / n:.0f}", mib(r["rss_growth"]), f"{r['rss_growth'] / n:.0f}"]


def scc_row(name: str, edges: int, n: int, s: dict[str, Any]) -> list[Any]:
    return [name, edges, s["sccs"], s["nontrivial"], s["largest"], f"{s['tarjan_s']:.3f}", mib(s["tarjan_peak"]),
            f"{s['nx_build_s']:.3f}", mib(s["nx_bytes"]), f"{s['nx_bytes'] / n:.0f}", f"{s['nx_scc_s']:.3f}",
            mib(s["nx_scc_peak"]), f"{s['nx_scc_s'] / s['tarjan_s']:.1f}",
            f"{(s['nx_build_s'] + s['nx_scc_s']) / s['tarjan_s']:.1f}", "yes" if s["same"] else "NO"]


def verdict_row(r: dict[str, Any]) -> list[Any]:
    if "holds" not in r:
        return [r["model"], len(r["properties"]), "-", "-", "-", "graph cut short (--max-states): no verdict"]
    broken = [k for k, v in r["holds"].items() if not v]
    words = f"{len(r['holds']) - len(broken)} hold" + (f"; broken: {', '.join(broken)}" if broken else "")
    if r["expected_mismatch"]:
        words += f"  !! manifest expects otherwise: {', '.join(r['expected_mismatch'])}"
    return [r["model"], len(r["properties"]), f"{r['components_s']:.3f}", f"{r['lasso_s']:.3f}",
            f"{r['check_s']:.2f}", words]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", metavar="A,B", help=f"comma-separated manifest models (default: {','.join(DEFAULT_MODELS)})")
    ap.add_argument("--quick", action="store_true", help="only the first model")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each SCC timing; the fastest is shown")
    ap.add_argument("--no-reverse", action="store_true", help="skip the +rev rows (the graph with reversed edges)")
    ap.add_argument("--pure", action="store_true", help="run the pure-Python build (ISRCHECK_PURE=1)")
    children.add_options(ap, max_states="cut every graph at this many states (no verdicts are then drawn)")
    args = ap.parse_args(argv)

    if children.served_as_child(args, measure):
        return 0

    names = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else list(DEFAULT_MODELS)
    if args.quick:
        names = names[:1]
    if not names:
        print("bench_liveness.py: no model given", file=sys.stderr)
        return 2
    from isrcheck.specs.manifest import ManifestError

    from isrcheck.inputs import manifest

    for name in names:
        try:
            manifest.get(name)
        except ManifestError:
            print(f"bench_liveness.py: unknown model {name!r} (`isrcheck list` shows the models of "
                  f"specs/models.toml)", file=sys.stderr)
            return 2
    try:
        import networkx
    except ImportError:
        print("bench_liveness.py: networkx is not installed in this environment", file=sys.stderr)
        return 2

    load_start = os.getloadavg()[0]
    print(f"# isrcheck liveness benchmark  python {platform.python_version()}  networkx {networkx.__version__}  "
          f"{os.cpu_count()} CPUs  load average {load_start:.2f}  {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    results: list[dict[str, Any]] = []
    failed: list[str] = []
    for name in names:
        spec = {"model": name, "repeat": args.repeat, "max_states": args.max_states, "cyclic": not args.no_reverse,
                "pure": args.pure}
        print(f"# measuring {name} ...", file=sys.stderr, flush=True)
        try:
            results.append(run_child(spec, args.timeout))
        except RuntimeError as e:
            print(f"!! {name}: {e}", flush=True)
            failed.append(name)
    if results:
        first = results[0]
        print(f"# build: {first['build']}; engine/liveness.py (graph, Tarjan, verdicts): {first['liveness_module']}")
        print()
        print("graph (build_graph; B/state counts edges; +ints = with the index's int objects; RSS+ = peak RSS "
              "during the build (getrusage ru_maxrss) minus RSS before it (/proc/self/statm))")
        print("\n".join(table(GRAPH_COLUMNS, [graph_row(r) for r in results])))
        print()
        print("strongly connected components (project Tarjan vs networkx; s = fastest of --repeat, untraced; "
              "MiB = tracemalloc peak of a traced run, nx MiB = DiGraph retained; x = networkx time / Tarjan time)")
        rows = []
        for r in results:
            rows.append(scc_row(r["model"], r["edges"], r["states"], r["scc"]))
            if "scc_rev" in r:
                rows.append(scc_row(r["model"] + " +rev", r["scc_rev"]["edges"], r["states"], r["scc_rev"]))
        print("\n".join(table(SCC_COLUMNS, rows)))
        print()
        print("verdicts (_Components + lasso_for of every applicable property on the built graph; "
              "check s = invariants.liveness.check from scratch)")
        print("\n".join(table(VERDICT_COLUMNS, [verdict_row(r) for r in results])))
    children.finish(args.json, results, load_start)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
