"""A local cluster of real processes on loopback: the launcher behind ``isrcheck cluster``.

:class:`LocalCluster` starts, in a directory of its own:

- without ZooKeeper, a store server (:mod:`.coordinator` ``--serve-store``);
- ``controllers`` controller candidates (:mod:`.coordinator` ``--controller``), each a process;
- ``brokers`` broker processes (:mod:`.node`), each with its data directory.

Every process runs in its own session (it outlives the command that started it) and writes its
log to ``<dir>/<name>.log``; ``<dir>/cluster.json`` records ports and pids so that later commands
(:meth:`LocalCluster.load`) can find the cluster, kill a process or restart a broker.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from .client import Client, ClientError

STATE_FILE = "cluster.json"


class ClusterError(RuntimeError):
    pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie child of ours counts as dead
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


class LocalCluster:
    def __init__(self, directory: str | os.PathLike[str], brokers: int = 3, zookeeper: str | None = None,
                 config: dict[str, Any] | None = None, controllers: int = 2, python: str | None = None,
                 session_timeout: float = 2.0) -> None:
        self.dir = Path(directory).resolve()
        self.nbrokers = brokers
        self.zookeeper = zookeeper
        self.config = dict(config or {})
        self.config.setdefault("brokers", brokers)
        self.ncontrollers = controllers
        self.python = python or sys.executable
        self.session_timeout = session_timeout
        self.store_spec = f"zookeeper:{zookeeper}" if zookeeper else ""
        self.procs: dict[str, dict[str, Any]] = {}  # name -> {pid, port, role, args}

    # ------------------------------------------------------------------ state
    def save(self) -> None:
        data = {"store": self.store_spec, "brokers": self.nbrokers, "zookeeper": self.zookeeper,
                "config": self.config, "controllers": self.ncontrollers, "procs": self.procs,
                "session_timeout": self.session_timeout}
        (self.dir / STATE_FILE).write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> LocalCluster:
        path = Path(directory) / STATE_FILE
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            raise ClusterError(f"no cluster in {directory} (run `isrcheck cluster up` first)") from None
        c = cls(directory, data["brokers"], data.get("zookeeper"), data.get("config"), data.get("controllers", 2),
                session_timeout=data.get("session_timeout", 2.0))
        c.store_spec = data["store"]
        c.procs = data["procs"]
        return c

    @property
    def topic(self) -> str:
        return self.config.get("topic", "isrcheck")

    def client(self, timeout: float = 5.0) -> Client:
        return Client(self.store_spec, self.topic, timeout=timeout)

    # ------------------------------------------------------------------ processes
    def _launch(self, name: str, role: str, args: list[str], ready: str, timeout: float = 20.0) -> dict[str, Any]:
        self.dir.mkdir(parents=True, exist_ok=True)
        logf = self.dir / f"{name}.log"
        out = open(logf, "ab")  # noqa: SIM115 - handed to the child
        start = logf.stat().st_size
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen([self.python, "-m", *args], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = logf.read_bytes()[start:].decode(errors="replace")
            for line in text.splitlines():
                if line.startswith(ready):
                    port = int(line.split()[-1])
                    info = {"pid": proc.pid, "port": port, "role": role, "args": args}
                    self.procs[name] = info
                    self.save()
                    return info
            if proc.poll() is not None:
                raise ClusterError(f"{name} exited during start-up: {text.strip().splitlines()[-1:] or ['?']}")
            time.sleep(0.05)
        proc.kill()
        raise ClusterError(f"{name} did not start within {timeout:.0f} s (see {logf})")

    def _config_json(self) -> str:
        return json.dumps(self.config)

    def up(self, wait: float = 30.0) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.zookeeper:
            info = self._launch("store", "store", ["isrcheck.impl.coordinator", "--serve-store", "0"], "ready store")
            self.store_spec = f"embedded:127.0.0.1:{info['port']}"
        self.save()
        for i in range(1, self.ncontrollers + 1):
            self.start_controller(i)
        for b in range(1, self.nbrokers + 1):
            self.start_broker(b)
        self.wait_for(lambda c: len(c.brokers()) == self.nbrokers and c.snapshot().controller_epoch > 0,
                      wait, "every broker registered and a controller elected")

    def start_controller(self, i: int) -> dict[str, Any]:
        name = f"controller-{i}"
        return self._launch(name, "controller", ["isrcheck.impl.coordinator", "--controller", "--store",
                                                 self.store_spec, "--name", name, "--config-json",
                                                 self._config_json(), "--session-timeout",
                                                 str(self.session_timeout)], "ready controller")

    def start_broker(self, b: int) -> dict[str, Any]:
        name = f"broker-{b}"
        old = self.procs.get(name)
        port = old["port"] if old else 0
        return self._launch(name, "broker", ["isrcheck.impl.node", "--id", str(b), "--port", str(port), "--data",
                                             str(self.dir / f"data-{b}"), "--store", self.store_spec,
                                             "--config-json", self._config_json(), "--session-timeout",
                                             str(self.session_timeout)], "ready broker")

    def pid(self, name: str) -> int:
        if name not in self.procs:
            raise ClusterError(f"no process named {name!r} (known: {', '.join(sorted(self.procs))})")
        return int(self.procs[name]["pid"])

    def alive(self, name: str) -> bool:
        return name in self.procs and _alive(self.pid(name))

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        pid = self.pid(name)
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.02)

    def active_controller(self) -> str | None:
        with self.client() as c:
            return c.status()["controller"]["name"]

    def down(self) -> None:
        for name in sorted(self.procs, key=lambda n: (n == "store", n)):
            if self.alive(name):
                self.kill(name, signal.SIGKILL)

    # ------------------------------------------------------------------ waiting
    def wait_for(self, pred: Callable[[Client], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        with self.client() as c:
            while time.monotonic() < deadline:
                try:
                    if pred(c):
                        return
                except (ClientError, KeyError, ValueError) as e:
                    last = e
                time.sleep(0.05)
        raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}" + (f" ({last})" if last else ""))
