"""The metadata store: one interface with ZooKeeper's semantics, two backends.

The controller and the brokers keep every piece of shared metadata here (broker registrations,
the controller znode and epoch, assignments, leader/ISR znodes, admin requests), exactly as the
0.8-era design keeps it in ZooKeeper (specs/00-scope.md, "What is modelled"). The semantics are
ZooKeeper's:

- a tree of **znodes**, each with data (bytes) and a :class:`Stat` (``version`` counts the writes of
  the data since creation, starting at 0; ``czxid``/``mzxid`` are the transaction ids that created
  and last modified it; ``ephemeral_owner`` the owning session, 0 for a persistent node);
- **sessions**: every client works through a :class:`Session`; an **ephemeral** znode belongs to the
  session that created it and disappears when that session closes or expires;
- **conditional writes**: ``set`` and ``delete`` take an expected version (-1 for any) and raise
  :class:`BadVersion` when it differs; ``create`` raises :class:`NodeExists`; a missing node is
  :class:`NoNode`; deleting a node with children is :class:`NotEmpty`;
- **one-shot watches**: a read with ``watch=True`` registers interest; the next change fires one
  :class:`WatchEvent` for that session and removes the watch. Events are *queued* on the session and
  collected with :meth:`Session.poll_events`, so a driver decides when a core sees them;
- **multi**: :meth:`Session.multi` applies a list of :class:`Op` atomically (all or none), each op
  seeing the effects of the ones before it; a failure raises :class:`TransactionFailed` naming the
  failed op and its error. The controller uses it to make each of its operations one fenced
  transaction.

Backends (``impl/store``, the room of their own): :mod:`isrcheck.impl.store.embedded` (in-process,
deterministic, the default) and :mod:`isrcheck.impl.store.zookeeper` (a real ZooKeeper through kazoo).
:mod:`isrcheck.impl.store.remote` serves an embedded store to other processes of a real cluster. The
contract tests in ``tests/impl/test_store_contract.py`` run the same assertions against every backend.
The interface lives with the cores (``impl/core``), not with its backends: the cores speak its ops
and errors, and import nothing of impl's other rooms.
"""
from __future__ import annotations

import abc
import queue
from dataclasses import dataclass
from typing import NamedTuple, Sequence, Union

ANY_VERSION = -1


# ---------------------------------------------------------------------------- errors
class StoreError(Exception):
    """Base of every metadata-store error; ``path`` names the znode concerned (if any)."""

    code = "StoreError"

    def __init__(self, path: str = "", message: str = "") -> None:
        super().__init__(message or f"{self.code}: {path}")
        self.path = path


class NoNode(StoreError):
    code = "NoNode"


class NodeExists(StoreError):
    code = "NodeExists"


class BadVersion(StoreError):
    code = "BadVersion"


class NotEmpty(StoreError):
    code = "NotEmpty"


class SessionExpired(StoreError):
    code = "SessionExpired"


class StoreUnavailable(StoreError):
    """The store cannot be reached (connection lost, server down)."""

    code = "StoreUnavailable"


class BadArguments(StoreError):
    code = "BadArguments"


class TransactionFailed(StoreError):
    """A :meth:`Session.multi` failed and changed nothing; ``index`` is the op that failed."""

    code = "TransactionFailed"

    def __init__(self, index: int, cause: StoreError) -> None:
        super().__init__(cause.path, f"multi op {index} failed: {cause.code} {cause.path}")
        self.index = index
        self.cause = cause


ERRORS: dict[str, type[StoreError]] = {
    cls.code: cls
    for cls in (StoreError, NoNode, NodeExists, BadVersion, NotEmpty, SessionExpired, StoreUnavailable,
                BadArguments)
}


# ---------------------------------------------------------------------------- values
class Stat(NamedTuple):
    """ZooKeeper's znode metadata (the fields the protocol uses)."""

    version: int  # writes of the data since creation (0 after create)
    czxid: int  # transaction that created the node
    mzxid: int  # transaction that last modified the data
    ephemeral_owner: int  # session id owning an ephemeral node, 0 for persistent nodes
    num_children: int = 0
    cversion: int = 0  # changes of the children list


class WatchEvent(NamedTuple):
    """A fired one-shot watch. ``kind`` is created | deleted | changed | child."""

    kind: str
    path: str


@dataclass(frozen=True)
class Create:
    path: str
    data: bytes = b""
    ephemeral: bool = False


@dataclass(frozen=True)
class SetData:
    path: str
    data: bytes
    version: int = ANY_VERSION


@dataclass(frozen=True)
class Delete:
    path: str
    version: int = ANY_VERSION


@dataclass(frozen=True)
class Check:
    path: str
    version: int


Op = Union[Create, SetData, Delete, Check]


def validate_path(path: str) -> None:
    if not isinstance(path, str) or not path.startswith("/") or (path != "/" and path.endswith("/")) or "//" in path:
        raise BadArguments(str(path), f"invalid znode path {path!r}")


def parent_of(path: str) -> str:
    head = path.rsplit("/", 1)[0]
    return head or "/"


# ---------------------------------------------------------------------------- interface
class Session(abc.ABC):
    """One client's session with the store. Ephemeral nodes and watches belong to it."""

    session_id: int

    @abc.abstractmethod
    def create(self, path: str, data: bytes = b"", ephemeral: bool = False, makepath: bool = False) -> str:
        """Create ``path``; NodeExists if it exists, NoNode if the parent is missing (unless makepath)."""

    @abc.abstractmethod
    def get(self, path: str, watch: bool = False) -> tuple[bytes, Stat]:
        """Data and stat of ``path`` (NoNode if missing); ``watch``: one change/delete event."""

    @abc.abstractmethod
    def exists(self, path: str, watch: bool = False) -> Stat | None:
        """The stat, or None; ``watch``: one created/changed/deleted event."""

    @abc.abstractmethod
    def get_children(self, path: str, watch: bool = False) -> list[str]:
        """Sorted child names (NoNode if missing); ``watch``: one child-list change event."""

    @abc.abstractmethod
    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat:
        """Replace the data if the version matches (BadVersion otherwise); the new stat."""

    @abc.abstractmethod
    def delete(self, path: str, version: int = ANY_VERSION) -> None:
        """Delete a childless node if the version matches."""

    @abc.abstractmethod
    def multi(self, ops: Sequence[Op]) -> list[object]:
        """Apply ``ops`` atomically; results: created path, new Stat, None (delete), True (check)."""

    @abc.abstractmethod
    def poll_events(self, timeout: float = 0.0) -> list[WatchEvent]:
        """Fired watches queued for this session, oldest first (waits up to ``timeout`` for one)."""

    @abc.abstractmethod
    def close(self) -> None:
        """End the session: its ephemeral nodes are deleted and watches fire."""

    @property
    @abc.abstractmethod
    def expired(self) -> bool:
        """Whether the session ended (closed here, or expired by the store)."""

    # -- conveniences built on the primitives
    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its missing ancestors as empty persistent nodes."""
        validate_path(path)
        parts = [p for p in path.split("/") if p]
        cur = ""
        for part in parts:
            cur += "/" + part
            if self.exists(cur) is None:
                try:
                    self.create(cur, b"")
                except NodeExists:
                    pass

    def delete_recursive(self, path: str) -> None:
        try:
            children = self.get_children(path)
        except NoNode:
            return
        for child in children:
            self.delete_recursive(f"{path.rstrip('/')}/{child}")
        try:
            self.delete(path)
        except NoNode:
            pass

    def get_or_none(self, path: str, watch: bool = False) -> tuple[bytes, Stat] | None:
        try:
            return self.get(path, watch=watch)
        except NoNode:
            if watch:
                self.exists(path, watch=True)
            return None


class Store(abc.ABC):
    """A metadata store: a factory of sessions."""

    @abc.abstractmethod
    def session(self) -> Session:
        """Open a new session."""

    def close(self) -> None:
        """Release the backend's resources (sessions opened through it may end)."""


def apply_multi_results_repr(results: Sequence[object]) -> list[object]:
    """Results of a multi in a JSON-friendly form (for the wire)."""
    out: list[object] = []
    for r in results:
        out.append(list(r) if isinstance(r, Stat) else r)
    return out


def drain_events(events: "queue.Queue[WatchEvent]", timeout: float = 0.0) -> list[WatchEvent]:
    """Every queued watch event, waiting up to ``timeout`` seconds for the first one (for the
    backends whose notifications arrive on another thread)."""
    out: list[WatchEvent] = []
    try:
        if timeout > 0:
            out.append(events.get(timeout=timeout))
        while True:
            out.append(events.get_nowait())
    except queue.Empty:
        pass
    return out
