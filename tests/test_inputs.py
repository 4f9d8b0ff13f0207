"""specs/inputs.py, the bounded reader every input goes through: regular files only, a size cap read
by a bounded loop (never from st_size), and nesting capped before the parsers recurse."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from isrcheck.impl.process.cluster import LocalCluster
from isrcheck.impl.process.cluster_state import ClusterStateError, read_state, validate_state
from isrcheck.specs.inputs import (InputError, Kind, NestingError, check_json_depth, json_depth, loads_toml,
                                   max_bytes, read_bytes, read_head, read_text, value_depth)


@pytest.mark.parametrize("text, depth", [
    ("1", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4),
    ('["[[[[", "]]"]', 1),              # brackets inside strings do not count
    ('["\\"[[[", "{"]', 1),             # nor after an escaped quote
    ("[" * 70 + "]" * 70, 70),
])
def test_json_depth_counts_brackets_outside_strings(text, depth):
    assert json_depth(text) == depth
    if depth <= 64:
        assert json_depth(text) == value_depth(json.loads(text))


def test_check_json_depth_names_the_source_and_the_cap():
    check_json_depth("[" * 64 + "]" * 64, "t.jsonl")
    with pytest.raises(NestingError, match=r"^t\.jsonl: nested deeper than 64 levels$"):
        check_json_depth("[" * 65 + "]" * 65, "t.jsonl")


def test_value_depth_is_iterative():
    v: list = []
    for _ in range(5000):  # far past the recursion limit: a recursive walk would raise
        v = [v]
    assert value_depth(v) == 5001


def test_loads_toml_catches_the_parsers_recursion_and_measures_the_value():
    with pytest.raises(NestingError, match="x.toml: nested deeper than 64 levels"):
        loads_toml("a = " + "[" * 1000 + "]" * 1000, "x.toml")       # tomllib would recurse out
    with pytest.raises(NestingError):
        loads_toml("a = " + "[" * 65 + "]" * 65, "x.toml")          # parses; refused by its depth
    with pytest.raises(InputError, match="x.toml: not valid TOML"):
        loads_toml("a = = 1", "x.toml")
    assert loads_toml("a = " + "[" * 63 + "]" * 63, "x.toml")["a"] is not None


def test_exactly_the_cap_is_read_and_one_byte_more_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("ISRCHECK_MAX_CONFIG_BYTES", "10")
    p = tmp_path / "c.toml"
    p.write_bytes(b"a = 12345\n")
    assert read_bytes(p, Kind.CONFIG) == b"a = 12345\n"
    p.write_bytes(b"a = 123456\n")
    with pytest.raises(InputError, match=r"c\.toml: larger than 10 bytes.*ISRCHECK_MAX_CONFIG_BYTES"):
        read_bytes(p, Kind.CONFIG)


def test_the_size_is_never_taken_from_st_size(monkeypatch):
    """/proc files are regular files whose st_size is 0: the bounded read still finds them too large."""
    path = Path(f"/proc/{os.getpid()}/maps")
    assert path.stat().st_size == 0
    monkeypatch.setenv("ISRCHECK_MAX_TRACE_BYTES", "16")
    with pytest.raises(InputError, match="larger than 16 bytes"):
        read_bytes(path, Kind.TRACE)


def test_a_fifo_is_refused_and_read_head_does_not_block(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)  # nobody writes: any blocking open would hang here
    for read in (lambda: read_bytes(p, Kind.CONFIG), lambda: read_head(p, Kind.EVENT_LOG, 100)):
        with pytest.raises(InputError, match="FIFO"):
            read()


def test_read_head_reads_at_most_the_head(tmp_path):
    p = tmp_path / "big.jsonl"
    p.write_bytes(b"x" * 5000)
    assert read_head(p, Kind.EVENT_LOG, 100) == b"x" * 100


def test_read_text_refuses_bad_utf8_and_missing_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"a = \x80")
    with pytest.raises(InputError, match="bad: cannot read: not UTF-8 text"):
        read_text(tmp_path / "bad", Kind.SCENARIO)
    with pytest.raises(InputError, match="nope: no such file"):
        read_text(tmp_path / "nope", Kind.SCENARIO)


@pytest.mark.parametrize("value, expected", [("4096", 4096), ("2K", 2048), ("3m", 3 << 20), ("1GiB", 1 << 30),
                                             (" 5 MB ", 5 << 20)])
def test_size_variables_take_units(monkeypatch, value, expected):
    monkeypatch.setenv(Kind.TRACE.env, value)
    assert Kind.TRACE.env == "ISRCHECK_MAX_TRACE_BYTES"
    assert max_bytes(Kind.TRACE) == expected


def test_every_kind_has_a_generous_default():
    assert {k.key: k.default >> 20 for k in Kind} == {"config": 1, "scenario": 1, "trace": 64, "event_log": 256,
                                                     "manifest": 4, "cluster": 1, "pipeline": 16}


# ---------------------------------------------------------------------------- cluster.json
def test_a_saved_cluster_state_reads_back_with_its_token(tmp_path):
    c = LocalCluster(tmp_path, brokers=2)
    c.procs["broker-1"] = {"pid": 4242, "port": 9000, "role": "broker", "args": ["x"], "start_time": 17}
    c.save()
    back = LocalCluster.load(tmp_path)
    assert back.token == c.token and len(c.token) == 32
    assert back.procs == c.procs and back.nbrokers == 2


def test_cluster_state_allows_unknown_keys_and_checks_known_ones(tmp_path):
    good = {"store": "", "brokers": 1, "procs": {}, "secret_file": "x"}  # more may be recorded by others
    assert validate_state(good, "s") is good
    for bad, message in [({**good, "controllers": 0}, "controllers"), ({**good, "session_timeout": "2"},
                                                                       "session_timeout"),
                         ({**good, "record_ids": {"0": "1"}}, "record_ids"), ({**good, "event_log": 3}, "event_log"),
                         ({**good, "procs": {"b": {"pid": 1, "port": 70000, "role": "", "args": []}}}, "port")]:
        with pytest.raises(ClusterStateError, match=message):
            validate_state(bad, "s")
    with pytest.raises(FileNotFoundError):
        read_state(tmp_path / "missing.json")
