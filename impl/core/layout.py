"""Where the protocol keeps its metadata in the store, how it is encoded, and how a driver runs
the cores' store calls.

Znodes (one topic, as in specs/00-scope.md):

| path | kind | data |
|---|---|---|
| ``/controller`` | ephemeral | ``{"epoch": e, "name": ...}`` of the elected controller |
| ``/controller_epoch`` | persistent | the controller epoch, as a decimal |
| ``/brokers/ids/<b>`` | ephemeral | ``{"host": ..., "port": ...}`` registration (its czxid tells restarts apart) |
| ``/brokers/topics/<t>`` | persistent | ``{"partitions": n}`` |
| ``/brokers/topics/<t>/partitions/<p>`` | persistent | ``{"replicas": [...]}``: the assignment AR |
| ``/brokers/topics/<t>/partitions/<p>/state`` | persistent | ``{"leader", "isr", "leader_epoch", "controller_epoch"}`` |
| ``/admin/reassign_partitions/<t>-<p>`` | persistent | ``{"replicas": [...]}``: a requested reassignment (RAR) |
| ``/admin/preferred_replica_election/<t>-<p>`` | persistent | a requested preferred election |
| ``/admin/delete_topics/<t>`` | persistent | ``{"partitions": [...]}``: partitions queued for deletion |

The leader/ISR znode's ``zk_version`` in the observation is its stat version + 1 (0 while it does
not exist), as specs/observation.toml counts it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .messages import StoreOp, StoreResult
from .store import Create, NodeExists, NoNode, Op, Session, StoreError

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
REASSIGN = "/admin/reassign_partitions"
PREFERRED = "/admin/preferred_replica_election"
DELETE_TOPICS = "/admin/delete_topics"
BASE_PATHS = (BROKER_IDS, TOPICS, REASSIGN, PREFERRED, DELETE_TOPICS)


def broker_path(b: int) -> str:
    return f"{BROKER_IDS}/{b}"


def topic_path(t: str) -> str:
    return f"{TOPICS}/{t}"


def partitions_path(t: str) -> str:
    return f"{TOPICS}/{t}/partitions"


def partition_path(t: str, p: int) -> str:
    return f"{TOPICS}/{t}/partitions/{p}"


def state_path(t: str, p: int) -> str:
    return f"{TOPICS}/{t}/partitions/{p}/state"


def reassign_path(t: str, p: int) -> str:
    return f"{REASSIGN}/{t}-{p}"


def preferred_path(t: str, p: int) -> str:
    return f"{PREFERRED}/{t}-{p}"


def delete_path(t: str) -> str:
    return f"{DELETE_TOPICS}/{t}"


def encode(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def decode(data: bytes) -> Any:
    try:
        return json.loads(data.decode() or "null")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


@dataclass(frozen=True)
class LeaderIsr:
    leader: int
    isr: tuple[int, ...]
    leader_epoch: int
    controller_epoch: int

    def encode(self) -> bytes:
        return encode({"leader": self.leader, "isr": sorted(self.isr), "leader_epoch": self.leader_epoch,
                       "controller_epoch": self.controller_epoch})

    @staticmethod
    def decode(data: bytes) -> LeaderIsr:
        d = decode(data) or {}
        return LeaderIsr(int(d.get("leader", 0)), tuple(sorted(d.get("isr", ()))), int(d.get("leader_epoch", 0)),
                         int(d.get("controller_epoch", 0)))


@dataclass
class PartitionZnodes:
    """One partition as the store holds it (``replicas`` empty when the partition does not exist)."""

    replicas: tuple[int, ...] = ()
    ar_version: int = -1
    state: LeaderIsr | None = None
    state_version: int = -1  # stat.version of the leader/ISR znode, -1 when absent

    @property
    def exists(self) -> bool:
        return bool(self.replicas)

    @property
    def zk_version(self) -> int:
        """The observation's zkVersion: 0 while the znode is absent, then 1, 2, ..."""
        return self.state_version + 1


@dataclass
class Snapshot:
    """Everything the controller reads, taken in one go (and the watches re-armed)."""

    controller_epoch: int = 0
    controller_epoch_version: int = -1
    registered: dict[int, int] = field(default_factory=dict)  # broker id -> czxid of its registration
    partitions: dict[int, PartitionZnodes] = field(default_factory=dict)
    reassign: dict[int, tuple[int, ...]] = field(default_factory=dict)
    preferred: set[int] = field(default_factory=set)
    deleting: tuple[int, ...] = ()
    topic_partitions: int = 0

    def part(self, p: int) -> PartitionZnodes:
        if p not in self.partitions:
            self.partitions[p] = PartitionZnodes()
        return self.partitions[p]


def _ints(v: Any) -> tuple[int, ...]:
    if not isinstance(v, list):
        return ()
    return tuple(x for x in v if isinstance(x, int) and not isinstance(x, bool))


def read_snapshot(s: Session, topic: str, partitions: int, watch: bool = True) -> Snapshot:
    """Read the controller's whole view of the store (and re-arm its watches if ``watch``)."""
    snap = Snapshot()
    got = s.get_or_none(CONTROLLER_EPOCH)
    if got is not None:
        snap.controller_epoch = int(decode(got[0]) or 0)
        snap.controller_epoch_version = got[1].version
    for name in s.get_children(BROKER_IDS, watch=watch):
        st = s.exists(broker_path(int(name))) if name.isdigit() else None
        if st is not None:
            snap.registered[int(name)] = st.czxid
    t = topic_path(topic)
    meta = s.get_or_none(t)
    n = partitions
    if meta is not None:
        d = decode(meta[0]) or {}
        snap.topic_partitions = int(d.get("partitions", 0))
        n = max(n, snap.topic_partitions)
    try:
        kids = s.get_children(partitions_path(topic), watch=watch)
    except NoNode:
        kids = []
        if watch:
            s.exists(partitions_path(topic), watch=True)
    for name in kids:
        if name.isdigit():
            n = max(n, int(name) + 1)
    for p in range(n):
        pz = snap.part(p)
        if str(p) not in kids:
            continue
        got = s.get_or_none(partition_path(topic, p))
        if got is None:
            continue
        pz.replicas = _ints((decode(got[0]) or {}).get("replicas"))
        pz.ar_version = got[1].version
        st = s.get_or_none(state_path(topic, p), watch=watch)
        if st is not None:
            pz.state = LeaderIsr.decode(st[0])
            pz.state_version = st[1].version
    prefix = f"{topic}-"
    for name in s.get_children(REASSIGN, watch=watch):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            got = s.get_or_none(f"{REASSIGN}/{name}")
            if got is not None:
                target = _ints((decode(got[0]) or {}).get("replicas"))
                if target:
                    snap.reassign[int(name[len(prefix):])] = target
    for name in s.get_children(PREFERRED, watch=watch):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            snap.preferred.add(int(name[len(prefix):]))
    s.get_children(DELETE_TOPICS, watch=watch)
    got = s.get_or_none(delete_path(topic))
    if got is not None:
        snap.deleting = tuple(sorted(_ints((decode(got[0]) or {}).get("partitions"))))
    return snap


def ensure_base(s: Session) -> None:
    for path in BASE_PATHS:
        s.ensure_path(path)


def execute(s: Session, op: StoreOp) -> StoreResult:
    """Run one core store call on session ``s``; errors become ``StoreResult.error``.

    kinds: ``snapshot(topic, partitions)``; ``multi(ops)``; ``create(path, data, ephemeral)``;
    ``set(path, data, version)``; ``get(path, watch)``; ``exists(path, watch)``; ``ensure_base()``.
    """
    try:
        if op.kind == "snapshot":
            value: Any = read_snapshot(s, op.args[0], op.args[1])
        elif op.kind == "multi":
            value = s.multi(list(op.args[0]))
        elif op.kind == "create":
            value = s.create(op.args[0], op.args[1], ephemeral=op.args[2])
        elif op.kind == "set":
            value = s.set(op.args[0], op.args[1], op.args[2])
        elif op.kind == "get":
            value = s.get(op.args[0], watch=op.args[1])
        elif op.kind == "exists":
            value = s.exists(op.args[0], watch=op.args[1])
        elif op.kind == "ensure_base":
            ensure_base(s)
            value = None
        else:
            raise StoreError("", f"unknown store call {op.kind!r}")
    except StoreError as e:
        return StoreResult(op.token, None, e)
    return StoreResult(op.token, value, None)


# ---------------------------------------------------------------------------- admin writes
def create_topic_ops(topic: str, assignment: list[list[int]] | tuple[tuple[int, ...], ...]) -> list[Op]:
    """The admin's topic creation: the topic znode and one assignment znode per partition."""
    ops: list[Op] = [Create(topic_path(topic), encode({"partitions": len(assignment)})),
                     Create(partitions_path(topic), b"")]
    for p, ar in enumerate(assignment):
        ops.append(Create(partition_path(topic, p), encode({"replicas": list(ar)})))
    return ops


def request_reassignment(s: Session, topic: str, p: int, target: list[int] | tuple[int, ...]) -> None:
    s.create(reassign_path(topic, p), encode({"replicas": list(target)}))


def request_preferred_election(s: Session, topic: str, p: int) -> None:
    try:
        s.create(preferred_path(topic, p), b"")
    except NodeExists:
        pass


def request_topic_deletion(s: Session, topic: str, partitions: list[int]) -> None:
    s.create(delete_path(topic), encode({"partitions": sorted(partitions)}))

