"""The designer API (`--variant MODULE:ATTR`) and `isrcheck diff A B`."""
from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

from isrcheck.analyses import diff as D
from isrcheck.model import config
from isrcheck.model.config import from_mapping
from isrcheck.invariants.variants import load_variant

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "variants" / "eager_election.py"
SHRINK = ["--set", "brokers=3", "--set", "replication_factor=2", "--set", "max_records=2",
          "--set", "faults.crashes=1", "--set", "faults.isr_shrinks=1"]


def test_readme_variant_elects_outside_the_isr_and_is_caught(cli, small_config):
    # the standard protocol keeps every property on these bounds ...
    code, doc = cli.json("check", "--config", str(small_config), *SHRINK, "--json")
    assert code == 0 and doc["outcome"] == "success"
    # ... the README's variant (an offline election may pick a replica outside the ISR) does not
    code, doc = cli.json("check", "--config", str(small_config), *SHRINK,
                         "--variant", f"{EXAMPLE}:EagerElection", "--json")
    assert code == 1 and doc["outcome"] == "safety_failure"
    v = doc["violations"][0]
    assert v["property"] == "NoCommittedWriteLost"
    names = [s["action"]["name"] for s in v["trace"][1:]]
    assert "Crash" in names and "ProcessBrokerChange" in names


def test_a_variant_written_in_a_user_module_loads_by_module_name(cli, small_config, tmp_path, monkeypatch):
    (tmp_path / "my_variants.py").write_text(textwrap.dedent('''
        from isrcheck.model.protocol import Protocol
        from isrcheck.model.selectors import Election, Selector

        class AnyLive(Protocol):
            def select(self, selector, inp):
                if selector is Selector.OFFLINE_PARTITION:
                    live = [r for r in inp.assignment if inp.live >> r & 1]
                    if live:
                        return Election(live[-1], 1 << live[-1], tuple(live), unclean=True)
                return super().select(selector, inp)
    '''))
    monkeypatch.chdir(tmp_path)
    code, doc = cli.json("check", "--config", str(small_config), *SHRINK, "--variant", "my_variants:AnyLive", "--json")
    assert code == 1 and doc["violations"][0]["property"] == "NoCommittedWriteLost"


def test_a_variant_can_add_a_property(cli):
    result = cli("check", "reassignment", "--variant", f"{EXAMPLE}:EpochBudget")
    assert result.exit_code == 1
    assert "LeaderEpochBelowThree" in result.stdout


def test_bad_variants_are_one_line_errors(cli, assert_input_error, tmp_path):
    assert_input_error(cli("check", "replication", "--variant", "no-colon"), "MODULE:ATTR")
    assert_input_error(cli("check", "replication", "--variant", "surely_no_such_module_xyz:A"), "cannot import")
    assert_input_error(cli("check", "replication", "--variant", f"{EXAMPLE}:Nope"), "no attribute 'Nope'")
    (tmp_path / "notproto.py").write_text("class X:\n    pass\nY = 3\n")
    assert_input_error(cli("check", "replication", "--variant", f"{tmp_path / 'notproto.py'}:X"), "not a subclass")
    assert_input_error(cli("check", "replication", "--variant", f"{tmp_path / 'notproto.py'}:Y"), "neither")


def test_diff_names_the_property_kip101_fixes_with_a_witness(cli):
    code, doc = cli.json("diff", "high-watermark", "kip-101", "--model", "hw-truncation-one-crash", "--json")
    assert code == 1
    changed = {c["property"]: c for c in doc["verdict_changes"]}
    assert "NoCommittedWriteLost" in changed
    c = changed["NoCommittedWriteLost"]
    assert c["broken_in"] == "high-watermark"
    assert c["violation"]["length"] == 8
    assert doc["outcomes"] == {"high-watermark": "safety_failure", "kip-101": "success"}
    assert doc["only_in"]["high-watermark"]["count"] > 0 and doc["only_in"]["high-watermark"]["witnesses"]


def test_diff_exit_status_is_documented_and_kept(cli):
    """diff's help states its exit status; a diff where nothing changes verdict exits 0 (the one
    that does, above, exits 1)."""
    help_text = cli("diff", "--help").output
    assert "Exit status: 0 every property has the same verdict" in " ".join(help_text.split())
    same = cli("diff", "kip-320", "kip-320", "--model", "replication")
    assert same.exit_code == 0, same.output
    assert "every property has the same verdict on both sides" in same.output


def test_diff_of_a_generation_with_itself_finds_nothing():
    base = from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 1}})
    r = D.diff(D.resolve_side("kip-320", base), D.resolve_side("kip-320", base))
    assert r.changes == [] and r.count_only_a == 0 and r.count_only_b == 0


def test_diff_witness_reaches_a_behaviour_the_other_side_never_does():
    base = from_mapping({"brokers": 3, "replication_factor": 3, "max_records": 2, "faults": {"crashes": 1}})
    r = D.diff(D.resolve_side("high-watermark", base), D.resolve_side("kip-101", base))
    depth, trace = r.only_a[0]
    assert len(trace) - 1 == depth
    assert D.behaviour(trace[-1].state) not in r.b.first
    assert D.behaviour(trace[-1].state) in r.a.first


def test_diff_refuses_different_bounds(cli, assert_input_error, small_config, crash_config):
    assert_input_error(cli("diff", str(small_config), str(crash_config)), "same bounds")


def _another(value):
    """A value of the same type that differs from ``value`` (for a key whose bounds diff compares)."""
    others = {"periodic": "every-change", "all": "1", "shared": "per-controller", "high-watermark": "kip-320",
              "zookeeper": "alter-isr"}
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return others[str(value)]
    if dataclasses.is_dataclass(value):  # a sub-table: change its first count
        first = next(f.name for f in dataclasses.fields(value) if isinstance(getattr(value, f.name), int))
        return dataclasses.replace(value, **{first: _another(getattr(value, first))})
    return (*value, value[0] if value else "Restart(1)")


def test_diff_compares_every_key_the_metadata_marks_as_protocol():
    """diff keeps no list of its own: two sides may differ in exactly the keys that model/config.py's
    metadata marks as protocol keys, so marking a new key there is all diff needs."""
    assert D.PROTOCOL_KEYS == config.PROTOCOL_KEYS
    base = from_mapping({"brokers": 3, "max_records": 2})
    for f in dataclasses.fields(config.Config):
        other = dataclasses.replace(base, **{f.name: _another(getattr(base, f.name))})
        assert other != base, f.name
        same_bounds = D.bounds(other) == D.bounds(base)
        assert same_bounds == config.key_info(f).protocol, f.name


def test_diff_header_shows_the_shared_configuration(cli):
    out = cli("diff", "kip-101", "kip-279", "--max-states", "50").stdout.splitlines()[0]
    assert out.startswith("diff kip-101 vs kip-279  brokers=") and "generation" not in out


def test_load_variant_returns_a_factory_for_functions(tmp_path):
    f = tmp_path / "factory.py"
    f.write_text("from isrcheck.model.protocol import Protocol\n"
                 "def make(cfg):\n    return Protocol(cfg)\n")
    factory = load_variant(f"{f}:make")
    cfg = from_mapping({"brokers": 2, "replication_factor": 2})
    assert factory(cfg).config is cfg
