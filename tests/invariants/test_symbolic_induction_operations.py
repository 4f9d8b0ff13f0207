"""`prove inductive` on the controller operations and on a mutated protocol (specs/08-symbolic.md,
"Inductive invariants" and "A mutated protocol").

- the bounds induction assumes of the controller side (budgets, controller epochs, replica states,
  reassignment list indices and steps) hold on reachable states of the operation models, so
  assuming them loses no reachable state;
- reassignment, controlled shutdown and topic creation configurations are accepted: every encoded
  property (with reassignments IsrSubsetOfReplicas, ReassignmentRecoverable and OnlyValidTransitions
  too) gets PROVED, or a counterexample to induction that the explicit checker classifies;
- a mutated protocol (a new follower keeps its log instead of truncating it) fails to prove, and
  the explicit checker running the mutated model turns the counterexample to induction into a real
  run that breaks the property.
"""
from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from isrcheck.inputs import manifest
from isrcheck.cli import main
from isrcheck.invariants import build_model
from isrcheck.invariants.symbolic.candidates import CANDIDATES
from isrcheck.invariants.symbolic.houdini import prove_inductive
from isrcheck.invariants.symbolic.pool import HIGH_WATERMARK_STRENGTHENING, bounds
from isrcheck.invariants.symbolic.mutations import MUTATIONS, NoTruncationOnBecomingFollower
from isrcheck.invariants.symbolic.reach import classify
from isrcheck.invariants.symbolic.replication import Encoding, concrete, evaluate
from isrcheck.invariants.symbolic.verdicts import Verdict
from isrcheck.model.action_text import from_json
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping
from z3_compare import AtStates
from z3_states import reachable, sample

SMALL_REASSIGNMENT = {"brokers": 3, "replication_factor": 2, "max_records": 0,
                      "operations": {"reassignments": [{"partition": 0, "target": [2, 3]}]}}
MUTATION_CFG = {"brokers": 2, "replication_factor": 2, "max_records": 2, "faults": {"crashes": 1}}


def _model(name: str):
    return manifest.resolve(name, None, ()).config


def test_the_bounds_hold_on_reachable_states_of_the_operation_models():
    for name in ("reassignment", "reassignment-broker-crash", "controller-failover", "controlled-shutdown",
                 "preferred-election", "topic-creation", "deposed-controller-ar-write"):
        cfg = _model(name)
        enc = Encoding(cfg, split_broker_change=True)
        states = sample(reachable(cfg, 3000), 150)
        assert len(states) > 20, name
        at = AtStates(enc, lambda sym: [bounds(enc, sym)])  # built once, valued at each state
        got = [at.values(s)[0] for s in states]
        assert all(got), (name, [s for s, ok in zip(states, got) if not ok][:1])
        assert evaluate([bounds(enc, concrete(enc, states[-1]))]) == [True]  # built over a state's values too


def _pool(names: tuple[str, ...]):
    return tuple((n, f) for n, f in CANDIDATES if n in names)


def _every_property_decided(res, enc_props: tuple[str, ...]) -> dict[str, Verdict]:
    v = {o.property: o for o in res.obligations}
    assert set(enc_props) <= set(v), sorted(v)
    for o in v.values():
        assert o.verdict in (Verdict.PROVED, Verdict.REFUTED), (o.property, o.verdict, o.detail)
        if o.verdict == Verdict.REFUTED:
            assert o.cti is not None and o.cti.lines, o.property
    return {n: o.verdict for n, o in v.items()}


def test_prove_inductive_accepts_a_reassignment():
    """The 12-step reassignment [1,2] -> [2,3] without records or faults: accepted (no longer exit 2),
    with the two reassignment properties and OnlyValidTransitions among the verdicts."""
    cfg = from_mapping(SMALL_REASSIGNMENT)
    res = prove_inductive(cfg, candidates=_pool(("WellFormed", "VersionsBounded", "EpochsBounded")),
                          timeout=120.0, per_action=False)
    got = _every_property_decided(res, ("IsrSubsetOfReplicas", "ReassignmentRecoverable", "LeaderInIsr",
                                        "OnlyValidTransitions", "EpochsMonotonic"))
    assert got["OneLeaderPerEpoch"] == Verdict.PROVED or got["OneLeaderPerEpoch"] == Verdict.REFUTED
    # every refuted one is classified by the explicit checker: the model has no violation here
    assert Checker(build_model(cfg)).run().outcome == "success"
    info = classify(cfg, res.obligations, 20_000, kinds=res.per_kind)
    assert info["reachable"] == [] and all(o.verdict in (Verdict.PROVED, Verdict.NOT_INDUCTIVE)
                                           for o in res.obligations)


@pytest.mark.skipif(not os.environ.get("ISRCHECK_SLOW"),
                    reason="slow z3 run (about 80 s; CI time): set ISRCHECK_SLOW=1")
def test_prove_inductive_on_controlled_shutdown_and_topic_creation():
    """With the pinned high-watermark strengthening: the shutdown path preserves LeaderInIsr,
    OneLeaderPerEpoch and EpochsMonotonic; under topic creation LeaderInIsr, LogMatching and
    ConsistentRead are proved, and the states before the topic exists (no znode: version 0) are in
    scope: EpochsMonotonic and OnlyValidTransitions get counterexamples through CreateTopic from such
    a state (no candidate yet says what an unborn topic holds)."""
    for name in ("controlled-shutdown", "topic-creation"):
        cfg = _model(name)
        res = prove_inductive(cfg, candidates=_pool(HIGH_WATERMARK_STRENGTHENING), timeout=120.0, per_action=False)
        got = _every_property_decided(res, ("LeaderInIsr", "StrongIsr", "NoCommittedWriteLost", "EpochsMonotonic"))
        if name == "controlled-shutdown":
            assert got["LeaderInIsr"] == got["OneLeaderPerEpoch"] == got["EpochsMonotonic"] == Verdict.PROVED, got
            assert "OnlyValidTransitions" not in got
            continue
        assert got["LeaderInIsr"] == got["LogMatching"] == got["ConsistentRead"] == Verdict.PROVED, got
        v = {o.property: o for o in res.obligations}
        for prop in ("EpochsMonotonic", "OnlyValidTransitions"):
            cti = v[prop].cti
            assert cti is not None and cti.action.startswith("CreateTopic("), (prop, v[prop].detail)
            assert cti.before.zk.partitions[0].version == 0


def test_a_mutated_protocol_fails_to_prove_with_a_real_counterexample(tmp_path):
    """No truncation on becoming follower: `prove inductive --mutation` refutes a property, and the
    run the explicit checker (on the mutated model) attaches really breaks it; the unmutated model
    holds every property on the same configuration."""
    cfg = from_mapping(MUTATION_CFG)
    assert Checker(build_model(cfg)).run().outcome == "success"
    assert "no-truncation-on-becoming-follower" in MUTATIONS
    f = tmp_path / "two.toml"
    f.write_text("brokers = 2\nreplication_factor = 2\nmax_records = 2\n[faults]\ncrashes = 1\n")
    r = CliRunner().invoke(main, ["prove", "inductive", "--config", str(f), "--mutation",
                                  "no-truncation-on-becoming-follower", "--json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and doc["verdict"] == "REFUTED" and doc["mutation"], doc["summary"]
    refuted = [o for o in doc["obligations"] if o["verdict"] == "REFUTED"]
    assert refuted and set(doc["reachability"]["reachable"]) == {o["property"] for o in refuted}
    mutant = build_model(cfg, protocol=NoTruncationOnBecomingFollower(cfg))
    props = {p.name: p for p in mutant.properties()}
    for o in refuted:
        trace = o["counterexample"]["trace"]
        assert trace and "REFUTED" in o["detail"]
        # replay the printed actions on the mutated model: every step enabled, the last breaks it
        s = mutant.init_states()[0]
        for step in trace[1:]:
            a = from_json(step["action"])
            assert a in list(mutant.actions(s)), step["action"]
            s = mutant.next_state(s, a)
        assert not props[o["property"]].check(s), o["property"]
        assert o["property"] in ("StrongIsr", "NoCommittedWriteLost", "LogMatching", "ConsistentRead")


def test_a_mutation_is_refused_outside_its_generation():
    r = CliRunner().invoke(main, ["prove", "inductive", "leader-crash-kip-320", "--mutation",
                                  "no-truncation-on-becoming-follower"])
    assert r.exit_code == 2 and r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
    r = CliRunner().invoke(main, ["prove", "inductive", "replication", "--mutation", "nonsense"])
    assert r.exit_code == 2 and "unknown mutation" in r.stderr
