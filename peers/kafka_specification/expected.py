"""TLC's recorded figures (expected.toml beside this file)."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

EXPECTED_PATH = Path(__file__).with_name("expected.toml")


def load_expected(path: Path | None = None) -> dict[str, Any]:
    """The whole of expected.toml as a dict."""
    with open(path or EXPECTED_PATH, "rb") as f:
        return tomllib.load(f)


def expected(module: str, replicas: int = 2) -> dict[str, Any]:
    """TLC's figures for one module (short name) and replica count (only 2 is recorded)."""
    table = load_expected().get(f"replicas{replicas}", {})
    if module not in table:
        raise KeyError(f"no TLC figures recorded for {module!r} with {replicas} replicas")
    return dict(table[module])


def speed_rows() -> list[dict[str, Any]]:
    """TLC's recorded speed runs."""
    return [dict(r) for r in load_expected().get("speed", [])]
