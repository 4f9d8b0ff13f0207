"""The shared vocabulary, as data: read these files, do not import protocol logic from here.

The model, the reference implementation, conformance, the pipeline and the command line all read
this package's TOML files. This module only locates and parses them; beside it, one module per
file loads and checks it, and holds what every side says the same way: ``actions`` (the action
vocabulary, argument kinds, the text and JSON forms of an action), ``observation`` (the schema's
validator), ``manifest`` (the named models), ``weaknesses`` (the gallery's list), ``protocol``
(generations, reassignment steps), ``properties`` (every property's name, kind, family and
description). They import nothing from the project outside this package.
"""
from __future__ import annotations

import tomllib
from collections.abc import Callable
from importlib import resources
from typing import Any, TypeVar

T = TypeVar("T")


def load(name: str) -> dict[str, Any]:
    """Parse ``specs/<name>`` (a TOML file shipped with the package)."""
    with resources.files(__name__).joinpath(name).open("rb") as f:
        return tomllib.load(f)


def text(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def listed_once(items: tuple[T, ...], label: Callable[[T], str], error: type[Exception], source: str) -> tuple[T, ...]:
    """``items`` unchanged, after checking that no two share a ``label`` (a name listed twice in a
    data file is one ``error`` line naming the file and the entry)."""
    seen: set[str] = set()
    for x in items:
        name = label(x)
        if name in seen:
            raise error(f"{source}: {name} is listed twice")
        seen.add(name)
    return items
