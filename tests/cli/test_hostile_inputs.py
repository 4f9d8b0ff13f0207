"""Issue 18, parts 1 and 3: every hostile input the audit found is one ``error:`` line and exit 2.

Deep nesting (TOML, ``--set``, a scenario's action argument, JSON-lines and ITF traces, event logs,
self-log headers), devices and FIFOs where a file is expected, oversized files, corrupt
``cluster.json``, and a stale ``cluster.json`` whose PID now belongs to an unrelated process, which
``cluster down`` must leave alive. Each case asserts what the user sees (the ``cli`` fixture turns
any escaped exception into a failure, so a traceback cannot pass), and the reader's limits are
exercised both ways (refused at the cap, accepted once the variable raises it).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from isrcheck.impl.process.cluster_state import TOKEN_ENV, start_time

DEEP = 1000  # as the audit: far past the cap (64) and past what the recursive parsers survive

# ---------------------------------------------------------------------------- builders


def _nest(n: int, open_: str = "[", close: str = "]", inner: str = "") -> str:
    return open_ * n + inner + close * n


def _write(tmp_path: Path, name: str, text: str | bytes) -> str:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return str(p)


DEEP_CONFIGS = {
    "array": f"brokers = {_nest(DEEP)}\n",
    "array-below-recursion": f"brokers = {_nest(100)}\n",  # parses; the depth check on the value refuses it
    "inline-tables": "a = " + _nest(DEEP, "{b = ", "}", "1") + "\n",
    "dotted-key": ".".join(["a"] * DEEP) + " = 1\n",
    "table-header": "[" + ".".join(["t"] * DEEP) + "]\nx = 1\n",
}


@pytest.mark.parametrize("kind", sorted(DEEP_CONFIGS))
def test_deep_toml_config_is_one_line(cli, tmp_path, assert_input_error, kind):
    path = _write(tmp_path, "config.toml", DEEP_CONFIGS[kind])
    assert_input_error(cli("check", "--config", path), "config.toml: nested deeper than 64 levels")


def test_deep_toml_config_in_cluster_up(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "config.toml", DEEP_CONFIGS["array"])
    assert_input_error(cli("cluster", "up", "--config", path, "--dir", str(tmp_path / "c")),
                       "config.toml: nested deeper than 64 levels")


@pytest.mark.parametrize("setting", [f"brokers={_nest(DEEP)}", f"brokers={_nest(80)}",
                                     "brokers=" + _nest(DEEP, "{a = ", "}", "1"),
                                     ".".join(["faults"] * 100) + "=1"])
def test_deep_set_value_is_one_line(cli, assert_input_error, setting, fake_manifest):
    assert_input_error(cli("check", "tiny", "--set", setting), "nested deeper than 64 levels")


def test_deep_scenario_action_argument(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "scenario.toml",
                  f'model = "replication"\nsteps = ["RequestReassignment(0, {_nest(DEEP)})"]\n')
    assert_input_error(cli("run", path), "step 1", "nested deeper than 64 levels")


def test_a_scenario_nested_in_its_own_document(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "scenario.toml", f'model = "replication"\nsteps = {_nest(DEEP)}\n')
    assert_input_error(cli("run", path), "scenario.toml: nested deeper than 64 levels")


def _deep_jsonl_trace() -> str:
    return json.dumps({"format": "isrcheck-trace"})[:-1] + ', "config": ' + _nest(5000) + "}\n"


def _deep_itf_trace() -> str:
    return '{"#meta": {"format": "isrcheck-trace"}, "states": ' + _nest(5000, "[{\"x\": ", "}]", "1") + "}"


@pytest.mark.parametrize("command", [("traces", "show"), ("conform",)])
@pytest.mark.parametrize("name, text", [("t.jsonl", _deep_jsonl_trace()), ("t.itf.json", _deep_itf_trace())])
def test_deep_json_trace_is_one_line(cli, tmp_path, assert_input_error, command, name, text):
    path = _write(tmp_path, name, text)
    assert_input_error(cli(*command, path), name, "nested deeper than 64 levels")


def test_deep_jsonl_trace_second_line_names_the_line(cli, tmp_path, assert_input_error):
    text = '{"format": "isrcheck-trace"}\n{"index": ' + _nest(5000) + "}\n"
    path = _write(tmp_path, "t.jsonl", text)
    assert_input_error(cli("traces", "show", path), "t.jsonl: line 2: nested deeper than 64 levels")


def test_deep_event_log_line(cli, tmp_path, assert_input_error):
    text = '{"format": "isrcheck-events"}\n{"seq": 1, "facts": ' + _nest(5000) + "}\n"
    path = _write(tmp_path, "run.jsonl", text)
    assert_input_error(cli("validate", path), "run.jsonl: line 2: nested deeper than 64 levels")


@pytest.mark.parametrize("as_dir", [False, True])
def test_deep_self_log_header(cli, tmp_path, assert_input_error, as_dir):
    d = tmp_path / "events"
    d.mkdir()
    path = _write(d, "broker-1.events.jsonl",
                  '{"format": "isrcheck-selflog", "config": ' + _nest(5000) + "}\n")
    assert_input_error(cli("validate", str(d) if as_dir else path),
                       "broker-1.events.jsonl: line 1: nested deeper than 64 levels")


# ---------------------------------------------------------------------------- not regular files
DEVICE_COMMANDS = {
    "config": ("check", "--config", "{}"),
    "scenario": ("run", "{}"),
    "trace": ("traces", "show", "{}"),
    "conform-trace": ("conform", "{}"),
    "event-log": ("validate", "{}"),
    "cluster-config": ("cluster", "up", "--config", "{}", "--dir", "{dir}"),
}


def _args(template: tuple[str, ...], path: str, tmp_path: Path) -> list[str]:
    return [path if a == "{}" else str(tmp_path / "c") if a == "{dir}" else a for a in template]


@pytest.mark.parametrize("what", sorted(DEVICE_COMMANDS))
def test_dev_zero_is_refused_before_reading(cli, tmp_path, assert_input_error, what):
    line = assert_input_error(cli(*_args(DEVICE_COMMANDS[what], "/dev/zero", tmp_path)), "/dev/zero")
    assert "is a device, not a regular file" in line


@pytest.mark.parametrize("what", sorted(DEVICE_COMMANDS))
def test_a_directory_is_refused(cli, tmp_path, assert_input_error, what):
    d = tmp_path / "adir"
    d.mkdir()
    if what == "event-log":  # a directory is a self-log directory there: it must hold logs
        assert_input_error(cli("validate", str(d)), "no *.events.jsonl files")
        return
    line = assert_input_error(cli(*_args(DEVICE_COMMANDS[what], str(d), tmp_path)), "adir")
    assert "directory" in line


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "pipe.toml"
    os.mkfifo(path)
    yield str(path)


@pytest.mark.parametrize("what", sorted(DEVICE_COMMANDS))
def test_a_fifo_is_refused_without_blocking(tmp_path, fifo, what):
    """Run in a child process: if the open blocked (nobody ever writes to this FIFO), the timeout
    (a hang guard, not a speed measurement) fails the test instead of hanging the suite."""
    args = _args(DEVICE_COMMANDS[what], fifo, tmp_path)
    r = subprocess.run([sys.executable, "-m", "isrcheck", *args], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, ISRCHECK_PURE="1"), stdin=subprocess.DEVNULL)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and "FIFO" in lines[0], r.stderr


# ---------------------------------------------------------------------------- size caps
MIB = 1024 * 1024


def test_oversized_config_is_refused_and_the_variable_raises_the_cap(cli, tmp_path, assert_input_error,
                                                                     monkeypatch):
    text = "brokers = 2\nreplication_factor = 2\nmax_records = 1\n" + "#" * MIB + "\n"
    path = _write(tmp_path, "big.toml", text)
    assert_input_error(cli("check", "--config", path), "big.toml: larger than 1 MiB",
                       "ISRCHECK_MAX_CONFIG_BYTES")
    monkeypatch.setenv("ISRCHECK_MAX_CONFIG_BYTES", "2M")
    assert cli("check", "--config", path).exit_code == 0


def test_oversized_scenario(cli, tmp_path, assert_input_error):
    path = _write(tmp_path, "big-scenario.toml", 'model = "replication"\nsteps = []\n' + "#" * MIB)
    assert_input_error(cli("run", path), "larger than 1 MiB", "ISRCHECK_MAX_SCENARIO_BYTES")


def test_oversized_trace_and_event_log_with_lowered_caps(cli, tmp_path, assert_input_error, monkeypatch):
    """The trace (64 MiB) and event-log (256 MiB) caps are too large to write in a test; the same
    bounded read is shown with the caps lowered through their variables."""
    monkeypatch.setenv("ISRCHECK_MAX_TRACE_BYTES", "1K")
    monkeypatch.setenv("ISRCHECK_MAX_EVENT_LOG_BYTES", "1K")
    trace = _write(tmp_path, "t.jsonl", '{"format": "isrcheck-trace"}\n' + " " * 2048)
    log = _write(tmp_path, "run.jsonl", '{"format": "isrcheck-events"}\n' + " " * 2048)
    assert_input_error(cli("traces", "show", trace), "t.jsonl: larger than 1 KiB", "ISRCHECK_MAX_TRACE_BYTES")
    assert_input_error(cli("validate", log), "run.jsonl: larger than 1 KiB", "ISRCHECK_MAX_EVENT_LOG_BYTES")


@pytest.mark.parametrize("var, value", [("ISRCHECK_MAX_CONFIG_BYTES", "lots"), ("ISRCHECK_MAX_DEPTH", "0"),
                                        ("ISRCHECK_MAX_DEPTH", "100000")])
def test_a_bad_limit_variable_is_one_line(cli, small_config, assert_input_error, monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    assert_input_error(cli("check", "--config", str(small_config)), var)


def test_the_depth_cap_can_be_lowered(cli, tmp_path, assert_input_error, monkeypatch, small_config):
    assert cli("check", "--config", str(small_config)).exit_code == 0
    monkeypatch.setenv("ISRCHECK_MAX_DEPTH", "1")
    path = _write(tmp_path, "config.toml", "brokers = 3\n[faults]\ncrashes = 1\n")
    assert_input_error(cli("check", "--config", path), "config.toml: nested deeper than 1 levels")


# ---------------------------------------------------------------------------- cluster.json
CORRUPT_STATES: dict[str, tuple[bytes, str]] = {
    "empty-object": (b"{}", "missing key 'store'"),
    "bad-utf8": (b"\x80", "not UTF-8"),
    "not-an-object": (b"[]", "expected a JSON object"),
    "not-json": (b"{store", "not JSON"),
    "store-not-string": (b'{"store": 1, "brokers": 3, "procs": {}}', "store must be a string"),
    "procs-not-object": (b'{"store": "", "brokers": 3, "procs": []}', "procs must be an object"),
    "pid-not-int": (b'{"store": "", "brokers": 3, "procs": {"broker-1": {"pid": "1"}}}', "pid must be"),
    "pid-bool": (b'{"store": "", "brokers": 3, "procs": {"b": {"pid": true, "port": 1, "role": "broker", '
                 b'"args": []}}}', "pid must be"),
    "deep": (b'{"store": ' + _nest(5000).encode() + b"}", "nested deeper than 64 levels"),
}
CLUSTER_COMMANDS = [("status",), ("down",), ("kill", "--broker", "1"), ("restart", "--broker", "1"),
                    ("produce", "x"), ("consume",), ("create-topic",), ("reassign", "--replicas", "1,2")]


@pytest.mark.parametrize("command", CLUSTER_COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("state", sorted(CORRUPT_STATES))
def test_corrupt_cluster_json_is_one_line(cli, tmp_path, assert_input_error, command, state):
    data, message = CORRUPT_STATES[state]
    d = tmp_path / "c"
    d.mkdir()
    (d / "cluster.json").write_bytes(data)
    assert_input_error(cli("cluster", *command, "--dir", str(d)), "cluster.json", message)


def test_a_fifo_as_cluster_json_is_refused(cli, tmp_path, assert_input_error):
    d = tmp_path / "c"
    d.mkdir()
    os.mkfifo(d / "cluster.json")
    assert_input_error(cli("cluster", "status", "--dir", str(d)), "FIFO")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated live process (started by the test, not by any cluster)."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _stale_state(d: Path, pid: int, **proc: object) -> None:
    d.mkdir(exist_ok=True)
    state = {"store": "embedded:127.0.0.1:1", "brokers": 1, "token": "0123abcd",
             "procs": {"broker-1": {"pid": pid, "port": 1, "role": "broker", "args": [], **proc}}}
    (d / "cluster.json").write_text(json.dumps(state))


def _alive(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is None


@pytest.mark.parametrize("variant", ["no-start-time", "wrong-start-time", "no-token"])
def test_cluster_down_leaves_an_unrelated_process_alive(cli, tmp_path, assert_input_error, sleeper, variant):
    started = start_time(sleeper.pid)
    assert started is not None
    recorded = {"no-start-time": {}, "wrong-start-time": {"start_time": started + 1},
                "no-token": {"start_time": started}}[variant]  # no-token: as if the PID were reused at once
    _stale_state(tmp_path / "c", sleeper.pid, **recorded)
    line = assert_input_error(cli("cluster", "down", "--dir", str(tmp_path / "c")),
                              f"refusing to kill pid {sleeper.pid} (broker-1)")
    assert _alive(sleeper), line
    assert_input_error(cli("cluster", "kill", "--broker", "1", "--dir", str(tmp_path / "c")), "not running")
    assert _alive(sleeper)


def _wait_for_environment(pid: int) -> None:
    """Until the kernel shows the new program's environment: Popen returns (vfork) before exec has
    set it up, and for that instant /proc/PID/environ reads empty. A readiness wait, bounded by
    the count of polls, not a measurement."""
    for _ in range(10_000):
        if Path(f"/proc/{pid}/environ").read_bytes():
            return
        time.sleep(0.001)
    raise AssertionError(f"pid {pid} never showed an environment")


def test_cluster_down_still_kills_a_process_it_can_prove_it_started(cli, tmp_path):
    """The control: the same process, started with the cluster's token in its environment and its
    start time recorded, is one the cluster started, and `down` stops it."""
    proc = subprocess.Popen(["sleep", "60"], env=dict(os.environ, **{TOKEN_ENV: "0123abcd"}))
    try:
        started = start_time(proc.pid)
        _wait_for_environment(proc.pid)
        _stale_state(tmp_path / "c", proc.pid, start_time=started)
        r = cli("cluster", "down", "--dir", str(tmp_path / "c"))
        assert r.exit_code == 0, r.output
        assert start_time(proc.pid) != started  # gone (the launcher reaped its zombie: the test cannot)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
