"""The z3 encoding against the model: helpers shared by the transcription tests (a name unique
across tests/, beside z3_states.py, which gives them reachable states).

- :func:`comparable`: a model state leaf by leaf, as the encoding's symbolic state lists its leaves;
- :class:`AtStates` and :class:`OneStep`: terms (the encoding's instances) built once over a
  symbolic state and valued at any model state by substitution, which costs a fraction of building
  them anew over each state's values (the construction is z3's Python API, the substitution and the
  simplifier are z3's C++);
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


class AtStates:
    """The terms ``build`` makes over one fresh symbolic state of ``enc``, valued at any model state:
    the state's values are substituted into all the terms at once (the arguments of one application
    of an uninterpreted function, so shared subterms are substituted once) and z3 simplifies it,
    where ``evaluate(build(concrete(enc, s)))`` would build the terms anew for every state. (One
    application rather than one packed bit-vector: reading back a numeral of thousands of bits
    takes z3 a fifth of a second.)"""

    def __init__(self, enc: Any, build: Callable[[Any], Sequence[Any]], name: str = "at") -> None:
        self.sym = enc.fresh(name)
        self.terms = list(build(self.sym))
        self._bool = [z3.is_bool(t) for t in self.terms]
        self._app = _application(f"{name}_values", self.terms) if self.terms else None

    def values(self, s: Any, extra: Sequence[tuple[Any, Any]] = ()) -> list[Any]:
        """The terms' values in the model state ``s`` (``extra``: more (variable, value) pairs)."""
        if self._app is None:
            return []
        return _valued(self._app, self._bool, [*self.sym.values_of(s), *extra])


def ground_values(terms: Sequence[Any]) -> list[Any]:
    """The values of many ground terms: :func:`evaluate` for a list of any length (it packs them
    into one numeral, whose reading back fails past Python's 4,300 decimal digits)."""
    if not terms:
        return []
    return _valued(_application("ground_values", terms), [z3.is_bool(t) for t in terms], ())


def _valued(app: Any, bools: Sequence[bool], pairs: Sequence[tuple[Any, Any]]) -> list[Any]:
    """The arguments of the application ``app`` with ``pairs`` substituted, simplified to values
    (Booleans where ``bools`` says)."""
    return _arguments(z3.simplify(z3.substitute(app, *pairs) if pairs else app), bools)


def _application(name: str, terms: Sequence[Any]) -> Any:
    """``name(*terms)``: an uninterpreted (Boolean) function applied to the terms, to substitute
    into and simplify all of them at once."""
    return z3.Function(name, *[t.sort() for t in terms], z3.BoolSort())(*terms)


def _arguments(ground: Any, bools: Sequence[bool]) -> list[Any]:
    """The arguments of a simplified application as Python values (Booleans where ``bools`` says)."""
    out: list[Any] = []
    for is_bool, v in zip(bools, ground.children()):
        if is_bool:
            assert z3.is_true(v) or z3.is_false(v), v
            out.append(z3.is_true(v))
        else:
            assert z3.is_bv_value(v), v
            out.append(v.as_signed_long())
    return out


class OneStep:
    """The encoding's instances, built once over a symbolic state, and at any model state each plain
    instance's guard and illegal flag, and the effect leaves of those enabled (a LossyCrash's guard
    and effect hold the kept lengths as free variables: :meth:`lossy` values them with the
    action's)."""

    def __init__(self, enc: Any) -> None:
        self.enc = enc
        holder: list[Any] = []

        def build(sym: Any) -> list[Any]:
            holder.extend(enc.instances(sym))
            return [t for i in holder if i.name != "LossyCrash" for t in (i.guard, i.illegal)]

        self.at = AtStates(enc, build)
        self.instances: list[Any] = holder
        self.plain = [i for i in holder if i.name != "LossyCrash"]

    def values(self, s: Any) -> list[tuple[Any, bool, bool, list[Any] | None]]:
        """(instance, guard, illegal, effect leaves or None when the guard is false) of every plain
        instance in the model state ``s``."""
        flags = self.at.values(s)
        enabled = [i for k, i in enumerate(self.plain) if flags[2 * k]]
        leaves = [x for i in enabled for x in i.effect.leaves()]
        effects = iter(self._effects(s, leaves))
        out: list[tuple[Any, bool, bool, list[Any] | None]] = []
        for k, inst in enumerate(self.plain):
            effect = [next(effects) for _ in inst.effect.leaves()] if flags[2 * k] else None
            out.append((inst, flags[2 * k], flags[2 * k + 1], effect))
        return out

    def _effects(self, s: Any, leaves: list[Any]) -> list[Any]:
        """The values of effect ``leaves`` (of the enabled instances) in ``s``."""
        if not leaves:
            return []
        return _valued(_application("effects", leaves), [z3.is_bool(t) for t in leaves], self.at.sym.values_of(s))

    def lossy(self, s: Any, a: Any) -> tuple[Any, bool, list[Any]]:
        """The LossyCrash instance of action ``a`` in ``s``: (instance, guard, effect leaves), its
        kept lengths set to the action's."""
        inst = next(i for i in self.instances if i.name == "LossyCrash" and i.args[0] == a.args[0])
        kept = [(inst.extra["kept"][p], numval(k)) for p, k in enumerate(a.args[1]) if p in inst.extra["kept"]]
        pairs = [*self.at.sym.values_of(s), *kept]
        guard, *effect = evaluate([z3.substitute(t, *pairs) for t in (inst.guard, *inst.effect.leaves())])
        return inst, bool(guard), effect

    def assert_as_built_over(self, s: Any) -> None:
        """The instances built over ``s``'s values (:func:`concrete`, the encoding's constant folding
        at work) have the same guards, flags and effects as the symbolic ones valued at ``s``."""
        built = [i for i in self.enc.instances(concrete(self.enc, s)) if i.name != "LossyCrash"]
        assert [i.label() for i in built] == [i.label() for i in self.plain]
        got = ground_values([t for i in built for t in (i.guard, i.illegal)])
        valued = self.values(s)
        assert got == [v for _, g, bad, _ in valued for v in (g, bad)]
        enabled = [(b, eff) for b, (_, g, _, eff) in zip(built, valued) if g]
        assert ground_values([x for b, _ in enabled for x in b.effect.leaves()]) == [x for _, eff in enabled for x in eff]


#: assert_one_step_agrees's instances for the encoding it was last given (its callers loop over the
#: states of one encoding; keeping one bounds what a test process holds)
_LAST_ONE_STEP: list[OneStep] = []


def one_step(enc: Any) -> tuple[OneStep, bool]:
    """The encoding's :class:`OneStep`, and whether it was just built."""
    if _LAST_ONE_STEP and _LAST_ONE_STEP[0].enc is enc:
        return _LAST_ONE_STEP[0], False
    _LAST_ONE_STEP[:] = [OneStep(enc)]
    return _LAST_ONE_STEP[0], True


def assert_one_step_agrees(enc: Any, s: Any, label: str = "", shape: Any = None, kinds: Counter[str] | None = None,
                           legal: bool = False) -> list[str]:
    """In the model state ``s``: the encoding enables exactly the model's actions, and each leads to
    exactly the model's successor, leaf by leaf (``legal``: and is not flagged as an illegal move).
    A lossy crash is one instance per broker whose free variables are the records kept: they are
    set to the model's. Counts the instance kinds met in ``kinds``; returns the actions' names.
    The instances are built once per encoding and valued at ``s`` (:class:`OneStep`); at the first
    state of an encoding they are also built over the state's values and compared."""
    shape = enc.fresh("shape") if shape is None else shape
    names = [str(x) for x in shape.leaves()]
    steps, new = one_step(enc)
    if new:
        steps.assert_as_built_over(s)
    valued = steps.values(s)
    model_actions = enabled_actions(enc.protocol, s)
    enabled = {i.label() for i, g, _, _ in valued if g}
    assert enabled == {str(a) for a in model_actions if a.name != "LossyCrash"}, label
    for a in model_actions:
        if a.name == "LossyCrash":
            inst, guard, effect = steps.lossy(s, a)
            assert guard
        else:
            matching = [(i, bad, eff) for i, g, bad, eff in valued if g and i.label() == str(a)]
            assert len(matching) == 1, (str(a), [i.kind for i, _, _ in matching])
            inst, bad, effect = matching[0]
            if legal:
                assert not bad, (label, str(a), "flagged illegal, the model allows it")
        if kinds is not None:
            kinds[inst.kind] += 1
        want = comparable(enc, apply(enc.protocol, s, a), shape)
        diff = [names[i] for i, (g, w) in enumerate(zip(effect, want)) if w is not None and g != w]
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
    at = AtStates(enc, lambda sym: [preds[n](enc, sym) for n in names])
    for s in states:
        got = at.values(s)
        assert all(got), [n for n, g in zip(names, got) if not g]
