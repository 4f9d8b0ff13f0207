"""Loading a designer's protocol variant: ``--variant module:attr``.

A variant is Python code the user chose to run (configurations and traces are data and are never
executed). ``attr`` names either a :class:`~isrcheck.model.protocol.Protocol` subclass, which is
instantiated with the configuration, or a function ``config -> Protocol``. The module is imported
by name (from the current directory or the Python path) or from a file path ``path/to/file.py``.

Every command that runs the model loads variants here (check, diff, simulate, run, traces export,
conform, prove selectors, the Spark commands; ``gate --variant``). The Protocol a factory builds is
*guarded*: a method the variant overrides that raises (anything but the model's own exceptions,
such as :class:`~isrcheck.model.selectors.NoEligibleLeader`) raises :class:`VariantFailure`
instead, which the command line reports as one line with exit status 2 (not 1, which means a
violation was found); with ``--debug`` it also prints a shortest action path to a state where the
variant raises (:func:`failure_path`, a breadth-first search replaying the model).

On Spark workers the variant is loaded again from text: :func:`resolve_variant` makes a file path
absolute and remembers the driver's current directory, so a module found there is found on the
workers too (local mode, or a cluster sharing the file system).
"""
from __future__ import annotations

import importlib
import importlib.util
import functools
import hashlib
import inspect
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isrcheck.model.config import Config, ConfigError
from isrcheck.model.extension import ExtensionError
from isrcheck.specs.actions import VocabularyError
from isrcheck.model.protocol import Protocol

ProtocolFactory = Callable[[Config], Protocol]


class VariantError(ConfigError):
    """A variant that cannot be loaded; one line for the user."""


class VariantFailure(Exception):
    """A variant's code raised while the model ran (exit status 2, one line; see :func:`report_failure`).

    Only text travels (it pickles from a parallel worker to the coordinator)."""

    def __init__(self, variant: str, method: str, error: str) -> None:
        super().__init__(variant, method, error)
        self.variant, self.method, self.error = variant, method, error

    def __str__(self) -> str:
        return f"variant {self.variant} raised in Protocol.{self.method}: {self.error}"


def is_file_path(module: str) -> bool:
    """Whether the MODULE part of ``MODULE:ATTR`` is a file path rather than a module name."""
    return module.endswith(".py") or "/" in module or os.sep in module


def import_user_module(module: str, prefix: str = "isrcheck_variant", search_path: str | None = None,
                       error: type[Exception] = VariantError, what: str = "variant file") -> Any:
    """Import the user's ``module``: a file path (loaded once per process under ``prefix_<stem>``)
    or a module name, found in ``search_path`` (a directory put first on ``sys.path``) or in the
    current directory or on the Python path. Shared by ``--variant`` and ``spark conform --mutant``."""
    if is_file_path(module):
        path = Path(module)
        if not path.is_file():
            raise error(f"{what} {module} does not exist")
        name = f"{prefix}_{path.stem}"
        known = sys.modules.get(name)
        if known is not None and getattr(known, "__file__", None) == str(path.resolve()):
            return known
        spec = importlib.util.spec_from_file_location(name, path.resolve())
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(spec.name, None)
            raise
        return mod
    if search_path is not None and search_path not in sys.path:
        sys.path.insert(0, search_path)
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: the current directory can hold the variant
    return importlib.import_module(module)


def _import(module: str, search_path: str | None = None) -> Any:
    return import_user_module(module, search_path=search_path)


def load_variant(text: str, *, search_path: str | None = None) -> ProtocolFactory:
    """Resolve ``module:attr`` to a factory building the variant's (guarded) Protocol for a configuration.

    ``search_path``: a directory to import a module name from (the driver's current directory, on a
    Spark worker; see :func:`resolve_variant`)."""
    module, sep, attr = text.rpartition(":")
    if not sep or not module or not attr:
        raise VariantError(f"--variant expects MODULE:ATTR (e.g. my_variants:EagerElection), got {text!r}")
    before = model_snapshot()
    try:
        mod = _import(module, search_path)
    except VariantError:
        raise
    except Exception as e:  # the user's module failed to import: say why, in one line
        raise VariantError(f"cannot import variant module {module!r}: {type(e).__name__}: {e}") from None
    refuse_patches(text, before)
    try:
        obj = getattr(mod, attr)
    except AttributeError:
        raise VariantError(f"variant module {module!r} has no attribute {attr!r}") from None
    if inspect.isclass(obj):
        if not issubclass(obj, Protocol):
            raise VariantError(f"{text} is a class but not a subclass of isrcheck.model.protocol.Protocol")
        return _guarded_class(obj, text)
    if callable(obj):
        def factory(cfg: Config) -> Protocol:
            _CONFIGS[text] = cfg
            before = model_snapshot()
            try:
                made = obj(cfg)
            except _PASS_THROUGH:
                raise
            except (ExtensionError, VocabularyError) as e:
                raise VariantError(f"variant {text}: {e}") from None
            except Exception as e:  # noqa: BLE001 - the variant's own code
                raise VariantFailure(text, attr, _exc_text(e)) from None
            refuse_patches(text, before)
            if not isinstance(made, Protocol):
                raise VariantError(f"{text} returned {type(made).__name__}, not a Protocol")
            return _guard_instance(made, text)
        factory.variant = text  # type: ignore[attr-defined]
        return factory
    raise VariantError(f"{text} is neither a Protocol subclass nor a function returning one")


def variant_name(factory: ProtocolFactory, cfg: Config) -> str:
    return getattr(factory, "name", None) or factory(cfg).name


# ---------------------------------------------------------------------------- guarding the variant's code
def _exc_text(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())


def _model_exception(e: BaseException) -> bool:
    """The model's own exceptions (NoEligibleLeader, IllegalTransition, ...) are part of the Protocol
    contract and pass through a guard unchanged (not a misuse of the variant's fields, which is
    the variant's error)."""
    return isinstance(e, VariantFailure) or (type(e).__module__.startswith("isrcheck.model")
                                             and not isinstance(e, ExtensionError))


_PASS_THROUGH = (VariantFailure,)
#: the configuration each variant was last built for (``--debug`` rebuilds the model from it)
_CONFIGS: dict[str, Config] = {}
_GUARDED: dict[tuple[type, str], type] = {}


def _hook_names() -> list[str]:
    return [n for n, v in inspect.getmembers(Protocol) if not n.startswith("_") and callable(v)
            and not inspect.isclass(v)]


def _wrap(fn: Callable[..., Any], text: str, method: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            out = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the variant's own code
            if _model_exception(e):
                raise
            raise VariantFailure(text, method, _exc_text(e)) from None
        if method == "extra_properties":
            out = [_guard_property(p, text) for p in out]
        return out

    return guarded


def _guard_property(p: Any, text: str) -> Any:
    def guarded(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            try:
                return fn(*args)
            except Exception as e:  # noqa: BLE001
                if _model_exception(e):
                    raise
                raise VariantFailure(text, f"extra_properties ({what} of property {p.name})", _exc_text(e)) from None

        return call

    explain = p.explain
    return p._replace(check=guarded(p.check, "check"),
                      explain=None if explain is None else guarded(explain, "explain"))


def _guarded_class(cls: type, text: str) -> type:
    """A subclass of the variant ``cls`` whose overridden hooks raise :class:`VariantFailure`."""
    key = (cls, text)
    made = _GUARDED.get(key)
    if made is not None:
        return made
    ns: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                          "__doc__": cls.__doc__, "_isrcheck_variant": text}
    for name in _hook_names():
        if name in ("generation",):
            continue
        mine = inspect.getattr_static(cls, name, None)
        base = inspect.getattr_static(Protocol, name, None)
        if mine is None or mine is base or not callable(mine) or isinstance(mine, (staticmethod, classmethod)):
            continue
        ns[name] = _wrap(getattr(cls, name), text, name)
    orig_init = cls.__init__

    def __init__(self: Any, config: Config) -> None:
        _CONFIGS[text] = config
        before = model_snapshot()
        try:
            orig_init(self, config)
        except (ExtensionError, VocabularyError) as e:  # its declared fields or actions are malformed
            raise VariantError(f"variant {text}: {e}") from None
        except Exception as e:  # noqa: BLE001
            if _model_exception(e):
                raise
            raise VariantFailure(text, "__init__", _exc_text(e)) from None
        refuse_patches(text, before)

    ns["__init__"] = __init__
    made = type(cls.__name__, (cls,), ns)
    _GUARDED[key] = made
    return made


def _guard_instance(obj: Protocol, text: str) -> Protocol:
    """Guard a Protocol a factory function returned (its class swapped for the guarded subclass)."""
    if getattr(type(obj), "_isrcheck_variant", None) is not None:
        return obj
    try:
        obj.__class__ = _guarded_class(type(obj), text)
    except TypeError:  # a compiled class that cannot change: left unguarded
        pass
    return obj


# ---------------------------------------------------------------------------- no silent no-op
#: the packages whose modules the model runs: a variant that replaces something in them has no effect
#: on the compiled build (its functions call each other natively) and is refused on both builds
_WATCHED = ("isrcheck.model", "isrcheck.engine", "isrcheck.invariants.properties")

Snapshot = dict[tuple[str, str], int]


def model_snapshot() -> Snapshot:
    """``id`` of every attribute of the model's, the engine's and the properties' modules, and of
    every attribute defined in their classes: what a variant could replace (monkeypatch)."""
    out: Snapshot = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name in _WATCHED or name.startswith(tuple(w + "." for w in _WATCHED))):
            continue
        for attr, value in list(vars(mod).items()):
            out[(name, attr)] = id(value)
            if inspect.isclass(value) and getattr(value, "__module__", None) == name:
                for key, member in list(vars(value).items()):
                    out[(f"{name}.{attr}", key)] = id(member)
    return out


def refuse_patches(text: str, before: Snapshot) -> None:
    """Refuse a variant that replaced, added or removed anything in the model's modules while it
    was imported or built: the model would not run it (the compiled build calls its own functions
    directly), so the checker would judge a protocol the designer did not write."""
    after = model_snapshot()
    changed = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    modules = {m for m, _ in before}
    added = sorted(k for k in after.keys() - before.keys() if k[0] in modules)
    removed = sorted(before.keys() - after.keys())
    for verb, keys in (("replaces", changed), ("adds", added), ("removes", removed)):
        if keys:
            where = ", ".join(f"{m}.{a}" for m, a in keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
            raise VariantError(f"variant {text} {verb} {where}: the model does not run a patched module (the "
                               "compiled build calls its own code); override a Protocol method instead (README, "
                               "\"Variants\": the hook table)")


# ---------------------------------------------------------------------------- Spark workers
def resolve_variant(text: str | None) -> tuple[str, str] | None:
    """Check ``text`` on the driver; the pair ``(variant, search_path)`` a worker loads it from
    (:func:`load_variant` with ``search_path``): a file path made absolute, and the driver's
    current directory for a module name."""
    if text is None:
        return None
    load_variant(text)
    module, _, attr = text.rpartition(":")
    if is_file_path(module):
        return f"{Path(module).resolve()}:{attr}", os.getcwd()
    return text, os.getcwd()


# ---------------------------------------------------------------------------- reporting a failure
def failure_path(failure: VariantFailure, max_states: int = 1_000_000) -> tuple[list[str], str] | None:
    """A shortest action path to a state where the variant raises, and the step that raised there
    (``"enabled actions"``, an action, or ``"properties"``); None when no configuration was recorded
    or the search gives up. The model is rebuilt from the configuration the variant was last built for
    and searched breadth first (the action order of the checker), catching the failure."""
    from isrcheck.engine.explore import BreadthFirst
    from isrcheck.invariants import build_model

    cfg = _CONFIGS.get(failure.variant)
    if cfg is None:
        return None
    try:
        model = build_model(cfg, protocol=load_variant(failure.variant)(cfg), symmetry=False)
        props = [p for p in model.properties() if p.kind == "always"]
    except VariantFailure:
        return [], "building the model"
    raised_in_properties: list[int] = []

    def check_properties(key: int, state: Any, depth: int) -> bool:
        try:
            for p in props:
                p.check(state)
        except VariantFailure:
            raised_in_properties.append(key)
            return True
        except Exception:  # noqa: BLE001 - not the variant's: not what we look for
            pass
        return False

    visit = BreadthFirst(model, max_states=max_states)
    try:
        visit.run(on_state=check_properties)
    except VariantFailure:
        key, action = visit.current
        if key is None:  # while listing the initial states
            return [], "building the model"
        return [str(a) for a in visit.path_to(key)], "enabled actions" if action is None else str(action)
    if raised_in_properties:
        return [str(a) for a in visit.path_to(raised_in_properties[0])], "properties"
    return None


def report_failure(failure: VariantFailure, debug: bool = False) -> None:
    """``error: variant V raised in Protocol.M: E`` on stderr; with ``debug`` the path to where it raised."""
    import click

    click.echo(f"error: {' '.join(str(failure).split())}", err=True)
    if not debug:
        return
    found = failure_path(failure)
    if found is None:
        click.echo("debug: no path found (the search of the variant's state graph gave up)", err=True)
        return
    path, where = found
    if where == "building the model":
        click.echo("debug: it raised while the model was built, before the initial state", err=True)
        return
    click.echo(f"debug: a shortest path to a state where it raises ({len(path)} step(s)):", err=True)
    for i, a in enumerate(path, start=1):
        click.echo(f"debug:   {i:3d}  {a}", err=True)
    click.echo("debug: there it raised while " + ("listing the enabled actions" if where == "enabled actions" else
                                                 "checking the properties" if where == "properties" else
                                                 f"taking {where}"), err=True)


_REMOTE = re.compile(r"VariantFailure: (variant .*? raised in Protocol\..*)$", re.M)


def failure_from_text(text: str) -> str | None:
    """The one line of a :class:`VariantFailure` raised on a Spark worker (in the text of the
    exception Spark reports on the driver), or None."""
    m = _REMOTE.search(text)
    return " ".join(m.group(1).split()) if m else None


# ---------------------------------------------------------------------------- command-line options
DEBUG_KEY = "isrcheck.debug"


def _set_debug(ctx: Any, _param: Any, value: bool) -> bool:
    if value:
        ctx.meta[DEBUG_KEY] = True
    return value


def debug_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--debug``: when a variant raises, also print the action path to the state where it raised."""
    import click

    return click.option("--debug", is_flag=True, expose_value=False, is_eager=True, callback=_set_debug,
                        help="When the variant raises: also print the action path to the state where it "
                             "raised.")(fn)


def variant_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--variant MODULE:ATTR`` (the value is passed as ``variant``) and ``--debug``."""
    import click

    fn = debug_option(fn)
    return click.option("--variant", metavar="MODULE:ATTR",
                        help="A protocol variant: a Protocol subclass, or a function config -> Protocol, in a "
                             "module of the current directory or the Python path, or in a file "
                             "(path/to/file.py:ATTR).")(fn)


def debug_requested(ctx: Any) -> bool:
    return bool(ctx.meta.get(DEBUG_KEY))


@dataclass(frozen=True)
class VariantSource:
    """What a report says of the variant it checked, so a reader can tell which change it was:
    its class, its docstring, the source file it came from and that file's SHA-256."""

    name: str  # the class's qualified name
    doc: str
    path: str  # "" when the module has no file (defined at the prompt, generated)
    source: str
    sha256: str


def variant_source(protocol: Protocol | None) -> VariantSource | None:
    """The source of ``protocol``'s variant (None for the model's own protocol)."""
    if protocol is None or type(protocol) is Protocol:
        return None
    cls = type(protocol)
    user = next((c for c in cls.__mro__ if c.__module__ != Protocol.__module__ and c.__dict__.get("_isrcheck_variant")
                 is None), cls)
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None) or ""
    try:
        source = Path(path).read_text(encoding="utf-8") if path else inspect.getsource(user)
    except (OSError, TypeError):
        source = ""
    return VariantSource(user.__qualname__, inspect.getdoc(user) or "", path, source,
                         hashlib.sha256(source.encode("utf-8")).hexdigest())
