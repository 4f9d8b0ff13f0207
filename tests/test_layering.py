"""Dependency rules between the project's packages, read from the source with ``ast``.

- model imports nothing else from the project (no invariants, impl, conformance, pipeline), no pyspark,
  no z3;
- invariants imports neither impl nor pyspark;
- impl (when it exists) imports neither model nor invariants.
Relative imports are resolved against the package's import name (``isrcheck.<folder>``), and imports
under ``if TYPE_CHECKING:`` count too.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = {"model", "invariants", "impl", "conformance", "pipeline", "specs", "peers"}


def _module_name(path: Path, folder: str, root: Path) -> str:
    rel = path.relative_to(root / folder).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["isrcheck", folder, *parts])


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports_of(path: Path, folder: str, root: Path = ROOT) -> set[str]:
    """Absolute names of every module ``path`` imports (``from a import b`` gives ``a`` and ``a.b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module = _module_name(path, folder, root)
    package = module if _is_package(path) else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base)
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{alias.name}" for alias in node.names)
    return out


def _top(name: str) -> str:
    """The project package an import belongs to ('model', 'invariants', ...) or its top-level name."""
    parts = name.split(".")
    if parts[0] == "isrcheck" and len(parts) > 1:
        return parts[1]
    return parts[0]


def _files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py")) if (ROOT / folder).is_dir() else []


def _violations(folder: str, forbidden: set[str]) -> list[str]:
    bad = []
    for path in _files(folder):
        for name in sorted(imports_of(path, folder)):
            if _top(name) in forbidden:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


# ---------------------------------------------------------------------------- the parser itself
def test_import_parser_resolves_relative_and_absolute_imports(tmp_path):
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
    names = imports_of(src, "model", root=tmp_path)
    assert {"os", "pyspark.sql", "isrcheck.model.y", "isrcheck.model.z", "isrcheck.invariants",
            "isrcheck.invariants.properties", "isrcheck.impl.core", "z3"} <= names
    tops = {_top(n) for n in names}
    assert {"invariants", "impl", "pyspark", "z3", "model"} <= tops


def test_the_model_folder_is_parsed():
    files = {p.name for p in _files("model")}
    assert {"checker.py", "controller.py", "broker.py", "selectors.py", "tables.py"} <= files
    assert "isrcheck.model.tables" in imports_of(ROOT / "model" / "broker.py", "model")


# ---------------------------------------------------------------------------- the rules
def test_model_imports_nothing_else_from_the_project_nor_pyspark_nor_z3():
    forbidden = (PROJECT_PACKAGES - {"model", "specs"}) | {"pyspark", "z3"}
    assert _violations("model", forbidden) == []


def test_model_imports_from_isrcheck_only_itself_and_the_specs_data():
    bad = [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in _files("model")
        for n in imports_of(p, "model")
        if n.startswith("isrcheck.") and _top(n) not in ("model", "specs")
    ]
    assert bad == []


def test_invariants_import_neither_impl_nor_pyspark():
    assert _violations("invariants", {"impl", "pyspark", "conformance", "pipeline"}) == []


def test_invariants_use_the_model():
    names = set().union(*(imports_of(p, "invariants") for p in _files("invariants")))
    assert any(_top(n) == "model" for n in names)


@pytest.mark.skipif(not (ROOT / "impl").is_dir(), reason="no impl/ folder yet")
def test_impl_imports_neither_model_nor_invariants():
    assert _violations("impl", {"model", "invariants", "conformance", "pipeline"}) == []


def test_peers_import_only_the_engine_and_themselves():
    """A peer transcription is someone else's specification: it uses the engine's vocabulary
    (Model, Property), never the Kafka model, the properties or anything above them."""
    bad = [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in _files("peers")
        for n in imports_of(p, "peers")
        if (n.startswith("isrcheck.") and _top(n) not in ("peers", "model"))
        or _top(n) in ("pyspark", "z3")
        or (_top(n) == "model" and n.split(".")[2:3] not in (["checker"], ["parallel"], ["codec"]))
    ]
    assert bad == []
