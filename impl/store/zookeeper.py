"""The metadata store on a real ZooKeeper, through kazoo: the same interface as the embedded store.

Each :class:`ZkSession` is one kazoo client, hence one ZooKeeper session: its ephemeral znodes vanish
when it closes or expires. Watches fire on kazoo's thread; the events are queued (thread-safe) and
collected with :meth:`ZkSession.poll_events`, or handed to ``on_event`` as they come, exactly as the
embedded store does. Errors are translated to the store's own (:class:`~isrcheck.impl.core.store.NoNode`, ...).
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import (BadArgumentsError, BadVersionError, ConnectionClosedError, ConnectionLoss,
                              KazooException, NodeExistsError, NoNodeError, NotEmptyError, RolledBackError,
                              SessionExpiredError)
from kazoo.exceptions import NoChildrenForEphemeralsError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState

from ..core.store import (ANY_VERSION, BadArguments, BadVersion, Check, Create, Delete, NodeExists, NoNode,
                          NotEmpty, Op, SessionExpired, SetData, Stat, Store, StoreError, StoreUnavailable,
                          TransactionFailed, WatchEvent, drain_events, validate_path)
from ..core.store import Session as SessionBase

_KINDS = {
    EventType.CREATED: "created",
    EventType.DELETED: "deleted",
    EventType.CHANGED: "changed",
    EventType.CHILD: "child",
}


def _translate(e: Exception, path: str = "") -> StoreError:
    if isinstance(e, NoNodeError):
        return NoNode(path)
    if isinstance(e, NodeExistsError):
        return NodeExists(path)
    if isinstance(e, BadVersionError):
        return BadVersion(path)
    if isinstance(e, NotEmptyError):
        return NotEmpty(path)
    if isinstance(e, SessionExpiredError):
        return SessionExpired(path)
    if isinstance(e, (BadArgumentsError, NoChildrenForEphemeralsError)):
        return BadArguments(path, f"{type(e).__name__}: {path}")
    if isinstance(e, (ConnectionLoss, ConnectionClosedError, KazooTimeoutError)):
        return StoreUnavailable(path, f"ZooKeeper unavailable ({type(e).__name__})")
    return StoreError(path, f"{type(e).__name__}: {e}")


def _stat(zs) -> Stat:  # kazoo's ZnodeStat
    return Stat(zs.version, zs.czxid, zs.mzxid, zs.ephemeralOwner, zs.numChildren, zs.cversion)


class ZooKeeperStore(Store):
    """Sessions on the ZooKeeper ensemble at ``hosts`` (``HOST:PORT[,HOST:PORT...][/chroot]``)."""

    def __init__(self, hosts: str, timeout: float = 10.0, session_timeout: float = 6.0) -> None:
        self.hosts = hosts
        self.timeout = timeout
        self.session_timeout = session_timeout
        self._sessions: list[ZkSession] = []

    def session(self) -> ZkSession:
        s = ZkSession(self.hosts, self.timeout, self.session_timeout)
        self._sessions.append(s)
        return s

    def close(self) -> None:
        for s in self._sessions:
            s.close()
        self._sessions.clear()


class ZkSession(SessionBase):
    def __init__(self, hosts: str, timeout: float, session_timeout: float) -> None:
        self._client = KazooClient(hosts=hosts, timeout=session_timeout, connection_retry={"max_tries": 3},
                                   command_retry=None)
        self._events: queue.Queue[WatchEvent] = queue.Queue()
        self._expired = False
        self._lock = threading.Lock()
        self.on_event: Callable[[WatchEvent], None] | None = None
        self._client.add_listener(self._on_state)
        try:
            self._start(timeout)
        except Exception as e:  # noqa: BLE001 - any failure to connect is "unavailable"
            try:
                self._client.stop()
                self._client.close()
            except Exception:  # noqa: BLE001
                pass
            raise StoreUnavailable("", f"cannot connect to ZooKeeper at {hosts}: {type(e).__name__}"
                                       f"{': ' + str(e)[:80] if str(e) else ''}") from None
        self.session_id = self._client.client_id[0] if self._client.client_id else 0

    # ------------------------------------------------------------------ plumbing
    def _start(self, timeout: float) -> None:
        """Connect within ``timeout`` s, giving up as soon as kazoo does. Why not ``KazooClient.start``: it
        waits out its whole timeout even after kazoo's connection thread spent its ``max_tries`` and
        stopped for good, so a session tried while the server is unreachable (a cut store link) held the
        runtime's retry loop (impl/process/runtime.py ``_renew``) for the full 10 s, and a broker re-registered
        seconds after the link healed. Giving up early lets that loop try again at once."""
        live = self._client.start_async()
        routine = getattr(getattr(self._client, "_connection", None), "_connection_routine", None)
        deadline = time.monotonic() + timeout
        while not live.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            gave_up = routine is not None and not routine.is_alive()
            if gave_up or time.monotonic() >= deadline:
                break
        if not self._client.connected:
            raise KazooTimeoutError("kazoo gave up connecting" if routine is not None and not routine.is_alive()
                                    else f"not connected within {timeout:g} s")

    def _on_state(self, state: KazooState) -> None:
        if state == KazooState.LOST and not self._expired:
            self._expired = True
            ev = WatchEvent("expired", "")
            self._events.put(ev)
            cb = self.on_event
            if cb is not None:
                cb(ev)

    def _watcher(self, event) -> None:  # runs on kazoo's thread
        ev = WatchEvent(_KINDS.get(event.type, "changed"), event.path)
        self._events.put(ev)
        cb = self.on_event
        if cb is not None:
            cb(ev)

    def _call(self, path: str, fn, *args, **kwargs):
        if self._expired:
            raise SessionExpired(path, "the ZooKeeper session has ended")
        validate_path(path)
        try:
            return fn(*args, **kwargs)
        except KazooException as e:
            raise _translate(e, path) from None
        except KazooTimeoutError as e:
            raise _translate(e, path) from None

    # ------------------------------------------------------------------ reads
    def get(self, path: str, watch: bool = False) -> tuple[bytes, Stat]:
        data, zs = self._call(path, self._client.get, path, watch=self._watcher if watch else None)
        return data, _stat(zs)

    def exists(self, path: str, watch: bool = False) -> Stat | None:
        zs = self._call(path, self._client.exists, path, watch=self._watcher if watch else None)
        return None if zs is None else _stat(zs)

    def get_children(self, path: str, watch: bool = False) -> list[str]:
        return sorted(self._call(path, self._client.get_children, path, watch=self._watcher if watch else None))

    # ------------------------------------------------------------------ writes
    def create(self, path: str, data: bytes = b"", ephemeral: bool = False, makepath: bool = False) -> str:
        return self._call(path, self._client.create, path, bytes(data), ephemeral=ephemeral, makepath=makepath)

    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat:
        return _stat(self._call(path, self._client.set, path, bytes(data), version=version))

    def delete(self, path: str, version: int = ANY_VERSION) -> None:
        self._call(path, self._client.delete, path, version=version)

    def multi(self, ops: Sequence[Op]) -> list[object]:
        if self._expired:
            raise SessionExpired("", "the ZooKeeper session has ended")
        t = self._client.transaction()
        for op in ops:
            validate_path(op.path)
            if isinstance(op, Create):
                t.create(op.path, bytes(op.data), ephemeral=op.ephemeral)
            elif isinstance(op, SetData):
                t.set_data(op.path, bytes(op.data), version=op.version)
            elif isinstance(op, Delete):
                t.delete(op.path, version=op.version)
            elif isinstance(op, Check):
                t.check(op.path, op.version)
            else:
                raise BadArguments("", f"unknown op {op!r}")
        try:
            raw = t.commit()
        except KazooException as e:
            raise _translate(e) from None
        except KazooTimeoutError as e:
            raise _translate(e) from None
        results: list[object] = []
        for i, (op, r) in enumerate(zip(ops, raw)):
            if isinstance(r, Exception) and not isinstance(r, RolledBackError):
                raise TransactionFailed(i, _translate(r, op.path))
        for op, r in zip(ops, raw):
            if isinstance(op, SetData):
                results.append(_stat(r))
            elif isinstance(op, Delete):
                results.append(None)
            else:
                results.append(r)
        return results

    # ------------------------------------------------------------------ events, lifetime
    def poll_events(self, timeout: float = 0.0) -> list[WatchEvent]:
        return drain_events(self._events, timeout)

    def close(self) -> None:
        with self._lock:
            if self._expired and not self._client.connected:
                return
            self._expired = True
            try:
                self._client.stop()
                self._client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass

    @property
    def expired(self) -> bool:
        return self._expired
