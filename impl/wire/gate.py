"""The gate in front of a listening socket: how fast new connections are accepted.

Why: a peer without the cluster secret is refused within its handshake (:mod:`.channel`), but every
refusal still costs the process an accept, a task, a hello, an error frame and a log line. A flood of
strangers that reconnect as soon as they are closed (500 of them, every 100 ms) turns that into
thousands of refusals a second, and on a small machine the produce path then waits for the CPU. Kafka
answers the same flood with connection-creation quotas (KIP-612: the acceptor delays ``accept`` once
the rate is exceeded), so this gate does the same: a token bucket of ``rate`` accepts a second with a
burst of ``burst``. Beyond it, connections wait in the kernel's listen backlog, where they cost this
process nothing; when the backlog is full the kernel drops the SYN and the stranger's own TCP stack
backs off. Connections already established (the brokers' and clients' channels) are never touched,
so a flood slows who connects next, not who is being served.

:class:`GatedServer` replaces :func:`asyncio.start_server` for the processes' listeners: the same
``handler(reader, writer)`` per connection, accepted through the gate.
"""
from __future__ import annotations

import asyncio
import socket
import time
from typing import Awaitable, Callable

#: accepts a second once the burst is spent, and the burst; far above what a cluster's own processes
#: need (a handful of connections at start-up and after a failure), far below a flood's rate
ACCEPT_RATE = 50.0
ACCEPT_BURST = 64
#: the listen backlog: connections beyond the gate wait here, then the kernel drops SYNs
BACKLOG = 128

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class AcceptGate:
    """A token bucket: :meth:`delay` is 0 while a token is left (and spends it), else how long until
    one is."""

    def __init__(self, rate: float = ACCEPT_RATE, burst: int = ACCEPT_BURST) -> None:
        if not rate > 0 or burst < 1:
            raise ValueError(f"an accept gate needs a positive rate and a burst of at least 1, not {rate}/{burst}")
        self.rate, self.burst = rate, burst
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self.waited = 0  # times the gate was shut for want of a token (the flood's measure)

    def delay(self) -> float:
        """Spend a token and return 0, or return the seconds until the next token (none spent)."""
        now = time.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        self.waited += 1
        return (1.0 - self._tokens) / self.rate

    def refund(self) -> None:
        """Give back the token :meth:`delay` spent on an accept that found no connection."""
        self._tokens = min(float(self.burst), self._tokens + 1.0)


class GatedServer:
    """A listening socket whose connections are accepted through an :class:`AcceptGate` and served by
    ``handler`` each in its own task, as :func:`asyncio.start_server` would. Like asyncio's server, the
    accepting is a reader callback on the event loop, not a task: the gate, when shut, takes the
    socket off the loop and puts it back when the next token is due."""

    def __init__(self, handler: Handler, gate: AcceptGate | None = None) -> None:
        self.handler = handler
        self.gate = gate or AcceptGate()
        self.sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reopen: asyncio.TimerHandle | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (port 0: any free one) and start accepting; the port listened on."""
        self.sock = socket.create_server((host, port), backlog=BACKLOG)
        self.sock.setblocking(False)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.sock.fileno(), self._accept)
        return int(self.sock.getsockname()[1])

    def _accept(self) -> None:
        """The listening socket is readable: accept while the gate lets through and connections wait."""
        loop, sock = self._loop, self.sock
        if loop is None or sock is None:
            return
        while True:
            wait = self.gate.delay()
            if wait > 0:  # shut: off the loop until the next token; the kernel's backlog holds the rest
                loop.remove_reader(sock.fileno())
                self._reopen = loop.call_later(wait, self._open)
                return
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                self.gate.refund()
                return
            except OSError:  # EMFILE and the like: off the loop a moment rather than spin
                self.gate.refund()
                loop.remove_reader(sock.fileno())
                self._reopen = loop.call_later(0.1, self._open)
                return
            conn.setblocking(False)
            loop.create_task(self._serve(conn))

    def _open(self) -> None:
        self._reopen = None
        if self._loop is not None and self.sock is not None:
            self._loop.add_reader(self.sock.fileno(), self._accept)
            self._accept()

    async def _serve(self, conn: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=conn)
        except OSError:
            conn.close()
            return
        await self.handler(reader, writer)

    def close(self) -> None:
        """Stop accepting and close the listening socket; connections being served are left to their
        handlers (as :meth:`asyncio.Server.close` leaves them)."""
        if self._reopen is not None:
            self._reopen.cancel()
            self._reopen = None
        if self.sock is not None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self.sock.fileno())
            self.sock.close()
            self.sock = None

    async def wait_closed(self) -> None:
        """Nothing to wait for once :meth:`close` returned (kept for :class:`asyncio.Server`'s shape)."""
