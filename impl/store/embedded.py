"""The embedded metadata store: ZooKeeper's semantics in process, deterministic, no threads.

Every call completes at once; zxids and session ids are counters, so two runs that make the same
calls see the same stats. Fired watches are queued on the session that set them (and, if the
session has an ``on_event`` callback, handed to it as well), which lets the deterministic
simulator decide when a core hears of a change. :meth:`EmbeddedStore.expire` ends a session as
ZooKeeper's session timeout would: its ephemeral nodes vanish and the watches on them fire.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..core.store import (ANY_VERSION, BadArguments, BadVersion, Check, Create, Delete, NodeExists, NoNode,
                          NotEmpty, Op, SessionExpired, SetData, Stat, Store, StoreError, TransactionFailed,
                          WatchEvent, parent_of, validate_path)
from ..core.store import Session as SessionBase


@dataclass
class _Node:
    data: bytes
    version: int
    czxid: int
    mzxid: int
    ephemeral_owner: int
    cversion: int = 0
    children: set[str] = field(default_factory=set)

    def stat(self) -> Stat:
        return Stat(self.version, self.czxid, self.mzxid, self.ephemeral_owner, len(self.children), self.cversion)


class EmbeddedStore(Store):
    """An in-memory znode tree with sessions, ephemerals, one-shot watches and multi."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0, 0, 0)}
        self._zxid = 0
        self._next_session = 1
        self._sessions: dict[int, EmbeddedSession] = {}
        self._data_watches: dict[str, set[int]] = {}
        self._child_watches: dict[str, set[int]] = {}

    # ------------------------------------------------------------------ sessions
    def session(self) -> EmbeddedSession:
        sid = self._next_session
        self._next_session += 1
        s = EmbeddedSession(self, sid)
        self._sessions[sid] = s
        return s

    def expire(self, session_id: int) -> None:
        """End a session as a timeout would (no-op for an unknown or already ended session)."""
        s = self._sessions.pop(session_id, None)
        if s is None:
            return
        s._expired = True
        owned = sorted((p for p, n in self._nodes.items() if n.ephemeral_owner == session_id),
                       key=lambda p: (-p.count("/"), p))
        events: list[tuple[int, WatchEvent]] = []
        for path in owned:
            if path in self._nodes:
                self._zxid += 1
                events.extend(self._remove(path))
        for ws in (self._data_watches, self._child_watches):
            for sids in ws.values():
                sids.discard(session_id)
        self._dispatch(events)

    def live_sessions(self) -> list[int]:
        return sorted(self._sessions)

    @property
    def zxid(self) -> int:
        return self._zxid

    # ------------------------------------------------------------------ inspection (tests, observation)
    def dump(self) -> dict[str, tuple[bytes, Stat]]:
        """Every znode (except the root) with its data and stat, sorted by path."""
        return {p: (n.data, n.stat()) for p, n in sorted(self._nodes.items()) if p != "/"}

    # ------------------------------------------------------------------ internals
    def _node(self, path: str) -> _Node:
        validate_path(path)
        n = self._nodes.get(path)
        if n is None:
            raise NoNode(path)
        return n

    def _remove(self, path: str) -> list[tuple[int, WatchEvent]]:
        n = self._nodes.pop(path)
        assert not n.children
        parent = self._nodes[parent_of(path)]
        parent.children.discard(path.rsplit("/", 1)[1])
        parent.cversion += 1
        events = self._fire(self._data_watches, path, "deleted")
        events += self._fire(self._child_watches, path, "deleted")
        events += self._fire(self._child_watches, parent_of(path), "child")
        return events

    def _fire(self, table: dict[str, set[int]], path: str, kind: str) -> list[tuple[int, WatchEvent]]:
        sids = table.pop(path, None)
        if not sids:
            return []
        return [(sid, WatchEvent(kind, path)) for sid in sorted(sids)]

    def _dispatch(self, events: list[tuple[int, WatchEvent]]) -> None:
        for sid, ev in events:
            s = self._sessions.get(sid)
            if s is not None:
                s._deliver(ev)

    def _apply(self, sid: int, op: Op, events: list[tuple[int, WatchEvent]], undo: list[Callable[[], None]]) -> object:
        """Apply one op (raising StoreError); record how to undo it and which watches fire."""
        if isinstance(op, Create):
            validate_path(op.path)
            if op.path == "/":
                raise NodeExists("/")
            if op.path in self._nodes:
                raise NodeExists(op.path)
            parent_path = parent_of(op.path)
            parent = self._nodes.get(parent_path)
            if parent is None:
                raise NoNode(parent_path)
            if parent.ephemeral_owner:
                raise BadArguments(op.path, f"ephemeral node {parent_path} cannot have children")
            if not isinstance(op.data, (bytes, bytearray)):
                raise BadArguments(op.path, "data must be bytes")
            self._zxid += 1
            name = op.path.rsplit("/", 1)[1]
            self._nodes[op.path] = _Node(bytes(op.data), 0, self._zxid, self._zxid, sid if op.ephemeral else 0)
            parent.children.add(name)
            parent.cversion += 1

            def undo_create(path: str = op.path, parent: _Node = parent, name: str = name) -> None:
                del self._nodes[path]
                parent.children.discard(name)
                parent.cversion -= 1
                self._zxid -= 1

            undo.append(undo_create)
            events.append(("data", op.path, "created"))  # type: ignore[arg-type]
            events.append(("child", parent_path, "child"))  # type: ignore[arg-type]
            return op.path
        if isinstance(op, SetData):
            n = self._node(op.path)
            if op.version != ANY_VERSION and op.version != n.version:
                raise BadVersion(op.path)
            if not isinstance(op.data, (bytes, bytearray)):
                raise BadArguments(op.path, "data must be bytes")
            old = (n.data, n.version, n.mzxid)
            self._zxid += 1
            n.data, n.version, n.mzxid = bytes(op.data), n.version + 1, self._zxid

            def undo_set(n: _Node = n, old: tuple = old) -> None:
                n.data, n.version, n.mzxid = old
                self._zxid -= 1

            undo.append(undo_set)
            events.append(("data", op.path, "changed"))  # type: ignore[arg-type]
            return n.stat()
        if isinstance(op, Delete):
            if op.path == "/":
                raise BadArguments("/", "the root cannot be deleted")
            n = self._node(op.path)
            if op.version != ANY_VERSION and op.version != n.version:
                raise BadVersion(op.path)
            if n.children:
                raise NotEmpty(op.path)
            parent = self._nodes[parent_of(op.path)]
            name = op.path.rsplit("/", 1)[1]
            self._zxid += 1
            del self._nodes[op.path]
            parent.children.discard(name)
            parent.cversion += 1

            def undo_delete(path: str = op.path, n: _Node = n, parent: _Node = parent, name: str = name) -> None:
                self._nodes[path] = n
                parent.children.add(name)
                parent.cversion -= 1
                self._zxid -= 1

            undo.append(undo_delete)
            events.append(("delete", op.path, "deleted"))  # type: ignore[arg-type]
            return None
        if isinstance(op, Check):
            n = self._node(op.path)
            if op.version != ANY_VERSION and op.version != n.version:
                raise BadVersion(op.path)
            return True
        raise BadArguments("", f"unknown op {op!r}")

    def _commit_events(self, pending: list) -> None:
        fired: list[tuple[int, WatchEvent]] = []
        for what, path, kind in pending:
            if what == "data":
                fired += self._fire(self._data_watches, path, kind)
            elif what == "child":
                fired += self._fire(self._child_watches, path, kind)
            elif what == "delete":
                fired += self._fire(self._data_watches, path, "deleted")
                fired += self._fire(self._child_watches, path, "deleted")
                fired += self._fire(self._child_watches, parent_of(path), "child")
        self._dispatch(fired)

    def _run(self, sid: int, ops: Sequence[Op], in_multi: bool) -> list[object]:
        events: list = []
        undo: list[Callable[[], None]] = []
        results: list[object] = []
        for i, op in enumerate(ops):
            try:
                results.append(self._apply(sid, op, events, undo))
            except StoreError as e:
                for u in reversed(undo):
                    u()
                if in_multi:
                    raise TransactionFailed(i, e) from None
                raise
        self._commit_events(events)
        return results

    def _watch(self, table: dict[str, set[int]], path: str, sid: int) -> None:
        table.setdefault(path, set()).add(sid)


class EmbeddedSession(SessionBase):
    """A session of an :class:`EmbeddedStore`; ``on_event`` (if set) also receives fired watches."""

    def __init__(self, store: EmbeddedStore, session_id: int) -> None:
        self._store = store
        self.session_id = session_id
        self._events: deque[WatchEvent] = deque()
        self._expired = False
        self.on_event: Callable[[WatchEvent], None] | None = None

    def _live(self) -> EmbeddedStore:
        if self._expired:
            raise SessionExpired("", f"session {self.session_id} has expired")
        return self._store

    def _deliver(self, ev: WatchEvent) -> None:
        self._events.append(ev)
        if self.on_event is not None:
            self.on_event(ev)

    # ------------------------------------------------------------------ reads
    def get(self, path: str, watch: bool = False) -> tuple[bytes, Stat]:
        st = self._live()
        n = st._node(path)
        if watch:
            st._watch(st._data_watches, path, self.session_id)
        return n.data, n.stat()

    def exists(self, path: str, watch: bool = False) -> Stat | None:
        st = self._live()
        validate_path(path)
        if watch:
            st._watch(st._data_watches, path, self.session_id)
        n = st._nodes.get(path)
        return None if n is None else n.stat()

    def get_children(self, path: str, watch: bool = False) -> list[str]:
        st = self._live()
        n = st._node(path)
        if watch:
            st._watch(st._child_watches, path, self.session_id)
        return sorted(n.children)

    # ------------------------------------------------------------------ writes
    def create(self, path: str, data: bytes = b"", ephemeral: bool = False, makepath: bool = False) -> str:
        st = self._live()
        if makepath:
            parent = parent_of(path)
            if parent != "/" and parent not in st._nodes:
                self.ensure_path(parent)
        return st._run(self.session_id, [Create(path, data, ephemeral)], in_multi=False)[0]  # type: ignore[return-value]

    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat:
        st = self._live()
        return st._run(self.session_id, [SetData(path, data, version)], in_multi=False)[0]  # type: ignore[return-value]

    def delete(self, path: str, version: int = ANY_VERSION) -> None:
        st = self._live()
        st._run(self.session_id, [Delete(path, version)], in_multi=False)

    def multi(self, ops: Sequence[Op]) -> list[object]:
        st = self._live()
        return st._run(self.session_id, list(ops), in_multi=True)

    # ------------------------------------------------------------------ events, lifetime
    def poll_events(self, timeout: float = 0.0) -> list[WatchEvent]:
        out = list(self._events)
        self._events.clear()
        return out

    def close(self) -> None:
        if not self._expired:
            self._store.expire(self.session_id)
        self._expired = True

    @property
    def expired(self) -> bool:
        return self._expired
