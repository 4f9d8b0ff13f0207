"""A fault-injecting TCP proxy on loopback: one listening port per (source node, destination node) link.

Why a proxy and not the simulator's filters: real processes talk over real sockets, so the only place
to lose, hold back or cut their traffic without changing their code is between them. Each process is
told (``impl/process/routes.py``, ``ISRCHECK_ROUTES``; ``--store``) to reach node ``dst`` at the port of its
link ``(src, dst)``; the link connects onwards to wherever ``dst`` listens *now* (``upstream(dst)``,
read at each connection, so a restarted process is found again).

Two kinds of link:

- **framed** (between brokers, controllers and clients, which speak :mod:`isrcheck.impl.wire.frame` and
  :mod:`isrcheck.impl.wire.channel`): the proxy reads whole frames (the header, the tags, the payload)
  and drops, delays or holds a frame as a unit, so a dropped message never corrupts the stream after
  it (a channel's sequence numbers only need to increase); the two hellos of a channel's handshake
  are never dropped;
- **raw** (to the metadata store: the embedded store server, whose connection *is* the session, or
  ZooKeeper's own protocol): bytes pass in chunks; a partition or a drop closes the connection and
  refuses new ones until it heals, which ends an embedded session at once and, held longer than the
  session timeout, expires a ZooKeeper session (:meth:`Nemesis.expire`).

Faults (:meth:`Nemesis.partition`, :meth:`~Nemesis.drop`, :meth:`~Nemesis.delay`) are bounded: each
lasts at most ``max_fault_seconds`` and heals by itself, at most ``max_faults`` are accepted, and
:meth:`~Nemesis.heal` ends them all. A framed connection across a partition is held, not cut: its
frames (and a connection opened meanwhile) wait until the partition heals and are then delivered in
order, as TCP retransmits across a real partition; only ``drop`` loses a message (the model's message loss). Why: this implementation's
controller does not resend a lost LeaderAndIsr, so silently losing frames on a live connection would
strand a healed cluster, which no TCP connection does. Everything listens and connects on loopback
only: :func:`check_loopback` refuses any other address.
"""
from __future__ import annotations

import asyncio
import ipaddress
import itertools
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["Captured", "FaultLimit", "Link", "Nemesis", "NemesisError", "check_loopback"]

#: frame header: magic(2) version(1) type(1) reserved(2) length(4); version 2 adds a 32-byte tag
_HEADER = 10
_TAG = 32
_MAGIC = b"IK"
_MAX_FRAME = 4 * 1024 * 1024 + _HEADER + _TAG
# version 3 (wire.channel): 8 more header bytes (the sequence), a 16-byte header tag, the two hellos
_CHANNEL = 3
_SEQ = 8
_HEADER_TAG = 16
_SERVER_HELLO = 16
_CLIENT_HELLO = 17


def _is_hello(unit: bytes) -> bool:
    """A handshake unit: delivered even across a drop (a lost hello would only stall the connection
    until its timeout; the faults are about messages)."""
    return len(unit) > 3 and unit[2] == _CHANNEL and unit[3] in (_SERVER_HELLO, _CLIENT_HELLO)


class NemesisError(ValueError):
    """A refused control: a non-loopback address, an unknown node, a bad duration or probability."""


class FaultLimit(NemesisError):
    """More faults than ``max_faults``, or one longer than ``max_fault_seconds``."""


def check_loopback(host: str) -> str:
    """``host`` if it is a loopback address (127.0.0.0/8, ::1 or ``localhost``); else :class:`NemesisError`.
    The nemesis must never touch traffic that leaves the machine."""
    if host == "localhost":
        return host
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise NemesisError(f"refusing {host!r}: the nemesis proxies loopback addresses only") from None
    if not ip.is_loopback:
        raise NemesisError(f"refusing {host}: not a loopback address (the nemesis proxies loopback only)")
    return host


@dataclass
class _Fault:
    kind: str  # "partition" | "drop" | "delay"
    until: float  # time.monotonic() when it heals by itself
    a: frozenset[str] = frozenset()
    b: frozenset[str] = frozenset()
    probability: float = 0.0
    delay_s: float = 0.0
    since: float = field(default_factory=time.monotonic)

    def covers(self, src: str, dst: str) -> bool:
        return (src in self.a and dst in self.b) or (src in self.b and dst in self.a)


@dataclass
class Link:
    """One listening port: connections made to it come from ``src`` and go on to ``dst``."""

    src: str
    dst: str
    framed: bool
    port: int = 0
    server: asyncio.base_events.Server | None = None
    conns: set[asyncio.StreamWriter] = field(default_factory=set)
    frames: int = 0  # frames (or chunks) forwarded
    dropped: int = 0


@dataclass(frozen=True)
class Captured:
    """One unit a framed link forwarded, as it was on the wire (``Nemesis(capture=True)``): for replay
    tests, which send captured frames again and count how many are obeyed."""

    src: str
    dst: str
    conn: int  # the proxied connection (its number at the nemesis)
    way: str  # "to-dst" (from the connecting side) or "to-src" (the answers)
    data: bytes


class Nemesis:
    """The proxies of one cluster and their faults. It runs its own asyncio loop on a daemon thread, so a
    synchronous harness can drive it; every control is thread-safe."""

    def __init__(self, upstream: Callable[[str], tuple[str, int] | None], *, max_faults: int = 200,
                 max_fault_seconds: float = 30.0, seed: int = 0, host: str = "127.0.0.1",
                 capture: bool = False) -> None:
        self.host = check_loopback(host)
        self.captured: list[Captured] | None = [] if capture else None  # every framed unit, when capturing
        self._conn_ids = itertools.count(1)
        self.upstream = upstream
        self.max_faults = max_faults
        self.max_fault_seconds = max_fault_seconds
        self.rng = random.Random(seed)
        self.links: dict[tuple[str, str], Link] = {}
        self.nodes: set[str] = set()
        self.faults: list[_Fault] = []
        self.injected = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="nemesis", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ links
    def _run(self, coro: object, timeout: float = 10.0) -> object:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)  # type: ignore[arg-type]

    def add_link(self, src: str, dst: str, framed: bool = True) -> int:
        """Start the proxy of link ``src -> dst`` and return its port (on loopback)."""
        if (src, dst) in self.links:
            return self.links[(src, dst)].port
        link = Link(src, dst, framed)
        self._run(self._listen(link))
        self.links[(src, dst)] = link
        self.nodes.update((src, dst))
        return link.port

    def address(self, src: str, dst: str) -> tuple[str, int]:
        return self.host, self.links[(src, dst)].port

    async def _listen(self, link: Link) -> None:
        link.server = await asyncio.start_server(lambda r, w: self._accept(link, r, w), self.host, 0)
        link.port = link.server.sockets[0].getsockname()[1]

    def close(self) -> None:
        """Heal, close every link and stop the loop."""
        self.heal()

        async def shut() -> None:
            for link in self.links.values():
                if link.server is not None:
                    link.server.close()
                for w in list(link.conns):
                    w.close()
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        try:
            self._run(shut())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    # ------------------------------------------------------------------ faults
    def _active(self, src: str, dst: str) -> list[_Fault]:
        now = time.monotonic()
        with self._lock:
            self.faults = [f for f in self.faults if f.until > now]
            return [f for f in self.faults if f.covers(src, dst)]

    def _add(self, fault: _Fault, seconds: float) -> None:
        if not 0 < seconds <= self.max_fault_seconds:
            raise FaultLimit(f"a fault lasts more than 0 and at most {self.max_fault_seconds:g} s, not {seconds:g}")
        with self._lock:
            if self.injected >= self.max_faults:
                raise FaultLimit(f"at most {self.max_faults} faults per nemesis")
            self.injected += 1
            self.faults.append(fault)
        if fault.kind == "partition":
            self._loop.call_soon_threadsafe(self._cut_raw, fault)

    def _nodes(self, names: Iterable[str], what: str) -> frozenset[str]:
        out = frozenset(names)
        unknown = sorted(out - self.nodes)
        if unknown or not out:
            raise NemesisError(f"{what}: unknown node(s) {', '.join(unknown) or '(none given)'}")
        return out

    def partition(self, a: Iterable[str], b: Iterable[str], seconds: float) -> None:
        """Nothing passes between any node of ``a`` and any node of ``b`` (both ways) for ``seconds``."""
        sa, sb = self._nodes(a, "partition"), self._nodes(b, "partition")
        if sa & sb:
            raise NemesisError(f"partition: {', '.join(sorted(sa & sb))} on both sides")
        self._add(_Fault("partition", time.monotonic() + seconds, sa, sb), seconds)

    def isolate(self, node: str, seconds: float) -> None:
        """Partition ``node`` from every other node."""
        self.partition([node], self.nodes - {node}, seconds)

    def expire(self, node: str, session_timeout: float) -> None:
        """Force the expiry of ``node``'s store session: cut it from the store for 1.5 session timeouts."""
        self.partition([node], ["store"], min(self.max_fault_seconds, 1.5 * session_timeout + 0.5))

    def drop(self, src: str, dst: str, probability: float, seconds: float) -> None:
        """Each frame between ``src`` and ``dst`` (either way) is lost with ``probability``; on a raw link a
        loss closes the connection."""
        if not 0.0 <= probability <= 1.0:
            raise NemesisError(f"drop: a probability is within [0, 1], not {probability}")
        sa, sb = self._nodes([src], "drop"), self._nodes([dst], "drop")
        self._add(_Fault("drop", time.monotonic() + seconds, sa, sb, probability=probability), seconds)

    def delay(self, src: str, dst: str, ms: float, seconds: float) -> None:
        """Frames between ``src`` and ``dst`` arrive ``ms`` later (each connection stays FIFO)."""
        if not 0 <= ms <= self.max_fault_seconds * 1000:
            raise NemesisError(f"delay: at most {self.max_fault_seconds * 1000:g} ms, not {ms}")
        sa, sb = self._nodes([src], "delay"), self._nodes([dst], "delay")
        self._add(_Fault("delay", time.monotonic() + seconds, sa, sb, delay_s=ms / 1000), seconds)

    def heal(self) -> None:
        """End every fault now."""
        with self._lock:
            self.faults = []

    # ------------------------------------------------------------------ forwarding
    def _cut_raw(self, fault: _Fault) -> None:
        for link in self.links.values():
            if not link.framed and fault.covers(link.src, link.dst):
                for w in list(link.conns):
                    w.close()

    async def _accept(self, link: Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not link.framed and self._partitioned(link):
            writer.close()  # a raw link refuses connections while cut (a store session cannot start)
            return
        await self._until_healed(link)  # a framed connection waits, as TCP's SYN retransmissions would
        target = self.upstream(link.dst)
        if target is None:
            writer.close()  # nowhere to go: as a refused connection
            return
        try:
            check_loopback(target[0])
            up_r, up_w = await asyncio.wait_for(asyncio.open_connection(*target), 2.0)
        except (TimeoutError, OSError, NemesisError):
            writer.close()
            return
        link.conns.update((writer, up_w))
        conn = next(self._conn_ids)
        pumps = [asyncio.ensure_future(self._pump(link, reader, up_w, (conn, "to-dst"))),
                 asyncio.ensure_future(self._pump(link, up_r, writer, (conn, "to-src")))]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for p in pumps:
            p.cancel()
        for w in (writer, up_w):
            w.close()
            link.conns.discard(w)

    def _partitioned(self, link: Link) -> bool:
        return any(f.kind == "partition" for f in self._active(link.src, link.dst))

    async def _until_healed(self, link: Link) -> None:
        while self._partitioned(link):
            await asyncio.sleep(0.02)

    async def _read_unit(self, link: Link, reader: asyncio.StreamReader) -> bytes:
        if not link.framed:
            return await reader.read(65536)
        head = await reader.readexactly(_HEADER)
        if head[:2] != _MAGIC:  # not a frame: pass the rest through as bytes
            return head + await reader.read(65536)
        length = int.from_bytes(head[6:10], "big")
        if head[2] == _CHANNEL:  # version 3 (wire.channel): 8 more header bytes, then by type
            head += await reader.readexactly(_SEQ)
            size = length + {_SERVER_HELLO: 0, _CLIENT_HELLO: _TAG}.get(head[3], _HEADER_TAG + _TAG)
        else:
            size = length + (_TAG if head[2] == 2 else 0)
        if size > _MAX_FRAME:
            return head  # the receiver refuses it by its header; the proxy need not hold it
        return head + await reader.readexactly(size)

    async def _pump(self, link: Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    way: tuple[int, str] = (0, "to-dst")) -> None:
        queue: asyncio.Queue[tuple[float, float, bytes] | None] = asyncio.Queue()
        sender = asyncio.ensure_future(self._send(link, queue, writer))
        try:
            while True:
                try:
                    unit = await self._read_unit(link, reader)
                except (asyncio.IncompleteReadError, ConnectionError, OSError):
                    return
                if not unit:
                    return
                if self.captured is not None and link.framed:
                    self.captured.append(Captured(link.src, link.dst, way[0], way[1], unit))
                if link.framed:
                    await self._until_healed(link)  # held back, then delivered: TCP retransmits
                faults = self._active(link.src, link.dst)
                lose = not _is_hello(unit) and (any(f.kind == "partition" for f in faults) or any(
                    f.kind == "drop" and self.rng.random() < f.probability for f in faults))
                if lose:
                    link.dropped += 1
                    if not link.framed:
                        return  # a raw stream cannot skip bytes: the connection ends
                    continue
                wait = max((f.delay_s for f in faults if f.kind == "delay"), default=0.0)
                link.frames += 1
                queue.put_nowait((time.monotonic(), wait, unit))
                if sender.done():
                    return
        finally:
            queue.put_nowait(None)
            try:
                await asyncio.wait_for(asyncio.shield(sender), 1.0)
            except (TimeoutError, asyncio.CancelledError):
                sender.cancel()

    async def _send(self, link: Link, queue: asyncio.Queue[tuple[float, float, bytes] | None],
                    writer: asyncio.StreamWriter) -> None:
        """Deliver queued frames at their time. A frame held back by a delay is still in flight: a drop
        that began after it was queued may lose it (messages in flight are lost too)."""
        while True:
            item = await queue.get()
            if item is None:
                return
            queued, wait, unit = item
            pause = queued + wait - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)
                late = [f for f in self._active(link.src, link.dst) if f.kind == "drop" and f.since > queued]
                if any(self.rng.random() < f.probability for f in late):
                    link.dropped += 1
                    continue
            try:
                writer.write(unit)
                await writer.drain()
            except (ConnectionError, OSError, RuntimeError):
                return
