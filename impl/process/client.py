"""The client library: produce, consume, administration and status of a running cluster.

A :class:`Client` talks to brokers over TCP (frames of :mod:`isrcheck.impl.wire.frame`) and to the metadata store
(``embedded:HOST:PORT`` or ``zookeeper:HOST:PORT``) for administration and to find leaders::

    c = Client("embedded:127.0.0.1:7000")
    c.create_topic(partitions=1, replication_factor=3)
    offset = c.produce(0, "hello")            # acks=all: returns once committed
    records = c.consume(0, offset=0)          # only what is below the leader's HW
    c.reassign(0, [2, 3, 1]); c.status()

Errors are :class:`ClientError` with a one-line message. With ``secret`` (the cluster's,
:mod:`isrcheck.impl.wire.auth`) every frame to and from brokers and the store server carries an HMAC;
a cluster started by ``isrcheck cluster up`` accepts nothing else (``LocalCluster.client()`` passes
it).
"""
from __future__ import annotations

import itertools
import os
import socket
import time
from typing import Any, Callable

from ..core import layout as L
from ..core.messages import (
    ConsumeRequest,
    ConsumeResponse,
    ErrorResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    Record,
    from_wire,
)
from ..core.store import NodeExists, NoNode, Session, StoreError
from ..store.remote import open_store
from ..core.messages import to_wire
from ..wire.channel import Channel, blocking_handshake
from ..wire.frame import FrameDecoder, FrameError, encode_message

RETRIABLE = ("NotLeader", "NotEnoughReplicas", "Unreachable", "LeaderChanged", "KafkaStorageError")


class ClientError(RuntimeError):
    """A request that failed; ``code`` is the broker's error (or a client-side reason)."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class BrokerConnection:
    """One blocking connection to a broker; requests are answered in order."""

    def __init__(self, host: str, port: int, timeout: float, secret: bytes | None = None,
                 peer: str = "broker") -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.secret = secret
        # with the cluster secret: a channel bound to this connection and to ``peer`` (wire.channel)
        self.decoder: Channel | FrameDecoder = FrameDecoder()
        if secret is not None:
            ch = Channel(secret, "client", peer, accepting=False)
            try:
                blocking_handshake(self.sock, ch)
            except BaseException:
                self.sock.close()
                raise
            self.decoder = ch
        self.pending: list[Any] = []

    def request(self, msg: Any) -> Any:
        dec = self.decoder
        self.sock.sendall(dec.encode(to_wire(msg)) if isinstance(dec, Channel) else encode_message(msg))
        rid = getattr(msg, "request_id", None)
        while True:
            while self.pending:
                obj = self.pending.pop(0)
                try:
                    ans = from_wire(obj)
                except ValueError:
                    continue
                if getattr(ans, "request_id", None) == rid:
                    return ans
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the broker closed the connection")
            self.pending.extend(self.decoder.feed(data))

    def close(self) -> None:
        self.sock.close()


class Client:
    def __init__(self, store_spec: str, topic: str = "isrcheck", timeout: float = 5.0,
                 secret: bytes | None = None) -> None:
        self.store_spec = store_spec
        self.topic = topic
        self.timeout = timeout
        self.secret = secret
        self._store = None
        self._session: Session | None = None
        self._conns: dict[int, BrokerConnection] = {}
        self._ids = itertools.count(int.from_bytes(os.urandom(3), "big") << 20)
        self._leaders: dict[int, int] = {}  # partition -> leader, until a request says otherwise

    # ------------------------------------------------------------------ plumbing
    @property
    def session(self) -> Session:
        if self._session is None or self._session.expired:
            try:
                self._store = open_store(self.store_spec, timeout=self.timeout, secret=self.secret)
                self._session = self._store.session()
            except StoreError as e:
                raise ClientError(f"cannot reach the metadata store {self.store_spec}: {e}", "Unreachable") from None
        return self._session

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def brokers(self) -> dict[int, tuple[str, int]]:
        """Registered brokers and their addresses."""
        out = {}
        try:
            names = self.session.get_children(L.BROKER_IDS)
        except NoNode:
            return {}
        for name in names:
            got = self.session.get_or_none(L.broker_path(int(name))) if name.isdigit() else None
            if got is not None:
                d = L.decode(got[0]) or {}
                if "host" in d:
                    out[int(name)] = (d["host"], int(d["port"]))
        return dict(sorted(out.items()))

    def _call(self, b: int, msg: Any) -> Any:
        conn = self._conns.get(b)
        addr = ("?", 0)
        try:
            if conn is None:
                addr = self.brokers().get(b)  # type: ignore[assignment]
                if addr is None:
                    raise ClientError(f"broker {b} is not registered", "Unreachable")
                conn = BrokerConnection(addr[0], addr[1], self.timeout, self.secret, peer=f"broker-{b}")
                self._conns[b] = conn
            return conn.request(msg)
        except (OSError, ConnectionError, FrameError) as e:
            self._conns.pop(b, None)
            if conn is not None:
                conn.close()
            raise ClientError(f"broker {b} at {addr[0]}:{addr[1]}: {e}", "Unreachable") from None

    def snapshot(self, partitions: int = 1) -> L.Snapshot:
        try:
            return L.read_snapshot(self.session, self.topic, partitions, watch=False)
        except StoreError as e:
            raise ClientError(f"cannot read the metadata store: {e}", "Unreachable") from None

    def _cached_leader(self, p: int) -> int:
        leader = self._leaders.get(p)
        if leader:
            return leader
        snap = self.snapshot(p + 1)
        if not snap.part(p).exists:
            raise ClientError(f"partition {p} of topic {self.topic!r} does not exist", "UnknownPartition")
        st = snap.part(p).state
        leader = st.leader if st else 0
        if leader:
            self._leaders[p] = leader
        return leader

    def _check_partition(self, p: int) -> None:
        if not self.snapshot(p + 1).part(p).exists:
            raise ClientError(f"partition {p} of topic {self.topic!r} does not exist", "UnknownPartition")

    def leader(self, p: int) -> int:
        st = self.snapshot(p + 1).part(p).state
        return st.leader if st else 0

    # ------------------------------------------------------------------ administration
    def create_topic(self, partitions: int = 1, replication_factor: int = 3,
                     assignment: list[list[int]] | None = None) -> list[list[int]]:
        live = sorted(self.brokers())
        if assignment is None:
            if replication_factor > len(live) or replication_factor < 1:
                raise ClientError(f"replication factor {replication_factor} needs that many live brokers "
                                  f"({len(live)} registered)", "InvalidReplicationFactor")
            if partitions < 1:
                raise ClientError("a topic needs at least one partition", "InvalidPartitions")
            assignment = [[live[(p + i) % len(live)] for i in range(replication_factor)] for p in range(partitions)]
        try:
            L.ensure_base(self.session)
            self.session.multi(L.create_topic_ops(self.topic, assignment))
        except StoreError as e:
            if isinstance(getattr(e, "cause", None), NodeExists) or isinstance(e, NodeExists):
                raise ClientError(f"topic {self.topic!r} already exists", "TopicExists") from None
            raise ClientError(f"cannot create topic {self.topic!r}: {e}") from None
        return assignment

    def reassign(self, p: int, target: list[int]) -> None:
        if not target or len(set(target)) != len(target):
            raise ClientError("a reassignment target is a non-empty list of distinct broker ids", "InvalidTarget")
        if not self.snapshot(p + 1).part(p).exists:
            raise ClientError(f"partition {p} does not exist", "UnknownPartition")
        try:
            L.request_reassignment(self.session, self.topic, p, target)
        except NodeExists:
            raise ClientError(f"a reassignment of partition {p} is already pending", "ReassignmentPending") from None
        except StoreError as e:
            raise ClientError(f"cannot request the reassignment: {e}") from None

    def preferred_election(self, p: int) -> None:
        L.request_preferred_election(self.session, self.topic, p)

    def delete_topic(self) -> None:
        snap = self.snapshot()
        parts = [p for p, pz in snap.partitions.items() if pz.exists]
        if not parts:
            raise ClientError(f"topic {self.topic!r} does not exist", "UnknownTopic")
        try:
            L.request_topic_deletion(self.session, self.topic, parts)
        except NodeExists:
            raise ClientError("the topic is already queued for deletion", "DeletionPending") from None

    # ------------------------------------------------------------------ data
    def produce(self, p: int, value: str = "", acks: str = "all", timeout: float | None = None,
                record_id: int | None = None) -> tuple[int, int]:
        """Write one record; returns (offset, record id) once the leader acknowledged it (acks=all:
        committed to the whole ISR). Retries on a leader change until ``timeout``."""
        rid = record_id if record_id is not None else next(self._ids)
        ans = self._ask_leader(p, f"produce to partition {p}", ProduceResponse, timeout,
                               lambda: ProduceRequest(next(self._ids), p, rid, value, acks))
        return ans.offset, rid

    def consume(self, p: int, offset: int = 0, max_records: int = 1000, timeout: float | None = None) -> list[Record]:
        """Records of partition ``p`` from ``offset`` up to the leader's HW."""
        ans = self._ask_leader(p, f"consume from partition {p}", ConsumeResponse, timeout,
                               lambda: ConsumeRequest(next(self._ids), p, offset, max_records))
        return list(ans.records)

    def _ask_leader(self, p: int, what: str, answer: type[Any], timeout: float | None,
                    request: Callable[[], Any]) -> Any:
        """The first error-free ``answer`` of partition ``p``'s leader to ``request()`` (a new
        request id each try). Produce and consume retry alike: on a retriable error (the leader moved,
        the connection broke) the leader is looked up again, every 50 ms until ``timeout`` (twice the
        client's by default); any other error raises at once. ``what`` names the call in errors."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout * 2)
        last = ""
        while True:
            leader = self._cached_leader(p)
            if leader:
                try:
                    ans = self._call(leader, request())
                    if isinstance(ans, answer) and not ans.error:
                        return ans
                    last = ans.error if isinstance(ans, (answer, ErrorResponse)) else repr(ans)
                    if last not in RETRIABLE:
                        raise ClientError(f"{what} failed: {last}", last)
                    self._leaders.pop(p, None)
                except ClientError as e:
                    if e.code not in RETRIABLE:
                        raise
                    self._leaders.pop(p, None)
                    last = str(e)
            else:
                last = f"partition {p} has no leader"
            if time.monotonic() > deadline:
                raise ClientError(f"{what} failed: {last}", "Timeout")
            time.sleep(0.05)

    def metadata(self, b: int) -> MetadataResponse:
        ans = self._call(b, MetadataRequest(next(self._ids)))
        if not isinstance(ans, MetadataResponse):
            raise ClientError(f"broker {b} answered {ans!r}")
        return ans

    def status(self) -> dict[str, Any]:
        """Controller, brokers and, per partition, the store's leader/ISR with each replica's LEO and HW."""
        s = self.session
        snap = self.snapshot()
        controller: dict[str, Any] = {"epoch": snap.controller_epoch, "name": None}
        got = s.get_or_none(L.CONTROLLER)
        if got is not None:
            controller["name"] = (L.decode(got[0]) or {}).get("name")
        brokers = self.brokers()
        replicas: dict[tuple[int, int], dict[str, Any]] = {}
        for b in brokers:
            try:
                md = self.metadata(b)
            except ClientError:
                continue
            for p, role, le, leo, hw in md.replicas:
                replicas[(p, b)] = {"role": role, "leader_epoch": le, "leo": leo, "hw": hw}
        parts = []
        for p in sorted(snap.partitions):
            pz = snap.partitions[p]
            if not pz.exists and p not in snap.reassign:
                continue
            st = pz.state
            parts.append({
                "partition": p, "replicas": list(pz.replicas), "leader": st.leader if st else 0,
                "isr": list(st.isr) if st else [], "leader_epoch": st.leader_epoch if st else 0,
                "zk_version": pz.zk_version, "reassignment": list(snap.reassign.get(p, ())),
                "hw": replicas.get((p, st.leader), {}).get("hw") if st and st.leader else None,
                "replica_status": {b: replicas[(p, b)] for b in sorted(brokers) if (p, b) in replicas},
            })
        return {"topic": self.topic, "controller": controller, "brokers": {b: f"{h}:{port}" for b, (h, port) in brokers.items()},
                "partitions": parts, "deleting": list(snap.deleting)}
