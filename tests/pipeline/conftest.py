"""Fixtures for the pipeline tests: ONE local SparkSession for the whole session, a CLI runner with
the ``spark`` group, and small helpers.

Tests that run Spark jobs are marked ``spark``; they are skipped (not failed) on a machine without
pyspark or Java 17 — ``scripts/ensure-java.sh`` and the ``spark`` extra provide both.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

HAVE_PYSPARK = importlib.util.find_spec("pyspark") is not None


def _java_ok() -> bool:
    from isrcheck.pipeline.session import MIN_JAVA, java_version

    v = java_version()
    return v is not None and v[0] >= MIN_JAVA


SPARK_OK = HAVE_PYSPARK and _java_ok()


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    if SPARK_OK:
        return
    skip = pytest.mark.skip(reason="needs pyspark and Java 17+ (pip install -e '.[spark]'; scripts/ensure-java.sh)")
    for item in items:
        if "spark" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def spark_session():
    """The one local SparkSession of the test session (two cores, as on CI)."""
    from isrcheck.pipeline.session import create_session

    spark = create_session("local[2]", app_name="isrcheck-tests")
    yield spark
    spark.stop()


class Cli:
    def __init__(self) -> None:
        from isrcheck.cli import main
        from isrcheck.cli_spark import spark

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


@pytest.fixture
def cli() -> Cli:
    return Cli()


def assert_one_line_error(result: Result, *fragments: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    lines = result.stderr.strip("\n").splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


def run_dir(tmp_path: Path, name: str = "run") -> Path:
    return tmp_path / name
