"""Leader selectors against their contracts (invariants/symbolic/selectors.py).

- z3 proves every clause for the encoding of model/selectors.py, for every input;
- the encoding is the code: hypothesis compares them on random inputs over up to 8 brokers;
- the code satisfies every clause on every input over up to 3 brokers (enumeration);
- a mutated selector, passed through the variant hook (Protocol.select), is refuted with a
  concrete, readable input; so is a mutated z3 encoding, symbolically.
"""
from __future__ import annotations

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.invariants.symbolic.selectors import (
    CONTRACTS,
    ENCODINGS,
    ORDER,
    check_select_function,
    crosscheck,
    prove_clause,
    prove_selectors,
    violated_clauses,
)
from isrcheck.invariants.symbolic.types import SymElection, SymSelectorInput, bv_bit
from isrcheck.invariants.symbolic.logic import verdict_of
from isrcheck.invariants.symbolic.verdicts import EXIT_UNKNOWN, Obligation, Verdict, exit_code
from isrcheck.model.brokersets import mask_of
from isrcheck.model.config import Config
from isrcheck.model.protocol import Protocol
from isrcheck.model.selectors import SELECTORS, Election, NoEligibleLeader, Selector, SelectorInput


@pytest.mark.parametrize("selector", ORDER, ids=lambda s: s.value)
def test_every_clause_is_proved_for_the_encoding(selector):
    for clause in CONTRACTS[selector]:
        ob = prove_clause(selector, clause, 5, timeout=30)
        assert ob.verdict == Verdict.PROVED, (clause.name, ob.lines)


def test_prove_selectors_at_eight_brokers_is_all_proved():
    report = prove_selectors(8, timeout=60, samples=100, exhaustive_brokers=2)
    assert report.obligations and all(o.verdict == Verdict.PROVED for o in report.obligations)
    assert all(c.mismatch is None for c in report.agreement)
    assert any("does not check liveness" in n for n in report.notes)


@st.composite
def selector_inputs(draw, max_brokers: int = 8):
    n = draw(st.integers(1, max_brokers))
    ids = list(range(1, n + 1))
    ar = tuple(draw(st.permutations(ids))[: draw(st.integers(1, n))])
    target = tuple(draw(st.permutations(ids))[: draw(st.integers(0, n))])
    mask = st.sets(st.sampled_from(ids)).map(mask_of)
    return SelectorInput(ar, draw(st.sampled_from([0, *ids])), draw(mask), draw(mask), draw(mask), target,
                         draw(st.booleans()))


_CACHE: dict = {}


@settings(max_examples=150, deadline=None)
@given(selector=st.sampled_from(ORDER), inp=selector_inputs())
def test_the_encoding_is_the_code(selector, inp):
    enc, code, problem = crosscheck(selector, inp, 8, _CACHE)
    assert problem == ""
    assert enc == code


@pytest.mark.parametrize("selector", ORDER, ids=lambda s: s.value)
def test_the_code_meets_its_contract_on_every_small_input(selector):
    obs = check_select_function(lambda sel, inp: SELECTORS[sel](inp), selector, 3, "kafka-0.8")
    assert {o.verdict for o in obs} == {Verdict.PROVED}
    assert all(o.method == "exhaustive" for o in obs)


# ---------------------------------------------------------------------------- mutants
class OutsideIsr(Protocol):
    """A designer's mistake: a clean OfflinePartition election that ignores the ISR."""

    name = "outside-isr"

    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        if selector == Selector.OFFLINE_PARTITION:
            live = tuple(r for r in inp.assignment if inp.live >> r & 1)
            if not live:
                raise NoEligibleLeader(selector, "none")
            return Election(live[0], 1 << live[0], live)
        return super().select(selector, inp)


class PicksShuttingDown(Protocol):
    """ControlledShutdown that forgets to skip the brokers shutting down."""

    name = "picks-shutting-down"

    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        if selector == Selector.CONTROLLED_SHUTDOWN:
            for r in inp.assignment:
                if inp.isr >> r & 1:
                    return Election(r, inp.isr & ~inp.shutting_down | 1 << r,
                                    tuple(x for x in inp.assignment if inp.live >> x & 1))
            raise NoEligibleLeader(selector, "none")
        return super().select(selector, inp)


def test_a_selector_that_elects_outside_the_isr_is_refuted_with_an_input():
    proto = OutsideIsr(Config())
    report = prove_selectors(4, select=proto.select, generation=proto.name, samples=0,
                             selectors=[Selector.OFFLINE_PARTITION])
    refuted = {o.property: o for o in report.obligations if o.verdict == Verdict.REFUTED}
    ob = refuted["OfflinePartition: a clean election picks a live ISR member of AR"]
    text = "\n".join(ob.lines)
    for word in ("assignment", "ISR", "live", "shutting down", "picked"):
        assert word in text
    inp = SelectorInput(tuple(ob.counterexample["input"]["assignment"]), ob.counterexample["input"]["leader"] or 0,
                        mask_of(ob.counterexample["input"]["isr"]), mask_of(ob.counterexample["input"]["live"]),
                        mask_of(ob.counterexample["input"]["shutting_down"]), (),
                        ob.counterexample["input"]["unclean_election"])
    e = proto.select(Selector.OFFLINE_PARTITION, inp)  # the printed input really breaks the mutant
    assert not inp.isr >> e.leader & 1
    assert not report.symbolic


def test_a_selector_that_picks_a_shutting_down_broker_is_refuted():
    proto = PicksShuttingDown(Config())
    obs = check_select_function(proto.select, Selector.CONTROLLED_SHUTDOWN, 3, proto.name)
    bad = [o for o in obs if o.verdict == Verdict.REFUTED]
    assert "ControlledShutdown: never picks a shutting-down broker" in {o.property for o in bad}
    ob = next(o for o in bad if o.property.endswith("never picks a shutting-down broker"))
    picked = ob.counterexample["answer"]["leader"]
    assert picked in ob.counterexample["input"]["shutting_down"]


def test_a_mutated_encoding_is_refuted_symbolically():
    def bad_offline(i: SymSelectorInput) -> SymElection:
        e = ENCODINGS[Selector.OFFLINE_PARTITION](i)
        first = i.assignment[0]  # elects the head of AR whenever it is alive, ISR or not
        return SymElection(e.ok, z3.If(z3.Extract(0, 0, z3.LShR(i.live, first)) == 1, first, e.leader),
                           e.isr | bv_bit(first), e.receivers, e.unclean)

    clause = CONTRACTS[Selector.OFFLINE_PARTITION][1]
    ob = prove_clause(Selector.OFFLINE_PARTITION, clause, 4, 30, encoding=bad_offline)
    assert ob.verdict == Verdict.REFUTED
    inp = ob.counterexample["input"]
    assert inp["assignment"][0] in inp["live"] and inp["assignment"][0] not in inp["isr"]


def test_violated_clauses_reads_a_concrete_answer():
    inp = SelectorInput((1, 2), 1, mask_of([1]), mask_of([2]), 0, (), False)
    assert violated_clauses(Selector.OFFLINE_PARTITION, inp, (True, 2, mask_of([2]), mask_of([2]), False))


def test_unknown_is_never_proved():
    assert verdict_of(z3.unknown) == Verdict.UNKNOWN and verdict_of(z3.unsat) == Verdict.PROVED
    obs = [Obligation("x", "p", "g", Verdict.PROVED, 0.0), Obligation("x", "q", "g", Verdict.UNKNOWN, 0.0)]
    assert exit_code(obs) == EXIT_UNKNOWN
