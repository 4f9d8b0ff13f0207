"""Implementation -> model: event logs of the implementation validate; doctored ones are rejected."""
from __future__ import annotations

import copy
import json

import pytest

from isrcheck.inputs import manifest
from isrcheck.conformance.eventlog import (
    EventLogError,
    coarsen,
    dumps_log,
    load_log,
    loads_log,
    record_actions,
    record_simulator,
    validate_log,
    write_log,
)

from conform_helpers import acts

MODELS = ["clean-election", "controller-failover", "reassignment-broker-crash", "topic-deletion", "lossy-crash",
          "undetected-restart", "delayed-requests", "preferred-election", "two-partitions"]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_log_of_the_implementation_simulator_validates(name, seed):
    log = record_simulator(manifest.get(name).config, seed=seed, steps=60)
    back = loads_log(dumps_log(log), "log")
    r = validate_log(back)
    assert r.ok, r.reason
    assert r.explained == len(log.events) > 0


@pytest.mark.parametrize("name", ["clean-election", "controller-failover", "reassignment"])
def test_a_log_without_action_names_validates_from_the_facts_alone(name):
    log = record_simulator(manifest.get(name).config, seed=5, steps=50, anonymous=True)
    assert all(e.action is None for e in log.events)
    r = validate_log(loads_log(dumps_log(log)))
    assert r.ok, r.reason


# ---------------------------------------------------------------------------- doctored logs
CLEAN = ("Produce(1, 0)", "Fetch(2, 0)", "Fetch(2, 0)", "Crash(1)", "ProcessBrokerChange(1)", "DeliverRequest(2)",
         "Produce(2, 0)", "Restart(1)", "ProcessBrokerChange(1)", "DeliverRequest(1)", "DeliverRequest(1)",
         "Fetch(1, 0)")


@pytest.fixture(scope="module")
def clean_log():
    log = record_actions(manifest.get("clean-election").config, acts(*CLEAN))
    assert validate_log(log).ok
    return log


def _event(log, text):
    return next(e for e in log.events if e.action is not None and
                f"{e.action[0]}({', '.join(map(str, e.action[1]))})" == text)


def test_an_acknowledged_write_that_disappears_is_rejected(clean_log):
    log = copy.deepcopy(clean_log)
    ev = _event(log, "DeliverRequest(2)")  # broker 2 becomes leader: it must keep record 1
    ev.facts["replicas[2,0].log"] = []
    ev.facts["replicas[2,0].leo"] = 0
    ev.facts["replicas[2,0].hw"] = 0
    r = validate_log(loads_log(dumps_log(log)))
    assert not r.ok and r.failed_event.seq == ev.seq == 6
    assert "event 6 (DeliverRequest(2))" in r.reason and "replicas[2,0]" in r.reason
    # and dropping the acknowledgement itself
    log = copy.deepcopy(clean_log)
    ev = _event(log, "Crash(1)")
    ev.facts["acked[0]"] = []
    r = validate_log(loads_log(dumps_log(log)))
    assert not r.ok and r.failed_event.seq == 4 and "acked[0]" in r.reason


def test_a_leader_elected_outside_the_isr_is_rejected(clean_log):
    log = copy.deepcopy(clean_log)
    ev = _event(log, "ProcessBrokerChange(1)")
    assert ev.facts["partitions[0].leader"] == 2
    ev.facts["partitions[0].leader"] = 3  # broker 3 is neither assigned nor in the ISR
    r = validate_log(loads_log(dumps_log(log)))
    assert not r.ok and r.failed_event.seq == ev.seq == 5
    assert "partitions[0].leader" in r.reason and "ProcessBrokerChange(1)" in r.reason


def test_events_out_of_order_are_rejected(clean_log):
    lines = dumps_log(clean_log).strip().split("\n")
    swapped = lines[:3] + [lines[4], lines[3]] + lines[5:]  # events 3 and 4 exchanged, seq numbers and all
    r = validate_log(loads_log("\n".join(swapped)))
    assert not r.ok and r.failed_event.seq == 4 and "out of order" in r.reason
    # renumbered to hide it: the clock gives it away
    renum = [json.loads(x) for x in swapped]
    renum[3]["seq"], renum[4]["seq"] = 3, 4
    r = validate_log(loads_log("\n".join(json.dumps(x) for x in renum)))
    assert not r.ok and r.failed_event.seq == 4 and "time goes back" in r.reason
    # and without timestamps, the facts do: the crash can come early, but then broker 2 has no leader
    for x in renum[1:]:
        del x["t"]
    r = validate_log(loads_log("\n".join(json.dumps(x) for x in renum)))
    assert not r.ok and r.failed_event.seq == 4 and "cannot take Fetch(2, 0)" in r.reason
    # without action names either: no step of the model produces the acknowledgement then
    for x in renum[1:]:
        x["action"] = None
    r = validate_log(loads_log("\n".join(json.dumps(x) for x in renum)))
    assert not r.ok and r.failed_event.seq == 4 and "no model step explains it" in r.reason
    assert any(d.startswith("acked[0]: model [], log [1]") for d in r.details)


def test_an_action_the_model_cannot_take_is_named(clean_log):
    log = copy.deepcopy(clean_log)
    log.events[0].action = ("Produce", (2, 0))  # broker 2 does not lead at first
    r = validate_log(log)
    assert not r.ok and r.failed_event.seq == 1 and "cannot take Produce(2, 0)" in r.reason
    assert any("enabled in the first candidate" in d for d in r.details)


def test_time_going_back_is_rejected(clean_log):
    log = copy.deepcopy(clean_log)
    log.events[3].t = 1
    r = validate_log(log)
    assert not r.ok and r.failed_event.seq == 4 and "time goes back" in r.reason


def test_the_initial_state_must_match(clean_log):
    log = copy.deepcopy(clean_log)
    log.initial["partitions[0].leader"] = 2
    r = validate_log(log)
    assert not r.ok and r.failed_event is None and "initial state" in r.reason


# ---------------------------------------------------------------------------- partial logs
SILENT = ("DeliverRequest", "Fetch", "CheckpointHighWatermark", "ProcessBrokerChange", "ResignController")


def _coarse(path: str) -> bool:
    return path.startswith(("partitions[", "brokers[", "acked[")) or path.endswith((".leo", ".hw", ".role"))


def test_a_coarse_log_with_unlogged_steps_validates_and_catches_doctoring(clean_log):
    log = coarsen(clean_log, SILENT, _coarse, max_silent=6)
    assert [e.action[0] for e in log.events] == ["Produce", "Crash", "Produce", "Restart"]
    back = loads_log(dumps_log(log))
    r = validate_log(back)
    assert r.ok, r.reason
    bad = copy.deepcopy(back)
    bad.events[2].facts["partitions[0].leader"] = 3
    r = validate_log(bad)
    assert not r.ok and r.failed_event.seq == 3 and "unlogged" in r.reason
    tight = copy.deepcopy(back)
    tight.max_silent = 1  # not enough room for the fetches and deliveries in between
    assert not validate_log(tight).ok


@pytest.mark.parametrize("name", ["clean-election", "controller-failover", "lossy-crash"])
def test_coarsened_simulator_logs_validate(name):
    log = record_simulator(manifest.get(name).config, seed=4, steps=40)
    r = validate_log(coarsen(log, SILENT, _coarse, max_silent=8))
    assert r.ok, r.reason


# ---------------------------------------------------------------------------- the file format
def _reject(text, *words):
    with pytest.raises(EventLogError) as e:
        loads_log(text, "log.jsonl")
    for w in words:
        assert w in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_format_errors_are_one_line(clean_log, tmp_path):
    lines = [json.loads(x) for x in dumps_log(clean_log).strip().split("\n")]

    def text(ls):
        return "\n".join(json.dumps(x) for x in ls)

    _reject("not json", "not an isrcheck event log")
    _reject('{"format": "isrcheck-trace", "version": 1}', "not an isrcheck event log")
    h = copy.deepcopy(lines)
    h[0]["version"] = 9
    _reject(text(h), "version 9")
    h = copy.deepcopy(lines)
    h[2]["facts"]["partitions[7].leader"] = 1
    _reject(text(h), "line 3", "unknown fact")
    h = copy.deepcopy(lines)
    h[2]["facts"]["partitions[0].isr"] = [2, 1]
    _reject(text(h), "line 3", "ascending")
    h = copy.deepcopy(lines)
    h[2]["action"] = {"name": "Fetch", "args": [1]}
    _reject(text(h), "Fetch takes 2")
    h = copy.deepcopy(lines)
    h[2]["action"] = {"name": "Nope"}
    _reject(text(h), "unknown action")
    h = copy.deepcopy(lines)
    del h[0]["initial"]["controller.epoch"]
    _reject(text(h), "must be complete")
    h = copy.deepcopy(lines)
    h[0]["silent"] = ["Sneak"]
    _reject(text(h), "unknown action 'Sneak'")
    h = copy.deepcopy(lines)
    h[2]["extra"] = 1
    _reject(text(h), "unknown key 'extra'")
    with pytest.raises(EventLogError, match="no such file"):
        load_log(tmp_path / "none.jsonl")
    write_log(clean_log, tmp_path / "ok.jsonl")
    assert validate_log(load_log(tmp_path / "ok.jsonl")).ok
