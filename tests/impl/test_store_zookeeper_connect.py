"""A ZooKeeper session that cannot connect gives up as soon as kazoo does, not at the end of its timeout.

Why: ``KazooClient.start`` waits out its whole timeout even after kazoo's connection thread has spent
its retries and stopped for good; while a store link was cut, each attempt of the runtime's retry
loop therefore took the full timeout and a broker re-registered seconds after the cut healed. No
server is needed: a loopback port where nothing listens refuses every connection, as a cut link does.
"""
from __future__ import annotations

import socket

import pytest
from isrcheck.impl.core.store import StoreUnavailable
from isrcheck.impl.store.zookeeper import ZooKeeperStore


def _unused_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_session_gives_up_when_kazoo_does_not_at_the_timeout() -> None:
    # a timeout no test would wait out: had the attempt waited for it, the message would say so
    store = ZooKeeperStore(f"127.0.0.1:{_unused_port()}", timeout=120.0, session_timeout=2.0)
    with pytest.raises(StoreUnavailable, match="kazoo gave up connecting"):
        store.session()
    store.close()
