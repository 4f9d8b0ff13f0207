"""The liveness graph's components in one C pass (engine/_scc.c) against the Python Tarjan that
defines them (engine/liveness.py, ``components``): the same nontrivial components, in the same
order, each with its states in the same order, on random graphs with cycles and on the graphs of
real liveness checks; and the arrays it is handed are checked before they are trusted."""
from __future__ import annotations

import random
from array import array
from typing import Any

import pytest

from isrcheck.engine import liveness as L


def _scc() -> Any:
    return pytest.importorskip("isrcheck.engine._scc", reason="a pure install builds no C extension")


def _Flat(succ: list[list[int]]) -> L.Graph:
    """A liveness graph holding just what the component passes read (rows of edges), built from
    successor lists (a real Graph: the compiled build checks the type)."""
    g = L.Graph([])
    for v, out in enumerate(succ):
        g.fps.append(v)
        g.dst.extend(out)
        g.offsets.append(len(g.dst))
    return g


def _python(g: Any) -> list[list[int]]:
    return [c for c in L.components(g, range(g.states)) if len(c) > 1]


@pytest.mark.parametrize("seed", range(40))
def test_random_graphs_have_the_python_components_in_its_order(seed: int) -> None:
    rnd = random.Random(seed)
    n = rnd.randint(1, 300)
    degree = rnd.choice([0.5, 1.0, 1.5, 3.0])
    succ = [[rnd.randrange(n) for _ in range(int(rnd.expovariate(1 / degree)))] for _ in range(n)]
    succ = [[w for w in out if w != v] for v, out in enumerate(succ)]  # the graph stores no self-loops
    g = _Flat(succ)
    want = _python(g)
    assert _scc().nontrivial(g.offsets, g.dst, g.states) == want
    if seed == 0:
        assert want, "a graph with cycles"


def test_a_long_cycle_and_an_empty_graph() -> None:
    n = 200_000  # deep: the C pass keeps its own stack, as the Python one does
    g = _Flat([[(v + 1) % n] for v in range(n)])
    got = _scc().nontrivial(g.offsets, g.dst, g.states)
    assert len(got) == 1 and sorted(got[0]) == list(range(n)) and got == _python(g)
    assert _scc().nontrivial(array("q", [0]), array("i"), 0) == []


class _Rings:
    """A model whose reachable graph has cycles: from 0, rings of sizes 2..6 (state k*10 + i steps
    to k*10 + (i + 1) % k) and a step from each ring to the next."""

    def init_states(self) -> list[int]:
        return [0]

    def actions(self, s: int) -> list[str]:
        return ["next", "jump"] if s else ["jump"]

    def next_state(self, s: int, a: str) -> int:
        if a == "jump":
            k = s // 10 + 1 if s else 2
            return min(k, 6) * 10
        k, i = divmod(s, 10)
        return k * 10 + (i + 1) % k

    def fingerprint(self, s: int) -> int:
        return s

    def fair_key(self, a: str) -> str:
        return a


def test_the_graphs_of_real_checks_through_the_function_the_check_calls() -> None:
    from isrcheck import native
    from isrcheck.inputs import manifest
    from isrcheck.invariants import build_model, liveness as live

    _scc()
    assert native.compiled_wanted()
    g = L.build_graph(_Rings(), [])
    want = _python(g)
    assert L.nontrivial_components(g) == want and len(want) == 5  # rings of 2..6 states, 6's with its jump
    tg = manifest.resolve("leader-crash-kip-320", None, ())  # a Kafka model's graph: acyclic
    props = [live.liveness_property(e.property, tg.config) for e in tg.entry.liveness]
    g = L.build_graph(build_model(tg.config, symmetry=False, properties=[]), props)
    assert g.states > 1000 and L.nontrivial_components(g) == _python(g) == []


@pytest.mark.parametrize("offsets, dst, n, message", [
    (array("q", [0, 1]), array("i", [0]), 2, "must hold n"),
    (array("q", [0, 2, 1]), array("i", [1, 0]), 2, "ascend"),
    (array("q", [0, 1, 3]), array("i", [1, 0]), 2, "ascend"),
    (array("q", [0, 1, 2]), array("i", [1, 5]), 2, "outside the graph"),
    (array("q", [0, 1, 2]), array("i", [1, -1]), 2, "outside the graph"),
])
def test_arrays_that_do_not_make_a_graph_are_refused(offsets, dst, n, message) -> None:
    with pytest.raises(ValueError, match=message):
        _scc().nontrivial(offsets, dst, n)


def test_arrays_of_the_wrong_width_are_refused() -> None:
    with pytest.raises(TypeError, match="8-byte"):
        _scc().nontrivial(array("i", [0, 1]), array("i", [0]), 1)
    with pytest.raises(TypeError, match="4-byte"):
        _scc().nontrivial(array("q", [0, 1]), array("q", [0]), 1)
    with pytest.raises(ValueError):
        _scc().nontrivial(array("q", [0]), array("i"), -1)


class _Random:
    """A random graph over states 0..n-1 from state 0, each step with a fair instance or none, and one
    leads-to property of two instances read from random masks: cycles, fair and unfair, everywhere."""

    def __init__(self, seed: int) -> None:
        rnd = random.Random(seed)
        self.n = n = rnd.randint(1, 60)
        self.succ = [[(rnd.randrange(n), rnd.choice([None, "a", "b", "c"])) for _ in range(rnd.randint(0, 3))]
                     for _ in range(n)]
        self.masks = [(rnd.randrange(4), rnd.randrange(4) if rnd.random() < 0.5 else 0) for _ in range(n)]

    def init_states(self) -> list[int]:
        return [0]

    def actions(self, s: int) -> list[tuple[int, int, str | None]]:
        return [(i, t, k) for i, (t, k) in enumerate(self.succ[s])]

    def next_state(self, s: int, a: tuple[int, int, str | None]) -> int:
        return a[1]

    def fingerprint(self, s: int) -> int:
        return s

    def fair_key(self, a: tuple[int, int, str | None]) -> str | None:
        return a[2]

    def prop(self) -> L.LeadsTo:
        return L.LeadsTo("Random", ("i", "j"), lambda s: self.masks[s])


@pytest.mark.parametrize("seed", range(150))
def test_the_c_stem_is_the_python_stem(seed: int) -> None:
    """engine/_scc.c's ``quiet`` and ``stem`` (the passes over every state for every instance) against
    the Python ``_fair_bad`` and ``_stem`` they follow: the same stem, premise position and component
    for every instance, so the same lassos; and on some seeds there is one to compare."""
    _scc()
    native = L._stem_search()
    if native is None:
        pytest.skip("the compiled modules are stale, so this interpreter runs the Python source")
    m = _Random(seed)
    g = L.build_graph(m, [m.prop()])
    comps = L._Components(g)
    for bit in range(2):
        got = L._native_stem(native, g, comps, g.premise[0], g.goal[0], bit)
        assert got == L._python_stem(g, comps, g.premise[0], g.goal[0], bit)


def test_the_c_stem_finds_stems_and_fair_cycles() -> None:
    """The seeds above are not all vacuous: stems into quiet states and into fair components."""
    _scc()
    native = L._stem_search()
    if native is None:
        pytest.skip("the compiled modules are stale, so this interpreter runs the Python source")
    ends = set()
    for seed in range(150):
        m = _Random(seed)
        g = L.build_graph(m, [m.prop()])
        comps = L._Components(g)
        for bit in range(2):
            found = L._native_stem(native, g, comps, g.premise[0], g.goal[0], bit)
            if found is not None:
                ends.add("cycle" if len(found[2]) > 1 else "stutter")
    assert ends == {"cycle", "stutter"}


def test_stem_refuses_arrays_that_do_not_make_a_graph() -> None:
    g = L.build_graph(_Rings(), [])
    quiet = _scc().quiet(g.offsets, g.label, g.states, bytearray(g.states))
    masks = array("Q", [1]) * g.states
    with pytest.raises(ValueError, match="one byte per state"):
        _scc().stem(g.offsets, g.dst, g.depth, masks, masks, 0, quiet[1:], None)
    with pytest.raises(ValueError, match="one entry per state"):
        _scc().stem(g.offsets, g.dst, g.depth, masks[1:], masks, 0, quiet, None)
    with pytest.raises(ValueError, match="between 0 and 63"):
        _scc().stem(g.offsets, g.dst, g.depth, masks, masks, 64, quiet, None)
    bad = array("i", g.dst)
    bad[0] = g.states  # the first edge out of state 0, the only premise state; the last one is quiet
    first, last = array("Q", [1]) + array("Q", [0]) * (g.states - 1), bytearray(g.states - 1) + b"\x01"
    with pytest.raises(ValueError, match="outside the graph"):
        _scc().stem(g.offsets, bad, g.depth, first, array("Q", [0]) * g.states, 0, last, None)
