"""The embedded store served to other processes over TCP (the real cluster without ZooKeeper).

:class:`StoreServer` hosts one :class:`~.store_embedded.EmbeddedStore` on an asyncio loop; every
TCP connection is one session, which **expires when the connection closes** (so the registration of
a broker killed with SIGKILL vanishes at once, as a ZooKeeper session would after its timeout).
Requests and answers are frames (:mod:`.frame`) carrying ``StoreRequest`` / ``StoreResponse``
objects; fired watches are pushed as ``StoreEvent`` frames.

:class:`RemoteStore` is the client side: a :class:`~.store.Store` whose sessions are connections,
usable from any thread (a reader thread collects answers and events).
"""
from __future__ import annotations

import asyncio
import base64
import itertools
import queue
import socket
import threading
from typing import Any, Callable, Sequence

from .frame import FrameDecoder, FrameError, encode_frame, read_frame
from .store import (
    drain_events,
    ERRORS,
    Check,
    Create,
    Delete,
    Op,
    SessionExpired,
    SetData,
    Stat,
    Store,
    StoreError,
    StoreUnavailable,
    TransactionFailed,
    WatchEvent,
)
from .store import Session as SessionBase
from .store_embedded import EmbeddedSession, EmbeddedStore


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(s: str) -> bytes:
    return base64.b64decode(s.encode())


def _op_to_wire(op: Op) -> dict[str, Any]:
    if isinstance(op, Create):
        return {"op": "create", "path": op.path, "data": _b64(op.data), "ephemeral": op.ephemeral}
    if isinstance(op, SetData):
        return {"op": "set", "path": op.path, "data": _b64(op.data), "version": op.version}
    if isinstance(op, Delete):
        return {"op": "delete", "path": op.path, "version": op.version}
    if isinstance(op, Check):
        return {"op": "check", "path": op.path, "version": op.version}
    raise StoreError("", f"unknown op {op!r}")


def _op_from_wire(d: dict[str, Any]) -> Op:
    kind = d.get("op")
    if kind == "create":
        return Create(str(d["path"]), _unb64(d.get("data", "")), bool(d.get("ephemeral", False)))
    if kind == "set":
        return SetData(str(d["path"]), _unb64(d.get("data", "")), int(d.get("version", -1)))
    if kind == "delete":
        return Delete(str(d["path"]), int(d.get("version", -1)))
    if kind == "check":
        return Check(str(d["path"]), int(d["version"]))
    raise StoreError("", f"unknown op {kind!r}")


def _value_to_wire(v: Any) -> Any:
    if isinstance(v, Stat):
        return {"stat": list(v)}
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], bytes):
        return {"data": _b64(v[0]), "stat": list(v[1])}
    if isinstance(v, list):
        return [_value_to_wire(x) for x in v]
    return v


def _value_from_wire(v: Any) -> Any:
    if isinstance(v, dict) and "stat" in v:
        st = Stat(*v["stat"])
        return (_unb64(v["data"]), st) if "data" in v else st
    if isinstance(v, list):
        return [_value_from_wire(x) for x in v]
    return v


# ---------------------------------------------------------------------------- server
class StoreServer:
    """Serves an embedded store on ``host:port`` (port 0 picks a free one)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, store: EmbeddedStore | None = None) -> None:
        self.host = host
        self.port = port
        self.store = store or EmbeddedStore()
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session: EmbeddedSession = self.store.session()

        def push(ev: WatchEvent) -> None:
            if not writer.is_closing():
                writer.write(encode_frame({"type": "StoreEvent", "kind": ev.kind, "path": ev.path}))

        session.on_event = push
        writer.write(encode_frame({"type": "StoreHello", "session": session.session_id}))
        try:
            while True:
                try:
                    req = await read_frame(reader)
                except FrameError as e:
                    writer.write(encode_frame({"type": "StoreResponse", "id": 0, "error": "BadArguments",
                                               "message": str(e)}))
                    break
                if req is None:
                    break
                writer.write(encode_frame(self._answer(session, req)))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            session.close()  # the connection is the session: its ephemerals go with it
            writer.close()

    def _answer(self, s: EmbeddedSession, req: dict[str, Any]) -> dict[str, Any]:
        rid = req.get("id", 0)
        try:
            op = req.get("op")
            path = req.get("path", "")
            if op == "create":
                v: Any = s.create(path, _unb64(req.get("data", "")), bool(req.get("ephemeral")),
                                  bool(req.get("makepath")))
            elif op == "get":
                v = s.get(path, bool(req.get("watch")))
            elif op == "exists":
                v = s.exists(path, bool(req.get("watch")))
            elif op == "children":
                v = s.get_children(path, bool(req.get("watch")))
            elif op == "set":
                v = s.set(path, _unb64(req.get("data", "")), int(req.get("version", -1)))
            elif op == "delete":
                s.delete(path, int(req.get("version", -1)))
                v = None
            elif op == "multi":
                v = s.multi([_op_from_wire(o) for o in req.get("ops", [])])
            else:
                raise StoreError(path, f"unknown store request {op!r}")
        except TransactionFailed as e:
            return {"type": "StoreResponse", "id": rid, "error": "TransactionFailed", "index": e.index,
                    "cause": e.cause.code, "path": e.cause.path}
        except StoreError as e:
            return {"type": "StoreResponse", "id": rid, "error": e.code, "path": e.path, "message": str(e)}
        except (KeyError, TypeError, ValueError) as e:
            return {"type": "StoreResponse", "id": rid, "error": "BadArguments", "message": f"bad request: {e}"}
        return {"type": "StoreResponse", "id": rid, "value": _value_to_wire(v)}


# ---------------------------------------------------------------------------- client
class RemoteStore(Store):
    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._sessions: list[RemoteSession] = []

    def session(self) -> RemoteSession:
        s = RemoteSession(self.host, self.port, self.timeout)
        self._sessions.append(s)
        return s

    def close(self) -> None:
        for s in self._sessions:
            s.close()


class RemoteSession(SessionBase):
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.timeout = timeout
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise StoreUnavailable("", f"cannot reach the store at {host}:{port}: {e.strerror or e}") from None
        self._sock.settimeout(None)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._waiting: dict[int, list[Any]] = {}
        self._cond = threading.Condition()
        self._events: queue.Queue[WatchEvent] = queue.Queue()
        self._expired = False
        self.on_event: Callable[[WatchEvent], None] | None = None
        self.session_id = 0
        self._hello = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name="store-client", daemon=True)
        self._reader.start()
        if not self._hello.wait(timeout):
            self.close()
            raise StoreUnavailable("", f"the store at {host}:{port} did not answer")

    def _read_loop(self) -> None:
        dec = FrameDecoder()
        try:
            while True:
                data = self._sock.recv(65536)
                if not data:
                    break
                for obj in dec.feed(data):
                    t = obj.get("type")
                    if t == "StoreHello":
                        self.session_id = int(obj["session"])
                        self._hello.set()
                    elif t == "StoreEvent":
                        ev = WatchEvent(str(obj["kind"]), str(obj["path"]))
                        self._events.put(ev)
                        if self.on_event is not None:
                            self.on_event(ev)
                    elif t == "StoreResponse":
                        with self._cond:
                            slot = self._waiting.get(int(obj.get("id", 0)))
                            if slot is not None:
                                slot.append(obj)
                            self._cond.notify_all()
        except (OSError, FrameError):
            pass
        finally:
            was = self._expired
            self._expired = True
            with self._cond:
                self._cond.notify_all()
            if not was:
                ev = WatchEvent("expired", "")
                self._events.put(ev)
                if self.on_event is not None:
                    self.on_event(ev)

    def _call(self, req: dict[str, Any]) -> Any:
        if self._expired:
            raise SessionExpired(req.get("path", ""), "the store session has ended")
        rid = next(self._ids)
        req = {"type": "StoreRequest", "id": rid, **req}
        slot: list[Any] = []
        with self._cond:
            self._waiting[rid] = slot
        try:
            with self._lock:
                self._sock.sendall(encode_frame(req))
        except OSError:
            raise StoreUnavailable(req.get("path", ""), "the store connection is lost") from None
        with self._cond:
            ok = self._cond.wait_for(lambda: slot or self._expired, timeout=self.timeout)
            self._waiting.pop(rid, None)
        if not slot:
            if self._expired:
                raise SessionExpired(req.get("path", ""), "the store session has ended")
            raise StoreUnavailable(req.get("path", ""), "the store did not answer in time") if not ok else \
                StoreUnavailable(req.get("path", ""), "no answer")
        ans = slot[0]
        err = ans.get("error")
        if err:
            if err == "TransactionFailed":
                cause = ERRORS.get(ans.get("cause", ""), StoreError)(ans.get("path", ""))
                raise TransactionFailed(int(ans.get("index", 0)), cause)
            raise ERRORS.get(err, StoreError)(ans.get("path", ""), ans.get("message", ""))
        return _value_from_wire(ans.get("value"))

    def create(self, path: str, data: bytes = b"", ephemeral: bool = False, makepath: bool = False) -> str:
        return self._call({"op": "create", "path": path, "data": _b64(data), "ephemeral": ephemeral,
                           "makepath": makepath})

    def get(self, path: str, watch: bool = False) -> tuple[bytes, Stat]:
        return self._call({"op": "get", "path": path, "watch": watch})

    def exists(self, path: str, watch: bool = False) -> Stat | None:
        return self._call({"op": "exists", "path": path, "watch": watch})

    def get_children(self, path: str, watch: bool = False) -> list[str]:
        return self._call({"op": "children", "path": path, "watch": watch})

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return self._call({"op": "set", "path": path, "data": _b64(data), "version": version})

    def delete(self, path: str, version: int = -1) -> None:
        self._call({"op": "delete", "path": path, "version": version})

    def multi(self, ops: Sequence[Op]) -> list[object]:
        return self._call({"op": "multi", "ops": [_op_to_wire(o) for o in ops]})

    def poll_events(self, timeout: float = 0.0) -> list[WatchEvent]:
        return drain_events(self._events, timeout)

    def close(self) -> None:
        self._expired = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    @property
    def expired(self) -> bool:
        return self._expired


def open_store(spec: str, timeout: float = 10.0) -> Store:
    """A store from a spec: ``zookeeper:HOST:PORT[/chroot]`` or ``embedded:HOST:PORT`` (a store server)."""
    kind, _, rest = spec.partition(":")
    if kind == "zookeeper":
        from .store_zookeeper import ZooKeeperStore

        return ZooKeeperStore(rest, timeout=timeout)
    if kind == "embedded":
        host, _, port = rest.rpartition(":")
        if not host or not port.isdigit():
            raise StoreError("", f"bad store address {rest!r}: expected HOST:PORT")
        return RemoteStore(host, int(port), timeout=timeout)
    raise StoreError("", f"unknown store {spec!r}: expected zookeeper:HOST:PORT or embedded:HOST:PORT")
