"""Loading a designer's protocol variant: ``--variant module:attr``.

A variant is Python code the user chose to run (configurations and traces are data and are never
executed). ``attr`` names either a :class:`~isrcheck.model.protocol.Protocol` subclass, which is
instantiated with the configuration, or a function ``config -> Protocol``. The module is imported
by name (from the current directory or the Python path) or from a file path ``path/to/file.py``.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path

from isrcheck.model.config import Config, ConfigError
from isrcheck.model.protocol import Protocol

ProtocolFactory = Callable[[Config], Protocol]


class VariantError(ConfigError):
    """A variant that cannot be loaded; one line for the user."""


def _import(module: str):
    if module.endswith(".py") or "/" in module:
        path = Path(module)
        if not path.is_file():
            raise VariantError(f"variant file {module} does not exist")
        spec = importlib.util.spec_from_file_location(f"isrcheck_variant_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: the current directory can hold the variant
    return importlib.import_module(module)


def load_variant(text: str) -> ProtocolFactory:
    """Resolve ``module:attr`` to a factory building the variant's Protocol for a configuration."""
    module, sep, attr = text.rpartition(":")
    if not sep or not module or not attr:
        raise VariantError(f"--variant expects MODULE:ATTR (e.g. my_variants:EagerElection), got {text!r}")
    try:
        mod = _import(module)
    except VariantError:
        raise
    except Exception as e:  # the user's module failed to import: say why, in one line
        raise VariantError(f"cannot import variant module {module!r}: {type(e).__name__}: {e}") from None
    try:
        obj = getattr(mod, attr)
    except AttributeError:
        raise VariantError(f"variant module {module!r} has no attribute {attr!r}") from None
    if inspect.isclass(obj):
        if not issubclass(obj, Protocol):
            raise VariantError(f"{text} is a class but not a subclass of isrcheck.model.protocol.Protocol")
        return obj
    if callable(obj):
        def factory(cfg: Config) -> Protocol:
            made = obj(cfg)
            if not isinstance(made, Protocol):
                raise VariantError(f"{text} returned {type(made).__name__}, not a Protocol")
            return made
        return factory
    raise VariantError(f"{text} is neither a Protocol subclass nor a function returning one")


def variant_name(factory: ProtocolFactory, cfg: Config) -> str:
    return getattr(factory, "name", None) or factory(cfg).name
