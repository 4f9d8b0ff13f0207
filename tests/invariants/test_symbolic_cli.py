"""The command line of the symbolic checks (isrcheck/commands/prove.py): `prove` and `bmc`.

Exit status: 0 all proved, 1 refuted, 3 unknown, 2 bad input (one `error:` line, no traceback);
--json prints exactly one object.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from isrcheck.commands.prove import bmc, prove

from shared import SLOPPY_SELECTOR_VARIANT


def run(cmd, *args):
    result = CliRunner().invoke(cmd, list(args), prog_name="isrcheck")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"raised {result.exception!r}") from result.exception
    return result


def one_error_line(result, *fragments):
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for f in fragments:
        assert f in lines[0]


def test_prove_selectors_json_all_proved():
    r = run(prove, "selectors", "--max-brokers", "3", "--samples", "20", "--exhaustive-brokers", "2", "--json")
    assert r.exit_code == 0, r.stdout
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "PROVED" and doc["exit_code"] == 0 and doc["symbolic"] is True
    assert {o["verdict"] for o in doc["obligations"]} == {"PROVED"}
    assert all(a["agrees"] for a in doc["agreement"])


def test_prove_selectors_refutes_a_variant(tmp_path, monkeypatch):
    (tmp_path / "my_variant.py").write_text(SLOPPY_SELECTOR_VARIANT)
    monkeypatch.syspath_prepend(str(tmp_path))
    r = run(prove, "selectors", "--max-brokers", "3", "--samples", "0", "--protocol", "my_variant:Sloppy")
    assert r.exit_code == 1
    assert "REFUTED" in r.stdout and "never picks a shutting-down broker" in r.stdout
    assert "shutting down" in r.stdout and "picked" in r.stdout
    assert "assignment [" in r.stdout  # lists are printed, not swallowed as rich markup
    assert "sloppy" in r.stdout


@pytest.mark.parametrize("spec, fragment", [("nowhere:X", "cannot import"), ("isrcheck.model.config:Config",
                                                                              "not a subclass"),
                                            ("noseparator", "MODULE:ATTR")])
def test_prove_selectors_bad_protocol(spec, fragment):
    one_error_line(run(prove, "selectors", "--protocol", spec), fragment)


def test_prove_transitions_reports_the_non_inductive_invariants():
    r = run(prove, "transitions", "--json")
    doc = json.loads(r.stdout)
    # the five non-inductive context invariants are the documented expected refutations
    assert r.exit_code == 0 and doc["verdict"] == "PROVED", doc["summary"]
    assert len(doc["expected_refutations"]) == 5
    moves = [o for o in doc["obligations"] if o["property"].endswith("every move is in its table")]
    assert moves and all(o["verdict"] == "PROVED" for o in moves)


def test_bmc_finds_the_unclean_election_weakness():
    r = run(bmc, "unclean-election", "--depth", "4", "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["mode"] == "bmc" and doc["model"] == "unclean-election" and doc["depth"] == 4
    ob = next(o for o in doc["obligations"] if o["property"] == "NoCommittedWriteLost")
    assert ob["verdict"] == "REFUTED" and ob["counterexample"]["length"] == 4


def test_bmc_text_output_shows_the_replayed_trace(tmp_path):
    f = tmp_path / "unclean2.toml"
    f.write_text("brokers = 2\nreplication_factor = 2\nmax_records = 1\nunclean_leader_election = true\n"
                 "[faults]\ncrashes = 1\nisr_shrinks = 1\n")
    r = run(bmc, "--config", str(f), "--depth", "4", "--first")
    assert r.exit_code == 1
    assert "Counterexample: NoCommittedWriteLost after 4 steps" in r.stdout
    assert "ProcessBrokerChange(1)" in r.stdout


def test_bmc_proves_a_small_safe_configuration(tmp_path):
    f = tmp_path / "small.toml"
    f.write_text("brokers = 2\nreplication_factor = 2\nmax_records = 1\n")
    r = run(bmc, "--config", str(f), "--depth", "3", "--json")
    assert r.exit_code == 0, r.stdout
    assert json.loads(r.stdout)["verdict"] == "PROVED"


def test_bmc_refuses_a_configuration_outside_the_encoding(tmp_path):
    f = tmp_path / "bounces.toml"
    f.write_text("brokers = 2\nreplication_factor = 2\nmax_records = 1\ndetect_restarts = true\n"
                 "[faults]\nundetected_restarts = 1\n")
    one_error_line(run(bmc, "--config", str(f), "--depth", "2"), "bounce detection")


@pytest.mark.parametrize("args, fragment", [
    ((), "model NAME"),
    (("no-such-model",), "unknown model"),
    (("replication", "--generation", "kip-999"), "unknown generation"),
])
def test_bmc_refuses_what_it_does_not_encode(args, fragment):
    one_error_line(run(bmc, *args), fragment)


def test_prove_inductive_without_faults(tmp_path):
    f = tmp_path / "quiet.toml"
    f.write_text("brokers = 2\nreplication_factor = 2\nmax_records = 1\n")
    r = run(prove, "inductive", "--config", str(f), "--json")
    assert r.exit_code == 0, r.stdout
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "PROVED" and "FollowersArePrefixesOfTheirLeader" in doc["strengthening"]


def test_prove_inductive_refuses_unknown_generations():
    one_error_line(run(prove, "inductive", "replication", "--generation", "kip-999"), "kip-999")


def test_bmc_runs_the_epoch_generations():
    """`--generation` selects the leader-epoch encodings: unclean election loses a write in 4 steps
    under kip-320 too (exit 1, the trace replayed by the model)."""
    r = run(bmc, "unclean-election", "--generation", "kip-320", "--depth", "4", "--first", "--json")
    assert r.exit_code == 1, r.stdout
    doc = json.loads(r.stdout)
    refuted = [o for o in doc["obligations"] if o["verdict"] == "REFUTED"]
    assert [(o["property"], o["generation"]) for o in refuted] == [("NoCommittedWriteLost", "kip-320")]


def test_help_documents_the_exit_status():
    r = run(prove, "--help")
    assert "3 something unknown" in r.stdout and "2 bad usage" in r.stdout
