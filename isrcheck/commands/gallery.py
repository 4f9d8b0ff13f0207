"""``isrcheck gallery``: specs/10-weaknesses.md regenerated from runs (:mod:`isrcheck.analyses.gallery`).
"""
from __future__ import annotations

import click

from isrcheck.commands.options import print_or_write, show_progress
from isrcheck.render import terminal


@click.command(short_help="Regenerate the known-weakness gallery (specs/10-weaknesses.md) from runs.")
@click.option("--write", "path", metavar="FILE", help="Write the gallery to FILE instead of printing it.")
def gallery(path: str | None) -> None:
    """Run every gallery model and print (or --write) the Markdown write-up with its counterexamples."""
    from isrcheck.analyses.gallery import render_gallery

    with terminal.progress_status(show_progress(False), "gallery"):
        text = render_gallery()
    print_or_write(text, path, newline=True)
