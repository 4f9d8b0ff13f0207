"""The abstract observation of a state (specs/observation.toml, specs/01-vocabulary.md).

:func:`observe` projects a model :class:`~isrcheck.model.state.State` onto the schema: plain
dicts, lists, ints, bools and strings, ready for ``json.dumps``. The schema's validator, which
knows nothing about the model, is the shared one: :func:`isrcheck.specs.observation.validate`.
"""
from __future__ import annotations

from typing import Any

from .brokersets import members
from .records import record_epoch, record_id
from .state import ASK_EPOCH_END, FETCHING, NO_LEADER, TRUNCATE_PENDING, State
from .tables import PartitionState, ReplicaState

__all__ = ["observe"]

ROLE_LEADER = "leader"
ROLE_FOLLOWER = "follower"
ROLE_NONE = "none"

#: a replica's reconciliation state (specs/05-replication.md#reconciling-a-follower), as observed
FETCH_STATES = {FETCHING: "fetching", ASK_EPOCH_END: "ask-epoch-end", TRUNCATE_PENDING: "truncate-pending"}


# ---------------------------------------------------------------------------- projection
def observe(state: State) -> dict[str, Any]:
    """The observation of ``state``: exactly the fields of specs/observation.toml."""
    zk = state.zk
    c = state.controller
    nparts = len(zk.partitions)
    controller = {
        "epoch": c.epoch,
        "live_brokers": list(members(c.live)),
        "shutting_down": list(members(c.shutting_down)),
        "stale_epoch": state.stale.epoch if state.stale is not None else 0,
    }
    brokers = [
        {"id": i + 1, "alive": br.alive, "controller_epoch": br.controller_epoch}
        for i, br in enumerate(state.brokers)
    ]
    partitions = []
    for p, zp in enumerate(zk.partitions):
        partitions.append({
            "index": p,
            "exists": bool(zp.replicas),
            "replicas": list(zp.replicas),
            "leader": zp.leader,
            "isr": list(members(zp.isr)),
            "leader_epoch": zp.leader_epoch,
            "zk_version": zp.version,
            "partition_state": PartitionState(c.partition_states[p]).label,
            "reassignment": list(zk.reassign[p]),
            "preferred_election": bool(zk.preferred >> p & 1),
            "deleting": bool(zk.deleting >> p & 1),
        })
    replicas = []
    for i, br in enumerate(state.brokers):
        b = i + 1
        for p in range(nparts):
            r = br.replicas[p]
            entry: dict[str, Any] = {
                "broker": b,
                "partition": p,
                "replica_state": ReplicaState(c.replica_states[p][i]).label,
                "present": r is not None,
            }
            if r is None:
                entry.update(log=[], leo=0, hw=0, leader_epoch=-1, role=ROLE_NONE, epochs=[],
                             fetch_state=FETCH_STATES[FETCHING])
            else:
                if r.leader == b:
                    role = ROLE_LEADER
                elif r.leader != NO_LEADER:
                    role = ROLE_FOLLOWER
                else:
                    role = ROLE_NONE
                entry.update(
                    log=[{"id": record_id(x), "epoch": record_epoch(x)} for x in r.log],
                    leo=len(r.log),
                    hw=r.hw,
                    leader_epoch=r.leader_epoch,
                    role=role,
                    epochs=[{"epoch": e, "start_offset": start} for e, start in r.epochs],
                    fetch_state=FETCH_STATES[r.fetch_state],
                )
            replicas.append(entry)
    return {"controller": controller, "brokers": brokers, "partitions": partitions, "replicas": replicas}
