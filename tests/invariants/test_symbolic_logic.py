"""The logic layer of the symbolic checks (invariants/symbolic/logic.py).

- a check's three outcomes: PROVED (unsat), REFUTED with a model (sat), UNKNOWN with z3's reason;
- frames: what a frame adds is gone when it is left, however it is left; a query's extras do not
  outlive their check;
- initiation and consecution on a two-line counter: proved, and refuted with the counterexample's
  states decoded;
- values read out of a model (signed numbers, unsigned bit-vectors, truths);
- no other module of the package runs z3's solver or reads its models itself.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import z3

from isrcheck.invariants.symbolic.logic import (
    Query,
    Solver,
    check,
    consecution,
    initiation,
    number,
    truth,
    unsigned,
)
from isrcheck.invariants.symbolic.verdicts import Verdict

SYMBOLIC = Path(__file__).resolve().parents[2] / "invariants" / "symbolic"


def test_a_check_is_proved_refuted_with_a_model_or_unknown_with_a_reason():
    x = z3.Int("x")
    proved = check(x > 0, x < 0)
    assert proved.verdict == Verdict.PROVED and proved.proved and proved.model is None and proved.reason == ""
    refuted = check(x > 3, x < 5)
    assert refuted.refuted and refuted.model is not None and number(refuted.model, x) == 4
    # Fermat's last theorem for cubes: z3 neither finds a model nor proves there is none in 0.2 s
    a, b, c = z3.Ints("a b c")
    unknown = check(a > 0, b > 0, c > 0, a * a * a + b * b * b == c * c * c, timeout=0.2)
    assert unknown.verdict == Verdict.UNKNOWN and unknown.unknown and unknown.model is None and unknown.reason


def test_a_frame_is_left_however_its_block_ends():
    x = z3.Int("x")
    s = Solver(None, x > 0)
    with s.frame():
        s.add(x < 0)
        assert s.check().proved
    assert s.check().refuted
    with pytest.raises(RuntimeError), s.frame():
        s.add(x < 0)
        raise RuntimeError("left early")
    assert s.check().refuted
    assert s.check(x < 0).proved and s.check().refuted  # an assumption holds for one check only


def test_a_querys_extras_hold_for_one_check():
    x = z3.Int("x")
    q = Query((x >= 0,), timeout=10)
    assert q.check(x < 0).proved
    assert q.check().refuted


def test_initiation_and_consecution_of_a_counter():
    """init x = 0; step x' = x + 1 while x < 3. ``x >= 0`` is inductive; ``x <= 2`` holds initially
    but a step breaks it: from 2 to 3. Formulas are terms over the states or predicates of them."""
    x, x1 = z3.Ints("x x1")
    step = Query((x < 3, x1 == x + 1))
    assert initiation(Solver(), x, [x == 0], x >= 0).verdict == Verdict.PROVED
    assert consecution(step, x, x1, [x >= 0], x1 >= 0).verdict == Verdict.PROVED
    assert consecution(step, x, x1, [lambda s: s >= 0], lambda s: s >= 0).verdict == Verdict.PROVED
    assert initiation(Solver(), x, [lambda s: s == 0], lambda s: s <= 2).verdict == Verdict.PROVED
    j = consecution(step, x, x1, [x <= 2], x1 <= 2)
    assert j.verdict == Verdict.REFUTED and j.counterexample(number) == (2, 3)
    # several goals: refuted by a step that breaks one of them, the model says which
    j = consecution(step, x, x1, [x >= 0, x <= 2], [x1 >= 0, x1 <= 2])
    assert j.counterexample(number) == (2, 3) and not truth(j.model, x1 <= 2) and truth(j.model, x1 >= 0)
    broken = initiation(Solver(), x, [x == 5], x <= 2)
    assert broken.verdict == Verdict.REFUTED and broken.counterexample(number) == (5,)
    assert consecution(step, x, x1, [x >= 0], x1 >= 0).counterexample(number) is None
    # on the caller's solver, which keeps the constraints
    s = Solver(None, x < 3, x1 == x + 1)
    j = consecution(s, x, x1, [x <= 2], lambda s: s <= 2)
    assert j.counterexample(number) == (2, 3)
    assert s.check().refuted and s.check(x != 2).proved  # the solver kept the step, inv and the violation


def test_an_answers_model_is_read_while_its_solver_lives():
    """A Solver's answer reads its model at first use, from the live solver, before it checks again;
    a Query's (or a detached) answer has it already."""
    x = z3.Int("x")
    s = Solver(None, x > 3)
    first = s.check()
    s.check(x > 10)
    with pytest.raises(RuntimeError):
        first.model  # noqa: B018
    kept = s.check().detached()
    del s
    assert number(kept.model, x) > 3
    assert number(Query((x == 7,)).check().model, x) == 7


def test_values_read_out_of_a_model():
    v, flag = z3.BitVec("v", 8), z3.Bool("flag")
    m = check(v == 0xFE, flag).model
    assert m is not None
    assert number(m, v) == -2 and unsigned(m, v) == 0xFE and truth(m, flag)
    assert not truth(m, z3.Bool("free"))  # a variable the model leaves free reads as false


def test_only_the_logic_layer_runs_the_solver():
    """Solver creation, frames, checks and model reading are written once, in logic.py: no other module
    of invariants/symbolic/ calls z3.Solver, push/pop, check(), model() or evaluates a model."""
    bad = []
    for path in sorted(SYMBOLIC.glob("*.py")):
        if path.name == "logic.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "z3" \
                    and node.attr in ("Solver", "SolverFor", "Optimize", "Then", "sat", "unsat", "unknown"):
                bad.append(f"{path.name}:{node.lineno} z3.{node.attr}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    node.func.attr in ("model", "reason_unknown", "eval")
                    or node.func.attr in ("push", "pop") and not node.args):  # a solver's frames (not a queue's pop)
                bad.append(f"{path.name}:{node.lineno} .{node.func.attr}()")
            if isinstance(node, ast.keyword) and node.arg == "model_completion":
                bad.append(f"{path.name}:{node.lineno} model_completion")
    assert bad == []
