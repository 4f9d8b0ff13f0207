"""Bad input exits 2 with one line, ``error: ...``, and never a traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest



def _write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_malformed_toml_config(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "bad.toml", "brokers = = 3\n")
    assert_input_error(cli("check", "--config", path), "not valid TOML", "bad.toml")


def test_unknown_config_key(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "bad.toml", "brokers = 3\nbrokerz = 4\n")
    assert_input_error(cli("check", "--config", path), "brokerz")


def test_unknown_nested_config_key(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "bad.toml", "brokers = 3\n[faults]\ncrashs = 1\n")
    assert_input_error(cli("check", "--config", path), "crashs")


def test_replication_factor_above_brokers(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "bad.toml", "brokers = 2\nreplication_factor = 3\n")
    assert_input_error(cli("check", "--config", path), "replication_factor")


def test_impossible_bound_through_set(cli, small_config, assert_input_error):
    assert_input_error(cli("check", "--config", str(small_config), "--set", "replication_factor=4"), "replication_factor")


def test_missing_config_file(cli, tmp_path, assert_input_error):
    assert_input_error(cli("check", "--config", str(tmp_path / "nope.toml")), "no such file")


def test_config_is_a_directory(cli, tmp_path, assert_input_error):
    assert_input_error(cli("check", "--config", str(tmp_path)), "directory")


def test_unknown_model_name(cli, fake_manifest, assert_input_error):
    line = assert_input_error(cli("check", "tinny"), "unknown model 'tinny'")
    assert "tiny" in line  # a suggestion


def test_unknown_model_name_in_real_manifest(cli, assert_input_error):
    assert_input_error(cli("check", "no-such-model-anywhere"), "unknown model")


def test_neither_name_nor_config(cli, assert_input_error):
    assert_input_error(cli("check"), "NAME", "--config")


def test_both_name_and_config(cli, fake_manifest, small_config, assert_input_error):
    assert_input_error(cli("check", "tiny", "--config", str(small_config)), "not both")


@pytest.mark.parametrize("bad", ["faults.crashes", "=1", "faults..crashes=1"])
def test_set_without_key_value(cli, small_config, bad, assert_input_error):
    assert_input_error(cli("check", "--config", str(small_config), "--set", bad), "--set expects KEY=VALUE")


def test_set_without_equals_on_a_named_model(cli, fake_manifest, assert_input_error):
    assert_input_error(cli("simulate", "tiny", "--set", "brokers"), "--set expects KEY=VALUE")


def test_set_through_a_non_table(cli, small_config, assert_input_error):
    assert_input_error(cli("check", "--config", str(small_config), "--set", "brokers.x=1"), "not a table")


def test_malformed_scenario_step(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "s.toml", 'steps = ["Produce(1, 0)", "Fetch(2 0)"]\n[config]\nbrokers = 3\n')
    assert_input_error(cli("run", path), "step 2", "Fetch(2 0)")


def test_unknown_action_in_scenario(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "s.toml", 'steps = ["Explode(1)"]\n[config]\nbrokers = 3\n')
    assert_input_error(cli("run", path), "step 1", "unknown action 'Explode'")


def test_scenario_step_not_enabled(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "s.toml", 'steps = ["Produce(1, 0)", "Fetch(1, 0)"]\n[config]\nbrokers = 3\n')
    line = assert_input_error(cli("run", path), "step 2", "Fetch(1, 0) is not enabled", "enabled:")
    assert "Fetch(2, 0)" in line  # lists what was enabled


def test_scenario_with_model_and_config(cli, tmp_path, fake_manifest, assert_input_error):
    path = _write(tmp_path, "s.toml", 'model = "tiny"\nsteps = []\n[config]\nbrokers = 3\n')
    assert_input_error(cli("run", path), "exactly one")


def test_scenario_unknown_key(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "s.toml", 'stepz = []\n[config]\nbrokers = 3\n')
    assert_input_error(cli("run", path), "stepz")


def test_scenario_bad_config(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "s.toml", 'steps = []\n[config]\nbrokers = 2\nreplication_factor = 3\n')
    assert_input_error(cli("run", path), "replication_factor")


def test_missing_scenario(cli, tmp_path, assert_input_error):
    assert_input_error(cli("run", str(tmp_path / "missing.toml")), "no such file")


def test_gate_unknown_name(cli, fake_manifest, assert_input_error):
    assert_input_error(cli("gate", "nope"), "unknown model 'nope'")


def test_simulate_bad_config(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "bad.toml", "max_records = 99\n")
    assert_input_error(cli("simulate", "--config", path), "max_records")


def test_click_usage_errors_exit_2(cli, small_config):
    assert cli("check", "--config", str(small_config), "--max-depth", "-1").exit_code == 2
    assert cli("check", "--bogus-option").exit_code == 2
    assert cli("nosuchcommand").exit_code == 2


def test_real_process_prints_one_line_and_no_traceback(tmp_path):
    path = _write(tmp_path, "bad.toml", "brokers = 2\nreplication_factor = 3\n")
    proc = subprocess.run([sys.executable, "-m", "isrcheck", "check", "--config", path],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
    assert "Traceback" not in proc.stderr
