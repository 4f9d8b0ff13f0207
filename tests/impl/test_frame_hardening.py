"""Frames that break the limits (issue 18): depth and size checked before the JSON parser, messages and
store requests checked field by field, one log line per refused frame, and fuzzing of the frame
decoder, the message decoder, the store server and a live broker.

The audit's findings this pins: JSON nested 900-100k deep dropped the connection without an answer and
wrote a 130 KB traceback per 1.9 KB frame; the store server dropped the connection on ``multi`` with
``ops = "x"`` and accepted bad base64. Each fuzz test prints how many frames it tried (``-s`` shows it).
"""
from __future__ import annotations

import base64
import json
import socket
import time

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from isrcheck.impl.core.messages import (
    MESSAGE_TYPES,
    ErrorResponse,
    MessageError,
    MetadataRequest,
    MetadataResponse,
    from_wire,
    to_wire,
)
from isrcheck.impl.process.client import BrokerConnection
from isrcheck.impl.process.cluster import LocalCluster
from isrcheck.impl.store.embedded import EmbeddedStore
from isrcheck.impl.store.remote import RemoteStore, StoreServer
from isrcheck.impl.store.requests import BadRequest, StoreRequest, parse_request
from isrcheck.impl.wire.auth import mac
from isrcheck.impl.wire.frame import (
    DEFAULT_MAX_DEPTH,
    HEADER,
    MAGIC,
    FrameDecoder,
    FrameError,
    Malformed,
    TooDeep,
    decode_message,
    encode_frame,
    encode_message,
    json_depth_exceeds,
)
from frame_exchange import Insider, connect, exchange, insider_exchange, read_until

# each replay or fuzz case opens a connection of its own: the accept gate's rate (what
# test_strangers.py checks) is raised so that it is not what this file waits for
FAST = {"replica_lag_time_max_ms": 1000, "fetch_interval_ms": 5, "controller_recheck_ms": 100,
        "max_connection_creation_rate": 100_000}

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.text(max_size=12),
                      st.sampled_from(["[", "]", "{", "}", '\\"[', "\\\\", '"', "[[[[{{{{"]))
json_values = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=30)


def depth(v: object) -> int:
    if isinstance(v, list):
        return 1 + max((depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((depth(x) for x in v.values()), default=0)
    return 0


def nested(n: int, inner: object = 0) -> object:
    for i in range(n):
        inner = [inner] if i % 2 else {"k": inner}
    return inner


def deep_payload(n: int) -> bytes:
    """``n`` levels of arrays, built as text (json.dumps itself cannot write 100k levels)."""
    return b'{"type":"MetadataRequest","request_id":' + b"[" * (n - 1) + b"1" + b"]" * (n - 1) + b"}"


def raw_frame(payload: bytes) -> bytes:
    return HEADER.pack(MAGIC, 1, 1, 0, len(payload)) + payload


def signed_frame(secret: bytes, payload: bytes) -> bytes:
    """A version 2 frame around any payload (even one json.dumps could not write)."""
    header = HEADER.pack(MAGIC, 2, 1, 0, len(payload))
    return header + mac(secret, header, payload) + payload


def report(capsys: pytest.CaptureFixture[str], what: str, n: int) -> None:
    with capsys.disabled():
        print(f"\n[frame fuzz] {what}: {n} frames tried")


# ---------------------------------------------------------------------------- the depth scan
@settings(max_examples=400, deadline=None)
@given(json_values, st.integers(0, 8))
def test_the_depth_scan_agrees_with_the_parsed_depth(value, limit):
    payload = json.dumps(value).encode()
    assert json_depth_exceeds(payload, limit) == (depth(value) > limit)


@pytest.mark.parametrize("levels", [DEFAULT_MAX_DEPTH - 1, DEFAULT_MAX_DEPTH, DEFAULT_MAX_DEPTH + 1, 200])
def test_the_depth_scan_is_exact_at_the_limit(levels):
    value = {"type": "x", "v": nested(levels - 1, "[{[{")}
    assert depth(value) == levels
    payload = json.dumps(value).encode()
    assert json_depth_exceeds(payload, DEFAULT_MAX_DEPTH) == (levels > DEFAULT_MAX_DEPTH)
    # many shallow structures side by side are not deep
    wide = json.dumps({"v": [nested(DEFAULT_MAX_DEPTH - 2)] * 500}).encode()
    assert not json_depth_exceeds(wide, DEFAULT_MAX_DEPTH)


@pytest.mark.parametrize("levels", [33, 900, 5_000, 100_000])
def test_deep_frames_are_refused_before_parsing(levels):
    data = raw_frame(deep_payload(levels))
    with pytest.raises(TooDeep, match="deeper than 32"):
        FrameDecoder().feed(data)


@pytest.mark.parametrize("payload", [
    b'{"a":' + b"9" * 5000 + b"}",  # an integer too long for int(): ValueError, not JSONDecodeError
    b'{"a":NaN}', b'{"a":-Infinity}',  # not JSON, though Python's parser takes them by default
    b'{"a":"\xff"}',
    b'{"a":[1,2}',
])
def test_payloads_that_are_not_json_are_malformed_frames(payload):
    with pytest.raises(Malformed):
        FrameDecoder().feed(raw_frame(payload))


# ---------------------------------------------------------------------------- messages
def test_message_fields_are_checked_element_by_element():
    ok = {"type": "LeaderAndIsr", "controller_epoch": 1, "partition": 0, "leader": 1, "isr": [1, 2],
          "leader_epoch": 1, "zk_version": 0, "replicas": [1, 2]}
    assert decode_message(ok).isr == (1, 2)
    for field, bad in [("isr", [[1]]), ("isr", ["1"]), ("isr", [True]), ("replicas", "12"),
                       ("partition", 2**63), ("leader", 1.0), ("controller_epoch", None)]:
        with pytest.raises(MessageError, match=field):
            decode_message({**ok, field: bad})
    md = {"type": "MetadataResponse", "request_id": 1, "broker": 1, "controller_epoch": 1, "live_brokers": [1],
          "partitions": [[0, 1, 1, [1]]]}
    assert decode_message(md).partitions == ((0, 1, 1, (1,)),)
    with pytest.raises(MessageError, match="partitions"):
        decode_message({**md, "partitions": [[0, 1, 1]]})
    rec = {"type": "FetchResponse", "partition": 0, "leader": 1, "offset": 0, "records": [{"id": 1, "epoch": 1}]}
    assert decode_message(rec).records[0].value == ""
    for bad in ({"id": "1", "epoch": 1}, {"id": 1}, {"id": 1, "epoch": 1, "extra": 0}, [1, 1]):
        with pytest.raises(MessageError, match="records"):
            decode_message({**rec, "records": [bad]})
    # a refused value is named in a bounded message, however large it is
    with pytest.raises(MessageError) as info:
        decode_message({**ok, "isr": [[list(range(100_000))]]})
    assert len(str(info.value)) < 200


message_like = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(MESSAGE_TYPES))},
    optional={k: st.one_of(json_values, st.lists(st.integers(-5, 5), max_size=4))
              for k in ("request_id", "partition", "controller_epoch", "isr", "records", "replicas", "leader",
                        "delete", "offset", "follower", "error", "partitions", "live_brokers", "broker")})


def test_fuzz_the_message_decoder(capsys):
    tried = []

    @settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.one_of(message_like, st.dictionaries(st.text(max_size=8), json_values, max_size=5)))
    def run(obj):
        tried.append(1)
        try:
            msg = decode_message(json.loads(json.dumps(obj)))
        except MessageError as e:
            assert len(str(e)) < 300
            return
        assert decode_message(to_wire(msg)) == msg  # what is accepted is exactly typed

    run()
    assert len(tried) >= 1500
    report(capsys, "message decoder", len(tried))


# ---------------------------------------------------------------------------- the frame decoder
def _valid_frames() -> st.SearchStrategy[bytes]:
    return st.builds(lambda v, secret: encode_frame({"type": "x", "v": v}, secret=secret), json_values,
                     st.sampled_from([None, bytes(32)]))


frame_inputs = st.one_of(
    st.binary(max_size=300),  # random bytes
    st.builds(lambda b: MAGIC + b, st.binary(max_size=100)),  # random after a good magic
    st.builds(lambda v: raw_frame(json.dumps(v).encode()), json_values),  # random nested JSON
    st.builds(lambda n: raw_frame(deep_payload(n)), st.integers(1, 3000)),  # deep JSON
    st.builds(lambda f, cut: f[:cut], _valid_frames(), st.integers(0, 400)),  # truncated frames
    st.builds(lambda f, i, x: f[:i] + bytes([x]) + f[i + 1:], _valid_frames(), st.integers(0, 60),
              st.integers(0, 255)),  # one byte changed
)


def test_fuzz_the_frame_decoder(capsys):
    tried = []

    @settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(frame_inputs, st.sampled_from([None, bytes(32)]), st.integers(1, 64))
    def run(data, secret, chunk):
        tried.append(1)
        dec = FrameDecoder(secret=secret)
        frames = []
        try:
            for i in range(0, len(data), chunk):
                frames += dec.feed(data[i:i + chunk])
        except FrameError as e:  # the only way a decoder may refuse, with a short reason
            assert e.code and len(str(e)) < 300
            with pytest.raises(FrameError):
                dec.feed(b"")
            return
        for obj in frames:
            assert isinstance(obj, dict) and depth(obj) <= DEFAULT_MAX_DEPTH

    run()
    assert len(tried) >= 2000
    report(capsys, "frame decoder", len(tried))


# ---------------------------------------------------------------------------- the store server
BAD_STORE_REQUESTS = [
    ({"op": "multi", "ops": "x"}, "multi.ops"),
    ({"op": "multi", "ops": [1]}, r"multi.ops\[0\]"),
    ({"op": "multi", "ops": [{"op": "create", "path": "/a", "data": "%%%"}]}, "base64"),
    ({"op": "multi", "ops": [{"op": "check", "path": "/a"}]}, "version"),
    ({"op": "multi", "ops": [{"op": "drop", "path": "/a"}]}, "unknown op"),
    ({"op": "create", "path": "/bad", "data": "YWJj$"}, "base64"),
    ({"op": "create", "path": "/bad", "data": "YWJ"}, "base64"),  # bad padding
    ({"op": "create", "path": "/bad", "data": 5}, "base64"),
    ({"op": "create", "path": "/bad", "ephemeral": "yes"}, "ephemeral"),
    ({"op": "create", "path": 7}, "path"),
    ({"op": "create", "path": "/a\x00b"}, "path"),
    ({"op": "create", "path": "/" + "a" * 2000}, "path"),
    ({"op": "create", "path": "relative"}, "path"),
    ({"op": "set", "path": "/a", "data": "", "version": "1"}, "version"),
    ({"op": "set", "path": "/a", "data": "", "version": True}, "version"),
    ({"op": "set", "path": "/a", "data": "", "version": 2**40}, "version"),
    ({"op": "get", "path": "/a", "watch": 1}, "watch"),
    ({"op": "get"}, "missing field 'path'"),
    ({"op": "get", "path": "/a", "extra": 1}, "unknown field"),
    ({"op": "rm", "path": "/a"}, "unknown store request"),
    ({"op": ["get"], "path": "/a"}, "unknown store request"),
]


@pytest.mark.parametrize("req, why", BAD_STORE_REQUESTS)
def test_the_store_request_parser_refuses_every_malformed_field(req, why):
    with pytest.raises(BadRequest, match=why) as info:
        parse_request({"type": "StoreRequest", "id": 1, **req})
    assert info.value.code == "BadArguments"
    with pytest.raises(BadRequest, match="id"):
        parse_request({"type": "StoreRequest", "id": "1", "op": "get", "path": "/"})
    assert parse_request({"type": "StoreRequest", "id": 3, "op": "set", "path": "/a", "data": "eA==",
                          "version": 2}) == StoreRequest(3, "set", "/a", b"x", version=2)


def test_the_store_server_answers_bad_requests_and_keeps_the_connection(store_server):
    """Over TCP, on one connection: every bad request gets its BadArguments answer, a good request
    after them is served, and the store is unchanged."""
    store = RemoteStore("127.0.0.1", store_server, timeout=5)
    s = store.session()
    s.ensure_path("/hardening")
    s.create("/hardening/a", b"keep")
    before = s.get("/hardening/a")
    with socket.create_connection(("127.0.0.1", store_server), timeout=5) as sock:
        dec = FrameDecoder()
        got: list[dict] = []

        def ask(obj: dict) -> dict:
            sock.sendall(encode_frame(obj))
            while True:
                for o in got:
                    if o.get("type") == "StoreResponse":
                        got.remove(o)
                        return o
                data = sock.recv(65536)
                assert data, "the store server closed the connection"
                got.extend(dec.feed(data))

        for i, (req, why) in enumerate(BAD_STORE_REQUESTS, start=10):
            req = {k: (v.replace("/a", "/hardening/a") if isinstance(v, str) else v) for k, v in req.items()}
            ans = ask({"type": "StoreRequest", "id": i, **req})
            assert ans["error"] == "BadArguments" and ans["id"] == i, ans
        ans = ask({"type": "StoreRequest", "id": 99, "op": "get", "path": "/hardening/a"})
        assert ans["id"] == 99 and base64.b64decode(ans["value"]["data"]) == b"keep"
    assert s.get("/hardening/a") == before
    s.close()
    store.close()


store_like = st.fixed_dictionaries(
    {"type": st.just("StoreRequest"), "id": st.one_of(st.integers(0, 5), json_leaf),
     "op": st.sampled_from(["create", "get", "exists", "children", "set", "delete", "multi", "x"])},
    optional={"path": st.one_of(st.sampled_from(["/", "/f", "/f/g", "//", "/f/", ""]), json_leaf),
              "data": st.one_of(st.sampled_from(["", "eA==", "e", "e===", "%"]), json_leaf),
              "version": st.one_of(st.integers(-3, 3), json_leaf),
              "watch": json_leaf, "ephemeral": json_leaf, "makepath": json_leaf,
              "ops": st.one_of(json_values, st.lists(st.fixed_dictionaries(
                  {"op": st.sampled_from(["create", "set", "delete", "check", "x"])},
                  optional={"path": st.sampled_from(["/f", "/f/g", "x"]), "data": st.sampled_from(["", "@"]),
                            "version": st.one_of(st.integers(-2, 2), json_leaf)}), max_size=3))})


def test_fuzz_the_store_server_answers(capsys):
    """Random requests against the server's answering code on one embedded store: every one gets a
    StoreResponse (a value or a named error), none raises."""
    server = StoreServer(store=EmbeddedStore())
    session = server.store.session()
    tried = []

    @settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.one_of(store_like, st.dictionaries(st.text(max_size=6), json_values, max_size=4)))
    def run(obj):
        tried.append(1)
        ans = server._answer(session, json.loads(json.dumps(obj)))
        assert ans["type"] == "StoreResponse" and ("error" in ans) != ("value" in ans)
        json.dumps(ans)  # always encodable

    run()
    assert len(tried) >= 1500
    report(capsys, "store server requests", len(tried))


# ---------------------------------------------------------------------------- a live broker
@pytest.fixture(scope="module")
def live(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("hardening") / "cluster", brokers=1, controllers=1, config=FAST)
    try:
        c.up(wait=30)
        yield c
    finally:
        c.down()


def _log(c: LocalCluster) -> str:
    return (c.dir / "broker-1.log").read_text()


def _refusals(c: LocalCluster) -> int:
    return sum("refused a frame" in ln for ln in _log(c).splitlines())


def _send(port: int, data: "bytes | Insider", secret: bytes | None) -> list[object]:
    if isinstance(data, Insider):
        assert secret is not None
        return [from_wire(o) for o in insider_exchange(port, "broker-1", secret, data)]
    return [from_wire(o) for o in exchange(port, data, secret)]


def _still_serves(c: LocalCluster) -> None:
    conn = BrokerConnection("127.0.0.1", c.procs["broker-1"]["port"], 5.0, c.secret, peer="broker-1")
    try:
        assert isinstance(conn.request(MetadataRequest(42)), MetadataResponse)
    finally:
        conn.close()


def _wait_refusals(c: LocalCluster, n: int) -> int:
    deadline = time.monotonic() + 20
    while _refusals(c) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return _refusals(c)


@pytest.mark.cluster
@pytest.mark.parametrize("levels", [33, 900, 100_000])
@pytest.mark.parametrize("signed", [True, False])
def test_a_deep_frame_gets_one_answer_and_one_log_line(live, levels, signed):
    c = live
    port = c.procs["broker-1"]["port"]
    payload = deep_payload(levels)  # built by hand: json.dumps cannot nest 100k deep
    data = Insider(payload) if signed else raw_frame(payload)
    lines, size = _refusals(c), len(_log(c))
    answers = _send(port, data, c.secret)
    assert len(answers) == 1 and isinstance(answers[0], ErrorResponse)
    expected = "FrameTooDeep" if signed else "Unauthenticated"  # unsigned: refused from the header alone
    assert answers[0].error.startswith(expected)
    assert _wait_refusals(c, lines + 1) == lines + 1
    time.sleep(0.05)
    assert _refusals(c) == lines + 1
    added = _log(c)[size:]
    assert expected in added and "Traceback" not in added and len(added) < 400  # no amplification
    _still_serves(c)
    assert c.alive("broker-1")


@pytest.mark.cluster
def test_fuzz_a_live_broker(live, capsys):
    """Frames at a running broker, one connection each: garbage without the secret, and, signed with
    it (an insider's garbage reaches the parser), random JSON, deep JSON, truncated frames and
    message-shaped objects that are not messages. Every non-empty input gets exactly one clean
    ErrorResponse and one log line, and the broker keeps serving."""
    c = live
    port = c.procs["broker-1"]["port"]
    secret = c.secret
    assert secret is not None
    tried = []

    def signed(obj_or_payload: object) -> Insider:
        if isinstance(obj_or_payload, bytes):
            return Insider(obj_or_payload)
        return Insider(json.dumps(obj_or_payload, separators=(",", ":")).encode())

    def not_a_message(obj: dict) -> bool:
        try:
            from_wire(obj)
        except MessageError:
            return True
        return False

    inputs = st.one_of(
        st.binary(min_size=1, max_size=200),
        frame_inputs.filter(bool),
        st.builds(lambda v: signed({"type": "x", "v": v}), json_values),
        st.builds(lambda n: signed(deep_payload(n)), st.integers(30, 2000)),
        st.builds(lambda v, cut: signed({"type": "MetadataRequest", "v": v})[:cut], json_values, st.integers(1, 60)),
        st.builds(signed, message_like.map(lambda o: json.loads(json.dumps(o))).filter(not_a_message)),
    )

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture])
    @given(inputs)
    def run(data):
        assume(data)
        tried.append(1)
        lines = _refusals(c)
        answers = _send(port, data, secret)
        assert len(answers) == 1 and isinstance(answers[0], ErrorResponse) and answers[0].error
        assert _wait_refusals(c, lines + 1) == lines + 1
        if len(tried) % 25 == 0:
            _still_serves(c)

    size = len(_log(c))
    run()
    time.sleep(0.1)
    _still_serves(c)
    assert c.alive("broker-1") and "Traceback" not in _log(c)[size:]
    assert len(tried) >= 250
    report(capsys, "live broker", len(tried))
    with capsys.disabled():
        added = len(_log(c)) - size
        print(f"[frame fuzz] live broker log: {added} bytes for {len(tried)} refused frames "
              f"({added / len(tried):.0f} bytes per frame)")


@pytest.mark.cluster
def test_bad_messages_on_one_connection_are_each_answered(live):
    """A well-formed, authenticated frame that is not a message: an answer and a log line each, and the
    connection stays open for the next request."""
    c = live
    lines = _refusals(c)
    bad = [{"type": "StopReplica", "controller_epoch": "1", "partition": 0, "delete": True},
           {"type": "LeaderAndIsr", "isr": [[1]]}, {"type": "Nope"}]
    s, ch = connect(c.procs["broker-1"]["port"], "broker-1", c.secret)
    with s:
        s.sendall(b"".join(ch.encode(b) for b in bad) + ch.encode(to_wire(MetadataRequest(7))))
        got = [from_wire(o) for o in read_until(s, ch, 4)]
    assert [type(m).__name__ for m in got] == ["ErrorResponse"] * 3 + ["MetadataResponse"]
    assert all(m.error.startswith("BadMessage") for m in got[:3])
    assert _wait_refusals(c, lines + 3) == lines + 3
