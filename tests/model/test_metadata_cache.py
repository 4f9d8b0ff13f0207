"""metadata_cache = true: brokers keep the live brokers UpdateMetadata carries and follow only a leader
their cache lists (specs/05-replication.md#metadata-cache). These tests drive the model step by step."""
from __future__ import annotations

from shared import M

from isrcheck.model.history import configured_protocol
from isrcheck.model.metadatacache import UNKNOWN, MetadataCache
from isrcheck.model.config import from_mapping
from isrcheck.model.protocol import Protocol
from isrcheck.model.state import LEADER_AND_ISR, UPDATE_METADATA

CACHE = dict(brokers=3, replication_factor=2, max_records=0, metadata_cache=True, stale_controller=False,
             faults={"controller_failovers": 1, "crashes": 1})


def unknown(d, b: int) -> int:
    return d.protocol.field(d.s.brokers[b - 1], UNKNOWN)


def kinds(d, b: int) -> list[int]:
    return [r[0] for r in d.s.inbox[b - 1]]


def test_the_option_selects_the_cache_and_update_metadata_carries_the_live_set(kafka) -> None:
    assert type(configured_protocol(from_mapping({"brokers": 2}))) is Protocol
    d = kafka(**CACHE)
    assert isinstance(d.protocol, MetadataCache) and unknown(d, 1) == 0  # the initial UpdateMetadata was applied
    d.do("ControllerFailover")
    um = next(r for r in d.s.inbox[0] if r[0] == UPDATE_METADATA)
    assert um.metadata[0] == M(1, 2, 3)
    plain = kafka(**{**CACHE, "metadata_cache": False})
    plain.do("ControllerFailover")
    assert all(r.metadata == () for r in plain.s.inbox[0] if r[0] == UPDATE_METADATA)  # models without it keep their states


def test_a_restarted_broker_skips_a_leader_its_empty_cache_does_not_list(kafka) -> None:
    d = kafka(**CACHE)
    d.do("Crash", 1)
    d.do("ProcessBrokerChange", 1)  # 2 leads, epoch 1
    d.do("Restart", 1)
    assert unknown(d, 1) == M(1, 2, 3)  # empty cache
    d.do("DeliverRequest", 2)
    d.do("DeliverRequest", 3)
    d.do("ControllerFailover")
    assert kinds(d, 1) == [UPDATE_METADATA, LEADER_AND_ISR]  # the fixed order: UpdateMetadata first
    d.do("DeliverRequest", 1)
    assert unknown(d, 1) == 0
    d.do("DeliverRequest", 1)
    r = d.s.brokers[0].replicas[0]
    assert r.leader == 2 and r.leader_epoch == 1  # it follows


def test_kafka_4443s_order_leaves_the_restarted_broker_without_a_leader(kafka) -> None:
    d = kafka(**CACHE, reintroduce=["KAFKA-4443"])
    d.do("Crash", 1)
    d.do("ProcessBrokerChange", 1)
    d.do("Restart", 1)
    d.do("DeliverRequest", 2)
    d.do("DeliverRequest", 3)
    d.do("ControllerFailover")
    assert kinds(d, 1) == [LEADER_AND_ISR, UPDATE_METADATA]
    d.do("DeliverRequest", 1)
    r = d.s.brokers[0].replicas[0]
    assert r.leader != 2 and r.leader_epoch < 1  # skipped: 2 is unknown to the cache
    d.do("DeliverRequest", 1)
    assert unknown(d, 1) == 0 and d.s.inbox[0] == ()  # the cache is filled, but no LeaderAndIsr is left
    assert not any(a.name == "Fetch" and a.args[0] == 1 for a in d.enabled())


def test_an_update_metadata_with_news_is_queued_behind_one_of_its_epoch(kafka) -> None:
    d = kafka(**CACHE)
    d.do("ControllerFailover")  # UpdateMetadata {1,2,3} to broker 1, then its LeaderAndIsr
    d.do("Crash", 2)
    d.do("ProcessBrokerChange", d.s.controller.epoch)  # 2 leaves the ISR: UpdateMetadata {1,3}, same epoch
    lives = [r.metadata[0] for r in d.s.inbox[0] if r[0] == UPDATE_METADATA]
    assert lives == [M(1, 2, 3), M(1, 3)]  # not redundant: the second tells broker 1 that 2 is gone
