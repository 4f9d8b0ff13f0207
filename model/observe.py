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

__all__ = ["LazyObservation", "acked_of", "observe", "observe_broker", "observe_controller", "observe_log",
           "observe_partition", "observe_replica"]

ROLE_LEADER = "leader"
ROLE_FOLLOWER = "follower"
ROLE_NONE = "none"

#: a replica's reconciliation state (specs/05-replication.md#reconciling-a-follower), as observed
FETCH_STATES = {FETCHING: "fetching", ASK_EPOCH_END: "ask-epoch-end", TRUNCATE_PENDING: "truncate-pending"}


# ---------------------------------------------------------------------------- projection
def observe(state: State) -> dict[str, Any]:
    """The observation of ``state``: exactly the fields of specs/observation.toml."""
    nparts = len(state.zk.partitions)
    return {
        "controller": observe_controller(state),
        "brokers": [observe_broker(state, i) for i in range(len(state.brokers))],
        "partitions": [observe_partition(state, p) for p in range(nparts)],
        "replicas": [observe_replica(state, i, p) for i in range(len(state.brokers)) for p in range(nparts)],
    }


def acked_of(state: State) -> list[list[int]]:
    """The model's acknowledged write ids per partition (its history variable), ascending."""
    out = []
    for g in state.ghost:
        m, ids, i = g.acked, [], 0
        while m:
            if m & 1:
                ids.append(i)
            m >>= 1
            i += 1
        out.append(ids)
    return out


def observe_controller(state: State) -> dict[str, Any]:
    """The observation's ``controller`` section."""
    c = state.controller
    return {
        "epoch": c.epoch,
        "live_brokers": list(members(c.live)),
        "shutting_down": list(members(c.shutting_down)),
        "stale_epoch": state.stale.epoch if state.stale is not None else 0,
    }


def observe_broker(state: State, i: int) -> dict[str, Any]:
    """Entry ``i`` of the observation's ``brokers`` (broker ``i + 1``)."""
    br = state.brokers[i]
    return {"id": i + 1, "alive": br.alive, "controller_epoch": br.controller_epoch}


def observe_partition(state: State, p: int) -> dict[str, Any]:
    """Entry ``p`` of the observation's ``partitions``."""
    zk = state.zk
    zp = zk.partitions[p]
    return {
        "index": p,
        "exists": bool(zp.replicas),
        "replicas": list(zp.replicas),
        "leader": zp.leader,
        "isr": list(members(zp.isr)),
        "leader_epoch": zp.leader_epoch,
        "zk_version": zp.version,
        "partition_state": PartitionState(state.controller.partition_states[p]).label,
        "reassignment": list(zk.reassign[p]),
        "preferred_election": bool(zk.preferred >> p & 1),
        "deleting": bool(zk.deleting >> p & 1),
    }


def observe_replica(state: State, i: int, p: int, log: bool = True) -> dict[str, Any]:
    """The observation's ``replicas`` entry of broker ``i + 1`` and partition ``p`` (entry
    ``i * partitions + p``); ``log=False`` leaves out the one costly field, the log's records."""
    b = i + 1
    r = state.brokers[i].replicas[p]
    entry: dict[str, Any] = {
        "broker": b,
        "partition": p,
        "replica_state": ReplicaState(state.controller.replica_states[p][i]).label,
        "present": r is not None,
    }
    if r is None:
        entry.update(log=[], leo=0, hw=0, leader_epoch=-1, role=ROLE_NONE, epochs=[],
                     fetch_state=FETCH_STATES[FETCHING])
        return entry
    if r.leader == b:
        role = ROLE_LEADER
    elif r.leader != NO_LEADER:
        role = ROLE_FOLLOWER
    else:
        role = ROLE_NONE
    if log:
        entry["log"] = observe_log(r.log)
    entry.update(
        leo=len(r.log),
        hw=r.hw,
        leader_epoch=r.leader_epoch,
        role=role,
        epochs=[{"epoch": e, "start_offset": start} for e, start in r.epochs],
        fetch_state=FETCH_STATES[r.fetch_state],
    )
    return entry


def observe_log(records: Any) -> list[dict[str, int]]:
    """A replica's log as the observation writes it: each record's id and epoch."""
    return [{"id": record_id(x), "epoch": record_epoch(x)} for x in records]


class LazyObservation:
    """:func:`observe` computed only where it is read: ``view["replicas"][4]["hw"]`` builds that one
    replica's entry (its log only if ``"log"`` is read), once.

    Why: validating an event log compares each event's few facts with thousands of candidate states;
    projecting every replica's whole log for each candidate was most of the time of `validate`."""

    __slots__ = ("_state", "_controller", "_sections")

    def __init__(self, state: State) -> None:
        self._state = state
        self._controller: dict[str, Any] | None = None
        self._sections: dict[str, _LazySection] = {}

    def __getitem__(self, key: str) -> Any:
        if key == "controller":
            if self._controller is None:
                self._controller = observe_controller(self._state)
            return self._controller
        section = self._sections.get(key)
        if section is None:
            section = self._sections[key] = _LazySection(self._state, key)
        return section


class _LazySection:
    """One list of the observation (``brokers``, ``partitions`` or ``replicas``), entry by entry."""

    __slots__ = ("_state", "_key", "_entries", "_nparts")

    def __init__(self, state: State, key: str) -> None:
        if key not in ("brokers", "partitions", "replicas"):
            raise KeyError(key)
        self._state = state
        self._key = key
        self._entries: dict[int, Any] = {}
        self._nparts = len(state.zk.partitions)

    def __getitem__(self, i: int) -> Any:
        entry = self._entries.get(i)
        if entry is None:
            st = self._state
            if self._key == "brokers":
                entry = observe_broker(st, i)
            elif self._key == "partitions":
                entry = observe_partition(st, i)
            else:
                entry = _LazyReplica(st, *divmod(i, self._nparts))
            self._entries[i] = entry
        return entry


class _LazyReplica:
    """One ``replicas`` entry; its ``log`` (the records) is projected only when read."""

    __slots__ = ("_state", "_broker", "_partition", "_entry")

    def __init__(self, state: State, i: int, p: int) -> None:
        self._state, self._broker, self._partition = state, i, p
        self._entry = observe_replica(state, i, p, log=False)

    def __getitem__(self, field: str) -> Any:
        entry = self._entry
        if field == "log" and "log" not in entry:
            r = self._state.brokers[self._broker].replicas[self._partition]
            entry["log"] = observe_log(r.log) if r is not None else []
        return entry[field]
