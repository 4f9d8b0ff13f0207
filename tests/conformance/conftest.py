"""Shared helpers for the conformance tests: exported traces of small models, a CLI runner that
registers the conformance commands on a group of its own (the lead registers them in isrcheck.cli),
and action parsing."""
from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from isrcheck.inputs import manifest
from isrcheck.commands.conform import conform, traces, validate
from isrcheck.conformance.export import counterexample
from isrcheck.conformance.traces import Trace



@click.group()
def cli_group() -> None:
    """The conformance commands, as the lead will register them."""


cli_group.add_command(conform)
cli_group.add_command(validate)
cli_group.add_command(traces)


@pytest.fixture
def run_cli():
    runner = CliRunner()

    def go(*args: str):
        return runner.invoke(cli_group, list(args), catch_exceptions=False)

    return go


_CE: dict[str, Trace] = {}


@pytest.fixture(scope="session")
def ce_trace():
    """``ce_trace(name)``: the shortest counterexample of a manifest model (cached for the session)."""

    def get(name: str) -> Trace:
        if name not in _CE:
            t = counterexample(manifest.resolve(name, None))
            assert t is not None, f"{name} has no counterexample"
            _CE[name] = t
        return _CE[name]

    return get
