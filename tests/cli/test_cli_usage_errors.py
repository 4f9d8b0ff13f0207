"""click's usage errors, in every command of every group, are one line ``error: ...`` on stderr and exit 2
(isrcheck/commands/usage.py), as README's "Exit status" says; --help still prints the help and exits 0."""
from __future__ import annotations

import click
import pytest

from isrcheck.cli import main


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under ``group``, as (argv path, command)."""
    out: list[tuple[tuple[str, ...], click.Command]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        out.append((path + (name,), cmd))
        if isinstance(cmd, click.Group):
            out += _commands(cmd, path + (name,))
    return out


ALL = _commands(main)
GROUPS = [p for p, c in ALL if isinstance(c, click.Group)]


def test_the_tree_is_walked():
    paths = {" ".join(p) for p, _ in ALL}
    assert {"check", "simulate", "gate", "validate", "cluster up", "prove inductive", "spark explore"} <= paths
    assert {"cluster", "prove", "spark", "traces"} <= {" ".join(p) for p in GROUPS}


@pytest.mark.parametrize("path", [p for p, _ in ALL], ids=lambda p: " ".join(p))
def test_an_unknown_option_is_one_error_line(cli, assert_input_error, path):
    line = assert_input_error(cli(*path, "--no-such-option-at-all"), "--no-such-option-at-all")
    assert "Usage:" not in line and "Try '" not in line


@pytest.mark.parametrize("path", [()] + GROUPS, ids=lambda p: " ".join(p) or "isrcheck")
def test_an_unknown_command_and_a_missing_one_are_one_error_line(cli, assert_input_error, path):
    assert_input_error(cli(*path, "no-such-command"), "No such command 'no-such-command'")
    where = " ".join(("isrcheck",) + path)
    assert_input_error(cli(*path), f"missing command (`{where} --help` lists them)")


def test_bad_option_values_and_missing_arguments(cli, assert_input_error, small_config):
    assert_input_error(cli("check", "--max-depth", "x"), "Invalid value for '--max-depth'", "'x'")
    assert_input_error(cli("check", "--config", str(small_config), "--max-depth", "-1"), "--max-depth")
    assert_input_error(cli("gate", "--junit"), "Option '--junit' requires an argument")
    assert_input_error(cli("simulate", "--walks", "0"), "--walks")
    assert_input_error(cli("--no-such-top-level-option"), "No such option")


def test_help_is_not_an_error(cli):
    for path in ((), ("check",), ("cluster",), ("prove", "inductive")):
        res = cli(*path, "--help")
        assert res.exit_code == 0 and res.stdout.startswith("Usage: isrcheck") and res.stderr == ""
