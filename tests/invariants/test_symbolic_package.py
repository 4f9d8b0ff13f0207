"""The layout of invariants/symbolic/ as its __init__.py documents it.

The package docstring lists the modules in dependency order, each importing only modules listed
before it: every module is listed, and every import between them goes backwards in the list.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import isrcheck.invariants.symbolic as package

SYMBOLIC = Path(__file__).resolve().parents[2] / "invariants" / "symbolic"


def documented_order() -> list[str]:
    return re.findall(r"^- ``(\w+)``:", package.__doc__ or "", flags=re.M)


def imports_within_the_package(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("isrcheck.invariants.symbolic."):
            out.add(node.module.split(".")[3])
    return out


def test_every_module_is_listed_once():
    order = documented_order()
    modules = sorted(p.stem for p in SYMBOLIC.glob("*.py") if p.stem != "__init__")
    assert sorted(order) == modules and len(set(order)) == len(order)


def test_each_module_imports_only_the_ones_listed_before_it():
    order = documented_order()
    bad = [f"{m} imports {i}" for k, m in enumerate(order)
           for i in sorted(imports_within_the_package(SYMBOLIC / f"{m}.py")) if i not in order[:k]]
    assert bad == []


def test_the_logic_layer_comes_first_after_the_verdicts():
    assert documented_order()[:4] == ["verdicts", "expected", "logic", "types"]
