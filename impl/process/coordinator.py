"""A coordinator process: the metadata store's server and/or a controller candidate.

``python -m isrcheck.impl.process.coordinator --serve-store PORT`` hosts the embedded store for the cluster
(:class:`~isrcheck.impl.store.remote.StoreServer`); ``--controller --store SPEC`` runs an autonomous
:class:`~isrcheck.impl.core.controller.ControllerCore` that takes part in the election through the store (the
``/controller`` ephemeral znode and ``/controller_epoch``), and listens on ``--port`` for brokers'
controlled-shutdown requests. Both roles can share one process. With real ZooKeeper
(``--store zookeeper:HOST:PORT``) no store server is needed and any number of controller
candidates can run; when the active one dies (SIGKILL), its session ends and another takes over
with the next epoch.

``--event-log DIR`` (or ``$ISRCHECK_EVENT_LOG``) makes a controller write its own event log
(:mod:`.event_log`). ``--secret-file FILE`` (the cluster's secret, :mod:`isrcheck.impl.wire.auth`): the store server
and the controller send and accept only frames carrying its HMAC. It prints ``ready store <port>``
and/or ``ready controller <name> port <port>`` on stdout.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys

from ..core.config import ConfigError
from ..core.controller import ControllerCore
from ..core.messages import Command
from ..core.store import StoreError
from ..store.remote import StoreServer
from ..wire.auth import SecretError, read_secret
from .event_log import ENV, StepLogger, open_writer
from ..wire.gate import AcceptGate
from .runtime import Runtime, open_core_store


async def run_coordinator(serve_store: int | None, controller: bool, store_spec: str | None, host: str, port: int,
                          name: str, config: dict, session_timeout: float,
                          event_log: str | None = None, secret: bytes | None = None) -> int:
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    loop.add_signal_handler(signal.SIGINT, done.set)
    server = None
    if serve_store is not None:
        server = StoreServer(host, serve_store, secret=secret)
        p = await server.start()
        print(f"ready store {p}", flush=True)
        if store_spec is None:
            store_spec = f"embedded:{host}:{p}"
    rt = None
    if controller:
        if store_spec is None:
            raise StoreError("", "a controller needs --store (or --serve-store)")
        cfg, store = open_core_store(config, store_spec, session_timeout, secret)
        rt = Runtime(None, store, name=name, secret=secret)
        rt.accept_gate = AcceptGate(rate=float(cfg.max_connection_creation_rate))
        await rt.open_session()
        actual = await rt.serve(host, port)
        rt.core = ControllerCore(cfg, name=name, autonomous=True, address=(host, actual))
        writer = open_writer(event_log, name, "controller", config)
        if writer is not None:
            rt.step_logger = StepLogger(writer, rt.core)
        rt.feed(Command("Start"))
        print(f"ready controller {name} port {actual}", flush=True)
    waiters = [asyncio.ensure_future(done.wait())]
    if rt is not None:
        waiters.append(asyncio.ensure_future(rt.stopped.wait()))
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    if rt is not None:
        await rt.shutdown()
    if server is not None:
        await server.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="isrcheck-coordinator", description="isrcheck store server / controller")
    ap.add_argument("--serve-store", type=int, default=None, metavar="PORT", help="host the embedded store")
    ap.add_argument("--controller", action="store_true", help="run a controller candidate")
    ap.add_argument("--store", default=None, help="embedded:HOST:PORT or zookeeper:HOST:PORT")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--name", default="controller")
    ap.add_argument("--config-json", default="{}")
    ap.add_argument("--session-timeout", type=float, default=2.0)
    ap.add_argument("--event-log", default=os.environ.get(ENV) or None, metavar="DIR",
                    help=f"a controller writes its own event log to DIR (default: ${ENV})")
    ap.add_argument("--secret-file", default=None, metavar="FILE",
                    help="the cluster secret (mode 0600): authenticate every frame with it")
    a = ap.parse_args(argv)
    if a.serve_store is None and not a.controller:
        ap.error("nothing to do: give --serve-store and/or --controller")
    try:
        secret = read_secret(a.secret_file) if a.secret_file else None
        return asyncio.run(run_coordinator(a.serve_store, a.controller, a.store, a.host, a.port, a.name,
                                           json.loads(a.config_json), a.session_timeout, a.event_log, secret))
    except (ConfigError, StoreError, SecretError, json.JSONDecodeError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
