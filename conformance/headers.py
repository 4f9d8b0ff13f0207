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
