"""The cluster-wide observation (specs/observation.toml) and a validator for it.

Each core reports its own part (:meth:`ControllerCore.observe`, :meth:`BrokerCore.observe`); the
driver reads the store and the disks of stopped brokers, and :func:`assemble` puts them together in
the schema's shape and order. :func:`validate` checks any JSON value against the schema read from
``isrcheck.specs`` (this module's own reading of it: the implementation shares only the data).
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from isrcheck import specs

from . import tables as T
from .layout import Snapshot


class ObservationError(ValueError):
    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or '<observation>'}: {problem}")
        self.path = path
        self.problem = problem


def absent_replica() -> dict[str, Any]:
    return {"present": False, "log": [], "leo": 0, "hw": 0, "leader_epoch": -1, "role": "none", "epochs": [],
            "fetch_state": "fetching"}


def stopped_replica(log: list[Any], hw_on_disk: int, epochs_on_disk: Any = ()) -> dict[str, Any]:
    """A stopped broker's copy as its disk holds it: the log, the HW checkpoint (cut to the log) and the
    leader-epoch cache, less its entries at or beyond the log's end (what a restart would keep)."""
    return {"present": True, "log": [{"id": r.id, "epoch": r.epoch} for r in log], "leo": len(log),
            "hw": hw_on_disk, "leader_epoch": -1, "role": "none",
            "epochs": [{"epoch": e, "start_offset": s} for e, s in epochs_on_disk if s < len(log)],
            "fetch_state": "fetching"}


#: replica fields a core's report may leave out, with their values when it does (no leader-epoch
#: cache, no reconciliation). Filled in only when the schema in specs/observation.toml declares them.
DEFAULT_REPLICA_FIELDS: dict[str, Any] = {"epochs": [], "fetch_state": "fetching"}
#: the former name (only high-watermark was implemented)
HIGH_WATERMARK_REPLICA_FIELDS = DEFAULT_REPLICA_FIELDS


def _schema_fields(obj: str) -> list[str]:
    for o in load_schema()["object"]:
        if o["name"] == obj:
            return [f["name"] for f in o.get("field", [])]
    return []


def assemble(nbrokers: int, npartitions: int, snap: Snapshot, controller: Mapping[str, Any],
             stale_epoch: int, brokers: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """The observation. ``brokers[b]`` is ``{"alive", "controller_epoch", "replicas": {p: {...}}}``."""
    pstates = controller.get("partition_states", {})
    rstates = controller.get("replica_states", {})
    obs: dict[str, Any] = {
        "controller": {
            "epoch": controller["epoch"],
            "live_brokers": sorted(controller.get("live_brokers", ())),
            "shutting_down": sorted(controller.get("shutting_down", ())),
            "stale_epoch": stale_epoch,
        },
        "brokers": [],
        "partitions": [],
        "replicas": [],
    }
    for b in range(1, nbrokers + 1):
        br = brokers.get(b, {"alive": False, "controller_epoch": 0, "replicas": {}})
        obs["brokers"].append({"id": b, "alive": bool(br["alive"]), "controller_epoch": br["controller_epoch"]})
    for p in range(npartitions):
        pz = snap.part(p)
        st = pz.state
        obs["partitions"].append({
            "index": p,
            "exists": pz.exists,
            "replicas": list(pz.replicas),
            "leader": st.leader if st else 0,
            "isr": sorted(st.isr) if st else [],
            "leader_epoch": st.leader_epoch if st else 0,
            "zk_version": pz.zk_version,
            "partition_state": pstates.get(p, T.NON_EXISTENT_PARTITION),
            "reassignment": list(snap.reassign.get(p, ())),
            "preferred_election": p in snap.preferred,
            "deleting": p in snap.deleting,
        })
    extra = {k: v for k, v in DEFAULT_REPLICA_FIELDS.items() if k in _replica_fields()}
    for b in range(1, nbrokers + 1):
        reps = brokers.get(b, {}).get("replicas", {})
        for p in range(npartitions):
            entry = {"broker": b, "partition": p, "replica_state": rstates.get((p, b), T.NON_EXISTENT_REPLICA)}
            entry.update(reps.get(p) or absent_replica())
            for k, v in extra.items():
                entry.setdefault(k, list(v) if isinstance(v, list) else v)
            obs["replicas"].append(entry)
    return obs


_REPLICA_FIELDS: list[str] | None = None


def _replica_fields() -> list[str]:
    global _REPLICA_FIELDS
    if _REPLICA_FIELDS is None:
        _REPLICA_FIELDS = _schema_fields("replica")
    return _REPLICA_FIELDS


# ---------------------------------------------------------------------------- validation
_LIST = re.compile(r"^list\[(.+)\]$")


def load_schema() -> dict[str, Any]:
    return specs.load("observation.toml")


def validate(obs: Any, schema: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`ObservationError` at the first place ``obs`` departs from the schema."""
    schema = schema if schema is not None else load_schema()
    objects = {o["name"]: o.get("field", []) for o in schema["object"]}
    _check(obs, schema["root"], objects, "", None)


def _check(v: Any, typ: str, objects: Mapping[str, list], path: str, f: Mapping[str, Any] | None) -> None:
    m = _LIST.match(typ)
    if m:
        if not isinstance(v, list):
            raise ObservationError(path, f"expected a list, got {type(v).__name__}")
        item = m.group(1)
        for i, x in enumerate(v):
            _check(x, item, objects, f"{path}[{i}]", f)
        if f is not None:
            if f.get("sorted") and v != sorted(v):
                raise ObservationError(path, "not in ascending order")
            if f.get("unique") and len({repr(x) for x in v}) != len(v):
                raise ObservationError(path, "has a repeated item")
        return
    if typ == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise ObservationError(path, f"expected int, got {v!r}")
        if f is not None and "min" in f and v < f["min"]:
            raise ObservationError(path, f"{v} is below the minimum {f['min']}")
        return
    if typ == "bool":
        if not isinstance(v, bool):
            raise ObservationError(path, f"expected bool, got {v!r}")
        return
    if typ == "string":
        if not isinstance(v, str):
            raise ObservationError(path, f"expected string, got {v!r}")
        if f is not None and "values" in f and v not in f["values"]:
            raise ObservationError(path, f"{v!r} is not one of {f['values']}")
        return
    fields = objects.get(typ)
    if fields is None:
        raise ObservationError(path, f"the schema has no type {typ!r}")
    if not isinstance(v, dict):
        raise ObservationError(path, f"expected a {typ} object, got {type(v).__name__}")
    names = [x["name"] for x in fields]
    for name in v:
        if name not in names:
            raise ObservationError(f"{path}.{name}" if path else name, "unknown field")
    for fd in fields:
        sub = f"{path}.{fd['name']}" if path else fd["name"]
        if fd["name"] not in v:
            raise ObservationError(sub, "missing")
        _check(v[fd["name"]], fd["type"], objects, sub, fd)
