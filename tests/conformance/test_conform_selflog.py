"""Implementation -> model from the implementation's *own* event logs: every process of a real cluster
writes what it does (impl/process/event_log.py), the logs of one run are merged by CLOCK_MONOTONIC
(conformance/selflog.py) and validated; doctored copies are rejected at the doctored process line;
a torn last line is dropped with a note; foreign or garbled files are one-line errors (exit 2)."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from isrcheck.conformance import selflog
from isrcheck.conformance.eventlog import EventLogError, validate_log
from isrcheck.conformance.runs import controlled_shutdowns, reassignment, self_logged_run, two_partitions
from isrcheck.conformance.selflog import (SelfLine, _checkpoints_before_fetch, _checkpoints_before_shutdown,
                                          _fetches_before_crash, merge_selflogs, selflog_files, validate_selflogs)


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


def _first_request_line(events: Path, b: int) -> tuple[Path, int, list[dict]]:
    """Broker ``b``'s file, the index of its first LeaderAndIsr line (the one that makes it a replica),
    and that file's lines."""
    f = next(x for x in selflog_files([events]) if x.name.startswith(f"broker-{b}."))
    lines = _lines(f)
    i = next(i for i, ln in enumerate(lines) if ln.get("facts", {}).get(f"replicas[{b},0].present") is True)
    return f, i, lines


@pytest.mark.cluster
def test_a_replica_told_after_the_leaders_first_step_goes_before_it(copy):
    """A loaded machine: a follower logs its first LeaderAndIsr only after the leader's first Produce
    (it touches only that follower's broker, so it commutes with the Produce and goes before it)."""
    merged = merge_selflogs([copy])
    produce = next(ev for ev in merged.log.events if ev.action and ev.action[0] == "Produce")
    follower = next(b for b in (1, 2, 3) if f"broker-{b}" != produce.actor)
    f, i, lines = _first_request_line(copy, follower)
    assert lines[i]["t"] < produce.t < lines[i + 1]["t"]  # logged before the Produce, its next line after
    lines[i]["t"] = produce.t + 1
    _write(f, lines)
    moved, r = validate_selflogs([copy])
    assert r.ok, f"{r.reason} {r.details}"
    assert any(n.startswith("1 replica(s)' first LeaderAndIsr logged after another process's first step")
               for n in moved.notes), moved.notes
    assert [ev.action for ev in moved.log.events] == [ev.action for ev in merged.log.events]
    assert moved.folded == merged.folded


@pytest.mark.cluster
def test_a_run_that_never_reaches_the_initial_state_names_the_line_that_left_it(copy):
    """The controller's first leader/ISR write leaves a replica out of the ISR: the one-line error names
    that line, the fact and both values, and what the initial state still lacked then."""
    f = next(x for x in selflog_files([copy]) if x.name.startswith("controller-1."))
    lines = _lines(f)
    i = next(i for i, ln in enumerate(lines) if "partitions[0].isr" in ln.get("facts", {}))
    lines[i]["facts"]["partitions[0].isr"] = lines[i]["facts"]["partitions[0].isr"][:2]
    _write(f, lines)
    with pytest.raises(EventLogError) as e:
        merge_selflogs([copy])
    msg = str(e.value)
    assert msg.startswith("the run never reached the model's initial state") and "\n" not in msg
    assert f"controller-1 seq {lines[i]['seq']} ({f.name} line {i + 1})" in msg, msg
    assert "partitions[0].isr = [1, 2] where it has [1, 2, 3]" in msg, msg
    assert "replicas[3,0].role = \"none\" (initially \"follower\")" in msg, msg  # not told yet


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


def _sl(process: str, seq: int, t: int, kind: str, action, role: str = "broker") -> SelfLine:
    return SelfLine(process, role, f"{process}.1.events.jsonl", seq + 1, seq, t, kind, action, {}, "")


def test_a_checkpoint_taken_while_a_fetch_is_in_flight_goes_before_the_leaders_half():
    """What made the two-partition run fail now and then on a loaded host: the model's Fetch is one
    step, the implementation logs the leader's half first, and a line the follower logged before its
    own half came (a periodic checkpoint, its leader's half of another partition) still showed its HW
    from before the fetch (which the fetch then lowered). Such checkpoints are placed before the
    leader's half; other lines lose the fetched replica's facts until the follower's half."""
    lines = [
        _sl("broker-1", 1, 10, "observation", ("DeliverRequest", (1,))),
        _sl("broker-3", 5, 20, "observation", ("Fetch", (1, 1))),  # the leader's half of broker 1's fetch
        _sl("launcher", 2, 21, "observation", None, role="launcher"),
        _sl("broker-1", 2, 22, "action", ("CheckpointHighWatermark", (1, 0))),
        _sl("broker-1", 3, 23, "action", ("CheckpointHighWatermark", (1, 1))),
        _sl("broker-1", 4, 24, "observation", ("Fetch", (1, 1))),  # the follower's half
        _sl("broker-1", 5, 25, "action", ("CheckpointHighWatermark", (1, 1))),  # after it: stays
    ]
    out, moved = _checkpoints_before_fetch(lines)
    assert moved == 2
    assert [(x.process, x.seq) for x in out] == [("broker-1", 1), ("broker-1", 2), ("broker-1", 3), ("broker-3", 5),
                                                 ("launcher", 2), ("broker-1", 4), ("broker-1", 5)]
    assert [x.t for x in out] == [10, 20, 20, 20, 21, 24, 25]  # the clock never goes back
    assert "placed before the leader's half" in out[1].note
    # a controller request it handles ends the window (a response would be dropped): nothing moves
    other = lines[:3] + [_sl("broker-1", 2, 22, "observation", ("DeliverRequest", (1,))),
                         _sl("broker-1", 3, 23, "action", ("CheckpointHighWatermark", (1, 0)))]
    assert _checkpoints_before_fetch(other) == (other, 0)
    # another line of the follower in the window (its leader's half of partition 0) keeps its place
    # and its other facts, without those of the replica being fetched; a checkpoint after it stays
    facts = {"replicas[1,1].hw": 1, "replicas[1,1].leo": 1, "replicas[1,0].hw": 2}
    lead = dataclasses.replace(_sl("broker-1", 2, 22, "observation", ("Fetch", (3, 0))), facts=facts)
    ckpt = _sl("broker-1", 3, 23, "action", ("CheckpointHighWatermark", (1, 0)))
    out, changed = _checkpoints_before_fetch(lines[:3] + [lead, ckpt, lines[5]])
    assert changed == 1 and [x.seq for x in out if x.process == "broker-1"] == [1, 2, 3, 4]
    assert out[3].facts == {"replicas[1,0].hw": 2} and "not checked" in out[3].note


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
    gone = [i for i, e in enumerate(log.events) if e.actor == "launcher"
            and any(k.endswith(".alive") and v is False for k, v in e.facts.items())]
    cs = [i for i, e in enumerate(log.events) if e.action and e.action[0] == "ControlledShutdown"]
    assert len(gone) == 2 and all(c < g for c, g in zip(cs, gone))
    # the leader's shutdown moved its leadership (a new leader, a new leader epoch) in that one step
    ev = log.events[cs[0]]
    assert ev.facts["partitions[0].leader"] != first[1] and first[1] not in ev.facts["partitions[0].isr"]


@pytest.mark.cluster
def test_a_broker_still_acting_after_its_controlled_shutdown_is_rejected(shutdown_run, tmp_path):
    """The model's broker stops in the controller's ControlledShutdown step: a line of that broker
    after it (here its last line before, moved just after the step) cannot be explained. (Its HW
    checkpoint there, with nothing else of it before, is placed back before the step: the next test.)"""
    copy = tmp_path / "events"
    shutil.copytree(shutdown_run, copy)
    merged = merge_selflogs([copy])
    cs = next(e for e in merged.log.events if e.action and e.action[0] == "ControlledShutdown")
    b = cs.action[1][1]
    before = [merged.origin[e.seq] for e in merged.log.events if e.actor == f"broker-{b}" and e.seq < cs.seq
              and not (e.action and e.action[0] == "CheckpointHighWatermark")]
    ln = before[-1]
    lines = _lines(Path(ln.file))
    lines[ln.line - 1]["t"] = cs.t + 1
    for later in lines[ln.line:]:  # its own order stays intact
        later["t"] = max(later["t"], cs.t + 1)
    _write(Path(ln.file), lines)
    _, r = validate_selflogs([copy])
    assert not r.ok, "the doctored run validated"
    # named at that line, or before it at a line needing what the moved line logged: the broker's log end
    # and HW hold from its previous line until its next (selflog._with_held), and the failure names it
    assert r.reason.startswith(f"{ln.process} seq {ln.seq} ") or any(
        d.startswith("held: ") and f"({ln.process} seq " in d for d in r.details), r.reason


SAVED = Path(__file__).parent / "selflogs"


def test_a_checkpoint_taken_before_the_broker_heard_of_its_controlled_shutdown_goes_before_it(monkeypatch):
    """What made the controlled-shutdown run fail now and then on a loaded host: the model's broker
    stops in the controller's ControlledShutdown step, but the real one goes on until the controller's
    answer reaches it, and its periodic HW checkpoint fired in between (logged after the controller's
    line, of a state unchanged since its previous line). Such checkpoints are placed just before the
    controller's line; any other line of the broker there stays, and ends the window."""
    cs = _sl("controller-1", 3, 20, "action", ("ControlledShutdown", (1, 1)), role="controller")
    lines = [
        _sl("broker-1", 5, 10, "observation", ("Fetch", (3, 0))),
        cs,
        _sl("broker-2", 6, 21, "observation", ("DeliverRequest", (2,))),
        _sl("broker-1", 6, 22, "action", ("CheckpointHighWatermark", (1, 0))),
        _sl("broker-1", 7, 23, "action", ("CheckpointHighWatermark", (1, 1))),
        _sl("broker-2", 7, 24, "action", ("CheckpointHighWatermark", (2, 0))),  # another broker's: stays
    ]
    out, moved = _checkpoints_before_shutdown(lines)
    assert moved == 2
    assert [(x.process, x.seq) for x in out] == [("broker-1", 5), ("broker-1", 6), ("broker-1", 7),
                                                 ("controller-1", 3), ("broker-2", 6), ("broker-2", 7)]
    assert [x.t for x in out] == [10, 20, 20, 20, 21, 24]  # the clock never goes back
    assert "placed before the controller's controlled shutdown" in out[1].note
    # another line of the broker first (it acted on after the step): it and what follows keep their places
    acting = [lines[0], cs, _sl("broker-1", 6, 22, "action", ("Produce", (1, 0))),
              _sl("broker-1", 7, 23, "action", ("CheckpointHighWatermark", (1, 0)))]
    assert _checkpoints_before_shutdown(acting) == (acting, 0)
    # a checkpoint of another broker than the one shut down is not moved
    other = [lines[0], cs, _sl("broker-3", 6, 22, "action", ("CheckpointHighWatermark", (3, 0)))]
    assert _checkpoints_before_shutdown(other) == (other, 0)

    # the saved run that failed so: it validates, with broker 1's checkpoint before the controller's step
    run = SAVED / "controlled-shutdown-checkpoint-before-it-heard"
    merged, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    seqs = [(merged.origin[e.seq].process, merged.origin[e.seq].seq) for e in merged.log.events]
    assert seqs.index(("broker-1", 6)) + 1 == seqs.index(("controller-1", 3))
    assert any("placed before the controller's step" in n for n in merged.notes)
    # and without the rule it fails there, as it did
    monkeypatch.setattr(selflog, "_checkpoints_before_shutdown", lambda lines: (lines, 0))
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-1 seq 6 ") and "CheckpointHighWatermark(1, 0)" in r.reason


def test_a_follower_half_of_a_fetch_its_leader_answered_before_the_crash_goes_before_it(monkeypatch):
    """What made the command-line run (tests/impl/test_event_log.py) fail now and then on a loaded host:
    the leader answered a fetch without logging its half (its facts did not change: its HW was already
    2), the launcher froze and killed it, and the follower logged its half (HW 2, from the crashed
    leader) after the launcher's Crash line, where the model's leader is dead and no Fetch is enabled.
    Such a follower's half (and the follower's HW checkpoints before it since the crash) is placed just
    before the Crash line; any other line of the follower ends the window."""
    ctrl = dataclasses.replace(_sl("controller-1", 2, 5, "observation", None, role="controller"),
                               facts={"partitions[0].leader": 1, "partitions[0].leader_epoch": 0})
    crash = _sl("launcher", 1, 20, "action", ("Crash", (1,)), role="launcher")
    half = dataclasses.replace(_sl("broker-3", 8, 23, "observation", ("Fetch", (3, 0))),
                               facts={"replicas[3,0].hw": 2, "replicas[3,0].leader_epoch": 0})
    lines = [
        ctrl,
        _sl("broker-1", 8, 10, "observation", ("Fetch", (2, 0))),  # the crashed leader's last line
        crash,
        _sl("broker-2", 6, 21, "action", ("CheckpointHighWatermark", (2, 0))),  # another broker's: stays
        _sl("broker-3", 7, 22, "action", ("CheckpointHighWatermark", (3, 0))),
        half,
        _sl("broker-3", 9, 24, "action", ("CheckpointHighWatermark", (3, 0))),  # after its half: stays
    ]
    out, moved = _fetches_before_crash(lines)
    assert moved == 2
    assert [(x.process, x.seq) for x in out] == [("controller-1", 2), ("broker-1", 8), ("broker-3", 7),
                                                 ("broker-3", 8), ("launcher", 1), ("broker-2", 6),
                                                 ("broker-3", 9)]
    assert [x.t for x in out] == [5, 10, 20, 20, 20, 21, 24]  # the clock never goes back
    assert "placed before the launcher's crash" in out[3].note
    # a checkpoint alone (no follower's half of a fetch the crashed leader answered) is not moved
    alone = lines[:5] + lines[6:]
    assert _fetches_before_crash(alone) == (alone, 0)
    # the follower heard from the controller first (a new leader): its half and what follows stay
    heard = lines[:4] + [_sl("broker-3", 7, 22, "observation", ("DeliverRequest", (3,))),
                         dataclasses.replace(half, facts={"replicas[3,0].leader_epoch": 1})]
    assert _fetches_before_crash(heard) == (heard, 0)
    # a fetch of a partition whose leader is not the crashed broker (or at another leader epoch) stays
    led = [dataclasses.replace(ctrl, facts={"partitions[0].leader": 2, "partitions[0].leader_epoch": 0})]
    assert _fetches_before_crash(led + lines[1:]) == (led + lines[1:], 0)
    epoch = [dataclasses.replace(ctrl, facts={"partitions[0].leader": 1, "partitions[0].leader_epoch": 1})]
    assert _fetches_before_crash(epoch + lines[1:]) == (epoch + lines[1:], 0)
    # the crashed leader logs again (its restart) before the follower's half: its answers are gone
    back = lines[:4] + [_sl("broker-1", 1, 21, "action", ("Restart", (1,)))] + lines[4:]
    assert _fetches_before_crash(back) == (back, 0)

    # the saved run that failed so: it validates, with broker 3's half before the launcher's crash
    run = SAVED / "follower-half-of-a-fetch-after-its-leaders-crash"
    merged, r = validate_selflogs([run])
    assert r.ok, f"{r.reason} {r.details}"
    seqs = [(merged.origin[e.seq].process, merged.origin[e.seq].seq, merged.origin[e.seq].action)
            for e in merged.log.events]
    assert seqs.index(("broker-3", 8, ("Fetch", (3, 0)))) + 1 == seqs.index(("launcher", 1, ("Crash", (1,))))
    assert any("placed before the crash" in n for n in merged.notes)
    # and without the rule it fails there, as it did (without the rule for fetches counted unlogged too:
    # the crashed leader's last half raised the HW to broker 3's log end, which explains it as well)
    monkeypatch.setattr(selflog, "_fetches_before_crash", lambda lines: (lines, 0))
    monkeypatch.setattr(selflog, "_counted_unlogged", lambda ln, p, followers: [])
    _, r = validate_selflogs([run])
    assert not r.ok and r.reason.startswith("broker-3 seq 8 ") and "replicas[3,0].hw" in str(r.details)


# ---------------------------------------------------------------------------- a reassignment
@pytest.fixture(scope="module")
def reassignment_run(tmp_path_factory):
    return self_logged_run(tmp_path_factory.mktemp("selflog-reassign"), scenario=reassignment)


@pytest.mark.cluster
def test_a_self_logged_run_with_a_reassignment_then_a_crash_validates(reassignment_run):
    """The launcher logs the administrator's request (RequestReassignment), and the model's configuration
    gets the requested reassignment: the controller's steps (new leader epoch, election, the old
    replica's removal) are then explained with the 12 steps left silent."""
    merged, r = validate_selflogs([reassignment_run])
    assert r.ok, f"{r.reason} {r.details}"
    log = merged.log
    assert [(x.partition, x.target) for x in log.config.operations.reassignments] == [(0, (2, 3))]
    named = [(e.action, e.actor) for e in log.events if e.kind == "action"]
    assert (("RequestReassignment", (0, (2, 3))), "launcher") in named
    names = [a[0] for a, _ in named]
    assert names.count("Produce") == 3 and names.count("Crash") == 1
    assert names.index("RequestReassignment") < names.index("Crash")
    request = next(e for e in log.events if e.action and e.action[0] == "RequestReassignment")
    assert request.facts == {"partitions[0].reassignment": [2, 3]}
    # the controller wrote the leader/ISR znode for the reassignment after the request: broker 1 left
    writes = [e for e in log.events if e.actor.startswith("controller-") and "partitions[0].isr" in e.facts]
    assert writes and writes[0].seq > request.seq
    assert any(1 not in e.facts["partitions[0].isr"] for e in writes)
    assert log.events[-1].facts.get("acked[0]", [1, 2, 3]) == [1, 2, 3]


@pytest.mark.cluster
def test_without_the_logged_request_the_reassignment_is_not_a_model_behaviour(reassignment_run, tmp_path):
    """The false alarm of before: a run whose reassignment request is not in the log (here the
    launcher's line removed) cannot be explained, whatever the configuration; so the line is what
    makes a reassignment validate, and a request logged with another target is rejected too."""
    for target in (None, [3]):
        copy = tmp_path / f"events-{target}"
        shutil.copytree(reassignment_run, copy)
        merged = merge_selflogs([copy])
        request = next(e for e in merged.log.events if e.action and e.action[0] == "RequestReassignment")
        ln = merged.origin[request.seq]
        lines = _lines(Path(ln.file))
        if target is None:
            del lines[ln.line - 1]
            for later in lines[ln.line - 1:]:
                later["seq"] -= 1
        else:
            lines[ln.line - 1]["step"]["args"] = [0, target]
            lines[ln.line - 1]["facts"]["partitions[0].reassignment"] = target
        _write(Path(ln.file), lines)
        _, r = validate_selflogs([copy])
        assert not r.ok, target
        assert "leader_epoch" in r.reason or "partitions[0]" in r.reason, r.reason


@pytest.mark.cluster
def test_the_command_line_run_of_the_issue_validates(tmp_path):
    """`cluster up --event-log DIR`, `create-topic`, `produce a`, `reassign --replicas 2,3`, SIGKILL the
    new leader, `produce b`, `down`, `validate DIR`: valid (it said "not a model behaviour ...
    leader_epoch model 0, log 1" when the request was not logged)."""
    from click.testing import CliRunner

    from isrcheck.cli import main

    runner = CliRunner()
    cl, ev = str(tmp_path / "cluster"), str(tmp_path / "events")

    def run(*args: str) -> str:
        res = runner.invoke(main, list(args), catch_exceptions=False)
        assert res.exit_code == 0, (args, res.output)
        return res.output

    run("cluster", "up", "--dir", cl, "--event-log", ev)
    try:
        run("cluster", "create-topic", "--dir", cl)
        run("cluster", "produce", "--dir", cl, "a")
        assert "reassignment complete" in run("cluster", "reassign", "--dir", cl, "--replicas", "2,3")
        leader = json.loads(run("cluster", "status", "--dir", cl, "--json"))["partitions"][0]["leader"]
        assert leader in (2, 3)
        run("cluster", "kill", "--dir", cl, "--broker", str(leader))
        run("cluster", "produce", "--dir", cl, "b")
    finally:
        run("cluster", "down", "--dir", cl)
    res = runner.invoke(main, ["validate", ev], catch_exceptions=False)
    assert res.exit_code == 0 and "valid" in res.output, res.output
    merged, r = validate_selflogs([ev])
    assert r.ok and [a for a in (e.action for e in merged.log.events) if a and a[0] in ("RequestReassignment", "Crash")] \
        == [("RequestReassignment", (0, (2, 3))), ("Crash", (leader,))]


def test_the_fitted_budget_counts_the_logged_session_expiries():
    """A run whose logs name ExpireSession steps needs that many in the model's budget (default 0),
    or the validator could never take them; Reregister is healing and needs none."""
    lines = [_sl("launcher", 1, 10, "action", ("ExpireSession", (2,)), role="launcher"),
             _sl("broker-2", 1, 20, "action", ("Reregister", (2,))),
             _sl("launcher", 2, 30, "action", ("ExpireSession", (2,)), role="launcher")]
    cfg = selflog._model_config({"brokers": 3, "replication_factor": 3}, lines)
    assert cfg.faults.session_expiries == 2
    assert selflog._model_config({"brokers": 3, "replication_factor": 3}, lines[1:2]).faults.session_expiries == 0
