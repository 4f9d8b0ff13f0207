"""Output for CI: `gate` progress lines on stderr when it is not a terminal, JUnit XML reports
(`gate --junit`, `conform --junit`) read back with a JUnit XML parser (xml.etree), and
`gate --variant`, which compares a variant with the pinned expectations."""
from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from isrcheck.inputs import manifest
from isrcheck.specs.manifest import LivenessExpect

ROOT = Path(__file__).resolve().parents[2]
EAGER = f"{ROOT / 'examples' / 'variants' / 'eager_election.py'}:EagerElection"
LINE = re.compile(r"^gate \[(\d+)/(\d+)\] (\S+) (PASS|FAIL) (\d+\.\d\d) s$")


def _patch(monkeypatch, entries, name, **changes):
    patched = [dataclasses.replace(e, **changes) if e.name == name else e for e in entries]
    monkeypatch.setattr(manifest, "load", lambda: list(patched))


def _lines(stderr: str) -> list[tuple[str, ...]]:
    out = []
    for line in stderr.strip("\n").splitlines():
        m = LINE.match(line)
        assert m, f"not a progress line: {line!r}"
        out.append(m.groups())
    return out


def _junit(path: Path) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    suite = suites[0]
    cases = suite.findall("testcase")
    assert suite.get("tests") == str(len(cases)) == root.get("tests")
    for c in cases:
        assert float(c.get("time")) >= 0.0 and c.get("classname") and c.get("name")
    return suite, cases


# ---------------------------------------------------------------------------- progress lines
def test_gate_prints_one_progress_line_per_model_on_stderr_when_it_is_not_a_terminal(cli, fake_manifest):
    res = cli("gate")
    assert res.exit_code == 0, res.output
    assert [(i, n, name, v) for i, n, name, v, _ in _lines(res.stderr)] == \
        [("1", "2", "tiny", "PASS"), ("2", "2", "tiny-crash", "PASS")]
    assert "gate [" not in res.stdout and "gate passed" in res.stdout


def test_gate_progress_lines_go_to_stderr_with_json_too(cli, fake_manifest, monkeypatch):
    tiny = next(e for e in fake_manifest if e.name == "tiny")
    _patch(monkeypatch, fake_manifest, "tiny", states=tiny.states + 1)
    res = cli("gate", "--all", "--json")
    assert res.exit_code == 1
    doc = json.loads(res.stdout)  # stdout is exactly the JSON object
    assert [m["verdict"] for m in doc["models"]] == ["FAIL", "PASS", "PASS"]
    lines = _lines(res.stderr)
    assert [(name, v) for _, _, name, v, _ in lines] == [("tiny", "FAIL"), ("tiny-crash", "PASS"), ("tiny-rf2", "PASS")]
    assert all(n == "3" for _, n, *_ in lines)


# ---------------------------------------------------------------------------- gate --junit
def test_gate_junit_one_testcase_per_model(cli, fake_manifest, tmp_path):
    out = tmp_path / "gate.xml"
    res = cli("gate", "--junit", str(out))
    assert res.exit_code == 0, res.output
    suite, cases = _junit(out)
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    assert [c.get("name") for c in cases] == ["tiny", "tiny-crash"]
    assert all(c.get("classname") == "isrcheck.gate" and len(c) == 0 for c in cases)
    assert float(suite.get("time")) >= sum(float(c.get("time")) for c in cases) - 0.01


def test_gate_junit_failure_carries_the_mismatch_lines_liveness_included(cli, fake_manifest, monkeypatch, tmp_path):
    tiny = next(e for e in fake_manifest if e.name == "tiny")
    pin = LivenessExpect("PartitionEventuallyLed", holds=False, length=3, loop=1)
    _patch(monkeypatch, fake_manifest, "tiny", states=tiny.states + 1, liveness=(pin,))
    out = tmp_path / "gate.xml"
    code, doc = cli.json("gate", "--json", "--junit", str(out))
    assert code == 1
    mismatches = next(m for m in doc["models"] if m["model"] == "tiny")["mismatches"]
    assert len(mismatches) == 2 and any(m.startswith("liveness PartitionEventuallyLed") for m in mismatches)
    suite, cases = _junit(out)
    assert suite.get("failures") == "1" and suite.get("errors") == "0"
    bad = next(c for c in cases if c.get("name") == "tiny")
    failure = bad.find("failure")
    assert failure is not None
    assert failure.get("message").split("\n") == mismatches == failure.text.split("\n")[:2]
    # the body goes on with the command that reproduces it (no trace: the run found none)
    assert failure.text.split("\n")[2:] == ["", "reproduce: isrcheck check tiny"]
    assert next(c for c in cases if c.get("name") == "tiny-crash").find("failure") is None


def test_gate_junit_failure_body_has_the_counterexample_and_the_command(cli, fake_manifest, monkeypatch, tmp_path):
    crash = next(e for e in fake_manifest if e.name == "tiny-crash")
    _patch(monkeypatch, fake_manifest, "tiny-crash", length=crash.length + 1)
    out = tmp_path / "gate.xml"
    assert cli("gate", "tiny-crash", "--junit", str(out)).exit_code == 1
    _, cases = _junit(out)
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("message").startswith("length: expected")
    text = failure.text
    assert "reproduce: isrcheck check tiny-crash\n" in text
    assert f"Counterexample: {crash.property} violated after {crash.length} steps" in text
    assert "(initial state)" in text  # the trace's rows, as check prints them
    assert all(len(line) <= 120 for line in text.splitlines())


def test_gate_junit_a_crashing_model_is_an_error(cli, fake_manifest, crashing_rf2, tmp_path):
    out = tmp_path / "gate.xml"
    assert cli("gate", "--all", "--junit", str(out)).exit_code == 1
    suite, cases = _junit(out)
    assert suite.get("errors") == "1" and suite.get("failures") == "0"
    err = next(c for c in cases if c.get("name") == "tiny-rf2").find("error")
    assert err is not None and "boom" in err.get("message")


def test_gate_junit_to_an_unwritable_place_is_an_input_error(cli, fake_manifest, tmp_path):
    res = cli("gate", "tiny", "--junit", str(tmp_path / "no" / "such" / "dir.xml"))
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    lines = [x for x in res.stderr.splitlines() if not LINE.match(x)]  # the progress line came first
    assert len(lines) == 1 and lines[0].startswith("error: cannot write the JUnit report")


# ---------------------------------------------------------------------------- gate --variant
def test_gate_variant_that_breaks_a_property_fails_with_the_mismatch(cli, tmp_path):
    res = cli("gate", "clean-election-isr-shrink")
    assert res.exit_code == 0, res.output
    out = tmp_path / "gate.xml"
    code, doc = cli.json("gate", "clean-election-isr-shrink", "--variant", EAGER, "--json", "--junit", str(out))
    assert code == 1 and doc["variant"] == EAGER and doc["passed"] is False
    m = doc["models"][0]
    assert m["verdict"] == "FAIL" and m["found"]["property"] == "NoCommittedWriteLost"
    want = f"outcome: expected success, found NoCommittedWriteLost violated in {m['found']['length']} steps"
    assert m["mismatches"] == [want]
    suite, cases = _junit(out)
    assert EAGER in suite.get("name")
    assert cases[0].find("failure").get("message") == m["mismatches"][0]


def test_gate_variant_text_output_names_the_variant(cli):
    res = cli("gate", "clean-election-isr-shrink", "--variant", EAGER)
    assert res.exit_code == 1
    out = " ".join(res.stdout.split())  # lines wrap at 120 columns on a pipe
    assert "NoCommittedWriteLost" in out and f"under variant {EAGER}" in out


def test_gate_variant_that_cannot_load_is_an_input_error(cli, fake_manifest, assert_input_error):
    assert_input_error(cli("gate", "--variant", "no_such_module_here:X"), "no_such_module_here")
    assert_input_error(cli("gate", "--variant", "nocolon"), "MODULE:ATTR")


# ---------------------------------------------------------------------------- conform --junit
@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> list[Path]:
    from click.testing import CliRunner

    from isrcheck.cli import main

    d = tmp_path_factory.mktemp("traces")
    res = CliRunner().invoke(main, ["traces", "export", "replication", "--out", str(d / "s.itf.json"),
                                    "--samples", "2", "--seed", "3", "--max-depth", "8"])
    assert res.exit_code == 0, res.output
    return [d / "s-1.itf.json", d / "s-2.itf.json"]


def test_conform_junit_one_testcase_per_trace(cli, exported, tmp_path):
    out = tmp_path / "conform.xml"
    res = cli("conform", *map(str, exported), "--json", "--junit", str(out))
    assert res.exit_code in (0, 1)
    doc = json.loads(res.stdout)
    _, cases = _junit(out)
    assert [c.get("name") for c in cases] == [r["trace"] for r in doc["results"]] == list(map(str, exported))
    for c, r in zip(cases, doc["results"]):  # whatever the implementation did, the report says the same
        assert c.get("classname") == "isrcheck.conform"
        assert (c.find("skipped") is not None) == (r["skipped"] is not None)
        assert (c.find("failure") is not None) == (r["divergence"] is not None)


def test_conform_junit_failure_names_the_divergence(cli, exported, tmp_path, monkeypatch):
    import isrcheck.commands.conform as cc
    from isrcheck.conformance.observations import Difference
    from isrcheck.conformance.replay import ConformResult, Divergence

    def fake(t, **kwargs):
        if t.label.endswith("s-1.itf.json"):
            return ConformResult(t.label, t.config, len(t.steps) - 1, len(t.steps), seconds=0.25)
        div = Divergence(2, ("Produce", (1, 0)), "observation", "the observations differ",
                         [Difference("partitions[0].hw", 1, 0)])
        return ConformResult(t.label, t.config, len(t.steps) - 1, 2, divergence=div, seconds=0.5)

    monkeypatch.setattr(cc, "conform_trace", fake)
    out = tmp_path / "conform.xml"
    res = cli("conform", *map(str, exported), "--junit", str(out))
    assert res.exit_code == 1
    suite, cases = _junit(out)
    assert suite.get("failures") == "1" and suite.get("skipped") == "0"
    assert cases[0].find("failure") is None and cases[0].get("time") == "0.250"
    failure = cases[1].find("failure")
    assert cases[1].get("time") == "0.500"
    lines = failure.get("message").split("\n")
    assert lines[0].startswith("diverges at step 2 of ") and "Produce(1, 0)" in lines[0]
    assert lines[1] == "partitions[0].hw: model 1, implementation 0"
    # the body: the same lines, the command that reruns this trace, the divergence table
    body = failure.text.split("\n")
    assert body[:2] == lines and f"reproduce: isrcheck conform {exported[1]}" in body
    assert any("partitions[0].hw" in line for line in body[3:])


def test_conform_junit_cover_one_testcase_per_model(cli, tmp_path, monkeypatch):
    import isrcheck.commands.conform as cc
    from isrcheck.conformance.cover import CoverReport

    monkeypatch.setattr(cc, "cover", lambda cfg, mode, label, **kw: CoverReport(label, mode, 10, 20, seconds=0.125,
                                                                                build_seconds=0.125))
    out = tmp_path / "cover.xml"
    res = cli("conform", "--model", "replication", "--model", "clean-election", "--junit", str(out))
    assert res.exit_code == 0, res.output
    suite, cases = _junit(out)
    assert [c.get("name") for c in cases] == ["replication", "clean-election"]
    assert [c.get("time") for c in cases] == ["0.250", "0.250"] and suite.get("failures") == "0"
