"""Consoles and progress on the terminal: where every command's output goes, and how a long run
shows it is alive (a live status line on a terminal, plain lines in a pipe or a CI log)."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

from isrcheck.engine.checker import Progress


def make_console(stderr: bool = False) -> Console:
    """A console; when the stream is not a terminal, wide enough that trace tables do not wrap."""
    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not (hasattr(stream, "isatty") and stream.isatty()) and "COLUMNS" not in os.environ:
        width = 200
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class StatusLine:
    """The checker's progress callback, drawing on a rich status line; ``label`` may change."""

    def __init__(self, status: Any, label: str, extra: Callable[[], str] | None = None) -> None:
        self._status = status
        self.label = label
        self._extra = extra  # more figures for the line, e.g. memory against the ceiling

    def set_label(self, label: str) -> None:
        self.label = label
        self._status.update(f"{label}: starting")

    def __call__(self, p: Progress) -> None:
        self._status.update(
            f"{self.label}: {p.states:,} states  depth {p.depth}  queue {p.queue:,}  "
            f"{p.rate:,.0f}/s  {p.seconds:.0f}s" + (f"  {self._extra()}" if self._extra is not None else "")
        )


@contextmanager
def progress_status(enabled: bool, label: str, extra: Callable[[], str] | None = None) -> Iterator[StatusLine | None]:
    """A live, transient status line on stderr; yields the checker's progress callback (or None).
    ``extra``: more figures appended to each update (``check`` and ``simulate``: the memory)."""
    if not enabled:
        yield None
        return
    console = Console(stderr=True, highlight=False)
    with console.status(f"{label}: starting") as status:
        yield StatusLine(status, label, extra)


def progress_line(text: str) -> None:
    """One plain progress line on stderr, flushed at once: what a terminal's status line shows,
    for CI logs and pipes (stderr not a terminal), where a status line would print nothing."""
    stream = sys.stderr
    stream.write(text + "\n")
    stream.flush()
