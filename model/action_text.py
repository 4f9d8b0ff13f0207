"""The model's actions in the vocabulary's written forms: ``Fetch(2, 0)`` and ``{"name", "args"}``.

Reading and writing the forms is the shared vocabulary's (:mod:`isrcheck.specs.actions`: nothing
is evaluated, only integers and lists of integers get through, the arity is the declared one);
this module only makes the model's :class:`~isrcheck.model.actions.Action` of what it reads, since
specs/ imports nothing from the model. ``str(action)`` is the text form, and
``parse(format_action(a)) == a``. Errors are :class:`~isrcheck.specs.actions.ActionSyntaxError`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from isrcheck.specs.actions import action_json, read_json, read_text

from .actions import Action

__all__ = ["format_action", "from_json", "parse", "parse_all", "to_json"]


def parse(text: str) -> Action:
    """Parse ``Name(arg, ...)``; raises ``ActionSyntaxError`` (a ValueError) on any problem."""
    return Action(*read_text(text))


def parse_all(texts: Iterable[str]) -> list[Action]:
    return [parse(t) for t in texts]


def format_action(action: Action) -> str:
    """The canonical text of ``action`` (the same as ``str(action)``)."""
    return str(action)


def to_json(action: Action) -> dict[str, Any]:
    """``{"name": ..., "args": [...]}`` with tuples as lists."""
    return action_json(action.name, action.args)


def from_json(obj: Mapping[str, Any]) -> Action:
    """The inverse of :func:`to_json`, with the same checks as :func:`parse`."""
    return Action(*read_json(obj))
