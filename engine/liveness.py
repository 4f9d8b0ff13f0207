"""Liveness under weak fairness: does every behaviour make progress, not only stay safe?

A liveness property here is a *leads-to*, ``P ~> Q`` (TLA+'s ``[](P => <>Q)``): whenever ``P``
holds, ``Q`` holds then or later. ``<>Q`` is the case ``P = TRUE`` in the initial state. A
property has *instances* (one per partition, per broker and partition, per record, ...); its
``masks(state)`` gives two bitmasks over them, the instances whose premise holds and those whose
goal holds, so one pass over the graph serves them all.

Fairness is weak fairness of action *instances* (``WF_vars(Fetch(2, 0))`` for each follower and
partition, as a TLA+ specification writes ``\\A r : WF_vars(Fetch(r))``): the model's
``fair_key(action)`` names the instance an action belongs to, or ``None`` for an action that
need never happen (a crash, a client's write, an administrator's request). As in TLA+, an action is
*enabled* only if taking it changes the state (``ENABLED <<A>>_vars``), and a behaviour may stutter
forever wherever no fair action is enabled: a state where nothing fair can happen is a loop of its own.

**The algorithm.** The reachable graph is built once (breadth first, so every state knows a shortest
path from an initial state) and kept as flat arrays: edges in compressed rows, a label per edge (its
fair instance, or -1). Its strongly connected components are found once (an iterative Tarjan). For
one instance of ``P ~> Q``, a counterexample is a *lasso*: a path to a state where ``P`` and not
``Q`` hold, then ``not Q`` forever along a fair cycle. Cycles avoiding ``Q`` live inside a component
of the graph restricted to ``not Q``, a refinement of the full graph's components; only the full
graph's non-trivial components need recomputing. Under weak fairness a component ``D`` holds a fair
cycle iff every instance enabled in *all* of its states is taken on some edge inside ``D`` (a cycle
through all of ``D`` then satisfies every fairness condition; a component failing the test contains
no fair cycle at all, so no further splitting is needed, unlike strong fairness). A multi-source
shortest-path search from the premise states (each starting at its breadth-first depth) through
``not Q`` states finds the shortest stem to such a component; the loop is then built inside it
greedily, walking to the nearest edge or state that discharges a pending fairness obligation and
back. The stem is shortest; the loop is short but not always minimal.

The passes over every state and edge run in C where the build is compiled, each following the
Python here that defines it: the whole graph's components (engine/_scc.c's ``nontrivial``), each
instance's stem search (``quiet`` and ``stem`` there), and the assembly of a parallel search's
graph from the workers' parts (engine/_assemble.c). On 6,994,032 states and 23,734,034 edges they
took 72 s in compiled Python and take 6 s, the rest of a check being its search.

Memory: fingerprints (8 bytes), depth and parent (4 + 4), a row offset (8) and two masks per
property (8 + 8) per state, plus the index from fingerprint to state number: engine/_parentmap.c's
flat table when compiled (16-byte slots at a load of at most 3/4: 21-43 bytes per state), a dict
in the pure build (about 100 bytes per state with its integer objects); 8 bytes per edge (target
and label). :attr:`Graph.bytes` reports what a run used.

The Kafka models' graphs are acyclic (every perturbation is budgeted, and no healing step returns
to an earlier state), so their counterexamples end where the behaviour stutters; the cycle search
is general, and tested on models with cycles.
"""
from __future__ import annotations

import gc
import heapq
import sys
import time
from array import array
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from .core import Model, ModelFault, Progress, Step, Violation, paused_gc
from .explore import replay_fingerprints
from .parentmap import new_parent_map

NO_LABEL = -1
#: added to a state number stored in the fingerprint index: engine/_parentmap.c's table stores
#: fingerprint -> fingerprint and refuses a value equal to its key (its mark of an initial state),
#: which a small state number could equal in a model whose fingerprints are small integers; no
#: fingerprint of a real model lands in [2**62, 2**62 + states) but by a 2**-64 chance per state
INDEX_TAG = 1 << 62


class LeadsTo(NamedTuple):
    """``P ~> Q`` for each of ``instances``: ``masks(state)`` returns (premise bits, goal bits),
    bit ``i`` standing for ``instances[i]``."""

    name: str
    instances: tuple[str, ...]
    masks: Callable[[Any], tuple[int, int]]
    spec: str = ""
    description: str = ""


class FairModel(Model[Any, Any], Protocol):
    """A model that says which actions are weakly fair."""

    def fair_key(self, action: Any) -> Hashable | None:
        """The fairness instance ``action`` belongs to, or None if it need never be taken."""
        ...


class LivenessError(ValueError):
    """A liveness check that cannot run (too many instances, a bad request); one line."""


# ---------------------------------------------------------------------------- the graph
class Graph:
    """The reachable graph as flat arrays (see the module docstring for the layout)."""

    def __init__(self, properties: Sequence[LeadsTo]) -> None:
        self.index: Any = new_parent_map()  # fingerprint -> state number (a flat C table when compiled)
        self.fps = array("q")
        self.depth = array("i")
        self.parent = array("i")
        self.offsets = array("q", [0])
        self.dst = array("i")
        self.label = array("i")
        self.keys: list[Hashable] = []  # label -> fairness instance
        self.premise = [array("Q") for _ in properties]
        self.goal = [array("Q") for _ in properties]
        self.complete = True
        self.seconds = 0.0

    @property
    def states(self) -> int:
        return len(self.fps)

    @property
    def edges(self) -> int:
        return len(self.dst)

    @property
    def bytes(self) -> int:
        """Bytes held by the graph: its arrays and the fingerprint index, with the index's integer
        objects (a fingerprint and a state number per entry; ``sys.getsizeof`` of a dict counts
        only its table)."""
        arrays = [self.fps, self.depth, self.parent, self.offsets, self.dst, self.label, *self.premise, *self.goal]
        flat = sum(a.itemsize * len(a) for a in arrays)
        if not isinstance(self.index, dict):  # engine/_parentmap.c's table: its slots, counted by itself
            return int(self.index.nbytes) + flat
        n = len(self.index)
        ints = n * (sys.getsizeof(1 << 62) + sys.getsizeof(INDEX_TAG + n))
        return sys.getsizeof(self.index) + ints + flat

    def number(self, fp: int) -> int:
        """The state number of the state with fingerprint ``fp`` (KeyError if it is not in the graph)."""
        w = self.index.get(fp)
        if w is None:
            raise KeyError(fp)
        return int(w) - INDEX_TAG

    def out(self, v: int) -> range:
        return range(self.offsets[v], self.offsets[v + 1])

    def fair_enabled(self, v: int) -> set[int]:
        """The fair instances enabled at ``v`` (self-loops are left out when the graph is built)."""
        lab = self.label
        return {lab[k] for k in self.out(v) if lab[k] != NO_LABEL}

    def chain(self, v: int) -> list[int]:
        """State indices of a shortest path from an initial state to ``v``."""
        out = [v]
        parent = self.parent
        while parent[v] >= 0:
            v = parent[v]
            out.append(v)
        out.reverse()
        return out


def build_graph(model: FairModel, properties: Sequence[LeadsTo], *, max_states: int | None = None,
                max_depth: int | None = None, progress: Callable[[Progress], None] | None = None,
                progress_every: float = 0.5) -> Graph:
    """Explore ``model`` breadth first, keeping every edge that changes the state.

    A step raising :class:`ModelFault` is left out (the safety search reports it). With
    ``max_states`` or ``max_depth`` the graph may be cut short: :attr:`Graph.complete` is then
    False and no verdict can be drawn from it (a state left unexpanded would look like one where
    nothing can happen).
    """
    resume = paused_gc()  # as in the checker: states are trees of tuples, freed by reference counting
    try:
        return _build(model, properties, max_states, max_depth, progress, progress_every)
    finally:
        if resume:
            gc.enable()


class GraphBuilder:
    """Builds a :class:`Graph` from a breadth-first search's states and steps, in discovery order:
    the one definition of state numbers, depths, parents, the masks per state and the fair label
    per edge, used by :func:`build_graph`'s own search and by the safety search when it records the
    graph as it goes (:class:`~isrcheck.engine.checker.Checker`'s ``graph``: the reachable states
    explored once for safety and liveness, where they used to be explored twice).

    ``initial(state, fp)`` for each distinct initial state, then ``edge(src_fp, state, fp, action,
    new)`` for every step of the search that changes the state, in the search's order (the sources
    in the order they were numbered, each source's steps in action order; ``new``: the search meets
    ``fp`` for the first time), and ``finish(complete)`` once."""

    def __init__(self, model: FairModel, properties: Sequence[LeadsTo]) -> None:
        for p in properties:
            if len(p.instances) > 64:
                raise LivenessError(f"{p.name}: {len(p.instances)} instances; at most 64 are supported")
        self.graph = Graph(properties)
        self.properties = list(properties)
        self._masks = [p.masks for p in properties]
        self._labels: dict[Hashable, int] = {}
        self._fair_key = model.fair_key
        self._source = -1  # the state whose steps are being recorded
        self._start = time.perf_counter()

    def add(self, state: Any, fp: int, d: int, par: int) -> int:
        """Number a newly found state (its depth ``d``, its parent's number ``par``, -1 for an
        initial state)."""
        g = self.graph
        v = len(g.fps)
        g.index[fp] = v + INDEX_TAG
        g.fps.append(fp)
        g.depth.append(d)
        g.parent.append(par)
        premise, goal = g.premise, g.goal
        for k, m in enumerate(self._masks):
            pm, gm = m(state)
            premise[k].append(pm)
            goal[k].append(gm)
        return v

    def initial(self, state: Any, fp: int) -> None:
        self.add(state, fp, 0, -1)

    def close_until(self, v: int) -> None:
        """Every source before ``v`` has all its steps recorded: their rows end here (the edges
        recorded next are ``v``'s)."""
        g = self.graph
        offsets, end = g.offsets, len(g.dst)
        while len(offsets) <= v:
            offsets.append(end)

    def edge(self, src: int, state: Any, fp: int, action: Any, new: bool) -> None:
        """A step from the state with fingerprint ``src`` to ``state`` (fingerprint ``fp``, found
        for the first time when ``new``) taking ``action``."""
        g = self.graph
        v = int(g.index[src]) - INDEX_TAG
        if v != self._source:
            self.close_until(v)
            self._source = v
        w = self.add(state, fp, g.depth[v] + 1, v) if new else int(g.index[fp]) - INDEX_TAG
        self.link(w, action)

    def link(self, w: int, action: Any) -> None:
        """The current source's next edge, to state number ``w``."""
        key = self._fair_key(action)
        if key is None:
            lab = NO_LABEL
        else:
            lab = self._labels.get(key, -2)
            if lab == -2:
                g = self.graph
                lab = len(g.keys)
                self._labels[key] = lab
                g.keys.append(key)
        self.graph.dst.append(w)
        self.graph.label.append(lab)

    def assemble(self, init: Sequence[tuple[int, int, Any]], parts: Sequence[dict[str, Any]], level_shift: int,
                 action_bits: int, rank_mask: int) -> Graph:
        """The graph of a parallel search (engine/parallel.py) from its parts: ``init`` the distinct
        initial states as (discovery key, fingerprint, state), and each worker's ``part``: every step
        it took that changes the state (source and target fingerprints, its own fair label numbers
        and their instances) and every state it settled (discovery key, fingerprint, masks), each in
        its own key order.

        The states are numbered in discovery-key order, which is the single process's discovery
        order (the parallel checker's equivalence argument), a state's parent is the state of the
        previous level whose rank its key holds, and each row lists its source's steps in action
        order (one worker expanded each state): so the graph is the one :func:`build_graph` builds,
        array for array. engine/_assemble.c does both passes where it is built and compiled code is
        wanted (the index then being engine/_parentmap.c's table); the Python loops below are the
        definition it follows, and what a pure build (a dict index) runs."""
        g = self.graph
        if len(g.fps) or len(g.dst):
            raise LivenessError("a graph is assembled once, into an empty builder")
        for _key, fp, state in sorted(init, key=lambda e: e[0]):
            self.add(state, fp, 0, -1)
        native = None if isinstance(g.index, dict) else _assembly()
        if native is not None:
            merge, rows = native
            self._settle_native(merge, parts, level_shift, action_bits, rank_mask)
            self._rows_native(rows, parts)
        else:
            self._settle_parts(parts, level_shift, action_bits, rank_mask)
            self._rows_of_parts(parts)
        g.seconds = time.perf_counter() - self._start
        return g

    def _settle_parts(self, parts: Sequence[dict[str, Any]], level_shift: int, action_bits: int,
                      rank_mask: int) -> None:
        """Number the workers' settled states: their ascending runs of keys merged, level by level,
        each level in key order (the initial states, level 0, are numbered already)."""
        g = self.graph
        fps, depth, parent, index = g.fps, g.depth, g.parent, g.index
        premise, goal = g.premise, g.goal
        nprops = len(self._masks)
        runs_keys: list[array[int]] = []
        runs_fps: list[array[int]] = []
        runs_masks: list[list[array[int]]] = []
        for part in parts:
            ks, fs = array("q"), array("q")
            ks.frombytes(part["keys"])
            fs.frombytes(part["fps"])
            ms = []
            for raw in part["masks"]:
                a = array("Q")
                a.frombytes(raw)
                ms.append(a)
            runs_keys.append(ks)
            runs_fps.append(fs)
            runs_masks.append(ms)
        level_start = [0, len(fps)]
        level = 0
        pos = [0] * len(parts)
        lens = [len(k) for k in runs_keys]
        while True:
            w = -1
            best = 0
            for r in range(len(parts)):
                if pos[r] < lens[r]:
                    k = runs_keys[r][pos[r]]
                    if w < 0 or k < best:
                        w, best = r, k
            if w < 0:
                break
            i = pos[w]
            pos[w] = i + 1
            lv = best >> level_shift
            while level < lv - 1:  # a new level begins: its parents' level starts where the last ended
                level += 1
                level_start.append(len(fps))
            v = len(fps)
            fp = runs_fps[w][i]
            index[fp] = v + INDEX_TAG
            fps.append(fp)
            depth.append(lv)
            parent.append(level_start[lv - 1] + ((best >> action_bits) & rank_mask))
            ms = runs_masks[w]
            for k in range(nprops):
                premise[k].append(ms[2 * k][i])
                goal[k].append(ms[2 * k + 1][i])

    def _rows_of_parts(self, parts: Sequence[dict[str, Any]]) -> None:
        """The rows: each source's steps, found by its fingerprint, in the order its worker took them."""
        g = self.graph
        index = g.index
        n = len(g.fps)
        row_part = array("i", [-1]) * n
        row_start = array("q", [0]) * n
        row_end = array("q", [0]) * n
        srcs: list[array[int]] = []
        dsts: list[array[int]] = []
        labs: list[array[int]] = []
        maps: list[list[int]] = []
        for r, part in enumerate(parts):
            es, ed, el = array("q"), array("q"), array("i")
            es.frombytes(part["e_src"])
            ed.frombytes(part["e_dst"])
            el.frombytes(part["e_lab"])
            srcs.append(es)
            dsts.append(ed)
            labs.append(el)
            maps.append([-2] * len(part["labels"]))
            k = 0
            m = len(es)
            while k < m:
                src = es[k]
                j = k + 1
                while j < m and es[j] == src:
                    j += 1
                v = int(index[src]) - INDEX_TAG
                row_part[v], row_start[v], row_end[v] = r, k, j
                k = j
        offsets, dst, label, keys = g.offsets, g.dst, g.label, g.keys
        labels = self._labels
        for v in range(n):
            r = row_part[v]
            if r >= 0:
                ed, el, mp, instances = dsts[r], labs[r], maps[r], parts[r]["labels"]
                for k in range(row_start[v], row_end[v]):
                    dst.append(int(index[ed[k]]) - INDEX_TAG)
                    lab = el[k]
                    if lab >= 0:
                        glob = mp[lab]
                        if glob == -2:
                            inst = instances[lab]
                            got = labels.get(inst)
                            if got is None:
                                got = labels[inst] = len(keys)
                                keys.append(inst)
                            glob = mp[lab] = got
                        lab = glob
                    label.append(lab)
            offsets.append(len(dst))

    def _settle_native(self, merge: Callable[..., None], parts: Sequence[dict[str, Any]], level_shift: int,
                       action_bits: int, rank_mask: int) -> None:
        """:meth:`_settle_parts` in engine/_assemble.c: the graph's state arrays sized once and
        written in place, then every fingerprint numbered in the index in one call."""
        g = self.graph
        first = len(g.fps)
        settled = sum(len(p["keys"]) // 8 for p in parts)
        out_masks: list[array[int]] = []
        for k in range(len(self._masks)):
            out_masks += [g.premise[k], g.goal[k]]
        for a in [g.fps, g.depth, g.parent, *out_masks]:
            _extend(a, settled)
        merge([p["keys"] for p in parts], [p["fps"] for p in parts], [p["masks"] for p in parts],
              g.fps, g.depth, g.parent, out_masks, first, level_shift, action_bits, rank_mask)
        g.index.enumerate(g.fps, INDEX_TAG)  # the initial states again, with the same numbers

    def _rows_native(self, rows: Callable[..., list[int]], parts: Sequence[dict[str, Any]]) -> None:
        """:meth:`_rows_of_parts` in engine/_assemble.c, on the steps' ends as state numbers (read
        from the index in bulk); each worker's labels named by one canonical number per instance, so
        that the C gives the graph's labels in the order the Python does."""
        g = self.graph
        index = g.index
        srcs: list[array[int]] = []
        dsts: list[array[int]] = []
        canon: list[array[int]] = []
        instances: dict[Hashable, int] = {}
        for part in parts:
            steps = len(part["e_src"]) // 8
            s, d = array("i", bytes(4 * steps)), array("i", bytes(4 * steps))
            index.numbers(part["e_src"], INDEX_TAG, s)
            index.numbers(part["e_dst"], INDEX_TAG, d)
            srcs.append(s)
            dsts.append(d)
            canon.append(array("i", [instances.setdefault(inst, len(instances)) for inst in part["labels"]]))
        order = list(instances)
        glob = array("i", [self._labels.get(inst, -2) for inst in order])
        edges = sum(len(s) for s in srcs)
        _extend(g.offsets, len(g.fps))
        _extend(g.dst, edges)
        _extend(g.label, edges)
        fresh = rows(srcs, dsts, [p["e_lab"] for p in parts], canon, glob, len(g.keys), g.offsets, g.dst, g.label)
        for c in fresh:
            self._labels[order[c]] = len(g.keys)
            g.keys.append(order[c])

    def finish(self, complete: bool) -> Graph:
        """The graph: every state's row closed; ``complete`` False if the search stopped short (then
        no verdict can be drawn from it)."""
        g = self.graph
        self.close_until(len(g.fps))
        g.complete = g.complete and complete
        g.seconds = time.perf_counter() - self._start
        return g


def _extend(a: array[int], count: int) -> None:
    """``count`` zeros appended to ``a``: room that engine/_assemble.c writes in place (from a
    zeroed bytes object, the kernel's untouched pages: twice as fast as a repeated array)."""
    a.frombytes(bytes(a.itemsize * count))


def _assembly() -> tuple[Callable[..., None], Callable[..., list[int]]] | None:
    """engine/_assemble.c's ``merge`` and ``rows`` where they are built and compiled code is
    wanted, else None (a pure install, or ``ISRCHECK_PURE=1``: the Python loops)."""
    from isrcheck import native

    if native.compiled_wanted():
        try:
            from ._assemble import merge, rows
        except ImportError:  # a pure install (ISRCHECK_BUILD_PURE=1)
            return None
        return merge, rows
    return None


def _build(model: FairModel, properties: Sequence[LeadsTo], max_states: int | None, max_depth: int | None,
           progress: Callable[[Progress], None] | None, progress_every: float) -> Graph:
    b = GraphBuilder(model, properties)
    g = b.graph
    index, fps, depth = g.index, g.fps, g.depth
    fingerprint, actions, next_state = model.fingerprint, model.actions, model.next_state
    start = last = time.perf_counter()
    complete = True
    queue: deque[Any] = deque()
    for s in model.init_states():
        fp = fingerprint(s)
        if fp not in index:
            b.initial(s, fp)
            queue.append(s)
    v = 0
    while queue:
        s = queue.popleft()
        b.close_until(v)
        d = depth[v]
        fp = fps[v]
        if max_depth is not None and d >= max_depth:
            complete = False
            v += 1
            continue
        for a in actions(s):
            try:
                t = next_state(s, a)
            except ModelFault:
                continue
            tfp = fingerprint(t)
            if tfp == fp:
                continue  # a step that changes nothing: stuttering, never a fair step
            w = index.get(tfp)
            if w is not None:
                w -= INDEX_TAG
            else:
                if max_states is not None and len(fps) >= max_states:
                    complete = False
                    continue
                w = b.add(t, tfp, d + 1, v)
                queue.append(t)
            b.link(w, a)
        v += 1
        if progress is not None:
            now = time.perf_counter()
            if now - last >= progress_every:
                last = now
                progress(Progress(len(fps), d, len(queue), now - start))
    b.finish(complete)
    if progress is not None:
        progress(Progress(len(fps), depth[-1] if len(depth) else 0, 0, g.seconds))
    return g


# ---------------------------------------------------------------------------- components
def components(g: Graph, nodes: Iterable[int], inside: Callable[[int], bool] | None = None) -> list[list[int]]:
    """Strongly connected components of the subgraph induced by ``nodes`` (an iterative Tarjan).

    ``inside(v)`` says whether ``v`` belongs to the subgraph (None: every node of ``g``). Every
    node of ``nodes`` is in exactly one component; a component of one node has no edge inside
    (self-loops are not stored).
    """
    offsets, dst = g.offsets, g.dst
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, offsets[root])]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, k = work[-1]
            end = offsets[v + 1]
            descended = False
            while k < end:
                w = dst[k]
                k += 1
                if inside is not None and not inside(w):
                    continue
                if w not in index:
                    work[-1] = (v, k)
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, offsets[w]))
                    descended = True
                    break
                if w in on_stack and index[w] < low[v]:
                    low[v] = index[w]
            if descended:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def is_fair(g: Graph, comp: Sequence[int], members: set[int] | None = None) -> bool:
    """Whether component ``comp`` holds a fair cycle: every instance enabled in all its states is
    taken on an edge inside it. A single state qualifies iff no fair instance is enabled there."""
    if len(comp) == 1:
        v = comp[0]
        lab = g.label
        return all(lab[k] == NO_LABEL for k in g.out(v))
    members = members if members is not None else set(comp)
    always: set[int] | None = None
    for v in comp:
        en = g.fair_enabled(v)
        always = en if always is None else always & en
        if not always:
            return True
    assert always is not None
    dst, lab = g.dst, g.label
    for v in comp:
        for k in g.out(v):
            if lab[k] in always and dst[k] in members:
                always.discard(lab[k])
                if not always:
                    return True
    return False


# ---------------------------------------------------------------------------- verdicts
@dataclass
class Lasso:
    """A counterexample to ``P ~> Q``: ``chain`` (state indices) runs from an initial state to the
    loop's end; ``chain[loop]`` is where the loop starts and the last state equals it again.
    ``loop == len(chain) - 1`` means the behaviour stutters forever at its last state."""

    instance: str
    chain: list[int]
    loop: int
    premise_at: int  # index into chain of the state where the premise held
    #: the label of each step of the loop (``chain[loop + i] -> chain[loop + i + 1]``): the fair
    #: instance the loop takes there, so the replay shows that action and not another one
    #: reaching the same state
    loop_labels: list[int] = field(default_factory=list)

    @property
    def stutters(self) -> bool:
        return self.loop == len(self.chain) - 1


@dataclass
class LivenessVerdict:
    property: str
    holds: bool | None  # None: the graph was incomplete, nothing can be said
    violation: Violation | None = None
    lasso: Lasso | None = None


@dataclass
class LivenessResult:
    verdicts: list[LivenessVerdict]
    states: int
    edges: int
    bytes: int
    seconds: float  # graph and verdicts
    fairness: list[str] = field(default_factory=list)  # the assumptions, as the model words them
    complete: bool = True

    @property
    def broken(self) -> list[LivenessVerdict]:
        return [v for v in self.verdicts if v.holds is False]


def nontrivial_components(g: Graph) -> list[list[int]]:
    """The components of more than one state of the whole graph, as :func:`components` gives them
    (its order, and each component's): engine/_scc.c's one pass where it is built and compiled code
    is wanted (the whole-graph pass was about a sixth of a liveness check in Python), else this
    module's Tarjan, the definition the C follows."""
    from isrcheck import native

    if native.compiled_wanted():
        try:
            from ._scc import nontrivial
        except ImportError:  # a pure install (ISRCHECK_BUILD_PURE=1)
            pass
        else:
            return nontrivial(g.offsets, g.dst, g.states)
    return [c for c in components(g, range(g.states)) if len(c) > 1]


class _Components:
    """The full graph's components, found once and shared by every property instance."""

    def __init__(self, g: Graph) -> None:
        self.nontrivial = nontrivial_components(g)
        self.in_nontrivial = bytearray(g.states)
        for c in self.nontrivial:
            for v in c:
                self.in_nontrivial[v] = 1
        #: engine/_scc.c's flags of the states where a behaviour may stutter (outside the nontrivial
        #: components, no fair edge out), made for the first instance that needs them
        self.quiet: bytearray | None = None


def _stem_search() -> tuple[Callable[..., bytearray], Callable[..., list[int] | None]] | None:
    """engine/_scc.c's ``quiet`` and ``stem`` where they are built and compiled code is wanted, else
    None (the Python passes: :func:`_fair_bad` and :func:`_stem`, the definition they follow)."""
    from isrcheck import native

    if native.compiled_wanted():
        try:
            from ._scc import quiet, stem
        except ImportError:  # a pure install (ISRCHECK_BUILD_PURE=1)
            return None
        return quiet, stem
    return None


def _fair_bad(g: Graph, comps: _Components, goal: array, bit: int) -> dict[int, list[int]]:
    """Every state that lies in a fair component of the ``not Q`` subgraph -> that component."""
    bad: dict[int, list[int]] = {}
    lab = g.label
    offsets = g.offsets
    in_nt = comps.in_nontrivial
    for v in range(g.states):
        if in_nt[v] or goal[v] >> bit & 1:
            continue
        fair = True
        for k in range(offsets[v], offsets[v + 1]):
            if lab[k] != NO_LABEL:
                fair = False
                break
        if fair:
            bad[v] = [v]
    bad.update(_fair_components(g, comps, goal, bit))
    return bad


def _fair_components(g: Graph, comps: _Components, goal: array, bit: int) -> dict[int, list[int]]:
    """The part of :func:`_fair_bad` inside the full graph's nontrivial components (none in an
    acyclic graph): every state of a fair component of the ``not Q`` subgraph -> that component."""
    bad: dict[int, list[int]] = {}
    for c in comps.nontrivial:
        sub = [v for v in c if not goal[v] >> bit & 1]
        if not sub:
            continue
        members = set(sub)
        for d in components(g, sub, members.__contains__):
            ms = set(d)
            if is_fair(g, d, ms):
                for v in d:
                    bad[v] = d
    return bad


def _python_stem(g: Graph, comps: _Components, premise: array, goal: array,
                 bit: int) -> tuple[list[int], int, list[int]] | None:
    """One instance's shortest stem (:func:`_stem`), with the component it ends in, or None."""
    bad = _fair_bad(g, comps, goal, bit)
    if not bad:
        return None
    found = _stem(g, premise, goal, bit, bad)
    if found is None:
        return None
    stem, at = found
    return stem, at, bad[stem[-1]]


def _native_stem(native: tuple[Callable[..., bytearray], Callable[..., list[int] | None]], g: Graph,
                 comps: _Components, premise: array, goal: array, bit: int) -> tuple[list[int], int, list[int]] | None:
    """:func:`_python_stem` with its passes over every state in engine/_scc.c: those over every
    state for every instance were most of a verdict's time (5 s of IsrHeals on 6,994,032 states).
    The bad states are given as flags: the quiet ones where the goal does not hold (the C reads
    that from the masks), and the states of the fair components :func:`_fair_components` finds."""
    quiet, stem = native
    if comps.quiet is None:
        comps.quiet = quiet(g.offsets, g.label, g.states, comps.in_nontrivial)
    fair_comps = _fair_components(g, comps, goal, bit)
    fair: bytearray | None = None
    if fair_comps:
        fair = bytearray(g.states)
        for v in fair_comps:
            fair[v] = 1
    tail = stem(g.offsets, g.dst, g.depth, premise, goal, bit, comps.quiet, fair)
    if tail is None:
        return None
    head = g.chain(tail[0])
    entry = tail[-1]
    return head + tail[1:], len(head) - 1, fair_comps.get(entry, [entry])


def _stem(g: Graph, premise: array, goal: array, bit: int, bad: dict[int, list[int]]) -> tuple[list[int], int] | None:
    """The shortest path from an initial state through a premise state, then ``not Q`` states only,
    into ``bad``: (state indices, position of the premise state), or None.

    Among stems of equal length the one whose premise holds earliest wins, so the message's "the
    premise holds at step N" names the first step that obliges the goal.
    """
    best: dict[int, tuple[int, int]] = {}  # state -> (length so far, depth of the premise state)
    pred: dict[int, int] = {}
    heap: list[tuple[int, int, int]] = []
    depth = g.depth
    for v in range(g.states):
        if premise[v] >> bit & 1 and not goal[v] >> bit & 1:
            best[v] = (depth[v], depth[v])
            pred[v] = -1
            heap.append((depth[v], depth[v], v))
    heapq.heapify(heap)
    offsets, dst = g.offsets, g.dst
    while heap:
        dv, at, v = heapq.heappop(heap)
        if (dv, at) != best[v]:
            continue
        if v in bad:
            tail = [v]
            while pred[tail[-1]] >= 0:
                tail.append(pred[tail[-1]])
            tail.reverse()
            head = g.chain(tail[0])
            return head + tail[1:], len(head) - 1
        for k in range(offsets[v], offsets[v + 1]):
            w = dst[k]
            if goal[w] >> bit & 1:
                continue
            cand = (dv + 1, at)
            old = best.get(w)
            if old is None or cand < old:
                best[w] = cand
                pred[w] = v
                heapq.heappush(heap, (dv + 1, at, w))
    return None


def _walk_to(g: Graph, start: int, members: set[int], done: Callable[[int, int], bool]) -> list[int]:
    """Breadth first inside ``members`` from ``start`` to the first edge ``k`` into ``w`` with
    ``done(label, w)``; the path's edges (indices into the edge arrays)."""
    pred: dict[int, tuple[int, int]] = {start: (-1, -1)}  # state -> (the state before, the edge from it)
    queue = deque([start])
    dst, lab, offsets = g.dst, g.label, g.offsets
    while queue:
        v = queue.popleft()
        for k in range(offsets[v], offsets[v + 1]):
            w = dst[k]
            if w not in members:
                continue
            if done(lab[k], w):
                path = [k]
                u = v
                while u != start:
                    u, e = pred[u]
                    path.append(e)
                path.reverse()
                return path
            if w not in pred:
                pred[w] = (v, k)
                queue.append(w)
    raise AssertionError("the component is not strongly connected")  # pragma: no cover


def _loop(g: Graph, entry: int, comp: Sequence[int]) -> list[int]:
    """A fair cycle in ``comp`` from ``entry`` back to it (its edges, indices into the edge arrays);
    empty when the behaviour may stutter at ``entry`` (no fair instance enabled there)."""
    pending = g.fair_enabled(entry)
    if not pending:
        return []
    members = set(comp)
    edges: list[int] = []

    # an edge discharges a pending instance by taking it, its target state by not enabling one
    def discharges(label: int, w: int) -> bool:
        return label in pending or not pending <= g.fair_enabled(w)

    cur = entry
    while pending:
        for k in _walk_to(g, cur, members, discharges):
            pending.discard(g.label[k])
            cur = g.dst[k]
            pending &= g.fair_enabled(cur)
            edges.append(k)
    if cur != entry or not edges:
        edges += _walk_to(g, cur, members, lambda label, w: w == entry)
    return edges


def lasso_for(g: Graph, prop: LeadsTo, k: int, comps: _Components | None = None) -> Lasso | None:
    """The first instance of ``prop`` (property number ``k`` of the graph) with a counterexample,
    by shortest stem, or None when every instance holds."""
    comps = comps or _Components(g)
    best: Lasso | None = None
    premise, goal = g.premise[k], g.goal[k]
    native = _stem_search()
    for bit, name in enumerate(prop.instances):
        if native is not None:
            found = _native_stem(native, g, comps, premise, goal, bit)
        else:
            found = _python_stem(g, comps, premise, goal, bit)
        if found is None:
            continue
        stem, at, comp = found
        entry = stem[-1]
        cycle = _loop(g, entry, comp)
        lasso = Lasso(name, stem + [g.dst[e] for e in cycle], len(stem) - 1, at, [g.label[e] for e in cycle])
        if best is None or (len(stem), len(lasso.chain)) < (best.loop + 1, len(best.chain)):
            best = lasso
    return best


def check_liveness(model: FairModel, properties: Sequence[LeadsTo], *, max_states: int | None = None,
                   max_depth: int | None = None, fairness: Sequence[str] = (),
                   progress: Callable[[Progress], None] | None = None, graph: Graph | None = None) -> LivenessResult:
    """Build the graph of ``model`` (or take ``graph``, recorded by the safety search with the same
    ``properties``) and give each property a verdict with, when broken, its shortest-stem lasso as
    concrete steps."""
    start = time.perf_counter()
    g = graph if graph is not None else build_graph(model, properties, max_states=max_states, max_depth=max_depth,
                                                    progress=progress)
    if graph is not None:
        start -= g.seconds  # the graph's part of the safety search counts as liveness time
    verdicts: list[LivenessVerdict] = []
    if not g.complete:
        verdicts = [LivenessVerdict(p.name, None) for p in properties]
    else:
        comps = _Components(g)
        for k, p in enumerate(properties):
            lasso = lasso_for(g, p, k, comps)
            if lasso is None:
                verdicts.append(LivenessVerdict(p.name, True))
                continue
            steps = lasso_steps(model, g, lasso)
            message = (f"{lasso.instance}: the premise holds at step {lasso.premise_at}; the goal never holds after "
                       + ("it: the behaviour stutters at the last state, where no fair action is enabled"
                          if lasso.stutters else f"it: the loop from step {lasso.loop} repeats forever"))
            verdicts.append(LivenessVerdict(p.name, False, Violation(p.name, "liveness", steps, message, lasso.loop),
                                            lasso))
    return LivenessResult(verdicts, g.states, g.edges, g.bytes, time.perf_counter() - start, list(fairness), g.complete)


def lasso_steps(model: FairModel, g: Graph, lasso: Lasso) -> list[Step]:
    """The lasso as concrete states, replayed from an initial state.

    The stem may take any action between two of its states. A loop step takes an action of the
    fair instance the loop relies on there (or, for an unlabelled step, an action of no fair
    instance), so the printed loop is fair as printed.
    """
    fair_key, loop, labels, keys = model.fair_key, lasso.loop, lasso.loop_labels, g.keys

    def allowed(i: int, action: Any) -> bool:
        if i <= loop:
            return True
        label = labels[i - loop - 1]
        return fair_key(action) == (None if label == NO_LABEL else keys[label])

    return replay_fingerprints(model, [g.fps[v] for v in lasso.chain], allowed)


__all__ = ["LeadsTo", "FairModel", "LivenessError", "Graph", "build_graph", "components", "is_fair", "Lasso",
           "LivenessVerdict", "LivenessResult", "lasso_for", "check_liveness", "lasso_steps", "NO_LABEL"]
