"""Why a cluster process is not running, as its own log says: its last line, when that is an error.

Every process of a local cluster writes its stdout and stderr to ``<cluster dir>/<name>.log``, and
one that refuses to start (a damaged data directory, a bad configuration) ends with one line
``error: ...`` there and exit status 2. ``isrcheck cluster status`` shows that line beside a process
that is down, so a broker that refuses to start says why where the operator looks first.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["exit_error"]

_TAIL = 64 * 1024  # an error line is short; the log may be long


def exit_error(log_path: str | os.PathLike[str]) -> str | None:
    """The last line of the log at ``log_path`` if it is an ``error: ...`` line, else None."""
    path = Path(log_path)
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - _TAIL))
            tail = f.read()
    except OSError:
        return None
    lines = tail.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines and lines[-1].startswith("error: ") else None
