"""The embedded store served to other processes over TCP (the real cluster without ZooKeeper).

:class:`StoreServer` hosts one :class:`~.embedded.EmbeddedStore` on an asyncio loop; every
TCP connection is one session, which **expires when the connection closes** (so the registration of
a broker killed with SIGKILL vanishes at once, as a ZooKeeper session would after its timeout).
Requests and answers are frames (:mod:`isrcheck.impl.wire.frame`) carrying ``StoreRequest`` / ``StoreResponse``
objects; fired watches are pushed as ``StoreEvent`` frames. Every request is checked field by field
(:mod:`.requests`) before it runs: a malformed one is answered with a ``BadArguments`` error and the
connection stays open. With a cluster secret every frame carries a MAC both ways; a frame without a
valid one is answered with ``Unauthenticated``, the connection closed (and with it the session) and
nothing in the store changes. Each refused frame or request is one warning line in the log.

:class:`RemoteStore` is the client side: a :class:`~isrcheck.impl.core.store.Store` whose sessions are connections,
usable from any thread (a reader thread collects answers and events).
"""
from __future__ import annotations

import asyncio
import base64
import itertools
import logging
import queue
import socket
import threading
from typing import Any, Callable, Sequence

from ..core.store import (ERRORS, Check, Create, Delete, Op, SessionExpired, SetData, Stat, Store, StoreError,
                          StoreUnavailable, TransactionFailed, WatchEvent, drain_events)
from ..core.store import Session as SessionBase
from ..wire.channel import Channel, accept_handshake, blocking_handshake, read_channel_frame
from ..wire.frame import FrameDecoder, FrameError, encode_frame, read_frame
from ..wire.gate import GatedServer
from .embedded import EmbeddedSession, EmbeddedStore
from .requests import BadRequest, StoreRequest, parse_request, request_id

log = logging.getLogger("isrcheck.impl")
STORE_NAME = "store"  # the store server's name: the destination its clients' connections are bound to
MAX_UNAUTHENTICATED = 64  # connections in their handshake at once; more are closed at once


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(s: str) -> bytes:
    return base64.b64decode(s.encode(), validate=True)


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

    def __init__(self, host: str = "127.0.0.1", port: int = 0, store: EmbeddedStore | None = None,
                 secret: bytes | None = None) -> None:
        self.host = host
        self.port = port
        self.store = store or EmbeddedStore()
        self.secret = secret
        self._server: GatedServer | None = None  # accepts through the gate (wire.gate)
        self._unauthenticated = 0  # connections still in their handshake

    async def start(self) -> int:
        self._server = GatedServer(self._serve)
        self.port = await self._server.start(self.host, self.port)
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        secret = self.secret
        ch: Channel | None = None
        if secret is not None:  # the handshake first: a stranger gets no session (wire.channel)
            if self._unauthenticated >= MAX_UNAUTHENTICATED:
                _refused(peer, "TooManyConnections: too many connections in their handshake (connection closed)")
                writer.close()
                return
            self._unauthenticated += 1
            ch = Channel(secret, STORE_NAME, accepting=True)
            try:
                await accept_handshake(reader, writer, ch)
            except (FrameError, asyncio.TimeoutError, ConnectionError, OSError) as e:
                why = f"{e.code}: {e}" if isinstance(e, FrameError) else f"{type(e).__name__}: no hello in time"
                _refused(peer, f"{why} (connection closed)")
                if isinstance(e, FrameError):  # one plain refusal: nothing is authenticated before the handshake
                    error = "Unauthenticated" if e.code == "Unauthenticated" else "BadArguments"
                    try:
                        writer.write(encode_frame({"type": "StoreResponse", "id": 0, "error": error, "message": why}))
                    except (ConnectionError, RuntimeError):
                        pass
                writer.close()
                return
            finally:
                self._unauthenticated -= 1

        def encode(obj: dict[str, Any]) -> bytes:
            return ch.encode(obj) if ch is not None else encode_frame(obj)

        session: EmbeddedSession = self.store.session()

        def push(ev: WatchEvent) -> None:
            if not writer.is_closing():
                writer.write(encode({"type": "StoreEvent", "kind": ev.kind, "path": ev.path}))

        session.on_event = push
        writer.write(encode({"type": "StoreHello", "session": session.session_id}))
        try:
            while True:
                try:
                    req = await (read_channel_frame(reader, ch) if ch is not None else read_frame(reader))
                except (FrameError, asyncio.TimeoutError) as e:
                    code, why = (e.code, str(e)) if isinstance(e, FrameError) else ("ReadTimeout", "a frame took "
                                                                                    "too long to arrive")
                    _refused(peer, f"{code}: {why} (connection closed)")
                    error = "Unauthenticated" if code in ("Unauthenticated", "Replayed") else "BadArguments"
                    writer.write(encode({"type": "StoreResponse", "id": 0, "error": error,
                                         "message": f"{code}: {why}"}))
                    await writer.drain()
                    break
                if req is None:
                    break
                writer.write(encode(self._answer(session, req, peer)))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        except Exception as e:  # noqa: BLE001 - whatever a peer sent: one line, and this session only
            _refused(peer, f"{type(e).__name__}: {str(e)[:120]} (connection dropped)")
        finally:
            session.close()  # the connection is the session: its ephemerals go with it
            writer.close()

    def _answer(self, s: EmbeddedSession, obj: dict[str, Any], peer: Any = None) -> dict[str, Any]:
        """The response to one decoded request frame: checked first (:mod:`.requests`), then run."""
        try:
            req = parse_request(obj)
        except BadRequest as e:
            _refused(peer, f"BadArguments: {e}")
            return {"type": "StoreResponse", "id": request_id(obj), "error": e.code, "path": e.path,
                    "message": str(e)}
        try:
            v = self._run(s, req)
        except TransactionFailed as e:
            return {"type": "StoreResponse", "id": req.id, "error": "TransactionFailed", "index": e.index,
                    "cause": e.cause.code, "path": e.cause.path}
        except StoreError as e:
            return {"type": "StoreResponse", "id": req.id, "error": e.code, "path": e.path, "message": str(e)}
        return {"type": "StoreResponse", "id": req.id, "value": _value_to_wire(v)}

    @staticmethod
    def _run(s: EmbeddedSession, req: StoreRequest) -> Any:
        if req.op == "create":
            return s.create(req.path, req.data, req.ephemeral, req.makepath)
        if req.op == "get":
            return s.get(req.path, req.watch)
        if req.op == "exists":
            return s.exists(req.path, req.watch)
        if req.op == "children":
            return s.get_children(req.path, req.watch)
        if req.op == "set":
            return s.set(req.path, req.data, req.version)
        if req.op == "delete":
            s.delete(req.path, req.version)
            return None
        return s.multi(list(req.ops))


def _refused(peer: Any, why: str) -> None:
    """One bounded warning line per refused frame or request (no traceback)."""
    log.warning("store: refused a request from %s: %s", peer, why[:200].replace("\n", " "))


# ---------------------------------------------------------------------------- client
class RemoteStore(Store):
    def __init__(self, host: str, port: int, timeout: float = 10.0, secret: bytes | None = None) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.secret = secret
        self._sessions: list[RemoteSession] = []

    def session(self) -> RemoteSession:
        s = RemoteSession(self.host, self.port, self.timeout, self.secret)
        self._sessions.append(s)
        return s

    def close(self) -> None:
        for s in self._sessions:
            s.close()


class RemoteSession(SessionBase):
    def __init__(self, host: str, port: int, timeout: float, secret: bytes | None = None) -> None:
        self.timeout = timeout
        self.secret = secret
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise StoreUnavailable("", f"cannot reach the store at {host}:{port}: {e.strerror or e}") from None
        self._channel: Channel | None = None
        if secret is not None:
            ch = Channel(secret, "store-client", STORE_NAME, accepting=False)
            try:
                blocking_handshake(self._sock, ch)
            except (OSError, FrameError) as e:
                self._sock.close()
                raise StoreUnavailable("", f"the store at {host}:{port} refused the connection: {e}") from None
            self._channel = ch
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
        self._broken = ""  # why the reader gave up on the connection (a refused frame), for the error
        self._reader = threading.Thread(target=self._read_loop, name="store-client", daemon=True)
        self._reader.start()
        if not self._hello.wait(timeout):
            self.close()
            raise StoreUnavailable("", f"the store at {host}:{port} did not answer")
        if self._expired:  # the connection ended before or at the hello (a wrong or missing secret)
            self.close()
            raise StoreUnavailable("", f"the store at {host}:{port} ended the session at once"
                                       + (f": {self._broken}" if self._broken else ""))

    def _read_loop(self) -> None:
        dec: Channel | FrameDecoder = self._channel if self._channel is not None else FrameDecoder()
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
        except FrameError as e:  # e.g. the server's frames carry no MAC, or one made with another secret
            self._broken = f"{e.code}: {e}"
        except (OSError, KeyError, TypeError, ValueError):
            pass  # a connection that breaks the protocol is as good as lost: the session ends
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
            self._hello.set()  # a constructor still waiting learns at once that there is no session

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
                ch = self._channel
                self._sock.sendall(ch.encode(req) if ch is not None else encode_frame(req))
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
        try:
            return _value_from_wire(ans.get("value"))
        except (KeyError, TypeError, ValueError):
            raise StoreUnavailable(req.get("path", ""), "a malformed answer from the store") from None

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


def open_store(spec: str, timeout: float = 10.0, secret: bytes | None = None) -> Store:
    """A store from a spec: ``zookeeper:HOST:PORT[/chroot]`` or ``embedded:HOST:PORT`` (a store server,
    spoken to with frames authenticated by ``secret`` when given; ZooKeeper does not see it)."""
    kind, _, rest = spec.partition(":")
    if kind == "zookeeper":
        from .zookeeper import ZooKeeperStore

        return ZooKeeperStore(rest, timeout=timeout)
    if kind == "embedded":
        host, _, port = rest.rpartition(":")
        if not host or not port.isdigit():
            raise StoreError("", f"bad store address {rest!r}: expected HOST:PORT")
        return RemoteStore(host, int(port), timeout=timeout, secret=secret)
    raise StoreError("", f"unknown store {spec!r}: expected zookeeper:HOST:PORT or embedded:HOST:PORT")
