"""What every file conformance reads has in its header: a configuration and the protocol generation
it was made under. Traces (:mod:`.traces`) and event logs (:mod:`.eventlog`) check them alike; each
raises its own error type, so a message names the kind of file that is wrong."""
from __future__ import annotations

from typing import Any

from isrcheck.model.config import Config, ConfigError, from_mapping


def short(v: Any) -> str:
    """A value as it goes into a one-line error: its repr, cut to 50 characters."""
    t = repr(v)
    return t if len(t) <= 50 else t[:47] + "..."


def check_envelope(h: dict[str, Any], where: str, error: type[ValueError], *, what: str, fmt: str, version: int,
                   version_name: str, keys: frozenset[str] | set[str], required: tuple[str, ...]) -> None:
    """The envelope of a header: our ``format`` and a ``version`` this isrcheck reads, only known
    keys, every ``required`` one, and ``tool`` = isrcheck with a ``tool_version``."""
    if h.get("format") != fmt:
        raise error(f"{where}: not an isrcheck {what} (format {short(h.get('format'))}, expected {fmt!r})")
    ver = h.get("version")
    if ver != version or isinstance(ver, bool):
        raise error(f"{where}: {version_name} {short(ver)} is not supported (this isrcheck reads version {version})")
    extra = sorted(set(h) - set(keys))
    if extra:
        raise error(f"{where}: unknown header key {extra[0]!r}")
    missing = sorted(k for k in required if k not in h)
    if missing:
        raise error(f"{where}: the header lacks {', '.join(missing)}")
    if h["tool"] != "isrcheck" or not isinstance(h["tool_version"], str):
        raise error(f"{where}: tool must be \"isrcheck\" with a tool_version string")


def header_config(h: dict[str, Any], where: str, error: type[ValueError]) -> Config:
    """The header's ``config`` object, validated, and its ``generation``, which must agree with it."""
    if not isinstance(h["config"], dict):
        raise error(f"{where}: config must be an object")
    try:
        cfg = from_mapping(h["config"])
    except ConfigError as e:
        raise error(f"{where}: config: {e}") from None
    if h["generation"] != cfg.generation:
        raise error(f"{where}: generation {short(h['generation'])} disagrees with the configuration's "
                    f"generation {cfg.generation.value!r}")
    return cfg
