"""Resident memory of this process and of the worker processes it forked: what the searches'
memory ceiling (``max_memory``) compares against.

Why it exists: a configuration at the largest accepted bounds grows by megabytes a second and,
without a ceiling, runs until the kernel's out-of-memory killer ends it (or the whole session)
with no verdict at all. A search given ``max_memory`` asks :func:`resident_bytes` every
:data:`CHECK_EVERY` states (or steps), and stops with ``limit_hit = "memory"`` (outcome
``incomplete``) once it is past the ceiling.

The reading must be cheap, since it sits on the hot path: ``/proc/PID/statm`` (one small read,
about 20 microseconds) rather than ``smaps_rollup`` (tens of milliseconds on a large process).
Where ``/proc`` is missing, the peak resident set of :func:`resource.getrusage` stands in for the
calling process (never less than the current one, so the ceiling still holds).

Interpreted on purpose (not in ``isrcheck.native.COMPILED_MODULES``): it subclasses
``Exception``, and it runs once every thousand states, so compiling it would gain nothing.
"""
from __future__ import annotations

import os
import resource
import sys

__all__ = ["CHECK_EVERY", "WATCH_SECONDS", "MemoryCeilingHit", "resident_bytes", "shared_bytes", "shmem_bytes", "over"]

#: states (or simulation steps) between two readings: at 100,000 states a second, ten readings a
#: second, each far cheaper than the thousand states between them; a model stores about 100-200
#: bytes per state, so the ceiling is passed by well under a megabyte before it is noticed
CHECK_EVERY = 1024

#: seconds between two readings while the parallel checker's coordinator waits for its workers
WATCH_SECONDS = 0.5

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class MemoryCeilingHit(Exception):
    """Raised inside the parallel checker's coordinator to abandon a level when the ceiling is
    passed; the search catches it and reports ``limit_hit = "memory"``."""


def _statm_pages(pid: int | None, field: int) -> int | None:
    """Field ``field`` of ``/proc/PID/statm`` (pages; 1 resident, 2 shared) of process ``pid``
    (this process when None), or None where it cannot be read (no /proc, the process has exited):
    the one reading of statm, whose callers differ only in the field and the fallback."""
    path = f"/proc/{'self' if pid is None else pid}/statm"
    try:
        with open(path, "rb") as f:
            fields = f.read().split()
        return int(fields[field])
    except (OSError, IndexError, ValueError):
        return None


def resident_bytes(pid: int | None = None) -> int:
    """The resident set of process ``pid`` (this process when None), in bytes; 0 when another
    process's cannot be read (it has exited)."""
    pages = _statm_pages(pid, 1)
    if pages is not None:
        return pages * _PAGE
    if pid is not None:
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def shared_bytes(pid: int | None = None) -> int:
    """The part of :func:`resident_bytes` that is shared memory or mapped files (``statm``'s third
    field): the parallel checker's fingerprint table, which every worker touches, is counted once
    rather than in each of them. 0 where it cannot be read."""
    pages = _statm_pages(pid, 2)
    return 0 if pages is None else pages * _PAGE


def shmem_bytes(pid: int | None = None) -> int:
    """The shared memory (``RssShmem``) resident in process ``pid``: the pages of the parallel
    checker's fingerprint table this process touched, which its peak resident set includes but
    which are one piece of memory for all processes. 0 where it cannot be read."""
    path = f"/proc/{'self' if pid is None else pid}/status"
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(b"RssShmem:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def over(limit: int | None, used: int | None = None) -> bool:
    """Whether resident memory (``used``, else this process's) is past ``limit`` (None: no limit)."""
    if limit is None:
        return False
    return (resident_bytes() if used is None else used) > limit
