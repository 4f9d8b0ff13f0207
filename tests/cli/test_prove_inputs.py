"""`prove inductive` and `bmc` honour --property and --strict (issue 31, "one set of inputs").

Before, both refused the two options in one line (exit 2). Now --property restricts the verdicts
to the properties named (among those the z3 encoding covers for the configuration: others are one
`error:` line naming what it covers), and the static vacuity pass runs before the proof or search:
`warning:` lines either way, and with --strict a run whose claims all hold fails as vacuous (exit 1,
`outcome: vacuous`), as `check` and `run` do.

Each test would fail if the option were ignored: the restricted runs report a different set and
(for bmc) a different exit status; --strict changes the exit status of the same configuration.
The z3 bounds are small (2 brokers, 1 record, depth 2 to 4) so each run takes seconds.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from isrcheck.model.config import from_mapping

#: properties both commands cover for a 2-broker configuration without operations (the encoding's order)
COVERED = ["LeaderInIsr", "HighWatermarkBelowLogEnd", "StrongIsr", "NoCommittedWriteLost", "LogMatching",
           "ConsistentRead", "OneLeaderPerEpoch", "EpochsMonotonic"]
VACUOUS_SET = ["--set", "faults.undetected_restarts=1"]  # a quick restart with no crash to follow it
VACUOUS_LINE = "warning: faults.undetected_restarts = 1 can never take effect"

#: argv of each command before its inputs, with bounds that keep z3 to seconds
COMMANDS = {"bmc": ["bmc", "--depth", "2"],
            "prove inductive": ["prove", "inductive", "--reach-states", "0"]}


@pytest.fixture
def quiet(tmp_path: Path) -> Path:
    """Two brokers, one record, no fault: every property holds (and is inductive)."""
    p = tmp_path / "quiet.toml"
    p.write_text("brokers = 2\nreplication_factor = 2\nmax_records = 1\n")
    return p


@pytest.fixture
def unclean(tmp_path: Path) -> Path:
    """An unclean election loses an acknowledged write in 4 steps (NoCommittedWriteLost)."""
    p = tmp_path / "unclean.toml"
    p.write_text("brokers = 2\nreplication_factor = 2\nmax_records = 1\nunclean_leader_election = true\n"
                 "[faults]\ncrashes = 1\nisr_shrinks = 1\n")
    return p


def _reported(doc: dict) -> list[str]:
    return [o["property"] for o in doc["obligations"]]


# ---------------------------------------------------------------------------- --property
def test_bmc_property_restricts_the_search_and_the_verdict_follows(cli, unclean):
    code, doc = cli.json("bmc", "--config", str(unclean), "--depth", "4", "--json")
    assert code == 1 and doc["outcome"] == "safety_failure" and _reported(doc) == COVERED
    assert {o["property"] for o in doc["obligations"] if o["verdict"] == "REFUTED"} == {"NoCommittedWriteLost"}
    # the one broken property left out: every chosen one holds, exit 0
    code, doc = cli.json("bmc", "--config", str(unclean), "--depth", "4", "--property", "LeaderInIsr",
                         "--property", "StrongIsr", "--json")
    assert (code, doc["verdict"], doc["outcome"], doc["exit_code"]) == (0, "PROVED", "success", 0)
    assert _reported(doc) == doc["properties"] == ["LeaderInIsr", "StrongIsr"]
    # the broken one chosen: refuted again, with its counterexample
    code, doc = cli.json("bmc", "--config", str(unclean), "--depth", "4", "--property", "NoCommittedWriteLost",
                         "--json")
    assert code == 1 and _reported(doc) == ["NoCommittedWriteLost"]
    assert doc["obligations"][0]["counterexample"]["length"] == 4


def test_bmc_property_text_lists_only_the_chosen(cli, unclean):
    res = cli("bmc", "--config", str(unclean), "--depth", "4", "--property", "LeaderInIsr")
    assert res.exit_code == 0, res.output
    assert "LeaderInIsr" in res.stdout and "NoCommittedWriteLost" not in res.stdout
    assert "PROVED - 1 proved, 0 refuted" in res.stdout


def test_prove_inductive_property_reports_only_the_chosen(cli, quiet):
    code, doc = cli.json("prove", "inductive", "--config", str(quiet), "--reach-states", "0",
                         "--property", "EpochsMonotonic", "--property", "LeaderInIsr", "--json")
    assert code == 0 and doc["verdict"] == "PROVED", doc.get("summary")
    assert _reported(doc) == doc["properties"] == ["LeaderInIsr", "EpochsMonotonic"]  # the encoding's order
    # the other safety properties still strengthen the proof (the verdict is a full run's)
    detail = doc["obligations"][0]["detail"]
    assert detail.startswith("inductive together with:") and "StrongIsr" in detail
    res = cli("prove", "inductive", "--config", str(quiet), "--reach-states", "0", "--property", "LeaderInIsr")
    assert res.exit_code == 0, res.output
    assert "PROVED - 1 proved, 0 refuted" in res.stdout and "StrongIsr" not in res.stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("prop, fragment", [
    ("NoSuchProperty", "no such property"),
    ("IsrSubsetOfReplicas", "not encoded for this configuration"),  # encoded only with reassignments
    ("PartitionEventuallyLed", "a liveness property"),
    ("WriteCommitted", "a sometimes-property"),
])
def test_a_property_the_encoding_does_not_cover_is_one_line_exit_2(cli, assert_input_error, quiet, name, prop,
                                                                     fragment):
    res = cli(*COMMANDS[name], "--config", str(quiet), "--property", "LeaderInIsr", "--property", prop,
              *VACUOUS_SET)  # the error comes before any work, the warning: lines included
    line = assert_input_error(res, f"--property {prop}:", fragment)
    assert "covers " + ", ".join(COVERED) in line


def test_choose_follows_what_the_configuration_encodes():
    """With reassignments the encoding states IsrSubsetOfReplicas (and checks moves): --property may
    name it there, and only there."""
    from isrcheck.invariants.symbolic.instance import Unsupported
    from isrcheck.invariants.symbolic.replication import Encoding, choose

    plain = Encoding(from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1}))
    assert choose(plain, ()) == tuple(COVERED) == choose(plain, None)
    with pytest.raises(Unsupported, match="IsrSubsetOfReplicas: not encoded"):
        choose(plain, ["IsrSubsetOfReplicas"])
    moving = Encoding(from_mapping({"brokers": 3, "replication_factor": 2, "max_records": 1,
                                    "operations": {"reassignments": [{"partition": 0, "target": [2, 3]}]}}))
    assert {"IsrSubsetOfReplicas", "ReassignmentRecoverable", "OnlyValidTransitions"} <= set(moving.encoded())
    assert choose(moving, ["OnlyValidTransitions", "IsrSubsetOfReplicas"]) == ("IsrSubsetOfReplicas",
                                                                                "OnlyValidTransitions")


# ---------------------------------------------------------------------------- --strict and the vacuity pass
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_strict_fails_a_vacuous_configuration_and_the_warning_shows_without_it(cli, quiet, name):
    argv = [*COMMANDS[name], "--config", str(quiet), *VACUOUS_SET, "--property", "LeaderInIsr"]
    res = cli(*argv)
    assert res.exit_code == 0, res.output  # as before: the warning does not change the exit status
    assert VACUOUS_LINE in res.stderr and "VACUOUS" not in res.stdout
    res = cli(*argv, "--strict")
    assert res.exit_code == 1, res.output
    assert VACUOUS_LINE in res.stderr and "VACUOUS - 1 part of the configuration never takes effect" in res.stdout
    code, doc = cli.json(*argv, "--strict", "--json")
    assert (code, doc["exit_code"], doc["outcome"], doc["strict"]) == (1, 1, "vacuous", True)
    assert doc["verdict"] == "PROVED"  # the claims hold; the configuration is what is vacuous
    assert [(w["key"], w["kind"]) for w in doc["warnings"]] == [("faults.undetected_restarts", "static")]


def test_strict_passes_what_is_not_vacuous_and_a_refutation_stays_one(cli, quiet, unclean):
    code, doc = cli.json("bmc", "--config", str(quiet), "--depth", "2", "--strict", "--json")
    assert (code, doc["outcome"], doc["warnings"], doc["strict"]) == (0, "success", [], True)
    # a refutation outranks vacuity, as in check (safety_failure before vacuous)
    code, doc = cli.json("bmc", "--config", str(unclean), "--depth", "4", "--first", "--strict",
                         "--set", "acks=1", "--set", "min_insync_replicas=2", "--json")
    assert code == 1 and doc["outcome"] == "safety_failure" and doc["verdict"] == "REFUTED"
    assert [w["key"] for w in doc["warnings"]] == ["min_insync_replicas"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_no_longer_says_property_and_strict_are_refused(cli, name):
    res = cli(*COMMANDS[name][:2] if name == "prove inductive" else COMMANDS[name][:1], "--help")
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    assert "--property NAME" in text and "--strict" in text
    assert text.count("Refused by this command") == (2 if name == "bmc" else 3)  # --variant, --peer (and --keep-going)
    assert "covers for the configuration" in text and "outcome vacuous" in text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_bug_put_back_is_refused_not_proved(cli, assert_input_error, quiet, name):
    """The encoding states the fixed rules: a configuration with `reintroduce` was once 'PROVED' by
    bmc (the mixin never ran); now it is one line naming the key, and `check` is the way."""
    result = cli(*COMMANDS[name], "--config", str(quiet), "--set", 'reintroduce=["KAFKA-708"]')
    assert_input_error(result, "reintroduce", "KAFKA-708", "isrcheck check")
