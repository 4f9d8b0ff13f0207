"""conformance/ is one flat package, and the only one whose modules import both sides."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path, package: str) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                out.add(".".join(base + ([node.module] if node.module else [])))
            else:
                out.add(node.module or "")
    return out


def _side(name: str) -> str | None:
    parts = name.split(".")
    if parts[0] == "isrcheck" and len(parts) > 1 and parts[1] in ("model", "invariants"):
        return "model"
    if parts[0] == "isrcheck" and len(parts) > 1 and parts[1] == "impl":
        return "impl"
    return None


def test_conformance_is_one_flat_package():
    folder = ROOT / "conformance"
    assert (folder / "__init__.py").exists()
    assert not [p for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"]


def test_conformance_imports_both_sides():
    sides = set()
    for p in (ROOT / "conformance").glob("*.py"):
        sides |= {_side(n) for n in _imports(p, "isrcheck.conformance")}
    assert {"model", "impl"} <= sides


def test_no_module_outside_conformance_imports_both_sides():
    folders = {"model": "isrcheck.model", "invariants": "isrcheck.invariants", "impl": "isrcheck.impl",
               "isrcheck": "isrcheck", "pipeline": "isrcheck.pipeline"}
    both = []
    for folder, package in folders.items():
        for p in sorted((ROOT / folder).rglob("*.py")) if (ROOT / folder).is_dir() else []:
            sides = {_side(n) for n in _imports(p, package)}
            if {"model", "impl"} <= sides:
                both.append(str(p.relative_to(ROOT)))
    assert both == []
