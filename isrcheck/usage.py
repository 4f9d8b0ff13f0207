"""Usage errors as the project prints every input error: one line ``error: ...`` on stderr, exit 2.

click's own rendering of a usage error is three lines (the usage, a "Try --help" hint, then
"Error: ..."), which breaks the promise of the command line (README, "Exit status") and the scripts
that read the first line of stderr. :func:`usage_line` is the one rendering; the ``isrcheck`` group
(:mod:`isrcheck.cli`) applies it to every usage error of every command, whatever group it is in.
"""
from __future__ import annotations

import click

__all__ = ["usage_line"]


def usage_line(e: click.UsageError) -> str:
    """The one line for a usage error. A group called without a command (click's
    ``NoArgsIsHelpError``, whose message is the whole help page) says where the commands are listed."""
    if isinstance(e, click.exceptions.NoArgsIsHelpError):
        path = e.ctx.command_path if e.ctx is not None else "isrcheck"
        return f"error: missing command (`{path} --help` lists them)"
    return "error: " + " ".join(e.format_message().split())
