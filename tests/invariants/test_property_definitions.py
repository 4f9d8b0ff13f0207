"""The property definitions (invariants/properties/) against specs/properties.toml, and each
property's two forms against each other.

- the code defines exactly the properties the file lists, each with the file's kind and in the
  family module the file names, and the checker's properties carry the file's descriptions and links;
  a definition that disagrees with the file refuses to load;
- ``check(s)`` holds exactly when ``offences(s)`` yields nothing (the fast form and the explanation
  are two forms of one predicate), on every reachable state of several models, on every step
  between them, and on edited copies of those states (which break every property);
- every exercised predicate and observation form belongs to an always or transition property.
"""
from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import pytest

from isrcheck.inputs import manifest
from isrcheck.conformance.cover import build_graph
from isrcheck.invariants import liveness as live
from isrcheck.invariants import properties as P
from isrcheck.invariants.properties.kinds import KIND_OF, Always, PropertyDefinitionError, Transition
from isrcheck.model.config import Config, Operations, Reassignment
from isrcheck.model.records import make_record
from isrcheck.specs.properties import NAMES, load_properties

LISTED = load_properties()


def _defined() -> list[tuple[str, Any]]:
    """(family module's last name, definition) for every definition of every family module."""
    return [(m.__name__.rpartition(".")[2], d) for m in P.FAMILIES for d in m.DEFINITIONS]


# ---------------------------------------------------------------------------- the code and the file
def test_the_code_defines_exactly_the_listed_properties():
    defined = _defined()
    names = [d.name for _, d in defined]
    assert len(names) == len(set(names)), "a property defined twice"
    assert set(names) == {p.name for p in LISTED}
    by_name = {d.name: (family, d) for family, d in defined}
    for p in LISTED:
        family, d = by_name[p.name]
        assert KIND_OF[type(d)] == p.kind, p.name
        assert family == p.family, p.name
    assert list(P.DEFINITIONS) == [p.name for p in LISTED]


def test_the_checker_and_the_liveness_check_use_the_files_names_kinds_and_descriptions():
    safety = [(p.name, p.kind, p.spec, p.description) for p in LISTED if p.kind != "liveness"]
    assert [(p.name, p.kind, p.spec, p.description) for p in P.ALL_PROPERTIES] == safety
    liveness = [p for p in LISTED if p.kind == "liveness"]
    assert list(live.LIVENESS_NAMES) == [p.name for p in liveness]
    cfg = Config(operations=Operations(reassignments=(Reassignment(0, (1, 2)),)))
    for p in liveness:
        prop = live.liveness_property(p.name, cfg)
        assert (prop.spec, prop.description) == (p.spec, p.description)
        assert live.LIVENESS_DESCRIPTIONS[p.name] == p.description


def _fake_family(name: str, *definitions: Any) -> ModuleType:
    m = ModuleType(f"isrcheck.invariants.properties.{name}")
    m.DEFINITIONS = definitions  # type: ignore[attr-defined]
    return m


def test_a_definition_that_disagrees_with_the_file_refuses_to_load():
    families = list(P.FAMILIES)
    leadership = families[0]
    assert leadership.__name__.endswith(".leadership")
    defs = leadership.DEFINITIONS
    # a property the file lists and no module defines
    families[0] = _fake_family("leadership", *defs[1:])
    with pytest.raises(PropertyDefinitionError, match="lists LeaderInIsr, which no module"):
        P._definitions(tuple(families))
    # defined with another kind than the file's
    as_transition = Transition(defs[0].name, lambda s, t: True)
    families[0] = _fake_family("leadership", as_transition, *defs[1:])
    with pytest.raises(PropertyDefinitionError, match="as transition; specs/properties.toml says always"):
        P._definitions(tuple(families))
    # in another family's module
    families[0] = _fake_family("isr", *defs)
    with pytest.raises(PropertyDefinitionError, match="puts it in family leadership"):
        P._definitions(tuple(families))
    # twice
    families[0] = _fake_family("leadership", *defs, defs[0])
    with pytest.raises(PropertyDefinitionError, match="a second time"):
        P._definitions(tuple(families))
    assert list(P._definitions(P.FAMILIES)) == [p.name for p in LISTED]


def test_names_come_from_the_file():
    assert NAMES.NoCommittedWriteLost == "NoCommittedWriteLost"
    assert list(NAMES) == [p.name for p in LISTED]
    with pytest.raises(AttributeError, match="lists no property 'NoCommitedWriteLost'"):
        NAMES.NoCommitedWriteLost  # noqa: B018 - the misspelling is the point


def test_the_other_views_name_only_always_and_transition_properties():
    kinds = {p.name: p.kind for p in LISTED}
    assert {kinds[n] for n in P.STATE_PREDICATES} == {"always"}
    assert {kinds[n] for n in P.STEP_PREDICATES} == {"transition"}
    assert {kinds[n] for n in P.OBSERVATION_PROPERTIES} == {"always"}
    # every always and transition property of the project says when a step exercises it
    assert set(P.STATE_PREDICATES) | set(P.STEP_PREDICATES) == {n for n, k in kinds.items()
                                                                if k in ("always", "transition")}


# ---------------------------------------------------------------------------- check against offences
# failing models (their graphs hold the violating states) and passing ones, one and two partitions,
# reassignment, failover, deletion, lossy crashes, and two of Kafka's bugs put back
MODELS = ["hw-truncation-one-crash", "unclean-election", "lossy-undetected-restart", "reassignment",
          "controller-failover", "topic-deletion", "clean-election", "two-partitions", "lossy-crash",
          # Kafka bugs put back (specs/history.toml): the only graphs where the model's rules break
          # EpochCacheCoversLog and ReassignmentRequestHonoured
          "history-kafka-10432", "history-kafka-6193"]
ALWAYS = [d for d in P.DEFINITIONS.values() if isinstance(d, Always)]
TRANSITION = [d for d in P.DEFINITIONS.values() if isinstance(d, Transition) and d.offences is not None]


def _edit(s: Any, rng: random.Random) -> Any:
    """``s`` with one field changed at random: an ISR, a leader, an epoch, a replica's HW, log or
    leader, a broker's liveness, an acknowledged or exposed record, an assignment."""
    parts, brokers, ghost = list(s.zk.partitions), list(s.brokers), list(s.ghost)
    p = rng.randrange(len(parts))
    n = len(brokers)
    kind = rng.randrange(8)
    if kind == 0:
        parts[p] = parts[p]._replace(isr=rng.randrange(1 << (n + 1)) & ~1)
    elif kind == 1:
        parts[p] = parts[p]._replace(leader=rng.randrange(n + 1), leader_epoch=max(0, parts[p].leader_epoch + rng.choice((-1, 1))))
    elif kind == 2:
        parts[p] = parts[p]._replace(replicas=tuple(rng.sample(range(1, n + 1), rng.randrange(1, n + 1))))
    elif kind == 3:
        b = rng.randrange(n)
        brokers[b] = brokers[b]._replace(alive=not brokers[b].alive,
                                         controller_epoch=max(0, brokers[b].controller_epoch - rng.randrange(2)))
    elif kind == 4:
        ghost[p] = ghost[p]._replace(acked=ghost[p].acked | 1 << rng.randrange(1, 4))
    elif kind == 5:
        ghost[p] = ghost[p]._replace(exposed=ghost[p].exposed + (make_record(rng.randrange(1, 4), 0),))
    else:
        b = rng.randrange(n)
        reps = list(brokers[b].replicas)
        r = reps[p]
        if r is None:
            return None
        if kind == 6:
            log = r.log[:-1] if r.log and rng.random() < 0.5 else r.log + (make_record(rng.randrange(1, 4), rng.randrange(3)),)
            reps[p] = r._replace(log=log, hw=max(0, r.hw + rng.choice((-1, 0, 1, 2))))
        else:
            reps[p] = r._replace(leader=rng.randrange(n + 1), leader_epoch=max(0, r.leader_epoch + rng.choice((-1, 1))))
        brokers[b] = brokers[b]._replace(replicas=tuple(reps))
    zk = s.zk._replace(partitions=tuple(parts), controller_epoch=max(1, s.zk.controller_epoch - (kind == 1)))
    return s._replace(zk=zk, brokers=tuple(brokers), ghost=tuple(ghost))


@pytest.fixture(scope="module")
def broken_seen() -> dict[str, int]:
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_check_holds_exactly_when_there_is_no_offence(name, broken_seen):
    sg = build_graph(manifest.get(name).config)
    rng = random.Random(name)
    states = list(sg.states.values())
    edited = [t for t in (_edit(s, rng) for s in states[:4000]) if t is not None]
    for s in states + edited:
        for d in ALWAYS:
            found = list(d.offences(s))
            assert d.check(s) == (not found), (name, d.name, found)
            if found:
                broken_seen[d.name] = broken_seen.get(d.name, 0) + 1
    steps = [(sg.states[u], sg.states[v]) for u, v in sg.graph.edges()]
    steps += [(s, t) for s in states[:4000] if (t := _edit(s, rng)) is not None]
    for s, t in steps:
        for d in TRANSITION:
            found = list(d.offences(s, t))
            assert d.check(s, t) == (not found), (name, d.name, found)
            if found:
                broken_seen[d.name] = broken_seen.get(d.name, 0) + 1


@pytest.mark.slow
def test_the_agreement_covered_a_violation_of_every_property(broken_seen):
    """Runs after the models above (same module, same worker): each two-form property was seen
    broken, so the agreement was tested where it matters."""
    if not broken_seen:
        pytest.skip("run with the agreement tests")
    assert sorted(d.name for d in ALWAYS + TRANSITION if not broken_seen.get(d.name)) == []
