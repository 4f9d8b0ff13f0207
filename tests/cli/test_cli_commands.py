"""The top group's commands (isrcheck/cli.py): each imported only when it runs or a help page lists
it, so that `isrcheck check` does not pay for the cluster, the provers and the conformance side."""
from __future__ import annotations

import json
import subprocess
import sys

import click
from click.testing import CliRunner

from isrcheck.cli import COMMANDS, main


def test_every_listed_command_resolves_to_a_command_of_that_name() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
    assert main.get_command(ctx, "no-such-command") is None


def test_an_unknown_command_is_one_line() -> None:
    result = CliRunner().invoke(main, ["no-such-command"], prog_name="isrcheck")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == ["error: No such command 'no-such-command'."]


def _modules_after(args: list[str]) -> set[str]:
    code = ("import sys, json\nfrom isrcheck.cli import main\n"
            "try:\n    main.main(args=sys.argv[1:], prog_name='isrcheck', standalone_mode=False)\n"
            "except SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('isrcheck'))))")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_a_command_imports_its_own_module_and_not_the_others() -> None:
    loaded = _modules_after(["list"])
    assert "isrcheck.commands.gate" in loaded
    for other in ("isrcheck.commands.cluster", "isrcheck.commands.prove", "isrcheck.commands.conform",
                  "isrcheck.commands.spark", "isrcheck.commands.check"):
        assert other not in loaded, other
