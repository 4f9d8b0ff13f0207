"""A variant's own state (model/extension.py) flows through the model like a built-in field.

The variant below declares one field of every scope and kind and writes them from its hooks: a
partition's eligible set and election count (in ZooKeeper), a replica's in-memory flag, a broker's
count of unclean stops (on disk), a controller's count of failures handled. The tests follow the
values through the steps, the fingerprint, the codec (both engines), symmetry and a crash.
"""
from __future__ import annotations

import random
from typing import Any

import pytest

from isrcheck.engine.checker import Checker
from isrcheck.engine.codec import StateCodec
from isrcheck.engine.explore import BreadthFirst
from isrcheck.invariants import build_model
from isrcheck.model.brokersets import bit, members
from isrcheck.model.config import from_mapping
from isrcheck.model.extension import Extension, ExtensionError, Field, Kind, Scope
from isrcheck.model.protocol import IsrChange, Protocol, Removal, Stop
from isrcheck.model.selectors import Election, Selector, SelectorInput
from isrcheck.model.state import State
from isrcheck.model.statecodec import kafka_state_codec
from isrcheck.model.symmetry import canonical, rename


class Tracked(Protocol):
    """Counts and remembers things in fields of every scope (no change to what the protocol does)."""

    fields = (
        Field("removed", Scope.PARTITION, Kind.BROKERS, doc="brokers the controller took out of the ISR"),
        Field("elections", Scope.PARTITION, Kind.INT),
        Field("last_leader", Scope.PARTITION, Kind.BROKER),
        Field("led", Scope.REPLICA, Kind.BOOL, persistent=False, doc="became leader since it last started"),
        Field("stops", Scope.BROKER, Kind.INT, doc="times it stopped"),
        Field("failures", Scope.CONTROLLER, Kind.INT, doc="broker failures this controller handled"),
    )

    def isr_removal(self, w: Any, c: Any, p: int, removed: int, cause: Removal) -> IsrChange:
        change = super().isr_removal(w, c, p, removed, cause)
        zp = w.parts[p]
        ext = self.extension.with_value(Scope.PARTITION, zp.ext, "removed", self.field(zp, "removed") | bit(removed))
        return change._replace(fields=ext)

    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        e = super().select(selector, inp)
        ext = self.extension.with_value(Scope.PARTITION, inp.fields, "elections",
                                        self.extension.get(Scope.PARTITION, inp.fields, "elections") + 1)
        return e._replace(fields=self.extension.with_value(Scope.PARTITION, ext, "last_leader", e.leader))

    def become_leader(self, w: Any, b: int, p: int, r: Any, req: Any) -> Any:
        r = super().become_leader(w, b, p, r, req)
        return r._replace(ext=self.with_field(r, "led", 1))

    def on_stop(self, w: Any, b: int, how: Stop) -> None:
        w.set_broker_field(b, "stops", w.broker_field(b, "stops") + 1)

    def on_broker_failure(self, w: Any, c: Any, dead: int) -> None:
        w.set_controller_field(c, "failures", w.controller_field(c, "failures") + len(members(dead)))


CONFIG = {"brokers": 4, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 2}}


def _states(cls: type[Protocol], raw: dict[str, Any] = CONFIG, limit: int = 50_000) -> list[State]:
    cfg = from_mapping(raw)
    model = build_model(cfg, protocol=cls(cfg), symmetry=False, properties=[])
    out: list[State] = []
    BreadthFirst(model, max_states=limit).run(on_state=lambda k, s, d: out.append(s))
    return out


@pytest.fixture(scope="module")
def tracked() -> list[State]:
    return _states(Tracked)


def test_a_variant_without_fields_leaves_every_ext_empty() -> None:
    s = _states(Protocol, limit=200)[-1]
    assert s.zk.partitions[0].ext == () and s.controller.ext == ()
    assert all(br.ext == () and all(r is None or r.ext == () for r in br.replicas) for br in s.brokers)


def test_the_fields_take_their_values_and_the_steps_keep_them(tracked: list[State]) -> None:
    ext = Tracked(from_mapping(CONFIG)).extension
    first = tracked[0]
    assert first.zk.partitions[0].ext == (0, 0, 0) and first.controller.ext == (0,)
    assert all(br.ext == (0,) for br in first.brokers)
    seen = {name: set() for name in ("removed", "elections", "last_leader", "stops", "failures")}
    for s in tracked:
        zp = s.zk.partitions[0]
        for name in ("removed", "elections", "last_leader"):
            seen[name].add(ext.get(Scope.PARTITION, zp.ext, name))
        seen["failures"].add(ext.get(Scope.CONTROLLER, s.controller.ext, "failures"))
        for br in s.brokers:
            seen["stops"].add(ext.get(Scope.BROKER, br.ext, "stops"))
            # every stop is counted, and a count never exceeds the crashes the budget allowed
            assert ext.get(Scope.BROKER, br.ext, "stops") <= 2
    assert seen["elections"] >= {0, 1, 2} and seen["stops"] >= {0, 1} and seen["failures"] >= {0, 1, 2}
    assert {b for m in seen["removed"] for b in members(m)} >= {1, 2}
    assert seen["last_leader"] >= {0, 2}


def test_a_crash_resets_what_is_not_persistent(tracked: list[State]) -> None:
    ext = Tracked(from_mapping(CONFIG)).extension
    led_and_down = [r for s in tracked for br in s.brokers if not br.alive for r in br.replicas if r is not None]
    assert led_and_down and all(ext.get(Scope.REPLICA, r.ext, "led") == 0 for r in led_and_down)
    assert any(ext.get(Scope.REPLICA, r.ext, "led") == 1 for s in tracked for br in s.brokers if br.alive
               for r in br.replicas if r is not None)


def test_the_fingerprint_tells_states_apart_by_their_fields(tracked: list[State]) -> None:
    """With fields that only remember, the variant has more distinct states than the model; the
    model's own states are exactly the variant's with the fields forgotten."""
    plain = _states(Protocol)
    assert len(tracked) > len(plain)
    strip = {_without_fields(s) for s in tracked}
    assert strip == set(plain)
    cfg = from_mapping(CONFIG)
    model = build_model(cfg, protocol=Tracked(cfg), symmetry=False, properties=[])
    assert len({model.fingerprint(s) for s in tracked}) == len(tracked)


def _without_fields(s: State) -> State:
    zk = s.zk._replace(partitions=tuple(zp._replace(ext=()) for zp in s.zk.partitions))
    brokers = tuple(br._replace(ext=(), replicas=tuple(None if r is None else r._replace(ext=()) for r in br.replicas))
                    for br in s.brokers)
    stale = None if s.stale is None else s.stale._replace(ext=())
    return s._replace(zk=zk, brokers=brokers, controller=s.controller._replace(ext=()), stale=stale)


@pytest.mark.parametrize("native", [True, False], ids=["codec-in-c", "codec-in-python"])
def test_the_codec_round_trips_the_fields(tracked: list[State], native: bool) -> None:
    codec = kafka_state_codec(native=native)
    for s in tracked[:: max(1, len(tracked) // 500)]:
        back = codec.decode(codec.encode(s))
        assert back == s and hash(back) == hash(s)


def test_symmetry_renames_the_broker_ids_the_fields_hold(tracked: list[State]) -> None:
    ext = Tracked(from_mapping(CONFIG)).extension
    rng = random.Random(7)
    for s in rng.sample(tracked, 300):
        order = rng.sample(range(1, 5), 4)  # new broker n is old broker order[n - 1]
        new_id = [0] * 5
        for new, old in enumerate(order, start=1):
            new_id[old] = new
        t = rename(s, new_id, order, ext)
        for zp, tp in zip(s.zk.partitions, t.zk.partitions):
            assert ext.get(Scope.PARTITION, tp.ext, "removed") == sum(
                bit(new_id[b]) for b in members(ext.get(Scope.PARTITION, zp.ext, "removed")))
            assert ext.get(Scope.PARTITION, tp.ext, "last_leader") == new_id[ext.get(Scope.PARTITION, zp.ext,
                                                                                      "last_leader")]
            assert ext.get(Scope.PARTITION, tp.ext, "elections") == ext.get(Scope.PARTITION, zp.ext, "elections")
        for old in range(1, 5):  # per-broker fields move with their broker
            assert t.brokers[new_id[old] - 1].ext == s.brokers[old - 1].ext
        assert canonical(t, ext) == canonical(canonical(t, ext), ext)


def test_a_symmetric_search_of_the_variant_is_smaller_and_finds_the_same_verdict() -> None:
    raw = {"brokers": 4, "replication_factor": 2, "max_records": 1, "faults": {"crashes": 1}}
    cfg = from_mapping(raw)
    full = Checker(build_model(cfg, protocol=Tracked(cfg), symmetry=False)).run()
    reduced = Checker(build_model(cfg, protocol=Tracked(cfg), symmetry=True)).run()
    assert full.outcome == reduced.outcome == "success"
    assert reduced.distinct_states < full.distinct_states


@pytest.mark.parametrize("fields, message", [
    ((Field("isr", Scope.PARTITION),), "already has a field of that name"),
    ((Field("x", Scope.BROKER), Field("x", Scope.BROKER)), "twice"),
    ((Field("flag", Scope.BROKER, Kind.BOOL, initial=2),), "is a bool"),
    ((Field("2bad", Scope.REPLICA),), "must be an identifier"),
])
def test_bad_declarations_are_one_line_errors(fields: tuple[Field, ...], message: str) -> None:
    with pytest.raises(ExtensionError, match=message):
        Extension(fields)


def test_a_field_written_with_a_value_of_the_wrong_kind_is_refused() -> None:
    ext = Extension((Field("who", Scope.PARTITION, Kind.BROKER),))
    with pytest.raises(ExtensionError, match="not negative"):
        ext.with_value(Scope.PARTITION, (0,), "who", -1)
    with pytest.raises(ExtensionError, match="no partition field 'nobody'"):
        ext.index(Scope.PARTITION, "nobody")


def test_the_generic_codec_still_refuses_a_foreign_schema(tracked: list[State]) -> None:
    from isrcheck.engine.codec import CodecError

    other = StateCodec(Election)
    with pytest.raises(CodecError):
        kafka_state_codec().decode(other.encode(Election(1, 2, (1,))))
