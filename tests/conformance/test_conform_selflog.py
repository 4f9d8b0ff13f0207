"""Implementation -> model from the implementation's *own* event logs: every process of a real cluster
writes what it does (impl/event_log.py), the logs of one run are merged by CLOCK_MONOTONIC
(conformance/selflog.py) and validated; doctored copies are rejected at the doctored process line;
a torn last line is dropped with a note; foreign or garbled files are one-line errors (exit 2)."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from isrcheck.conformance.eventlog import EventLogError, validate_log
from isrcheck.conformance.runs import controlled_shutdowns, self_logged_run, two_partitions
from isrcheck.conformance.selflog import merge_selflogs, selflog_files, validate_selflogs


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return self_logged_run(tmp_path_factory.mktemp("selflog"))


@pytest.fixture
def copy(run_dir, tmp_path):
    """A private copy of the run's logs, to doctor."""
    out = tmp_path / "events"
    shutil.copytree(run_dir, out)
    return out


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _broker_line(events: Path, pred):
    """(file, index, line) of the first broker line after the start-up satisfying ``pred``."""
    merged = merge_selflogs([events])
    for ev in merged.log.events:
        ln = merged.origin[ev.seq]
        if ln.role == "broker" and pred(ln):
            return Path(ln.file), ln.line - 1, ln
    raise AssertionError("no such line")


@pytest.mark.cluster
def test_a_self_logged_run_under_fault_injection_validates(run_dir):
    merged, r = validate_selflogs([run_dir])
    assert r.ok, f"{r.reason} {r.details}"
    log = merged.log
    assert log.facts == "partial" and not log.quiet and log.max_silent == 4
    names = [e.action[0] for e in log.events if e.kind == "action"]
    assert names.count("Produce") == 6 and names.count("Crash") == 2 and names.count("Restart") == 2
    assert names.count("ControllerFailover") == 1 and "CheckpointHighWatermark" in names
    actors = {e.actor for e in log.events}
    assert {"broker-1", "broker-2", "broker-3", "launcher"} <= actors
    assert any(a.startswith("controller-") for a in actors)
    # a restarted broker logs its recovered state under a new file; both incarnations are merged
    assert len([f for f in selflog_files([run_dir]) if f.name.startswith("broker-")]) == 5
    assert log.events[-1].facts.get("acked[0]", [1, 2, 3, 4, 5, 6]) == [1, 2, 3, 4, 5, 6]
    assert r.explained == len(log.events) > 40
    assert log.config.faults.crashes == 2 and log.config.faults.controller_failovers == 1


@pytest.mark.cluster
def test_an_acknowledged_record_removed_from_a_replica_is_rejected_at_that_line(copy):
    f, i, ln = _broker_line(copy, lambda ln: len(ln.facts[f"replicas[{ln.process[-1]},0].log"]) >= 3)
    b = ln.process[-1]
    lines = _lines(f)
    facts = lines[i]["facts"]
    facts[f"replicas[{b},0].log"] = facts[f"replicas[{b},0].log"][1:]  # record 1 (acknowledged) gone
    facts[f"replicas[{b},0].leo"] -= 1
    facts[f"replicas[{b},0].hw"] = min(facts[f"replicas[{b},0].hw"], facts[f"replicas[{b},0].leo"])
    _write(f, lines)
    _, r = validate_selflogs([copy])
    assert not r.ok
    assert r.reason.startswith(f"{ln.process} seq {ln.seq} ({f.name} line {ln.line})"), r.reason
    assert f"replicas[{b},0]" in r.reason


@pytest.mark.cluster
def test_a_high_watermark_beyond_the_log_end_is_rejected_at_that_line(copy):
    f, i, ln = _broker_line(copy, lambda ln: ln.facts[f"replicas[{ln.process[-1]},0].leo"] >= 2)
    b = ln.process[-1]
    lines = _lines(f)
    lines[i]["facts"][f"replicas[{b},0].hw"] = lines[i]["facts"][f"replicas[{b},0].leo"] + 1
    _write(f, lines)
    _, r = validate_selflogs([copy])
    assert not r.ok and r.reason.startswith(f"{ln.process} seq {ln.seq} "), r.reason
    assert f"replicas[{b},0].hw" in r.reason


@pytest.mark.cluster
def test_a_follower_line_moved_before_the_produce_it_copies_is_rejected(copy):
    """Reordered across processes: the follower's first line holding record 1 gets a clock reading
    from before the leader appended it."""
    merged = merge_selflogs([copy])
    produce = next(ev for ev in merged.log.events if ev.action and ev.action[0] == "Produce")
    first = next(merged.origin[ev.seq] for ev in merged.log.events
                 if ev.actor not in (produce.actor, "launcher") and ev.actor.startswith("broker")
                 and any(x["id"] == 1 for p, v in ev.facts.items() if p.endswith(".log") for x in v))
    lines = _lines(Path(first.file))
    lines[first.line - 1]["t"] = produce.t - 1
    lines[first.line - 2]["t"] = min(lines[first.line - 2]["t"], produce.t - 2)  # its own order stays intact
    _write(Path(first.file), lines)
    _, r = validate_selflogs([copy])
    assert not r.ok and r.reason.startswith(f"{first.process} seq {first.seq} "), r.reason


@pytest.mark.cluster
def test_lines_reordered_inside_one_process_log_are_named(copy):
    f, i, ln = _broker_line(copy, lambda ln: ln.seq >= 4)
    lines = _lines(f)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    _write(f, lines)
    _, r = validate_selflogs([copy])
    assert not r.ok and r.reason.startswith(f"{ln.process} seq {ln.seq + 1} "), r.reason
    assert "out of order" in r.reason


@pytest.mark.cluster
def test_a_torn_last_line_is_dropped_with_a_note(copy, run_cli):
    f = next(p for p in selflog_files([copy]) if p.name.startswith("broker-"))
    with f.open("a") as out:
        out.write('{"seq": 999, "t": 1, "kind": "observ')  # SIGKILL in the middle of a line
    merged, r = validate_selflogs([copy])
    assert r.ok, r.reason
    assert any(f.name in n and "torn" in n for n in merged.notes)
    res = run_cli("validate", str(copy))
    assert res.exit_code == 0 and "torn" in res.output and "valid" in res.output


@pytest.mark.cluster
def test_the_cli_validates_the_directory_and_names_a_doctored_line(copy, tmp_path, run_cli):
    res = run_cli("validate", str(copy), "--merged", str(tmp_path / "merged.jsonl"))
    assert res.exit_code == 0, res.output
    assert "valid" in res.output and "merged" in res.output
    assert run_cli("validate", str(tmp_path / "merged.jsonl")).exit_code == 0  # the merged log is a plain log
    f, i, ln = _broker_line(copy, lambda ln: ln.facts[f"replicas[{ln.process[-1]},0].leo"] >= 2)
    lines = _lines(f)
    lines[i]["facts"][f"replicas[{ln.process[-1]},0].hw"] = 99
    _write(f, lines)
    res = run_cli("validate", *map(str, selflog_files([copy])), "--json")
    assert res.exit_code == 1
    out = json.loads(res.output)
    assert not out["ok"] and out["failed_event"]["process"] == ln.process and f"seq {ln.seq}" in out["reason"]


def test_foreign_and_garbled_files_are_one_line_errors(tmp_path, run_cli):
    foreign = tmp_path / "x.events.jsonl"
    foreign.write_text('{"format": "something-else"}\n')
    res = run_cli("validate", str(tmp_path))
    assert res.exit_code == 2 and res.output.count("\n") == 1 and res.output.startswith("error: ")
    assert "not an isrcheck implementation event log" in res.output
    head = {"format": "isrcheck-selflog", "version": 1, "process": "broker-1", "role": "broker", "pid": 7,
            "clock": "CLOCK_MONOTONIC ns", "config": {"brokers": 3}}
    garbled = tmp_path / "x.events.jsonl"
    garbled.write_text(json.dumps(head) + "\n{not json\n" + json.dumps({"seq": 2, "t": 5, "kind": "action"}) + "\n")
    res = run_cli("validate", str(garbled), str(garbled))
    assert res.exit_code == 2 and "line 2: not JSON" in res.output and "Traceback" not in res.output
    garbled.write_text(json.dumps(head) + "\n" + json.dumps({"seq": 1, "t": 5, "kind": "action",
                                                             "step": {"name": "Explode", "args": []}}) + "\n")
    with pytest.raises(EventLogError, match="unknown step 'Explode'"):
        merge_selflogs([garbled])
    garbled.write_text(json.dumps(head) + "\n" + json.dumps({"seq": 1, "t": 5, "kind": "observation",
                                                             "facts": {"replicas[9,0].hw": 1}}) + "\n")
    with pytest.raises(EventLogError, match=r"line 2.*unknown fact"):
        merge_selflogs([garbled])
    (tmp_path / "empty").mkdir()
    with pytest.raises(EventLogError, match="no \\*.events.jsonl"):
        merge_selflogs([tmp_path / "empty"])


# ---------------------------------------------------------------------------- more generations, partitions, faults
@pytest.fixture(scope="module", params=["kip-101", "kip-320"])
def generation_run(request, tmp_path_factory):
    """The same fault injection on a cluster reconciling by leader epochs (OffsetsForLeaderEpoch)."""
    return request.param, self_logged_run(tmp_path_factory.mktemp(f"selflog-{request.param}"),
                                          config={"generation": request.param})


@pytest.mark.cluster
def test_a_self_logged_run_validates_under_the_leader_epoch_generations(generation_run):
    generation, events = generation_run
    merged, r = validate_selflogs([events])
    assert r.ok, f"{r.reason} {r.details}"
    log = merged.log
    assert log.config.generation == generation and log.config.faults.crashes == 2
    names = [e.action[0] for e in log.events if e.kind == "action"]
    assert names.count("Produce") == 6 and names.count("Crash") == 2 and names.count("ControllerFailover") == 1
    # every restarted follower reconciled through the epoch exchange, logged as its own lines
    queried = [merged.origin[e.seq] for e in log.events if "OffsetsForLeaderEpoch" in e.note]
    assert queried and all(ln.role == "broker" for ln in queried)
    assert all(any(p.endswith(".epochs") and v for p, v in ln.facts.items()) for ln in queried)
    # those lines need the KIP-101 steps the merge lets happen unlogged: without them nothing explains them
    for step in ("OffsetsForLeaderEpoch", "TruncateToEpochEndOffset"):
        bare = dataclasses.replace(log, silent=tuple(s for s in log.silent if s != step), events=list(log.events))
        assert not validate_log(bare).ok, step


@pytest.mark.cluster
def test_a_doctored_leader_epoch_cache_is_rejected_at_that_line(generation_run, tmp_path):
    _, events = generation_run
    copy = tmp_path / "events"
    shutil.copytree(events, copy)
    f, i, ln = _broker_line(copy, lambda ln: "OffsetsForLeaderEpoch" in ln.note
                            and len(ln.facts[f"replicas[{ln.process[-1]},0].epochs"]) >= 2)
    b = ln.process[-1]
    lines = _lines(f)
    lines[i]["facts"][f"replicas[{b},0].epochs"][-1]["start_offset"] += 1  # epoch e begins one record late
    _write(f, lines)
    _, r = validate_selflogs([copy])
    assert not r.ok and r.reason.startswith(f"{ln.process} seq {ln.seq} "), r.reason
    assert f"replicas[{b},0].epochs" in r.reason


@pytest.mark.cluster
def test_a_self_logged_run_of_two_partitions_validates(tmp_path):
    events = self_logged_run(tmp_path, config={"partitions": 2}, scenario=two_partitions)
    merged, r = validate_selflogs([events])
    assert r.ok, f"{r.reason} {r.details}"
    log = merged.log
    assert log.config.partitions == 2 and log.config.assignment == ((1, 2, 3), (2, 3, 1))
    produced = [e.action[1] for e in log.events if e.kind == "action" and e.action[0] == "Produce"]
    assert sorted(p for _, p in produced) == [0, 0, 0, 1, 1, 1]
    assert produced[1] == (2, 1)  # partition 1 is led by broker 2 first
    assert [n for n, _ in (e.action for e in log.events if e.kind == "action")].count("Crash") == 1
    for p in (0, 1):  # each partition's leader/ISR writes and acknowledged writes are logged and checked
        assert any(f"partitions[{p}].leader" in e.facts for e in log.events)
        assert log.events[-1].facts.get(f"acked[{p}]", [1, 2, 3]) == [1, 2, 3]
    assert sum(1 for e in log.events if e.action and e.action[0] == "CheckpointHighWatermark"
               and e.action[1][1] == 1) >= 1


@pytest.fixture(scope="module")
def shutdown_run(tmp_path_factory):
    return self_logged_run(tmp_path_factory.mktemp("selflog-shutdown"), scenario=controlled_shutdowns)


@pytest.mark.cluster
def test_controlled_shutdowns_are_logged_by_the_controller_and_validate(shutdown_run):
    merged, r = validate_selflogs([shutdown_run])
    assert r.ok, f"{r.reason} {r.details}"
    log = merged.log
    steps = [(e.action, e.actor) for e in log.events if e.kind == "action" and e.action[0] == "ControlledShutdown"]
    assert len(steps) == 2 and all(actor.startswith("controller-") for _, actor in steps)
    first, second = (a[1] for a, _ in steps)
    assert first[0] == second[0] == 1 and first[1] != second[1]  # (controller epoch, broker)
    assert log.config.operations.controlled_shutdowns == 2
    names = [e.action[0] for e in log.events if e.kind == "action"]
    assert names.count("Produce") == 4 and names.count("Restart") == 2 and "Crash" not in names
    # the launcher sees each stopped process go after the controller's step
    gone = [i for i, e in enumerate(log.events) if e.actor == "launcher" and False in e.facts.values()]
    cs = [i for i, e in enumerate(log.events) if e.action and e.action[0] == "ControlledShutdown"]
    assert len(gone) == 2 and all(c < g for c, g in zip(cs, gone))
    # the leader's shutdown moved its leadership (a new leader, a new leader epoch) in that one step
    ev = log.events[cs[0]]
    assert ev.facts["partitions[0].leader"] != first[1] and first[1] not in ev.facts["partitions[0].isr"]


@pytest.mark.cluster
def test_a_broker_still_acting_after_its_controlled_shutdown_is_rejected(shutdown_run, tmp_path):
    """The model's broker stops in the controller's ControlledShutdown step: a line of that broker
    after it (here its last line before, moved just after the step) cannot be explained."""
    copy = tmp_path / "events"
    shutil.copytree(shutdown_run, copy)
    merged = merge_selflogs([copy])
    cs = next(e for e in merged.log.events if e.action and e.action[0] == "ControlledShutdown")
    b = cs.action[1][1]
    before = [merged.origin[e.seq] for e in merged.log.events if e.actor == f"broker-{b}" and e.seq < cs.seq]
    ln = before[-1]
    lines = _lines(Path(ln.file))
    lines[ln.line - 1]["t"] = cs.t + 1
    for later in lines[ln.line:]:  # its own order stays intact
        later["t"] = max(later["t"], cs.t + 1)
    _write(Path(ln.file), lines)
    _, r = validate_selflogs([copy])
    assert not r.ok and r.reason.startswith(f"{ln.process} seq {ln.seq} "), r.reason
