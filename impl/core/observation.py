"""The cluster-wide observation (specs/observation.toml).

Each core reports its own part (:meth:`ControllerCore.observe`, :meth:`BrokerCore.observe`); the
driver reads the store and the disks of stopped brokers, and :func:`assemble` puts them together in
the schema's shape and order. The schema's validator is the shared one,
:func:`isrcheck.specs.observation.validate`: specs/ holds the vocabulary's data and its loaders, no
model code, so the implementation still shares nothing with the model but specs/.
"""
from __future__ import annotations

from typing import Any, Mapping

from isrcheck.specs.observation import fields

from . import tables as T
from .layout import Snapshot


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
    extra = {k: v for k, v in DEFAULT_REPLICA_FIELDS.items() if k in fields("replica")}
    for b in range(1, nbrokers + 1):
        reps = brokers.get(b, {}).get("replicas", {})
        for p in range(npartitions):
            entry = {"broker": b, "partition": p, "replica_state": rstates.get((p, b), T.NON_EXISTENT_REPLICA)}
            entry.update(reps.get(p) or absent_replica())
            for k, v in extra.items():
                entry.setdefault(k, list(v) if isinstance(v, list) else v)
            obs["replicas"].append(entry)
    return obs
