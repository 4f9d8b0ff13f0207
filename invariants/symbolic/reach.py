"""Is a counterexample to induction reachable? An explicit breadth-first search for its pre-state.

``prove inductive`` reports a property whose counterexample to induction (CTI) starts in a
reachable state as REFUTED (the step from it breaks the property in a real run), and as NOT
INDUCTIVE otherwise: when the search of the configuration's reachable states ends without meeting
the pre-state, or is stopped at ``max_states`` (then nothing is known either way).
The search uses the model's own fingerprints (with symmetry reduction where it is sound, so a
pre-state equal to a reachable one up to renaming brokers is found).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .verdicts import Verdict

DEFAULT_MAX_STATES = 200_000


@dataclass
class Reach:
    found: dict[int, int] = field(default_factory=dict)  # index of a wanted state -> its BFS depth
    searched: int = 0
    complete: bool = False  # every reachable state was visited

    def reachable(self, i: int) -> bool | None:
        """True: reached; False: the whole reachable space was searched without it; None: unknown."""
        if i in self.found:
            return True
        return False if self.complete else None


def search_for(cfg: Any, wanted: list[Any], max_states: int = DEFAULT_MAX_STATES, protocol: Any = None) -> Reach:
    """Search the reachable states of ``cfg`` (under ``protocol``, the model's by default) for each
    state of ``wanted`` (model States)."""
    from isrcheck.engine.explore import BreadthFirst
    from isrcheck.invariants import build_model

    model = build_model(cfg, protocol=protocol, properties=[])
    targets: dict[int, list[int]] = {}
    for i, s in enumerate(wanted):
        targets.setdefault(model.fingerprint(s), []).append(i)
    out = Reach()

    def on_state(key: int, state: Any, depth: int) -> bool:
        for i in targets.get(key, ()):
            out.found.setdefault(i, depth)
        return len(out.found) == len(wanted)

    visit = BreadthFirst(model, max_states=max_states).run(on_state)
    out.searched = len(visit.parents)
    out.complete = visit.complete
    return out


@dataclass
class Witness:
    """A real counterexample for a counterexample to induction: the explicit checker's shortest run
    to a reachable state from which one action of the CTI's name breaks its property."""

    trace: list[tuple[Any, Any]]  # (action, state) from the initial state (action None) to the violation
    searched: int

    @property
    def steps(self) -> int:
        return len(self.trace) - 1


def find_breaking_step(cfg: Any, prop: str, action_names: set[str], max_states: int = DEFAULT_MAX_STATES,
                       protocol: Any = None) -> Witness | None:
    """Breadth-first over the reachable states of ``cfg`` (under ``protocol``), without symmetry: the
    first state where ``prop`` holds and an action named in ``action_names`` leads to a state where it
    fails (for OnlyValidTransitions: the action is refused as an illegal move). None when there is
    none among the first ``max_states`` states, or ``prop`` is not an always-property of the model."""
    from isrcheck.engine.explore import BreadthFirst, replay
    from isrcheck.invariants import build_model

    model = build_model(cfg, protocol=protocol, symmetry=False, properties=[])
    props = {p.name: p for p in build_model(cfg, protocol=protocol, symmetry=False).properties()
             if p.kind == "always"}
    check = props[prop].check if prop in props else None
    if check is None and prop != "OnlyValidTransitions":
        return None
    states: dict[int, Any] = {}
    holds: dict[int, bool] = {}
    found: list[Witness] = []
    visit = BreadthFirst(model, max_states=max_states, drain=True)

    def trace_to(key: int, extra: tuple[Any, Any]) -> list[tuple[Any, Any]]:
        root: int | None = key
        while visit.parents[root][0] is not None:  # type: ignore[index]
            root = visit.parents[root][0]  # type: ignore[index]
        steps = replay(model, visit.path_to(key), init=states[root]).steps  # type: ignore[index]
        return [(st.action, st.state) for st in steps] + [extra]

    def on_state(key: int, state: Any, depth: int) -> None:
        states[key] = state
        holds[key] = check is None or check(state)

    def on_edge(key: int, a: Any, tkey: int, t: Any, new: bool) -> bool:
        if check is not None and holds[key] and a.name in action_names and not check(t):
            found.append(Witness(trace_to(key, (a, t)), len(visit.parents)))
            return True
        return False

    def on_fault(key: int, a: Any, e: Any) -> bool:
        if check is None and a.name in action_names and e.property_name == prop:
            found.append(Witness(trace_to(key, (a, states[key])), len(visit.parents)))
            return True
        return False

    visit.run(on_state, on_edge, on_fault)
    return found[0] if found else None


def classify(cfg: Any, obligations: Sequence[Any], max_states: int, protocol: Any = None,
             kinds: dict[str, list[str]] | None = None,
             progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """``prove inductive``'s REFUTED or NOT INDUCTIVE, decided by the explicit checker (running
    ``protocol``, the model's by default) within ``max_states`` states: a refuted obligation's
    counterexample to induction stays REFUTED when its pre-state is reachable (:func:`search_for`),
    or when a reachable state exists from which an action of the CTI's name, or of any other action
    kind that Houdini found breaking the property (``kinds``: property -> action kinds), breaks the
    same property (:func:`find_breaking_step`; the run becomes the obligation's ``trace``); it
    becomes NOT INDUCTIVE otherwise (in place). Returns the search's extent, for JSON."""
    refuted = [o for o in obligations if o.verdict == Verdict.REFUTED]
    with_cti = [o for o in refuted if getattr(o, "cti", None) is not None]
    info: dict[str, Any] = {"max_states": max_states, "searched_states": 0, "complete": False, "reachable": [],
                            "witnessed": {}}
    if not refuted:
        return info
    reach = None
    if with_cti and max_states > 0:
        progress(f"searching the reachable states for {len(with_cti)} counterexample pre-state(s)")
        reach = search_for(cfg, [o.cti.before for o in with_cti], max_states, protocol)
        info.update(searched_states=reach.searched, complete=reach.complete)
    for o in refuted:
        cti = getattr(o, "cti", None)
        known = reach.reachable(with_cti.index(o)) if reach is not None and o in with_cti else None
        if known is True:
            depth = reach.found[with_cti.index(o)]  # type: ignore[union-attr]
            info["reachable"].append(o.property)
            o.detail += (f"; REFUTED: the pre-state is reachable (the explicit checker reaches it in {depth} "
                         f"step(s)), so this step breaks the property in a real run")
            continue
        if cti is not None and max_states > 0:
            names = {cti.action.split("(")[0]} | {k.split(":")[0] for k in (kinds or {}).get(o.property, ())}
            progress(f"searching the reachable states for a step breaking {o.property}")
            witness = find_breaking_step(cfg, o.property, names, max_states, protocol)
            if witness is not None:
                info["witnessed"][o.property] = witness.steps
                info["reachable"].append(o.property)
                o.trace = witness.trace
                o.detail += (f"; REFUTED: the explicit checker reaches a state from which {witness.trace[-1][0]} "
                             f"breaks it, {witness.steps} steps from the initial state (the run is shown)")
                continue
        o.verdict = Verdict.NOT_INDUCTIVE
        if cti is None:
            o.detail += "; no counterexample to induction to look for: no reachable counterexample known"
        elif known is False:
            o.detail += (f"; the pre-state is not reachable (all {reach.searched:,} reachable states "  # type: ignore[union-attr]
                         "searched), nor a state from which such a step breaks the property: no reachable "
                         "counterexample known")
        elif reach is None:
            o.detail += "; the pre-state was not searched for (--reach-states 0): no reachable counterexample known"
        else:
            o.detail += (f"; neither the pre-state nor a state from which such a step breaks the property was met "
                         f"in the first {reach.searched:,} reachable states (--reach-states): no reachable "
                         "counterexample known")
    return info


__all__ = ["Reach", "Witness", "search_for", "find_breaking_step", "classify", "DEFAULT_MAX_STATES"]
