"""A broker process: ``python -m isrcheck.impl.process.node --id 1 --port 9091 --data DIR --store SPEC``.

It runs one autonomous :class:`~isrcheck.impl.core.broker.BrokerCore` on asyncio (:mod:`.runtime`), serving
controllers, followers and clients on a loopback TCP port with the frame format of :mod:`isrcheck.impl.wire.frame`,
keeping its logs and HW checkpoints in ``DIR`` (:class:`~isrcheck.impl.disk.log.FileDisk`) and registering in the
metadata store given by ``SPEC`` (``embedded:HOST:PORT`` for a coordinator's store server, or
``zookeeper:HOST:PORT``). On start-up it prints ``ready broker <id> port <port>`` on stdout.
SIGTERM asks the controller for a controlled shutdown first (``--no-controlled-shutdown`` to
just stop); SIGKILL is a crash: the page cache keeps what was written, the store session ends.
``--event-log DIR`` (or ``$ISRCHECK_EVENT_LOG``) makes it write its own event log (:mod:`.event_log`),
first line ``Restart(<id>)`` with what it recovered from its disk. ``--secret-file FILE`` (the
cluster's secret, :mod:`isrcheck.impl.wire.auth`) makes every frame it sends and accepts, to and from the store server
too, carry an HMAC; without it, frames are plain.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import Any

from ..core.broker import BrokerCore
from ..core.config import ConfigError
from ..core.messages import Command
from ..core.store import StoreError
from ..disk.errors import DiskError
from ..disk.log import FileDisk
from ..wire.auth import SecretError, read_secret
from .event_log import ENV, StepLogger, open_writer
from ..wire.gate import AcceptGate
from .runtime import Runtime, open_core_store


async def run_node(broker_id: int, host: str, port: int, data: str, store_spec: str, config: dict,
                   session_timeout: float, controlled_shutdown: bool = True, event_log: str | None = None,
                   secret: bytes | None = None, probe_interval: float = 0.5) -> int:
    """Run the broker until it is stopped. When a disk write fails (ENOSPC, EIO) its log directory
    goes offline: the runtime stops, which closes the store session (the controller sees the broker
    go, and moves leadership and the ISR away from it); the process then waits, probing the
    directory every ``probe_interval`` seconds, and starts again from what its files hold once the
    directory takes writes, on the same port, as a restarted broker would. No repair by hand."""
    cfg, store = open_core_store(config, store_spec, session_timeout, secret)
    term = {"asked": False}
    while True:
        rt, port = await _serve_once(broker_id, host, port, data, store, cfg, config, controlled_shutdown,
                                     event_log, secret, term)
        if rt.storage_error is None or term["asked"]:
            return 0
        disk = FileDisk(data)
        print(f"broker {broker_id}: log directory {data} offline ({rt.storage_error}); waiting for it to take "
              "writes", file=sys.stderr, flush=True)
        while disk.probe() is not None:
            if term["asked"]:
                return 0
            await asyncio.sleep(probe_interval)


async def _serve_once(broker_id: int, host: str, port: int, data: str, store: Any, cfg: Any, config: dict,
                      controlled_shutdown: bool, event_log: str | None, secret: bytes | None,
                      term: dict[str, bool]) -> tuple[Runtime, int]:
    """One life of the broker on its disk: recover, register, serve until stopped or offline."""
    disk = FileDisk(data)
    image = disk.image()  # a damaged file: DiskError, one line `error: ...`, exit 2, before registering
    rt = Runtime(None, store, disk=disk, feed_now=True, name=f"broker-{broker_id}", secret=secret)
    rt.accept_gate = AcceptGate(rate=float(cfg.max_connection_creation_rate))
    await rt.open_session()
    actual = await rt.serve(host, port)
    core = BrokerCore.recover(cfg, broker_id, image, autonomous=True, address=(host, actual))
    rt.core = core
    writer = open_writer(event_log, f"broker-{broker_id}", "broker", config)
    if writer is not None:
        rt.step_logger = StepLogger(writer, core)
        rt.step_logger.restart()
    loop = asyncio.get_running_loop()
    stopping = {"asked": False}

    def on_term() -> None:
        term["asked"] = True
        if controlled_shutdown and not stopping["asked"] and not rt.stopped.is_set():
            stopping["asked"] = True
            rt.feed(Command("ControlledShutdown"))
            loop.call_later(10.0, rt.stopped.set)  # give up waiting for the controller
        else:
            rt.stopped.set()

    def on_int() -> None:
        term["asked"] = True
        rt.stopped.set()

    loop.add_signal_handler(signal.SIGTERM, on_term)
    loop.add_signal_handler(signal.SIGINT, on_int)
    rt.feed(Command("Start"))
    print(f"ready broker {broker_id} port {actual}", flush=True)
    await rt.stopped.wait()
    await rt.shutdown()
    return rt, actual


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="isrcheck-node", description="one isrcheck broker process")
    ap.add_argument("--id", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--data", required=True)
    ap.add_argument("--store", required=True, help="embedded:HOST:PORT or zookeeper:HOST:PORT")
    ap.add_argument("--config-json", default="{}")
    ap.add_argument("--session-timeout", type=float, default=2.0)
    ap.add_argument("--no-controlled-shutdown", action="store_true")
    ap.add_argument("--event-log", default=os.environ.get(ENV) or None, metavar="DIR",
                    help=f"write this process's own event log to DIR (default: ${ENV})")
    ap.add_argument("--secret-file", default=None, metavar="FILE",
                    help="the cluster secret (mode 0600): authenticate every frame with it")
    a = ap.parse_args(argv)
    try:
        config = json.loads(a.config_json)
        secret = read_secret(a.secret_file) if a.secret_file else None
        return asyncio.run(run_node(a.id, a.host, a.port, a.data, a.store, config, a.session_timeout,
                                    not a.no_controlled_shutdown, a.event_log, secret))
    except (ConfigError, StoreError, SecretError, DiskError, json.JSONDecodeError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
