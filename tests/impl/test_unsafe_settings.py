"""The warning at cluster start about settings the model shows unsafe (impl/process/unsafe_settings.py).

The findings are derived from specs/models.toml, so these tests pin what the shipped manifest says
(the seeds' generation loses acknowledged writes, kip-320 with its defaults does not) and, on a
manifest of their own, the derivation itself.
"""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from isrcheck.impl.core.config import ConfigError, from_mapping
from isrcheck.impl.process.unsafe_settings import SETTINGS, entries, findings, nearest_failure, settings_of, warning_lines
from isrcheck.specs import load


def test_the_seeds_settings_warn_with_the_manifest_model_that_loses_writes():
    cfg = from_mapping({})  # generation high-watermark, min_insync_replicas 1: the implementation's defaults
    names = [f.model for f in findings(cfg) if f.property == "NoCommittedWriteLost"]
    assert names[0] == "hw-truncation-one-crash" and "failover-misses-crash" in names
    lines = warning_lines(cfg)
    assert lines[0].startswith("warning: the model shows this cluster's settings unsafe (generation=high-watermark")
    assert all(line.startswith("warning: ") for line in lines)
    assert ("it loses acknowledged writes (NoCommittedWriteLost): manifest model hw-truncation-one-crash, "
            "see `isrcheck check hw-truncation-one-crash` (8 steps") in lines[1]
    assert "generation=kip-320 and the same other settings find no violation" in lines[-1]


def test_kip_320_with_its_defaults_gives_no_warning_and_unclean_election_does():
    cfg = from_mapping({"generation": "kip-320"})
    assert findings(cfg) == () and warning_lines(cfg) == []
    assert any(e.settings == tuple(settings_of(cfg).items()) for e in entries())  # checked, and passing
    unclean = from_mapping({"generation": "kip-320", "unclean_leader_election": True})
    assert [f.model for f in findings(unclean)] == ["unclean-election-kip-320"]
    assert "`isrcheck check unclean-election-kip-320`" in "\n".join(warning_lines(unclean))


def _configurable(raw: dict) -> bool:
    try:
        from_mapping(raw)
    except ConfigError:
        return False
    return True


def test_every_failing_manifest_model_is_found_for_its_own_settings():
    # a designer's variant's verdicts are another protocol's: unsafe_settings leaves them out, and the
    # models the implementation cannot configure (a bug it cannot put back, the model's growths)
    failing = [m for m in load("models.toml")["model"] if m["expect"] == "safety_failure" and "variant" not in m
               and _configurable(m["config"])]
    assert any(m["config"].get("reintroduce") for m in failing)  # history-kafka-708 and the others impl puts back
    assert failing
    for m in failing:
        found = findings(from_mapping(m["config"]))
        assert m["name"] in [f.model for f in found], m["name"]


MANIFEST = {"model": [
    {"name": "loses", "expect": "safety_failure", "property": "NoCommittedWriteLost", "length": 3,
     "config": {"brokers": 3, "replication_factor": 3, "min_insync_replicas": 2, "faults": {"crashes": 1}}},
    {"name": "diverges", "expect": "safety_failure", "property": "LogMatching", "length": 5,
     "config": {"brokers": 2, "min_insync_replicas": 2}},
    {"name": "passes", "expect": "success", "config": {"brokers": 3, "max_records": 1}},
    {"name": "unreadable", "expect": "safety_failure", "property": "X", "length": 1, "config": {"nope": 1}},
]}


def test_the_findings_are_derived_from_the_manifest_by_settings_not_by_shape():
    cfg = from_mapping({"brokers": 5, "replication_factor": 3, "min_insync_replicas": 2, "max_records": 9})
    assert [(f.model, f.property) for f in findings(cfg, MANIFEST)] == [("loses", "NoCommittedWriteLost"),
                                                                        ("diverges", "LogMatching")]
    lines = warning_lines(cfg, MANIFEST)
    assert len(lines) == 3 and "manifest model loses" in lines[1] and "it breaks LogMatching" in lines[2]
    assert "min_insync_replicas=2" in lines[0]
    assert warning_lines(from_mapping({}), MANIFEST) == []  # a passing model has exactly these settings
    assert set(SETTINGS) >= {"generation", "min_insync_replicas", "unclean_leader_election", "acks"}


def test_settings_no_model_has_get_the_command_that_checks_the_nearest_failing_model():
    cfg = from_mapping({"min_insync_replicas": 2, "acks": "1", "brokers": 3})
    assert findings(cfg, MANIFEST) == ()
    near = nearest_failure(cfg, MANIFEST)
    assert near is not None and near[0].name == "loses" and near[1] == {"acks": "1"}
    (line,) = warning_lines(cfg, MANIFEST)
    assert "so the model has not checked them" in line
    assert line.endswith("`isrcheck check loses --set 'acks=\"1\"'`")


def test_the_suggested_command_runs_the_model_with_the_clusters_settings():
    from isrcheck.cli import main

    (line,) = warning_lines(from_mapping({"min_insync_replicas": 2}))
    command = line.rsplit("`isrcheck ", 1)[1].rstrip("`")
    assert command == "check hw-truncation-one-crash --set min_insync_replicas=2"
    r = CliRunner().invoke(main, shlex.split(command), catch_exceptions=False)
    assert r.exit_code == 1 and "NoCommittedWriteLost violated" in r.output  # the model finds the loss there too


@pytest.mark.cluster
def test_cluster_up_prints_the_warning_and_every_process_logs_it(tmp_path):
    from isrcheck.commands.cluster import cluster

    d = tmp_path / "c"
    runner = CliRunner()
    try:
        r = runner.invoke(cluster, ["up", "--brokers", "1", "--controllers", "1", "--dir", str(d)],
                          catch_exceptions=False)
        assert r.exit_code == 0, r.output
        assert "`isrcheck check hw-truncation-one-crash`" in r.stderr and "cluster up in" in r.stdout
        assert "warning" not in r.stdout
        for name in ("broker-1", "controller-1"):
            log = (Path(d) / f"{name}.log").read_text()
            assert "warning: the model shows this cluster's settings unsafe" in log, name
    finally:
        runner.invoke(cluster, ["down", "--dir", str(d)])
