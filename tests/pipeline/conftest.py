"""Fixtures for the pipeline tests: ONE local SparkSession for the whole session, a CLI runner with
the ``spark`` group, and small helpers.

Tests that run Spark jobs are marked ``spark``; they are skipped (not failed) on a machine without
pyspark or Java 17 — ``scripts/ensure-java.sh`` and the ``spark`` extra provide both.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import Cli

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


@pytest.fixture
def cli() -> Cli:
    return Cli()


def run_dir(tmp_path: Path, name: str = "run") -> Path:
    return tmp_path / name
