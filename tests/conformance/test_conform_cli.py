"""The conformance commands: isrcheck traces export/show, isrcheck conform, isrcheck validate."""
from __future__ import annotations

import json

from isrcheck.conformance.eventlog import load_log


def test_traces_export_writes_a_counterexample_in_both_formats(tmp_path, run_cli):
    for name, fmt in (("ce.jsonl", None), ("ce.itf.json", None), ("ce.txt", "itf")):
        args = ["traces", "export", "hw-truncation-one-crash", "--out", str(tmp_path / name)]
        if fmt:
            args += ["--format", fmt]
        res = run_cli(*args)
        assert res.exit_code == 0, res.output
        assert "NoCommittedWriteLost counterexample, 8 step(s)" in res.output
    assert (tmp_path / "ce.txt").read_text().startswith('{"#meta"')
    res = run_cli("traces", "show", str(tmp_path / "ce.txt"))
    assert res.exit_code == 0 and "Crash(1)" in res.output and "breaks NoCommittedWriteLost" in res.output
    res = run_cli("traces", "show", "--json", str(tmp_path / "ce.jsonl"))
    doc = json.loads(res.output)
    assert doc["generation"] == "high-watermark" and doc["actions"][-1] == "DeliverRequest(3)"


def test_traces_export_writes_seeded_samples_for_a_passing_model(tmp_path, run_cli):
    res = run_cli("traces", "export", "replication", "--out", str(tmp_path / "s.jsonl"), "--samples", "2",
                  "--seed", "3", "--max-depth", "12")
    assert res.exit_code == 0 and res.output.count("sample path") == 2
    assert (tmp_path / "s-1.jsonl").exists() and (tmp_path / "s-2.jsonl").exists()
    res = run_cli("conform", str(tmp_path / "s-1.jsonl"), str(tmp_path / "s-2.jsonl"))
    assert res.exit_code == 0 and res.output.count("conforms") == 2


def test_conform_json_and_against(tmp_path, run_cli):
    run_cli("traces", "export", "unclean-election", "--out", str(tmp_path / "u.itf.json"))
    res = run_cli("conform", "--json", "--against", "both", str(tmp_path / "u.itf.json"))
    doc = json.loads(res.output)
    assert res.exit_code == 0 and doc["ok"] and doc["results"][0]["matched"] == 5


def test_conform_model_cover_reports_coverage(run_cli):
    res = run_cli("conform", "--model", "replication", "--json")
    doc = json.loads(res.output)
    assert res.exit_code == 0 and doc["ok"]
    r = doc["results"][0]
    assert r["edges"]["covered"] == r["edges"]["total"] > 0 and r["states"]["ratio"] == 1.0
    res = run_cli("conform", "--model", "controlled-shutdown")
    assert res.exit_code == 0 and "100.0%" in res.output and "conforms" in res.output


def test_input_errors_are_one_line_and_exit_2(tmp_path, run_cli):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "isrcheck-trace", "version": 7}\n')
    for args, words in [
        (("conform",), "give TRACE files"),
        (("conform", str(tmp_path / "none.jsonl")), "no such file"),
        (("conform", str(bad)), "version 7 is not supported"),
        (("conform", str(bad), "--model", "replication"), "not both"),
        (("conform", "--model", "nosuch"), "unknown model"),
        (("traces", "export", "nosuch", "--out", str(tmp_path / "x")), "unknown model"),
        (("traces", "export", "replication", "--out", str(tmp_path / "x"), "--format", "xml"), "xml"),
        (("validate",), "give an event LOG"),
        (("validate", str(bad)), "not an isrcheck event log"),
        (("validate", "--record", str(tmp_path / "l.jsonl")), "--record needs --model"),
    ]:
        res = run_cli(*args)
        assert res.exit_code == 2, (args, res.output)
        lines = [x for x in res.output.strip().split("\n") if x.startswith("error:")]
        assert len(lines) == 1 and words in lines[0], (args, res.output)


def test_validate_records_and_checks_a_log(tmp_path, run_cli):
    f = tmp_path / "run.jsonl"
    res = run_cli("validate", "--record", str(f), "--model", "controller-failover", "--seed", "2", "--steps", "40")
    assert res.exit_code == 0 and f.exists()
    res = run_cli("validate", str(f))
    assert res.exit_code == 0 and "valid" in res.output
    log = load_log(f)
    lines = f.read_text().strip().split("\n")
    ev = json.loads(lines[3])
    ev["facts"]["partitions[0].leader"] = 3
    lines[3] = json.dumps(ev)
    f.write_text("\n".join(lines) + "\n")
    res = run_cli("validate", str(f))
    assert res.exit_code == 1 and "not a model behaviour" in res.output and "event 3" in res.output
    res = run_cli("validate", "--json", str(f))
    doc = json.loads(res.output)
    assert not doc["ok"] and doc["failed_event"] == {"seq": 3, "line": 4} and len(log.events) == doc["events"]
