"""`check --verbose`, `traces show` and `run` on a saved trace: the same table as `check`."""
from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """hw-truncation-one-crash's counterexample as JSON lines and as ITF, and a lasso."""
    from click.testing import CliRunner

    from isrcheck.cli import main

    d = tmp_path_factory.mktemp("traces")
    runner = CliRunner()
    files = {}
    for key, name, extra in (("jsonl", "ce.jsonl", []), ("itf", "ce.itf.json", []),
                             ("lasso", "lasso.jsonl", ["--property", "PartitionEventuallyLed"])):
        model = "undetected-restart" if key == "lasso" else "hw-truncation-one-crash"
        res = runner.invoke(main, ["traces", "export", model, "--out", str(d / name), *extra])
        assert res.exit_code == 0, res.output
        files[key] = d / name
    return files


def _lines_of_step(out: str, n: int) -> list[str]:
    return [line for line in out.splitlines() if line.split()[:1] == [str(n)]]


def test_check_verbose_shows_the_hidden_change_of_step_3(cli):
    plain = cli("check", "hw-truncation-one-crash")
    res = cli("check", "hw-truncation-one-crash", "--verbose")
    assert res.exit_code == 0 and plain.exit_code == 0  # the pinned failure: as gate, it passes
    out = res.stdout
    assert out.startswith(plain.stdout.split("\nCoverage")[0])  # the default output, then more
    assert "Initial state, every field" in out and "Every change, step by step" in out
    assert "(no change)" not in out
    assert "replicas[p0].remote_leo[b2]" in out
    assert "Every change" not in plain.stdout and "remote_leo" not in plain.stdout


def test_check_verbose_shows_the_stale_controllers_steps(cli):
    out = cli("check", "deposed-controller-reassignment", "-v").stdout
    assert "stale controller" in out and "reassign_step[p0]" in out
    assert "illegal transition" in out.split("Every change, step by step")[1]
    assert "LeaderAndIsr(ce=" in out  # the queues


@pytest.mark.parametrize("key", ["jsonl", "itf"])
def test_traces_show_renders_the_check_table(cli, exported, key):
    check = cli("check", "hw-truncation-one-crash").stdout
    res = cli("traces", "show", str(exported[key]))
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "breaks NoCommittedWriteLost" in out.splitlines()[0]
    for n in range(9):  # every row of check's table, cell for cell
        assert _lines_of_step(out, n) == _lines_of_step(check, n), n
    assert "Every change" not in out
    verbose = cli("traces", "show", "--verbose", str(exported[key])).stdout
    assert "replicas[p0].remote_leo[b2]" in verbose and "Initial state, every field" in verbose


def test_traces_show_json_carries_the_replayed_states(cli, exported):
    code, doc = cli.json("traces", "show", "--json", str(exported["jsonl"]))
    assert code == 0
    assert doc["actions"][2] == "Fetch(2, 0)" and len(doc["trace"]) == 9
    leader = doc["trace"][3]["state"]["brokers"][0]["replicas"]["0"]
    assert leader["remote_leo"] == {"1": 0, "2": 1, "3": 0}


def test_traces_show_marks_a_lassos_loop(cli, exported):
    out = cli("traces", "show", str(exported["lasso"])).stdout
    assert "a lasso: stutters at the last state" in out
    assert "\u21ba (stutters forever)" in " ".join(out.split())


def test_traces_show_refuses_a_file_the_model_does_not_replay_to(cli, exported, tmp_path, assert_input_error):
    lines = exported["jsonl"].read_text().strip().split("\n")
    step = json.loads(lines[3])  # step 2: Fetch(2, 0) gave broker 2 the record
    replica = next(r for r in step["observation"]["replicas"] if r["broker"] == 2)
    replica["log"], replica["leo"] = [], 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:3], json.dumps(step), *lines[4:]]) + "\n")
    assert_input_error(cli("traces", "show", str(bad)), "step 2", "differs from the stored observation",
                       "--variant")


def test_run_replays_a_trace_file(cli, exported):
    for key in ("jsonl", "itf"):
        res = cli("run", str(exported[key]))
        assert res.exit_code == 1, res.output  # the counterexample breaks a property
        assert "NoCommittedWriteLost broken at step 8" in res.stdout
        assert "not valid TOML" not in res.output and "DeliverRequest(3)" in res.stdout
    code, doc = cli.json("run", "--json", str(exported["jsonl"]))
    assert code == 1 and doc["broken"] == [{"step": 8, "property": "NoCommittedWriteLost"}]
    assert "remote_leo" in cli("run", "-v", str(exported["jsonl"])).stdout


def test_run_on_a_broken_trace_file_is_one_error_line(cli, tmp_path, assert_input_error):
    f = tmp_path / "t.jsonl"
    f.write_text('{"format": "isrcheck-trace"}\n')
    line = assert_input_error(cli("run", str(f)))
    assert "TOML" not in line and "t.jsonl" in line
    assert_input_error(cli("run", str(tmp_path / "missing.itf.json")), "missing.itf.json")


def test_verbose_does_not_apply_to_peer_checks(cli, assert_input_error):
    assert_input_error(cli("check", "--peer", "kip-320", "--verbose"), "--peer MODULE takes no", "--verbose")
