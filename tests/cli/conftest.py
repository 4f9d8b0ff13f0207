"""Shared fixtures for the command-line tests: a runner, small configs and a controlled manifest.

The CLI tests do not depend on the contents of specs/models.toml (which changes as the model
grows): ``fake_manifest`` swaps in a manifest of tiny models whose expectations are pinned from
a run of the checker made when the session starts.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from shared import to_toml

from isrcheck.inputs import manifest
from isrcheck.cli import main
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping
from isrcheck.specs.manifest import ModelEntry, parse_manifest

SMALL = {"brokers": 3, "max_records": 1}
SMALL_CRASH = {"brokers": 3, "max_records": 1, "faults": {"crashes": 1}}
SMALL_RF2 = {"brokers": 2, "replication_factor": 2, "max_records": 1}




class Cli:
    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str) -> Result:
        result = self.runner.invoke(main, list(args), prog_name="isrcheck")
        # Anything but a clean exit is an escaped exception, i.e. a traceback for the user.
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"isrcheck {' '.join(args)} raised {result.exception!r}") from result.exception
        return result

    def json(self, *args: str) -> tuple[int, dict[str, Any]]:
        result = self(*args)
        return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def cli() -> Cli:
    return Cli()


def _assert_input_error(result: Result, *fragments: str) -> str:
    """Exit 2 with one line ``error: ...`` on stderr, nothing on stdout, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    err = result.stderr
    assert "Traceback" not in err and "Traceback" not in result.stdout
    assert result.stdout == ""
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


@pytest.fixture
def assert_input_error():
    """``assert_input_error(result, *fragments)``: exit 2, one ``error:`` line containing each fragment."""
    return _assert_input_error


@pytest.fixture
def small_config(tmp_path: Path) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(to_toml(SMALL))
    return p


@pytest.fixture
def crash_config(tmp_path: Path) -> Path:
    p = tmp_path / "crash.toml"
    p.write_text(to_toml(SMALL_CRASH))
    return p


def _run(raw: dict[str, Any]):
    return Checker(build_model(from_mapping(raw))).run()


def _model_toml(name: str, description: str, gate: str, expect: str, raw: dict[str, Any], **pins: Any) -> str:
    """One ``[[model]]`` of a manifest: its fields, what it pins (``states``, ``property``, ...) and its config."""
    pinned = "".join(f"{key} = {json.dumps(value)}\n" for key, value in pins.items())
    return (f'[[model]]\nname = "{name}"\ndescription = "{description}"\ngate = "{gate}"\nexpect = "{expect}"\n'
            f"{pinned}[model.config]\n{to_toml(raw, 'model.config.')}")


@pytest.fixture(scope="session")
def fake_manifest_entries() -> list[ModelEntry]:
    tiny = _run(SMALL)
    crash = _run(SMALL_CRASH)
    assert tiny.outcome == "success", tiny
    assert crash.outcome == "safety_failure", crash
    v = crash.violations[0]
    text = "\n".join([
        _model_toml("tiny", "Three brokers, one write.", "default", "success", SMALL, states=tiny.distinct_states),
        _model_toml("tiny-crash", "Three brokers, one write, one crash.", "default", "safety_failure", SMALL_CRASH,
                    property=v.property, length=v.length),
        _model_toml("tiny-rf2", "Two brokers, only with --all.", "all", "success", SMALL_RF2),
    ])
    import tomllib

    return parse_manifest(tomllib.loads(text), manifest.MODEL_READER, "fake.toml")


@pytest.fixture
def fake_manifest(monkeypatch: pytest.MonkeyPatch, fake_manifest_entries) -> list[ModelEntry]:
    entries = list(fake_manifest_entries)
    monkeypatch.setattr(manifest, "load", lambda: list(entries))
    return entries


@pytest.fixture
def crashing_rf2(monkeypatch: pytest.MonkeyPatch) -> None:
    """`gate` crashes while building the model of tiny-rf2 (the fake manifest's only model with two
    brokers): one broken model among working ones."""
    import isrcheck.commands.gate as gate_module

    real = gate_module.build_model

    def build(cfg, symmetry=None, **kwargs):
        if cfg.brokers == 2:
            raise RuntimeError("boom")
        return real(cfg, symmetry=symmetry, **kwargs)

    monkeypatch.setattr(gate_module, "build_model", build)
