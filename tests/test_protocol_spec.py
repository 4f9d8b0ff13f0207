"""specs/protocol.toml against its loader, the model and the implementation.

The protocol generations (and the traits every decision reads), the reassignment steps and the
shared error names are data in specs/protocol.toml. These tests check that the loader
(``isrcheck.specs.protocol``) gives exactly the file's content, that the model and the
implementation both take these names from the loader (so they agree with each other because
neither has a list of its own: the source scans below fail when one side spells out its own list or
compares a generation's name), and that the chapters say the same.
"""
from __future__ import annotations

import ast
import importlib
import pickle
import re
import tomllib
from pathlib import Path

import pytest

from isrcheck.specs import protocol as P
from isrcheck.specs.protocol import (
    DEFAULT_GENERATION,
    GENERATION_NAMES,
    GENERATIONS,
    REASSIGNMENT_STEPS,
    EpochAnswer,
    Generation,
    step_number,
)

ROOT = Path(__file__).resolve().parents[1]
RAW = tomllib.loads((ROOT / "specs" / "protocol.toml").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------- the loader gives the file
def test_the_generation_enum_is_the_files_list_in_order():
    names = [g["name"] for g in RAW["generation"]]
    assert [g.value for g in Generation] == names == list(GENERATION_NAMES)
    assert GENERATIONS == tuple(Generation) and DEFAULT_GENERATION is GENERATIONS[0]
    for name in names:
        g = Generation(name)
        assert g.value == name and str(g) == name and f"{g}" == name and g == name
        assert g is getattr(Generation, name.upper().replace("-", "_"))
        assert pickle.loads(pickle.dumps(g)) is g  # configurations travel to worker processes
    with pytest.raises(ValueError):
        Generation("kip-999")


def test_each_generation_has_the_files_traits_kafka_and_description():
    for raw in RAW["generation"]:
        g = Generation(raw["name"])
        assert g.kafka == raw["kafka"] and g.description == raw["description"]
        traits = {name: getattr(g.traits, name) for name in P.TRAIT_NAMES}
        assert traits == {name: raw[name] for name in P.TRAIT_NAMES}
        assert set(raw) == {"name", "kafka", "description", *P.TRAIT_NAMES}, "a trait the loader does not read"
        assert isinstance(g.traits.epoch_answer, EpochAnswer)


def test_the_traits_are_what_specs_05_says_of_each_generation():
    t = {g.value: g.traits for g in GENERATIONS}
    assert not t["high-watermark"].leader_epochs and t["high-watermark"].epoch_answer is EpochAnswer.NONE
    assert t["kip-101"].epoch_answer is EpochAnswer.END_OFFSET
    assert t["kip-279"].epoch_answer is t["kip-320"].epoch_answer is EpochAnswer.EPOCH_AND_END_OFFSET
    fenced = [g for g, x in t.items() if x.fenced_by_leader_epoch]
    assert fenced == [g for g, x in t.items() if x.reconcile_on_epoch_change] == ["kip-320"]
    assert fenced == [g for g, x in t.items() if x.isr_join_needs_epoch_start]
    assert [g for g, x in t.items() if x.leader_epochs] == [g for g, x in t.items() if x.isr_removal_tells_replicas]


def test_the_steps_and_errors_are_the_files():
    assert REASSIGNMENT_STEPS == tuple(s["name"] for s in RAW["reassignment_step"])
    assert len(REASSIGNMENT_STEPS) == 12
    assert [step_number(n) for n in REASSIGNMENT_STEPS] == list(range(1, 13))
    with pytest.raises(KeyError, match="no reassignment step"):
        step_number("finish")
    assert P.ERROR_NAMES == tuple(e["name"] for e in RAW["error"])
    assert (P.GENERATION_KEY, P.GENERATION_ALIASES) == (RAW["config"]["key"], tuple(RAW["config"]["aliases"]))


def test_the_alias_rule():
    assert P.generation_setting({}) is None
    assert P.generation_setting({"generation": "kip-101"}) == ("generation", "kip-101")
    assert P.generation_setting({"truncation": "kip-101"}) == ("truncation", "kip-101")
    with pytest.raises(ValueError, match="^give generation or its alias truncation, not both$"):
        P.generation_setting({"truncation": "kip-101", "generation": "kip-101"})


# ---------------------------------------------------------------------------- both sides read the data
def test_model_and_impl_accept_exactly_the_generations_and_agree_on_their_traits():
    from isrcheck.impl.core.config import ConfigError as ImplConfigError
    from isrcheck.impl.core.config import IMPLEMENTED_GENERATIONS
    from isrcheck.impl.core.config import from_mapping as impl_config
    from isrcheck.model.config import ConfigError, from_mapping
    from isrcheck.model.protocol import Protocol

    assert IMPLEMENTED_GENERATIONS == GENERATIONS
    for g in GENERATIONS:
        for key in ("generation", "truncation"):
            m, i = from_mapping({key: g.value}), impl_config({key: g.value})
            assert m.generation is i.generation is g and i.traits is g.traits
        proto = Protocol(from_mapping({"generation": g.value}))
        t = g.traits
        assert (proto.uses_leader_epochs, proto.fences_by_leader_epoch, proto.reconciles_on_epoch_change,
                proto.isr_join_needs_epoch_start, proto.isr_removal_tells_replicas) == (
            t.leader_epochs, t.fenced_by_leader_epoch, t.reconcile_on_epoch_change, t.isr_join_needs_epoch_start,
            t.isr_removal_tells_replicas)
        assert proto.answers_with_epoch == (t.epoch_answer is EpochAnswer.EPOCH_AND_END_OFFSET)
        assert proto.generation is g
    for bad in ({"generation": "kip-999"}, {"generation": "kip-101", "truncation": "kip-101"}):
        with pytest.raises(ConfigError):
            from_mapping(bad)
        with pytest.raises(ImplConfigError):
            impl_config(bad)


def _step_table_names(table: dict[int, object], prefix: str) -> dict[int, str]:
    return {n: f.__name__.removeprefix(prefix).replace("_", "-") for n, f in table.items()}  # type: ignore[attr-defined]


def test_model_and_impl_number_the_steps_from_the_data():
    from isrcheck.impl.core import controller as IC
    from isrcheck.model import controller as MC

    expected = {n: name for n, name in enumerate(REASSIGNMENT_STEPS, start=1)}
    model = _step_table_names(MC._REASSIGNMENT_STEPS, "_")
    assert {n: s for n, s in model.items() if n} == expected and model[0] == REASSIGNMENT_STEPS[0]
    assert _step_table_names(IC._STEPS, "_step_") == expected
    for side in (MC, IC):
        assert side.LAST_STEP == len(REASSIGNMENT_STEPS)
        assert (side.STEP_START, side.STEP_CAUGHT_UP, side.STEP_AR_IN_MEMORY) == (
            step_number("start"), step_number("caught-up"), step_number("ar-in-memory"))


@pytest.mark.parametrize("error", P.ERRORS, ids=lambda e: e.name)
def test_the_shared_errors_have_the_same_name_on_both_sides(error):
    for module in (error.model, error.impl):
        cls = getattr(importlib.import_module(module), error.name, None)
        assert isinstance(cls, type) and issubclass(cls, Exception), f"{module} has no exception {error.name}"


def test_no_side_keeps_a_former_name_of_a_shared_error():
    from isrcheck.impl.core import selectors as IS

    assert not hasattr(IS, "NoLeaderEligible")


# ---------------------------------------------------------------------------- no side has its own list
SCANNED = ("model", "impl", "invariants", "conformance", "isrcheck", "pipeline")


def _sources() -> list[Path]:
    return sorted(p for folder in SCANNED for p in (ROOT / folder).rglob("*.py"))


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _literal_lists(tree: ast.AST, names: set[str], at_least: int) -> list[tuple[int, list[str]]]:
    """Tuples, lists, sets and dict keys that spell out ``at_least`` or more of ``names``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        else:
            continue
        found = [e.value for e in items if isinstance(e, ast.Constant) and e.value in names]
        if len(found) >= at_least:
            out.append((node.lineno, found))
    return out


def test_no_source_spells_out_its_own_list_of_generations_or_steps():
    """The generation names and the step names appear as a list only in specs/protocol.toml: a side
    that wrote its own (and so could drift from the other side) fails here."""
    bad = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, found in (_literal_lists(tree, set(GENERATION_NAMES), 2)
                            + _literal_lists(tree, set(REASSIGNMENT_STEPS), 3)):
            bad.append(f"{path.relative_to(ROOT)}:{line}: {found}")
    assert bad == []


@pytest.mark.parametrize("folder", ["model", "impl", "invariants"])
def test_no_decision_compares_a_generations_name(folder):
    """model/, impl/ and invariants/ (the z3 encoding) decide by the generation's traits: no
    comparison with a generation's name."""
    bad = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                named = [s for s in _strings(node) if s in GENERATION_NAMES]
                if named:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: compares with {named}")
    assert bad == []


def test_the_step_functions_are_found_by_name_not_listed():
    """Each side finds the function of a step by the step's name (``_bump_epoch`` for "bump-epoch"):
    a step of specs/protocol.toml that a side does not perform fails at import, not silently."""
    from isrcheck.impl.core import controller as IC
    from isrcheck.model import controller as MC

    n = step_number("caught-up")
    assert MC._step_function("caught-up") is MC._REASSIGNMENT_STEPS[n]
    assert IC._step_function("caught-up") is IC._STEPS[n]
    for side in (MC, IC):
        with pytest.raises(RuntimeError, match="names the reassignment step 'rebalance'"):
            side._step_function("rebalance")


# ---------------------------------------------------------------------------- the chapters say the same
def test_specs_04_names_the_steps_of_the_data_in_order():
    text = (ROOT / "specs" / "04-controller.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) `([a-z-]+)` \|", text, flags=re.M)
    assert [(int(n), name) for n, name in rows] == list(enumerate(REASSIGNMENT_STEPS, start=1))


def test_specs_05_tables_list_the_generations_of_the_data():
    text = (ROOT / "specs" / "05-replication.md").read_text(encoding="utf-8")
    i = text.index("| `generation` | Kafka |")
    rows = re.findall(r"^\| `([a-z0-9-]+)`", text[i:].split("\n\n")[0], flags=re.M)
    assert rows[1:] == list(GENERATION_NAMES)
