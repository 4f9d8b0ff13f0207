"""Who may import whom: one table for every package, and no import circle anywhere.

The table (ARCHITECTURE.md, "Layers", draws it):

============  =====================================================================
package       may import from the project
============  =====================================================================
specs         nothing: the shared vocabulary, as data and loaders
engine        nothing: the generic checker, which knows no model
model         engine, specs (the Kafka model, built on the engine)
peers         engine only (someone else's specification, on the same engine)
invariants    model, engine, specs
impl          specs (never model or invariants: an independent implementation)
conformance   model, invariants, impl, specs
pipeline      model, invariants, conformance, specs
cli           every package (``isrcheck/``, the command line; nothing imports it)
root          nothing (``isrcheck/__init__.py`` and ``isrcheck/native.py``: the version and the
              compiled-build switch, which every package may import)
============  =====================================================================

Inside impl the rooms (subpackages) have a table of their own, from the bottom up:

========  ====================================================================
room      may import from impl
========  ===========================================================================
core      nothing: the sans-IO cores and what they share (messages, config, store interface, ...)
wire      core (the frames between processes, and the secret that authenticates them)
disk      core (a broker's disks and their on-disk formats)
store     core, wire (the metadata store's backends; the remote one speaks frames)
process   core, wire, store, disk (the real cluster's processes: where impl does I/O)
rigs      every room (the simulator, fault runs, torture, the history checker)
========  ===========================================================================

Every module of impl lives in a room (only ``impl/__init__.py`` sits at its top).
=======
Inside the command line, rooms (``CLI_ROOMS``, ``ROOM_MAY_IMPORT``):

============  =====================================================================
room          may import from the command line
============  =====================================================================
entry         commands, inputs (``isrcheck/cli.py``, ``isrcheck/__main__.py``: the group,
              which knows the inputs' errors)
commands      render, inputs, analyses (``isrcheck/commands/``)
analyses      inputs (``isrcheck/analyses/``: diff, gallery)
inputs        nothing (``isrcheck/inputs/``: manifest, scenarios, trace files)
render        nothing (``isrcheck/render/``: what a user reads; never a command's module)
============  =====================================================================

Third-party rules ride along: only invariants (and the command line above it) imports z3, only
pipeline imports pyspark, only impl imports kazoo. Imports are read from the source with ``ast``: every ``import``, at any
depth (inside functions too) and under ``if TYPE_CHECKING:``. The module graph built from them
must have no cycle (networkx): an import inside a function that only dodges a circle is a circle.
"""
from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import networkx as nx
import pytest

from import_reader import imports_of

ROOT = Path(__file__).resolve().parents[1]

#: folder -> import name of the package it holds
PACKAGES: dict[str, str] = {
    "specs": "isrcheck.specs",
    "engine": "isrcheck.engine",
    "model": "isrcheck.model",
    "peers": "isrcheck.peers",
    "invariants": "isrcheck.invariants",
    "impl": "isrcheck.impl",
    "conformance": "isrcheck.conformance",
    "pipeline": "isrcheck.pipeline",
    "isrcheck": "isrcheck",
}
LAYER_OF_FOLDER = {folder: ("cli" if folder == "isrcheck" else folder) for folder in PACKAGES}
#: the package root: imported first by every process, importable by every package
ROOT_MODULES = {"isrcheck", "isrcheck.native"}

#: layer -> the layers it may import (itself always allowed)
MAY_IMPORT: dict[str, set[str]] = {
    "root": set(),
    "specs": {"root"},
    "engine": {"root"},
    "model": {"engine", "specs", "root"},
    "peers": {"engine", "root"},
    "invariants": {"model", "engine", "specs", "root"},
    "impl": {"specs", "root"},
    "conformance": {"model", "engine", "invariants", "impl", "specs", "root"},
    "pipeline": {"model", "engine", "invariants", "conformance", "specs", "root"},
    "cli": {"specs", "engine", "model", "peers", "invariants", "impl", "conformance", "pipeline", "root"},
}
#: third-party packages only some layers may import
RESTRICTED = {"z3": {"invariants", "cli"}, "pyspark": {"pipeline"}, "kazoo": {"impl"}}

#: impl's rooms (the subfolders of impl/) -> the rooms each may import (itself always allowed); the
#: package root and specs stay allowed by the layer table above, for every room
IMPL_ROOMS: dict[str, set[str]] = {
    "core": set(),
    "wire": {"core"},
    "disk": {"core"},
    "store": {"core", "wire"},
    "process": {"core", "wire", "store", "disk"},
    "rigs": {"core", "wire", "store", "disk", "process"},
}

#: the command line's rooms: subfolder of isrcheck/ -> room (isrcheck/*.py itself, but the package
#: root, is the "entry" room)
CLI_ROOMS: dict[str, str] = {"commands": "commands", "render": "render", "inputs": "inputs", "analyses": "analyses"}
#: room -> the rooms of the command line it may import (itself always allowed); every room may
#: import the layers below the command line
ROOM_MAY_IMPORT: dict[str, set[str]] = {
    "entry": {"commands", "inputs"},
    "commands": {"render", "inputs", "analyses"},
    "analyses": {"inputs"},
    "inputs": set(),
    "render": set(),
}


# ---------------------------------------------------------------------------- reading imports
def module_name(path: Path, folder: str, root: Path = ROOT) -> str:
    rel = path.relative_to(root / folder).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([PACKAGES.get(folder, f"isrcheck.{folder}"), *parts])


def imported_names(path: Path, folder: str, root: Path = ROOT) -> set[str]:
    """Every name ``path`` imports, absolute: ``from a import b`` gives ``a`` and ``a.b`` (the
    caller decides which of them is a module)."""
    return imports_of(path, module_name(path, folder, root))


def files(folder: str, root: Path = ROOT) -> list[Path]:
    base = root / folder
    if folder == "isrcheck":  # the command line: its own modules and its rooms (build output aside)
        return sorted([*base.glob("*.py"), *(p for room in CLI_ROOMS for p in (base / room).rglob("*.py"))])
    return sorted(base.rglob("*.py"))


@cache
def project_modules() -> dict[str, tuple[str, Path]]:
    """import name -> (folder, path) of every module of the project."""
    return {module_name(p, folder): (folder, p) for folder in PACKAGES for p in files(folder)}


def layer_of(name: str) -> str | None:
    """The layer a project module belongs to, or None for a name outside the project."""
    if name in ROOT_MODULES:
        return "root"
    found = project_modules().get(name)
    return LAYER_OF_FOLDER[found[0]] if found else None


def module_edges(name: str) -> set[str]:
    """The project modules ``name`` imports: for ``from a import b``, ``a.b`` when it is a module,
    else ``a`` (importing a package's submodule does not count as importing its ``__init__``)."""
    folder, path = project_modules()[name]
    mods = project_modules()
    names = imported_names(path, folder)
    out = set()
    for n in names:
        if n in mods and not any(other.startswith(n + ".") and other in mods for other in names):
            out.add(n)
    return out - {name}


def import_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for name in project_modules():
        g.add_node(name)
        for target in module_edges(name):
            g.add_edge(name, target)
    return g


def room_of(path: Path, root: Path = ROOT) -> str:
    """The room of a module of the command line (a file under ``root/isrcheck``)."""
    rel = path.relative_to(root / "isrcheck")
    return CLI_ROOMS[rel.parts[0]] if len(rel.parts) > 1 else "entry"


def cli_breaches(root: Path = ROOT) -> list[str]:
    """Every import that breaks the command line's rules in the tree at ``root``: a room importing
    a room ROOM_MAY_IMPORT does not allow, or a module outside the command line importing it."""
    modules = {module_name(p, folder, root): (folder, p) for folder in PACKAGES if (root / folder).is_dir()
               for p in files(folder, root)}
    cli = {name: room_of(p, root) for name, (folder, p) in modules.items()
           if folder == "isrcheck" and name not in ROOT_MODULES}
    bad = []
    for name, (folder, path) in sorted(modules.items()):
        names = imported_names(path, folder, root)
        for target in sorted(n for n in names if n in cli):
            if any(other.startswith(target + ".") and other in modules for other in names):
                continue  # ``from isrcheck.render import tables`` imports tables, not the package's __init__
            rel = path.relative_to(root)
            if name not in cli:
                bad.append(f"{rel} imports {target}: nothing outside the command line imports it")
            elif cli[target] != cli[name] and cli[target] not in ROOM_MAY_IMPORT[cli[name]]:
                bad.append(f"{rel} ({cli[name]}) imports {target} ({cli[target]})")
    return sorted(bad)


# ---------------------------------------------------------------------------- the reader itself
def test_import_reader_resolves_relative_absolute_nested_and_type_checking_imports(tmp_path):
    pkg = tmp_path / "model"
    pkg.mkdir()
    src = pkg / "x.py"
    src.write_text(
        "import os, pyspark.sql\n"
        "from . import y\n"
        "from .z import w\n"
        "from ..invariants import properties\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from isrcheck.impl.core import Core\n"
        "def f():\n"
        "    import z3\n",
        encoding="utf-8",
    )
    names = imported_names(src, "model", root=tmp_path)
    assert {"os", "pyspark.sql", "isrcheck.model.y", "isrcheck.model.z", "isrcheck.invariants",
            "isrcheck.invariants.properties", "isrcheck.impl.core", "z3"} <= names


def test_every_folder_is_read_and_the_graph_has_their_modules():
    g = import_graph()
    for folder in PACKAGES:
        assert files(folder), f"no Python files found in {folder}/"
    assert "isrcheck.engine.checker" in g and "isrcheck.cli" in g and "isrcheck.specs" in g
    assert g.has_edge("isrcheck.engine.checker", "isrcheck.engine.core")


def test_every_folder_of_the_command_line_is_a_room():
    """A new subpackage of isrcheck/ must be placed in a room (else its imports would go unread)."""
    folders = {p.parent.relative_to(ROOT / "isrcheck").parts[0] for p in (ROOT / "isrcheck").rglob("*.py")
               if p.parent != ROOT / "isrcheck"}
    assert folders == set(CLI_ROOMS)
    for room in CLI_ROOMS:
        assert any(room_of(p) == CLI_ROOMS[room] for p in files("isrcheck")), room
    assert "isrcheck.render.tables" in project_modules() and "isrcheck.commands.check" in project_modules()


def _tree(root: Path, sources: dict[str, str]) -> Path:
    for rel, text in sources.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_planted_breach_of_the_rooms_is_found(tmp_path):
    """A renderer importing a command (absolutely, relatively, inside a function), an input importing
    a renderer, the model importing the command line: each is reported; what the rooms allow is not."""
    root = _tree(tmp_path, {
        "isrcheck/__init__.py": "", "isrcheck/native.py": "",
        "isrcheck/cli.py": "from isrcheck.commands import check\n",
        "isrcheck/commands/__init__.py": "", "isrcheck/commands/check.py": "from isrcheck.render import tables\n",
        "isrcheck/render/__init__.py": "",
        "isrcheck/render/tables.py": "from isrcheck.commands.check import x\n",
        "isrcheck/render/json_form.py": "def f():\n    from ..commands import check\n",
        "isrcheck/render/terminal.py": "from isrcheck import native\nfrom . import tables\n",
        "isrcheck/inputs/__init__.py": "", "isrcheck/inputs/manifest.py": "import isrcheck.render.tables\n",
        "isrcheck/analyses/__init__.py": "", "isrcheck/analyses/diff.py": "from isrcheck.inputs import manifest\n",
        "model/__init__.py": "", "model/kafka.py": "from isrcheck.inputs.manifest import load\n",
    })
    assert cli_breaches(root) == [
        "isrcheck/inputs/manifest.py (inputs) imports isrcheck.render.tables (render)",
        "isrcheck/render/json_form.py (render) imports isrcheck.commands.check (commands)",
        "isrcheck/render/tables.py (render) imports isrcheck.commands.check (commands)",
        "model/kafka.py imports isrcheck.inputs.manifest: nothing outside the command line imports it",
    ]


def test_the_rooms_table_names_every_room_and_has_no_circle():
    assert set(ROOM_MAY_IMPORT) == set(CLI_ROOMS.values()) | {"entry"}
    g = nx.DiGraph([(a, b) for a, allowed in ROOM_MAY_IMPORT.items() for b in allowed])
    assert all(b in ROOM_MAY_IMPORT for b in g.nodes) and nx.is_directed_acyclic_graph(g)


def test_the_cycle_finder_finds_a_planted_cycle():
    g = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])
    assert sorted(_cycles(g)[0]) == ["a", "b", "c"]


def test_the_table_names_every_package():
    assert set(MAY_IMPORT) == set(LAYER_OF_FOLDER.values()) | {"root"}
    for layer, allowed in MAY_IMPORT.items():
        assert allowed <= set(MAY_IMPORT), layer


def test_the_table_itself_has_no_circle():
    g = nx.DiGraph([(a, b) for a, allowed in MAY_IMPORT.items() for b in allowed])
    assert nx.is_directed_acyclic_graph(g)


# ---------------------------------------------------------------------------- the rules
def _cycles(g: nx.DiGraph) -> list[list[str]]:
    return [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]


def test_no_import_circle_between_modules():
    cycles = _cycles(import_graph())
    shown = [" -> ".join(cycle) for cycle in cycles]
    assert shown == [], "import circles (an import inside a function counts):\n" + "\n".join(shown)


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_each_package_imports_only_what_the_table_allows(folder):
    bad = []
    for name, (f, path) in sorted(project_modules().items()):
        if f != folder:
            continue
        layer = layer_of(name)
        assert layer is not None
        allowed = MAY_IMPORT[layer] | {layer}
        for n in sorted(imported_names(path, folder)):
            target = layer_of(n)
            if n.startswith("isrcheck.") and target is None and n.rpartition(".")[0] in project_modules():
                continue  # ``from a import b`` where b is a name in module a: a is checked itself
            if target is not None and target not in allowed:
                bad.append(f"{path.relative_to(ROOT)} imports {n} ({target})")
            top = n.split(".")[0]
            if top in RESTRICTED and layer not in RESTRICTED[top]:
                bad.append(f"{path.relative_to(ROOT)} imports {n}")
    assert bad == []


def test_the_engine_knows_no_model():
    """The generic checker imports nothing of the Kafka model, the peers or anything above it
    (Stateright keeps its checker apart from its examples): a breach is an import of another layer."""
    bad = [
        f"{path.relative_to(ROOT)} imports {target}"
        for name, (folder, path) in project_modules().items() if folder == "engine"
        for target in module_edges(name)
        if layer_of(target) not in ("engine", "root")
    ]
    assert bad == []


def test_peers_use_only_the_generic_engine():
    """A peer transcription is someone else's specification: it uses the engine's vocabulary
    (Model, Property, the checker), never the Kafka model or anything above it."""
    bad = [
        f"{path.relative_to(ROOT)} imports {target}"
        for name, (folder, path) in project_modules().items() if folder == "peers"
        for target in module_edges(name)
        if layer_of(target) not in ("engine", "peers", "root")
    ]
    assert bad == []


# ---------------------------------------------------------------------------- impl's rooms
def impl_room(name: str) -> str | None:
    """The room of a module of impl (``isrcheck.impl.core.broker`` -> ``core``), or None for the
    package itself (``isrcheck.impl``)."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 else None


def impl_room_breaches(root: Path = ROOT) -> list[str]:
    """Every import between impl's rooms that :data:`IMPL_ROOMS` does not allow, read from the
    files under ``root/impl`` (an import of a module that sits in no room is a breach too)."""
    bad = []
    for path in sorted((root / "impl").rglob("*.py")):
        inside = path.relative_to(root / "impl").parts
        own = inside[0] if len(inside) > 1 else None  # the folder, not the name: impl/loose.py is in none
        rel = path.relative_to(root)
        if own is None:
            if path.name != "__init__.py":
                bad.append(f"{rel} is in no room")
            own_allowed: set[str] = set()
        elif own not in IMPL_ROOMS:
            bad.append(f"{rel} is in {own}/, a room the table does not name")
            continue
        else:
            own_allowed = IMPL_ROOMS[own] | {own}
        for n in sorted(imported_names(path, "impl", root)):
            if not n.startswith("isrcheck.impl."):
                continue
            target = impl_room(n)
            if target not in IMPL_ROOMS:
                bad.append(f"{rel} imports {n}, which is in no room")
            elif target not in own_allowed:
                bad.append(f"{rel} ({own or 'impl'}) imports {n} ({target})")
    return bad


def test_the_room_table_names_every_room_of_impl_and_has_no_circle():
    folders = {d.name for d in (ROOT / "impl").iterdir() if d.is_dir() and any(d.glob("*.py"))}
    assert folders == set(IMPL_ROOMS)
    for room, allowed in IMPL_ROOMS.items():
        assert allowed <= set(IMPL_ROOMS), room
    assert IMPL_ROOMS["core"] == set(), "the cores import nothing of impl's other rooms"
    g = nx.DiGraph([(a, b) for a, allowed in IMPL_ROOMS.items() for b in allowed])
    assert nx.is_directed_acyclic_graph(g)


def test_each_room_of_impl_imports_only_what_its_table_allows():
    assert impl_room_breaches() == []


def test_the_room_check_finds_planted_breaches(tmp_path):
    """A core that reaches for a process or a rig, a store that reaches for a disk, a module left
    flat in impl/: each is reported; what the table allows is not."""
    files = {
        "impl/__init__.py": "",
        "impl/loose.py": "",
        "impl/core/__init__.py": "",
        "impl/core/x.py": ("from . import layout\n"
                           "from isrcheck.specs import protocol\n"
                           "def f():\n"
                           "    from ..process import runtime\n"
                           "from typing import TYPE_CHECKING\n"
                           "if TYPE_CHECKING:\n"
                           "    from isrcheck.impl.rigs.simulator import Simulator\n"),
        "impl/store/__init__.py": "",
        "impl/store/y.py": "from ..core.store import Session\nfrom ..wire.frame import read_frame\n"
                           "from ..disk.log import SimDisk\n",
        "impl/process/z.py": "from ..store.remote import open_store\nfrom ..disk import log\nfrom ..loose import x\n",
        "impl/rigs/w.py": "from ..process.cluster import LocalCluster\nfrom ..core import messages\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    assert impl_room_breaches(tmp_path) == [
        "impl/core/x.py (core) imports isrcheck.impl.process (process)",
        "impl/core/x.py (core) imports isrcheck.impl.process.runtime (process)",
        "impl/core/x.py (core) imports isrcheck.impl.rigs.simulator (rigs)",
        "impl/core/x.py (core) imports isrcheck.impl.rigs.simulator.Simulator (rigs)",
        "impl/loose.py is in no room",
        "impl/process/z.py imports isrcheck.impl.loose, which is in no room",
        "impl/process/z.py imports isrcheck.impl.loose.x, which is in no room",
        "impl/store/y.py (store) imports isrcheck.impl.disk.log (disk)",
        "impl/store/y.py (store) imports isrcheck.impl.disk.log.SimDisk (disk)",
    ]


def test_the_rooms_use_the_table_below_them():
    """The room table's permissions are used: a rule nobody needs would hide a wrong layering."""
    used = set()
    for name, (folder, path) in project_modules().items():
        if folder == "impl" and impl_room(name) is not None:
            used |= {(impl_room(name), impl_room(t)) for t in imported_names(path, folder)
                     if t.startswith("isrcheck.impl.")}
    for room, allowed in IMPL_ROOMS.items():
        if room != "rigs":  # a rig may import every room, and need not
            assert {(room, b) for b in allowed} <= used, room
    assert ("rigs", "process") in used and ("rigs", "core") in used


def test_nothing_imports_the_command_line():
    g = import_graph()
    cli = {n for n in g if layer_of(n) == "cli"}
    bad = [f"{a} imports {b}" for a, b in g.edges if b in cli and a not in cli]
    assert bad == []


def test_the_rooms_of_the_command_line_import_only_what_the_table_allows():
    """Renderers import no command (nor inputs or analyses), inputs import no renderer, commands
    import the rest; nothing outside the command line imports it."""
    assert cli_breaches() == []


def test_the_rooms_permissions_are_used():
    """A permission nobody needs would hide a wrong placement."""
    mods = project_modules()
    used = {(room_of(mods[a][1]), room_of(mods[b][1])) for a, b in import_graph().edges
            if layer_of(a) == layer_of(b) == "cli" and "root" not in (layer_of(a), layer_of(b))}
    assert {(a, b) for a, allowed in ROOM_MAY_IMPORT.items() for b in allowed} <= used


def test_invariants_and_conformance_use_the_layers_below_them():
    """The table's permissions are used: a rule nobody needs would hide a wrong layering."""
    g = import_graph()
    used = {(layer_of(a), layer_of(b)) for a, b in g.edges}
    assert ("invariants", "model") in used and ("model", "engine") in used and ("peers", "engine") in used
    assert ("conformance", "impl") in used and ("conformance", "model") in used
    assert ("impl", "specs") in used and ("model", "specs") in used


# ---------------------------------------------------------------------------- searches through the kit
def _loops_calling(tree: ast.AST, method: str) -> list[int]:
    """Line numbers of calls ``x.method(...)`` that sit inside a ``for`` or ``while`` loop (or a
    comprehension) of the same function."""
    found: list[int] = []

    def scan(node: ast.AST, in_loop: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                scan(child, False)  # a loop outside a function does not make its body a loop
                continue
            looping = in_loop or isinstance(child, (ast.For, ast.While, ast.AsyncFor, ast.comprehension))
            if (looping and isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                    and child.func.attr == method):
                found.append(child.lineno)
            scan(child, looping)

    scan(tree, False)
    return found


def test_the_loop_finder_sees_a_loop_and_not_a_delegation():
    looped = ast.parse("def f(m, s):\n    for a in m.actions(s):\n        t = m.next_state(s, a)\n")
    delegating = ast.parse("class W:\n    def next_state(self, s, a):\n        return self.m.next_state(s, a)\n")
    assert _loops_calling(looped, "next_state") == [3]
    assert _loops_calling(delegating, "next_state") == []


def test_no_module_outside_the_engine_steps_a_model_in_a_loop_of_its_own():
    """Every search and replay goes through the engine's kit (engine/explore.py: walks, the
    breadth-first visit, successors, replays), so a fix to how a path is taken or checked is made
    once: no module of another package calls a model's ``next_state`` in a loop."""
    bad = [f"{path.relative_to(ROOT)}:{line}"
           for name, (folder, path) in sorted(project_modules().items()) if folder != "engine"
           for line in _loops_calling(ast.parse(path.read_text(encoding="utf-8")), "next_state")]
    assert bad == []
