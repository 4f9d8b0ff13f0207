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
  state in order counts one) and its encoding go to the level's files as they come (a block of
  flat arrays at a time: nothing per candidate stays in memory but its slot in the candidates'
  set), and ``always`` and ``sometimes`` properties are judged on it there and then. At the end of
  the level the candidates' fingerprints are read back, sorted and merged against ``seen.i64``
  block by block (never a whole-file load), which says which of them are really new; the seen
  file is rewritten as the merge with level ``d-1`` (its ``.fps`` file, streamed too). The level's
  new states are then its candidates marked new, one byte each: they are read back from the
  candidates' files, skipping the others.
  A candidate that turns out old was judged for nothing but harmlessly: an old state was judged
  when it was new, so it can break no property that is not recorded yet, nor witness one that is
  still unwitnessed (and under ``stop_on_first`` no violation had been found before this level).
* **The stop.** :class:`Checker` stops at the first of: a faulting step, a step breaking a
  ``transition`` property, a new state breaking an ``always`` property (each seen at generation
  time, where this search stops too), and the new state that makes ``max_states`` (its position
  is the ``k``-th really new candidate's: once the candidates written could hold it, a probe of
  the seen file counts the really new ones, and the level's generation stops when they are enough). What lies
  after the stop's position is dropped: its candidates, witnesses and violations; the transitions
  and coverage of a level cut before its last generated step are recounted by re-reading the level
  up to the stop (only ``actions``, once, at the end; the positions of faulting steps were noted).
* **Parents.** Each level's new states keep ``(fingerprint, parent)`` in two files sorted by
  fingerprint (``LNNNNN.fps``, ``LNNNNN.parents``): a counterexample's chain costs one binary
  search per level, and is replayed from an initial state as :class:`Checker` replays its own.

* **Snapshots** (``checkpoint``). Before a level's expansion the search is a consistent cut; a
  snapshot keeps it by hard-linking the seen file and the level's states, lengths and candidate
  fingerprints (each would otherwise be replaced or deleted as the search goes on), writing the
  marks of the level's on-file candidates, and then writing engine/checkpoint.py's snapshot with a ``disk`` table and no parent map (the level
  files are it). :meth:`DiskChecker._reopen` and :meth:`DiskChecker._restore` put the directory and
  the window back as they were, checked against the snapshot (specs/07-checker.md, "On disk").

Files of the directory: ``isrcheck-disk.json`` (the marker that makes it a disk run's directory,
which a later run may clear), ``seen.i64``, and per level ``LNNNNN.states`` (the candidates'
encodings, in generation order) with ``.lens`` (their lengths) and ``.cfps`` (every candidate's
fingerprint), ``.cpar`` and ``.cpos`` (the candidates' parents and positions, gone at the level's
end), ``LNNNNN.fps`` and ``LNNNNN.parents``; with snapshots, ``seen.LNNNNN.snap``, ``LNNNNN.snap``,
``.lsnap``, ``.csnap`` and ``.front``. A level's candidate files are deleted as soon as the
search is past it; everything is removed at the end unless ``keep``. Files are read with buffered
reads, never mapped, so that none counts in the resident memory (a level's states file is GiBs).

numpy is needed (imported when a search starts): :class:`DiskError` says so when it is missing.
Interpreted on purpose (not in ``isrcheck.native.COMPILED_MODULES``): its loop is the checker's,
plus a write per candidate.
"""
from __future__ import annotations

import gc
import json
import os
import re
import sys
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Generic, NamedTuple

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
_OURS = re.compile(r"^(seen\.i64|seen\.tmp|seen\.L\d{5,}\.snap|L\d{5,}\.(states|lens|cfps|cpar|cpos|fps|parents|snap|lsnap|csnap|"
                   r"front))$")
#: A checkpoint directory may be the disk directory itself: its snapshot files are not the run's.
_SNAPSHOT_FILES = (FILE_NAME, FILE_NAME + ".tmp")
#: Fingerprints read per block while merging the seen file (8 MiB).
BLOCK = 1 << 20
#: States of a level decoded per chunk of index arrays, and candidates written per flush of their
#: fingerprint, parent, position and length arrays to the level's files.
CHUNK = 1 << 15
#: The first states of each level kept in memory as they are (not encoded, not decoded: the pure
#: build's codec costs several times a state's expansion), as TLC's queue keeps a buffer before it
#: spills; with the level being read, at most twice this many states are held at once.
BUFFER = 1 << 15
#: The level files are little-endian; a big-endian machine swaps its arrays before writing them.
_BIG_ENDIAN = sys.byteorder == "big"
#: The snapshot links and marks of a level (engine/disk.py's ``_snapshot_files``).
_LINKS = (".snap", ".lsnap", ".csnap", ".front")


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
        the seen file and the level's states, lengths and candidate fingerprints (hard links: the
        search replaces the first and deletes the others as it goes on) and which of the level's
        on-file candidates are its states (one byte each)."""
        return [self.directory / f"seen.L{level:05d}.snap", self._path(level, "snap"), self._path(level, "lsnap"),
                self._path(level, "csnap"), self._path(level, "front")]

    def _save(self, ck: Checkpoints, level: int, front: _Front, states: int, transitions: int,
              counts: dict[str, int], unseen: set[str], origins: dict[str, tuple[int, int, Step | None, Kind, str]],
              seconds: float) -> None:
        """Write a snapshot before ``level``'s expansion: the window and the frontier are exactly the
        level's, the seen file holds every level before ``level - 1`` (merged at this level's end).
        The files go first (linked, written, synced), the snapshot last: a kill in between leaves the
        previous snapshot, whose files are only removed once this one is written."""
        began = time.monotonic()
        seen_link, states_link, lens_link, fps_link, mask = self._snapshot_files(level)
        seen = self.directory / "seen.i64"
        if not seen.exists():
            seen.touch()
        for src, dst in ((seen, seen_link), (self._path(level, "states"), states_link),
                         (self._path(level, "lens"), lens_link), (self._path(level, "cfps"), fps_link)):
            if dst.exists():
                dst.unlink()
            os.link(src, dst)
        front.mask.astype(self._np.uint8).tofile(mask)
        since = 0 if self._snapshot_level is None else self._snapshot_level + 1
        for f in [seen, states_link, lens_link, fps_link, mask] + [self._path(k, kind) for k in range(since, level + 1)
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
                        disk={"level": level, "seen": seen.stat().st_size // 8, "on_file_candidates": len(front.mask),
                              "candidates": self.candidates, "disk_peak": self.disk_peak},
                        disk_directory=str(self.directory.resolve()))
        ck.write(snap, front.held, self.codec.encode)
        ck.write_seconds += ck.last - began - ck.last_write  # the files' part of the cost too
        ck.last_write = ck.last - began
        previous, self._snapshot_level = self._snapshot_level, level
        if previous is not None and previous != level:
            for f in self._snapshot_files(previous):
                f.unlink(missing_ok=True)

    def _reopen(self, snap: Snapshot) -> None:
        """Make the directory what it was when ``snap`` was written, or refuse in one sentence: the
        snapshot's files there with their sizes, the seen file and the level's states, lengths and
        candidate fingerprints put back, and whatever the run wrote past the snapshot removed."""
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
        seen_link, states_link, lens_link, fps_link, mask = self._snapshot_files(level)
        sizes = sum(self._path(k, "fps").stat().st_size for k in range(level + 1))
        parents = sum(self._path(k, "parents").stat().st_size for k in range(level + 1))
        on_file = disk["on_file_candidates"]
        if (sizes != 8 * snap.states or parents != sizes or seen_link.stat().st_size != 8 * disk["seen"]
                or mask.stat().st_size != on_file or lens_link.stat().st_size != 4 * on_file
                or fps_link.stat().st_size < 8 * on_file or fps_link.stat().st_size % 8):
            raise DiskError(f"--disk {d} does not hold the files of the snapshot {where}: their sizes differ "
                            "from what it recorded (another run's files, or damaged)")
        links = {f.name for f in self._snapshot_files(level)}
        for n in os.listdir(d):
            m = re.match(r"^(?:seen\.)?L(\d{5,})\.", n)
            if n in ("seen.i64", "seen.tmp") or (m and int(m.group(1)) > level) or (
                    m and n.endswith(_LINKS) and n not in links) or n.endswith((".cpar", ".cpos")) or n in (
                    f"L{level:05d}.{kind}" for kind in ("states", "lens", "cfps")):
                (d / n).unlink()
        os.link(seen_link, d / "seen.i64")
        for link, kind in ((states_link, "states"), (lens_link, "lens"), (fps_link, "cfps")):
            os.link(link, self._path(level, kind))
        self._snapshot_level = level
        try:  # the run that made the directory removes it at its end, resumed or not
            self._made = json.loads((d / MARKER).read_text()).get("made") is True
        except (OSError, ValueError, AttributeError):
            self._made = False
        self.candidates = disk["candidates"]
        self.disk_peak = disk["disk_peak"]

    def _restore(self, snap: Snapshot) -> tuple[_Front, Any, Any, dict[str, tuple[int, int, Step | None, Kind, str]]]:
        """The search's variables at the snapshot's level boundary (the directory was reopened):
        (front, older, current, origins), each checked against the files."""
        np = self._np
        assert snap.disk is not None
        level, on_file = snap.disk["level"], snap.disk["on_file_candidates"]
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
        mask = np.fromfile(self._snapshot_files(level)[4], dtype=np.uint8)
        if mask.size and int(mask.max()) > 1:
            raise damaged("its frontier's marks are not of the level's candidates")
        mask = mask.astype(bool)
        lens = np.fromfile(self._path(level, "lens"), dtype="<i4")
        if on_file and (int(lens.min()) < 0 or int(lens.sum(dtype=np.int64)) != self._path(level, "states").stat().st_size):
            raise damaged("the level's states file is not the lengths of its states")
        cand = np.fromfile(self._path(level, "cfps"), dtype="<i8").astype(np.int64)
        skip = len(cand) - on_file
        fingerprint = self.model.fingerprint
        held_fps = [fingerprint(t) for t in held]
        fr_fps = np.concatenate((np.array(held_fps, dtype=np.int64), cand[skip:][mask]))
        del cand, lens
        fr_fps.sort()
        if not np.array_equal(fr_fps, np.fromfile(self._path(level, "fps"), dtype="<i8").astype(np.int64)):
            raise damaged("its frontier is not the level's states")
        del fr_fps
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
        front = _Front(held, held_fps, skip, mask, len(held) + int(np.count_nonzero(mask)))
        older = self._fingerprint_set(self._path(level - 1, "fps") if level else None)
        current = self._fingerprint_set(self._path(level, "fps"))
        return front, older, current, origins

    # ------------------------------------------------------------------ levels on disk
    def _states(self, level: int, front: _Front) -> Iterator[tuple[Any, int]]:
        """The states of ``level`` with their fingerprints, in the level's order: those ``front``
        holds first, then the on-file candidates it marks, read a chunk at a time from the level's
        states, lengths and fingerprints files (buffered reads: no mapping, so a level's file never
        counts in the resident memory)."""
        np = self._np
        yield from zip(front.held, front.held_fps)
        mask = front.mask
        n = len(mask)
        if n == 0 or not mask.any():
            return
        decode = self.codec.decode
        with open(self._path(level, "states"), "rb") as f, open(self._path(level, "lens"), "rb") as lf, \
                open(self._path(level, "cfps"), "rb") as cf:
            cf.seek(8 * front.skip)
            for lo in range(0, n, CHUNK):
                lengths = np.fromfile(lf, dtype="<i4", count=CHUNK).astype(np.int64)
                fps = np.fromfile(cf, dtype="<i8", count=CHUNK)
                chunk = f.read(int(lengths.sum()))
                ends = np.cumsum(lengths)
                keep = mask[lo:lo + CHUNK]
                for o, ln, fp in zip((ends - lengths)[keep].tolist(), lengths[keep].tolist(), fps[keep].tolist()):
                    yield decode(chunk[o:o + ln]), fp

    def _blocks(self, path: Path | None) -> Iterator[Any]:
        """The int64 fingerprints of a sorted file, :data:`BLOCK` at a time (nothing for None)."""
        if path is None:
            return
        with open(path, "rb") as f:
            while True:
                block = self._np.fromfile(f, dtype="<i8", count=BLOCK)
                if block.size == 0:
                    return
                yield block.astype(self._np.int64, copy=False)

    def _merge_probe(self, add: Path | None, probe: Any) -> Any:
        """Merge the sorted fingerprints of the file ``add`` into ``seen.i64`` (both streamed block by
        block) and answer which of the sorted fingerprints ``probe`` the merged set holds (a boolean
        array)."""
        np = self._np
        seen = self.directory / "seen.i64"
        tmp = self.directory / "seen.tmp"
        if not seen.exists():
            seen.touch()
        found = np.zeros(len(probe), dtype=bool)
        pi = 0
        with open(tmp, "wb") as g:
            for block in _merged(np, self._blocks(seen), self._blocks(add)):
                pj = int(np.searchsorted(probe, block[-1], side="right"))
                if pj > pi:
                    found[pi:pj] = _member(np, block, probe[pi:pj])
                    pi = pj
                block.astype("<i8", copy=False).tofile(g)
        os.replace(tmp, seen)
        return found

    def _old_among(self, out: _Candidates) -> int:
        """How many of the candidates written so far the seen file holds (the window's sets held
        none of them): their fingerprints read back and sorted, the seen file streamed past them."""
        np = self._np
        out.flush()
        probe = np.sort(np.fromfile(out.path("cfps"), dtype="<i8").astype(np.int64, copy=False))
        old = 0
        lo = 0
        seen = self.directory / "seen.i64"
        for block in self._blocks(seen if seen.exists() else None):
            hi = int(np.searchsorted(probe, block[-1], side="right"))
            if hi > lo:
                old += int(np.count_nonzero(_member(np, block, probe[lo:hi])))
                lo = hi
        return old

    def _fingerprint_set(self, path: Path | None) -> Any:
        """A window set holding the fingerprints of a level's ``.fps`` file (None: no level)."""
        return _fingerprint_set(self._np, self._blocks(path))

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

    def _unlink(self, level: int, *kinds: str) -> None:
        for kind in kinds:
            self._path(level, kind).unlink(missing_ok=True)

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
            # ---- level 0: the initial states, all judged (Checker checks no bound among them); they are
            # the level's candidates, every one new
            # the window: the fingerprints of levels d-1 (older) and d (current), and of level d+1's
            # candidates so far (cands), each a fingerprint set
            older = new_fingerprint_set()
            current = new_fingerprint_set()
            level_fps = array("q")
            held: list[Any] = []
            with _Candidates(self, 0) as out:
                for s in model.init_states():
                    fp = fingerprint(s)
                    if fp in current:
                        continue
                    current[fp] = None
                    level_fps.append(fp)
                    if len(held) < buffer:
                        held.append(s)
                        out.add(fp, fp, 0, None)
                    else:
                        out.add(fp, fp, 0, encode(s))
                    if not safe(s):
                        for name in broken_always(s):
                            if name not in origins:
                                origins[name] = (0, fp, None, "always", "")
                    unseen.difference_update(witnessed(s, unseen))
            states = len(level_fps)
            fr = np.sort(np.frombuffer(level_fps, dtype=np.int64))
            _write_sorted(self._path(0, "fps"), fr)
            _write_sorted(self._path(0, "parents"), fr)  # an initial state is its own parent
            self._unlink(0, "cpar", "cpos")
            front = _Front(held, level_fps[:len(held)].tolist(), len(held), np.ones(states - len(held), dtype=bool),
                           states)
            del level_fps, fr
            peak = self._disk_bytes()

        else:  # the level boundary the snapshot was taken at
            front, older, current, origins = self._restore(snap)
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

        while not stop and front.size:
            depth = d
            if self.max_depth is not None and d >= self.max_depth:
                limit_hit = limit_hit or "depth"
                break
            if ck is not None and d > 0 and d != self._snapshot_level and ck.due():
                self.disk_peak = peak
                self._save(ck, d, front, states, transitions, counts, unseen, origins, time.perf_counter() - start)
            self.levels = d + 1
            cands = new_fingerprint_set()
            faults: list[int] = []
            witnesses: list[tuple[int, list[str]]] = []
            # the level's first occurrence of each property not yet broken: name -> (position, origin)
            level_found: dict[str, tuple[int, tuple[int, int, Step | None, Kind, str]]] = {}
            pending = set(unseen)
            transitions0, counts0 = transitions, dict(counts)
            k = -1  # the position of the step being taken
            gen_stop: int | None = None  # the position of a stop seen while generating
            memory_stop = False
            # Checker stops on the cut_at-th new state of the level (with max_states): a probe is due
            # once the candidates so far could hold it
            cut_at = max(max_states - states, 1) if max_states is not None else 0
            cut_due = states + cut_at if max_states is not None else sys.maxsize
            with _Candidates(self, d + 1) as out:
                add = out.add
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
                        if out.count < buffer:
                            out.held.append(t)
                            add(tfp, fp, k, None)
                        else:
                            add(tfp, fp, k, encode(t))
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
                    if max_memory is not None and states + out.count >= memory_due:
                        memory_due = states + out.count + CHECK_EVERY
                        if resident_bytes() > max_memory:
                            memory_stop = True
                            gen_stop = k
                            break
                    if states + out.count >= cut_due:
                        # enough candidates for the max_states-th new state, were they all new: count
                        # those really new (the seen file holds the others); once there are enough,
                        # the cut lies among them and the rest of the level is not needed
                        found = out.count - self._old_among(out)
                        if found >= cut_at:
                            break
                        cut_due = states + out.count + cut_at - found
                    if self.progress is not None:
                        now = time.perf_counter()
                        if now - last_report >= self.progress_every:
                            last_report = now
                            self.progress(Progress(states + out.count, d, front.size + out.count, now - start))
            last_pos = k
            ncand, cand_held = out.count, out.held
            self.candidates += ncand
            del cands  # the level's candidate set goes before its arrays are loaded

            # ---- the level's end: which candidates are really new
            cf = np.fromfile(self._path(d + 1, "cfps"), dtype="<i8").astype(np.int64, copy=False)
            nheld = len(cand_held)
            held_fps = cf[:nheld].copy()  # a view would keep the whole array alive
            order = np.argsort(cf)  # the fingerprints are distinct: any sort is the sort
            sorted_c = cf[order]
            del cf
            old_sorted = self._merge_probe(self._path(d - 1, "fps") if d else None, sorted_c)
            is_new = np.ones(ncand, dtype=bool)
            is_new[order[old_sorted]] = False
            del old_sorted
            # positions rise with the candidates: a position's candidate is a binary search away
            pos = (np.memmap(self._path(d + 1, "cpos"), dtype="<i8", mode="r") if ncand
                   else np.empty(0, dtype=np.int64))

            # ---- where Checker stops in this level, if it does
            cut = gen_stop
            if gen_stop is not None and not memory_stop:
                stop = True
            elif memory_stop:
                limit_hit = "memory"
                stop = True
            if max_states is not None:
                j = max(max_states - states, 1)  # Checker stops on the j-th new state
                nth = _nth_true(np, is_new, j)
                at = int(pos[nth]) if nth is not None else None
                # before a stop seen while generating (a violation's step stops before the count is
                # checked; the memory is read after the state's last step, the count before it)
                if at is not None and (gen_stop is None or at < gen_stop or (memory_stop and at <= gen_stop)):
                    cut = at
                    limit_hit = "states"
                    stop = True
            if cut is None:
                cut = last_pos
            kept = is_new
            if cut < last_pos:
                kept = is_new.copy()
                kept[int(np.searchsorted(pos, cut, side="right")):] = False
            states += int(np.count_nonzero(kept))
            for p, names in witnesses:
                if p <= cut:
                    unseen.difference_update(names)
            for name, (p, origin) in level_found.items():
                if p <= cut and name not in origins:
                    if origin[3] == "always" and not is_new[int(np.searchsorted(pos, p))]:
                        continue  # pragma: no cover - an old state breaks no property still unbroken
                    origins[name] = origin
            del pos
            if cut < last_pos:
                transitions, counts = transitions0, counts0
                transitions += self._recount(d, front, cut, set(faults), counts)
            # the parents of the states kept (those up to the cut: a counterexample may end there),
            # sorted by fingerprint
            kept_sorted = kept[order]
            _write_sorted(self._path(d + 1, "fps"), sorted_c[kept_sorted])
            del sorted_c
            chosen = order[kept_sorted]
            del order, kept_sorted
            parents = np.fromfile(self._path(d + 1, "cpar"), dtype="<i8")
            with open(self._path(d + 1, "parents"), "wb") as f:
                for lo in range(0, len(chosen), BLOCK):
                    parents[chosen[lo:lo + BLOCK]].astype("<i8", copy=False).tofile(f)
            del parents, chosen
            self._unlink(d + 1, "cpar", "cpos")
            peak = max(peak, self._disk_bytes())
            if stop:
                break

            # ---- the next level: its states are the new candidates, in generation order
            self._unlink(d, "states", "lens", "cfps")
            new_held = is_new[:nheld]
            front = _Front([t for t, keep in zip(cand_held, new_held.tolist()) if keep], held_fps[new_held].tolist(),
                           nheld, is_new[nheld:].copy(), int(np.count_nonzero(is_new)))
            del cand_held, held_fps, new_held, is_new, kept
            # the window becomes levels d and d+1: level d-1's set leaves it before d+1's is filled
            older, current = current, None
            current = self._fingerprint_set(self._path(d + 1, "fps"))
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

    def _recount(self, level: int, front: _Front, cut: int, faults: set[int], counts: dict[str, int]) -> int:
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


class _Front(NamedTuple):
    """The states of the level being expanded, as :meth:`DiskChecker._states` reads them: the new
    states among its first ``skip`` candidates, held as they are, then the candidates on file
    (``LNNNNN.states``, ``.lens``, and ``.cfps`` past its first ``skip`` fingerprints) that ``mask``
    marks new. One byte a candidate, where offsets, lengths and fingerprints in memory cost 24."""
    held: list[Any]
    held_fps: list[int]
    skip: int
    mask: Any
    size: int


class _Candidates:
    """A level's candidates written down as they come (``count`` so far): fingerprint, parent and
    position to ``LNNNNN.cfps``, ``.cpar`` and ``.cpos`` (little-endian int64), and the encoding of
    each one not held in memory to ``.states`` with its length to ``.lens`` (int32), through flat
    arrays flushed every :data:`CHUNK` candidates: nothing of a level's candidates but their set
    grows in memory."""

    def __init__(self, checker: DiskChecker[Any, Any], level: int) -> None:
        self._checker, self._level = checker, level
        self._files = [open(checker._path(level, kind), "wb", buffering=1 << 20)
                       for kind in ("cfps", "cpar", "cpos", "lens", "states")]
        self._fps, self._parents, self._positions, self._lengths = array("q"), array("q"), array("q"), array("i")
        self._write = self._files[4].write
        self.held: list[Any] = []
        self.count = 0

    def add(self, fp: int, parent: int, position: int, encoded: bytes | None) -> None:
        self._fps.append(fp)
        self._parents.append(parent)
        self._positions.append(position)
        if encoded is not None:
            self._write(encoded)
            self._lengths.append(len(encoded))
        self.count += 1
        if len(self._fps) >= CHUNK:
            self.flush()

    def path(self, kind: str) -> Path:
        return self._checker._path(self._level, kind)

    def flush(self) -> None:
        """Everything added so far into the files (read back while the level is still written)."""
        for arr, f in zip((self._fps, self._parents, self._positions, self._lengths), self._files):
            if arr:
                if _BIG_ENDIAN:
                    arr.byteswap()
                arr.tofile(f)
                del arr[:]
            f.flush()

    def __enter__(self) -> _Candidates:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self.flush()
        finally:
            for f in self._files:
                f.close()


def _merged(np: Any, a_blocks: Iterator[Any], b_blocks: Iterator[Any]) -> Iterator[Any]:
    """The merge of two streams of sorted int64 blocks (each stream sorted as a whole), as sorted
    blocks: everything up to the smaller of the two blocks' last values at a time."""
    a = next(a_blocks, None)
    b = next(b_blocks, None)
    while a is not None and b is not None:
        lim = min(a[-1], b[-1])
        ia = int(np.searchsorted(a, lim, side="right"))
        ib = int(np.searchsorted(b, lim, side="right"))
        out = np.concatenate((a[:ia], b[:ib]))
        out.sort(kind="stable")  # two sorted runs: a linear merge
        yield out
        a = a[ia:] if ia < len(a) else next(a_blocks, None)
        b = b[ib:] if ib < len(b) else next(b_blocks, None)
    for rest, blocks in ((a, a_blocks), (b, b_blocks)):
        if rest is not None:
            yield rest
            yield from blocks


def _fingerprint_set(np: Any, blocks: Iterable[Any]) -> Any:
    """A window table (:func:`new_fingerprint_set`) holding every fingerprint of the int64 arrays
    ``blocks``, filled a block at a time (engine/_fpset.c's straight from each block's buffer)."""
    table = new_fingerprint_set()
    for block in blocks:
        if isinstance(table, dict):
            table.update(dict.fromkeys(block.tolist()))
        else:
            table.update(np.ascontiguousarray(block, dtype=np.int64))
    return table


def _nth_true(np: Any, mask: Any, j: int) -> int | None:
    """The index of the ``j``-th (from 1) true entry of the boolean array ``mask``, or None."""
    before = 0
    for lo in range(0, len(mask), BLOCK):
        part = mask[lo:lo + BLOCK]
        here = int(np.count_nonzero(part))
        if before + here >= j:
            return lo + int(np.flatnonzero(part)[j - before - 1])
        before += here
    return None


def _write_sorted(path: Path, values: Any) -> None:
    """Write the int64 array ``values`` (a level's sorted fingerprints or parents) as the level files
    are: little-endian."""
    values.astype("<i8", copy=False).tofile(path)


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
