"""Kafka's bug history (specs/history.toml, model/history.py, specs/12-history.md).

Each reproduced bug has a manifest pair: with ``reintroduce = [id]`` the checker finds the bug's
property broken, with the pinned shortest length; the same bounds without it pass with the pinned
count. The tests run both sides (the large set's pairs under the ``slow`` mark), check that the
data, the mixins and the manifest agree, and that a bad ``reintroduce`` is one ``error:`` line.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from isrcheck.analyses.history import render_history
from isrcheck.engine.checker import Checker
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants import liveness as live
from isrcheck.invariants import property_names
from isrcheck.invariants.variants import load_variant
from isrcheck.model.config import ConfigError, from_mapping
from isrcheck.model.history import MIXINS, configured_protocol
from isrcheck.model.protocol import Protocol
from isrcheck.specs.history import CLASSIFICATIONS, load_history, reproduced

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "specs" / "12-history.md"

#: the bugs issue 29 lists (KAFKA-7164 is revisited besides them)
ISSUE_BUGS = {
    "KAFKA-532", "KAFKA-1096", "KAFKA-4447", "KAFKA-1188", "KAFKA-4443", "KAFKA-5310", "KAFKA-3143", "KAFKA-3085",
    "KAFKA-1382", "KAFKA-708", "KAFKA-4485", "KAFKA-7152", "KAFKA-12686", "KAFKA-13091", "KAFKA-14144",
    "KAFKA-14139", "KAFKA-858", "KAFKA-2143", "KAFKA-9491", "KAFKA-10706", "KAFKA-10432", "KAFKA-14704",
    "KAFKA-15583", "KAFKA-1097", "KAFKA-1170", "KAFKA-6193", "KAFKA-9212", "KAFKA-9672", "KAFKA-15665",
}


# ---------------------------------------------------------------------------- the data
def test_every_bug_of_the_issue_is_classified() -> None:
    ids = {b.id for b in load_history()}
    assert ISSUE_BUGS <= ids
    assert all(b.classification in CLASSIFICATIONS for b in load_history())


def test_the_reproduced_bugs_are_exactly_those_with_a_pre_fix_rule() -> None:
    assert sorted(b.id for b in reproduced()) == sorted(MIXINS)


def _pair(bug_id: str) -> tuple[Any, Any]:
    b = next(x for x in load_history() if x.id == bug_id)
    assert b.models is not None
    return manifest.get(b.models[0]), manifest.get(b.models[1])


@pytest.mark.parametrize("bug_id", sorted(b.id for b in reproduced()))
def test_a_pair_differs_only_by_the_bug(bug_id: str) -> None:
    with_, without = _pair(bug_id)
    b = next(x for x in load_history() if x.id == bug_id)
    assert with_.config.reintroduce == (bug_id,) and without.config.reintroduce == ()
    assert dict(with_.raw_config, reintroduce=[]) == dict(without.raw_config, reintroduce=[])
    assert (with_.gate, with_.variant, with_.symmetry) == (without.gate, without.variant, without.symmetry)
    assert without.expect == "success" and without.states is not None
    if with_.expect == "safety_failure":
        assert with_.property == b.property
    else:  # a liveness bug: the with-model's pinned lasso breaks the property, which holds without it
        broken = [x for x in with_.liveness if not x.holds]
        assert [x.property for x in broken] == [b.property]
        assert any(x.property == b.property and x.holds for x in without.liveness)
    assert b.property in property_names() + list(live.LIVENESS_NAMES) + [
        p.name for p in configured_protocol(with_.config, _protocol(with_)).extra_properties()]


def _protocol(e: Any) -> Protocol | None:
    return load_variant(e.target().variant)(e.config) if e.variant else None


def _outcome(e: Any) -> list[str]:
    """What checking entry ``e`` finds, compared with its pins (empty: as pinned)."""
    protocol = _protocol(e)
    model = build_model(e.config, protocol=protocol, symmetry=e.symmetry,
                        properties=list(e.properties) if e.properties else None)
    found = manifest.compare(e, Checker(model).run())
    if e.liveness:
        found += manifest.compare_liveness(e, live.check(e.config, [x.property for x in e.liveness],
                                                         protocol=protocol))
    return found


def _bug_params() -> list[Any]:
    out = []
    for b in reproduced():
        assert b.models is not None
        large = manifest.get(b.models[0]).gate == "all"
        out.append(pytest.param(b.id, id=b.id, marks=[pytest.mark.slow] if large else []))
    return out


@pytest.mark.parametrize("bug_id", _bug_params())
def test_the_bug_is_found_with_reintroduce_and_not_without(bug_id: str) -> None:
    with_, without = _pair(bug_id)
    assert _outcome(with_) == []
    assert _outcome(without) == []


# ---------------------------------------------------------------------------- the key
def test_reintroduce_puts_the_mixin_in_front_and_nothing_without_it() -> None:
    cfg = from_mapping({"brokers": 1, "replication_factor": 1, "unclean_leader_election": True,
                        "reintroduce": ["KAFKA-708"]})
    p = configured_protocol(cfg)
    assert isinstance(p, MIXINS["KAFKA-708"]) and type(p).__mro__[1] is MIXINS["KAFKA-708"]
    plain = from_mapping({"brokers": 1, "replication_factor": 1})
    assert type(configured_protocol(plain)) is Protocol
    assert configured_protocol(cfg, p) is p


@pytest.mark.parametrize("raw, message", [
    ({"reintroduce": ["KAFKA-1"]}, "reintroduce: unknown bug 'KAFKA-1'"),
    ({"reintroduce": "KAFKA-708"}, "reintroduce must be a list of bug ids"),
    ({"reintroduce": ["KAFKA-708", "KAFKA-708"]}, "KAFKA-708 is listed twice"),
    ({"reintroduce": ["KAFKA-7152"]}, "KAFKA-7152 is not reproduced by the model"),
    ({"reintroduce": ["KAFKA-1188"], "generation": "kip-320"},
     "KAFKA-1188 needs leader_epochs = false, which this configuration does not have"),
    ({"reintroduce": ["KAFKA-7164"], "generation": "kip-279"},
     "KAFKA-7164 needs reconcile_on_epoch_change = true"),
], ids=["unknown", "not-a-list", "twice", "not-reproduced", "no-mechanism-1188", "no-mechanism-7164"])
def test_a_bad_reintroduce_is_one_config_error(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        from_mapping(raw)


@pytest.mark.parametrize("value", ['["KAFKA-99999"]', '["KAFKA-1188"]'], ids=["unknown", "mechanism-missing"])
def test_the_command_line_says_one_error_line_and_exits_2(value: str) -> None:
    out = subprocess.run([sys.executable, "-m", "isrcheck", "check", "replication-kip-320", "--set",
                          f"reintroduce={value}"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2
    lines = [x for x in out.stderr.splitlines() if not x.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "reintroduce" in lines[0]
    assert out.stdout == ""


def test_set_reintroduce_finds_the_bug_on_the_command_line() -> None:
    """The issue's command: the fixed model with ``--set 'reintroduce=[...]'`` breaks the property."""
    out = subprocess.run([sys.executable, "-m", "isrcheck", "check", "history-kafka-708-fixed", "--set",
                          'reintroduce=["KAFKA-708"]'], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert "LeaderInIsr broken after 2 steps" in out.stdout


# ---------------------------------------------------------------------------- the page
def test_the_history_page_is_what_a_fresh_run_generates() -> None:
    assert PAGE.read_text(encoding="utf-8") == render_history(), (
        "specs/12-history.md is stale: run `isrcheck history --write specs/12-history.md` (or `make history`)")


def _raw(bug_id: str) -> dict[str, Any]:
    """The bug's table as specs/history.toml holds it (a copy, to break)."""
    from isrcheck.specs import load

    return dict(next(b for b in load("history.toml")["bug"] if b["id"] == bug_id))


@pytest.mark.parametrize("change, message", [
    ({"impl_lacks": "anything"}, "exactly one of impl"),  # both keys
    ({"impl": None}, "exactly one of impl"),  # neither
    ({"impl": ""}, "impl must be a non-empty string"),
])
def test_a_reproduced_bug_says_whether_the_implementation_puts_it_back(change: dict[str, Any], message: str) -> None:
    from isrcheck.specs.history import HistoryError, _parse

    raw = {**_raw("KAFKA-708"), **change}
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(HistoryError, match=message):
        _parse(raw, 0)


def test_only_a_reproduced_bug_has_an_implementation_side() -> None:
    from isrcheck.specs.history import HistoryError, _parse

    with pytest.raises(HistoryError, match="impl and impl_lacks belong to a reproduced bug only"):
        _parse({**_raw("KAFKA-532"), "impl_lacks": "controller epochs"}, 0)


def test_every_switch_the_history_names_is_in_the_implementation() -> None:
    """An ``impl`` entry names the file and the function of its switch, and that switch reads the bug's id."""
    from isrcheck.specs.history import in_impl

    assert {b.id for b in in_impl()} == {"KAFKA-708", "KAFKA-1097", "KAFKA-1188", "KAFKA-10432", "KAFKA-7164",
                                              "KAFKA-10706"}
    for b in in_impl():
        path = next(w.strip("(),") for w in (b.impl or "").split() if w.strip("(),").startswith("impl/"))
        assert (ROOT / path).is_file(), (b.id, path)
        assert f'reintroduces("{b.id}")' in "".join(p.read_text() for p in (ROOT / "impl").rglob("*.py")), b.id
