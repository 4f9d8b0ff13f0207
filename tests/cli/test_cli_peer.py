"""`isrcheck check --peer`: the transcription of the public TLA+ specification from the command line."""
from __future__ import annotations

from isrcheck.peers.kafka_specification import expected


def test_check_peer_kip_320_succeeds(cli):
    result = cli("check", "--peer", "kip-320", "--replicas", "2")
    assert result.exit_code == 0, result.output
    assert "SUCCESS" in result.stdout
    assert f"{expected('kip-320')['states_no_symmetry']:,}" in result.stdout


def test_check_peer_truncate_to_hw_strong_isr_fails_with_the_pinned_length(cli):
    code, doc = cli.json("check", "--peer", "truncate-to-hw", "--property", "StrongIsr", "--json")
    assert code == 1
    assert doc["outcome"] == "safety_failure"
    v = doc["violations"][0]
    assert v["property"] == "StrongIsr"
    assert v["tlc_length"] == expected("truncate-to-hw")["StrongIsr"] == v["length"] + 1
    result = cli("check", "--peer", "truncate-to-hw", "--property", "StrongIsr")
    assert result.exit_code == 1
    assert "Counterexample: StrongIsr violated after 9 steps" in result.stdout


def test_check_peer_bad_usage_is_one_line_exit_2(cli, assert_input_error):
    assert_input_error(cli("check", "tiny", "--peer", "kip-320"), "--peer")
    assert_input_error(cli("check", "--peer", "kip-999"), "known: truncate-to-hw")
    assert_input_error(cli("check", "--peer", "kip-320", "--replicas", "9"), "replicas")
