"""Symmetry reduction over broker ids.

Broker ids are only labels in this protocol: every rule that picks "the first" broker reads the
order of an assignment (AR) or reassignment target, never the numeric order of ids. So renaming
every broker reference in a state by one permutation gives a state that behaves the same up to
that renaming, and the checker may store one representative per class (Stateright's
representative, sound for safety properties, which are themselves blind to renaming).

The representative sorts brokers by an id-free signature (where the broker stands in each
assignment and target, its liveness, logs, epochs and queued requests) and renames every
reference accordingly. Brokers with equal signatures keep their relative id order, so the
representative is not always unique: that only costs reduction, never soundness.

Note that AR order makes the replicas of a partition distinguishable (preferred replica, selector
tie-breaks), so reduction only pays where brokers are interchangeable: spare brokers outside
every assignment and target. That is where it is on by default (:func:`symmetry_allowed`).
"""
from __future__ import annotations

from .config import Config
from .extension import NO_FIELDS, Extension, Kind, Scope
from .state import (
    LEADER_AND_ISR,
    Controller,
    Replica,
    State,
    make_broker,
    make_controller,
    make_ghost,
    make_leader_and_isr,
    make_replica,
    make_state,
    make_zk,
    make_zk_partition,
)


def symmetry_allowed(cfg: Config) -> bool:
    """Whether at least two brokers start out interchangeable (so reduction can pay off)."""
    placed: set[int] = set()
    for ar in cfg.assignment:
        placed.update(ar)
    for r in cfg.operations.reassignments:
        placed.update(r.target)
    return cfg.brokers - len(placed) >= 2


def _position(b: int, ids: tuple[int, ...]) -> int:
    """Where ``b`` stands in ``ids`` (-1: nowhere). A loop, not ``ids.index`` in a ``try``: most
    brokers are absent from most tuples (spares), and a raised ValueError costs more than the
    whole loop, compiled or not."""
    for i in range(len(ids)):
        if ids[i] == b:
            return i
    return -1


class _FieldIds:
    """Where a variant's fields hold broker ids (model/extension.py), per scope: the positions in
    ``ext`` of its BROKER fields and of its BROKERS fields, which renaming must rename."""

    def __init__(self, ext: Extension) -> None:
        self.single = {s: tuple(i for i, f in enumerate(ext.of(s)) if f.kind is Kind.BROKER) for s in Scope}
        self.sets = {s: tuple(i for i, f in enumerate(ext.of(s)) if f.kind is Kind.BROKERS) for s in Scope}
        self.any = any(self.single[s] or self.sets[s] for s in Scope)

    def place(self, scope: Scope, values: tuple[int, ...], b: int) -> tuple[bool, ...]:
        """Broker ``b``'s place in the id-holding fields: which of them name it."""
        return (tuple(values[i] == b for i in self.single[scope])
                + tuple(bool(values[i] >> b & 1) for i in self.sets[scope]))

    def rename(self, scope: Scope, values: tuple[int, ...], new_id: list[int]) -> tuple[int, ...]:
        if not self.any:  # no broker ids in any field (most variants): no lookup keyed by an enum,
            return values  # whose __hash__ is interpreted Python even in the compiled build
        if not (self.single[scope] or self.sets[scope]):
            return values
        out = list(values)
        for i in self.single[scope]:
            out[i] = new_id[values[i]]
        for i in self.sets[scope]:
            out[i] = _mask(values[i], new_id)
        return tuple(out)


_NO_IDS = _FieldIds(NO_FIELDS)
#: id(extension) -> (the extension, its positions); holding the extension keeps its id from being reused
_IDS: dict[int, tuple[Extension, _FieldIds]] = {}


def _field_ids(ext: Extension) -> _FieldIds:
    if ext.empty:
        return _NO_IDS
    found = _IDS.get(id(ext))
    if found is None:
        found = _IDS[id(ext)] = (ext, _FieldIds(ext))
    return found[1]


def _signature(s: State, b: int, ids: _FieldIds) -> tuple:
    br = s.brokers[b - 1]
    zk = s.zk
    places: list[object] = []
    for p, zp in enumerate(zk.partitions):
        places.append(_position(b, zp.replicas))
        places.append(_position(b, zk.reassign[p]))
        places.append(_position(b, s.ghost[p].reassign_origin))
        places.append(zp.leader == b)
        places.append(zp.isr >> b & 1)
        if ids.any:
            places.append(ids.place(Scope.PARTITION, zp.ext, b))
    for _, target in s.reassignments:
        places.append(_position(b, target))
    for c in (s.controller, s.stale):
        if c is not None:
            places.append(c.live >> b & 1)
            places.append(c.shutting_down >> b & 1)
            if ids.any:
                places.append(ids.place(Scope.CONTROLLER, c.ext, b))
            for p in range(len(zk.partitions)):
                places.append(c.replica_states[p][b - 1])
                places.append(_position(b, c.reassign_old[p]))
                places.append(_position(b, c.reassign_new[p]))
    local: list[tuple[object, ...] | None] = []
    for r in br.replicas:
        if r is None:
            local.append(None)
        else:
            role = 0 if r.leader == 0 else (1 if r.leader == b else 2)
            local.append((r.log, r.hw, r.checkpoint, role, r.leader_epoch, r.pending, r.epochs, r.fetch_state,
                          r.answer, ids.place(Scope.REPLICA, r.ext, b) if ids.any else r.ext))
    queue = tuple((q[0], q[1]) for q in s.inbox[b - 1])
    return (tuple(places), br.alive, br.controller_epoch, tuple(local), queue, zk.live >> b & 1,
            zk.registrations[b - 1], ids.place(Scope.BROKER, br.ext, b) if ids.any else br.ext)


def canonical(s: State, ext: Extension = NO_FIELDS) -> State:
    """The representative of ``s``'s class under renaming of broker ids (``ext``: the variant's
    fields, whose broker ids are renamed too)."""
    n = len(s.brokers)
    ids = _field_ids(ext)
    order = sorted(range(1, n + 1), key=lambda b: _signature(s, b, ids))
    if order == list(range(1, n + 1)):
        return s
    new_id = [0] * (n + 1)
    for new, old in enumerate(order, start=1):
        new_id[old] = new
    return rename(s, new_id, order, ext)


def _mask(m: int, new_id: list[int]) -> int:
    out = 0
    b = 0
    while m:
        if m & 1:
            out |= 1 << new_id[b]
        m >>= 1
        b += 1
    return out


def _ids(t: tuple[int, ...], new_id: list[int]) -> tuple[int, ...]:
    return tuple(new_id[b] for b in t)


def _per_broker(t: tuple, order: list[int]) -> tuple:
    """Reorder a tuple indexed by ``broker - 1`` so that position ``new - 1`` holds old ``order[new-1]``."""
    return tuple(t[old - 1] for old in order)


def _controller(c: Controller, new_id: list[int], order: list[int], ids: _FieldIds) -> Controller:
    return make_controller(
        c.epoch, _mask(c.live, new_id), _per_broker(c.registrations, order), c.partition_states,
        tuple(_per_broker(r, order) for r in c.replica_states), c.reassign_step,
        tuple(_ids(t, new_id) for t in c.reassign_old), tuple(_ids(t, new_id) for t in c.reassign_new),
        _mask(c.shutting_down, new_id), ids.rename(Scope.CONTROLLER, c.ext, new_id),
    )


def _replica(r: Replica | None, new_id: list[int], order: list[int], ids: _FieldIds) -> Replica | None:
    if r is None:
        return None
    return make_replica(r.log, r.hw, r.checkpoint, new_id[r.leader], r.leader_epoch, _mask(r.isr, new_id),
                        r.zk_version, _per_broker(r.remote_leo, order) if r.remote_leo else (), r.pending,
                        _mask(r.assigned, new_id), r.epochs, r.fetch_state, r.answer,
                        ids.rename(Scope.REPLICA, r.ext, new_id))


def rename(s: State, new_id: list[int], order: list[int], ext: Extension = NO_FIELDS) -> State:
    """Apply the renaming ``old -> new_id[old]`` to every broker reference in ``s`` (those in the
    variant fields ``ext`` declares as broker ids included)."""
    ids = _field_ids(ext)
    zk = s.zk
    parts = tuple(
        make_zk_partition(_ids(zp.replicas, new_id), new_id[zp.leader], _mask(zp.isr, new_id), zp.leader_epoch,
                          zp.version, zp.controller_epoch, ids.rename(Scope.PARTITION, zp.ext, new_id))
        for zp in zk.partitions
    )
    new_zk = make_zk(_mask(zk.live, new_id), _per_broker(zk.registrations, order), zk.controller_epoch, parts,
                tuple(_ids(t, new_id) for t in zk.reassign), zk.preferred, zk.deleting)
    brokers = tuple(
        make_broker(br.alive, br.controller_epoch, tuple(_replica(r, new_id, order, ids) for r in br.replicas),
                    ids.rename(Scope.BROKER, br.ext, new_id))
        for br in _per_broker(s.brokers, order)
    )
    inbox = tuple(
        tuple(
            make_leader_and_isr(q.controller_epoch, q.partition, new_id[q.leader], _mask(q.isr, new_id),
                                q.leader_epoch, q.zk_version, _ids(q.replicas, new_id))
            if q[0] == LEADER_AND_ISR else q
            for q in queue
        )
        for queue in _per_broker(s.inbox, order)
    )
    ghost = tuple(make_ghost(g.produced, g.acked, g.exposed, _ids(g.reassign_origin, new_id)) for g in s.ghost)
    stale = _controller(s.stale, new_id, order, ids) if s.stale is not None else None
    reassignments = tuple((p, _ids(t, new_id)) for p, t in s.reassignments)
    return make_state(new_zk, _controller(s.controller, new_id, order, ids), stale, brokers, inbox, ghost,
                      s.budget, reassignments)
