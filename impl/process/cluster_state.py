"""cluster.json read as untrusted input, and proof that a recorded process is one the cluster started.

Why: ``cluster.json`` is a file in a directory anyone may have edited, copied or left behind.
Read carelessly, ``{}`` raised ``KeyError`` and a stray byte ``UnicodeDecodeError``; trusted
blindly, a stale file made ``cluster down`` SIGKILL whatever process had since been given one of
its PIDs. So :func:`read_state` reads it through the bounded reader (specs/inputs.py) and checks
every field it relies on, and a process is signalled only when :func:`foreign` cannot tell it
apart from the one ``cluster up`` started:

- its **start time** (field 22 of ``/proc/PID/stat``, clock ticks after boot) equals the one
  recorded when it was launched: a reused PID belongs to a process started later;
- its **environment** carries the cluster's token (``ISRCHECK_CLUSTER_TOKEN``, random per
  ``cluster up``), which only the launcher put there; ``/proc/PID/environ`` is readable only for
  one's own processes, so another user's process can never match.

Anything unprovable (no ``/proc``, a file from before these fields existed) counts as foreign.
Unknown keys are allowed: other parts of the launcher may record more.
"""
from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from isrcheck.specs.inputs import InputError, Kind, check_json_depth, read_bytes

TOKEN_ENV = "ISRCHECK_CLUSTER_TOKEN"

__all__ = ["ClusterStateError", "TOKEN_ENV", "foreign", "new_token", "read_state", "start_time", "validate_state"]


class ClusterStateError(ValueError):
    """cluster.json is missing, unreadable or malformed; the message is one line naming the file."""


def new_token() -> str:
    """A fresh token for one ``cluster up``: it marks the processes that run started."""
    return secrets.token_hex(16)


# ---------------------------------------------------------------------------- the schema
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check(ok: bool, source: str, what: str) -> None:
    if not ok:
        raise ClusterStateError(f"{source}: not a valid cluster state file: {what}")


def _check_proc(name: Any, p: Any, source: str) -> None:
    where = f"procs[{json.dumps(name)[:40]}]"
    _check(isinstance(p, dict), source, f"{where} must be an object")
    _check(_is_int(p.get("pid")) and p["pid"] > 0, source, f"{where}.pid must be a positive integer")
    _check(_is_int(p.get("port")) and 0 <= p["port"] <= 65535, source, f"{where}.port must be a port number")
    _check(isinstance(p.get("role"), str), source, f"{where}.role must be a string")
    args = p.get("args")
    _check(isinstance(args, list) and all(isinstance(a, str) for a in args), source,
           f"{where}.args must be a list of strings")
    st = p.get("start_time")
    _check(st is None or (_is_int(st) and st >= 0), source, f"{where}.start_time must be an integer")


def validate_state(data: Any, source: str) -> dict[str, Any]:
    """Check the fields the launcher reads (required: ``store``, ``brokers``, ``procs``; the rest
    typed when present) and return the object; :class:`ClusterStateError` otherwise."""
    _check(isinstance(data, dict), source, "expected a JSON object")
    missing = [k for k in ("store", "brokers", "procs") if k not in data]
    _check(not missing, source, f"missing key {missing[0]!r}" if missing else "")
    _check(isinstance(data["store"], str), source, "store must be a string")
    _check(_is_int(data["brokers"]) and data["brokers"] >= 1, source, "brokers must be a positive integer")
    procs = data["procs"]
    _check(isinstance(procs, dict), source, "procs must be an object")
    for name, p in procs.items():
        _check_proc(name, p, source)
    optional: Mapping[str, tuple[type, ...]] = {
        "zookeeper": (str, type(None)), "config": (dict, type(None)), "controllers": (int,),
        "session_timeout": (int, float), "event_log": (str, type(None)), "record_ids": (dict,),
        "token": (str,)}
    for key, types in optional.items():
        if key in data:
            v = data[key]
            _check(isinstance(v, types) and not isinstance(v, bool), source,
                   f"{key} must be {' or '.join('null' if t is type(None) else t.__name__ for t in types)}")
    _check(not _is_int(data.get("controllers", 1)) or data.get("controllers", 1) >= 1, source,
           "controllers must be a positive integer")
    _check(data.get("session_timeout", 1) > 0, source, "session_timeout must be positive")
    ids = data.get("record_ids", {})
    _check(all(_is_int(v) for v in ids.values()), source, "record_ids must map partitions to integers")
    return data


def read_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate cluster.json; a missing file is :class:`FileNotFoundError` (no cluster)."""
    source = str(path)
    if not os.path.lexists(path):
        raise FileNotFoundError(source)
    try:
        text = read_bytes(path, Kind.CLUSTER).decode("utf-8")
        check_json_depth(text, source)
    except InputError as e:
        raise ClusterStateError(str(e)) from None
    except UnicodeDecodeError as e:
        raise ClusterStateError(f"{source}: not a valid cluster state file: not UTF-8 text (byte {e.start})") \
            from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ClusterStateError(f"{source}: not a valid cluster state file: not JSON ({e})") from None
    return validate_state(data, source)


# ---------------------------------------------------------------------------- process identity
def start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/PID/stat`` (when the process started, in clock ticks after boot), or
    None when it cannot be read (no such process, no /proc)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_bytes().decode("ascii", "replace")
        return int(text.rsplit(")", 1)[1].split()[19])  # fields 3.. follow the command name's ")"
    except (OSError, IndexError, ValueError):
        return None


def _has_token(pid: int, token: str) -> bool | None:
    """Whether ``pid``'s environment carries ``token``; None when it cannot be read."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    return f"{TOKEN_ENV}={token}".encode() in environ.split(b"\0")


def foreign(pid: int, recorded_start: int | None, token: str | None) -> str | None:
    """Why the live process ``pid`` cannot be proved to be the one the cluster started, or None
    when it is (same start time and, when the cluster has a token, the token in its environment)."""
    if recorded_start is None or not token:
        return "cluster.json records no start time or token for it (written by an older isrcheck?)"
    now = start_time(pid)
    if now is None:
        return "its start time cannot be read from /proc"
    if now != recorded_start:
        return f"it started at tick {now}, not at tick {recorded_start} as recorded: the PID was reused"
    marked = _has_token(pid, token)
    if marked is None:
        return "its environment cannot be read from /proc (another user's process?)"
    if not marked:
        return f"its environment lacks this cluster's {TOKEN_ENV}"
    return None
