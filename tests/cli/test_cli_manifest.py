"""The manifest: validation of models.toml (isrcheck.specs.manifest, read with the model's reader of
isrcheck.inputs.manifest) and comparison of results with expectations (isrcheck.inputs.manifest)."""
from __future__ import annotations

import copy
import dataclasses

import pytest

from isrcheck.inputs import manifest
from isrcheck.inputs.manifest import MODEL_READER, compare
from isrcheck.engine.checker import CheckResult, Step, Violation
from isrcheck.specs.manifest import ManifestError, UnknownModel, get, parse_manifest, select

GOOD = {
    "model": [
        {"name": "ok", "description": "fine", "gate": "default", "expect": "success", "states": 25,
         "config": {"brokers": 3, "max_records": 1}},
        {"name": "bug", "description": "broken", "gate": "all", "expect": "safety_failure",
         "property": "NoCommittedWriteLost", "length": 8,
         "config": {"brokers": 3, "max_records": 1, "faults": {"crashes": 1}}},
    ]
}


def _bad(change) -> str:
    doc = copy.deepcopy(GOOD)
    change(doc["model"][1])
    with pytest.raises(ManifestError) as e:
        parse_manifest(doc, MODEL_READER)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_good_manifest_parses():
    ok, bug = parse_manifest(GOOD, MODEL_READER)
    assert ok.name == "ok" and ok.states == 25 and ok.property is None and ok.config.max_records == 1
    assert bug.expect == "safety_failure" and bug.length == 8 and bug.config.faults.crashes == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        ok.name = "x"  # type: ignore[misc]


def test_packaged_manifest_is_valid():
    entries = manifest.load()
    assert entries and len({e.name for e in entries}) == len(entries)
    assert all(e.gate in ("default", "all") for e in entries)


@pytest.mark.parametrize("change, fragments", [
    (lambda m: m.update(colour="red"), ["model 'bug'", "unknown key 'colour'"]),
    (lambda m: m.pop("gate"), ["model 'bug'", "missing gate"]),
    (lambda m: m.pop("description"), ["missing description"]),
    (lambda m: m.update(expect="failure"), ["expect must be one of"]),
    (lambda m: m.update(gate="nightly"), ["gate must be one of"]),
    (lambda m: m.pop("length"), ["needs both property and length"]),
    (lambda m: m.update(length=0), ["length must be a positive integer"]),
    (lambda m: m.update(length="8"), ["length must be a positive integer"]),
    (lambda m: m.update(length=True), ["length must be a positive integer"]),
    (lambda m: m.update(property="NoCommitedWriteLost"), ["unknown property", "did you mean 'NoCommittedWriteLost'"]),
    (lambda m: m.update(states=5), ["states is pinned only"]),
    (lambda m: m.update(symmetry="yes"), ["symmetry must be true or false"]),
    (lambda m: m["config"].update(replication_factor=4), ["model 'bug'", "config:", "replication_factor"]),
    (lambda m: m["config"].update(bogus=1), ["config:", "bogus"]),
    (lambda m: m.update(config=3), ["config must be a table"]),
    (lambda m: m.update(name="ok"), ["'ok' is defined twice"]),
])
def test_bad_entries(change, fragments):
    msg = _bad(change)
    for f in fragments:
        assert f in msg, (f, msg)


def test_success_entry_rejects_property():
    doc = copy.deepcopy(GOOD)
    doc["model"][0]["property"] = "LeaderInIsr"
    with pytest.raises(ManifestError, match="only to expect"):
        parse_manifest(doc, MODEL_READER)


def test_unknown_top_level_key():
    with pytest.raises(ManifestError, match="unknown top-level key 'models'"):
        parse_manifest({"models": []}, MODEL_READER)


def test_get_suggests_a_close_name():
    entries = parse_manifest(GOOD, MODEL_READER)
    with pytest.raises(UnknownModel, match="did you mean 'bug'"):
        get("bugg", entries)
    assert get("ok", entries).name == "ok"


def test_select():
    entries = parse_manifest(GOOD, MODEL_READER)
    assert [e.name for e in select(entries)] == ["ok"]
    assert [e.name for e in select(entries, everything=True)] == ["ok", "bug"]
    assert [e.name for e in select(entries, ["bug"])] == ["bug"]


def test_config_with_overrides():
    ok = parse_manifest(GOOD, MODEL_READER)[0]
    cfg = ok.config_with(["faults.crashes=2", "max_records=2"])
    assert cfg.faults.crashes == 2 and cfg.max_records == 2
    assert ok.config.faults.crashes == 0  # the entry is unchanged
    assert ok.config_with([]) is ok.config


# ---------------------------------------------------------------------------- compare
def _result(outcome, states=25, violations=(), unwitnessed=()):
    return CheckResult(outcome=outcome, distinct_states=states, depth=5, seconds=0.1, transitions=50,
                       violations=list(violations), unwitnessed=list(unwitnessed))


def _violation(prop, length):
    return Violation(prop, "always", [Step(None, None)] * (length + 1))


def test_compare_matches():
    ok, bug = parse_manifest(GOOD, MODEL_READER)
    assert compare(ok, _result("success", 25)) == []
    assert compare(bug, _result("safety_failure", 99, [_violation("NoCommittedWriteLost", 8)])) == []


def test_compare_states_differ():
    ok = parse_manifest(GOOD, MODEL_READER)[0]
    [msg] = compare(ok, _result("success", 30))
    assert "pinned 25" in msg and "found 30" in msg
    assert "update states" in msg and "'ok'" in msg and "reason" in msg


def test_compare_unpinned_states_are_not_compared():
    ok = dataclasses.replace(parse_manifest(GOOD, MODEL_READER)[0], states=None)
    assert compare(ok, _result("success", 12345)) == []


def test_compare_outcome_differs():
    ok, bug = parse_manifest(GOOD, MODEL_READER)
    [msg] = compare(ok, _result("safety_failure", violations=[_violation("StrongIsr", 3)]))
    assert msg.startswith("outcome:") and "StrongIsr" in msg
    [msg] = compare(bug, _result("success"))
    assert "NoCommittedWriteLost" in msg and "found success" in msg
    [msg] = compare(ok, _result("vacuous", unwitnessed=["WriteCommitted"]))
    assert "vacuous" in msg and "WriteCommitted" in msg


def test_compare_property_and_length_differ():
    bug = parse_manifest(GOOD, MODEL_READER)[1]
    msgs = compare(bug, _result("safety_failure", violations=[_violation("StrongIsr", 6)]))
    assert len(msgs) == 2
    assert msgs[0] == "property: expected NoCommittedWriteLost, found StrongIsr"
    assert "expected a counterexample of 8 steps, found 6" in msgs[1]


def test_the_packaged_manifest_is_read_once_while_its_file_and_caps_stay(monkeypatch):
    """A session asks for entries by name again and again: one reading serves them all, and a cap on
    the manifest's size set afterwards is still enforced (the reading depends on it)."""
    import isrcheck.specs.manifest as specs_manifest

    reads = []
    real = specs_manifest.read_toml
    monkeypatch.setattr(specs_manifest, "read_toml", lambda *a: reads.append(a) or real(*a))
    specs_manifest._LOADED.clear()
    first = manifest.load()
    again = manifest.load()
    assert first == again and first is not again and len(reads) == 1
    assert manifest.get(first[0].name) is first[0]
    monkeypatch.setenv("ISRCHECK_MAX_MANIFEST_BYTES", "100")
    with pytest.raises(ManifestError, match="100"):
        manifest.load()
    monkeypatch.delenv("ISRCHECK_MAX_MANIFEST_BYTES")
    assert manifest.load() == first and len(reads) == 2  # read again under the cap only
