"""Where a process reaches another node: its registered address, unless a route overrides it.

Why: the nemesis (:mod:`isrcheck.impl.rigs.nemesis_proxy`) sits between processes as one proxy per (source,
destination) link, so each process must reach each peer at *its own* link's port, while the store
keeps the peer's real registration (clients, ``status`` and other tools still see the truth). The
launcher puts the routes in the process's environment, ``ISRCHECK_ROUTES`` = a JSON object
``{"broker-2": ["127.0.0.1", 40123], "controller-1": [...]}`` (node name -> address); without it
nothing changes. Only loopback addresses are accepted: a malformed or non-loopback route is ignored
with one warning line, never a crash of the process.
"""
from __future__ import annotations

import functools
import ipaddress
import json
import logging
import os

ENV = "ISRCHECK_ROUTES"

__all__ = ["ENV", "encode", "parse", "route"]

log = logging.getLogger(__name__)


def _loopback(host: object) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return False


def parse(text: str) -> dict[str, tuple[str, int]]:
    """The routes of ``text``; ValueError names the first bad entry."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("routes must be a JSON object of node -> [host, port]")  # noqa: TRY004 - bad input
    out: dict[str, tuple[str, int]] = {}
    for name, addr in data.items():
        if not (isinstance(addr, list) and len(addr) == 2 and isinstance(addr[1], int)
                and not isinstance(addr[1], bool) and 0 < addr[1] < 65536 and _loopback(addr[0])):
            raise ValueError(f"route {str(name)[:40]!r}: expected [loopback host, port], got {str(addr)[:80]}")
        out[str(name)] = (str(addr[0]), addr[1])
    return out


def encode(routes: dict[str, tuple[str, int]]) -> str:
    return json.dumps({k: [h, p] for k, (h, p) in sorted(routes.items())})


@functools.cache
def _routes() -> dict[str, tuple[str, int]]:
    text = os.environ.get(ENV, "")
    if not text:
        return {}
    try:
        return parse(text)
    except ValueError as e:
        log.warning("ignoring $%s: %s", ENV, str(e)[:200])
        return {}


def route(node: str, addr: tuple[str, int]) -> tuple[str, int]:
    """The address at which this process reaches ``node`` (registered at ``addr``)."""
    return _routes().get(node, addr)
