"""Configuration keys (named as the model's) and the observation validator."""
from __future__ import annotations

import copy

import pytest

from isrcheck.impl.core.config import ConfigError, from_mapping, to_mapping
from isrcheck.impl.rigs.simulator import Simulator
from isrcheck.specs.observation import ObservationError, validate
from isrcheck.specs.protocol import GENERATION_NAMES, Generation


def test_defaults_follow_specs_03():
    c = from_mapping({})
    assert (c.brokers, c.partitions, c.replication_factor, c.min_insync_replicas) == (3, 1, 3, 1)
    assert c.assignment == ((1, 2, 3),)
    assert from_mapping({"brokers": 4, "partitions": 2, "replication_factor": 2}).assignment == ((1, 2), (2, 3))
    assert c.generation == "high-watermark" and c.hw_checkpoint == "periodic" and c.stale_controller


def test_a_model_configuration_configures_the_implementation():
    c = from_mapping({"name": "x", "description": "y", "brokers": 3, "max_records": 2,
                      "faults": {"crashes": 1}, "operations": {"reassignments": [{"partition": 0, "target": [2, 3]}]}})
    assert c.faults == {"crashes": 1}


@pytest.mark.parametrize("raw, message", [
    ({"generation": "kip-102"}, "generation must be one of"),
    ({"generation": 101}, "generation must be a string"),
    ({"truncation": "bogus"}, "truncation must be one of"),  # the alias: the message names the key given
    ({"generation": "kip-320", "truncation": "kip-320"}, "give generation or its alias truncation, not both"),
    ({"brokers": 0}, "brokers must be in"),
    ({"replication_factor": 4}, "replication_factor must be in"),
    ({"hw_checkpoint": "never"}, "hw_checkpoint"),
    ({"assignment": [[1, 1, 2]]}, "assignment[0]"),
    ({"colour": "blue"}, "unknown configuration key"),
    ({"acks": "2"}, "acks"),
    ({"max_fetch_records": -1}, "max_fetch_records must be in 0..1000000"),
    ({"max_fetch_records": "1"}, "max_fetch_records must be an integer"),
    ({"controller_connections": "tcp"}, "controller_connections must be \"shared\" or \"per-controller\""),
    ({"controller_connections": 1}, "controller_connections must be"),
])
def test_bad_configurations_are_one_line_errors(raw, message):
    with pytest.raises(ConfigError) as info:
        from_mapping(raw)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("key", ["generation", "truncation"])  # the key, and its alias
@pytest.mark.parametrize("rule", GENERATION_NAMES)
def test_every_generation_is_accepted(rule, key):
    from isrcheck.impl.core.broker import BrokerCore

    cfg = from_mapping({key: rule, "acks": 1, "detect_restarts": True, "fenced_controller_writes": True})
    assert (cfg.generation, cfg.acks, cfg.detect_restarts, cfg.fenced_controller_writes) == (rule, "1", True, True)
    assert cfg.generation is Generation(rule) and cfg.traits == Generation(rule).traits
    assert to_mapping(cfg)["generation"] == rule and "truncation" not in to_mapping(cfg)
    BrokerCore(cfg, 1)
    validate(Simulator(cfg).observe())


def test_a_rule_outside_the_generations_is_refused_by_the_core_too():
    from dataclasses import replace

    from isrcheck.impl.core.broker import BrokerCore

    with pytest.raises(ConfigError, match="generation must be one of"):
        BrokerCore(replace(from_mapping({}), generation="kip-999"), 1)


def test_the_validator_refuses_what_the_schema_forbids():
    obs = Simulator({"brokers": 3}).observe()
    validate(obs)
    cases = [
        (lambda o: o["partitions"][0].__setitem__("isr", [3, 1]), "partitions[0].isr: must be in ascending order"),
        (lambda o: o["brokers"][0].__setitem__("alive", 1), "brokers[0].alive: expected bool"),
        (lambda o: o["replicas"][0].__setitem__("role", "boss"), "replicas[0].role"),
        (lambda o: o["controller"].pop("epoch"), "controller.epoch: missing"),
        (lambda o: o["controller"].__setitem__("extra", 1), "controller.extra: unknown field"),
        (lambda o: o["replicas"][0].__setitem__("leader_epoch", -2), "replicas[0].leader_epoch: must be >= -1"),
        (lambda o: o["partitions"][0].__setitem__("replicas", [1, 1]), "partitions[0].replicas: items must be distinct"),
    ]
    for mutate, message in cases:
        bad = copy.deepcopy(obs)
        mutate(bad)
        with pytest.raises(ObservationError) as info:
            validate(bad)
        assert message in str(info.value)


@pytest.mark.parametrize("raw, named", [
    ({"isr_change": "alter-isr"}, "isr_change"),
    ({"metadata_cache": True}, "metadata_cache"),
], ids=["alter-isr", "metadata-cache"])
def test_the_models_later_growths_are_refused_in_one_line_and_their_defaults_accepted(raw, named) -> None:
    # the model's AlterIsr and metadata cache (specs/05) have no counterpart in the implementation
    with pytest.raises(ConfigError, match=named) as e:
        from_mapping(raw)
    assert "\n" not in str(e.value)
    from_mapping({"isr_change": "zookeeper", "metadata_cache": False})  # a model's full mapping names both
