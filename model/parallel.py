"""Multi-process breadth-first search: the same search as :class:`~isrcheck.model.checker.Checker`
spread over long-lived worker processes.

Design (level-synchronous; fingerprint space partitioned; states stay where they are made):

* Worker ``fp % workers`` *owns* a fingerprint: it keeps the visited set and the parent map for
  its part of the fingerprint space.
* Each worker *holds* part of the BFS frontier (concrete states) and expands it. One level at a
  time: the worker checks ``transition`` properties and :class:`ModelFault` on its steps, keeps
  each successor it makes, and sends the owner a *claim* ``(fp, key, parent fp)``: three ints,
  in batches (pickle protocol 5) over dedicated worker-to-worker pipes.
* The owner settles every new fingerprint: the claim with the smallest key wins, the owner
  records the parent, and tells each worker which of its claims it won. The winners form the
  worker's part of the next frontier. A worker judges each successor it keeps (``always``
  properties, and ``sometimes`` ones still unwitnessed) when it makes it, while the state is in
  the processor's cache, and counts the judgements of the winners alone.
* So states do not travel: a state is sent (in the model's binary ``state_codec`` when it has
  one, else pickled) only when the coordinator evens out the frontier
  between workers (about 1-3 % of the states on the Kafka models; a giver picks states spread
  over its key range). The coordinator (the calling process) synchronises levels, sums counts,
  and builds counterexamples; it never sees a state but the initial ones and a counterexample's.
* Processes are forked (``fork`` start method), so the model object is never pickled.

Equivalence with the single-process checker. Every state carries a *discovery key*: the path of
action indices that first reaches it in the single-process BFS order, packed in an int
(``key(t) = key(parent) << 16 | action index``; a level's keys all have the same length, so
comparing ints compares paths lexicographically). For each new state the smallest key among the
events that reach it decides the parent and the concrete state kept: exactly the first
discovery of :class:`Checker`, which keeps the first parent and the first concrete state (the
representative, under symmetry reduction). So the expanded states, the parent map, and the
counterexamples are those of the single-process checker: shortest, deterministic, identical
trace for trace. Where :class:`Checker` stops in the middle of a level (first violation,
``max_states``), the coordinator finds the stopping event (the smallest violating key, or the key
of the ``max_states``-th state) and asks each worker for its figures up to that event, so
``distinct_states``, ``depth``, ``transitions``, ``coverage``, the outcome and the unwitnessed
properties are the same as well.
"""
from __future__ import annotations

import gc
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
from heapq import merge
from itertools import islice
from multiprocessing.connection import Connection, wait
from typing import Any, Generic

from .frames import END_FRAME, HDR, PeerGone as _PeerGone, WorkerError
from .frames import frame as _frame
from .checker import Checker
from .engine import A, Checks, CheckResult, Kind, Model, ModelFault, Progress, S, Search, Step, Violation, action_name, result_of
from .explore import replay_fingerprints
from .memory import WATCH_SECONDS, MemoryCeilingHit, resident_bytes

ACTION_BITS = 16  # bits of a discovery key per BFS level: at most 65536 enabled actions per state
_ACTION_MASK = (1 << ACTION_BITS) - 1
BATCH = 256  # states per message when moving states between workers
BALANCE_SLACK = 16  # frontier sizes may differ by this much (or 1/64 of the level) before states move
CLAIM_BATCH = 2048  # claims (fingerprint, key, parent) per message to an owner
PIPE_SIZE = 1 << 20  # bytes; asked of the kernel for worker-to-worker pipes (Linux F_SETPIPE_SZ)

_HDR = HDR
_END_FRAME = END_FRAME


# where workers spend a level (ParallelChecker.stats: seconds summed over workers and levels)
_PHASES = ("expand_s", "claims_wait_s", "verdict_s", "verdict_wait_s", "check_s")


# --------------------------------------------------------------------------- wire format
# Frames between the forked workers: see frames.py (kept out of the compiled modules).


def _set_pipe_size(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
    except (OSError, ImportError):  # pragma: no cover - not Linux, or over the user's pipe quota
        pass


class _Mesh:
    """Framed, non-blocking pipes from this worker to every other one, in phases.

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

    def poll(self) -> None:
        """Write what the pipes accept, read and handle what has arrived; never blocks."""
        for fd, q in self.pending.items():
            if q:
                self._flush(fd)
        ready, _, _ = select.select(self.in_fds, [], [], 0)
        for fd in ready:
            self._read(fd)

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
    """One process: owner of the fingerprints ``fp % n == me`` (visited set, parent map) and
    holder of part of the frontier (the states it expands)."""

    def __init__(self, me: int, nworkers: int, model: Model, ctrl: Connection,
                 in_fds: dict[int, int], out_fds: dict[int, int],
                 init: list[tuple[int, int, Any]], codec: Any = None) -> None:
        self.me = me
        self.n = nworkers
        self.model = model
        self.ctrl = ctrl
        self.checks = Checks.of(model)
        self.parents: dict[int, int | None] = {fp: None for _, fp, _ in init}
        self.frontier: list[tuple[int, int, Any]] = sorted(init, key=lambda e: e[0])
        self.sent: set[int] = set()  # fingerprints this worker has claimed from another owner
        # new fingerprints owned here -> (key, parent fp, claimant, state if the claimant is me)
        self.claims: dict[int, tuple[int, int, int, Any]] = {}
        self.mesh = _Mesh(in_fds, out_fds)
        # a model's binary state codec (optional: ``state_codec``) carries the states that move
        # between workers; without one they are pickled. Built once before the fork (building it
        # reads the state's type hints: about 40 ms that every worker would repeat).
        self.codec: Any = codec
        # figures of the last level, to cut it at a stopping event
        self.level_keys: list[int] = []
        self.level_starts: list[int] = []
        self.level_actions: list[Any] = []
        self.new_keys: list[int] = []

    # -- main loop
    def serve(self) -> None:
        handlers: dict[str, Callable[..., Any]] = {
            "expand": self._expand,
            "balance": self._balance,
            "keys": lambda: self.new_keys,
            "cut": self._cut,
            "parent": lambda fp: self.parents[fp],
        }
        while True:
            msg = self.ctrl.recv()
            if msg[0] == "stop":
                self.ctrl.send(("bye", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
                return
            self.ctrl.send(("ok", handlers[msg[0]](*msg[1:])))

    def _absorb_claims(self, batch: list[int], peer: int) -> None:
        parents, claims = self.parents, self.claims
        it = iter(batch)
        for tfp, ek, pfp in zip(it, it, it):
            if tfp in parents:
                continue
            c = claims.get(tfp)
            if c is None or ek < c[0]:
                claims[tfp] = (ek, pfp, peer, None)

    def _expand(self, unseen: list[str]) -> dict[str, Any]:
        """Expand the held frontier; settle with the owners who holds each new state; check
        the new states held here."""
        model = self.model
        actions, next_state, fingerprint = model.actions, model.next_state, model.fingerprint
        legal, broken_transition = self.checks.legal, self.checks.broken_transition
        nw, me = self.n, self.me
        parents, sent, mesh = self.parents, self.sent, self.mesh
        claims: dict[int, tuple[int, int, int, Any]] = {}
        self.claims = claims
        held: dict[int, tuple[int, int, Any]] = {}  # successors made here, owned elsewhere
        keys: list[int] = []
        starts: list[int] = []
        taken: list[str] = []  # names of the actions taken, in event order (for coverage)
        bufs: list[list[int]] = [[] for _ in range(nw)]  # claims to send: fp, key, parent fp, ...
        claims_sent = 0
        viol: tuple | None = None  # first violating event of this worker, in key order
        # Each new candidate is judged (always properties, and sometimes properties still
        # unwitnessed) when it is made, while it is in the cache: judged after the verdicts, the
        # held states were cold again and the judging cost twice as much. Only the judgements of
        # the states this worker ends up holding count (after the verdicts, below).
        safe, witnesses = self.checks.safe, self.checks.witnessed
        pending = set(unseen)
        unsafe: set[int] = set()  # candidates made here that break an always property
        witnessing: dict[int, list[str]] = {}  # candidates made here -> what they witness
        clock = [time.perf_counter()]
        mesh.begin(self._absorb_claims)
        # taken from the end, so each state is released right after its expansion (hot), not
        # with the whole level when the next frontier replaces it
        expanding = self.frontier
        expanding.reverse()
        self.frontier = []
        count = -1
        while expanding:
            key, fp, s = expanding.pop()
            count += 1
            keys.append(key)
            starts.append(len(taken))
            base = key << ACTION_BITS
            acts = list(actions(s))
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
                owner = tfp % nw
                kept = False  # whether this worker keeps t (then it judges it, below)
                if owner == me:
                    # events come in key order: a later one never beats this worker's own claim
                    if tfp not in parents:
                        ek = base | i
                        c = claims.get(tfp)
                        if c is None or ek < c[0]:
                            # the first state this worker keeps for tfp: a later event of its
                            # own has a larger key
                            claims[tfp] = (ek, fp, me, t)
                            kept = True
                elif tfp not in sent:
                    # the first event to reach tfp here is this worker's smallest key for it; a
                    # fingerprint claimed in an earlier level is visited by now
                    sent.add(tfp)
                    ek = base | i
                    held[tfp] = (ek, fp, t)
                    kept = True
                    buf = bufs[owner]
                    buf += (tfp, ek, fp)
                    if len(buf) >= 3 * CLAIM_BATCH:
                        mesh.send(owner, _frame(buf))
                        claims_sent += CLAIM_BATCH
                        bufs[owner] = []
                        mesh.poll()
                if kept:
                    if not safe(t):
                        unsafe.add(tfp)
                    if pending:
                        seen_names = witnesses(t, pending)
                        if seen_names:
                            witnessing[tfp] = seen_names
                if viol is not None:
                    break
            else:
                if len(acts) > _ACTION_MASK + 1:
                    raise RuntimeError(f"a state has {len(acts)} enabled actions; the parallel "
                                       f"checker supports at most {_ACTION_MASK + 1}")
                if count & 63 == 63:
                    mesh.poll()
                continue
            break  # a violation: nothing after it in key order can matter
        clock.append(time.perf_counter())
        for owner, buf in enumerate(bufs):
            if buf:
                mesh.send(owner, _frame(buf))
                claims_sent += len(buf) // 3
        mesh.finish()
        clock.append(time.perf_counter())
        self.level_keys, self.level_starts, self.level_actions = keys, starts, taken

        # verdicts: the new states owned here, their parents, and who holds each of them
        won: list[int] = []
        mesh.begin(lambda batch, peer: won.extend(batch))
        wins: list[list[int]] = [[] for _ in range(nw)]
        new_keys = []
        frontier = []
        for tfp, (ek, pfp, who, t) in claims.items():
            parents[tfp] = pfp
            new_keys.append(ek)
            if who == me:
                frontier.append((ek, tfp, t))
            else:
                wins[who].append(tfp)
        self.claims = {}
        new_keys.sort()
        self.new_keys = new_keys
        for peer, lst in enumerate(wins):
            if peer != me and lst:
                mesh.send(peer, _frame(lst))
        clock.append(time.perf_counter())
        mesh.finish()
        clock.append(time.perf_counter())
        for tfp in won:
            ek, _, t = held[tfp]
            frontier.append((ek, tfp, t))
        del held
        frontier.sort()
        self.frontier = frontier
        _settle_gc()

        # the judgements of the new states held here, in discovery order: the first state that
        # breaks an always property, and the first to witness each sometimes property
        witnessed: dict[str, int] = {}
        first_bad: tuple | None = None
        if unsafe or witnessing:
            for ek, tfp, t in frontier:
                names = witnessing.get(tfp)
                if names is not None:
                    for name in names:
                        if name not in witnessed:
                            witnessed[name] = ek
                if tfp in unsafe:
                    first_bad = (ek, "always", self.checks.broken_always(t), tfp, None, None, "")
                    break  # nothing after it in key order can matter
        return {
            "new": len(new_keys),
            "held": len(frontier),
            "violations": [v for v in (viol, first_bad) if v is not None],
            "witnessed": witnessed,
            "transitions": len(taken),
            "coverage": _coverage(taken) if viol is None else None,
            "claims_sent": claims_sent,
            "clock": [b - a for a, b in zip(clock, clock[1:] + [time.perf_counter()])],
        }

    def _balance(self, plan: list[tuple[int, int, int]]) -> int:
        """Move states between holders: ``(giver, receiver, count)``. A giver picks states
        spread evenly over its frontier, so that every holder keeps a share of every key range
        (the smallest key wins a state reached from two holders)."""
        received: list[tuple[int, int, Any]] = []
        codec = self.codec
        if codec is None:
            self.mesh.begin(lambda batch, peer: received.extend(batch))
        else:
            self.mesh.begin(lambda batch, peer: received.extend((k, fp, codec.decode(b)) for k, fp, b in batch))
        frontier = self.frontier
        for giver, receiver, count in plan:
            if giver != self.me or count <= 0:
                continue
            step = len(frontier) / count
            picks = {int(j * step) for j in range(count)}
            give = [e for j, e in enumerate(frontier) if j in picks]
            frontier = [e for j, e in enumerate(frontier) if j not in picks]
            if codec is not None:
                give = [(k, fp, codec.encode(s)) for k, fp, s in give]
            for j in range(0, len(give), BATCH):
                self.mesh.send(receiver, _frame(give[j:j + BATCH]))
        self.mesh.finish()
        if received:
            frontier += received
            frontier.sort()
        self.frontier = frontier
        return len(received)

    def _cut(self, stop: int) -> tuple[int, int, dict[str, int]]:
        """Figures of the last level up to and including the event ``stop``."""
        new = bisect_right(self.new_keys, stop)
        sk, sa = stop >> ACTION_BITS, stop & _ACTION_MASK
        keys, starts, taken = self.level_keys, self.level_starts, self.level_actions
        pos = bisect_left(keys, sk)
        if pos == len(keys):
            upto = len(taken)
        elif keys[pos] != sk:
            upto = starts[pos]
        else:
            # The stopping state is ours. Every event this worker produced was a transition
            # except possibly its very last one (a ModelFault ends the expansion), and that
            # one is at or after the stopping event: so the state's transitions up to event
            # ``sa`` are its first ``sa + 1`` taken actions, or all of them if fewer.
            end = starts[pos + 1] if pos + 1 < len(starts) else len(taken)
            upto = starts[pos] + min(sa + 1, end - starts[pos])
        return new, upto, _coverage(islice(taken, upto))


def _coverage(taken: Any) -> dict[str, int]:
    return dict(Counter(taken))


def _settle_gc() -> None:
    """Once a level: move what survives into the permanent generation. The cyclic garbage
    collector never untracks namedtuples (only exact tuples), so otherwise every full collection
    walks every live state of the frontier again; states are acyclic and are still freed by
    reference counting."""
    gc.freeze()


def _worker_main(me: int, nworkers: int, model: Model, ctrl: Connection, close: list,
                 in_fds: dict[int, int], out_fds: dict[int, int], init: list, codec: Any = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator handles ^C and stops us
    for c in close:
        try:
            c.close() if isinstance(c, Connection) else os.close(c)
        except OSError:
            pass
    gc.freeze()  # what the fork inherited never needs a collection
    gc.disable()  # states are acyclic and freed by reference counting (see checker.paused_gc)
    try:
        _Worker(me, nworkers, model, ctrl, in_fds, out_fds, init, codec).serve()
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
    After :meth:`run`, ``worker_peak_rss_kib`` holds each worker's peak resident set (KiB).

    ``max_memory`` bounds the coordinator's resident memory plus what each worker added to its
    own since the fork (what it inherited is shared with the coordinator, counted once): read at
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
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        super().__init__(max_depth, max_states, stop_on_first, progress, progress_every, max_memory)
        self.model = model
        self.workers = workers
        self.worker_peak_rss_kib: list[int] = []
        # per run: claims_sent and moved_states (what crossed between workers), and the seconds
        # the workers spent in each phase of a level (see _PHASES), summed over workers and levels
        self.stats: Counter[str] = Counter()
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._watch: float | None = None  # seconds between memory readings while waiting (None: none)
        self._inherited = 0  # the coordinator's resident bytes when it forked the workers
        self._abandoned = False  # a level was cut short (memory): the workers are mid-level
        self._figures: tuple[int, int, int, int] = (0, 0, 0, 0)  # total, depth, frontier, transitions
        self._transitions = 0

    # ------------------------------------------------------------------ entry point
    def run(self) -> CheckResult:
        if self.workers == 1 or not self.stop_on_first or "fork" not in mp.get_all_start_methods():
            return Checker(self.model, max_depth=self.max_depth, max_states=self.max_states,
                           stop_on_first=self.stop_on_first, progress=self.progress,
                           progress_every=self.progress_every, max_memory=self.max_memory).run()
        start = time.perf_counter()
        self.stats = Counter()
        model = self.model
        checks = Checks.of(model)
        unseen = set(checks.sometimes_names())
        fingerprint = model.fingerprint
        violations: dict[str, Violation] = {}

        init: list[tuple[int, int, Any]] = []  # (discovery key, fingerprint, state)
        seen: set[int] = set()
        for index, s in enumerate(model.init_states()):
            fp = fingerprint(s)
            if fp in seen:
                continue
            seen.add(fp)
            for name in checks.broken_always(s):
                if name not in violations:
                    violations[name] = Violation(name, "always", replay_fingerprints(model, [fp]), "")
            unseen.difference_update(checks.witnessed(s, unseen))
            init.append((index, fp, s))
        if violations or not init:
            seconds = time.perf_counter() - start
            if self.progress is not None:
                self.progress(Progress(len(init), 0, len(init), seconds))
            return result_of(len(init), 0, seconds, 0, violations.values(), unseen, Counter(), None)

        clean = False
        self._abandoned = False
        try:
            self._inherited = resident_bytes()
            self._start_workers(init)
            result = self._search(start, init, unseen)
            clean = not self._abandoned
            return result
        finally:
            self._watch = None
            self._stop_workers(clean)

    # ------------------------------------------------------------------ the search
    def _search(self, start: float, init: list, unseen: set[str]) -> CheckResult:
        total = frontier = len(init)
        depth = transitions = 0
        coverage: Counter[str] = Counter()
        violations: dict[str, Violation] = {}
        limit_hit: str | None = None
        last_report = start
        self._watch = WATCH_SECONDS if self.max_memory is not None else None
        self._figures = (total, depth, frontier, transitions)
        try:
            self._check_memory()
            total, depth, frontier, limit_hit = self._levels(start, unseen, total, coverage, violations, last_report)
            transitions = self._transitions
        except MemoryCeilingHit:
            # the level in progress is abandoned: the figures are those of the last complete one
            self._abandoned = True
            limit_hit = "memory"
            total, depth, frontier, transitions = self._figures
        seconds = time.perf_counter() - start
        if self.progress is not None:
            self.progress(Progress(total, depth, frontier, seconds))
        return result_of(total, depth, seconds, transitions, violations.values(), unseen, coverage, limit_hit)

    def _check_memory(self) -> None:
        """Raise :class:`MemoryCeilingHit` when the coordinator and its workers are past the ceiling."""
        if self.max_memory is None:
            return
        used = resident_bytes()
        for p in self._procs:
            used += max(resident_bytes(p.pid) - self._inherited, 0)
        if used > self.max_memory:
            raise MemoryCeilingHit(f"{used} bytes resident, more than {self.max_memory}")

    def _levels(self, start: float, unseen: set[str], total: int, coverage: Counter[str],
                violations: dict[str, Violation], last_report: float) -> tuple[int, int, int, str | None]:
        """The level loop of :meth:`_search`: ``(total, depth, frontier, limit_hit)``; the
        transitions are left in ``_transitions``, and after each complete level ``_figures``
        holds what a search cut short there reports."""
        frontier = total
        level = depth = transitions = 0
        limit_hit: str | None = None
        self._figures = (total, depth, frontier, transitions)
        while frontier:
            depth = level
            if self.max_depth is not None and level >= self.max_depth:
                limit_hit = "depth"
                break
            reports = self._ask_all(("expand", sorted(unseen)))
            for r in reports:
                self.stats["claims_sent"] += r["claims_sent"]
                for phase, secs in zip(_PHASES, r["clock"]):
                    self.stats[phase] += secs
            new = sum(r["new"] for r in reports)
            found = [v for r in reports for v in r["violations"]]
            stop = min((v[0] for v in found), default=None)  # the first violating event
            if self.max_states is not None and new and total + new >= self.max_states:
                k = max(self.max_states - total, 1)  # Checker stops on the k-th new state
                kth = next(islice(merge(*self._ask_all(("keys",))), k - 1, None))
                if stop is None or kth < stop:
                    stop, limit_hit = kth, "states"
            if stop is None:
                total += new
                frontier = new
                level += 1
                for r in reports:
                    transitions += r["transitions"]
                    coverage.update(r["coverage"])
                    for name in r["witnessed"]:
                        unseen.discard(name)
                self._figures = (total, level, frontier, transitions)
                plan = _balance_plan([r["held"] for r in reports])
                if plan:
                    self.stats["moved_states"] += sum(self._ask_all(("balance", plan)))
                if self.progress is not None:
                    now = time.perf_counter()
                    if now - last_report >= self.progress_every:
                        last_report = now
                        self.progress(Progress(total, depth, frontier, now - start))
                self._check_memory()
                continue
            self._watch = None  # the search ends with this level: let nothing cut it short now
            # Checker stops at the event ``stop``: count what it had seen by then
            for n_new, n_transitions, cov in self._ask_all(("cut", stop)):
                total += n_new
                transitions += n_transitions
                coverage.update(cov)
            for r in reports:
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
        """The fingerprints from an initial state to ``fp``, from the owners' parent maps."""
        chain = [fp]
        n = self.workers
        while True:
            parent = self._ask({fp % n: ("parent", fp)})[fp % n]
            if parent is None:
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
                owned = [e for e in init if e[1] % n == i]
                p = ctx.Process(target=_worker_main, name=f"isrcheck-worker-{i}", daemon=True,
                                args=(i, n, self.model, ctrl[i][1], close, in_fds, out_fds, owned, codec))
                p.start()
                self._procs.append(p)
        finally:
            for fd in all_fds:
                os.close(fd)
            for _, child_end in ctrl:
                child_end.close()

    def _stop_workers(self, clean: bool) -> None:
        rss: list[int] = [0] * len(self._conns)
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
                            rss[i] = msg[1]
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

        def receive(i: int) -> None:
            try:
                msg = conns[i].recv()
            except EOFError:
                raise WorkerError(f"worker {i} exited unexpectedly (exit code {procs[i].exitcode})") from None
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
        return replies


def _balance_plan(held: list[int]) -> list[tuple[int, int, int]]:
    """Moves ``(giver, receiver, count)`` that even out the frontier, if it is uneven enough."""
    total, n = sum(held), len(held)
    if max(held) - min(held) <= max(BALANCE_SLACK, total // 64):
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
           max_memory: int | None = None, progress_every: float = 0.5) -> CheckResult:
    """One exhaustive search: :class:`ParallelChecker` with several workers, else :class:`Checker`
    (also when every violation is wanted, which only the single process reports)."""
    if workers > 1 and stop_on_first:
        return ParallelChecker(model, workers=workers, max_depth=max_depth, max_states=max_states,
                               progress=progress, progress_every=progress_every, max_memory=max_memory).run()
    return Checker(model, max_depth=max_depth, max_states=max_states, stop_on_first=stop_on_first,
                   progress=progress, progress_every=progress_every, max_memory=max_memory).run()


__all__ = ["ParallelChecker", "WorkerError", "ACTION_BITS", "search"]
