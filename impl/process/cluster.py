"""A local cluster of real processes on loopback: the launcher behind ``isrcheck cluster``.

:class:`LocalCluster` starts, in a directory of its own:

- without ZooKeeper, a store server (:mod:`.coordinator` ``--serve-store``);
- ``controllers`` controller candidates (:mod:`.coordinator` ``--controller``), each a process;
- ``brokers`` broker processes (:mod:`.node`), each with its data directory.

Every process runs in its own session (it outlives the command that started it) and writes its
log to ``<dir>/<name>.log`` (and, with ``event_log=DIR``, its own event log to ``DIR``, see
:mod:`.event_log`; the launcher logs the crashes and controller kills it injects); ``<dir>/cluster.json`` records ports and pids so that later commands
(:meth:`LocalCluster.load`) can find the cluster, kill a process or restart a broker.
``<dir>/cluster.secret`` (mode 0600, new at every :meth:`LocalCluster.up`) is the key of the MAC that
every frame of the cluster carries (:mod:`isrcheck.impl.wire.auth`); processes get its path, clients read it on load.
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

from ..wire.auth import SECRET_FILE, SecretError, find_secret, read_secret, write_secret
from .client import Client, ClientError
from .cluster_state import TOKEN_ENV, ClusterStateError, foreign, new_token, read_state, start_time
from .event_log import EventLogWriter, clock_ns, open_writer, step

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


def _freeze(pid: int) -> int:
    """Stop ``pid`` (SIGSTOP), wait until it is stopped, and read the event-log clock."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return clock_ns()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            time.sleep(0.02)  # no /proc: give the signal time to land
            break
        if state in ("T", "t", "Z", "X"):
            break
        time.sleep(0.001)
    return clock_ns()


class LocalCluster:
    def __init__(self, directory: str | os.PathLike[str], brokers: int = 3, zookeeper: str | None = None,
                 config: dict[str, Any] | None = None, controllers: int = 2, python: str | None = None,
                 session_timeout: float = 2.0, event_log: str | os.PathLike[str] | None = None) -> None:
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
        self.secret: bytes | None = None  # <dir>/cluster.secret, written by up(): every frame carries its HMAC
        self.secret_problem = ""  # why load() could not read the secret file (then client() refuses)
        # where every process writes its own event log (impl/process/event_log.py); None: nobody logs
        self.event_log = str(Path(event_log).resolve()) if event_log else None
        self._launcher: EventLogWriter | None = None
        self.record_ids: dict[str, int] = {}  # partition -> the last record id handed out (event-logged runs)
        self.token = new_token()  # in every child's environment: proof for `down` that it started it

    # ------------------------------------------------------------------ state
    def save(self) -> None:
        data = {"store": self.store_spec, "brokers": self.nbrokers, "zookeeper": self.zookeeper,
                "config": self.config, "controllers": self.ncontrollers, "procs": self.procs,
                "session_timeout": self.session_timeout, "event_log": self.event_log, "record_ids": self.record_ids,
                "token": self.token}
        (self.dir / STATE_FILE).write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> LocalCluster:
        path = Path(directory) / STATE_FILE
        try:  # validated like any input (impl/process/cluster_state.py): {} or a stray byte is one line, not a crash
            data = read_state(path)
        except FileNotFoundError:
            raise ClusterError(f"no cluster in {directory} (run `isrcheck cluster up` first)") from None
        except ClusterStateError as e:
            raise ClusterError(str(e)) from None
        c = cls(directory, data["brokers"], data.get("zookeeper"), data.get("config"), data.get("controllers", 2),
                session_timeout=data.get("session_timeout", 2.0), event_log=data.get("event_log"))
        c.store_spec = data["store"]
        c.procs = data["procs"]
        try:
            c.secret = find_secret(c.dir)
        except SecretError as e:  # `down` must still work; talking to the cluster cannot
            c.secret_problem = str(e)
        c.record_ids = dict(data.get("record_ids", {}))
        c.token = data.get("token", "")  # none in an older file: its processes cannot be proved ours
        return c

    @property
    def topic(self) -> str:
        return self.config.get("topic", "isrcheck")

    def client(self, timeout: float = 5.0) -> Client:
        if self.secret_problem:
            raise ClusterError(self.secret_problem)
        return Client(self.store_spec, self.topic, timeout=timeout, secret=self.secret)

    # ------------------------------------------------------------------ processes
    def _launch(self, name: str, role: str, args: list[str], ready: str, timeout: float = 20.0) -> dict[str, Any]:
        self.dir.mkdir(parents=True, exist_ok=True)
        logf = self.dir / f"{name}.log"
        out = open(logf, "ab")  # noqa: SIM115 - handed to the child
        start = logf.stat().st_size
        env = dict(os.environ, PYTHONUNBUFFERED="1", **{TOKEN_ENV: self.token}, **self.extra_env(name))
        proc = subprocess.Popen([self.python, "-m", *args], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = logf.read_bytes()[start:].decode(errors="replace")
            for line in text.splitlines():
                if line.startswith(ready):
                    port = int(line.split()[-1])
                    info = {"pid": proc.pid, "port": port, "role": role, "args": args,
                            "start_time": start_time(proc.pid)}
                    self.procs[name] = info
                    self.save()
                    return info
            if proc.poll() is not None:
                raise ClusterError(f"{name} exited during start-up: {(text.strip().splitlines() or ['?'])[-1]}")
            time.sleep(0.05)
        proc.kill()
        raise ClusterError(f"{name} did not start within {timeout:.0f} s (see {logf})")

    def extra_env(self, name: str) -> dict[str, str]:
        """More environment for process ``name``: none here; the nemesis's cluster
        (impl/rigs/torture.py) gives each process its routes through the proxies (impl/process/routes.py)."""
        return {}

    def _config_json(self) -> str:
        return json.dumps(self.config)

    def up(self, wait: float = 30.0) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.secret = read_secret(write_secret(self.dir))  # a fresh secret per cluster (mode 0600)
        self.secret_problem = ""
        if not self.zookeeper:
            info = self._launch("store", "store", ["isrcheck.impl.process.coordinator", "--serve-store", "0",
                                                   *self._secret_args()], "ready store")
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
        return self._launch(name, "controller", ["isrcheck.impl.process.coordinator", "--controller", "--store",
                                                 self.store_spec, "--name", name, "--config-json",
                                                 self._config_json(), "--session-timeout",
                                                 str(self.session_timeout), *self._event_log_args(),
                                                 *self._secret_args()],
                            "ready controller")

    def start_broker(self, b: int) -> dict[str, Any]:
        name = f"broker-{b}"
        old = self.procs.get(name)
        port = old["port"] if old else 0
        return self._launch(name, "broker", ["isrcheck.impl.process.node", "--id", str(b), "--port", str(port),
                                             "--data", str(self.dir / f"data-{b}"), "--store", self.store_spec,
                                             "--config-json", self._config_json(), "--session-timeout",
                                             str(self.session_timeout), *self._event_log_args(),
                                             *self._secret_args()],
                            "ready broker")

    def _event_log_args(self) -> list[str]:
        return ["--event-log", self.event_log] if self.event_log else []

    def _secret_args(self) -> list[str]:
        """The secret goes to a process as the path of its 0600 file, never as a value on a command line."""
        return ["--secret-file", str(self.dir / SECRET_FILE)] if self.secret is not None else []

    # ------------------------------------------------------------------ the launcher's own log lines
    def _log(self, process: str, kind: str, st: dict[str, Any] | None, facts: dict[str, Any], note: str,
             t: int | None = None) -> None:
        """A line of the launcher's (or a client's) own event log, when the cluster logs events."""
        if not self.event_log:
            return
        if self._launcher is None:
            self._launcher = open_writer(self.event_log, "launcher", "launcher", self.config)
        assert self._launcher is not None
        self._launcher.write(kind, st, facts, inp=process, note=note, t=t)

    def next_record_id(self, partition: int) -> int:
        """The next record id of ``partition``: 1, 2, ... over the cluster's life (saved in cluster.json),
        as the model numbers writes; an event-logged run must produce with these ids."""
        rid = self.record_ids.get(str(partition), 0) + 1
        self.record_ids[str(partition)] = rid
        self.save()
        return rid

    def note_acked(self, partition: int, record_ids: list[int]) -> None:
        """Log writes acknowledged to a client (``acked[p]``; the merge takes the union over all clients)."""
        self._log("client", "observation", None, {f"acked[{partition}]": sorted(record_ids)},
                  "acknowledged to a client")

    def request_reassignment(self, client: Client, partition: int, target: list[int]) -> None:
        """Write a reassignment request through ``client`` and log it as the model's
        ``RequestReassignment(p, target)`` (an administrator's step no process logs). The clock is read
        before the write, so the controller's reaction always comes after the line."""
        t = clock_ns()
        client.reassign(partition, target)
        self._log("admin", "action", {"name": "RequestReassignment", "args": [partition, list(target)]},
                  {f"partitions[{partition}].reassignment": list(target)}, "reassignment requested", t)

    def pid(self, name: str) -> int:
        if name not in self.procs:
            raise ClusterError(f"no process named {name!r} (known: {', '.join(sorted(self.procs))})")
        return int(self.procs[name]["pid"])

    def foreign(self, name: str) -> str | None:
        """Why the live process recorded as ``name`` cannot be proved to be the one this cluster
        started (impl/process/cluster_state.py), or None: it is, or it is not running."""
        pid = self.pid(name)
        if not _alive(pid):
            return None
        return foreign(pid, self.procs[name].get("start_time"), self.token)

    def alive(self, name: str) -> bool:
        """Running, and provably the process this cluster started (a reused PID is not)."""
        return name in self.procs and _alive(self.pid(name)) and self.foreign(name) is None

    def kill(self, name: str, sig: int = signal.SIGKILL, log: bool = True) -> None:
        """Send ``sig`` to a process and wait (up to 10 s) until it is gone; a SIGKILL of a live broker or
        of the active controller is logged (``Crash(b)``, ``ControllerFailover()``) once the process is
        gone, when the cluster logs events. A SIGTERM asks a broker for a controlled shutdown (it stops
        once the controller has moved its leaderships and ISR memberships); the step is logged by the
        controller, and the launcher adds ``brokers[b].alive = false`` once the process has exited."""
        pid = self.pid(name)
        why = self.foreign(name)
        if why is not None:
            raise ClusterError(f"refusing to signal pid {pid} ({name}): {why}")
        role = self.procs[name].get("role")
        active = False
        log = log and bool(self.event_log)
        if log and sig == signal.SIGKILL and role == "controller" and _alive(pid):
            try:
                active = self.active_controller() == name
            except ClientError:
                active = False
        was_alive = _alive(pid)
        t = None
        if log and sig == signal.SIGKILL and was_alive:
            t = _freeze(pid)  # every line the victim wrote has a smaller t; every reaction to its death a larger one
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.02)
        if log and sig == signal.SIGKILL and was_alive and not _alive(pid):
            if role == "broker":
                b = int(name.rsplit("-", 1)[1])
                self._log(name, "action", step("Crash", b), {f"brokers[{b}].alive": False}, f"SIGKILL {name}", t)
            elif active:
                self._log(name, "action", step("ControllerFailover"), {}, f"SIGKILL {name}, the active controller", t)
        elif log and sig == signal.SIGTERM and role == "broker" and was_alive and not _alive(pid):
            # the broker stopped on its own after its controlled shutdown: the step itself is the
            # controller's line (ControlledShutdown); this one only says the process is gone
            b = int(name.rsplit("-", 1)[1])
            self._log(name, "observation", None, {f"brokers[{b}].alive": False}, f"SIGTERM {name}: stopped")

    def active_controller(self) -> str | None:
        with self.client() as c:
            return c.status()["controller"]["name"]

    def down(self) -> None:
        """Kill every process; with event logs, first log the end of the run (kind ``end``): what the
        processes log while they are being killed is not part of it."""
        if self.event_log and any(self.alive(n) for n in self.procs):
            self._log("launcher", "end", None, {}, "the cluster is taken down")
        refused = [(name, why) for name in sorted(self.procs) if (why := self.foreign(name)) is not None]
        for name in sorted(self.procs, key=lambda n: (n == "store", n)):
            if self.alive(name):
                self.kill(name, signal.SIGKILL, log=False)
        if refused:  # the others are stopped; these PIDs now belong to someone else (a stale cluster.json)
            name, why = refused[0]
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            raise ClusterError(f"refusing to kill pid {self.pid(name)} ({name}): {why}{more}")

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
