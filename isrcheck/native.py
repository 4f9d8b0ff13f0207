"""Which modules are compiled, whether the compiled build is in use, and how to switch it off.

The checker's hot path (the model, the properties, the engine, the state codec and the peer
models) is compiled with mypyc when the project is installed (``setup.py``): ordinary typed
Python, turned into a C extension per module, placed beside the ``.py`` files. The Python source
stays the reference: ``ISRCHECK_PURE=1`` in the environment makes every process import the
``.py`` files instead, so the two builds can be compared (tests/test_native_build.py checks that
they give identical state counts and counterexamples).

This module is imported by the package root before anything else and must stay pure Python
(it is also read by ``setup.py`` to know what to compile).
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

#: Modules compiled by mypyc at install, as import names. setup.py compiles exactly these.
COMPILED_MODULES: tuple[str, ...] = (
    "isrcheck.engine.core",
    "isrcheck.engine.explore",
    "isrcheck.engine.checker",
    "isrcheck.engine.parallel",
    "isrcheck.engine.liveness",
    "isrcheck.engine.codec",
    "isrcheck.model.brokersets",
    "isrcheck.model.records",
    "isrcheck.model.epochs",
    "isrcheck.model.state",
    "isrcheck.model.statehash",
    "isrcheck.model.statecodec",
    "isrcheck.model.extension",
    "isrcheck.model.tables",
    "isrcheck.model.selectors",
    "isrcheck.model.world",
    "isrcheck.model.follower",
    "isrcheck.model.broker",
    "isrcheck.model.controller",
    "isrcheck.model.protocol",
    "isrcheck.model.actions",
    "isrcheck.model.kafka",
    "isrcheck.model.symmetry",
    # a package: its __init__ assembles the families below. Every module of a compiled package must
    # be compiled too: mypyc gives the package a __path__ under the group library's folder
    # (isrcheck/), where an interpreted submodule would not be found (tests/test_native_build.py)
    "isrcheck.invariants.properties",
    "isrcheck.invariants.properties.kinds",
    "isrcheck.invariants.properties.common",
    "isrcheck.invariants.properties.leadership",
    "isrcheck.invariants.properties.isr",
    "isrcheck.invariants.properties.durability",
    "isrcheck.invariants.properties.reassignment",
    "isrcheck.invariants.properties.steps",
    "isrcheck.invariants.properties.witnesses",
    "isrcheck.peers.kafka_specification.model",
)

#: The shared library that holds the compiled code of every module above (mypyc's group).
GROUP = "isrcheck.native"

PURE_ENV = "ISRCHECK_PURE"


def pure_requested() -> bool:
    """Whether the environment asks for the pure-Python modules (``ISRCHECK_PURE=1``)."""
    return os.environ.get(PURE_ENV, "").strip() not in ("", "0")


class _SourceOnlyFinder:
    """Finds the compiled modules' ``.py`` source, never their extension module."""

    @staticmethod
    def find_spec(fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> Any:
        if fullname not in COMPILED_MODULES or not path:
            return None
        loader = (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)
        for entry in path:
            spec = importlib.machinery.FileFinder(entry, loader).find_spec(fullname)
            if spec is not None:
                return spec
        return None


BUILD_RECORD = "native_build.json"


def stale_sources(record: str | None = None, root: str | None = None) -> list[str]:
    """Compiled modules whose ``.py`` source differs from the one they were compiled from.

    An editable install keeps the extension modules beside the source; after an edit they would
    silently run the old code. ``setup.py`` records each source's digest at build time; a module
    is stale when its source no longer matches (none are when nothing was compiled).
    """
    import hashlib
    import json

    here = os.path.dirname(os.path.abspath(__file__))
    root = root or os.path.dirname(here)  # the checkout, in an editable install
    try:
        with open(record or os.path.join(here, BUILD_RECORD), encoding="utf-8") as f:
            modules = json.load(f)["modules"]
        recorded = [(name, m["source"], m["sha256"]) for name, m in modules.items()]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    stale = []
    for name, source, digest in recorded:
        try:  # sources are read, never imported: importing a package may import compiled modules
            with open(os.path.join(root, source), "rb") as f:
                current = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            continue  # not an editable install (or the file moved): nothing to compare with
        if current != digest:
            stale.append(name)
    return stale


_STALE: list[str] = []


def choose_build() -> None:
    """Called once by the package root: the source when asked for (ISRCHECK_PURE=1) or when the
    compiled modules are stale, with a one-line warning in the second case."""
    if pure_requested():
        install_pure_finder()
        return
    stale = stale_sources()
    if stale:
        _STALE.extend(stale)
        install_pure_finder()
        sys.stderr.write(f"warning: the compiled modules are older than their source ({', '.join(stale[:3])}"
                         f"{', ...' if len(stale) > 3 else ''} changed): running the Python source; "
                         "`make` rebuilds them\n")


def compiled_wanted() -> bool:
    """Whether this process may use compiled code: neither asked for the source (ISRCHECK_PURE=1)
    nor running it because the compiled modules are stale."""
    return not pure_requested() and not _STALE


def install_pure_finder() -> None:
    """Make the compiled modules import from source in this process (idempotent)."""
    if not any(f is _SourceOnlyFinder for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceOnlyFinder)


def build() -> str:
    """``"compiled"`` when the compiled modules are in use in this process, else ``"pure"``."""
    spec = importlib.util.find_spec("isrcheck.engine.checker")  # the loaded module's, once imported
    origin = spec.origin if spec is not None else None
    return "compiled" if origin and not origin.endswith(".py") else "pure"


def describe() -> str:
    """One line for ``--version`` and reports: which build runs, and why."""
    kind = build()
    if kind == "compiled":
        return "compiled (mypyc)"
    if pure_requested():
        return f"pure Python ({PURE_ENV}=1)"
    if _STALE:
        return f"pure Python (the compiled modules are stale: {', '.join(_STALE)} changed; run `make`)"
    return "pure Python (no compiled modules found: reinstall with `make` to build them)"
