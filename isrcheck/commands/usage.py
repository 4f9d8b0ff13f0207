"""Usage errors as the project prints every input error: one line ``error: ...`` on stderr, exit 2.

click's own rendering of a usage error is three lines (the usage, a "Try --help" hint, then
"Error: ..."), which breaks the promise of the command line (README, "Exit status") and the scripts
that read the first line of stderr. :func:`usage_line` is the one rendering of a usage error and
:func:`error_line` of an input error; :class:`OneLineErrors` (the ``isrcheck`` group of
:mod:`isrcheck.cli` and the command groups) and :func:`errors_as_lines` (single commands) apply
them, so that every command, whatever group it is in, reports its errors the same way.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["OneLineErrors", "error_line", "errors_as_lines", "usage_line"]

F = TypeVar("F", bound=Callable[..., Any])


def usage_line(e: click.UsageError) -> str:
    """The one line for a usage error. A group called without a command (click's
    ``NoArgsIsHelpError``, whose message is the whole help page) says where the commands are listed."""
    if isinstance(e, click.exceptions.NoArgsIsHelpError):
        path = e.ctx.command_path if e.ctx is not None else "isrcheck"
        return f"error: missing command (`{path} --help` lists them)"
    return "error: " + " ".join(e.format_message().split())


def error_line(e: BaseException | str) -> str:
    """The one line for an input error: its message with every run of white space made one space."""
    return "error: " + " ".join(str(e).split())


class OneLineErrors(click.Group):
    """A command group whose subcommands' usage errors and input errors (``errors``, set by a
    subclass) end as one line ``error: ...`` and exit status 2; :meth:`report` may say more."""

    errors: tuple[type[BaseException], ...] = ()

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # a subcommand's (or its group's) options and arguments
            click.echo(usage_line(e), err=True)
            ctx.exit(2)
        except self.errors as e:
            self.report(ctx, e)
            ctx.exit(2)

    def report(self, ctx: click.Context, e: BaseException) -> None:
        click.echo(error_line(e), err=True)


def errors_as_lines(*errors: type[BaseException]) -> Callable[[F], F]:
    """A command's own input errors (``errors``) as one line ``error: ...`` and exit status 2."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except errors as e:
                click.echo(error_line(e), err=True)
                raise click.exceptions.Exit(2) from None

        return wrapper  # type: ignore[return-value]

    return decorate
