"""Multi-process breadth-first search: the same search as :class:`~isrcheck.engine.checker.Checker`
spread over long-lived worker processes.

Design (level-synchronous; one fingerprint table shared by all; states stay where they are made):

* The visited set and the parent map are one open-addressing table in shared memory
  (:mod:`~isrcheck.engine.fptable`), made before the fork. Each worker *holds* part of the BFS
  frontier (concrete states) and expands it. For each successor it *claims* the successor's
  fingerprint with the event's discovery key (below): the table keeps the smallest key ever
  claimed for a fingerprint, an atomic minimum, so who wins does not depend on timing. A worker
  keeps each successor whose claim succeeded (it was the smallest so far), judges it then
  (``always`` properties, and ``sometimes`` ones still unwitnessed), while the state is in the
  processor's cache, and checks ``transition`` properties and :class:`ModelFault` on every step.
* After the level (a barrier), each worker *settles* its kept successors: those whose key is
  still the table's are the winners; the worker writes their parent into the table, and they
  form its part of the next frontier, already in key order. Only the winners' judgements count.
* Nothing crosses between workers during a level: no claims, no messages. States travel (in the
  model's binary ``state_codec`` when it has one, else pickled) only when the coordinator evens
  out the frontier between workers (about 1-3 % of the states on the Kafka models; a giver picks
  states spread over its key range). The coordinator (the calling process) synchronises levels,
  sums counts, gives every worker the sorted keys of the level (to rank its states), grows the
  table when it fills, and reads counterexamples' parents from the table; it never sees a state
  but the initial ones and a counterexample's.
* Processes are forked (``fork`` start method), so neither the model nor the table is pickled.

Equivalence with the single-process checker. Every event carries a *discovery key*, one 63-bit
int: ``level << 48 | rank << 16 | action index``, where ``rank`` is the parent's position in its
level in key order, among all workers' states. Comparing keys compares the paths of action
indices that first reach states in the single-process BFS order: a level's keys follow its
parents' order, then the action order, and every key of a level is smaller than any key of the
next. For each new state the smallest key among the events that reach it decides the parent and
the concrete state kept: exactly the first discovery of :class:`Checker`, which keeps the first
parent and the first concrete state (the representative, under symmetry reduction); and a state
reached in an earlier level holds a smaller key, so it is never won again. So the expanded
states, the parent map, and the counterexamples are those of the single-process checker:
shortest, deterministic, identical trace for trace. Where :class:`Checker` stops in the middle of
a level (first violation, ``max_states``), the coordinator finds the stopping event (the smallest
violating key, or the key of the ``max_states``-th state) and asks each worker for its figures up
to that event, so ``distinct_states``, ``depth``, ``transitions``, ``coverage``, the outcome and the
unwitnessed properties are the same as well.

When the table passes three quarters full in the middle of a level, the worker whose claim finds
it so pauses and tells the coordinator; the others pause at their next claim (or finish the
level); the coordinator then doubles the table, with nobody touching it, and lets them go on.

Snapshots (``checkpoint``). Before a level is expanded the table and the workers' frontiers are a
consistent cut, and the coordinator writes :class:`Checker`'s own snapshot of it: the table's
(fingerprint, parent) pairs as the parent map, and every worker's part of the level, encoded once
and merged in key order, which is the single process's queue order. A resume enters the pairs with
key 0, below every key a search offers, and gives the frontier keys of its level in the
snapshot's order; since a held key only ever stands for its rank, that is the same search. The
snapshot names no worker count: either search resumes the other's.
"""
from __future__ import annotations

import gc
import heapq
import multiprocessing as mp
import os
import pickle
import resource
import select
import signal
import time
import traceback
from bisect import bisect_left, bisect_right
from collections import Counter, deque
from collections.abc import Callable
from array import array
from itertools import compress, islice
from multiprocessing.connection import Connection, wait
from typing import Any, Generic

from .frames import END_FRAME, HDR, PeerGone as _PeerGone, WorkerError
from .frames import frame as _frame
from .checker import Checker
from .checkpoint import Checkpoints, Snapshot, SnapshotError, absorb_pairs, pairs_of, prepare_search
from .core import A, Checks, CheckResult, Kind, Model, ModelFault, Progress, S, Search, Step, Violation, action_name, result_of
from .explore import replay_fingerprints
from .fptable import new_table
from .memory import WATCH_SECONDS, MemoryCeilingHit, resident_bytes, shared_bytes, shmem_bytes

ACTION_BITS = 16  # bits of a discovery key for the action index: at most 65536 enabled actions per state
RANK_BITS = 32  # bits for the parent's rank in its level: at most 2**32 states per level
LEVEL_SHIFT = ACTION_BITS + RANK_BITS  # a key is level << LEVEL_SHIFT | rank << ACTION_BITS | action index
MAX_LEVELS = 1 << (63 - LEVEL_SHIFT)  # keys stay below 2**63: at most 32768 levels
_ACTION_MASK = (1 << ACTION_BITS) - 1
_RANK_MASK = (1 << RANK_BITS) - 1
BATCH = 256  # states per message when moving states between workers
BALANCE_SLACK = 16  # frontier sizes may differ by this much (or 1/8 of the level) before states move
PIPE_SIZE = 1 << 20  # bytes; asked of the kernel for worker-to-worker pipes (Linux F_SETPIPE_SZ)
TABLE_SLOTS = 1 << 30  # slots reserved for the fingerprint table (only touched pages cost memory)
TABLE_INITIAL_SLOTS = 1 << 16

_HDR = HDR
_END_FRAME = END_FRAME


# --------------------------------------------------------------------------- wire format
# Frames between the forked workers: see frames.py (kept out of the compiled modules).


def _set_pipe_size(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
    except (OSError, ImportError):  # pragma: no cover - not Linux, or over the user's pipe quota
        pass


class _Mesh:
    """Framed, non-blocking pipes from this worker to every other one, in phases (the states
    that move when the coordinator evens out the frontier).

    In each phase every worker sends its frames, then an empty frame ("that is all from me in
    this phase"), and waits for the empty frame of every peer. A peer may already be in the next
    phase: what it sends after its empty frame waits in the buffer until this worker gets there.
    No threads, and no deadlock: a worker never blocks in a write while it has input to read.
    """

    def __init__(self, in_fds: dict[int, int], out_fds: dict[int, int]) -> None:
        self.peer_of = {fd: peer for peer, fd in in_fds.items()}
        self.in_fds = list(in_fds.values())
        self.out_fds = out_fds
        self.inbuf = {fd: bytearray() for fd in self.in_fds}
        self.ended = dict.fromkeys(self.in_fds, False)
        self.pending: dict[int, deque[memoryview]] = {fd: deque() for fd in out_fds.values()}
        self.handler: Callable[[Any, int], None] = lambda obj, peer: None

    def begin(self, handler: Callable[[Any, int], None]) -> None:
        """Start a phase: frames received from now on (and those waiting) go to ``handler``."""
        self.handler = handler
        for fd in self.in_fds:
            self.ended[fd] = False
            self._parse(fd)

    def send(self, peer: int, frame: memoryview | bytes) -> None:
        fd = self.out_fds[peer]
        q = self.pending[fd]
        q.append(memoryview(frame))
        if len(q) == 1:
            self._flush(fd)

    def _flush(self, fd: int) -> None:
        q = self.pending[fd]
        while q:
            v = q[0]
            try:
                n = os.write(fd, v)
            except BlockingIOError:
                return
            if n == len(v):
                q.popleft()
            else:
                q[0] = v[n:]
                return

    def _read(self, fd: int) -> None:
        buf = self.inbuf[fd]
        while True:
            try:
                chunk = os.read(fd, PIPE_SIZE)
            except BlockingIOError:
                break
            if not chunk:
                raise _PeerGone("a peer worker exited in the middle of a level")
            buf += chunk
            if len(chunk) < PIPE_SIZE:
                break
        self._parse(fd)

    def _parse(self, fd: int) -> None:
        if self.ended[fd]:
            return
        buf, peer, handler = self.inbuf[fd], self.peer_of[fd], self.handler
        pos, size, hdr = 0, len(buf), _HDR.size
        while size - pos >= hdr:
            (n,) = _HDR.unpack_from(buf, pos)
            if size - pos - hdr < n:
                break
            if n == 0:
                pos += hdr
                self.ended[fd] = True
                break
            handler(pickle.loads(buf[pos + hdr:pos + hdr + n]), peer)
            pos += hdr + n
        if pos:
            del buf[:pos]

    def finish(self) -> None:
        """End the phase: tell every peer, and wait until every peer has said the same."""
        for peer in self.out_fds:
            self.send(peer, _END_FRAME)
        ended = self.ended
        while True:
            writing = [fd for fd, q in self.pending.items() if q]
            if not writing and all(ended.values()):
                return
            ready, writable, _ = select.select([fd for fd in self.in_fds if not ended[fd]] or self.in_fds,
                                               writing, [])
            for fd in writable:
                self._flush(fd)
            for fd in ready:
                self._read(fd)


# --------------------------------------------------------------------------- worker side
class _Worker:
    """One process: holder of part of the frontier (the states it expands), claiming successors
    in the shared fingerprint table."""

    def __init__(self, me: int, nworkers: int, model: Model, ctrl: Connection, table: Any,
                 in_fds: dict[int, int], out_fds: dict[int, int],
                 init: list[tuple[int, int, Any]], codec: Any = None, graph: Any = None) -> None:
        self.me = me
        self.n = nworkers
        self.model = model
        self.ctrl = ctrl
        self.table = table
        self.checks = Checks.of(model)
        # the held frontier, in key order, as three lists (no tuple per state): the states'
        # discovery keys (native int64 words), their fingerprints, and the states themselves
        held = sorted(init, key=_first)
        self.keys: bytes = array("q", [k for k, _, _ in held]).tobytes()
        self.fps: list[int] = [fp for _, fp, _ in held]
        self.states: list[Any] = [st for _, _, st in held]
        self.mesh = _Mesh(in_fds, out_fds)
        # a model's binary state codec (optional: ``state_codec``) carries the states that move
        # between workers; without one they are pickled. Built once before the fork (building it
        # reads the state's type hints: about 40 ms that every worker would repeat).
        self.codec: Any = codec
        # the successors kept in the level in progress, in key order (their keys, fingerprints
        # and parents are kept by the table, in this process's memory: see settle_kept)
        self.kept_states: list[Any] = []
        self.unsafe: set[int] = set()  # kept successors that break an always property
        self.witnessing: dict[int, list[str]] = {}  # kept successors -> the sometimes properties they witness
        # figures of the last level, to cut it at a stopping event
        self.level_ranks: list[int] = []
        self.level_starts: list[int] = []
        self.level_actions: list[Any] = []
        self.new_keys: array[int] = array("q")
        # the liveness graph's part this worker sees (``graph``: the LeadsTo properties, or None):
        # every step it takes that changes the state (source and target fingerprints, the fair
        # label's number in this worker), and each state it settles (key, fingerprint, masks)
        self.record = graph is not None
        self.masks = [p.masks for p in graph] if graph is not None else []
        self.e_src: array[int] = array("q")
        self.e_dst: array[int] = array("q")
        self.e_lab: array[int] = array("i")
        self.label_of: dict[Any, int] = {}
        self.n_keys: array[int] = array("q")
        self.n_fps: array[int] = array("q")
        self.n_masks: list[array[int]] = [array("Q") for _ in range(2 * len(self.masks))]

    # -- main loop
    def serve(self) -> None:
        handlers: dict[str, Callable[..., Any]] = {
            "expand": self._expand,
            "settle": self._settle,
            "balance": self._balance,
            "cut": self._cut,
            "graph": self._graph,
            "frontier": self._frontier,
        }
        while True:
            msg = self.ctrl.recv()
            if msg[0] == "stop":
                self.ctrl.send(("bye", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, shmem_bytes() // 1024))
                return
            self.ctrl.send(("ok", handlers[msg[0]](*msg[1:])))

    def _wait_for_growth(self, tfp: int, base: int, index: int, parent: int) -> int:
        """The table is full: pause until the coordinator has grown it, then claim again."""
        claim = self.table.claim
        while True:
            self.ctrl.send(("grow",))
            msg = self.ctrl.recv()
            if msg[0] != "resume":
                raise RuntimeError(f"expected 'resume' from the coordinator, got {msg[0]!r}")
            r: int = claim(tfp, base, index, parent)
            if r >= 0:
                return r

    def _expand(self, level: int, level_keys: list[bytes], unseen: list[str]) -> dict[str, Any]:
        """Expand the held frontier (level ``level``), claiming every successor in the table.
        ``level_keys``: every worker's keys of the level, sorted, one int64 run per worker."""
        model = self.model
        actions, next_state, fingerprint = model.actions, model.next_state, model.fingerprint
        legal, broken_transition = self.checks.legal, self.checks.broken_transition
        claim, prefetch = self.table.claim, self.table.prefetch
        succ_states: list[Any] = []  # the expanded state's successors, in action order
        succ_fps: list[int] = []
        clock = time.perf_counter()
        # A held state's rank is how many keys of the level are smaller than its own, in every
        # worker's run (one merge walk, in C in the compiled build)
        ranks: list[int] = self.table.ranks_in_level(self.keys, level_keys)
        level_base = (level + 1) << LEVEL_SHIFT
        kept_states: list[Any] = []
        self.kept_states = kept_states
        starts: list[int] = []
        taken: list[str] = []  # names of the actions taken, in event order (for coverage)
        viol: tuple | None = None  # first violating event of this worker, in key order
        # Each kept successor is judged (always properties, and sometimes properties still
        # unwitnessed) when it is made, while it is in the cache: judged after the level, the
        # states are cold again and the judging costs twice as much. Only the judgements of the
        # states this worker ends up holding count (in _settle).
        safe, witnesses = self.checks.safe, self.checks.witnessed
        pending = set(unseen)
        unsafe: set[int] = set()
        witnessing: dict[int, list[str]] = {}
        self.unsafe, self.witnessing = unsafe, witnessing
        fps, states = self.fps, self.states
        self.level_ranks = ranks
        record = self.record
        e_src, e_dst, e_lab, label_of = self.e_src, self.e_dst, self.e_lab, self.label_of
        fair_key: Any = getattr(model, "fair_key", None)
        for j in range(len(states)):
            s = states[j]
            states[j] = None  # released right after its expansion (hot), not with the whole level
            fp = fps[j]
            position = ranks[j]
            base = level_base | position << ACTION_BITS
            starts.append(len(taken))
            acts = actions(s)
            if not isinstance(acts, list):
                acts = list(acts)
            if len(acts) > _ACTION_MASK + 1:
                raise RuntimeError(f"a state has {len(acts)} enabled actions; the parallel "
                                   f"checker supports at most {_ACTION_MASK + 1}")
            # Every successor first, its slot fetched as soon as its fingerprint is known; then
            # the claims, in action order, on slots already on their way: the claims' cache and
            # TLB misses overlap each other and the expansion instead of coming one by one.
            succ_states.clear()
            succ_fps.clear()
            for i, a in enumerate(acts):
                try:
                    t = next_state(s, a)
                except ModelFault as e:
                    viol = (base | i, "fault", [e.property_name], fp, a, None, str(e))
                    break
                taken.append(action_name(a))
                if not legal(s, t):
                    viol = (base | i, "transition", broken_transition(s, t), fp, a, t, "")
                tfp = fingerprint(t)
                prefetch(tfp)
                succ_states.append(t)
                succ_fps.append(tfp)
                if record and tfp != fp:  # a step that changes nothing is no edge
                    e_src.append(fp)
                    e_dst.append(tfp)
                    key = fair_key(a)
                    if key is None:
                        e_lab.append(-1)
                    else:
                        lab = label_of.get(key)
                        if lab is None:
                            lab = label_of[key] = len(label_of)
                        e_lab.append(lab)
                if viol is not None:
                    break
            for i in range(len(succ_fps)):
                t = succ_states[i]
                tfp = succ_fps[i]
                won: int = claim(tfp, base, i, fp)  # kept by the table with its parent, if won
                if won < 0:
                    won = self._wait_for_growth(tfp, base, i, fp)
                if won:
                    # the smallest key so far: this worker's own later events have larger keys,
                    # so it keeps at most one successor per fingerprint
                    kept_states.append(t)
                    if not safe(t):
                        unsafe.add(tfp)
                    if pending:
                        seen_names = witnesses(t, pending)
                        if seen_names:
                            witnessing[tfp] = seen_names
            if viol is not None:
                break  # a violation: nothing after it in key order can matter
        self.table.flush()  # count every entry made here before anyone grows the table
        self.level_starts, self.level_actions = starts, taken
        return {
            "violations": [viol] if viol is not None else [],
            "transitions": len(taken),
            "coverage": _coverage(taken) if viol is None else None,
            "clock": time.perf_counter() - clock,
        }

    def _settle(self) -> dict[str, Any]:
        """After every worker's claims: keep the successors whose key is still the table's (the
        winners), write their parents, and judge them in discovery order (the first state that
        breaks an always property, the first to witness each sometimes property)."""
        clock = time.perf_counter()
        won, new_keys, new_fps = self.table.settle_kept()
        states = list(compress(self.kept_states, won))
        self.kept_states = []
        keys = array("q")
        keys.frombytes(new_keys)
        unsafe, witnessing = self.unsafe, self.witnessing
        witnessed: dict[str, int] = {}
        first_bad: tuple | None = None
        if unsafe or witnessing:
            for j in range(len(states)):
                tfp = new_fps[j]
                names = witnessing.get(tfp)
                if names is not None:
                    for name in names:
                        if name not in witnessed:
                            witnessed[name] = keys[j]
                if tfp in unsafe:
                    first_bad = (keys[j], "always", self.checks.broken_always(states[j]), tfp, None, None, "")
                    break  # nothing after it in key order can matter
        self.unsafe, self.witnessing = set(), {}
        if self.record:
            self.n_keys.extend(keys)
            self.n_fps.extend(new_fps)
            masks, n_masks = self.masks, self.n_masks
            for st in states:
                for k, m in enumerate(masks):
                    pm, gm = m(st)
                    n_masks[2 * k].append(pm)
                    n_masks[2 * k + 1].append(gm)
        self.keys, self.fps, self.states = new_keys, new_fps, states
        self.new_keys = keys
        _settle_gc()
        return {
            "new_keys": new_keys,
            "held": len(states),
            "violations": [first_bad] if first_bad is not None else [],
            "witnessed": witnessed,
            "clock": time.perf_counter() - clock,
        }

    def _balance(self, plan: list[tuple[int, int, int]]) -> int:
        """Move states between holders: ``(giver, receiver, count)``. A giver picks states
        spread evenly over its frontier, so that every holder keeps a share of every key range."""
        received: list[tuple[int, int, Any]] = []
        codec = self.codec
        if codec is None:
            self.mesh.begin(lambda batch, peer: received.extend(batch))
        else:
            self.mesh.begin(lambda batch, peer: received.extend((k, fp, codec.decode(b)) for k, fp, b in batch))
        keys = array("q")
        keys.frombytes(self.keys)
        fps, states = self.fps, self.states
        for giver, receiver, count in plan:
            if giver != self.me or count <= 0:
                continue
            step = len(states) / count
            picks = sorted({int(j * step) for j in range(count)})
            give = [(keys[j], fps[j], states[j]) for j in picks]
            # what stays: the runs between the picks, copied a slice at a time
            bounds = [-1, *picks, len(states)]
            keys = array("q", b"".join(keys[a + 1:b].tobytes() for a, b in zip(bounds, bounds[1:])))
            fps = [fp for a, b in zip(bounds, bounds[1:]) for fp in fps[a + 1:b]]
            states = [st for a, b in zip(bounds, bounds[1:]) for st in states[a + 1:b]]
            if codec is not None:
                give = [(k, fp, codec.encode(st)) for k, fp, st in give]
            for j in range(0, len(give), BATCH):
                self.mesh.send(receiver, _frame(give[j:j + BATCH]))
        self.mesh.finish()
        if received:
            # merged into the held lists in key order: each received state goes where bisect puts it
            received.sort(key=_first)
            at = [bisect_left(keys, k) for k, _, _ in received]
            bounds = [0, *at, len(states)]
            merged_keys, merged_fps, merged_states = array("q"), [], []
            for r in range(len(bounds) - 1):
                a, b = bounds[r], bounds[r + 1]
                merged_keys.extend(keys[a:b])
                merged_fps.extend(fps[a:b])
                merged_states.extend(states[a:b])
                if r < len(received):
                    k, fp, st = received[r]
                    merged_keys.append(k)
                    merged_fps.append(fp)
                    merged_states.append(st)
            keys, fps, states = merged_keys, merged_fps, merged_states
        self.keys, self.fps, self.states = keys.tobytes(), fps, states
        return len(received)

    def _frontier(self) -> tuple[bytes, list[bytes]]:
        """This worker's part of the level to expand next, for a snapshot: its keys (int64 words, in
        key order) and its states in the model's codec."""
        encode = self.codec.encode
        return self.keys, [encode(st) for st in self.states]

    def _graph(self) -> dict[str, Any]:
        """This worker's part of the liveness graph (once, after the last level), given up here."""
        part = {"e_src": self.e_src.tobytes(), "e_dst": self.e_dst.tobytes(), "e_lab": self.e_lab.tobytes(),
                "labels": list(self.label_of), "keys": self.n_keys.tobytes(), "fps": self.n_fps.tobytes(),
                "masks": [a.tobytes() for a in self.n_masks]}
        self.e_src, self.e_dst, self.e_lab = array("q"), array("q"), array("i")
        self.n_keys, self.n_fps, self.n_masks = array("q"), array("q"), []
        return part

    def _cut(self, stop: int) -> tuple[int, int, dict[str, int]]:
        """Figures of the last level up to and including the event ``stop``."""
        new = bisect_right(self.new_keys, stop)
        sk, sa = (stop >> ACTION_BITS) & _RANK_MASK, stop & _ACTION_MASK
        ranks, starts, taken = self.level_ranks, self.level_starts, self.level_actions
        # a violation ends the expansion: the ranks past the states expanded do not count
        ranks = ranks[:len(starts)]
        pos = bisect_left(ranks, sk)
        if pos == len(ranks):
            upto = len(taken)
        elif ranks[pos] != sk:
            upto = starts[pos]
        else:
            # The stopping state is ours. Every event this worker produced was a transition
            # except possibly its very last one (a ModelFault ends the expansion), and that
            # one is at or after the stopping event: so the state's transitions up to event
            # ``sa`` are its first ``sa + 1`` taken actions, or all of them if fewer.
            end = starts[pos + 1] if pos + 1 < len(starts) else len(taken)
            upto = starts[pos] + min(sa + 1, end - starts[pos])
        return new, upto, _coverage(islice(taken, upto))


def _first(entry: tuple[int, ...]) -> int:
    return entry[0]


def _as_is(raw: bytes) -> bytes:
    """A frontier state already encoded (by the worker that held it)."""
    return raw


def _coverage(taken: Any) -> dict[str, int]:
    return dict(Counter(taken))


def _settle_gc() -> None:
    """Once a level: move what survives into the permanent generation. The cyclic garbage
    collector never untracks namedtuples (only exact tuples), so otherwise every full collection
    walks every live state of the frontier again; states are acyclic and are still freed by
    reference counting."""
    gc.freeze()


def _worker_main(me: int, nworkers: int, model: Model, ctrl: Connection, table: Any, close: list,
                 in_fds: dict[int, int], out_fds: dict[int, int], init: list, codec: Any = None,
                 graph: Any = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator handles ^C and stops us
    for c in close:
        try:
            c.close() if isinstance(c, Connection) else os.close(c)
        except OSError:
            pass
    gc.freeze()  # what the fork inherited never needs a collection
    gc.disable()  # states are acyclic and freed by reference counting (see checker.paused_gc)
    try:
        _Worker(me, nworkers, model, ctrl, table, in_fds, out_fds, init, codec, graph).serve()
    except BaseException as e:  # noqa: BLE001 - reported to the coordinator
        tb = traceback.format_exc()
        try:
            ctrl.send(("error", e, tb))
        except Exception:  # the exception itself does not pickle
            try:
                ctrl.send(("error", None, tb))
            except Exception:
                pass


# --------------------------------------------------------------------------- coordinator side
class ParallelChecker(Search, Generic[S, A]):
    """Breadth-first exhaustive search over ``workers`` forked processes.

    Gives the same :class:`CheckResult` as :class:`Checker` (distinct states, depth, outcome,
    transitions, coverage, unwitnessed properties, and the same shortest counterexample).
    ``workers=1`` (or a platform without ``fork``) runs :class:`Checker` itself.
    After :meth:`run`, ``worker_peak_rss_kib`` holds each worker's peak resident set (KiB),
    ``worker_shared_kib`` and ``coordinator_shared_kib`` how much of the shared fingerprint table
    each process had touched (included in its peak; KiB), and ``table_bytes`` the table's size: one
    piece of memory, counted once by whoever adds the processes' figures.

    ``max_memory`` bounds the coordinator's resident memory plus what each worker added to its
    own since the fork (what it inherited is shared with the coordinator, and the shared
    fingerprint table, are counted once): read at
    each level's end and every ``WATCH_SECONDS`` while the workers expand. Past it, the level in
    progress is abandoned, the workers are stopped, and the result is the last complete level's,
    ``incomplete`` with ``limit_hit = "memory"``.
    """

    def __init__(
        self,
        model: Model[S, A],
        workers: int = 2,
        max_depth: int | None = None,
        max_states: int | None = None,
        progress: Callable[[Progress], None] | None = None,
        *,
        progress_every: float = 0.5,
        stop_on_first: bool = True,
        max_memory: int | None = None,
        table_slots: int = TABLE_INITIAL_SLOTS,
        graph: Any = None,
        checkpoint: Checkpoints | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if table_slots < 16:
            raise ValueError(f"table_slots must be at least 16, got {table_slots}")
        super().__init__(max_depth, max_states, stop_on_first, progress, progress_every, max_memory)
        self.model = model
        self.workers = workers
        self.worker_peak_rss_kib: list[int] = []
        self.worker_shared_kib: list[int] = []
        self.coordinator_shared_kib = 0
        self.table_bytes = 0
        self.table_slots = table_slots  # the fingerprint table's first size; it doubles as it fills
        #: a liveness GraphBuilder (engine/liveness.py): the workers record their steps and settled
        #: states, and a search that went through every state assembles the graph from them
        self.graph = graph
        #: snapshots between levels (engine/checkpoint.py): the single process's format, so either
        #: search resumes the other's
        self.checkpoint = checkpoint
        # per run: moved_states (what crossed between workers), table_grows (pauses to grow the
        # fingerprint table in the middle of a level), the seconds the workers spent expanding and
        # settling (expand_s, settle_s: summed over workers and levels), the slowest worker's
        # seconds of each level, summed over levels (expand_slowest_s, settle_slowest_s), and the
        # coordinator's between levels (between_levels_s: growing the table, balancing; of it,
        # balance_s: the workers moving states to even out the frontier)
        self.stats: Counter[str] = Counter()
        self._table: Any = None  # the shared fingerprint table of the run in progress
        self._initial_keys: list[bytes] = []  # the initial states' keys, sorted, as one int64 run
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._watch: float | None = None  # seconds between memory readings while waiting (None: none)
        self._inherited = 0  # the coordinator's resident bytes when it forked the workers
        self._abandoned = False  # a level was cut short (memory): the workers are mid-level
        self._figures: tuple[int, int, int, int] = (0, 0, 0, 0)  # total, depth, frontier, transitions
        self._transitions = 0
        # where the level loop starts: level, states, transitions, coverage (a resumed run's are the snapshot's)
        self._start_at: tuple[int, int, int, Counter[str]] = (0, 0, 0, Counter())

    # ------------------------------------------------------------------ entry point
    def run(self) -> CheckResult:
        if self.workers == 1 or not self.stop_on_first or "fork" not in mp.get_all_start_methods():
            return self._single()
        start = time.perf_counter()
        self.stats = Counter()
        model = self.model
        checks = Checks.of(model)
        unseen = set(checks.sometimes_names())
        fingerprint = model.fingerprint
        violations: dict[str, Violation] = {}

        init: list[tuple[int, int, Any]] = []  # (discovery key, fingerprint, state)
        table = new_table(TABLE_SLOTS, self.table_slots)
        self._table = table
        snap = self._snapshot()
        if snap is not None and (snap.violations or snap.limit_hit):
            return self._single()  # a snapshot past a violation: only the single process goes on
        if snap is not None:
            init = self._restore(snap, table, unseen)
            start -= snap.seconds  # the run's time is the time of all its parts
        for index, s in enumerate(model.init_states() if snap is None else ()):
            fp = fingerprint(s)
            if index >= 1 << LEVEL_SHIFT:
                raise RuntimeError(f"the parallel checker supports at most {1 << LEVEL_SHIFT} initial states")
            while table.claim(fp, 0, index) < 0:
                table.grow()
            if not table.settle(fp, index, fp):  # an initial state is its own parent
                continue  # an earlier initial state had this fingerprint
            for name in checks.broken_always(s):
                if name not in violations:
                    violations[name] = Violation(name, "always", replay_fingerprints(model, [fp]), "")
            unseen.difference_update(checks.witnessed(s, unseen))
            init.append((index, fp, s))
        if violations or not init:
            seconds = time.perf_counter() - start
            level, total, transitions, coverage = self._start_at if snap is not None else (0, len(init), 0, Counter())
            if self.progress is not None:
                self.progress(Progress(total, level, len(init), seconds))
            return result_of(total, level, seconds, transitions, violations.values(), unseen, coverage, None,
                             self.model.properties())
        if snap is None:
            self._start_at = (0, len(init), 0, Counter())

        clean = False
        self._abandoned = False
        try:
            self._inherited = max(resident_bytes() - shared_bytes(), 0)
            self._initial_keys = [array("q", sorted(e[0] for e in init)).tobytes()]
            self._start_workers(init)
            result = self._search(start, init, unseen)
            clean = not self._abandoned
            if self.graph is not None and clean and result.limit_hit is None and not result.violations:
                self.graph.assemble(init, self._ask_all(("graph",)), LEVEL_SHIFT, ACTION_BITS, _RANK_MASK)
            return result
        finally:
            self._watch = None
            self._stop_workers(clean)
            self.table_bytes = self._table.nbytes
            self.coordinator_shared_kib = shmem_bytes() // 1024
            self._table = None  # unmapped once the workers are gone

    # ------------------------------------------------------------------ snapshots
    def _single(self) -> CheckResult:
        """The single-process search with this one's settings (one worker, no fork, every violation
        wanted, or a snapshot only it can go on from)."""
        return Checker(self.model, max_depth=self.max_depth, max_states=self.max_states,
                       stop_on_first=self.stop_on_first, progress=self.progress, progress_every=self.progress_every,
                       max_memory=self.max_memory, graph=self.graph, checkpoint=self.checkpoint).run()

    def _snapshot(self) -> Snapshot | None:
        """Ready the checkpoint directory, as :class:`Checker` does (the same identity: a snapshot
        says nothing of the workers), and the snapshot to resume from, if any."""
        ck = self.checkpoint
        if ck is None:
            return None
        if self.graph is not None:
            raise SnapshotError("a search that records the liveness graph cannot be checkpointed")
        prepare_search(ck, self.model, {"stop_on_first": self.stop_on_first, "max_depth": self.max_depth,
                                        "max_states": self.max_states})
        return ck.load() if ck.resume else None

    def _restore(self, snap: Snapshot, table: Any, unseen: set[str]) -> list[tuple[int, int, Any]]:
        """Put a snapshot's visited states in the table (key 0: never won again) and answer its
        frontier as the workers' first level: in the snapshot's order, which is the key order, with
        keys that keep it (ranks are positions in that order, all a key of a held state is for)."""
        codec = self.model.state_codec  # type: ignore[attr-defined]
        where = self.checkpoint.path if self.checkpoint is not None else ""
        absorb_pairs(table, snap.pairs)
        level = snap.depth + 1
        if level + 1 >= MAX_LEVELS or len(snap.frontier) > _RANK_MASK:
            raise SnapshotError(f"the snapshot {where} is past what the parallel checker explores: "
                                "resume it with one worker")
        base = level << LEVEL_SHIFT
        fingerprint = self.model.fingerprint
        init: list[tuple[int, int, Any]] = []
        for i, raw in enumerate(snap.frontier):
            try:
                state = codec.decode(raw)
            except Exception as e:  # the codec's CodecError, or anything a damaged byte string raises
                raise SnapshotError(f"the snapshot {where} is damaged (a frontier state does not decode: {e})") from None
            fp = fingerprint(state)
            if table.entry(fp) is None:
                raise SnapshotError(f"the snapshot {where} is damaged (a frontier state is not in its parent map)")
            init.append((base | i << ACTION_BITS, fp, state))
        unseen.intersection_update(snap.unseen)
        self._start_at = (level, snap.states, snap.transitions, Counter(snap.counts))
        return init

    def _save(self, ck: Checkpoints, level: int, total: int, transitions: int, coverage: Counter[str],
              unseen: set[str], seconds: float) -> None:
        """Write a snapshot before ``level`` is expanded, as :class:`Checker` writes one at the same
        boundary: the parent map (the table's pairs) and the level's states in key order, which is
        the single process's queue order (each worker's part comes across once, encoded)."""
        began = time.monotonic()
        parts = self._ask_all(("frontier",))
        runs = []
        for keys_bytes, encoded in parts:
            keys = array("q")
            keys.frombytes(keys_bytes)
            runs.append(zip(keys, encoded))
        frontier = (raw for _, raw in heapq.merge(*runs, key=_first))
        snap = Snapshot(identity=ck.identity, depth=level - 1, transitions=transitions, counts=dict(coverage),
                        unseen=sorted(unseen), violations=[], limit_hit=None, seconds=seconds, states=total,
                        pairs=pairs_of(self._table))
        ck.write(snap, frontier, _as_is)
        ck.write_seconds += ck.last - began - ck.last_write  # the workers' part and the pairs count too
        ck.last_write = ck.last - began

    # ------------------------------------------------------------------ the search
    def _search(self, start: float, init: list, unseen: set[str]) -> CheckResult:
        depth, total, transitions, coverage = self._start_at
        frontier = len(init)
        violations: dict[str, Violation] = {}
        limit_hit: str | None = None
        last_report = start
        self._watch = WATCH_SECONDS if self.max_memory is not None else None
        self._figures = (total, depth, frontier, transitions)
        try:
            self._check_memory()
            total, depth, frontier, limit_hit = self._levels(start, unseen, total, frontier, coverage, violations,
                                                             last_report)
            transitions = self._transitions
        except MemoryCeilingHit:
            # the level in progress is abandoned: the figures are those of the last complete one
            self._abandoned = True
            limit_hit = "memory"
            total, depth, frontier, transitions = self._figures
        seconds = time.perf_counter() - start
        if self.progress is not None:
            self.progress(Progress(total, depth, frontier, seconds))
        return result_of(total, depth, seconds, transitions, violations.values(), unseen, coverage, limit_hit,
                         self.model.properties())

    def _check_memory(self) -> None:
        """Raise :class:`MemoryCeilingHit` when the coordinator and its workers are past the ceiling."""
        if self.max_memory is None:
            return
        # the table is shared memory: each process that touched it counts it; count it once
        used = max(resident_bytes() - shared_bytes(), 0) + self._table.nbytes
        for p in self._procs:
            used += max(resident_bytes(p.pid) - shared_bytes(p.pid) - self._inherited, 0)
        if used > self.max_memory:
            raise MemoryCeilingHit(f"{used} bytes resident, more than {self.max_memory}")

    def _levels(self, start: float, unseen: set[str], total: int, frontier: int, coverage: Counter[str],
                violations: dict[str, Violation], last_report: float) -> tuple[int, int, int, str | None]:
        """The level loop of :meth:`_search`: ``(total, depth, frontier, limit_hit)``; the
        transitions are left in ``_transitions``, and after each complete level ``_figures``
        holds what a search cut short there reports. A snapshot is written, when one is due,
        before a level is expanded (a consistent cut: the table holds every state found, the
        workers the level's)."""
        level, _, transitions, _ = self._start_at
        depth = level
        resumed_at = level if level else None
        limit_hit: str | None = None
        self._figures = (total, depth, frontier, transitions)
        level_keys = self._initial_keys
        while frontier:
            depth = level
            ck = self.checkpoint
            if ck is not None and level > 0 and level != resumed_at and ck.due():
                self._save(ck, level, total, transitions, coverage, unseen, time.perf_counter() - start)
            if self.max_depth is not None and level >= self.max_depth:
                limit_hit = "depth"
                break
            if level + 1 >= MAX_LEVELS:
                raise RuntimeError(f"the parallel checker explores at most {MAX_LEVELS - 1} levels; "
                                   "run a deeper search with one worker")
            reports = self._ask_all(("expand", level, level_keys, sorted(unseen)))
            settled = self._ask_all(("settle",))
            between = time.perf_counter()
            self.stats["expand_s"] += sum(r["clock"] for r in reports)
            self.stats["settle_s"] += sum(r["clock"] for r in settled)
            # the slowest worker's: the level's length (their difference is time a worker waited)
            self.stats["expand_slowest_s"] += max(r["clock"] for r in reports)
            self.stats["settle_slowest_s"] += max(r["clock"] for r in settled)
            # the new states' keys: one sorted run per worker (merged only to find a k-th)
            runs: list[bytes] = [r["new_keys"] for r in settled]
            new = sum(len(b) for b in runs) // 8
            found = [v for r in reports + settled for v in r["violations"]]
            stop = min((v[0] for v in found), default=None)  # the first violating event
            if self.max_states is not None and new and total + new >= self.max_states:
                k = max(self.max_states - total, 1)  # Checker stops on the k-th new state
                merged = array("q")
                for b in runs:
                    merged.frombytes(b)
                kth = sorted(merged)[k - 1]
                if stop is None or kth < stop:
                    stop, limit_hit = kth, "states"
            if stop is None:
                total += new
                frontier = new
                level += 1
                level_keys = runs
                for r in reports:
                    transitions += r["transitions"]
                    coverage.update(r["coverage"])
                for r in settled:
                    for name in r["witnessed"]:
                        unseen.discard(name)
                self._figures = (total, level, frontier, transitions)
                table = self._table
                if len(table) * 8 > table.capacity * 5:  # grown between levels, when nobody claims
                    table.grow()
                plan = _balance_plan([r["held"] for r in settled])
                if plan:
                    balancing = time.perf_counter()
                    self.stats["moved_states"] += sum(self._ask_all(("balance", plan)))
                    balanced: Any = time.perf_counter() - balancing  # the stats hold seconds too
                    self.stats["balance_s"] += balanced
                if self.progress is not None:
                    now = time.perf_counter()
                    if now - last_report >= self.progress_every:
                        last_report = now
                        self.progress(Progress(total, depth, frontier, now - start))
                self._check_memory()
                elapsed: Any = time.perf_counter() - between  # the stats hold seconds too
                self.stats["between_levels_s"] += elapsed
                continue
            self._watch = None  # the search ends with this level: let nothing cut it short now
            # Checker stops at the event ``stop``: count what it had seen by then
            for n_new, n_transitions, cov in self._ask_all(("cut", stop)):
                total += n_new
                transitions += n_transitions
                coverage.update(cov)
            for r in settled:
                for name, key in r["witnessed"].items():
                    if key <= stop:
                        unseen.discard(name)
            if limit_hit is None:
                for v in found:
                    if v[0] == stop:
                        self._record(v, violations)
            frontier = new
            break
        self._transitions = transitions
        return total, depth, frontier, limit_hit

    def _record(self, v: tuple, violations: dict[str, Violation]) -> None:
        _, kind, names, fp, action, state, message = v
        steps = replay_fingerprints(self.model, self._chain(fp))
        if kind == "fault":
            steps.append(Step(action, None))
        elif kind == "transition":
            steps.append(Step(action, state))
        for name in names:
            if name not in violations:
                prop_kind: Kind = "always" if kind == "always" else "transition"
                violations[name] = Violation(name, prop_kind, list(steps), message)

    def _chain(self, fp: int) -> list[int]:
        """The fingerprints from an initial state to ``fp``, from the parents in the table."""
        chain = [fp]
        while True:
            entry = self._table.entry(fp)
            if entry is None:
                raise RuntimeError(f"fingerprint {fp} is not in the parallel checker's table")
            _, parent = entry
            if parent == fp:  # an initial state (its own parent, also when restored from a snapshot)
                break
            chain.append(parent)
            fp = parent
        chain.reverse()
        return chain

    # ------------------------------------------------------------------ processes
    def _start_workers(self, init: list) -> None:
        ctx = mp.get_context("fork")
        n = self.workers
        ctrl = [ctx.Pipe(duplex=True) for _ in range(n)]
        pipes: dict[tuple[int, int], tuple[int, int]] = {}
        for i in range(n):
            for j in range(n):
                if i != j:
                    r, w = os.pipe()
                    _set_pipe_size(w)
                    os.set_blocking(r, False)
                    os.set_blocking(w, False)
                    pipes[i, j] = (r, w)
        all_fds = [fd for rw in pipes.values() for fd in rw]
        codec = getattr(self.model, "state_codec", None)
        self._conns = [parent_end for parent_end, _ in ctrl]
        self._procs = []
        try:
            for i in range(n):
                in_fds = {j: pipes[j, i][0] for j in range(n) if j != i}
                out_fds = {j: pipes[i, j][1] for j in range(n) if j != i}
                mine = set(in_fds.values()) | set(out_fds.values())
                close: list = [fd for fd in all_fds if fd not in mine]
                close += [c for k, (pe, ce) in enumerate(ctrl) for c in (pe, ce) if not (k == i and c is ce)]
                p = ctx.Process(target=_worker_main, name=f"isrcheck-worker-{i}", daemon=True,
                                args=(i, n, self.model, ctrl[i][1], self._table, close, in_fds, out_fds,
                                      init[i::n], codec,
                                      self.graph.properties if self.graph is not None else None))
                p.start()
                self._procs.append(p)
        finally:
            for fd in all_fds:
                os.close(fd)
            for _, child_end in ctrl:
                child_end.close()

    def _stop_workers(self, clean: bool) -> None:
        rss: list[int] = [0] * len(self._conns)
        shared: list[int] = [0] * len(self._conns)
        if clean:
            for c in self._conns:
                try:
                    c.send(("stop",))
                except OSError:
                    pass
            for i, c in enumerate(self._conns):
                try:
                    if c.poll(5):
                        msg = c.recv()
                        if msg[0] == "bye":
                            rss[i], shared[i] = msg[1], msg[2]
                except (OSError, EOFError):
                    pass
        for p in self._procs:
            if clean:
                p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
            if p.is_alive():  # pragma: no cover - ignored SIGTERM
                p.kill()
                p.join()
        for c in self._conns:
            c.close()
        self.worker_peak_rss_kib = rss
        self.worker_shared_kib = shared
        self._conns, self._procs = [], []

    def _ask_all(self, msg: tuple) -> list[Any]:
        replies = self._ask({i: msg for i in range(self.workers)})
        return [replies[i] for i in range(self.workers)]

    def _ask(self, msgs: dict[int, tuple]) -> dict[int, Any]:
        """Send each worker its message; wait for every reply, failing fast if one fails."""
        conns, procs = self._conns, self._procs
        for i, m in msgs.items():
            conns[i].send(m)
        waiting = {conns[i]: i for i in msgs}
        replies: dict[int, Any] = {}
        paused: set[int] = set()  # workers waiting for the table to grow

        def receive(i: int) -> None:
            try:
                msg = conns[i].recv()
            except EOFError:
                raise WorkerError(f"worker {i} exited unexpectedly (exit code {procs[i].exitcode})") from None
            if msg[0] == "grow":
                paused.add(i)
                waiting[conns[i]] = i
                return
            if msg[0] == "error":
                if isinstance(msg[1], _PeerGone):  # the news is the peer that died: name it
                    dead = wait([p.sentinel for j, p in enumerate(procs) if j != i], timeout=1)
                    for j, p in enumerate(procs):
                        if j != i and p.sentinel in dead:
                            p.join(1)
                            raise WorkerError(f"worker {j} exited unexpectedly (exit code {p.exitcode})")
                remote = WorkerError(f"worker {i} failed:\n{msg[2]}")
                if isinstance(msg[1], BaseException):
                    err: BaseException = msg[1]
                    err.__cause__ = remote  # spelled out: the compiled build drops `raise ... from ...`'s cause
                    raise err
                raise remote
            replies[i] = msg[1]

        while waiting:
            sentinels = {procs[i].sentinel: i for i in waiting.values()}
            ready = wait(list(waiting) + list(sentinels), timeout=self._watch)
            if not ready:  # only with a memory ceiling: read it while the workers work
                self._check_memory()
            for r in ready:
                if r in waiting:
                    receive(waiting.pop(r))
                elif sentinels[r] in replies or conns[sentinels[r]] not in waiting:
                    continue
                elif conns[sentinels[r]].poll():
                    receive(waiting.pop(conns[sentinels[r]]))
                else:
                    i = sentinels[r]
                    raise WorkerError(f"worker {i} exited unexpectedly (exit code {procs[i].exitcode})")
            if paused and len(paused) == len(waiting):
                # every worker still expanding has stopped claiming: nobody touches the table
                self._table.grow()
                self.stats["table_grows"] += 1
                for i in paused:
                    conns[i].send(("resume",))
                paused.clear()
        return replies


def _balance_plan(held: list[int]) -> list[tuple[int, int, int]]:
    """Moves ``(giver, receiver, count)`` that even out the frontier, if it is uneven enough:
    by more than 1/8 of the level. A moved state costs more than a held one (on the Kafka models
    the giver's encoding costs about half an expansion and the receiver's decoding about three),
    and the workers win about equal shares of each level anyway; tighter evening out (1/32,
    1/64) moved two to four times as many states and lost more time than it saved."""
    total, n = sum(held), len(held)
    if max(held) - min(held) <= max(BALANCE_SLACK, total // 8):
        return []
    target = [total // n + (1 if i < total % n else 0) for i in range(n)]
    givers = [[i, held[i] - target[i]] for i in range(n) if held[i] > target[i]]
    takers = [[i, target[i] - held[i]] for i in range(n) if held[i] < target[i]]
    plan = []
    while givers and takers:
        g, t = givers[-1], takers[-1]
        k = min(g[1], t[1])
        plan.append((g[0], t[0], k))
        g[1] -= k
        t[1] -= k
        if not g[1]:
            givers.pop()
        if not t[1]:
            takers.pop()
    return plan


def search(model: Model[S, A], *, workers: int = 1, max_depth: int | None = None, max_states: int | None = None,
           stop_on_first: bool = True, progress: Callable[[Progress], None] | None = None,
           max_memory: int | None = None, progress_every: float = 0.5,
           checkpoint: Checkpoints | None = None, graph: Any = None) -> CheckResult:
    """One exhaustive search: :class:`ParallelChecker` with several workers, else :class:`Checker`
    (also when every violation is wanted, which only the single process reports). Both write and
    resume the same snapshots (engine/checkpoint.py), so a run checkpointed with one worker count
    can be resumed with another.
    ``graph`` (a liveness :class:`~isrcheck.engine.liveness.GraphBuilder`) records the liveness
    graph: the single process tells it every state and step as it goes, the workers each keep their
    part, assembled once the search went through every state."""
    if workers > 1 and stop_on_first:
        return ParallelChecker(model, workers=workers, max_depth=max_depth, max_states=max_states,
                               progress=progress, progress_every=progress_every, max_memory=max_memory,
                               graph=graph, checkpoint=checkpoint).run()
    return Checker(model, max_depth=max_depth, max_states=max_states, stop_on_first=stop_on_first,
                   progress=progress, progress_every=progress_every, max_memory=max_memory,
                   checkpoint=checkpoint, graph=graph).run()


__all__ = ["ParallelChecker", "WorkerError", "ACTION_BITS", "search"]
