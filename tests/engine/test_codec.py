"""The binary state codec (engine/codec.py): lossless round trips over every reachable state of
several models, and a clear CodecError for every kind of bad input."""
from __future__ import annotations

import enum
import subprocess
import sys
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.engine.codec import HEADER_SIZE, MAGIC, CodecError, StateCodec, digest
from isrcheck.model.statecodec import kafka_state_codec
from isrcheck.model.tables import PartitionState, ReplicaState

# (model, max_states): every reachable state, or the first max_states of them
MODELS = [
    ("leader-crash-kip-320", None),
    ("deposed-controller-ar-write", 30000),
    ("reassignment-broker-crash", 30000),
    ("topic-deletion", 30000),
    ("two-partitions", None),
]

_STATES: dict[str, list] = {}


def reachable(name: str, max_states: int | None = None) -> list:
    """The states the Checker visits (to its first violation, or max_states)."""
    if name not in _STATES:
        e = manifest.get(name)
        states: list = []
        Checker(build_model(e.config), max_states=max_states,
                observer=lambda s, fp, d: states.append(s)).run()
        _STATES[name] = states
    return _STATES[name]


def same(a, b) -> bool:
    """Equal with the very same types throughout (classes, IntEnum members, bool vs int, None).

    The one allowed difference: where the model left a plain int in a field declared as an enum
    (the controller's replica states of brokers outside the assignment), the decoded value is the
    enum member equal to it. Equal states must have equal encodings (the digest of the bytes is a
    fingerprint), so the encoding cannot tell the two apart."""
    if type(a) is int and isinstance(b, enum.IntEnum):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("name, max_states", MODELS)
def test_every_reachable_state_survives_a_round_trip(name, max_states):
    codec = kafka_state_codec()
    states = reachable(name, max_states)
    assert len(states) > 100
    blobs = set()
    for s in states:
        data = codec.encode(s)
        back = codec.decode(data)
        assert back == s and same(s, back), s
        assert hash(back) == hash(s)
        assert codec.encode(back) == data
        blobs.add(data)
    assert len(blobs) == len(set(states))  # distinct states, distinct encodings


def test_enum_fields_come_back_as_members():
    codec = kafka_state_codec()
    s = reachable("leader-crash-kip-320")[-1]
    back = codec.decode(codec.encode(s))
    assert all(type(x) is PartitionState for x in back.controller.partition_states)
    assert all(type(x) is ReplicaState for row in back.controller.replica_states for x in row)
    assert all(type(b.alive) is bool for b in back.brokers)


def test_the_codec_covers_every_state_class():
    from isrcheck.model import state

    names = {c.__name__ for c in kafka_state_codec().classes}
    for cls in ("State", "Zk", "ZkPartition", "Controller", "Broker", "Replica", "Ghost", "Budget",
                "LeaderAndIsr", "StopReplica", "UpdateMetadata"):
        if hasattr(state, cls):
            assert cls in names


def test_signature_and_header():
    codec = kafka_state_codec()
    assert kafka_state_codec() is codec
    assert len(codec.signature) == 16 and int(codec.signature, 16) >= 0
    data = codec.encode(reachable("leader-crash-kip-320")[0])
    assert data[:len(MAGIC)] == MAGIC and data[:HEADER_SIZE] == codec.header
    assert codec.header[len(MAGIC):].hex() == codec.signature
    # the same schema compiled again has the same signature
    again = StateCodec(codec.root, enums={("Controller", "partition_states"): PartitionState,
                                          ("Controller", "replica_states"): ReplicaState})
    assert again.signature == codec.signature
    assert again.decode(data) == codec.decode(data)
    # without the enums, another schema
    assert StateCodec(codec.root).signature != codec.signature


def test_digest_is_stable_and_the_same_in_another_process():
    codec = kafka_state_codec()
    states = reachable("leader-crash-kip-320")[:200]
    blobs = [codec.encode(s) for s in states]
    here = [digest(b) for b in blobs]
    assert all(-(1 << 63) <= x < (1 << 63) for x in here)
    assert len(set(here)) == len(here)
    assert [codec.fingerprint(s) for s in states] == here
    prog = ("import sys\n"
            "from isrcheck.engine.codec import digest\nfrom isrcheck.model.statecodec import kafka_state_codec\n"
            "c = kafka_state_codec()\n"
            "for line in sys.stdin:\n"
            "    b = bytes.fromhex(line.strip())\n"
            "    print(digest(c.encode(c.decode(b))))\n")
    out = subprocess.run([sys.executable, "-c", prog], input="\n".join(b.hex() for b in blobs),
                         capture_output=True, text=True, check=True)
    assert [int(x) for x in out.stdout.split()] == here


# ---------------------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def sample() -> bytes:
    states = reachable("leader-crash-kip-320")
    return kafka_state_codec().encode(max(states, key=lambda s: len(kafka_state_codec().encode(s))))


def test_every_truncation_is_refused(sample):
    codec = kafka_state_codec()
    for cut in range(len(sample)):
        with pytest.raises(CodecError) as e:
            codec.decode(sample[:cut])
        assert "\n" not in str(e.value)


def test_trailing_bytes_are_refused(sample):
    with pytest.raises(CodecError, match="trailing"):
        kafka_state_codec().decode(sample + b"\x00")
    with pytest.raises(CodecError, match="trailing"):
        kafka_state_codec().decode(sample + sample)


def test_a_flipped_magic_is_refused(sample):
    for i in range(len(MAGIC)):
        bad = bytearray(sample)
        bad[i] ^= 0x40
        with pytest.raises(CodecError, match="not an encoded isrcheck state"):
            kafka_state_codec().decode(bytes(bad))


def test_another_schemas_signature_is_refused(sample):
    other = StateCodec(_Tiny)
    with pytest.raises(CodecError, match=f"another schema.*{kafka_state_codec().signature}"):
        other.decode(sample)
    with pytest.raises(CodecError, match="another schema"):
        kafka_state_codec().decode(other.encode(_Tiny(1, (2,), None, True)))
    bad = bytearray(sample)
    bad[HEADER_SIZE - 1] ^= 1
    with pytest.raises(CodecError, match="another schema"):
        kafka_state_codec().decode(bytes(bad))


def test_an_enum_value_out_of_range_is_refused():
    codec = kafka_state_codec()
    s = reachable("leader-crash-kip-320")[-1]
    bad = codec.encode(s._replace(controller=s.controller._replace(partition_states=(PartitionState.ONLINE,))))
    # the partition state byte: find it by encoding the same state with another member
    alt = codec.encode(s._replace(controller=s.controller._replace(partition_states=(PartitionState.OFFLINE,))))
    diff = [i for i in range(len(alt)) if alt[i] != bad[i]]
    assert len(diff) == 1
    forged = bytearray(bad)
    forged[diff[0]] = 99
    with pytest.raises(CodecError, match="invalid PartitionState value 99"):
        codec.decode(bytes(forged))
    with pytest.raises(CodecError, match="PartitionState"):
        codec.encode(s._replace(controller=s.controller._replace(partition_states=(99,))))


def test_a_bool_that_is_not_0_or_1_is_refused():
    c = StateCodec(_Tiny)
    data = bytearray(c.encode(_Tiny(1, (2,), None, True)))
    assert data[-1] == 1
    data[-1] = 2
    with pytest.raises(CodecError, match="invalid bool 2"):
        c.decode(bytes(data))


def test_absurd_lengths_are_refused():
    c = StateCodec(_Tiny)
    h = c.header
    # x=1, b: length 200 with 1 byte left
    with pytest.raises(CodecError, match="length 200"):
        c.decode(h + bytes([1, 200, 5]))
    # a length given as an 8-byte int
    with pytest.raises(CodecError, match="length"):
        c.decode(h + bytes([1, 0xF8]) + (1 << 62).to_bytes(8, "little") + b"\x00\x01")
    with pytest.raises(CodecError, match="too large"):
        c.decode(h + bytes(1 << 23))


def test_non_bytes_are_refused():
    for v in ("text", None, 12, [1, 2], (1, 2)):
        with pytest.raises(CodecError, match="expected bytes"):
            kafka_state_codec().decode(v)
    c = StateCodec(_Tiny)
    data = c.encode(_Tiny(1, (2,), None, False))
    assert c.decode(bytearray(data)) == c.decode(memoryview(data)) == _Tiny(1, (2,), None, False)


def test_values_outside_the_schema_are_not_encoded():
    c = StateCodec(_Tiny)
    for bad in (_Tiny(True, (), None, True), _Tiny(1, (1.5,), None, True), _Tiny(1, (), None, 1),
                _Tiny(1, [], None, True), _Tiny(1, (), _A(1), True), _Tiny(1 << 70, (), None, True)):
        with pytest.raises(CodecError):
            c.encode(bad)
    with pytest.raises(CodecError, match="expected a _Tiny"):
        c.encode((1, (), None, True))


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_are_refused_or_decoded_exactly(blob):
    for codec in (kafka_state_codec(), StateCodec(_Tiny)):
        for data in (blob, codec.header + blob):
            try:
                s = codec.decode(data)
            except CodecError as e:
                assert str(e) and "\n" not in str(e)
            else:
                assert codec.encode(s) == data  # only canonical encodings are accepted


@settings(max_examples=200, deadline=None)
@given(st.integers(-(1 << 63), (1 << 63) - 1), st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=300),
       st.booleans())
def test_ints_of_every_size_round_trip(x, xs, flag):
    c = StateCodec(_Tiny)
    v = _Tiny(x, tuple(xs), _Leaf(x, -x - 1) if flag else None, flag)
    assert same(c.decode(c.encode(v)), v)


# ---------------------------------------------------------------------------- other schemas
class _Leaf(NamedTuple):
    a: int
    b: int


class _Tiny(NamedTuple):
    x: int
    b: tuple[int, ...]
    leaf: _Leaf | None
    flag: bool


class Colour(enum.IntEnum):
    RED = 0
    GREEN = 1
    BLUE = 7


class _Ping(NamedTuple):
    kind: int


class _Pong(NamedTuple):
    kind: int
    seq: int


class _Peer(NamedTuple):
    """A peer model's state: ints and tuples, unions, fixed tuples, enums, defaults."""

    clock: int
    logs: tuple[tuple[int, ...], ...]
    inflight: tuple[_Ping | _Pong, ...]
    pairs: tuple[tuple[int, int], ...]
    colours: tuple[int, ...]
    last: _Ping | _Pong | None
    answer: tuple[int, int] = ()


def test_a_peer_model_schema():
    c = StateCodec(_Peer, enums={("_Peer", "colours"): Colour})
    states = [
        _Peer(0, (), (), (), (), None),
        _Peer(-5, ((1, 2, 300), ()), (_Ping(1), _Pong(2, -1)), ((1, 2), (-3, 1 << 40)),
              (Colour.RED, Colour.BLUE), _Pong(1, 2), (4, 5)),
        _Peer(1 << 62, ((),) * 300, (_Ping(0),) * 3, (), (Colour.GREEN,), _Ping(9)),
    ]
    for s in states:
        back = c.decode(c.encode(s))
        assert same(back, s) and hash(back) == hash(s)
    assert c.signature != kafka_state_codec().signature
    assert {x.__name__ for x in c.classes} == {"_Peer", "_Ping", "_Pong"}
    data = bytearray(c.encode(states[0]._replace(last=_Ping(3))))
    data[-3] = 5  # the union tag (then kind=3, then the () of answer)
    with pytest.raises(CodecError, match="invalid union tag 5"):
        c.decode(bytes(data))
    with pytest.raises(CodecError, match="Colour"):
        c.encode(states[0]._replace(colours=(3,)))


class _A(NamedTuple):
    x: int


class _B(NamedTuple):
    y: int


class _Ambiguous(NamedTuple):
    u: _A | _B  # same arity: cannot be told apart


class _Stringy(NamedTuple):
    name: str


def test_schema_errors_are_found_when_the_codec_is_built():
    with pytest.raises(TypeError, match="arity"):
        StateCodec(_Ambiguous)
    with pytest.raises(TypeError, match="unsupported annotation"):
        StateCodec(_Stringy)
    with pytest.raises(TypeError, match="NamedTuple"):
        StateCodec(int)
    with pytest.raises(TypeError, match="no field"):
        StateCodec(_Tiny, enums={("_Tiny", "nope"): Colour})
