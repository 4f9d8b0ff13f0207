"""A quiet install (issue 31): `make check` printed 145 lines of setuptools deprecation noise.

Two sources: pyproject's ``license`` as a TOML table (deprecated by setuptools 77; now an SPDX
string), repeated for every build step, and setuptools' "Editable installation" notice, printed on
every editable install whatever the project does (the Makefile's pip runs with
PYTHONWARNINGS=ignore). The first test reads what `make` would run; the second builds the project
and requires the build to print nothing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_every_pip_install_of_the_makefile_is_quiet():
    out = subprocess.run(["make", "-n", "-W", "pyproject.toml", "install", "PYTHON=python3"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    installs = [line for line in out.splitlines() if " pip install " in line]
    assert len(installs) >= 2, out
    for line in installs:
        words = line.split()
        command = next(i for i, word in enumerate(words) if "=" not in word)
        assert "PYTHONWARNINGS=ignore" in words[:command] and "--quiet" in words[command:], line


def test_pyproject_uses_no_deprecated_license_table():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(project["project"]["license"], str)


@pytest.mark.slow
def test_building_the_project_prints_nothing(tmp_path):
    """No deprecation of the project's own making reaches the user (warnings not silenced here)."""
    env = {**os.environ, "ISRCHECK_BUILD_PURE": "1"}
    env.pop("PYTHONWARNINGS", None)
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr
    noise = [line for line in (res.stdout + res.stderr).splitlines() if line.strip()]
    assert not noise, "\n".join(noise[:20])
    assert list(tmp_path.glob("isrcheck-*.whl"))
