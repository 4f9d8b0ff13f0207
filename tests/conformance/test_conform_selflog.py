"""Implementation -> model from the implementation's *own* event logs: every process of a real cluster
writes what it does (impl/event_log.py), the logs of one run are merged by CLOCK_MONOTONIC
(conformance/selflog.py) and validated; doctored copies are rejected at the doctored process line;
a torn last line is dropped with a note; foreign or garbled files are one-line errors (exit 2)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from isrcheck.conformance.eventlog import EventLogError
from isrcheck.conformance.runs import self_logged_run
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
