"""The parts of specs/ that are drawn from code and from the vocabulary files.

Three chapters carry sections between markers that only this module writes (:data:`GENERATED`)::

    <!-- BEGIN GENERATED: actions -->               specs/01-vocabulary.md  (from actions.toml)
    <!-- BEGIN GENERATED: observation -->           specs/01-vocabulary.md  (from observation.toml)
    <!-- BEGIN GENERATED: tables -->                specs/02-state-machines.md
    <!-- BEGIN GENERATED: reassignment-example -->  specs/04-controller.md

:func:`render_state_machines` draws the partition and replica state machines (tables and mermaid
diagrams) from :data:`~isrcheck.model.tables.PARTITION_VALID_PREVIOUS` and
:data:`~isrcheck.model.tables.REPLICA_VALID_PREVIOUS`; :func:`render_reassignment_example` runs
the seed's reassignment example through the model and tabulates what ZooKeeper holds after each
step. ``tests/test_specs.py`` fails when a chapter's section differs from what these render, and
``python tests/test_specs.py`` rewrites the sections. Everything here is pure: strings in, strings
out; the only files this module reads are the vocabulary's, through their loaders in specs/
(:mod:`isrcheck.specs.actions`, :mod:`isrcheck.specs.observation`), which also hold the
vocabulary itself (argument kinds, the text form of actions, the observation validator).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import IntEnum
from typing import Any

from isrcheck.specs.actions import load_actions
from isrcheck.specs.observation import load_schema

from .tables import (
    PARTITION_VALID_PREVIOUS,
    REPLICA_VALID_PREVIOUS,
    PartitionState,
    ReplicaState,
)

# ---------------------------------------------------------------------------- generated sections
BEGIN = "<!-- BEGIN GENERATED: {name} -->"
END = "<!-- END GENERATED: {name} -->"


class GeneratedSectionError(ValueError):
    """A chapter lacks the markers of a generated section, or has them twice or out of order."""


def _bounds(doc: str, name: str) -> tuple[int, int]:
    begin, end = BEGIN.format(name=name), END.format(name=name)
    if doc.count(begin) != 1 or doc.count(end) != 1:
        raise GeneratedSectionError(f"expected exactly one {begin!r} and one {end!r}")
    start = doc.index(begin) + len(begin)
    stop = doc.index(end)
    if stop < start:
        raise GeneratedSectionError(f"{end!r} comes before {begin!r}")
    return start, stop


def extract(doc: str, name: str) -> str:
    """The text between the markers of section ``name`` (without the surrounding newlines)."""
    start, stop = _bounds(doc, name)
    return doc[start:stop].strip("\n")


def splice(doc: str, name: str, content: str) -> str:
    """``doc`` with section ``name`` replaced by ``content``."""
    start, stop = _bounds(doc, name)
    return doc[:start] + "\n" + content.strip("\n") + "\n" + doc[stop:]


# ---------------------------------------------------------------------------- state machines
def _previous_table(table: Mapping[Any, frozenset], states: type[IntEnum], heading: str) -> list[str]:
    lines = [f"| {heading} | valid previous states |", "|---|---|"]
    for target in states:
        prev = sorted(table[target])
        lines.append(f"| {target.label} | {', '.join(p.label for p in prev)} |")
    return lines


def _matrix(table: Mapping[Any, frozenset], states: type[IntEnum]) -> list[str]:
    order = list(states)
    lines = ["| from \\ to | " + " | ".join(s.label for s in order) + " |",
             "|---|" + "---|" * len(order)]
    for source in order:
        cells = ["yes" if source in table[target] else "" for target in order]
        lines.append(f"| {source.label} | " + " | ".join(cells) + " |")
    return lines


def _mermaid(table: Mapping[Any, frozenset], states: type[IntEnum]) -> list[str]:
    lines = ["```mermaid", "stateDiagram-v2"]
    for source in states:
        for target in states:
            if source in table[target]:
                lines.append(f"    {source.label} --> {target.label}")
    lines.append("```")
    return lines


def transitions(table: Mapping[Any, frozenset]) -> list[tuple[str, str]]:
    """Every allowed move of a table as (source label, target label), sorted by codes."""
    out = []
    for target, prev in table.items():
        for source in prev:
            out.append((source, target))
    return [(s.label, t.label) for s, t in sorted(out)]


def render_state_machines() -> str:
    """Markdown for specs/02-state-machines.md: per machine a table, a matrix and a diagram."""
    parts: list[str] = []
    for title, table, states, heading in (
        ("Partition state machine", PARTITION_VALID_PREVIOUS, PartitionState, "target partition state"),
        ("Replica state machine", REPLICA_VALID_PREVIOUS, ReplicaState, "target replica state"),
    ):
        n = sum(len(v) for v in table.values())
        parts.append(f"### {title}: {len(states)} states, {n} allowed moves")
        parts.append("")
        parts.extend(_previous_table(table, states, heading))
        parts.append("")
        parts.extend(_matrix(table, states))
        parts.append("")
        parts.extend(_mermaid(table, states))
        parts.append("")
    return "\n".join(parts).rstrip("\n")


# ---------------------------------------------------------------------------- reassignment example
#: The seed's example, OAR {1,2,3} -> RAR {4,5,6}, as a script of actions (same as
#: examples/reassignment-seed.toml): each entry is (action name, args, what the row says).
REASSIGNMENT_EXAMPLE_CONFIG: dict[str, Any] = {
    "brokers": 6,
    "replication_factor": 3,
    "max_records": 0,
    "assignment": [[1, 2, 3]],
    "operations": {"reassignments": [{"partition": 0, "target": [4, 5, 6]}]},
}
REASSIGNMENT_EXAMPLE_SCRIPT: tuple[tuple[str, tuple, str], ...] = (
    ("RequestReassignment", (0, (4, 5, 6)), "an administrator asks for RAR = [4,5,6]"),
    ("ReassignPartition", (1, 0, 1), "step 1: AR = OAR + RAR"),
    ("ReassignPartition", (1, 0, 2), "step 2: new leader epoch, LeaderAndIsr to OAR + RAR"),
    ("DeliverRequest", (1,), ""),
    ("DeliverRequest", (2,), ""),
    ("DeliverRequest", (3,), ""),
    ("DeliverRequest", (4,), ""),
    ("DeliverRequest", (5,), ""),
    ("DeliverRequest", (6,), "brokers 4, 5, 6 create their replicas and follow 1"),
    ("ReassignPartition", (1, 0, 3), "step 3: RAR - OAR -> NewReplica"),
    ("Fetch", (4, 0), ""),
    ("Fetch", (5, 0), ""),
    ("Fetch", (6, 0), "4, 5, 6 fetch, are caught up, and the leader adds them to the ISR"),
    ("ReassignPartition", (1, 0, 4), "step 4: every RAR replica is in the ISR"),
    ("ReassignPartition", (1, 0, 5), "step 5: RAR -> OnlineReplica"),
    ("ReassignPartition", (1, 0, 6), "step 6: AR = RAR in the controller's memory"),
    ("ReassignPartition", (1, 0, 7), "step 7: leader 1 is not in RAR: ReassignedPartition selector elects 4"),
    ("ReassignPartition", (1, 0, 8), "step 8: OAR - RAR -> OfflineReplica (out of the ISR)"),
    ("ReassignPartition", (1, 0, 9), "step 9: OAR - RAR -> NonExistentReplica"),
    ("ReassignPartition", (1, 0, 10), "step 10: AR = RAR in ZooKeeper"),
    ("ReassignPartition", (1, 0, 11), "step 11: the request is removed from ZooKeeper"),
    ("ReassignPartition", (1, 0, 12), "step 12: UpdateMetadata to every live broker"),
)


def _ids(mask: int) -> str:
    from .brokersets import members

    return "{" + ",".join(str(b) for b in members(mask)) + "}"


def run_reassignment_example() -> list[tuple[str, Any]]:
    """Replay :data:`REASSIGNMENT_EXAMPLE_SCRIPT`; (action text, state after) per step, initial first.

    Raises ``ValueError`` when a scripted action is not enabled (the model no longer follows the
    seed's example), which makes the spec test fail with the step that broke.
    """
    from .actions import Action, apply, enabled_actions
    from .config import from_mapping
    from .kafka import initial_state
    from .protocol import Protocol

    protocol = Protocol(from_mapping(REASSIGNMENT_EXAMPLE_CONFIG))
    s = initial_state(protocol)
    out: list[tuple[str, Any]] = [("(initial state)", s)]
    for name, args, _ in REASSIGNMENT_EXAMPLE_SCRIPT:
        a = Action(name, args)
        if a not in enabled_actions(protocol, s):
            raise ValueError(f"the reassignment example's action {a} is not enabled")
        s = apply(protocol, s, a)
        out.append((str(a), s))
    return out


def render_reassignment_example() -> str:
    """Markdown table for specs/04-controller.md: ZooKeeper and controller after each step."""
    from .tables import ReplicaState as RS

    from .config import from_mapping
    from .controller import assignment
    from .protocol import Protocol
    from .world import World

    protocol = Protocol(from_mapping(REASSIGNMENT_EXAMPLE_CONFIG))
    rows = run_reassignment_example()
    notes = [""] + [note for _, _, note in REASSIGNMENT_EXAMPLE_SCRIPT]
    lines = [
        "| after | AR in ZooKeeper | leader/ISR in ZooKeeper | leader epoch | zkVersion "
        "| controller's AR | replica states 1..6 | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    letters = {RS.NON_EXISTENT: "-", RS.NEW: "N", RS.ONLINE: "On", RS.OFFLINE: "Off",
               RS.DELETION_STARTED: "DS", RS.DELETION_SUCCESSFUL: "DOK", RS.DELETION_INELIGIBLE: "DI"}
    for (text, s), note in zip(rows, notes):
        zp = s.zk.partitions[0]
        c = s.controller
        w = World(protocol, s)
        ar_view = assignment(w, w.controller(c.epoch), 0)
        states = " ".join(letters[RS(x)] for x in c.replica_states[0])
        lines.append(
            f"| `{text}` | {list(zp.replicas)} | {zp.leader}/{_ids(zp.isr)} | {zp.leader_epoch} "
            f"| {zp.version} | {list(ar_view)} | {states} | {note} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- vocabulary tables
def render_action_table() -> str:
    """Markdown for specs/01-vocabulary.md: every action of specs/actions.toml, one row each."""
    lines = ["| action | actor | arguments | budget | what it does | specified in |", "|---|---|---|---|---|---|"]
    for name, a in load_actions().items():
        args = ", ".join(f"{x['name']}: {x['type']}" for x in a["args"]) or "(none)"
        budget = f"`{a['budget']}`" if "budget" in a else ""
        spec = a["spec"]
        lines.append(f"| `{name}` | {a['actor']} | {args} | {budget} | {a['summary']} | [{spec}]({spec}) |")
    return "\n".join(lines)


def render_observation_fields() -> str:
    """Markdown for specs/01-vocabulary.md: every object and field of specs/observation.toml."""
    schema = load_schema()
    parts: list[str] = []
    for obj in schema["object"]:
        parts.append(f"#### `{obj['name']}`")
        parts.append("")
        parts.append(obj["description"])
        parts.append("")
        parts.append("| field | type | constraints | meaning |")
        parts.append("|---|---|---|---|")
        for f in obj["field"]:
            cons = []
            if "min" in f:
                cons.append(f">= {f['min']}")
            if f.get("sorted"):
                cons.append("ascending")
            if f.get("unique"):
                cons.append("distinct")
            if "values" in f:
                cons.append("one of " + ", ".join(f"`{v}`" for v in f["values"]))
            parts.append(f"| `{f['name']}` | `{f['type']}` | {'; '.join(cons)} | {f['description']} |")
        parts.append("")
    return "\n".join(parts).rstrip("\n")


#: chapter file -> section name -> renderer
GENERATED: dict[str, dict[str, Callable[[], str]]] = {
    "01-vocabulary.md": {"actions": render_action_table, "observation": render_observation_fields},
    "02-state-machines.md": {"tables": render_state_machines},
    "04-controller.md": {"reassignment-example": render_reassignment_example},
}


def regenerate(doc: str, renderers: Mapping[str, Callable[[], str]]) -> str:
    """``doc`` with every generated section named in ``renderers`` freshly rendered."""
    for name, render in renderers.items():
        doc = splice(doc, name, render())
    return doc
