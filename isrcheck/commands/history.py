"""``isrcheck history``: specs/12-history.md regenerated from specs/history.toml, the manifest and runs
(:mod:`isrcheck.analyses.history`).
"""
from __future__ import annotations

import click

from isrcheck.commands.options import print_or_write, show_progress
from isrcheck.render import terminal


@click.command(short_help="Regenerate Kafka's bug history page (specs/12-history.md).")
@click.option("--write", "path", metavar="FILE", help="Write the page to FILE instead of printing it.")
def history(path: str | None) -> None:
    """Print (or --write) the page of Kafka's bugs the model reproduces with `reintroduce`: the
    classification of every bug of specs/history.toml, and per reproduced bug its manifest pair and
    shortest counterexample."""
    from isrcheck.analyses.history import render_history

    with terminal.progress_status(show_progress(False), "history"):
        text = render_history()
    print_or_write(text, path, newline=False)
