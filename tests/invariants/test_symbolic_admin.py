"""Topic creation in the z3 replication encoding (invariants/symbolic/admin.py).

- one step: on sampled reachable states of topic-creation, topic-creation-kip-320 and a two-partition
  variant with unclean election, the encoding enables exactly the model's actions and each leads to
  exactly the model's successor, field by field (the controller's partition and replica states and
  which brokers host a replica included); the samples must exercise CreateTopic and a broker change
  that initialises a New partition;
- properties: the encoded properties agree with invariants/properties.py on reachable states;
- decode: a z3 model of a state decodes into the model's State (unhosted replicas are None);
- bounded model checking agrees with the explicit checker at depth 5 on topic-creation (the manifest
  agreement test covers depth 3 for every covered model; depth 8 with ISRCHECK_SLOW=1).
"""
from __future__ import annotations

import os
from collections import Counter

import pytest

from isrcheck.inputs import manifest
from isrcheck.engine.checker import Checker
from isrcheck.invariants import build_model
from isrcheck.invariants.symbolic.instance import Unsupported
from isrcheck.invariants.symbolic.replication import (ALWAYS, TRANSITION, Encoding, concrete, evaluate,
                                                      unsupported_reason)
from isrcheck.model.actions import apply, enabled_actions
from isrcheck.model.config import from_mapping
from isrcheck.model.tables import PartitionState as PS
from z3_compare import BY_NAME, AtStates, assert_one_step_agrees, bmc_lengths, comparable, model_of
from z3_states import reachable, sample
slow = pytest.mark.skipif(not os.environ.get("ISRCHECK_SLOW"), reason="slow z3 run: set ISRCHECK_SLOW=1")

MIXED = {
    "creation-two-partitions-unclean": {
        "brokers": 3, "partitions": 2, "replication_factor": 2, "max_records": 1, "unclean_leader_election": True,
        "operations": {"topic_creation": True}, "faults": {"crashes": 2, "isr_shrinks": 1}},
}

# name -> (reachable states to explore, states sampled, queue capacity: the mixed model queues more
# than the default 3 requests at a broker)
STEP = {"topic-creation": (1259, 25, None), "topic-creation-kip-320": (1283, 25, None),
        "creation-two-partitions-unclean": (3000, 15, 6),
        "topic-deletion": (6782, 18, None), "topic-deletion-kip-320": (8306, 18, None)}
REQUIRED = {"creation": {"CreateTopic"},
            "deletion": {"RequestTopicDeletion", "StartTopicDeletion", "CompleteTopicDeletion",
                         "DeliverRequest: StopReplica (delete)"}}


# one replica: CreateTopic can find its only broker down and leave the partition New
SMALL = {"brokers": 2, "replication_factor": 1, "max_records": 1, "operations": {"topic_creation": True},
         "faults": {"crashes": 1}}


def config_of(name: str):
    return from_mapping(MIXED[name]) if name in MIXED else manifest.get(name).config


def explicit_encoded_lengths(cfg, depth: int) -> dict[str, int]:
    """The explicit checker's shortest violation of each encoded property within ``depth`` steps
    (violations of the properties the encoding leaves out are left out)."""
    result = Checker(build_model(cfg, symmetry=False), stop_on_first=False, max_depth=depth).run()
    encoded = set(ALWAYS) | set(TRANSITION)
    return {v.property: v.length for v in result.violations if v.length <= depth and v.property in encoded}


def _new_partition_waiting(s) -> bool:
    """The controller created the partition but no live replica could lead it yet (New, version 0)."""
    return any(ps == PS.NEW for ps in s.controller.partition_states)


@pytest.mark.parametrize("name", sorted(STEP))
def test_one_step_agrees_with_the_model(name):
    cfg = config_of(name)
    limit, n, queue = STEP[name]
    enc = Encoding(cfg, queue=queue)
    assert enc.ops is not None and enc.ops.admin is not None
    shape = enc.fresh("shape")
    kinds: Counter[str] = Counter()
    states = reachable(cfg, limit)
    waiting = [s for s in states if _new_partition_waiting(s)]
    assert waiting or name.startswith("topic-"), "no reachable state with a New partition"
    # deletion: the first states where a replica is ineligible, one or every replica is deleted, the
    # deletion completed
    busy = [next((s for s in states if pred(s)), None) for pred in (
        lambda s: any(6 in row for row in s.controller.replica_states),
        lambda s: s.zk.deleting and any(r is None for br in s.brokers for r in br.replicas),
        lambda s: s.zk.deleting and all(r is None for br in s.brokers for r in br.replicas),
        lambda s: not s.zk.partitions[0].replicas)]
    for s in sample(states, n) + waiting[:3] + [s for s in busy if s is not None]:
        assert_one_step_agrees(enc, s, name, shape, kinds, legal=True)
    required = REQUIRED["deletion" if "deletion" in name else "creation"]
    assert required <= set(kinds), required - set(kinds)
    assert any(k.startswith("ProcessBrokerChange") for k in kinds)


def test_an_illegal_partition_move_is_flagged_as_the_model_refuses_it():
    """OnlyValidTransitions in the encoding (``Instance.illegal``): CompleteTopicDeletion moves a
    partition the controller still holds Online to NonExistent in a doctored state — the model raises
    IllegalTransition, the encoding flags that instance and no other."""
    from isrcheck.model.tables import IllegalTransition

    cfg = config_of("topic-deletion")
    enc = Encoding(cfg)
    assert enc.step_faults() == ("OnlyValidTransitions",)
    ready = next(s for s in reachable(cfg, 6782)
                 if any(a.name == "CompleteTopicDeletion" for a in enabled_actions(enc.protocol, s)))
    online = tuple(PS.ONLINE if ps != PS.NON_EXISTENT else ps for ps in ready.controller.partition_states)
    doctored = ready._replace(controller=ready.controller._replace(partition_states=online))
    (act,) = [a for a in enabled_actions(enc.protocol, doctored) if a.name == "CompleteTopicDeletion"]
    with pytest.raises(IllegalTransition):
        apply(enc.protocol, doctored, act)
    insts = enc.instances(concrete(enc, doctored))
    flagged = {i.label() for i, g, bad in zip(insts, evaluate([i.guard for i in insts]),
                                               evaluate([i.illegal for i in insts])) if g and bad}
    assert flagged == {str(act)}
    assert not evaluate([i.illegal for i in enc.instances(concrete(enc, ready)) if i.label() == str(act)])[0]


def test_a_broker_change_initialises_a_new_partition():
    """CreateTopic while every replica's broker is down leaves the partition New; the broker change
    that sees one come back creates the znode (version 1, leader epoch 0) as the model does."""
    cfg = from_mapping(SMALL)
    enc = Encoding(cfg)
    states = reachable(cfg, 500)
    s = next(s for s in states if _new_partition_waiting(s) and s.brokers[0].alive and not s.controller.live & 2)
    (a,) = [a for a in enabled_actions(enc.protocol, s) if a.name == "ProcessBrokerChange"]
    t = apply(enc.protocol, s, a)
    assert t.zk.partitions[0].version == 1 and t.controller.partition_states[0] == PS.ONLINE
    insts = [i for i in enc.instances(concrete(enc, s)) if i.label() == str(a)]
    (got,) = [i for i, g in zip(insts, evaluate([i.guard for i in insts])) if g]
    shape = enc.fresh("shape")
    want = comparable(enc, t, shape)
    got_values = evaluate(got.effect.leaves())
    assert [g for g, w in zip(got_values, want) if w is not None] == [w for w in want if w is not None]


def test_encoded_properties_agree_on_topic_creation():
    cfg = config_of("creation-two-partitions-unclean")
    enc = Encoding(cfg, queue=6)
    states = reachable(cfg, 3000)
    bad = [s for s in states if not all(BY_NAME[n].check(s) for n in ALWAYS)]
    at = AtStates(enc, lambda sym: [enc.properties(sym)[n] for n in ALWAYS])
    for s in sample(bad, 15) + sample(states, 25):
        got = at.values(s)
        assert got == [BY_NAME[n].check(s) for n in ALWAYS]


def test_decode_gives_back_partition_and_replica_states():
    cfg = from_mapping(SMALL)
    enc = Encoding(cfg)
    states = reachable(cfg, 500)
    chosen = [states[0]] + [s for s in states if _new_partition_waiting(s)][:2]
    chosen += [s for s in states if any(r is None for br in s.brokers for r in br.replicas)
               and s.controller.partition_states[0] == PS.ONLINE][:2]
    assert len(chosen) == 5
    for s in chosen:
        sym = enc.fresh("d")
        back = sym.decode(model_of(sym.pin(s)), enc.init_state)
        assert back.controller.partition_states == s.controller.partition_states
        assert back.controller.replica_states == s.controller.replica_states
        assert [[r is None for r in br.replicas] for br in back.brokers] == \
            [[r is None for r in br.replicas] for br in s.brokers]
        assert back.zk.partitions == s.zk.partitions and back.inbox == s.inbox


def test_scope_of_topic_creation_and_deletion():
    for name in ("topic-creation", "topic-creation-kip-320", "topic-deletion", "topic-deletion-kip-320"):
        assert unsupported_reason(manifest.get(name).config) == "", name
    for ops, what in [({"topic_creation": True}, "topic creation"), ({"topic_deletions": 1}, "topic deletion")]:
        combined = from_mapping({"brokers": 3, "replication_factor": 2, "operations": ops,
                                 "faults": {"controller_failovers": 1}})
        with pytest.raises(Unsupported, match=f"{what} .*only without controller failover"):
            Encoding(combined)
    both = from_mapping({"brokers": 3, "replication_factor": 2,
                         "operations": {"topic_creation": True, "topic_deletions": 1}})
    with pytest.raises(Unsupported, match="creation and deletion together"):
        Encoding(both)
    # the deletion models queue up to five requests at a broker (four under high-watermark)
    assert Encoding(manifest.get("topic-deletion-kip-320").config).Q == 5


def test_encoded_properties_agree_on_topic_deletion():
    """Including states where a replica in the ISR is already deleted (the Python properties skip a
    partition queued for deletion; so must the encoded ones)."""
    cfg = manifest.get("topic-deletion").config
    enc = Encoding(cfg)
    states = reachable(cfg, 6782)
    deleted_in_isr = [s for s in states if s.zk.deleting and any(
        s.brokers[b - 1].replicas[0] is None and s.zk.partitions[0].isr >> b & 1 for b in (1, 2, 3))]
    assert deleted_in_isr
    at = AtStates(enc, lambda sym: [enc.properties(sym)[n] for n in ALWAYS])
    for s in sample(states, 25) + deleted_in_isr[:5]:
        got = at.values(s)
        assert got == [BY_NAME[n].check(s) for n in ALWAYS]


def test_decode_gives_back_the_deletion_state():
    cfg = manifest.get("topic-deletion").config
    enc = Encoding(cfg)
    states = reachable(cfg, 6782)
    chosen = [s for s in states if any(getattr(r, "delete", False) for q in s.inbox for r in q)][:2]
    chosen += [s for s in states if not s.zk.partitions[0].replicas][:2]
    assert len(chosen) == 4
    for s in chosen:
        sym = enc.fresh("d")
        back = sym.decode(model_of(sym.pin(s)), enc.init_state)
        assert back.zk == s.zk._replace(registrations=back.zk.registrations) and back.inbox == s.inbox
        assert back.controller.replica_states == s.controller.replica_states
        assert back.controller.partition_states == s.controller.partition_states
        assert back.budget.topic_deletions == s.budget.topic_deletions
        assert [[r is None for r in br.replicas] for br in back.brokers] == \
            [[r is None for r in br.replicas] for br in s.brokers]


def test_bmc_agrees_on_topic_deletion():
    cfg = manifest.get("topic-deletion").config
    assert bmc_lengths(cfg, 5) == explicit_encoded_lengths(cfg, 5)


def test_bmc_agrees_on_topic_creation():
    cfg = manifest.get("topic-creation").config
    assert bmc_lengths(cfg, 5) == explicit_encoded_lengths(cfg, 5)


@pytest.mark.slow
@slow
@pytest.mark.parametrize("name", ["topic-creation", "topic-creation-kip-320", "topic-deletion",
                                  "topic-deletion-kip-320"])
def test_bmc_agrees_on_topic_creation_and_deletion_deeper(name):
    cfg = manifest.get(name).config
    assert bmc_lengths(cfg, 8) == explicit_encoded_lengths(cfg, 8)
