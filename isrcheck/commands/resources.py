"""Resource guards of the long-running commands (`check`, `simulate`, `run`): a memory ceiling,
a cap on a scenario's length, and progress that shows in a pipe too.

Why: a configuration at the largest accepted bounds grows by megabytes a second; in a pipe it
printed nothing, and nothing bounded it, so it ran until the out-of-memory killer ended it with
no verdict. Now every such run has a ceiling on resident memory (a default one too), stops
cleanly at it with the ``incomplete`` verdict (exit 1) and one line saying which limit was hit
and how to raise it, and reports progress on stderr whether or not stderr is a terminal.

The sizes and counts read here are user input: a bad one is a :class:`ConfigError` (one line
``error: ...``, exit 2), never a traceback.
"""
from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from isrcheck.engine.core import Progress
from isrcheck.engine.memory import resident_bytes
from isrcheck.model.config import ConfigError
from isrcheck.render import terminal

__all__ = ["MEMORY_ENV", "STEPS_ENV", "PROGRESS_ENV", "DEFAULT_MAX_STEPS", "Ceiling", "parse_size",
           "default_memory_ceiling", "memory_ceiling", "memory_option", "step_cap", "steps_option",
           "progress", "PipedProgress", "report_limit", "format_size"]

MEMORY_ENV = "ISRCHECK_MAX_MEMORY"
STEPS_ENV = "ISRCHECK_MAX_STEPS"
PROGRESS_ENV = "ISRCHECK_PROGRESS_SECONDS"

_GIB = 1 << 30
#: the default ceiling never exceeds this: the largest model of the manifest peaks at 0.65 GiB and
#: the peer transcription's 10 million states at 1.43 GiB (specs/07-checker.md), so 8 GiB leaves
#: five times the room any pinned run needs, and a runaway run stops within minutes
DEFAULT_CAP = 8 * _GIB
#: ... nor this share of the memory the process may use (physical memory, or a cgroup's limit):
#: the rest keeps the machine, and whoever else works on it, out of swap and away from the OOM killer
DEFAULT_SHARE = 0.75
#: steps a scenario (or trace file) replayed by `run` may have: about 15 KB of states and table per
#: step, so 10,000 steps stay near 150 MB; the longest trace the tools write (a simulation walk)
#: is far shorter
DEFAULT_MAX_STEPS = 10_000
#: seconds between two progress lines in a pipe: often enough to show a run is alive, rarely
#: enough not to flood a CI log
DEFAULT_PROGRESS_SECONDS = 5.0

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_NO_LIMIT = {"0", "none", "off", "unlimited"}
MIN_CEILING = 1 << 20  # 1 MiB: the smallest ceiling taken


@dataclass(frozen=True)
class Ceiling:
    """A memory ceiling in bytes (None: no ceiling) and where it came from, for the message."""

    limit: int | None
    source: str


def format_size(n: int) -> str:
    """``1.0 MiB``, ``8.0 GiB``: binary units, one decimal."""
    for unit, size in (("TiB", 1 << 40), ("GiB", _GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def parse_size(text: str, where: str) -> int | None:
    """``4G``, ``512M``, ``1.5GiB``, ``65536`` (bytes) -> bytes; ``0``, ``none``, ``off`` or
    ``unlimited`` -> None (no ceiling). Units are binary (``1K`` is 1024 bytes)."""
    raw = text.strip()
    if raw.lower() in _NO_LIMIT:
        return None
    m = _SIZE.fullmatch(raw)
    if m is None:
        raise ConfigError(f"{where}: expected a size such as 4G, 512M or 1.5GiB, or 0 or none for no "
                          f"ceiling, got {text[:40]!r}")
    n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n < MIN_CEILING:
        # no run of this program fits in less (the interpreter alone is tens of MiB), and a run that ends
        # before its first memory check would never enforce it: `check --max-memory 1` once said HOLDS.
        # A unit left off (1 for 1G) is the likely mistake, so it is refused, not taken literally
        raise ConfigError(f"{where}: a ceiling must be at least 1 MiB, less than any run uses (0 or none: no "
                          f"ceiling; did you leave off a unit, as in 4G?), got {text[:40]!r}")
    return n


def _cgroup_limit() -> int | None:
    """The memory limit of this process's cgroup (v2), if it has one."""
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            raw = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(raw) if raw.isdigit() else None


def default_memory_ceiling() -> int:
    """The smaller of 8 GiB and 75% of the memory available (physical, or the cgroup's limit)."""
    available: int | None = None
    try:
        available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        pass
    group = _cgroup_limit()
    if group is not None and (available is None or group < available):
        available = group
    if not available or available <= 0:
        return DEFAULT_CAP
    return min(DEFAULT_CAP, int(available * DEFAULT_SHARE))


def memory_ceiling(option: str | None) -> Ceiling:
    """The ceiling of a run: ``--max-memory``, else ``ISRCHECK_MAX_MEMORY``, else the default."""
    if option is not None:
        return Ceiling(parse_size(option, "--max-memory"), "--max-memory")
    env = os.environ.get(MEMORY_ENV)
    if env is not None and env.strip():
        return Ceiling(parse_size(env, MEMORY_ENV), MEMORY_ENV)
    return Ceiling(default_memory_ceiling(), "the default, the smaller of 75% of memory and 8 GiB")


F = TypeVar("F", bound=Callable[..., Any])


def memory_option(f: F) -> F:
    return click.option(
        "--max-memory", "max_memory", metavar="SIZE",
        help=f"Stop (incomplete, exit 1) once resident memory passes SIZE (4G, 512M; 0 or none: no ceiling). "
             f"Default: ${MEMORY_ENV}, else the smaller of 75% of physical memory and 8 GiB.")(f)


def step_cap(option: int | None) -> int | None:
    """The most steps `run` replays: ``--max-steps``, else ``ISRCHECK_MAX_STEPS``, else 10,000;
    0 means no cap (None)."""
    if option is None:
        env = os.environ.get(STEPS_ENV)
        if env is None or not env.strip():
            return DEFAULT_MAX_STEPS
        if not env.strip().isdigit():
            raise ConfigError(f"{STEPS_ENV}: expected a number of steps (0: no cap), got {env[:40]!r}")
        option = int(env.strip())
    return option or None


def steps_option(f: F) -> F:
    return click.option(
        "--max-steps", "max_steps", type=click.IntRange(min=0), metavar="N",
        help=f"Refuse a scenario of more than N steps (default: ${STEPS_ENV}, else {DEFAULT_MAX_STEPS:,}; "
             "0: no cap).")(f)


def report_limit(ceiling: Ceiling) -> None:
    """The one line on stderr saying that the memory ceiling stopped the run, and how to raise it."""
    size = format_size(ceiling.limit) if ceiling.limit is not None else "?"
    terminal.progress_line(
        f"stopped: resident memory passed the ceiling of {size} ({ceiling.source}), so nothing is proved; "
        f"raise it with --max-memory SIZE or {MEMORY_ENV}=SIZE (0 or none: no ceiling)")


def progress_seconds() -> float:
    """How often a piped progress line is printed: ISRCHECK_PROGRESS_SECONDS, else 5 s."""
    return _progress_seconds()


def _progress_seconds() -> float:
    raw = os.environ.get(PROGRESS_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_PROGRESS_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise ConfigError(f"{PROGRESS_ENV}: expected a number of seconds (0 or more), got {raw[:40]!r}")
    return value


def report_every() -> float:
    """How often the checker should call its progress callback: its usual half second, or more
    often when the piped lines are asked for more often (``ISRCHECK_PROGRESS_SECONDS=0``: every
    time the checker looks at the clock)."""
    return min(0.5, _progress_seconds())


class PipedProgress:
    """The checker's progress callback when stderr is not a terminal: a plain line on stderr at
    most every ``every`` seconds (the first one ``every`` seconds after the start, so a short run
    prints none), with the figures a terminal's status line shows."""

    def __init__(self, label: str, every: float, queue: str = "queue", limit: int | None = None) -> None:
        self.label = label
        self.every = every
        self.queue = queue  # what Progress.queue counts: states queued, or a simulation's walks left
        self.limit = limit  # the memory ceiling, shown beside the resident memory
        self._last = time.monotonic()

    def set_label(self, label: str) -> None:
        self.label = label

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if now - self._last < self.every:
            return
        self._last = now
        terminal.progress_line(f"{self.label}: {p.states:,} states  depth {p.depth}  {self.queue} {p.queue:,}  "
                               f"{p.rate:,.0f}/s  {p.seconds:.0f} s  {memory_text(self.limit)}")


@contextmanager
def progress(as_json: bool, label: str, queue: str = "queue", limit: int | None = None) -> Iterator[Any]:
    """The progress callback of a long run: a live status line on a terminal (not with --json, as
    before), plain lines on stderr otherwise (a pipe, a CI log; with --json too, as `gate` does).
    Both show the resident memory against ``limit``, the ceiling that will stop the run."""
    if terminal.is_terminal(sys.stderr):
        with terminal.progress_status(not as_json, label, lambda: memory_text(limit)) as status:
            yield status
        return
    yield PipedProgress(label, _progress_seconds(), queue, limit)


def memory_text(limit: int | None) -> str:
    """``mem 312.0 MiB of 8.0 GiB``: this process's resident memory against the ceiling (a user
    watching a long run sees how close it is to stopping ``incomplete``)."""
    used = f"mem {format_size(resident_bytes())}"
    return used + (f" of {format_size(limit)}" if limit else " (no ceiling)")
