"""Running code against the pure-Python build (ISRCHECK_PURE=1) from a test.

The compiled modules cannot be swapped out inside a process that has imported them, so the
Python source's answer is asked of a fresh interpreter. The snippet prints one JSON document.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any


def run_json(code: str, *, pure: bool, timeout: float = 600) -> Any:
    """Run ``code`` in a fresh interpreter (pure or compiled build) and parse what it prints."""
    env = dict(os.environ)
    if pure:
        env["ISRCHECK_PURE"] = "1"
    else:
        env.pop("ISRCHECK_PURE", None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)
