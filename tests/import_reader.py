"""A module's imports read from its source, for the tests that judge who imports whom
(``test_layering.py``, ``impl/test_independence.py``): one reader, so that both judge the same imports.

Every ``import`` counts, at any depth (inside functions too) and under ``if TYPE_CHECKING:``;
relative imports are resolved as the import system resolves them (``importlib.util.resolve_name``).
``from a import b`` gives ``a`` and ``a.b``: the caller decides which of them is a module.
"""
from __future__ import annotations

import ast
from importlib.util import resolve_name
from pathlib import Path


def imports_of(path: Path, module: str, dynamic: bool = False) -> set[str]:
    """Every name the source at ``path``, the module ``module``, imports, absolute. ``dynamic``: also
    the constant names it hands to ``__import__`` and ``importlib.import_module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = resolve_name("." * node.level + (node.module or ""), package)
            out.add(target)
            out.update(f"{target}.{alias.name}" for alias in node.names)
        elif dynamic and isinstance(node, ast.Call) and node.args and (
                getattr(node.func, "id", None) == "__import__"
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.add(arg.value)
    return out
