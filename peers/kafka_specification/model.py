"""The public TLA+ specification of Kafka's replication protocol (hachikuji/kafka-specification), as a
:class:`~isrcheck.engine.checker.Model` for the project's generic checker.

One partition, a fixed set of replicas, a controller without state of its own that writes the quorum
state (ZooKeeper) directly and sends LeaderAndIsr requests, and five variants of the follower's
truncation logic (one per TLA+ module). See README.md beside this file for the mapping of every
TLA+ action to the code below and for the state encoding.

Encoding (all ints, bitmasks and tuples of ints; replica ``i`` is bit ``1 << i``; ``-1`` is Nil/None):

* ``logs[i]``: the records replica ``i`` has written, offset 0 first (offsets at or beyond the end
  offset always hold Nil in the specification, so a log is exactly its written prefix). A record
  is ``epoch << 8 | id``: two records are equal iff id and epoch are.
* ``hw[i]``, ``epoch[i]``, ``leader[i]``, ``isr[i]``: replica ``i``'s local state.
* ``next_record``: the record id sequence.
* ``quorum_leader``, ``quorum_isr``: the quorum state; its leader epoch is ``len(requests) - 1``.
* ``requests``: every LeaderAndIsr request ever sent, indexed by its leader epoch (each controller
  update takes the next epoch and sends exactly one request with it), each ``isr | (leader + 1) << 8``.
  ``len(requests)`` is the leader epoch sequence's next id.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations
from typing import Any, Final, NamedTuple

from isrcheck.engine.checker import Property
from isrcheck.engine.codec import StateCodec
from isrcheck.engine.core import tuple_constructor

#: stable short names -> TLA+ module names
MODULES: dict[str, str] = {
    "truncate-to-hw": "KafkaTruncateToHighWatermark",
    "kip-101": "Kip101",
    "kip-279": "Kip279",
    "kip-320-first-try": "Kip320FirstTry",
    "kip-320": "Kip320",
}

PROPERTY_NAMES: tuple[str, ...] = ("TypeOk", "WeakIsr", "StrongIsr")

TRUNCATE_TO_HW: Final = 0
KIP_101: Final = 1
KIP_279: Final = 2
KIP_320_FIRST_TRY: Final = 3
KIP_320: Final = 4

_MODE: dict[str, int] = {
    "truncate-to-hw": TRUNCATE_TO_HW,
    "kip-101": KIP_101,
    "kip-279": KIP_279,
    "kip-320-first-try": KIP_320_FIRST_TRY,
    "kip-320": KIP_320,
}

REC_SHIFT: Final = 8  # a record is epoch << 8 | id
REQ_SHIFT: Final = 8  # a request is isr | (leader + 1) << 8
MAX_REPLICAS: Final = 4
_RECORD_BITS: Final = 20  # a record (epoch << 8 | id, epoch at most 1000) fits in this many bits

# Action names, per variant where the variants differ (the TLA+ operator names).
ELECT: Final = "ControllerElectLeader"
CONTROLLER_SHRINK: Final = "ControllerShrinkIsr"
BECOME_LEADER: Final = "BecomeLeader"
WRITE: Final = "LeaderWrite"
_EXPAND = ("LeaderExpandIsr", "LeaderExpandIsr", "LeaderExpandIsr", "LeaderExpandIsrBetterFencing",
           "FencedLeaderExpandIsr")
_SHRINK = ("LeaderShrinkIsr", "LeaderShrinkIsr", "LeaderShrinkIsr", "LeaderShrinkIsrBetterFencing",
           "FencedLeaderShrinkIsr")
_INC_HW = ("LeaderIncHighWatermark", "LeaderIncHighWatermark", "LeaderIncHighWatermark",
           "ImprovedLeaderIncHighWatermark", "FencedLeaderIncHighWatermark")
_FOLLOW = ("BecomeFollowerTruncateToHighWatermark", "BecomeFollowerTruncateKip101",
           "BecomeFollowerTruncateKip279", "BecomeFollower", "FencedBecomeFollowerAndTruncate")
_REPLICATE = ("FollowerReplicate", "FollowerReplicate", "FollowerReplicate", "FollowerFetch",
              "FencedFollowerFetch")
FOLLOWER_TRUNCATE: Final = "FollowerTruncate"

#: which argument of an action is a leader epoch (the others are replicas), for display
_EPOCH_ARG: dict[str, int] = {BECOME_LEADER: 1}
for _n in _FOLLOW:
    _EPOCH_ARG[_n] = 2


class PeerModelError(ValueError):
    """A bad argument to :class:`PeerModel` (unknown module, replica count, property)."""


class UnknownPeerModule(PeerModelError):
    pass


class PeerState(NamedTuple):
    logs: tuple[tuple[int, ...], ...]
    hw: tuple[int, ...]
    epoch: tuple[int, ...]
    leader: tuple[int, ...]
    isr: tuple[int, ...]
    next_record: int
    quorum_leader: int
    quorum_isr: int
    requests: tuple[int, ...]


_new: Final = tuple_constructor()  # engine/_newtuple.c in the compiled build (see model/state.py)
_PEER_STATE: Final = PeerState


def _state(logs: tuple[tuple[int, ...], ...], hw: tuple[int, ...], epoch: tuple[int, ...], leader: tuple[int, ...],
           isr: tuple[int, ...], next_record: int, quorum_leader: int, quorum_isr: int,
           requests: tuple[int, ...]) -> PeerState:
    """A PeerState built through ``_new``: calling the NamedTuple class (or ``_replace``) runs
    interpreted code even in the compiled build, the largest cost of a step."""
    return _new(_PEER_STATE, logs, hw, epoch, leader, isr, next_record, quorum_leader, quorum_isr, requests)


class PeerAction(NamedTuple):
    name: str
    args: tuple[int, ...]

    def __str__(self) -> str:
        ep = _EPOCH_ARG.get(self.name, -1)
        parts = [f"e{a}" if i == ep else f"r{a + 1}" for i, a in enumerate(self.args)]
        return f"{self.name}({', '.join(parts)})"


_PEER_ACTION: Final = PeerAction


def _action(name: str, args: tuple[int, ...]) -> PeerAction:
    return _new(_PEER_ACTION, name, args)


def record_id(rec: int) -> int:
    return rec & ((1 << REC_SHIFT) - 1)


def record_epoch(rec: int) -> int:
    return rec >> REC_SHIFT


def request_leader(req: int) -> int:
    return (req >> REQ_SHIFT) - 1


def request_isr(req: int) -> int:
    return req & ((1 << REQ_SHIFT) - 1)


def _names(mask: int, n: int) -> str:
    return "{" + ",".join(f"r{i + 1}" for i in range(n) if mask >> i & 1) + "}"


def state_line(s: PeerState) -> str:
    """A compact one-line rendering of a state."""
    n = len(s.hw)
    reps = []
    for i in range(n):
        log = ",".join(f"{record_id(r)}@e{record_epoch(r)}" for r in s.logs[i])
        ld = "-" if s.leader[i] < 0 else f"r{s.leader[i] + 1}"
        ep = "-" if s.epoch[i] < 0 else str(s.epoch[i])
        reps.append(f"r{i + 1}[log={log} hw={s.hw[i]} e={ep} ldr={ld} isr={_names(s.isr[i], n)}]")
    ql = "-" if s.quorum_leader < 0 else f"r{s.quorum_leader + 1}"
    reqs = " ".join(
        f"e{e}:{'-' if request_leader(q) < 0 else 'r' + str(request_leader(q) + 1)}{_names(request_isr(q), n)}"
        for e, q in enumerate(s.requests))
    return (" ".join(reps) + f" | quorum e={len(s.requests) - 1} ldr={ql} isr={_names(s.quorum_isr, n)}"
            f" | nextRecord={s.next_record} | requests[{reqs}]")


def _trunc_to_first_mismatch(ll: tuple[int, ...], lf: tuple[int, ...]) -> int:
    """One past the highest offset at which the follower's log holds the leader's record (0 when
    none, or when the leader's log is empty)."""
    o = min(len(ll), len(lf)) - 1
    while o >= 0:
        if ll[o] == lf[o]:
            return o + 1
        o -= 1
    return 0


class PeerModel:
    """The specification's state machine for one truncation module; see the module docstring."""

    def __init__(self, module: str, replicas: int = 2, symmetry: bool = False,
                 properties: Sequence[str] | None = None, log_size: int = 2, max_records: int = 2,
                 max_leader_epoch: int = 3) -> None:
        if module not in _MODE:
            raise UnknownPeerModule(f"unknown peer module {module!r}; known: {', '.join(MODULES)}")
        if not 1 <= replicas <= MAX_REPLICAS:
            raise PeerModelError(f"replicas must be between 1 and {MAX_REPLICAS}, not {replicas}")
        if log_size < 1 or max_records < 1 or max_leader_epoch < 0 or max_records > 255 or max_leader_epoch > 1000:
            raise PeerModelError("need log_size >= 1, 1 <= max_records <= 255, 0 <= max_leader_epoch <= 1000")
        wanted = list(PROPERTY_NAMES) if properties is None else list(properties)
        for name in wanted:
            if name not in PROPERTY_NAMES:
                raise PeerModelError(f"unknown property {name!r}; known: {', '.join(PROPERTY_NAMES)}")
        self.module = module
        self.tla_module = MODULES[module]
        self.mode = _MODE[module]
        self.n = replicas
        self.symmetry = symmetry
        self.log_size = log_size
        self.max_records = max_records
        self.max_leader_epoch = max_leader_epoch
        self.property_names = wanted
        self.all_mask = (1 << replicas) - 1
        self.expand_name = _EXPAND[self.mode]
        self.shrink_name = _SHRINK[self.mode]
        self.inc_hw_name = _INC_HW[self.mode]
        self.follow_name = _FOLLOW[self.mode]
        self.replicate_name = _REPLICATE[self.mode]
        # Symmetry tables: for every permutation, q (new index -> old index), p (old -> new),
        # the image of every replica bitmask and of every request code.
        self.perms_q: list[tuple[int, ...]] = []
        self.perms_p: list[tuple[int, ...]] = []
        self.mask_maps: list[list[int]] = []
        self.req_maps: list[list[int]] = []
        self.perm_index: dict[tuple[int, ...], int] = {}
        self.perm_by_code: list[int] = [-1] * replicas ** replicas  # q as base-n digits -> its index
        self.perms_p_ext: list[tuple[int, ...]] = []
        self.popcount: list[int] = [bin(m).count("1") for m in range(1 << replicas)]
        nreq = (replicas + 1) << REQ_SHIFT
        for q in permutations(range(replicas)):
            p = [0] * replicas
            for new, old in enumerate(q):
                p[old] = new
            mm = [0] * (1 << replicas)
            for m in range(1 << replicas):
                out = 0
                for i in range(replicas):
                    if m >> i & 1:
                        out |= 1 << p[i]
                mm[m] = out
            rm = [0] * nreq
            for code in range(nreq):
                ld = request_leader(code)
                im = request_isr(code)
                if im < len(mm):
                    rm[code] = mm[im] | ((p[ld] + 1 if ld >= 0 else 0) << REQ_SHIFT)
            self.perm_index[tuple(q)] = len(self.perms_q)
            code = 0
            for old in q:
                code = code * replicas + old
            self.perm_by_code[code] = len(self.perms_q)
            self.perms_q.append(tuple(q))
            self.perms_p.append(tuple(p))
            self.perms_p_ext.append(tuple(p) + (-1,))
            self.mask_maps.append(mm)
            self.req_maps.append(rm)
        #: _canon.c's PeerCanon (the compiled build), which computes ``hash(self.canonical(s))``
        #: without building the renamed state; None where it is not built or not wanted
        self.canon_c: Any = _native_canon(replicas, log_size) if symmetry else None
        #: its bound ``fingerprint``, called without a method lookup per state
        self.canon_fingerprint: Any = self.canon_c.fingerprint if self.canon_c is not None else None

    # ------------------------------------------------------------------ Model protocol
    def init_states(self) -> list[PeerState]:
        n = self.n
        empty: tuple[int, ...] = ()
        return [PeerState(logs=tuple(empty for _ in range(n)), hw=(0,) * n, epoch=(-1,) * n,
                          leader=(-1,) * n, isr=(0,) * n, next_record=0, quorum_leader=-1,
                          quorum_isr=self.all_mask, requests=())]

    def properties(self) -> list[Property]:
        table = {
            "TypeOk": Property("TypeOk", "always", self.type_ok, "tlc/MC_Kip320.tla TypeOkTLC",
                               "every variable lies in its domain"),
            "WeakIsr": Property("WeakIsr", "always", self.weak_isr, "KafkaReplication.tla WeakIsr",
                                "a presumed leader's local ISR holds its log up to its high watermark"),
            "StrongIsr": Property("StrongIsr", "always", self.strong_isr, "KafkaReplication.tla StrongIsr",
                                  "the quorum's ISR holds every presumed leader's log up to its high watermark"),
        }
        return [table[name] for name in self.property_names]

    def actions(self, s: PeerState) -> list[PeerAction]:
        n = self.n
        mode = self.mode
        acts: list[PeerAction] = []
        logs = s.logs
        hw = s.hw
        ep = s.epoch
        ld = s.leader
        isr = s.isr
        reqs = s.requests
        nle = len(reqs)
        ql = s.quorum_leader
        qi = s.quorum_isr
        log_size = self.log_size

        # Controller: elect a leader from the quorum ISR, or take a replica out of it.
        if nle <= self.max_leader_epoch:
            for r in range(n):
                if qi >> r & 1 and ql != r:
                    acts.append(_action(ELECT, (r,)))
            for r in range(n):
                if ql == r or qi >> r & 1:
                    acts.append(_action(CONTROLLER_SHRINK, (r,)))

        # A request's leader adopts it.
        for e in range(nle):
            lr = (reqs[e] >> REQ_SHIFT) - 1
            if lr >= 0 and e > ep[lr]:
                acts.append(_action(BECOME_LEADER, (lr, e)))

        # Presumed leaders accept writes.
        if s.next_record < self.max_records:
            for r in range(n):
                if ld[r] == r and len(logs[r]) < log_size:
                    acts.append(_action(WRITE, (r,)))

        # ISR changes by the true leader (the quorum's leader, presuming leadership, on the quorum's epoch).
        if ql >= 0 and ld[ql] == ql and ep[ql] == nle - 1:
            lead = ql
            lisr = isr[lead]
            ll = logs[lead]
            lend = len(ll)
            lhw = hw[lead]
            if mode <= KIP_279:
                for r in range(n):
                    if lisr >> r & 1:
                        if r != lead and not (ld[r] == lead and (lend == 0 or len(logs[r]) >= lend)):
                            acts.append(_action(self.shrink_name, (lead, r)))
                    elif ld[r] == lead and (lhw == 0 or (lhw <= lend and lhw <= len(logs[r]))):
                        acts.append(_action(self.expand_name, (lead, r)))
            else:
                reached = lhw == lend or (lhw < lend and ll[lhw] >> REC_SHIFT == ep[lead])
                for r in range(n):
                    lf = logs[r]
                    if mode == KIP_320_FIRST_TRY:
                        if lisr >> r & 1:
                            if r != lead and not self._caught_up_epoch(ll, lead, lf, ld[r], lend):
                                acts.append(_action(self.shrink_name, (lead, r)))
                        elif reached and self._caught_up_epoch(ll, lead, lf, ld[r], lhw):
                            acts.append(_action(self.expand_name, (lead, r)))
                    else:
                        following = ld[r] == lead and ep[r] == ep[lead]
                        if lisr >> r & 1:
                            if r != lead and (not following or len(lf) < lend):
                                acts.append(_action(self.shrink_name, (lead, r)))
                        elif following and reached and (lhw == 0 or lhw <= len(lf)):
                            acts.append(_action(self.expand_name, (lead, r)))

        # High watermark advances.
        for lead in range(n):
            h = hw[lead]
            ll = logs[lead]
            lisr = isr[lead]
            ok = False
            if mode <= KIP_279:
                if ld[lead] == lead and h < log_size:
                    ok = True
                    for f in range(n):
                        if lisr >> f & 1 and not (ld[f] == lead and h < len(logs[f])):
                            ok = False
                            break
            elif mode == KIP_320_FIRST_TRY:
                if ld[lead] == lead and h < len(ll):
                    ok = True
                    for f in range(n):
                        if lisr >> f & 1 and not self._caught_up_epoch(ll, lead, logs[f], ld[f], h + 1):
                            ok = False
                            break
            else:
                if h < len(ll):
                    ok = True
                    for f in range(n):
                        if lisr >> f & 1 and not (ld[lead] == lead and ld[f] == lead and ep[f] == ep[lead]
                                                  and h < len(logs[f])):
                            ok = False
                            break
            if ok:
                acts.append(_action(self.inc_hw_name, (lead,)))

        # A replica follows a request's leader (truncating its log, depending on the module).
        for e in range(nle):
            lead = (reqs[e] >> REQ_SHIFT) - 1
            if lead < 0:
                continue
            for r in range(n):
                if r == lead or e <= ep[r]:
                    continue
                if mode == KIP_320:
                    if ld[lead] != lead or ep[lead] != e:
                        continue
                elif mode != KIP_320_FIRST_TRY:
                    if self._truncation_offset(s, lead, r) > len(logs[r]):
                        continue
                acts.append(_action(self.follow_name, (lead, r, e)))

        # Followers copy the next record from the leader they follow.
        for f in range(n):
            lf = logs[f]
            fend = len(lf)
            lead = ld[f]
            if lead < 0 or lead == f or fend >= log_size or ld[lead] != lead:
                continue
            ll = logs[lead]
            if fend >= len(ll):
                continue
            if mode == KIP_320_FIRST_TRY:
                if not self._caught_up_epoch(ll, lead, lf, lead, fend):
                    continue
            elif mode == KIP_320:
                if ep[f] != ep[lead]:
                    continue
            acts.append(_action(self.replicate_name, (f, lead)))

        # Kip320FirstTry: a follower truncates when its last record disagrees with the leader.
        if mode == KIP_320_FIRST_TRY:
            for f in range(n):
                lead = ld[f]
                if lead < 0 or lead == f or ld[lead] != lead:
                    continue
                lf = logs[f]
                ll = logs[lead]
                fend = len(lf)
                if fend > len(ll) or (fend > 0 and fend - 1 < len(ll)
                                      and ll[fend - 1] >> REC_SHIFT != lf[fend - 1] >> REC_SHIFT):
                    acts.append(_action(FOLLOWER_TRUNCATE, (lead, f)))
        return acts

    def _caught_up_epoch(self, ll: tuple[int, ...], lead: int, lf: tuple[int, ...], f_leader: int,
                         end: int) -> bool:
        """Kip320FirstTry: the follower follows the (presumed) leader ``lead`` and, when ``end`` > 0,
        both logs have offset ``end - 1`` with records of the same epoch. The caller has checked
        or checks separately that ``lead`` presumes leadership where the specification asks."""
        if f_leader != lead:
            return False
        if end == 0:
            return True
        o = end - 1
        return o < len(ll) and o < len(lf) and ll[o] >> REC_SHIFT == lf[o] >> REC_SHIFT

    def _truncation_offset(self, s: PeerState, lead: int, r: int) -> int:
        """Where replica ``r`` truncates to when it follows ``lead`` (modules before KIP-320)."""
        mode = self.mode
        lr = s.logs[r]
        if mode == TRUNCATE_TO_HW:
            return s.hw[r]
        ll = s.logs[lead]
        if mode == KIP_101:
            if not lr:
                return 0
            want = lr[-1] >> REC_SHIFT
            if not ll:
                return s.hw[r]
            if ll[-1] >> REC_SHIFT == want:
                return len(ll)
            for o in range(len(ll)):
                if ll[o] >> REC_SHIFT > want:
                    return o
            return s.hw[r]
        return _trunc_to_first_mismatch(ll, lr)

    def next_state(self, s: PeerState, a: PeerAction) -> PeerState:
        name = a.name
        args = a.args
        n = self.n
        if name == self.replicate_name:
            f = args[0]
            lead = args[1]
            lf = s.logs[f]
            logs = list(s.logs)
            logs[f] = lf + (s.logs[lead][len(lf)],)
            hws = list(s.hw)
            nh = len(lf) + 1
            lh = s.hw[lead]
            hws[f] = lh if lh < nh else nh
            return _state(tuple(logs), tuple(hws), s.epoch, s.leader, s.isr, s.next_record, s.quorum_leader, s.quorum_isr, s.requests)
        if name == self.follow_name:
            lead = args[0]
            r = args[1]
            e = args[2]
            req = s.requests[e]
            eps = list(s.epoch)
            eps[r] = e
            lds = list(s.leader)
            lds[r] = lead
            isrs = list(s.isr)
            isrs[r] = req & ((1 << REQ_SHIFT) - 1)
            if self.mode == KIP_320_FIRST_TRY:
                return _state(s.logs, s.hw, tuple(eps), tuple(lds), tuple(isrs), s.next_record, s.quorum_leader, s.quorum_isr, s.requests)
            if self.mode == KIP_320:
                t = _trunc_to_first_mismatch(s.logs[lead], s.logs[r])
            else:
                t = self._truncation_offset(s, lead, r)
            logs = list(s.logs)
            logs[r] = logs[r][:t]
            hws = list(s.hw)
            if t < hws[r]:
                hws[r] = t
            return _state(tuple(logs), tuple(hws), tuple(eps), tuple(lds), tuple(isrs), s.next_record, s.quorum_leader, s.quorum_isr, s.requests)
        if name == WRITE:
            r = args[0]
            logs = list(s.logs)
            logs[r] = logs[r] + ((s.epoch[r] << REC_SHIFT) | s.next_record,)
            return _state(tuple(logs), s.hw, s.epoch, s.leader, s.isr, s.next_record + 1, s.quorum_leader, s.quorum_isr, s.requests)
        if name == self.inc_hw_name:
            lead = args[0]
            hws = list(s.hw)
            hws[lead] += 1
            return _state(s.logs, tuple(hws), s.epoch, s.leader, s.isr, s.next_record, s.quorum_leader, s.quorum_isr, s.requests)
        if name == BECOME_LEADER:
            lead = args[0]
            e = args[1]
            eps = list(s.epoch)
            eps[lead] = e
            lds = list(s.leader)
            lds[lead] = lead
            isrs = list(s.isr)
            isrs[lead] = s.requests[e] & ((1 << REQ_SHIFT) - 1)
            return _state(s.logs, s.hw, tuple(eps), tuple(lds), tuple(isrs), s.next_record, s.quorum_leader, s.quorum_isr, s.requests)
        if name == self.expand_name or name == self.shrink_name:
            lead = args[0]
            r = args[1]
            if name == self.expand_name:
                new_isr = s.isr[lead] | (1 << r)
            else:
                new_isr = s.isr[lead] & ~(1 << r)
            isrs = list(s.isr)
            isrs[lead] = new_isr
            return _state(s.logs, s.hw, s.epoch, s.leader, tuple(isrs), s.next_record, s.quorum_leader, new_isr, s.requests)
        if name == ELECT:
            r = args[0]
            qi = s.quorum_isr
            return _state(s.logs, s.hw, s.epoch, s.leader, s.isr, s.next_record, r, s.quorum_isr, s.requests + (qi | ((r + 1) << REQ_SHIFT),))
        if name == CONTROLLER_SHRINK:
            r = args[0]
            qi = s.quorum_isr
            if s.quorum_leader == r:
                new_leader = -1
                new_isr = qi if qi == 1 << r else qi & ~(1 << r)
            else:
                new_leader = s.quorum_leader
                new_isr = qi & ~(1 << r)
            return _state(s.logs, s.hw, s.epoch, s.leader, s.isr, s.next_record, new_leader, new_isr, s.requests + (new_isr | ((new_leader + 1) << REQ_SHIFT),))
        if name == FOLLOWER_TRUNCATE:
            lead = args[0]
            f = args[1]
            t = _trunc_to_first_mismatch(s.logs[lead], s.logs[f])
            logs = list(s.logs)
            logs[f] = logs[f][:t]
            hws = list(s.hw)
            if t < hws[f]:
                hws[f] = t
            return _state(tuple(logs), tuple(hws), s.epoch, s.leader, s.isr, s.next_record, s.quorum_leader, s.quorum_isr, s.requests)
        raise ValueError(f"not an action of {self.tla_module} with {n} replicas: {a}")

    # ------------------------------------------------------------------ properties
    def _isr_property(self, s: PeerState, quorum: bool) -> bool:
        n = self.n
        logs = s.logs
        for r1 in range(n):
            if s.leader[r1] != r1:
                continue
            h = s.hw[r1]
            if h == 0:
                continue
            l1 = logs[r1]
            members = s.quorum_isr if quorum else s.isr[r1]
            for r2 in range(n):
                if members >> r2 & 1:
                    l2 = logs[r2]
                    if h > len(l1) or h > len(l2) or l1[:h] != l2[:h]:
                        return False
        return True

    def weak_isr(self, s: PeerState) -> bool:
        return self._isr_property(s, False)

    def strong_isr(self, s: PeerState) -> bool:
        return self._isr_property(s, True)

    def type_ok(self, s: PeerState) -> bool:
        n = self.n
        full = self.all_mask
        me = self.max_leader_epoch
        if not 0 <= s.next_record <= self.max_records or len(s.requests) > me + 1:
            return False
        for t in (s.logs, s.hw, s.epoch, s.leader, s.isr):
            if len(t) != n:
                return False
        for i in range(n):
            log = s.logs[i]
            if len(log) > self.log_size:
                return False
            for rec in log:
                if not (0 <= rec & ((1 << REC_SHIFT) - 1) < self.max_records and 0 <= rec >> REC_SHIFT <= me):
                    return False
            if not (0 <= s.hw[i] <= self.log_size and -1 <= s.epoch[i] <= me and -1 <= s.leader[i] < n
                    and s.isr[i] & ~full == 0):
                return False
        if not (-1 <= s.quorum_leader < n and s.quorum_isr & ~full == 0):
            return False
        for q in s.requests:
            if not (-1 <= (q >> REQ_SHIFT) - 1 < n and q & ((1 << REQ_SHIFT) - 1) & ~full == 0):
                return False
        return True

    @property
    def state_codec(self) -> StateCodec:
        """The binary codec of :class:`PeerState` (the parallel workers move states with it)."""
        return peer_state_codec()

    # ------------------------------------------------------------------ symmetry
    def fingerprint(self, s: PeerState) -> int:
        if not self.symmetry:
            return hash(s)
        c = self.canon_fingerprint
        if c is not None:
            fp = c(s)
            if fp is not None:
                return int(fp)
        return hash(self.canonical(s))

    def _signatures(self, s: PeerState) -> list[int]:
        """A renaming-invariant description of every replica, as one int: replica ``i`` of ``s`` and
        its image in any renaming of ``s`` get equal signatures (its log, high watermark, epoch,
        whether it follows nobody/itself/another, the size of its ISR and whether it is in it,
        whether it is the quorum's leader and in the quorum's ISR). Distinct descriptions give
        distinct ints (every part has its own digits), so ties are exactly equal descriptions."""
        pop = self.popcount
        ql = s.quorum_leader
        qi = s.quorum_isr
        logs = s.logs
        hw = s.hw
        ep = s.epoch
        ld = s.leader
        isr = s.isr
        width = self.log_size + 1
        out: list[int] = []
        for i in range(self.n):
            li = ld[i]
            rel = 0 if li < 0 else (1 if li == i else 2)
            m = isr[i]
            key = ((((hw[i] * 2048 + ep[i] + 1) * 4 + rel) * 8 + pop[m]) * 2 + (m >> i & 1)) * 4 \
                + (2 if ql == i else 0) + (qi >> i & 1)
            log = logs[i]
            key = key * width + len(log)
            for rec in log:
                key = (key << _RECORD_BITS) | rec
            out.append(key)
        return out

    def canonical(self, s: PeerState) -> tuple[object, ...]:
        """The least renaming of ``s`` among those that list the replicas in signature order.

        Exact: two states get the same representative iff one is a renaming of the other (the
        renamings of ``s`` that sort it are, as a set of states, the same for every renaming of
        ``s``, so their minimum is too). Usually the signatures are distinct and one renaming is
        built."""
        n = self.n
        if n == 1:
            return s
        sigs = self._signatures(s)
        order = list(range(n))  # insertion sort of the replicas by signature (n is at most 4)
        for j in range(1, n):
            x = order[j]
            k = j - 1
            while k >= 0 and sigs[order[k]] > sigs[x]:
                order[k + 1] = order[k]
                k -= 1
            order[k + 1] = x
        code = 0
        tie = False
        for j in range(n):
            code = code * n + order[j]
            if j and sigs[order[j - 1]] == sigs[order[j]]:
                tie = True
        if not tie:
            k = self.perm_by_code[code]
            return s if k == 0 else self._rename(s, k)  # permutation 0 is the identity
        best: tuple[object, ...] | None = None
        for k in range(len(self.perms_q)):
            q = self.perms_q[k]
            ok = True
            for j in range(n - 1):
                if sigs[q[j]] > sigs[q[j + 1]]:
                    ok = False
                    break
            if not ok:
                continue
            cand = self._rename(s, k)
            if best is None or cand < best:
                best = cand
        assert best is not None
        return best

    def _rename(self, s: PeerState, k: int) -> tuple[object, ...]:
        """``s`` renamed by permutation ``k``, as a plain tuple (hashes and compares like a state)."""
        q = self.perms_q[k]
        pe = self.perms_p_ext[k]  # old -> new, and -1 -> -1 (its last entry)
        mm = self.mask_maps[k]
        rm = self.req_maps[k]
        logs = s.logs
        hw = s.hw
        ep = s.epoch
        ld = s.leader
        isr = s.isr
        n = self.n
        new_logs: list[tuple[int, ...]] = []
        new_hw: list[int] = []
        new_ep: list[int] = []
        new_ld: list[int] = []
        new_isr: list[int] = []
        for j in range(n):
            old = q[j]
            new_logs.append(logs[old])
            new_hw.append(hw[old])
            new_ep.append(ep[old])
            new_ld.append(pe[ld[old]])
            new_isr.append(mm[isr[old]])
        reqs: list[int] = []
        for code in s.requests:
            reqs.append(rm[code])
        return (tuple(new_logs), tuple(new_hw), tuple(new_ep), tuple(new_ld), tuple(new_isr), s.next_record,
                pe[s.quorum_leader], mm[s.quorum_isr], tuple(reqs))

    def renamed(self, s: PeerState, perm: Sequence[int]) -> PeerState:
        """``s`` with replica ``i`` renamed ``perm[i]`` (for tests)."""
        p = tuple(perm)
        k = self.perms_p.index(p)
        t = self._rename(s, k)
        return PeerState(*t)  # type: ignore[arg-type]


def _native_canon(replicas: int, log_size: int) -> Any:
    """_canon.c's PeerCanon when it is built and compiled code is wanted (it gives every state
    the number ``hash(canonical(s))`` gives: tests compare them), else None."""
    from isrcheck import native

    if not native.compiled_wanted():
        return None
    try:
        from ._canon import PeerCanon
    except ImportError:  # a pure install (ISRCHECK_BUILD_PURE=1)
        return None
    try:
        return PeerCanon(replicas, log_size)
    except ValueError:  # bounds its 128-bit signature cannot hold: the Python path
        return None


_CODEC: list[StateCodec] = []


def peer_state_codec() -> StateCodec:
    """The codec of :class:`PeerState`, built once per process."""
    if not _CODEC:
        _CODEC.append(StateCodec(PeerState))
    return _CODEC[0]
