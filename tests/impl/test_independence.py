"""impl/ is an independent implementation of specs/: it imports neither the model nor the invariants.

Every module of impl/ is parsed with ``ast`` (imports inside functions and under TYPE_CHECKING
count); relative imports are resolved against ``isrcheck.impl``. impl/ stays one flat package,
because pyproject.toml lists the packages explicitly.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPL = ROOT / "impl"
FORBIDDEN = ("isrcheck.model", "isrcheck.invariants", "isrcheck.conformance", "isrcheck.pipeline", "model",
             "invariants")


def imported_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["isrcheck", "impl"][: max(0, 2 - (node.level - 1))]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.add(arg.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.add(arg.value)
    return out


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def test_impl_has_modules():
    files = sorted(IMPL.glob("*.py"))
    assert len(files) >= 10, files


def test_impl_imports_neither_model_nor_invariants():
    bad = []
    for path in sorted(IMPL.glob("*.py")):
        for name in sorted(imported_names(path)):
            if _forbidden(name):
                bad.append(f"{path.name} imports {name}")
    assert bad == []


def test_impl_may_use_the_specs_data_only():
    users = [p.name for p in IMPL.glob("*.py") if any(n.startswith("isrcheck.specs") or n == "isrcheck"
                                                       for n in imported_names(p))]
    assert users, "impl reads the shared vocabulary through isrcheck.specs"
    for p in IMPL.glob("*.py"):
        for name in imported_names(p):
            if name.startswith("isrcheck.") and not name.startswith(("isrcheck.impl", "isrcheck.specs")):
                raise AssertionError(f"{p.name} imports {name}")


def test_impl_is_one_flat_package():
    assert (IMPL / "__init__.py").exists()
    subfolders = [d.name for d in IMPL.iterdir() if d.is_dir() and d.name != "__pycache__"]
    assert subfolders == []


def test_the_checker_catches_a_forbidden_import(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from ..model import state\n    import isrcheck.invariants.properties\n")
    names = imported_names(f)
    assert "isrcheck.model" in names and _forbidden("isrcheck.model")
    assert "isrcheck.invariants.properties" in names and _forbidden("isrcheck.invariants.properties")


def test_importing_impl_does_not_load_the_model():
    import subprocess
    import sys

    modules = sorted(p.stem for p in IMPL.glob("*.py") if p.stem != "__init__")
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module('isrcheck.impl.' + m)\n"
            "bad=[m for m in sys.modules if m.startswith(('isrcheck.model','isrcheck.invariants'))]\n"
            "print(bad); sys.exit(1 if bad else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
