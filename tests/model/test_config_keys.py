"""The configuration's keys carry their metadata (model/config.py, KeyInfo): whether a key chooses
the protocol, and when the one-line header shows it. The command line reads that one list."""
from __future__ import annotations

import dataclasses

import pytest

from isrcheck.model.config import (METADATA, PROTOCOL_KEYS, Config, Faults, KeyInfo, Operations, from_mapping,
                                   key_info, settings)


@pytest.mark.parametrize("cls", [Config, Faults, Operations])
def test_every_field_of_the_configuration_has_metadata(cls):
    for f in dataclasses.fields(cls):
        assert isinstance(f.metadata.get(METADATA), KeyInfo), f"{cls.__name__}.{f.name} has no KeyInfo"
        assert key_info(f).shown in ("always", "changed", "never"), f.name


def test_settings_are_every_key_of_the_json_form_in_order():
    cfg = from_mapping({"brokers": 2, "replication_factor": 2, "faults": {"crashes": 1},
                        "operations": {"reassignments": [{"partition": 0, "target": [2, 1]}]}})
    flat = []
    for key, value in cfg.to_dict().items():
        flat += [(f"{key}.{k}", v) for k, v in value.items()] if isinstance(value, dict) else [(key, value)]
    assert [(s.name, s.value) for s in settings(cfg)] == flat
    changed = {s.name for s in settings(cfg) if s.changed}
    assert {"brokers", "replication_factor", "faults.crashes", "operations.reassignments"} <= changed
    assert "generation" not in changed and "acks" not in changed


def test_the_protocol_keys_are_those_the_metadata_marks():
    marked = tuple(f.name for f in dataclasses.fields(Config) if key_info(f).protocol)
    assert PROTOCOL_KEYS == marked
    assert {"generation", "acks", "min_insync_replicas", "fenced_controller_writes"} <= set(PROTOCOL_KEYS)
    assert not {"brokers", "max_records", "faults", "controller_connections"} & set(PROTOCOL_KEYS)
