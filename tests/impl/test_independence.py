"""impl/ is an independent implementation of specs/: it imports neither the model (nor the engine
under it) nor the invariants.

Every module of impl/, in every room (subpackage), is parsed with ``ast`` (imports inside functions
and under TYPE_CHECKING count); relative imports are resolved against the module's own package. Each
room must be listed in pyproject.toml, which names the packages explicitly: a room missing there
would be left out of an installed (non-editable) copy.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from import_reader import imports_of

ROOT = Path(__file__).resolve().parents[2]
IMPL = ROOT / "impl"
FORBIDDEN = ("isrcheck.model", "isrcheck.engine", "isrcheck.invariants", "isrcheck.conformance",
             "isrcheck.pipeline", "model", "engine", "invariants")


def modules() -> list[Path]:
    """Every module of impl/, its rooms included."""
    return sorted(IMPL.rglob("*.py"))


def module_name(path: Path, root: Path = IMPL) -> str:
    """``impl/core/broker.py`` -> ``isrcheck.impl.core.broker`` (a package's ``__init__`` is the package)."""
    parts = [p for p in path.relative_to(root).with_suffix("").parts if p != "__init__"]
    return ".".join(["isrcheck", "impl", *parts])


def imported_names(path: Path, root: Path = IMPL) -> set[str]:
    """Every name the module at ``path`` imports, ``__import__`` and ``importlib.import_module`` of a
    constant name included."""
    return imports_of(path, module_name(path, root), dynamic=True)


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def test_impl_has_modules():
    files = modules()
    assert len(files) >= 10, files


def test_impl_imports_neither_model_nor_invariants():
    bad = []
    for path in modules():
        for name in sorted(imported_names(path)):
            if _forbidden(name):
                bad.append(f"{path.relative_to(IMPL)} imports {name}")
    assert bad == []


def test_impl_may_use_the_specs_data_only():
    users = [p.name for p in modules() if any(n.startswith("isrcheck.specs") or n == "isrcheck"
                                              for n in imported_names(p))]
    assert users, "impl reads the shared vocabulary through isrcheck.specs"
    for p in modules():
        for name in imported_names(p):
            if name.startswith("isrcheck.") and not name.startswith(("isrcheck.impl", "isrcheck.specs")):
                raise AssertionError(f"{p.relative_to(IMPL)} imports {name}")


def test_every_room_of_impl_is_a_package_pyproject_installs():
    assert (IMPL / "__init__.py").exists()
    with open(ROOT / "pyproject.toml", "rb") as f:
        packages = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    rooms = sorted({p.parent for p in modules()} - {IMPL})
    assert rooms, "impl/ is divided into rooms (subpackages)"
    for room in rooms:
        assert (room / "__init__.py").exists(), f"{room.relative_to(ROOT)} has no __init__.py"
        assert module_name(room / "__init__.py") in packages, f"pyproject.toml does not list {room.relative_to(ROOT)}"


def test_the_checker_catches_a_forbidden_import(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from ..model import state\n    import isrcheck.invariants.properties\n")
    names = imported_names(f, root=tmp_path)
    assert "isrcheck.model" in names and _forbidden("isrcheck.model")
    assert "isrcheck.invariants.properties" in names and _forbidden("isrcheck.invariants.properties")


def test_the_checker_resolves_a_relative_import_from_a_room(tmp_path):
    """``from ...model import state`` in ``impl/core/x.py`` leaves isrcheck.impl for isrcheck.model."""
    (tmp_path / "core").mkdir()
    f = tmp_path / "core" / "x.py"
    f.write_text("from ..store import embedded\nfrom ...model import state\n")
    names = imported_names(f, root=tmp_path)
    assert "isrcheck.impl.store.embedded" in names
    assert "isrcheck.model.state" in names and _forbidden("isrcheck.model.state")


def test_importing_impl_does_not_load_the_model():
    import subprocess
    import sys

    names = sorted(module_name(p) for p in modules())
    code = ("import importlib, sys\n"
            f"for m in {names!r}: importlib.import_module(m)\n"
            "bad=[m for m in sys.modules if m.startswith(('isrcheck.model','isrcheck.engine','isrcheck.invariants'))]\n"
            "print(bad); sys.exit(1 if bad else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
