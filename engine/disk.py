"""The single-process breadth-first search with its seen set, its frontier and its parent pointers
on disk (TLC's way), for state spaces whose fingerprints do not fit in memory.

:class:`DiskChecker` gives the result :class:`~isrcheck.engine.checker.Checker` gives, field for
field: distinct states, transitions, depth, coverage, outcome, limit, the unwitnessed properties
and the violations with their (shortest) counterexample traces, also where a violation,
``max_states`` or ``max_depth`` stops the search in the middle of a level. Why it is exact is
specs/07-checker.md ("On disk"); in short:

* **Levels.** The search goes level by level. The states of level ``d`` are read back, in the
  order :class:`Checker` would pop them from its queue, from the level's file (each state in the
  model's validating binary ``state_codec``, never pickled; the first :data:`BUFFER` states of a
  level stay in memory as they are, as TLC's queue buffers before it spills). In memory are the
  fingerprints of levels ``d-1`` and ``d`` and of the next level's *candidates*, three flat
  sets (engine/_fpset.c's, 11-21 bytes a fingerprint, where a Python set costs about 80; a
  dict in the pure build) rotated at each level's end; every older level lives in ``seen.i64``,
  one sorted file of little-endian signed 64-bit fingerprints.
* **Candidates.** A successor whose fingerprint is in none of those sets is a candidate: its
  fingerprint, its parent's, the position of its step in the level (every enabled action of every
  state in order counts one) and its encoding are written down, and ``always`` and ``sometimes``
  properties are judged on it there and then. At the end of the level the candidates' fingerprints
  are sorted and merged against ``seen.i64`` block by block (never a whole-file load), which says
  which of them are really new; the seen file is rewritten as the merge with level ``d-1``.
  A candidate that turns out old was judged for nothing but harmlessly: an old state was judged
  when it was new, so it can break no property that is not recorded yet, nor witness one that is
  still unwitnessed (and under ``stop_on_first`` no violation had been found before this level).
* **The stop.** :class:`Checker` stops at the first of: a faulting step, a step breaking a
  ``transition`` property, a new state breaking an ``always`` property (each seen at generation
  time, where this search stops too), and the new state that makes ``max_states`` (known once the
  level's candidates are resolved: its position is the ``k``-th really new candidate's). What lies
  after the stop's position is dropped: its candidates, witnesses and violations; the transitions
  and coverage of a level cut before its last generated step are recounted by re-reading the level
  up to the stop (only ``actions``, once, at the end; the positions of faulting steps were noted).
* **Parents.** Each level's new states keep ``(fingerprint, parent)`` in two files sorted by
  fingerprint (``LNNNNN.fps``, ``LNNNNN.parents``): a counterexample's chain costs one binary
  search per level, and is replayed from an initial state as :class:`Checker` replays its own.

* **Snapshots** (``checkpoint``). Before a level's expansion the search is a consistent cut; a
  snapshot keeps it by hard-linking the seen file and the level's states file (both would otherwise
  be replaced or deleted as the search goes on), writing where the level's on-file states are, and
  then writing engine/checkpoint.py's snapshot with a ``disk`` table and no parent map (the level
  files are it). :meth:`DiskChecker._reopen` and :meth:`DiskChecker._restore` put the directory and
  the window back as they were, checked against the snapshot (specs/07-checker.md, "On disk").

Files of the directory: ``isrcheck-disk.json`` (the marker that makes it a disk run's directory,
which a later run may clear), ``seen.i64``, and per level ``LNNNNN.states`` (the candidates'
encodings, in generation order), ``LNNNNN.fps`` and ``LNNNNN.parents``; with snapshots,
``seen.LNNNNN.snap``, ``LNNNNN.snap`` and ``LNNNNN.front``. Level state files are
deleted as soon as the search is past them; everything is removed at the end unless ``keep``.

numpy is needed (imported when a search starts): :class:`DiskError` says so when it is missing.
Interpreted on purpose (not in ``isrcheck.native.COMPILED_MODULES``): its loop is the checker's,
plus a write per candidate.
"""
from __future__ import annotations

import gc
import json
import mmap
import os
import re
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic

from .checkpoint import FILE_NAME, Checkpoints, Snapshot, SnapshotError
from .core import (A, Checks, CheckResult, Kind, Model, ModelFault, Progress, S, Step, Violation,
                   action_name, paused_gc, result_of)
from .explore import replay_fingerprints
from .memory import CHECK_EVERY, resident_bytes
from .parentmap import new_fingerprint_set

__all__ = ["DiskChecker", "DiskError", "MARKER", "check_directory", "prepare_directory"]

#: The file that makes a directory a disk run's: a later run may clear what it finds there.
MARKER = "isrcheck-disk.json"
FORMAT = 1
#: The names of the files a run writes (beside the marker): only these are ever deleted.
_OURS = re.compile(r"^(seen\.i64|seen\.tmp|seen\.L\d{5,}\.snap|L\d{5,}\.(states|fps|parents|snap|front))$")
#: A checkpoint directory may be the disk directory itself: its snapshot files are not the run's.
_SNAPSHOT_FILES = (FILE_NAME, FILE_NAME + ".tmp")
#: Fingerprints read per block while merging the seen file (8 MiB).
BLOCK = 1 << 20
#: States of a level decoded per chunk of index arrays.
CHUNK = 1 << 15
#: The first states of each level kept in memory as they are (not encoded, not decoded: the pure
#: build's codec costs several times a state's expansion), as TLC's queue keeps a buffer before it
#: spills; with the level being read, at most twice this many states are held at once.
BUFFER = 1 << 15


class DiskError(Exception):
    """A directory (or an environment) a disk search cannot use; one sentence."""


def check_directory(directory: str | os.PathLike[str]) -> None:
    """Refuse (:class:`DiskError`, one sentence) a ``directory`` a run may not use: not a
    directory, or not empty and not a previous disk run's (a user's files are never deleted).
    Nothing is written: a command asks this before any work."""
    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise DiskError(f"--disk {d}: not a directory")
    if not d.exists():
        return
    try:
        names = sorted(os.listdir(d))
    except OSError as e:
        raise DiskError(f"cannot read the --disk directory {d}: {e.strerror}") from None
    if [n for n in names if n not in _SNAPSHOT_FILES] and MARKER not in names:
        raise DiskError(f"--disk {d} is not empty and holds no previous disk run ({MARKER} is missing): "
                        "give an empty or new directory")
    others = [n for n in names if n != MARKER and not _OURS.match(n) and n not in _SNAPSHOT_FILES]
    if others:
        raise DiskError(f"--disk {d} holds files no disk run wrote ({', '.join(others[:3])}"
                        f"{', ...' if len(others) > 3 else ''}): give an empty or new directory")
    if not os.access(d, os.W_OK):
        raise DiskError(f"cannot write in the --disk directory {d}")


def prepare_directory(directory: str | os.PathLike[str]) -> bool:
    """Make ``directory`` ready for a run (refused as :func:`check_directory` says): made if
    missing (answers True: the run made it), kept if empty, cleared of a previous run's files if it
    holds the marker, and the marker written."""
    check_directory(directory)
    d = Path(directory)
    made = False
    if not d.exists():
        try:
            d.mkdir(parents=True)
        except OSError as e:
            raise DiskError(f"cannot make the --disk directory {d}: {e.strerror}") from None
        made = True
    for n in os.listdir(d):
        if _OURS.match(n):
            (d / n).unlink()
    (d / MARKER).write_text(json.dumps({"format": FORMAT, "what": "isrcheck check --disk working files: "
                                        "safe to delete when no run uses them", "made": made}) + "\n")
    return made


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise DiskError("--disk needs numpy (pip install numpy, or the project's [spark] extra)") from None
    return numpy


class DiskChecker(Generic[S, A]):
    """Breadth-first exhaustive search with the seen set, the frontier and the parents on disk in
    ``directory``: :class:`~isrcheck.engine.checker.Checker`'s result, found in bounded memory.

    After :meth:`run`: ``disk_peak`` (the most bytes its files held at once), ``levels``, and
    ``candidates`` (successors written down, really new or not)."""

    def __init__(
        self,
        model: Model[S, A],
        directory: str | os.PathLike[str],
        *,
        max_depth: int | None = None,
        max_states: int | None = None,
        stop_on_first: bool = True,
        progress: Callable[[Progress], None] | None = None,
        progress_every: float = 0.5,
        max_memory: int | None = None,
        keep: bool = False,
        buffer: int = BUFFER,
        checkpoint: Checkpoints | None = None,
    ) -> None:
        # the bounds of every search (engine/core.py's Search, which the compiled build compiles: an
        # interpreted class cannot extend it, and this module is interpreted)
        self.max_depth, self.max_states, self.max_memory = max_depth, max_states, max_memory
        self.stop_on_first, self.progress, self.progress_every = stop_on_first, progress, progress_every
        self.model = model
        self.directory = Path(directory)
        self.keep = keep
        #: the first this many states of a level stay in memory as they are; the rest go to its file
        self.buffer = buffer
        codec = getattr(model, "state_codec", None)
        if codec is None:
            raise DiskError("this model has no binary state codec: its search cannot keep states on disk")
        self.codec = codec
        self.disk_peak = 0
        self.levels = 0
        self.candidates = 0
        self._made = False
        #: snapshots between levels (engine/checkpoint.py with its ``disk`` table), and the level of
        #: the last one written or resumed: its files are kept until the next one is written
        self.checkpoint = checkpoint
        self._snapshot_level: int | None = None

    # ------------------------------------------------------------------ files
    def _path(self, level: int, kind: str) -> Path:
        return self.directory / f"L{level:05d}.{kind}"

    def _disk_bytes(self) -> int:
        total = 0
        for n in os.listdir(self.directory):
            if _OURS.match(n):
                try:
                    total += (self.directory / n).stat().st_size
                except OSError:
                    pass
        return total

    def _cleanup(self) -> None:
        d = self.directory
        try:
            names = os.listdir(d)
        except OSError:
            return
        for n in names:
            if _OURS.match(n) or n == MARKER:
                try:
                    (d / n).unlink()
                except OSError:
                    pass
        if self._made:
            try:
                d.rmdir()
            except OSError:
                pass

    def run(self) -> CheckResult:
        """Explore; the cyclic garbage collector is paused meanwhile (see :func:`paused_gc`). With a
        checkpoint, a run that does not finish (killed, interrupted, or stopped by the memory
        ceiling) leaves its files: its snapshot needs them."""
        self._np = _numpy()
        ck = self.checkpoint
        snap: Snapshot | None = None
        if ck is not None:
            ck.complete_identity([p.name for p in self.model.properties()], str(self.codec.signature),
                                 {"stop_on_first": self.stop_on_first, "max_depth": self.max_depth,
                                  "max_states": self.max_states, "disk": True})
            ck.prepare()
            if ck.resume:
                snap = ck.load()
        if snap is None:
            self._made = prepare_directory(self.directory)
        else:
            self._reopen(snap)
        resume = paused_gc()
        finished = False
        try:
            result = self._search(snap)
            # stopped by the memory ceiling, a checkpointed run can still be resumed (with a higher one)
            finished = ck is None or result.limit_hit != "memory"
            return result
        finally:
            if resume:
                gc.enable()
            if (finished and not self.keep) or (not finished and ck is None):
                self._cleanup()

    # ------------------------------------------------------------------ snapshots
    def _snapshot_files(self, level: int) -> list[Path]:
        """The files a snapshot taken before ``level``'s expansion needs besides the level files:
        the seen file and the level's states file (hard links: the search replaces the one and
        deletes the other as it goes on) and the positions of its states on file."""
        return [self.directory / f"seen.L{level:05d}.snap", self._path(level, "snap"), self._path(level, "front")]

    def _save(self, ck: Checkpoints, level: int, front: tuple[list[Any], Any, Any, Any], states: int,
              transitions: int, counts: dict[str, int], unseen: set[str],
              origins: dict[str, tuple[int, int, Step | None, Kind, str]], seconds: float) -> None:
        """Write a snapshot before ``level``'s expansion: the window and the frontier are exactly the
        level's, the seen file holds every level before ``level - 1`` (merged at this level's end).
        The files go first (linked, written, synced), the snapshot last: a kill in between leaves the
        previous snapshot, whose files are only removed once this one is written."""
        np = self._np
        began = time.monotonic()
        held, fps, offsets, lengths = front
        seen_link, states_link, positions = self._snapshot_files(level)
        seen = self.directory / "seen.i64"
        if not seen.exists():
            seen.touch()
        for src, dst in ((seen, seen_link), (self._path(level, "states"), states_link)):
            if dst.exists():
                dst.unlink()
            os.link(src, dst)
        on_file = fps[len(held):]
        np.concatenate((on_file, offsets, lengths)).astype("<i8", copy=False).tofile(positions)
        since = 0 if self._snapshot_level is None else self._snapshot_level + 1
        for f in [seen, states_link, positions] + [self._path(k, kind) for k in range(since, level + 1)
                                                   for kind in ("fps", "parents")]:
            _fsync(f)
        _fsync(self.directory)
        records: list[dict[str, Any]] = []
        for name, (lv, fp, extra, kind, message) in origins.items():
            index: int | None = None
            if extra is not None:
                source = replay_fingerprints(self.model, self._chain(lv, fp))[-1].state
                index = list(self.model.actions(source)).index(extra.action)
            records.append({"property": name, "kind": kind, "fp": fp, "message": message, "action": index,
                            "faulted": extra is not None and extra.state is None, "level": lv})
        snap = Snapshot(identity=ck.identity, depth=level - 1, transitions=transitions, counts=dict(counts),
                        unseen=sorted(unseen), violations=records, limit_hit=None, seconds=seconds, states=states,
                        disk={"level": level, "seen": seen.stat().st_size // 8, "on_file": len(on_file),
                              "candidates": self.candidates, "disk_peak": self.disk_peak})
        ck.write(snap, held, self.codec.encode)
        ck.write_seconds += ck.last - began - ck.last_write  # the files' part of the cost too
        ck.last_write = ck.last - began
        previous, self._snapshot_level = self._snapshot_level, level
        if previous is not None and previous != level:
            for f in self._snapshot_files(previous):
                f.unlink(missing_ok=True)

    def _reopen(self, snap: Snapshot) -> None:
        """Make the directory what it was when ``snap`` was written, or refuse in one sentence: the
        snapshot's files there with their sizes, the seen file and the level's states file put back,
        and whatever the run wrote past the snapshot removed."""
        disk = snap.disk
        where = self.checkpoint.path if self.checkpoint is not None else ""
        if disk is None:
            raise SnapshotError(f"the snapshot {where} is of a search in memory: resume it without --disk")
        level = disk["level"]
        d = self.directory
        if not (d / MARKER).is_file():
            raise DiskError(f"--disk {d} holds no disk run ({MARKER} is missing): resume with the --disk "
                            f"directory the run of {where} used (a run that finished has removed its files)")
        needed = self._snapshot_files(level) + [self._path(k, kind) for k in range(level + 1)
                                                for kind in ("fps", "parents")]
        missing = [f.name for f in needed if not f.is_file()]
        if missing:
            raise DiskError(f"--disk {d} does not hold the files of the snapshot {where} ({missing[0]} is missing"
                            f"{' and ' + str(len(missing) - 1) + ' more' if len(missing) > 1 else ''}): resume "
                            f"with the --disk directory that run used, which a finished run has emptied")
        seen_link, states_link, positions = self._snapshot_files(level)
        sizes = sum(self._path(k, "fps").stat().st_size for k in range(level + 1))
        parents = sum(self._path(k, "parents").stat().st_size for k in range(level + 1))
        if (sizes != 8 * snap.states or parents != sizes or seen_link.stat().st_size != 8 * disk["seen"]
                or positions.stat().st_size != 24 * disk["on_file"]):
            raise DiskError(f"--disk {d} does not hold the files of the snapshot {where}: their sizes differ "
                            "from what it recorded (another run's files, or damaged)")
        for n in os.listdir(d):
            m = re.match(r"^(?:seen\.)?L(\d{5,})\.", n)
            if n in ("seen.i64", "seen.tmp") or (m and int(m.group(1)) > level) or (
                    m and n.endswith((".snap", ".front")) and int(m.group(1)) != level) or n == f"L{level:05d}.states":
                (d / n).unlink()
        os.link(seen_link, d / "seen.i64")
        os.link(states_link, self._path(level, "states"))
        self._snapshot_level = level
        try:  # the run that made the directory removes it at its end, resumed or not
            self._made = json.loads((d / MARKER).read_text()).get("made") is True
        except (OSError, ValueError, AttributeError):
            self._made = False
        self.candidates = disk["candidates"]
        self.disk_peak = disk["disk_peak"]

    def _restore(self, snap: Snapshot) -> tuple[Any, ...]:
        """The search's variables at the snapshot's level boundary (the directory was reopened):
        (front, older, current, prev_sorted, level_sorted, origins), each checked against the files."""
        np = self._np
        assert snap.disk is not None
        level, on_file = snap.disk["level"], snap.disk["on_file"]
        where = self.checkpoint.path if self.checkpoint is not None else ""

        def damaged(why: str) -> SnapshotError:
            return SnapshotError(f"the snapshot {where} is damaged or not of the files in --disk "
                                 f"{self.directory} ({why})")

        held = []
        for raw in snap.frontier:
            try:
                held.append(self.codec.decode(raw))
            except Exception as e:  # the codec's CodecError, or anything a damaged byte string raises
                raise damaged(f"a frontier state does not decode: {e}") from None
        words = np.fromfile(self._snapshot_files(level)[2], dtype="<i8").astype(np.int64)
        fps_file, offsets, lengths = words[:on_file], words[on_file:2 * on_file], words[2 * on_file:]
        size = self._path(level, "states").stat().st_size
        if on_file and (int(offsets.min()) < 0 or int(lengths.min()) < 0 or int((offsets + lengths).max()) > size):
            raise damaged("a frontier state lies outside the level's states file")
        fingerprint = self.model.fingerprint
        fr_fps = np.concatenate((np.array([fingerprint(t) for t in held], dtype=np.int64), fps_file))
        level_sorted = np.fromfile(self._path(level, "fps"), dtype="<i8").astype(np.int64)
        if not np.array_equal(np.sort(fr_fps), level_sorted):
            raise damaged("its frontier is not the level's states")
        prev_sorted = (np.fromfile(self._path(level - 1, "fps"), dtype="<i8").astype(np.int64) if level
                       else np.empty(0, dtype=np.int64))
        origins: dict[str, tuple[int, int, Step | None, Kind, str]] = {}
        for rec in snap.violations:
            lv = rec.get("level")
            if type(lv) is not int or not 0 <= lv <= level:
                raise damaged("a violation names no level")
            try:
                source = replay_fingerprints(self.model, self._chain(lv, rec["fp"]))[-1].state
            except RuntimeError:
                raise damaged("a violation's state is not in the level files") from None
            extra: Step | None = None
            if rec["action"] is not None:
                acts = list(self.model.actions(source))
                if not 0 <= rec["action"] < len(acts):
                    raise damaged("a violation's action is not one of its state's")
                a = acts[rec["action"]]
                extra = Step(a, None if rec["faulted"] else self.model.next_state(source, a))
            origins[rec["property"]] = (lv, rec["fp"], extra, rec["kind"], rec["message"])
        front = (held, fr_fps, offsets, lengths)
        older, current = _fingerprint_set(np, prev_sorted), _fingerprint_set(np, fr_fps)
        return front, older, current, prev_sorted, level_sorted, origins

    # ------------------------------------------------------------------ levels on disk
    def _states(self, level: int, front: tuple[list[Any], Any, Any, Any]) -> Iterator[tuple[Any, int]]:
        """The states of ``level`` with their fingerprints, in the level's order: ``front`` is
        (the states held in memory, every state's fingerprint, the offsets and lengths of the
        others' encodings in the level's file); those in memory come first."""
        held, fps, offsets, lengths = front
        yield from zip(held, fps[:len(held)].tolist())
        fps = fps[len(held):]
        n = len(fps)
        if n == 0:
            return
        decode = self.codec.decode
        with open(self._path(level, "states"), "rb") as f, \
                mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for lo in range(0, n, CHUNK):
                for o, ln, fp in zip(offsets[lo:lo + CHUNK].tolist(), lengths[lo:lo + CHUNK].tolist(),
                                     fps[lo:lo + CHUNK].tolist()):
                    yield decode(mm[o:o + ln]), fp

    def _merge_probe(self, add: Any, probe: Any) -> Any:
        """Merge the sorted fingerprints ``add`` into ``seen.i64`` (streamed block by block) and
        answer which of the sorted fingerprints ``probe`` the merged set holds (a boolean array)."""
        np = self._np
        seen = self.directory / "seen.i64"
        tmp = self.directory / "seen.tmp"
        found = np.zeros(len(probe), dtype=bool)
        ai = pi = 0
        with open(seen, "ab+") as f, open(tmp, "wb") as g:
            f.seek(0)
            while True:
                block = np.fromfile(f, dtype="<i8", count=BLOCK)
                if block.size == 0:
                    break
                hi = block[-1]
                aj = int(np.searchsorted(add, hi, side="right"))
                if aj > ai:
                    block = np.concatenate((block, add[ai:aj]))
                    block.sort(kind="stable")  # two sorted runs: a linear merge
                pj = int(np.searchsorted(probe, hi, side="right"))
                if pj > pi:
                    found[pi:pj] = _member(np, block, probe[pi:pj])
                block.tofile(g)
                ai, pi = aj, pj
            rest = add[ai:]
            if pi < len(probe) and rest.size:
                found[pi:] = _member(np, rest, probe[pi:])
            rest.tofile(g)
        os.replace(tmp, seen)
        return found

    def _parent_of(self, level: int, fp: int) -> int:
        np = self._np
        fps = np.memmap(self._path(level, "fps"), dtype="<i8", mode="r")
        i = int(np.searchsorted(fps, fp))
        if i >= len(fps) or int(fps[i]) != fp:  # pragma: no cover - the files are the run's own
            raise RuntimeError(f"fingerprint {fp} is not in level {level}'s parent file")
        parents = np.memmap(self._path(level, "parents"), dtype="<i8", mode="r")
        return int(parents[i])

    def _chain(self, level: int, fp: int) -> list[int]:
        chain = [fp]
        for lv in range(level, 0, -1):
            fp = self._parent_of(lv, fp)
            chain.append(fp)
        chain.reverse()
        return chain

    def _write_parents(self, level: int, fps_sorted: Any, parents: Any) -> None:
        fps_sorted.astype("<i8", copy=False).tofile(self._path(level, "fps"))
        parents.astype("<i8", copy=False).tofile(self._path(level, "parents"))

    # ------------------------------------------------------------------ the search
    def _search(self, snap: Snapshot | None) -> CheckResult:  # noqa: C901 - the checker's loop, as Checker's is
        np = self._np
        model = self.model
        checks = Checks.of(model)
        safe, legal = checks.safe, checks.legal
        broken_always = checks.broken_always
        broken_transition = checks.broken_transition
        witnessed = checks.witnessed
        fingerprint = model.fingerprint
        actions = model.actions
        next_state = model.next_state
        encode = self.codec.encode
        stop_on_first = self.stop_on_first
        max_states = self.max_states
        max_memory = self.max_memory

        start = time.perf_counter()
        last_report = start
        counts: dict[str, int] = {}
        unseen: set[str] = set(checks.sometimes_names())
        # name -> (level of the state, its fingerprint, the step out of it or None, kind, message)
        origins: dict[str, tuple[int, int, Step | None, Kind, str]] = {}
        transitions = 0
        depth = 0
        limit_hit: str | None = None

        ck = self.checkpoint
        buffer = self.buffer
        d = 0
        if snap is None:
            # ---- level 0: the initial states, all judged (Checker checks no bound among them)
            level_fps = array("q")
            lengths = array("q")
            held: list[Any] = []
            # the window: the fingerprints of levels d-1 (older) and d (current), and of level d+1's
            # candidates so far (cands), each a fingerprint table used as a set (the value is unused)
            older = new_fingerprint_set()
            current = new_fingerprint_set()
            with open(self._path(0, "states"), "wb") as out:
                for s in model.init_states():
                    fp = fingerprint(s)
                    if fp in current:
                        continue
                    current[fp] = None
                    level_fps.append(fp)
                    if len(held) < buffer:
                        held.append(s)
                    else:
                        b = encode(s)
                        out.write(b)
                        lengths.append(len(b))
                    if not safe(s):
                        for name in broken_always(s):
                            if name not in origins:
                                origins[name] = (0, fp, None, "always", "")
                    unseen.difference_update(witnessed(s, unseen))
            states = len(level_fps)
            fr_fps = np.frombuffer(level_fps, dtype=np.int64).copy()
            fr_len = np.frombuffer(lengths, dtype=np.int64).copy()
            front = (held, fr_fps, np.cumsum(fr_len) - fr_len, fr_len)
            order = np.argsort(fr_fps, kind="stable")
            self._write_parents(0, fr_fps[order], fr_fps[order])  # an initial state is its own parent
            level_sorted = fr_fps[order]  # this level's fingerprints, sorted: merged into seen.i64 later
            prev_sorted = np.empty(0, dtype=np.int64)
            peak = self._disk_bytes()

        else:  # the level boundary the snapshot was taken at
            front, older, current, prev_sorted, level_sorted, origins = self._restore(snap)
            fr_fps = front[1]
            d = depth = snap.disk["level"] if snap.disk is not None else 0
            states, transitions, counts = snap.states, snap.transitions, dict(snap.counts)
            unseen.intersection_update(snap.unseen)
            start -= snap.seconds  # the run's time is the time of all its parts
            peak = self.disk_peak
        stop = bool(origins) and stop_on_first
        if max_memory is not None and not stop and resident_bytes() > max_memory:
            limit_hit = "memory"
            stop = True
        memory_due = states + CHECK_EVERY if max_memory is not None else -1

        while not stop and len(fr_fps):
            depth = d
            if self.max_depth is not None and d >= self.max_depth:
                limit_hit = limit_hit or "depth"
                break
            if ck is not None and d > 0 and d != self._snapshot_level and ck.due():
                self.disk_peak = peak
                self._save(ck, d, front, states, transitions, counts, unseen, origins, time.perf_counter() - start)
            self.levels = d + 1
            cands = new_fingerprint_set()
            cand_fp = array("q")
            cand_parent = array("q")
            cand_pos = array("q")
            cand_len = array("q")  # of the candidates past the first ``buffer``, written to the file
            cand_held: list[Any] = []  # the first ``buffer`` candidates, kept as they are
            nheld = 0
            faults: list[int] = []
            witnesses: list[tuple[int, list[str]]] = []
            # the level's first occurrence of each property not yet broken: name -> (position, origin)
            level_found: dict[str, tuple[int, tuple[int, int, Step | None, Kind, str]]] = {}
            pending = set(unseen)
            transitions0, counts0 = transitions, dict(counts)
            k = -1  # the position of the step being taken
            gen_stop: int | None = None  # the position of a stop seen while generating
            memory_stop = False
            with open(self._path(d + 1, "states"), "wb", buffering=1 << 20) as out:
                write = out.write
                for s, fp in self._states(d, front):
                    for a in actions(s):
                        k += 1
                        try:
                            t = next_state(s, a)
                        except ModelFault as e:
                            faults.append(k)
                            name = e.property_name
                            if name not in origins and name not in level_found:
                                level_found[name] = (k, (d, fp, Step(a, None), "transition", str(e)))
                            if stop_on_first:
                                gen_stop = k
                                break
                            continue
                        transitions += 1
                        name = action_name(a)
                        counts[name] = counts.get(name, 0) + 1
                        if not legal(s, t):
                            for name in broken_transition(s, t):
                                if name not in origins and name not in level_found:
                                    level_found[name] = (k, (d, fp, Step(a, t), "transition", ""))
                            stop = stop_on_first
                        tfp = fingerprint(t)
                        if tfp in cands or tfp in current or tfp in older:
                            if stop:
                                gen_stop = k
                                break
                            continue
                        cands[tfp] = None
                        cand_fp.append(tfp)
                        cand_parent.append(fp)
                        cand_pos.append(k)
                        if nheld < buffer:
                            cand_held.append(t)
                            nheld += 1
                        else:
                            b = encode(t)
                            write(b)
                            cand_len.append(len(b))
                        if not safe(t):
                            for name in broken_always(t):
                                if name not in origins and name not in level_found:
                                    level_found[name] = (k, (d + 1, tfp, None, "always", ""))
                            stop = stop_on_first
                        if pending:
                            names = witnessed(t, pending)
                            if names:
                                witnesses.append((k, names))
                                pending.difference_update(names)
                        if stop:
                            gen_stop = k
                            break
                    if gen_stop is not None:
                        break
                    if max_memory is not None and states + len(cand_fp) >= memory_due:
                        memory_due = states + len(cand_fp) + CHECK_EVERY
                        if resident_bytes() > max_memory:
                            memory_stop = True
                            gen_stop = k
                            break
                    if self.progress is not None:
                        now = time.perf_counter()
                        if now - last_report >= self.progress_every:
                            last_report = now
                            self.progress(Progress(states + len(cand_fp), d, len(fr_fps) + len(cand_fp),
                                                   now - start))
            last_pos = k
            self.candidates += len(cand_fp)

            # ---- the level's end: which candidates are really new
            cf = np.frombuffer(cand_fp, dtype=np.int64)
            order = np.argsort(cf, kind="stable")
            sorted_c = cf[order]
            old_sorted = self._merge_probe(prev_sorted, sorted_c)
            prev_sorted = level_sorted  # level d goes to disk at the next level's end
            is_new = np.ones(len(cf), dtype=bool)
            is_new[order[old_sorted]] = False
            pos = np.frombuffer(cand_pos, dtype=np.int64)
            new_pos = pos[is_new]

            # ---- where Checker stops in this level, if it does
            cut = gen_stop
            if gen_stop is not None and not memory_stop:
                stop = True
            elif memory_stop:
                limit_hit = "memory"
                stop = True
            if max_states is not None and len(new_pos):
                j = max(max_states - states, 1)  # Checker stops on the j-th new state
                at = int(new_pos[j - 1]) if len(new_pos) >= j else None
                # before a stop seen while generating (a violation's step stops before the count is
                # checked; the memory is read after the state's last step, the count before it)
                if at is not None and (gen_stop is None or at < gen_stop or (memory_stop and at <= gen_stop)):
                    cut = at
                    limit_hit = "states"
                    stop = True
            if cut is None:
                cut = last_pos
            kept = is_new & (pos <= cut)
            states += int(kept.sum())
            for p, names in witnesses:
                if p <= cut:
                    unseen.difference_update(names)
            for name, (p, origin) in level_found.items():
                if p <= cut and name not in origins:
                    if origin[3] == "always" and not is_new[int(np.searchsorted(pos, p))]:
                        continue  # pragma: no cover - an old state breaks no property still unbroken
                    origins[name] = origin
            if cut < last_pos:
                transitions, counts = transitions0, counts0
                transitions += self._recount(d, front, cut, set(faults), counts)
            # the parents of the states kept (those up to the cut: a counterexample may end there)
            kept_sorted = kept[order]
            if kept_sorted.any():
                self._write_parents(d + 1, sorted_c[kept_sorted],
                                    np.frombuffer(cand_parent, dtype=np.int64)[order][kept_sorted])
            peak = max(peak, self._disk_bytes())
            if stop:
                break

            # ---- the next level: its states in generation order, its parents sorted by fingerprint
            self._path(d, "states").unlink()
            cl = np.frombuffer(cand_len, dtype=np.int64)
            off = np.cumsum(cl) - cl
            new_held = is_new[:nheld]
            on_file = is_new[nheld:]
            fr_fps = cf[is_new].copy()
            front = ([t for t, keep in zip(cand_held, new_held.tolist()) if keep], fr_fps, off[on_file].copy(),
                     cl[on_file].copy())
            level_sorted = sorted_c[~old_sorted]
            # the level's candidates go before the next level's table is filled (the peak of a level's
            # end: a name held to the next level keeps its array, 8 bytes a candidate each)
            del (cands, cand_held, cand_fp, cand_parent, cand_pos, cand_len, cf, order, sorted_c, old_sorted, is_new,
                 pos, new_pos, kept, kept_sorted, cl, off, new_held, on_file)
            # the window becomes levels d and d+1: level d-1's table leaves it before d+1's is filled
            older, current = current, None
            current = _fingerprint_set(np, fr_fps)
            d += 1
            if max_memory is not None and resident_bytes() > max_memory:
                limit_hit = "memory"
                break

        if stop and not limit_hit and not origins:
            limit_hit = "states"
        if max_memory is not None and not limit_hit and resident_bytes() > max_memory:
            limit_hit = "memory"
        self.disk_peak = max(peak, self._disk_bytes())
        violations: dict[str, Violation] = {}
        chains: dict[tuple[int, int], list[Step]] = {}
        for name, (lv, fp, extra, kind, message) in origins.items():
            if (lv, fp) not in chains:
                chains[lv, fp] = replay_fingerprints(model, self._chain(lv, fp))
            steps = list(chains[lv, fp])
            if extra is not None:
                steps.append(extra)
            violations[name] = Violation(name, kind, steps, message)
        seconds = time.perf_counter() - start
        if self.progress is not None:
            self.progress(Progress(states, depth, 0, seconds))
        return result_of(states, depth, seconds, transitions, violations.values(), unseen, Counter(counts),
                         limit_hit, model.properties())

    def _recount(self, level: int, front: tuple[list[Any], Any, Any, Any], cut: int, faults: set[int],
                 counts: dict[str, int]) -> int:
        """The transitions (returned) and coverage (added to ``counts``) of the steps of ``level``
        up to position ``cut``: every enabled action is a step, a faulting one is no transition."""
        k = -1
        transitions = 0
        actions = self.model.actions
        for s, _fp in self._states(level, front):
            for a in actions(s):
                k += 1
                if k > cut:
                    return transitions
                if k in faults:
                    continue
                transitions += 1
                name = action_name(a)
                counts[name] = counts.get(name, 0) + 1
        return transitions


def _fingerprint_set(np: Any, fps: Any) -> Any:
    """A window table (:func:`new_fingerprint_set`) holding the int64 array ``fps``, filled in
    bulk where it is engine/_fpset.c's (straight from the array's buffer: no copy)."""
    table = new_fingerprint_set()
    if isinstance(table, dict):
        return dict.fromkeys(fps.tolist())
    table.update(np.ascontiguousarray(fps, dtype=np.int64))
    return table


def _fsync(path: Path) -> None:
    """Put ``path`` (a file or a directory) on the device: a snapshot must outlive a crash of the
    machine, not only of the process."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _member(np: Any, sorted_array: Any, values: Any) -> Any:
    """Membership of ``values`` in ``sorted_array`` (a boolean array)."""
    idx = np.searchsorted(sorted_array, values)
    idx[idx == len(sorted_array)] = 0
    return sorted_array[idx] == values
