"""The designer's API: every protocol decision is a hook the model calls, on the installed build.

A variant that changes a decision must change what the checker finds, compiled or not: the false
SUCCESS of a variant that patched a module function the compiled model never calls is what these
tests guard against. Each hook is called by the steps the README's table names; overriding one
changes the verdict; patching a module instead is refused.
"""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from isrcheck import native
from isrcheck.inputs import manifest
from isrcheck.engine.checker import Checker
from isrcheck.invariants import build_model
from isrcheck.invariants.variants import VariantError, load_variant
from isrcheck.model.config import from_mapping
from isrcheck.model.protocol import IsrChange, Protocol, Removal, Stop

ROOT = Path(__file__).resolve().parents[2]

#: Protocol's public methods that are not decisions: helpers a variant calls
HELPERS = {"field", "with_field", "generation"}


def hook_names() -> list[str]:
    return sorted(n for n, v in inspect.getmembers(Protocol) if not n.startswith("_") and callable(v)
                  and n not in HELPERS)


def recording(calls: Counter[str]) -> type[Protocol]:
    """A Protocol subclass that counts every hook call and otherwise decides as the model does."""

    def wrap(name: str) -> Any:
        base = getattr(Protocol, name)

        def hook(self: Protocol, *args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return base(self, *args, **kwargs)

        return hook

    return type("Recording", (Protocol,), {n: wrap(n) for n in hook_names()})


#: small configurations that, together, take every step of the model
CONFIGS = [
    {"brokers": 3, "replication_factor": 2, "max_records": 2, "faults": {"crashes": 1, "isr_shrinks": 1}},
    {"brokers": 3, "replication_factor": 3, "max_records": 1, "generation": "kip-320", "faults": {"crashes": 1},
     "operations": {"controlled_shutdowns": 1}},
    {"brokers": 2, "replication_factor": 2, "max_records": 1, "faults": {"lossy_crashes": 1, "undetected_restarts": 1,
                                                                          "crashes": 1}},
    {"brokers": 3, "replication_factor": 2, "max_records": 1,
     "operations": {"reassignments": [{"partition": 0, "target": [2, 3]}], "topic_deletions": 1,
                    "topic_creation": True}},
    # a failover (with a dead broker to take offline) and a deposed controller that resigns
    {"brokers": 2, "replication_factor": 2, "max_records": 0, "failover_offline_replicas": True,
     "faults": {"controller_failovers": 1, "crashes": 1}},
    # brokers with a metadata cache: the UpdateMetadata built from the controller's cached leadership
    {"brokers": 2, "replication_factor": 2, "max_records": 0, "metadata_cache": True,
     "faults": {"controller_failovers": 1, "crashes": 1}},
]


def test_every_hook_is_called_by_the_model() -> None:
    calls: Counter[str] = Counter()
    cls = recording(calls)
    for raw in CONFIGS:
        cfg = from_mapping(raw)
        model = build_model(cfg, protocol=cls(cfg), symmetry=False)
        Checker(model, max_states=20_000, stop_on_first=False).run()
    # the variant additions are asked for only when a variant declares them (see the test below)
    expected = set(hook_names()) - {"extra_enabled", "extra_apply"}
    assert sorted(expected - set(calls)) == []


def test_the_readme_table_names_every_hook() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("### Every decision is a hook"):readme.index("### State, actions and properties")]
    missing = [n for n in hook_names() if f"`{n}(" not in table]
    assert missing == []


# ---------------------------------------------------------------------------- a hook changes the verdict
class NoWrites(Protocol):
    """The leader takes no write: nothing is ever committed."""

    def accepts_produce(self, leader_replica: Any) -> bool:
        return False


class ForgetfulCrash(Protocol):
    """A crash loses the whole log."""

    def replica_after_stop(self, r: Any, kept: int, how: Stop) -> Any:
        return super().replica_after_stop(r, 0, how)


class KeepRemovedLeader(Protocol):
    """The controller's ISR removal leaves the removed leader in place (as leader and in the ISR)."""

    def isr_removal(self, w: Any, c: Any, p: int, removed: int, cause: Removal) -> IsrChange:
        zp = w.parts[p]
        return IsrChange(zp.leader, zp.isr)


class NoShrink(Protocol):
    def may_shrink_isr(self, leader_replica: Any, follower: int, new_isr: int) -> bool:
        return False


def _check(cls: type[Protocol], raw: dict[str, Any]) -> Any:
    cfg = from_mapping(raw)
    return Checker(build_model(cfg, protocol=cls(cfg), symmetry=False), stop_on_first=True).run()


@pytest.mark.parametrize("variant, raw, outcome, broken", [
    (NoWrites, CONFIGS[0], "vacuous", None),
    (ForgetfulCrash, CONFIGS[0], "safety_failure", "NoCommittedWriteLost"),
    (KeepRemovedLeader, CONFIGS[0], "safety_failure", "NoCommittedWriteLost"),
], ids=["accepts_produce", "replica_after_stop", "isr_removal"])
def test_overriding_a_hook_changes_what_the_checker_finds(variant: type[Protocol], raw: dict[str, Any], outcome: str,
                                                          broken: str | None) -> None:
    assert _check(Protocol, raw).outcome == "success"
    res = _check(variant, raw)
    assert res.outcome == outcome
    if broken:
        assert res.violations[0].property == broken


def test_a_guard_hook_removes_its_action() -> None:
    assert _check(Protocol, CONFIGS[0]).coverage.get("ShrinkIsr", 0) > 0
    assert "ShrinkIsr" not in _check(NoShrink, CONFIGS[0]).coverage


def test_the_quorum_high_watermark_example_breaks_on_the_installed_build() -> None:
    """The issue's false SUCCESS: a high-watermark rule that the compiled build never ran. As a
    hook, the change runs on either build and the acknowledged write is lost."""
    entry = manifest.get("leader-crash-kip-320")
    factory = load_variant(str(ROOT / "examples/variants/quorum_high_watermark.py") + ":QuorumHighWatermark")
    cfg = entry.config
    res = Checker(build_model(cfg, protocol=factory(cfg), properties=["AcknowledgedOnLeader"]),
                  stop_on_first=True).run()
    assert res.outcome == "safety_failure"
    v = res.violations[0]
    assert v.property == "AcknowledgedOnLeader" and v.length == 6
    assert [str(s.action) for s in v.trace[1:]][-3:] == ["Crash(1)", "ProcessBrokerChange(1)", "DeliverRequest(2)"]


# ---------------------------------------------------------------------------- no silent no-op
PATCHY = '''
from isrcheck.model import broker
from isrcheck.model.protocol import Protocol

broker.advance_hw = lambda w, leader, p, r: r

class Patchy(Protocol):
    name = "patchy"
'''


@pytest.mark.parametrize("pure", [False, True], ids=["installed-build", "pure"])
def test_a_monkeypatching_variant_is_refused_in_one_line(tmp_path: Path, pure: bool) -> None:
    path = tmp_path / "patchy.py"
    path.write_text(PATCHY, encoding="utf-8")
    env = {**os.environ, "ISRCHECK_PURE": "1" if pure else "0"}
    out = subprocess.run([sys.executable, "-m", "isrcheck", "check", "replication", "--variant", f"{path}:Patchy"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2
    lines = [x for x in out.stderr.splitlines() if not x.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: variant ")
    assert "replaces isrcheck.model.broker.advance_hw" in lines[0]
    assert out.stdout == ""


def test_patching_while_being_built_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "late.py"
    path.write_text("from isrcheck.model import broker\nfrom isrcheck.model.protocol import Protocol\n"
                    "class Late(Protocol):\n"
                    "    def __init__(self, config):\n"
                    "        super().__init__(config)\n"
                    "        broker.advance_hw = lambda w, leader, p, r: r\n", encoding="utf-8")
    from isrcheck.model import broker
    original = broker.advance_hw
    try:
        with pytest.raises(VariantError, match="replaces isrcheck.model.broker.advance_hw"):
            load_variant(f"{path}:Late")(from_mapping({}))
    finally:
        broker.advance_hw = original


def test_the_build_in_use_is_the_one_the_tests_ran() -> None:
    """The installed build (compiled where it was built) is what the tests above exercised."""
    assert native.build() in ("compiled", "pure")
