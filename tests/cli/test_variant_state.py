"""A variant's own state, seen through every renderer: a test variant adds two partition fields (how
many leaders were elected, and the last one, a broker id) and they must show under their names in
the trace table, ``check -v``, ``check --json``, JSON-lines and ITF trace files, ``traces show`` and
``report``; a trace file keeps them, is replayed only with its variant, and a tampered value is
refused in one line. (Fingerprint, codec and symmetry of the same fields: tests/model/test_extension.py.)
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest


VARIANT = textwrap.dedent('''
    """Counts the partition's elections and remembers the last leader elected."""
    from isrcheck.model.extension import Field, Kind, Scope
    from isrcheck.model.protocol import Protocol
    from isrcheck.model.state import NO_LEADER


    class Counted(Protocol):
        """Every election is counted in ZooKeeper (up to 3) with the leader it chose."""

        fields = (Field("elections", Scope.PARTITION, Kind.INT),
                  Field("last_leader", Scope.PARTITION, Kind.BROKER))

        def select(self, selector, inp):
            e = super().select(selector, inp)
            ext = self.extension
            n = min(ext.get(Scope.PARTITION, inp.fields, "elections") + 1, 3)
            fields = ext.with_value(Scope.PARTITION, inp.fields, "elections", n)
            fields = ext.with_value(Scope.PARTITION, fields, "last_leader", 0 if e.leader == NO_LEADER else e.leader)
            return e._replace(fields=fields)
''')

#: hw-truncation-one-crash's bounds: a leader crash and a failover lose a write (elections >= 1)
CONFIG = "brokers = 3\nreplication_factor = 3\nmax_records = 2\n\n[faults]\ncrashes = 1\n"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "counted.py").write_text(VARIANT)
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG)
    return cfg, f"{tmp_path / 'counted.py'}:Counted"


def _last_partition(doc: dict) -> dict:
    return doc["violations"][0]["trace"][-1]["state"]["zk"]["partitions"][0]


def test_the_fields_show_in_the_table_and_in_verbose(cli, setup) -> None:
    cfg, variant = setup
    r = cli("check", "--config", str(cfg), "--variant", variant, "-v")
    assert r.exit_code == 1, r.stdout
    header = next(line for line in r.stdout.splitlines() if " action " in line)
    assert "elections" in header and "last_leader" in header  # columns of the trace table
    assert "zk.elections=0" in r.stdout and "zk.last_leader=none" in r.stdout  # the initial state, in full
    assert "zk.elections" in r.stdout.split("Every change, step by step", 1)[1]  # a step that changed it


def test_the_fields_show_in_check_json_by_name(cli, setup) -> None:
    cfg, variant = setup
    code, doc = cli.json("check", "--config", str(cfg), "--variant", variant, "--json")
    assert code == 1
    first = doc["violations"][0]["trace"][0]["state"]["zk"]["partitions"][0]
    assert first["variant"] == {"elections": 0, "last_leader": None}
    last = _last_partition(doc)
    assert last["variant"]["elections"] >= 1 and last["variant"]["last_leader"] == last["leader"]
    # the model's own run has no variant key anywhere
    code, plain = cli.json("check", "--config", str(cfg), "--json")
    assert "variant" not in _last_partition(plain)


@pytest.mark.parametrize("name", ["cx.jsonl", "cx.itf.json"])
def test_a_trace_file_keeps_the_fields_and_replays_only_with_its_variant(cli, setup, tmp_path, name,
                                                                          assert_input_error) -> None:
    cfg, variant = setup
    out = tmp_path / name
    # traces export takes a manifest name: write the file from check's counterexample through the kit
    from isrcheck.conformance.traces import trace_from_steps, write_trace
    from isrcheck.engine.checker import Checker
    from isrcheck.invariants import build_model
    from isrcheck.invariants.variants import load_variant
    from isrcheck.model.config import load

    config = load(cfg)
    protocol = load_variant(variant)(config)
    v = Checker(build_model(config, protocol=protocol)).run().violations[0]
    write_trace(trace_from_steps(v.trace, config, kind="counterexample", property=v.property, protocol=protocol), out)
    text = out.read_text()
    assert '"elections"' in text and '"last_leader"' in text and ':Counted"' in text
    if name.endswith(".itf.json"):
        itf = json.loads(text)
        assert itf["vars"][-1] == "variant" and "variant" in itf["states"][0]
    # replayed with its variant: shown, the fields by name in -v
    r = cli("traces", "show", str(out), "--variant", variant, "-v")
    assert r.exit_code == 0, r.stderr
    assert "zk.last_leader" in r.stdout
    # without it: one line naming the variant to give
    assert_input_error(cli("traces", "show", str(out)), "written with the variant", "Counted")
    # a value the variant would not have written: refused, naming the step
    tampered = out.with_name("tampered-" + name)
    tampered.write_text(text.replace('"elections":1', '"elections":2')
                        .replace('"elections":{"#bigint":"1"}', '"elections":{"#bigint":"2"}'), encoding="utf-8")
    assert tampered.read_text() != text
    assert_input_error(cli("traces", "show", str(tampered), "--variant", variant), "variant fields", "differ")


def test_the_report_shows_the_fields_and_the_variant(cli, setup, tmp_path) -> None:
    cfg, variant = setup
    out = tmp_path / "r.html"
    r = cli("report", "--config", str(cfg), "--variant", variant, "--out", str(out))
    assert r.exit_code in (0, 1), r.stderr
    page = out.read_text()
    assert "<th>elections</th>" in page and "<th>last_leader</th>" in page
    assert 'id="variant"' in page and "Every election is counted" in page  # its docstring
    assert "class Counted(Protocol)" in page  # and its source


BAD_ACTIONS = textwrap.dedent('''
    from isrcheck.model.protocol import Protocol, VariantAction


    class Clash(Protocol):
        actions = (VariantAction("Produce", ("partition",)),)


    class Lowercase(Protocol):
        actions = (VariantAction("lower case", ("partition",)),)
''')


@pytest.mark.parametrize(("attr", "fragment"), [("Clash", "has the name of one of the model's"),
                                                ("Lowercase", "CamelCase")])
def test_a_malformed_action_is_the_variants_error_in_one_line(cli, setup, tmp_path, assert_input_error, attr,
                                                               fragment) -> None:
    cfg, _ = setup
    (tmp_path / "bad_actions.py").write_text(BAD_ACTIONS)
    r = cli("check", "--config", str(cfg), "--variant", f"{tmp_path / 'bad_actions.py'}:{attr}")
    line = assert_input_error(r, fragment)
    assert line.startswith(f"error: variant {tmp_path / 'bad_actions.py'}:{attr}: ")  # not "raised in __init__"


# ---------------------------------------------------------------------------- the manifest's variants
VARIANT_ENTRIES = ["elr-isr-only", "elr", "elr-high-watermark", "quorum-high-watermark", "quorum-high-watermark-leader"]


def test_the_gate_checks_each_pinned_design_with_the_variant_its_entry_names(cli) -> None:
    code, doc = cli.json("gate", *VARIANT_ENTRIES, "--json")
    assert code == 0, [m["mismatches"] for m in doc["models"]]
    found = {m["model"]: m["found"] for m in doc["models"]}
    # the same bounds: the ISR-only design loses a write, the ELR design holds (its own property too)
    assert found["elr-isr-only"]["property"] == "NoCommittedWriteLost" and found["elr"]["outcome"] == "success"
    assert found["elr-high-watermark"]["property"] == "EligibleReplicasComplete"
    code, listed = cli.json("list", "--json")
    named = {m["name"]: m["variant"] for m in listed["models"]}
    assert named["elr"].endswith("eligible_leader_replicas.py:EligibleLeaderReplicas") and named["elr-isr-only"] is None


def test_check_by_name_uses_the_entrys_variant_and_z3_refuses_it(cli, assert_input_error) -> None:
    code, doc = cli.json("check", "elr", "--json")
    assert code == 0 and doc["model"].startswith("elr [examples/variants/eligible_leader_replicas.py:")
    code, doc = cli.json("check", "elr-high-watermark", "--json")  # a pinned failure: exit 0, as the gate
    assert (code, doc["outcome"], doc["safety_outcome"]) == (0, "as_pinned", "safety_failure")
    assert doc["violations"][0]["trace"][-1]["state"]["zk"]["partitions"][0]["variant"]["elr"] == [1]
    assert_input_error(cli("bmc", "elr"), "checked with a variant")
