"""Kafka's own bug history (specs/history.toml): the bugs the configuration key ``reintroduce`` puts back.

Each entry is one bug of Kafka's ZooKeeper-era controller and ISR replication, fixed by a known
commit of apache/kafka: what Kafka saw, the decision before and after the fix (in our words, over
our state), and how this model stands to it (its *classification*):

- ``reproduced``: ``reintroduce = [id]`` puts the pre-fix rule back (model/history.py) and the
  checker finds ``property`` broken on the first of ``models`` (a manifest pair), while the second,
  the same configuration without it, passes;
- ``pending``: the model's hooks can express the pre-fix rule, but no pair is pinned yet;
- ``finer``: the model must grow first (``mechanism`` names the growth: state, steps or options it
  lacks);
- ``out-of-scope``: no property of the model can tell the two rules apart; ``notes`` argues why.

A reproduced bug also says whether the reference implementation can put it back: ``impl`` names
the switch at its decision point (impl/core/config.py accepts the bug in ``reintroduce``), or
``impl_lacks`` names the mechanism it lacks (read into that key's one-line refusal); exactly one.

The file is data that the model (the ``reintroduce`` key's validation), the implementation (its own), the command line (the page
specs/12-history.md) and the tests read alike; this module loads and checks it, and imports nothing
from the project outside this package. Whether the pairs exist and the pre-fix rules are
implemented is checked against the manifest and model/history.py by tests/model/test_bug_history.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import listed_once, load
from .protocol import TRAIT_NAMES

__all__ = ["CLASSIFICATIONS", "FAMILIES", "Bug", "HistoryError", "bug", "in_impl", "load_history", "reproduced"]

FILE = "history.toml"
CLASSIFICATIONS = ("reproduced", "pending", "finer", "out-of-scope")
FAMILIES = ("controller", "isr", "hw", "epochs", "reassignment")
_REQUIRED = ("id", "family", "title", "classification", "symptom", "pre_fix", "fixed", "commit", "versions",
             "mechanism", "notes")
_OPTIONAL = ("property", "models", "requires", "expected_property", "proposed_config", "expected_counterexample",
             "impl", "impl_lacks")
#: the configuration keys a ``requires`` table may name besides the generation's traits
REQUIRABLE_KEYS = ("unclean_leader_election", "acks", "controller_connections", "fenced_controller_writes",
                   "detect_restarts", "hw_checkpoint", "failover_offline_replicas", "stale_controller", "isr_change",
                   "metadata_cache")


class HistoryError(ValueError):
    """specs/history.toml is malformed; the message is one line."""


@dataclass(frozen=True)
class Bug:
    """One bug of the history. ``requires`` maps a generation trait (specs/protocol.toml) or a
    configuration key to the value a configuration must have for the pre-fix rule to exist in it:
    where it does not, reintroducing the bug would change nothing, and the key ``reintroduce``
    refuses it."""

    id: str
    family: str
    title: str
    classification: str
    symptom: str
    pre_fix: str
    fixed: str
    commit: str
    versions: str
    mechanism: str
    notes: str
    property: str | None = None  # reproduced: the property the checker finds broken
    models: tuple[str, str] | None = None  # reproduced: the manifest pair (with the bug, without)
    requires: tuple[tuple[str, Any], ...] = ()
    expected_property: str | None = None  # not reproduced: the property expected to catch it
    proposed_config: str | None = None  # not reproduced: a sketch of the configuration expected to show it
    expected_counterexample: str | None = None
    impl: str | None = None  # reproduced, and put back by the implementation too: where its switch is
    impl_lacks: str | None = None  # reproduced, model only: the mechanism the implementation lacks


def _parse(raw: Any, index: int) -> Bug:
    where = f"{FILE}: bug #{index + 1}"
    if not isinstance(raw, dict):
        raise HistoryError(f"{where}: must be a table")
    if isinstance(raw.get("id"), str):
        where = f"{FILE}: {raw['id']}"
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise HistoryError(f"{where}: missing {', '.join(missing)}")
    extra = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if extra:
        raise HistoryError(f"{where}: unknown key {extra[0]!r}")
    for k in _REQUIRED:
        if not isinstance(raw[k], str) or not raw[k].strip():
            raise HistoryError(f"{where}: {k} must be a non-empty string")
    if not re.fullmatch(r"KAFKA-[0-9]+", raw["id"]):
        raise HistoryError(f"{where}: id must read KAFKA-<number>")
    if raw["family"] not in FAMILIES:
        raise HistoryError(f"{where}: family must be one of {', '.join(FAMILIES)}")
    cls = raw["classification"]
    if cls not in CLASSIFICATIONS:
        raise HistoryError(f"{where}: classification must be one of {', '.join(CLASSIFICATIONS)}, got {cls!r}")
    prop, models = raw.get("property"), raw.get("models")
    if cls == "reproduced":
        if not isinstance(prop, str) or not prop:
            raise HistoryError(f"{where}: a reproduced bug names the property the checker finds broken")
        if (not isinstance(models, list) or len(models) != 2
                or not all(isinstance(m, str) and m for m in models) or models[0] == models[1]):
            raise HistoryError(f"{where}: a reproduced bug names its manifest pair, models = [with, without]")
    elif prop is not None or models is not None:
        raise HistoryError(f"{where}: property and models belong to a reproduced bug only")
    requires = raw.get("requires", {})
    if not isinstance(requires, dict):
        raise HistoryError(f"{where}: requires must be a table")
    traits = set(TRAIT_NAMES)
    for k, v in requires.items():
        if k not in traits and k not in REQUIRABLE_KEYS:
            raise HistoryError(f"{where}: requires names {k!r}, neither a generation trait nor one of "
                               f"{', '.join(REQUIRABLE_KEYS)}")
        if isinstance(v, (dict, list)):
            raise HistoryError(f"{where}: requires.{k} must be a single value")
    for k in ("expected_property", "proposed_config", "expected_counterexample", "impl", "impl_lacks"):
        if k in raw and (not isinstance(raw[k], str) or not raw[k].strip()):
            raise HistoryError(f"{where}: {k} must be a non-empty string")
    # the implementation's side: every reproduced bug says whether impl/ puts it back (impl: where its
    # switch is) or what impl/ lacks (impl_lacks: the refusal's reason), never both; the others neither
    if cls == "reproduced" and ("impl" in raw) == ("impl_lacks" in raw):
        raise HistoryError(f"{where}: a reproduced bug has exactly one of impl (the implementation's switch) "
                           f"and impl_lacks (the mechanism the implementation lacks)")
    if cls != "reproduced" and ("impl" in raw or "impl_lacks" in raw):
        raise HistoryError(f"{where}: impl and impl_lacks belong to a reproduced bug only")
    return Bug(raw["id"], raw["family"], raw["title"], cls, raw["symptom"].strip(), raw["pre_fix"].strip(),
               raw["fixed"].strip(), raw["commit"], raw["versions"], raw["mechanism"], raw["notes"].strip(),
               prop, tuple(models) if models else None, tuple(sorted(requires.items())),  # type: ignore[arg-type]
               raw.get("expected_property"), raw.get("proposed_config"), raw.get("expected_counterexample"),
               raw.get("impl"), raw.get("impl_lacks"))


@lru_cache(maxsize=1)
def load_history() -> tuple[Bug, ...]:
    """Every bug of specs/history.toml, validated, in the file's order."""
    bugs = tuple(_parse(raw, i) for i, raw in enumerate(load(FILE).get("bug", [])))
    return listed_once(bugs, lambda b: b.id, HistoryError, FILE)


def bug(bug_id: str) -> Bug:
    """The bug ``bug_id``; KeyError when the history does not list it."""
    for b in load_history():
        if b.id == bug_id:
            return b
    raise KeyError(bug_id)


def reproduced() -> tuple[Bug, ...]:
    """The bugs the model reproduces (``reintroduce`` accepts exactly these)."""
    return tuple(b for b in load_history() if b.classification == "reproduced")


def in_impl() -> tuple[Bug, ...]:
    """The reproduced bugs the reference implementation can put back too (their ``impl`` key)."""
    return tuple(b for b in reproduced() if b.impl is not None)
