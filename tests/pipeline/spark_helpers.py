"""Plain helpers shared by the pipeline tests, importable by a name unique across tests/ (a
``from conftest import`` would pick whichever conftest.py pytest imported first)."""
from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner, Result


class Cli:
    def __init__(self) -> None:
        from isrcheck.cli import main
        from isrcheck.commands.spark import spark

        if "spark" not in main.commands:  # cli.py registers it; keep the tests independent of that
            main.add_command(spark)
        self.main = main
        self.runner = CliRunner()

    def __call__(self, *args: str) -> Result:
        result = self.runner.invoke(self.main, list(args), prog_name="isrcheck")
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"isrcheck {' '.join(args)} raised {result.exception!r}") from result.exception
        return result

    def json(self, *args: str) -> tuple[int, dict[str, Any]]:
        r = self(*args, "--json")
        return r.exit_code, json.loads(r.stdout)



def assert_one_line_error(result: Result, *fragments: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    lines = result.stderr.strip("\n").splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]
