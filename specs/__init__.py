"""The shared vocabulary, as data: read these files, do not import protocol logic from here.

Both the model and the reference implementation read the action vocabulary and the observation
schema from this package's TOML files; this module only locates and parses them.
"""
from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any


def load(name: str) -> dict[str, Any]:
    """Parse ``specs/<name>`` (a TOML file shipped with the package)."""
    with resources.files(__name__).joinpath(name).open("rb") as f:
        return tomllib.load(f)


def text(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
