"""Fixtures for the reference implementation's tests.

``zookeeper``: a real ZooKeeper on a loopback port, started once per session by
``scripts/zookeeper.sh`` (which installs Debian's package if it is missing). Tests that need it are
marked ``zookeeper``; they are skipped, with the script's reason, only when the server cannot be
started. ``store_factory`` is parametrized over both store backends, each call giving a fresh,
isolated store (a new embedded store, or a new chroot on the ZooKeeper server).
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from isrcheck.impl.rigs.torture import make_zk_chroot

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "zookeeper.sh"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def zookeeper():
    """``HOST:PORT`` of a standalone ZooKeeper for this test session (skips if it cannot start)."""
    directory = tempfile.mkdtemp(prefix="isrcheck-zk-")
    port = free_port()
    try:
        proc = subprocess.run(["bash", str(SCRIPT), "start", str(port), directory], capture_output=True,
                              text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        shutil.rmtree(directory, ignore_errors=True)
        pytest.skip(f"ZooKeeper could not be started by scripts/zookeeper.sh: {e}")
    if proc.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        reason = (proc.stderr.strip().splitlines() or ["no reason given"])[-1]
        pytest.skip(f"ZooKeeper could not be started by scripts/zookeeper.sh: {reason}")
    yield f"127.0.0.1:{port}"
    subprocess.run(["bash", str(SCRIPT), "stop", directory], capture_output=True, timeout=60)
    shutil.rmtree(directory, ignore_errors=True)


def zk_chroot(hosts: str) -> str:
    """A fresh, empty chroot on the server: ``HOST:PORT/isrcheck-test-<random>``."""
    return make_zk_chroot(hosts, "isrcheck-test")


@pytest.fixture(scope="session")
def store_server():
    """An embedded store served over TCP (store.remote.StoreServer) on a background loop."""
    import asyncio
    import threading

    from isrcheck.impl.store.remote import StoreServer

    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder = {}

    def run():
        asyncio.set_event_loop(loop)

        async def start():
            srv = StoreServer("127.0.0.1", 0)
            holder["port"] = await srv.start()
            holder["srv"] = srv
            started.set()

        loop.run_until_complete(start())
        loop.run_forever()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert started.wait(10)
    yield holder["port"]
    loop.call_soon_threadsafe(loop.stop)
    t.join(5)


@pytest.fixture(params=["embedded", "remote", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
def store_factory(request):
    """A function returning a fresh store of the parametrized backend."""
    made = []
    if request.param == "embedded":
        from isrcheck.impl.store.embedded import EmbeddedStore

        def make():
            s = EmbeddedStore()
            made.append(s)
            return s
    elif request.param == "remote":
        port = request.getfixturevalue("store_server")
        from isrcheck.impl.store.remote import RemoteStore

        # one shared server: give each store a fresh root by prefixing paths is not possible, so clean up
        def make():
            s = RemoteStore("127.0.0.1", port)
            cleaner = s.session()
            for child in cleaner.get_children("/"):
                cleaner.delete_recursive("/" + child)
            cleaner.close()
            made.append(s)
            return s
    else:
        hosts = request.getfixturevalue("zookeeper")
        from isrcheck.impl.store.zookeeper import ZooKeeperStore

        def make():
            s = ZooKeeperStore(zk_chroot(hosts), timeout=10.0, session_timeout=4.0)
            made.append(s)
            return s
    make.backend = request.param
    yield make
    for s in made:
        s.close()


@pytest.fixture
def zk_fresh_chroot(zookeeper):
    """``HOST:PORT/chroot``: an empty corner of the session's ZooKeeper for one test."""
    return zk_chroot(zookeeper)
