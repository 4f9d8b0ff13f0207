"""The z3 encoding against the model: helpers shared by the transcription tests (a name unique
across tests/, beside z3_states.py, which gives them reachable states).

- :func:`comparable`: a model state leaf by leaf, as the encoding's symbolic state lists its leaves;
- :func:`assert_one_step_agrees`: in one reachable state, the encoding enables exactly the model's
  actions and each leads to exactly the model's successor;
- :func:`model_of`: a z3 model of a pinned state, for the decoding round trips;
- :func:`bmc_lengths` and :func:`explicit_lengths`: the shortest violation of each property within
  a depth, found by bounded model checking and by the explicit checker, to compare;
- :func:`picked` and :func:`assert_hold`: candidates of the induction pool checked on reachable
  states spread over the space and on the states where they say something.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import z3

from isrcheck.engine.checker import Checker
from isrcheck.invariants import ALL_PROPERTIES, build_model
from isrcheck.invariants.symbolic.bmc import bmc
from isrcheck.invariants.symbolic.logic import check
from isrcheck.invariants.symbolic.pool import candidates_for
from isrcheck.invariants.symbolic.replication import ALWAYS, TRANSITION, concrete, evaluate
from isrcheck.invariants.symbolic.types import numval
from isrcheck.invariants.symbolic.verdicts import Verdict
from isrcheck.model.actions import apply, enabled_actions

BY_NAME = {p.name: p for p in ALL_PROPERTIES}


def comparable(enc: Any, t: Any, sym: Any = None) -> list[Any]:
    """The model state ``t`` leaf by leaf in the order of ``sym`` (a fresh symbolic state of ``enc``,
    made here when not given); None for the encoding's history of records no log holds (the model
    keeps no trace of them). A replica a broker does not host holds no record."""
    sym = enc.fresh("shape") if sym is None else sym
    vals = {a.get_id(): v for a, v in sym.values_of(t)}
    held = set()
    for p in range(enc.P):
        for b in enc.U[p]:
            r = t.brokers[b - 1].replicas[p]
            held |= {(p, rec & 0xFF) for rec in (r.log if r is not None else ())}
        held |= {(p, rec & 0xFF) for rec in t.ghost[p].exposed}
    skip = set()
    for p, g in enumerate(sym.ghost):
        for j in g.position:
            if (p, j) not in held:
                skip |= {g.position[j].get_id(), g.epoch[j].get_id()}
    out = []
    for leaf in sym.leaves():
        v = vals[leaf.get_id()]
        out.append(None if leaf.get_id() in skip else z3.is_true(v) if z3.is_bool(v) else v.as_signed_long())
    return out


def assert_one_step_agrees(enc: Any, s: Any, label: str = "", shape: Any = None, kinds: Counter[str] | None = None,
                           legal: bool = False) -> list[str]:
    """In the model state ``s``: the encoding enables exactly the model's actions, and each leads to
    exactly the model's successor, leaf by leaf (``legal``: and is not flagged as an illegal move).
    A lossy crash is one instance per broker whose free variables are the records kept: they are
    set to the model's. Counts the instance kinds met in ``kinds``; returns the actions' names."""
    shape = enc.fresh("shape") if shape is None else shape
    names = [str(x) for x in shape.leaves()]
    insts = enc.instances(concrete(enc, s))
    plain = [i for i in insts if i.name != "LossyCrash"]
    guards = evaluate([i.guard for i in plain])
    model_actions = enabled_actions(enc.protocol, s)
    enabled = {i.label() for i, g in zip(plain, guards) if g}
    assert enabled == {str(a) for a in model_actions if a.name != "LossyCrash"}, label
    for a in model_actions:
        if a.name == "LossyCrash":
            inst = next(i for i in insts if i.name == "LossyCrash" and i.args[0] == a.args[0])
            pairs = [(inst.extra["kept"][p], numval(k)) for p, k in enumerate(a.args[1]) if p in inst.extra["kept"]]
            assert evaluate([z3.substitute(inst.guard, *pairs)]) == [True]
            effect = [z3.substitute(x, *pairs) for x in inst.effect.leaves()]
        else:
            matching = [i for i, g in zip(plain, guards) if g and i.label() == str(a)]
            assert len(matching) == 1, (str(a), [i.kind for i in matching])
            inst = matching[0]
            if legal:
                assert not evaluate([inst.illegal])[0], (label, str(a), "flagged illegal, the model allows it")
            effect = inst.effect.leaves()
        if kinds is not None:
            kinds[inst.kind] += 1
        want = comparable(enc, apply(enc.protocol, s, a), shape)
        diff = [names[i] for i, (g, w) in enumerate(zip(evaluate(effect), want)) if w is not None and g != w]
        assert not diff, (label, str(a), inst.kind, diff)
    return [a.name for a in model_actions]


def model_of(*constraints: z3.BoolRef) -> z3.ModelRef:
    """A z3 model of ``constraints`` (a symbolic state pinned to a model state), which must exist."""
    answer = check(*constraints)
    assert answer.model is not None, answer.verdict
    return answer.model


def bmc_lengths(cfg: Any, depth: int, first: bool = False, **kw: Any) -> dict[str, int]:
    """Property -> length of the shortest violation bounded model checking finds within ``depth``
    steps; nothing may be unknown."""
    res = bmc(cfg, depth, stop_at_first=first, **kw)
    assert all(o.verdict != Verdict.UNKNOWN for o in res.obligations), [o.detail for o in res.obligations]
    return {o.property: o.counterexample["length"] for o in res.obligations if o.verdict == Verdict.REFUTED}


class _From:
    """A model started from one given state."""

    def __init__(self, model: Any, state: Any) -> None:
        self._model, self._state = model, state

    def init_states(self) -> list[Any]:
        return [self._state]

    def __getattr__(self, k: str) -> Any:
        return getattr(self._model, k)


def explicit_lengths(cfg: Any, depth: int, first: bool = False, start: Any = None,
                     bounded: bool = False) -> dict[str, int]:
    """Property -> length of the explicit checker's shortest violation within ``depth`` steps (from
    ``start`` when given; the search itself ``bounded`` to ``depth`` steps, or exhaustive). The
    encoded fragment cannot break a property it does not encode within the depth."""
    model = build_model(cfg, symmetry=False)
    if start is not None:
        model = _From(model, start)
    result = Checker(model, stop_on_first=first, max_depth=depth if bounded else None).run()
    encoded = set(ALWAYS) | set(TRANSITION)
    for v in result.violations:
        assert v.property in encoded or v.length > depth, v.property
    return {v.property: v.length for v in result.violations if v.length <= depth}


def picked(states: Sequence[Any], specials: Iterable[Callable[[Any], bool]], per: int) -> list[Any]:
    """Forty states spread over ``states``, and about ``per`` of the states where each of
    ``specials`` holds (each must hold somewhere)."""
    out = list(states[:: len(states) // 40])
    for special in specials:
        some = [s for s in states if special(s)]
        assert some, special.__name__
        out += some[:: max(1, len(some) // per)]
    return out


def assert_hold(enc: Any, names: Sequence[str], states: Iterable[Any], preds: dict[str, Any] | None = None) -> None:
    """Every candidate of ``names`` (of ``preds``, or of ``enc``'s pool) holds on every state."""
    preds = dict(candidates_for(enc)) if preds is None else preds
    for s in states:
        cs = concrete(enc, s)
        got = evaluate([preds[n](enc, cs) for n in names])
        assert all(got), [n for n, g in zip(names, got) if not g]
