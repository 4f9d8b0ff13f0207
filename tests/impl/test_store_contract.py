"""The metadata store's contract (ZooKeeper's semantics), run against every backend."""
from __future__ import annotations

import time

import pytest

from isrcheck.impl.core.store import (
    BadVersion, Check, Create, Delete, NodeExists, NoNode, NotEmpty, SessionExpired, SetData,
    TransactionFailed, WatchEvent,
)


def events(session, n: int = 1, timeout: float = 5.0) -> list[WatchEvent]:
    """At least ``n`` fired watches of ``session`` (the ZooKeeper backend delivers them asynchronously)."""
    out: list[WatchEvent] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        out += session.poll_events(timeout=0.05)
    time.sleep(0.05)
    return out + session.poll_events()


def test_create_get_and_versions(store_factory):
    s = store_factory().session()
    assert s.create("/a", b"one") == "/a"
    data, st = s.get("/a")
    assert data == b"one" and st.version == 0 and st.ephemeral_owner == 0
    st2 = s.set("/a", b"two")
    assert st2.version == 1 and st2.mzxid > st.mzxid and st2.czxid == st.czxid
    assert s.get("/a")[0] == b"two"
    with pytest.raises(NodeExists):
        s.create("/a", b"x")
    with pytest.raises(NoNode):
        s.create("/missing/child", b"")
    s.create("/deep/er/node", b"z", makepath=True)
    assert s.get_children("/deep/er") == ["node"]
    assert s.exists("/nope") is None
    with pytest.raises(NoNode):
        s.get("/nope")


def test_conditional_set_and_delete(store_factory):
    s = store_factory().session()
    s.create("/c", b"0")
    s.set("/c", b"1", version=0)
    with pytest.raises(BadVersion):
        s.set("/c", b"2", version=0)
    assert s.get("/c")[0] == b"1"
    with pytest.raises(BadVersion):
        s.delete("/c", version=0)
    s.create("/c/kid", b"")
    with pytest.raises(NotEmpty):
        s.delete("/c")
    s.delete("/c/kid")
    s.delete("/c", version=1)
    assert s.exists("/c") is None
    with pytest.raises(NoNode):
        s.delete("/c")


def test_ephemeral_nodes_vanish_with_their_session(store_factory):
    store = store_factory()
    a, b = store.session(), store.session()
    a.create("/brokers", b"")
    a.create("/brokers/1", b"host", ephemeral=True)
    st = b.exists("/brokers/1")
    assert st is not None and st.ephemeral_owner == a.session_id and st.ephemeral_owner != 0
    assert b.get_children("/brokers", watch=True) == ["1"]
    a.close()
    assert a.expired
    with pytest.raises(SessionExpired):
        a.get("/brokers")
    assert events(b) == [WatchEvent("child", "/brokers")]
    assert b.get_children("/brokers") == []


def test_watches_are_one_shot(store_factory):
    store = store_factory()
    w, other = store.session(), store.session()
    other.create("/x", b"0")
    w.get("/x", watch=True)
    other.set("/x", b"1")
    other.set("/x", b"2")  # the watch already fired: no second event
    assert events(w) == [WatchEvent("changed", "/x")]
    assert w.exists("/y", watch=True) is None
    other.create("/y", b"")
    assert events(w) == [WatchEvent("created", "/y")]
    w.get("/y", watch=True)
    other.delete("/y")
    assert events(w) == [WatchEvent("deleted", "/y")]
    w.get_children("/x", watch=True)
    other.create("/x/k", b"")
    assert events(w) == [WatchEvent("child", "/x")]


def test_multi_is_atomic(store_factory):
    store = store_factory()
    s = store.session()
    s.create("/epoch", b"1")
    s.create("/state", b"a")
    results = s.multi([Check("/epoch", 0), SetData("/state", b"b", 0), SetData("/state", b"c", 1),
                       Create("/new", b"n")])
    assert results[0] is True and results[2].version == 2 and results[3] == "/new"
    assert s.get("/state")[0] == b"c"
    with pytest.raises(TransactionFailed) as info:
        s.multi([SetData("/state", b"d", 2), Check("/epoch", 7), Delete("/new")])
    assert info.value.index == 1 and isinstance(info.value.cause, BadVersion)
    assert s.get("/state") [0] == b"c" and s.get("/state")[1].version == 2
    assert s.exists("/new") is not None
    with pytest.raises(TransactionFailed) as info:
        s.multi([Delete("/new"), Create("/epoch", b"")])
    assert isinstance(info.value.cause, NodeExists)
    assert s.exists("/new") is not None


def test_multi_fires_watches_only_when_committed(store_factory):
    store = store_factory()
    w, s = store.session(), store.session()
    s.create("/m", b"0")
    w.get("/m", watch=True)
    with pytest.raises(TransactionFailed):
        s.multi([SetData("/m", b"1"), Check("/m", 99)])
    assert events(w, n=0, timeout=0.2) == []
    s.multi([SetData("/m", b"1"), Check("/m", 1)])
    assert events(w) == [WatchEvent("changed", "/m")]


def test_sessions_are_distinct_and_close_is_idempotent(store_factory):
    store = store_factory()
    a, b = store.session(), store.session()
    assert a.session_id != b.session_id
    a.create("/e", b"", ephemeral=True)
    with pytest.raises(NodeExists):
        b.create("/e", b"", ephemeral=True)
    a.close()
    a.close()
    b.create("/e", b"", ephemeral=True)
    assert b.exists("/e").ephemeral_owner == b.session_id
