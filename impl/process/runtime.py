"""The real-process driver shared by broker nodes and coordinators: one sans-IO core on asyncio.

A :class:`Runtime` feeds the core its inputs one at a time on the event loop and performs the
effects it returns:

- ``Send(("conn", n), msg)`` answers on inbound connection ``n``; ``Send(("broker", b), msg)`` goes
  over an outbound connection to broker ``b`` (its address read from its registration in the store),
  and ``Send(("controller", 0), msg)`` to the active controller (from ``/controller``). A message to
  a peer that cannot be reached is lost, as on a real network; answers on an outbound connection come
  back as ``Receive(("broker", b), ...)`` / ``Receive(("controller", 0), ...)``.
- ``StoreOp`` runs on one worker thread (in order) against the process's store session, reopened if
  it expired; its ``StoreResult`` comes back on the loop. Fired watches come back as ``Notification``.
- When the session ends (it expired, or its connection was lost) the core hears
  ``Notification("expired", "")`` and the runtime opens a new session at once, retrying while the
  store cannot be reached, without waiting for a store call to need one; whichever opens it, the core
  then gets ``SessionRenewed`` *before* the answer of any call made on the new session, so it can tell
  the answers of the old session from those of the new one and re-create what the old one owned.
- ``SetTimer`` / ``CancelTimer`` use the loop's timers (a new timer replaces one of the same name and
  key); ``Persist`` goes to the disk, if any; ``Stop`` ends the process. A step's disk writes are
  performed before any of its other effects; when one fails (:class:`~isrcheck.impl.disk.errors.StorageError`:
  ENOSPC, EIO) the step's other effects are dropped, the core's ``storage_failed`` answers are sent
  and the runtime stops (the broker's log directory is offline; :mod:`.node` waits for the disk and
  starts again from its files).

Connections speak frames (:mod:`isrcheck.impl.wire.frame`); with ``secret`` every connection, inbound and
outbound, is a channel (:mod:`isrcheck.impl.wire.channel`: a handshake bound to the peer's name,
then sequenced frames under a per-connection key), so no frame can be replayed. At most
``max_unauthenticated`` inbound connections may be in their handshake at once (more are closed at
once), a handshake must finish within ``handshake_timeout`` and a started frame within
``read_timeout``; new connections are accepted at most at ``accept_gate``'s rate
(:mod:`isrcheck.impl.wire.gate`: a flood waits in the listen backlog instead of costing this process
a refusal each). A frame that breaks the format or its limits, or lacks a valid tag, or is replayed,
gets one ``ErrorResponse`` (a plain frame before the handshake) and the connection is closed; a
well-formed frame that is not a known message gets an ``ErrorResponse`` and the connection stays
open. Either way the process writes exactly one warning line (no traceback) and nothing reaches the
core; other connections are not disturbed.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import sys
import threading
import time
from typing import Any, Callable

from ..core import layout as L
from ..core.messages import (
    CancelTimer,
    Committed,
    ErrorResponse,
    Notification,
    Persist,
    Receive,
    Send,
    SessionRenewed,
    SetTimer,
    Stop,
    StoreOp,
    StoreResult,
    Timer,
    short_repr,
)
from ..core.config import ImplConfig, from_mapping
from ..core.store import Session, Store, StoreError
from ..disk.errors import StorageError
from ..store.remote import open_store
from ..core.messages import to_wire
from ..wire.channel import HANDSHAKE_TIMEOUT, READ_TIMEOUT, Channel, accept_handshake, connect_handshake, read_channel_frame
from ..wire.frame import FrameError, MessageError, decode_message, encode_message, read_frame
from ..wire.gate import AcceptGate, GatedServer
from . import routes
from .unsafe_settings import warning_lines

log = logging.getLogger("isrcheck.impl")


MAX_UNAUTHENTICATED = 64  # inbound connections in their handshake at once; more are closed at once
OUTBOUND_HANDSHAKE_TIMEOUT = 30.0  # seconds for a peer's server hello on a connection this process opened


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def open_core_store(config: dict[str, Any], store_spec: str, session_timeout: float,
                    secret: bytes | None) -> tuple[ImplConfig, Store]:
    """What a broker or a controller process does before it builds its core: read its configuration
    (:class:`~isrcheck.impl.core.config.ConfigError` if it is bad), print on stderr the settings the
    model shows unsafe (:mod:`.unsafe_settings`), and open the store with the session timeout its
    launcher chose (for the backends that have one). One function, so both kinds of process start
    alike."""
    cfg = from_mapping(config)
    for line in warning_lines(cfg):
        print(line, file=sys.stderr, flush=True)
    store = open_store(store_spec, timeout=10.0, secret=secret)
    if hasattr(store, "session_timeout"):
        store.session_timeout = session_timeout  # type: ignore[attr-defined]
    return cfg, store


def refused(name: str, peer: Any, why: str) -> None:
    """The one log line for a refused frame or message: bounded, no traceback, so that garbage on a
    port cannot grow the log faster than it arrives (a 1.9 KB frame once wrote a 130 KB traceback)."""
    log.warning("%s: refused a frame from %s: %s", name, peer, why[:200].replace("\n", " "))


def _close_quietly(s: Session) -> None:
    try:
        s.close()
    except Exception as e:  # noqa: BLE001 - the session has ended anyway; closing is housekeeping
        log.debug("closing an ended store session failed: %s", e)


class Runtime:
    def __init__(self, core: Any, store: Store, disk: Any = None, feed_now: bool = False, name: str = "",
                 secret: bytes | None = None) -> None:
        self.core = core
        self.secret = secret  # the cluster secret: frames are authenticated both ways (.auth)
        self.store = store
        self.disk = disk
        self.feed_now = feed_now  # broker cores take the clock with each input
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self.session: Session | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{name}")
        self._timers: dict[tuple[str, Any], asyncio.TimerHandle] = {}
        self._conns: dict[int, asyncio.StreamWriter] = {}
        self._channels: dict[int, Channel] = {}  # inbound connection -> its authenticated channel
        self._unauthenticated = 0  # inbound connections still in their handshake
        self.max_unauthenticated = MAX_UNAUTHENTICATED
        self.handshake_timeout = HANDSHAKE_TIMEOUT
        self.read_timeout = READ_TIMEOUT  # seconds for a started frame to finish arriving
        self._conn_ids = itertools.count(1)
        self._outbound: dict[tuple[str, Any], asyncio.Queue[Any]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.stopped = asyncio.Event()
        self.stop_reason = ""
        self.server: GatedServer | None = None
        self.accept_gate = AcceptGate()  # how fast new connections are accepted (wire.gate)
        self.on_effect: Callable[[Any], None] | None = None
        self.step_logger: Any = None  # an .event_log.StepLogger when the process writes its own event log
        self._renewing = False  # a task is opening a new session after the old one ended
        self.storage_error: StorageError | None = None  # the disk write that took the log directory offline

    # ------------------------------------------------------------------ lifecycle
    async def open_session(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.session = await self.loop.run_in_executor(self._executor, self._new_session)

    def _new_session(self) -> Session:
        s = self.store.session()
        loop = self.loop
        assert loop is not None

        def on_event(ev: Any) -> None:
            if ev.kind == "expired":
                loop.call_soon_threadsafe(self._session_ended, s)
            else:
                loop.call_soon_threadsafe(self.feed, Notification(ev.kind, ev.path))

        s.on_event = on_event  # type: ignore[attr-defined]
        return s

    def _ensure_session(self) -> int | None:
        """On the store thread: open a new session if there is none or it ended (StoreError if the store
        cannot be reached). Returns the new session's id when it replaces an ended one (the core must be
        told), None otherwise. The old session is closed on a thread of its own: a ZooKeeper client that
        lost its session may be reconnecting, and stopping it must not hold up the store calls."""
        old = self.session
        if old is not None and not old.expired:
            return None
        new = self._new_session()
        self.session = new
        if old is None:
            return None
        threading.Thread(target=_close_quietly, args=(old,), name=f"close-{self.name}", daemon=True).start()
        return new.session_id

    def _session_ended(self, s: Session) -> None:
        """On the loop: session ``s`` reported its end. Tell the core and open a new session now, so a
        core that makes no store call (an idle broker) still learns it and re-registers. An end reported
        by a session already replaced is old news: the core had its SessionRenewed."""
        if s is not self.session or self.stopped.is_set():
            return
        self.feed(Notification("expired", ""))
        if not self._renewing:
            self._renewing = True
            self._spawn(self._renew())

    async def _renew(self) -> None:
        """Open a new session, retrying with a growing pause while the store cannot be reached."""
        loop = asyncio.get_running_loop()
        pause = 0.05
        try:
            while not self.stopped.is_set():
                try:
                    renewed = await loop.run_in_executor(self._executor, self._ensure_session)
                except (StoreError, OSError) as e:
                    log.info("%s: no new store session yet: %s", self.name, e)
                    await asyncio.sleep(pause)
                    pause = min(1.0, pause * 2)
                    continue
                self._session_renewed(renewed)
                return
        finally:
            self._renewing = False

    def _session_renewed(self, renewed: int | None) -> None:
        if renewed is not None:
            log.info("%s: new store session %#x", self.name, renewed)
            self.feed(SessionRenewed(renewed))

    async def serve(self, host: str, port: int) -> int:
        self.server = GatedServer(self._serve_conn, self.accept_gate)
        return await self.server.start(host, port)

    async def shutdown(self) -> None:
        for h in self._timers.values():
            h.cancel()
        self._timers.clear()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        for w in list(self._conns.values()):
            w.close()
        for t in list(self._tasks):
            t.cancel()
        s = self.session
        if s is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, s.close)
        self._executor.shutdown(wait=False)
        if self.disk is not None and hasattr(self.disk, "close"):
            self.disk.close()

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ inputs
    def feed(self, inp: Any) -> None:
        if self.stopped.is_set():
            return
        steps = self.step_logger
        try:
            before = steps.before(inp) if steps is not None else None
            effects = self.core.handle(inp, now_ms()) if self.feed_now else self.core.handle(inp)
        except Exception:  # noqa: BLE001 - a bug in one input must not take the process down silently
            log.exception("%s: the core failed on %r", self.name, inp)
            return
        # The disk first: a step's own writes (an append, an HW checkpoint) are done before its event-log
        # line, so a line never claims a write that a kill between the two lost; then the line, before
        # the effects seen elsewhere (messages, store calls), so a step it causes elsewhere comes later.
        # The order is the same with the log off, so logging does not change what is logged.
        try:
            for eff in effects:
                if isinstance(eff, Persist):
                    self._perform(eff)
        except StorageError as e:
            self._storage_failed(inp, e)
            return
        if steps is not None:
            try:
                steps.after(inp, effects, before)
            except Exception:  # noqa: BLE001 - the log is evidence, not a reason to stop serving
                log.exception("%s: writing the event log failed on %r", self.name, inp)
        for eff in effects:
            if not isinstance(eff, Persist):
                self._perform(eff)

    def _storage_failed(self, inp: Any, error: StorageError) -> None:
        """A disk write of ``inp``'s step failed (the disk put the file back and is now offline): none of
        the step's other effects is performed, so nothing it appended is acknowledged, served or
        counted by a follower's fetch; the core's answers for that case (``KafkaStorageError`` to the
        waiting producers) go out, and the process stops serving. Its store session closes with it, so
        the controller sees the broker (and with it its only log directory) go offline."""
        log.error("%s: %s: the log directory is offline", self.name, error)
        self.storage_error = error
        if self.step_logger is not None:
            try:  # the model's Crash(b), before the answers: whatever reacts to it comes later
                self.step_logger.offline(str(error))
            except Exception:  # noqa: BLE001 - the log is evidence, not a reason to keep serving
                log.exception("%s: writing the event log failed at the storage error", self.name)
        answers = getattr(self.core, "storage_failed", None)
        for eff in answers(inp) if answers is not None else ():
            if isinstance(eff, Send):
                self._perform(eff)
        self.stop_reason = f"{error}"
        self.stopped.set()

    # ------------------------------------------------------------------ effects
    def _perform(self, eff: Any) -> None:
        if self.on_effect is not None:
            self.on_effect(eff)
        if isinstance(eff, Send):
            self._send(eff.to, eff.msg)
        elif isinstance(eff, StoreOp):
            self._spawn(self._store_op(eff))
        elif isinstance(eff, Persist):
            if self.disk is not None:
                self.disk.apply(eff)
        elif isinstance(eff, SetTimer):
            key = (eff.name, eff.key)
            old = self._timers.pop(key, None)
            if old is not None:
                old.cancel()
            assert self.loop is not None
            self._timers[key] = self.loop.call_later(eff.delay_ms / 1000.0, self._fire, key)
        elif isinstance(eff, CancelTimer):
            old = self._timers.pop((eff.name, eff.key), None)
            if old is not None:
                old.cancel()
        elif isinstance(eff, Stop):
            self.stop_reason = eff.reason
            self.stopped.set()
        elif isinstance(eff, Committed):
            log.debug("%s: acks=1 records %s of partition %d committed", self.name, list(eff.record_ids),
                      eff.partition)

    def _fire(self, key: tuple[str, Any]) -> None:
        self._timers.pop(key, None)
        self.feed(Timer(key[0], key[1]))

    async def _store_op(self, op: StoreOp) -> None:
        # every store call, and every session renewal, is awaited the same way (one executor job, then
        # the feed), so the core's inputs keep the store thread's order: SessionRenewed comes after the
        # answers of the old session and before those of the new one
        loop = asyncio.get_running_loop()
        renewed, res = await loop.run_in_executor(self._executor, self._execute, op)
        self._session_renewed(renewed)
        self.feed(res)

    def _execute(self, op: StoreOp) -> tuple[int | None, StoreResult]:
        try:
            renewed = self._ensure_session()
        except StoreError as e:
            return None, StoreResult(op.token, None, e)
        assert self.session is not None
        return renewed, L.execute(self.session, op)

    async def read_store(self, fn: Callable[[Session], Any]) -> Any:
        """Run ``fn(session)`` on the store thread (for lookups outside the core); a session it has to
        open is announced to the core as any other renewal."""
        loop = asyncio.get_running_loop()

        def run() -> tuple[int | None, Any, BaseException | None]:
            renewed = self._ensure_session()
            assert self.session is not None
            try:
                return renewed, fn(self.session), None
            except Exception as e:  # noqa: BLE001 - re-raised on the loop, after the renewal is announced
                return renewed, None, e

        renewed, value, error = await loop.run_in_executor(self._executor, run)
        self._session_renewed(renewed)
        if error is not None:
            raise error
        return value

    # ------------------------------------------------------------------ network: inbound
    async def _serve_conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        cid = next(self._conn_ids)
        peer = writer.get_extra_info("peername")
        ch: Channel | None = None
        if self.secret is not None:
            ch = await self._handshake_in(reader, writer, peer)
            if ch is None:
                return
            self._channels[cid] = ch
        self._conns[cid] = writer
        try:
            while not self.stopped.is_set():
                try:
                    obj = (await read_channel_frame(reader, ch, self.read_timeout) if ch is not None
                           else await read_frame(reader, secret=None))
                except (FrameError, asyncio.TimeoutError) as e:
                    code, why = (e.code, str(e)) if isinstance(e, FrameError) else ("ReadTimeout", "a frame "
                                                                                    "took too long to arrive")
                    refused(self.name, peer, f"{code}: {why} (connection closed)")
                    writer.write(self._encode(cid, ErrorResponse(0, f"{code}: {why}")))
                    await writer.drain()
                    break
                if obj is None:
                    break
                msg, why = self._message(obj, peer)
                if msg is None:
                    rid = obj.get("request_id")
                    rid = rid if isinstance(rid, int) and not isinstance(rid, bool) and abs(rid) < 1 << 63 else 0
                    writer.write(self._encode(cid, ErrorResponse(rid, why)))
                    await writer.drain()
                    continue
                self.feed(Receive(("conn", cid), msg))
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        except Exception as e:  # noqa: BLE001 - whatever a peer sent, one line and this connection only
            refused(self.name, peer, f"{type(e).__name__}: {short_repr(e)} (connection dropped)")
        finally:
            self._conns.pop(cid, None)
            self._channels.pop(cid, None)
            writer.close()

    async def _handshake_in(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            peer: Any) -> Channel | None:
        """An accepted connection's handshake (:mod:`isrcheck.impl.wire.channel`), or None when it is
        refused: beyond ``max_unauthenticated`` connections still in their handshake (closed at once,
        so strangers hold no more than that many small buffers), a hello that fails its checks, or
        one that does not arrive within the handshake timeout (a slow peer is closed). Before the
        handshake nothing can be authenticated, so the refusal is one plain (version 1) error frame."""
        if self._unauthenticated >= self.max_unauthenticated:
            refused(self.name, peer, f"TooManyConnections: {self._unauthenticated} connections are in their "
                                     "handshake (connection closed)")
            writer.close()
            return None
        self._unauthenticated += 1
        ch = Channel(self.secret or b"", self.name, accepting=True)
        try:
            await accept_handshake(reader, writer, ch, self.handshake_timeout)
            return ch
        except (FrameError, asyncio.TimeoutError) as e:
            code, why = (e.code, str(e)) if isinstance(e, FrameError) else ("HandshakeTimeout",
                                                                            "no hello in time")
            refused(self.name, peer, f"{code}: {why} (connection closed)")
            try:
                writer.write(encode_message(ErrorResponse(0, f"{code}: {why}")))
            except (ConnectionError, RuntimeError):
                pass
        except (ConnectionError, OSError):
            pass
        finally:
            self._unauthenticated -= 1
        writer.close()
        return None

    def _encode(self, cid: int, msg: Any) -> bytes:
        """``msg`` as a frame of inbound connection ``cid`` (its channel's, or a plain frame)."""
        ch = self._channels.get(cid)
        return ch.encode(to_wire(msg)) if ch is not None else encode_message(msg)

    def _message(self, obj: Any, peer: Any) -> tuple[Any, str]:
        """The message a well-formed frame carries, or None and why it is refused (logged once).
        One rule for both directions: a frame that is not a known message never reaches the core,
        and the connection stays open (an inbound one answers the refusal)."""
        try:
            return decode_message(obj), ""
        except MessageError as e:
            why = f"BadMessage: {e}"
            refused(self.name, peer, why)
            return None, why

    # ------------------------------------------------------------------ network: outbound
    def _send(self, to: Any, msg: Any) -> None:
        kind, key = to
        if kind == "conn":
            w = self._conns.get(key)
            if w is not None and not w.is_closing():
                try:
                    w.write(self._encode(key, msg))
                except (ConnectionError, RuntimeError):
                    pass
            return
        q = self._outbound.get(to)
        if q is None:
            q = asyncio.Queue()
            self._outbound[to] = q
            self._spawn(self._outbound_loop(to, q))
        q.put_nowait(msg)

    async def _resolve(self, to: tuple[str, Any]) -> tuple[str, tuple[str, int]] | None:
        """The peer's name (the destination its connection is bound to) and address."""
        kind, key = to

        def lookup(s: Session) -> tuple[str, tuple[str, int]] | None:
            path = L.broker_path(key) if kind == "broker" else L.CONTROLLER
            got = s.get_or_none(path)
            if got is None:
                return None
            d = L.decode(got[0]) or {}
            if kind == "broker":  # routes.route: a nemesis link's port instead, when one is set
                name = f"broker-{key}"
                return (name, routes.route(name, (d["host"], int(d["port"])))) if "host" in d else None
            addr = d.get("address")
            name = str(d.get("name", ""))
            return (name, routes.route(name, (addr[0], int(addr[1])))) if addr else None

        try:
            return await self.read_store(lookup)
        except (StoreError, KeyError, ValueError, TypeError):
            return None

    async def _outbound_loop(self, to: tuple[str, Any], q: asyncio.Queue[Any]) -> None:
        writer: asyncio.StreamWriter | None = None
        reader_task: asyncio.Task[Any] | None = None
        ch: Channel | None = None
        while True:
            msg = await q.get()
            for attempt in range(2):
                if writer is not None and reader_task is not None and reader_task.done():
                    writer.close()  # the peer closed the connection (it died or restarted): reconnect
                    writer = None
                if writer is None or writer.is_closing():
                    target = await self._resolve(to)
                    if target is None:
                        break  # nobody to send to: the message is lost
                    name, addr = target
                    try:
                        reader, writer = await asyncio.wait_for(asyncio.open_connection(*addr), 2.0)
                        ch = None
                        if self.secret is not None:
                            ch = Channel(self.secret, self.name, name or "unnamed", accepting=False)
                            # long, as TCP's own retransmissions are: a nemesis holds a connection
                            # across a partition, and the messages queued behind it wait, not vanish
                            await connect_handshake(reader, writer, ch, OUTBOUND_HANDSHAKE_TIMEOUT)
                    except (OSError, asyncio.TimeoutError, FrameError) as e:
                        if isinstance(e, FrameError):
                            refused(self.name, to, f"{e.code}: {e} (handshake failed)")
                        if writer is not None:
                            writer.close()
                        writer = None
                        break
                    reader_task = asyncio.ensure_future(self._read_replies(to, reader, ch))
                    self._tasks.add(reader_task)
                    reader_task.add_done_callback(self._tasks.discard)
                try:
                    writer.write(ch.encode(to_wire(msg)) if ch is not None else encode_message(msg))
                    await writer.drain()
                    break
                except (ConnectionError, OSError, RuntimeError):
                    writer.close()
                    writer = None
                    if reader_task is not None:
                        reader_task.cancel()

    async def _read_replies(self, to: tuple[str, Any], reader: asyncio.StreamReader, ch: Channel | None) -> None:
        try:
            while True:
                obj = await (read_channel_frame(reader, ch) if ch is not None else read_frame(reader, secret=None))
                if obj is None:
                    return
                msg, _ = self._message(obj, to)
                if msg is not None:
                    self.feed(Receive(to, msg))
        except FrameError as e:
            refused(self.name, to, f"{e.code}: {e} (connection closed)")
        except asyncio.TimeoutError:
            refused(self.name, to, "ReadTimeout: a frame took too long to arrive (connection closed)")
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            return
