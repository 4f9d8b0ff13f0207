"""The state codec's program run in C (engine/_codec.c) against the same program in Python
(engine/codec.py with ``native=False``): the same bytes for every reachable state of several models,
the same state back for every valid encoding, and never an answer where the Python program refuses
(the engine then answers None, and the codec lets the Python program raise its CodecError)."""
from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.engine.codec import HEADER_SIZE, MAX_BYTES, CodecError, StateCodec
from isrcheck.model.statecodec import kafka_state_codec
from isrcheck.peers.kafka_specification import PeerModel

from test_codec import _Peer, _Tiny, Colour, _Leaf, _Ping, _Pong, reachable, same

pytest.importorskip("isrcheck.engine._codec", reason="a pure install builds no C extension")


def _fast() -> StateCodec:
    codec = kafka_state_codec()
    if not codec.native:
        pytest.skip("the compiled modules are stale or not wanted: the codec runs in Python")
    return codec


def _python_answer(codec: StateCodec, data: bytes) -> Any:
    try:
        return codec.decode(data)
    except CodecError:
        return CodecError


@pytest.mark.parametrize("name, max_states", [("leader-crash-kip-320", None), ("deposed-controller-ar-write", 20000),
                                              ("reassignment-broker-crash", 20000), ("topic-deletion", 20000)])
def test_the_same_bytes_and_states_as_the_python_program(name: str, max_states: int | None) -> None:
    fast, slow = _fast(), kafka_state_codec(native=False)
    assert not slow.native and fast.signature == slow.signature
    for s in reachable(name, max_states):
        data = fast._engine.encode(s)  # the engine itself: no fallback may hide a refusal
        assert data is not None and data == slow.encode(s)
        back = fast._engine.decode(data)
        assert back is not None and same(back, slow.decode(data)) and same(s, back)


def test_a_peer_models_states_too() -> None:
    model = PeerModel("kip-320", replicas=2)
    fast, slow = model.state_codec, StateCodec(type(next(iter(model.init_states()))), native=False)
    if not fast.native:
        pytest.skip("the codec runs in Python")
    from isrcheck.engine.checker import Checker

    states: list = []
    Checker(PeerModel("kip-320", replicas=2, properties=[]), observer=lambda s, fp, d: states.append(s)).run()
    assert len(states) == 28939
    for s in states:
        data = fast._engine.encode(s)
        assert data == slow.encode(s)
        assert same(s, fast._engine.decode(data))


def _mutants(data: bytes, rng: random.Random) -> list[bytes]:
    """Every truncation, every single byte replaced by a few values, a few insertions and extensions."""
    out = [data[:k] for k in range(len(data))] + [data + b"\x00", data + data[HEADER_SIZE:]]
    for k in range(HEADER_SIZE, len(data)):
        for v in {0, 1, 2, 0xDF, 0xE0, 0xEF, 0xF0, 0xF1, 0xF8, 0xF9, 0xFF, rng.randrange(256)}:
            out.append(data[:k] + bytes([v]) + data[k + 1:])
        out.append(data[:k] + bytes([rng.randrange(256)]) + data[k:])
        out.append(data[:k] + data[k + 1:])
    return out


def test_mutated_encodings_are_refused_exactly_when_the_python_program_refuses() -> None:
    fast, slow = _fast(), kafka_state_codec(native=False)
    rng = random.Random(5)
    states = reachable("leader-crash-kip-320")
    refused = accepted = 0
    for s in rng.sample(states, 25):
        for m in _mutants(fast.encode(s), rng):
            want = _python_answer(slow, m)
            got = fast._engine.decode(m)
            if want is CodecError:
                assert got is None, m
                refused += 1
            else:
                assert got is not None and same(got, want), m
                accepted += 1
            # and through the codec, the Python program's error or the very same state
            if want is CodecError:
                with pytest.raises(CodecError):
                    fast.decode(m)
    assert refused > 1000 and accepted > 100  # both kinds were tried


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_behind_a_valid_header(blob: bytes) -> None:
    fast, slow = _fast(), kafka_state_codec(native=False)
    data = fast.header + blob
    want = _python_answer(slow, data)
    got = fast._engine.decode(data)
    assert got is None if want is CodecError else same(got, want)


def test_what_the_engine_leaves_to_the_python_program() -> None:
    fast = _fast()
    s = reachable("leader-crash-kip-320")[-1]
    data = fast.encode(s)
    for not_bytes in (bytearray(data), memoryview(data)):
        assert fast._engine.decode(not_bytes) is None
        assert same(fast.decode(not_bytes), s)  # the Python program reads them
    assert fast._engine.decode(b"x" * (MAX_BYTES + 1)) is None
    for wrong in (s[:-1], (1,) * len(s), None, s._replace(brokers=s.brokers[:1] + (None,))):
        assert fast._engine.encode(wrong) is None
        with pytest.raises(CodecError):
            fast.encode(wrong)


def test_other_schemas_ints_enums_unions_defaults() -> None:
    fast = StateCodec(_Peer, enums={("_Peer", "colours"): Colour})
    slow = StateCodec(_Peer, enums={("_Peer", "colours"): Colour}, native=False)
    if not fast.native:
        pytest.skip("the codec runs in Python")
    values = [
        _Peer(0, (), (), (), (), None),
        _Peer(-5, ((1, 2, 300), ()), (_Ping(1), _Pong(2, -1)), ((1, 2), (-3, 1 << 40)),
              (Colour.RED, Colour.BLUE), _Pong(1, 2), (4, 5)),
        _Peer(1 << 62, ((),) * 300, (_Ping(0),) * 3, (), (Colour.GREEN, 7), _Ping(9)),
        _Peer(-(1 << 63), ((-16, -17, 223, 224, (1 << 63) - 1),), (), ((0, 0),) * 224, (), None, ()),
    ]
    for v in values:
        data = fast._engine.encode(v)
        assert data == slow.encode(v)
        assert same(fast._engine.decode(data), slow.decode(data))
    for bad in (values[0]._replace(clock=True), values[0]._replace(clock=1 << 63), values[0]._replace(colours=(3,)),
                values[0]._replace(colours=(True,)), values[0]._replace(inflight=(_Leaf(1, 2),)),
                values[0]._replace(pairs=((1, 2, 3),)), values[0]._replace(answer=(1,)),
                values[0]._replace(logs=[(1,)]), values[0]._replace(clock=Colour.RED)):
        assert fast._engine.encode(bad) is None
        with pytest.raises(CodecError):
            slow.encode(bad)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(1 << 63), (1 << 63) - 1), st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=300),
       st.booleans())
def test_ints_of_every_size(x: int, xs: list[int], flag: bool) -> None:
    fast, slow = StateCodec(_Tiny), StateCodec(_Tiny, native=False)
    if not fast.native:
        pytest.skip("the codec runs in Python")
    v = _Tiny(x, tuple(xs), _Leaf(x, -x - 1) if flag else None, flag)
    data = fast._engine.encode(v)
    assert data == slow.encode(v)
    assert same(v, fast._engine.decode(data))


def test_inconsistent_tables_are_refused_when_the_engine_is_built() -> None:
    from isrcheck.engine._codec import CodecEngine

    ok = dict(header=b"IS\x01" + bytes(8), root=0, progs=[[(0, 0)]], nodes=[], classes=[_Ping], enum_types=[],
              enum_maps=[], fixed=[], unions=[], node_min=[], max_bytes=1 << 20)
    assert CodecEngine(**ok).decode(ok["header"] + b"\x05") == _Ping(5)
    for change, message in [({"root": 1}, "do not fit"), ({"progs": [[(5, 3)]]}, "class index"),
                            ({"progs": [[(0, 0), (0, 0)]]}, "does not cover"), ({"progs": [[(7, 0)]]}, "node index"),
                            ({"progs": [[(99, 0)]], "nodes": [(99, 0)], "node_min": [1]}, "unknown opcode"),
                            ({"classes": [int]}, "tuple subclasses")]:
        with pytest.raises((ValueError, TypeError), match=message):
            CodecEngine(**{**ok, **change})
