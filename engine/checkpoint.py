"""Snapshots of the single-process breadth-first search, so that a run survives a kill.

Why a format of our own: a snapshot is read back by ``--resume``, possibly from a directory
someone else wrote, so it must never be unpickled. It is one file, ``snapshot.isrc`` in the
checkpoint directory, laid out as

    MAGIC (16 bytes) | header length (8 bytes, little-endian) | header (UTF-8 JSON) | body

and the body is three flat sections named with their sizes in the header:

* ``pairs``: the checker's parent map, every visited state as two little-endian signed 64-bit words
  (its fingerprint, its parent's; an initial state is its own parent, as in engine/_parentmap.c),
  so counterexamples found after a resume are still the shortest ones;
* ``lengths``: one little-endian unsigned 32-bit word per frontier state;
* ``frontier``: the frontier's states, each in the model's validating binary ``state_codec``.

The header names what the snapshot is of (``identity``: the model, its configuration, the variant,
the properties, the search's bounds, the codec's schema and this format's version) and where the
search stood (depth, transitions, coverage, the ``sometimes`` properties not yet witnessed, the
violations found so far as fingerprints and action indexes, the time spent), with the SHA-256 of
the body. A reader checks the magic, the header's shape, the sizes, the digest, every frontier
state's encoding and that each one's fingerprint is in the parent map before the search takes any
of it; any failure is a :class:`SnapshotError` with one sentence.

Why between levels only: at a level boundary the queue holds exactly the next level and the parent
map exactly the states up to it, so the snapshot is a consistent cut of the breadth-first search
and a resumed run visits the remaining states in the same order as an uninterrupted one: the same
counts and the same (shortest) counterexamples. Written to a temporary file, fsync'ed, renamed
over the previous one and the directory fsync'ed: a kill at any moment leaves the last complete
snapshot or the one before it, never half of one.

This module is interpreted (not in isrcheck/native.py's list): it runs once a level at most.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The file's first bytes: a snapshot of this engine and no other file.
MAGIC = b"isrcheck-snap\x00\x00\x01"
#: Bumped whenever the layout or the header's meaning changes; an older snapshot is then refused.
FORMAT = 1
FILE_NAME = "snapshot.isrc"
#: A header is a few KiB (the configuration, coverage); anything far larger is not ours.
MAX_HEADER = 64 << 20
#: The default of ``--checkpoint-every``: a snapshot at most once a minute keeps the overhead of
#: writing the parent map (16 bytes a state) to a few percent of the search.
DEFAULT_EVERY = 60.0
#: With an interval above 0, the next snapshot also waits this many times as long as the last one
#: took to write: a snapshot grows with the search (the parent map, the frontier encoded state by
#: state, which the pure build's codec does in Python), and this keeps its cost near 1/20 = 5% of
#: the run whatever the size. ``--checkpoint-every 0`` (every level) is taken at its word.
WRITE_BUDGET = 20.0

#: What a ``--disk`` search's snapshot says of its directory (engine/disk.py): the level whose
#: expansion it starts, the fingerprints in its seen file, the level's candidates on file (not held
#: in memory; its states are those of them marked new), the candidates written and the most bytes
#: on disk so far.
DISK_KEYS = ("level", "seen", "on_file_candidates", "candidates", "disk_peak")

__all__ = ["prepare_search", "snapshot_disk_directory", "DISK_KEYS", "MAGIC", "FORMAT", "FILE_NAME", "DEFAULT_EVERY", "WRITE_BUDGET", "SnapshotError", "Snapshot",
           "Checkpoints", "pairs_of", "absorb_pairs", "identity_difference"]


class SnapshotError(Exception):
    """A snapshot that cannot be resumed: damaged, not ours, or of another run. One sentence,
    reported as one ``error:`` line with exit status 2."""


@dataclass
class Snapshot:
    """Where the search stood at a level boundary (the body's sections decoded lazily by the checker)."""

    identity: dict[str, Any]
    depth: int
    transitions: int
    counts: dict[str, int]
    unseen: list[str]
    #: each {"property", "kind", "fp", "message", "action" (index among the state's actions, or
    #: None for an ``always`` violation), "faulted" (the action raised ModelFault)}
    violations: list[dict[str, Any]]
    limit_hit: str | None
    seconds: float
    states: int
    pairs: bytes = b""
    frontier: list[bytes] = field(default_factory=list)
    #: a ``--disk`` search's snapshot (engine/disk.py): where its level files stand; its parent map
    #: and the frontier past the states held in memory stay in the disk directory, so ``pairs`` is
    #: empty and ``frontier`` holds only those states
    disk: dict[str, int] | None = None
    #: a ``--disk`` search's directory (absolute), so that ``--resume`` alone finds it
    disk_directory: str | None = None


# ---------------------------------------------------------------------- the parent map
def pairs_of(parents: Any) -> bytes:
    """The parent map as little-endian (fingerprint, parent) pairs: engine/_parentmap.c's own
    ``pairs()``, or built from the dict of a pure install (None, an initial state, as the state)."""
    export = getattr(parents, "pairs", None)
    if export is not None:
        raw = export()
        if sys.byteorder == "little":
            return bytes(raw)
        words = array("q")
        words.frombytes(raw)
        words.byteswap()
        return words.tobytes()
    words = array("q")
    for fp, parent in parents.items():
        words.append(fp)
        words.append(fp if parent is None else parent)
    if sys.byteorder != "little":
        words.byteswap()
    return words.tobytes()


def absorb_pairs(parents: Any, pairs: bytes) -> None:
    """Put the pairs of :func:`pairs_of` into a fresh parent map (C or dict)."""
    if sys.byteorder != "little":
        words = array("q")
        words.frombytes(pairs)
        words.byteswap()
        pairs = words.tobytes()
    absorb = getattr(parents, "absorb", None)
    if absorb is not None:
        absorb(pairs)
        return
    words = array("q")
    words.frombytes(pairs)
    it = iter(words)
    for fp, parent in zip(it, it):
        parents[fp] = None if parent == fp else parent


# ---------------------------------------------------------------------- identity
#: The identity's keys, in the order a refusal names the first that differs, with the words it uses.
_IDENTITY_WORDS = (
    ("model", "model differs"),
    ("variant", "variant differs"),
    ("configuration", "configuration differs"),
    ("symmetry", "symmetry setting differs"),
    ("properties", "properties differ"),
    ("search", "search bounds differ"),
    ("codec", "state schema differs"),
    ("format", "snapshot format differs"),
    ("isrcheck", "isrcheck version differs"),
)


def identity_difference(snapshot: Mapping[str, Any], here: Mapping[str, Any]) -> str | None:
    """None when the snapshot's identity is this run's, else a phrase naming the first difference
    (for a configuration, the keys that differ)."""
    for key, words in _IDENTITY_WORDS:
        a, b = snapshot.get(key), here.get(key)
        if a == b:
            continue
        if key == "search" and isinstance(a, dict) and isinstance(b, dict) and a.get("disk") != b.get("disk"):
            return ("it is of a --disk search: resume it with --disk DIR, the directory that run used" if a.get("disk")
                    else "it is of a search in memory: resume it without --disk")
        if key == "variant" and isinstance(a, dict) and isinstance(b, dict) and a.get("name") == b.get("name"):
            return f"its variant's file changed since the snapshot was written ({_short(a)})"
        if isinstance(a, dict) and isinstance(b, dict) and key != "variant":
            a, b = _flat(a), _flat(b)
            keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            shown = ", ".join(f"{k}: {_short(a.get(k))} in the snapshot, {_short(b.get(k))} here" for k in keys[:3])
            more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
            return f"its {words} ({shown}{more})"
        return f"its {words} ({_short(a)} in the snapshot, {_short(b)} here)"
    extra = sorted(set(snapshot) ^ set(here))
    if extra:
        return f"its identity names other fields ({', '.join(extra)})"
    return None


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested table with dotted keys (``faults.crashes``), so that a refusal names the setting."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _short(value: Any) -> str:
    """A value for a one-line refusal: a variant by its name, a long text by its end (the end of a
    path names the file and the class)."""
    if value is None:
        return "none"
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        value = value["name"]
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else "..." + text[-77:]


def prepare_search(ck: Checkpoints, model: Any, search: Mapping[str, Any]) -> Any:
    """What a search in memory (the single process's or the workers') does before it starts with
    ``ck``: the model's state codec, which carries the frontier in a snapshot (refused without one),
    the identity completed with the properties, the codec's schema and the search's bounds, and the
    directory checked. Answers the codec."""
    codec = getattr(model, "state_codec", None)
    if codec is None:
        raise SnapshotError("this model has no binary state codec: its search cannot be checkpointed")
    ck.complete_identity([p.name for p in model.properties()], str(codec.signature), search)
    ck.prepare()
    return codec


# ---------------------------------------------------------------------- the files
class Checkpoints:
    """The checkpoint directory of one search: when a snapshot is due, writing it, reading it back.

    ``identity`` is what a resumed run must share with the snapshot (the caller's: model,
    configuration, variant, properties, symmetry; the checker adds the search's bounds and the
    codec's schema through :meth:`complete_identity`). ``every`` is the least time between two
    snapshots, in seconds (0: at every level boundary).
    """

    def __init__(self, directory: str | os.PathLike[str], identity: Mapping[str, Any], *,
                 every: float = DEFAULT_EVERY, resume: bool = False) -> None:
        self.directory = Path(directory)
        self.identity: dict[str, Any] = dict(identity)
        self.every = every
        self.resume = resume
        self.last = time.monotonic()
        #: snapshots written by this process, and the seconds they took (for the overhead figure)
        self.written = 0
        self.write_seconds = 0.0
        self.last_write = 0.0

    @property
    def path(self) -> Path:
        return self.directory / FILE_NAME

    def complete_identity(self, properties: Sequence[str], codec_signature: str, search: Mapping[str, Any]) -> None:
        """Add what only the engine knows to the identity."""
        self.identity["properties"] = list(properties)
        self.identity["codec"] = codec_signature
        self.identity["search"] = dict(search)
        self.identity["format"] = FORMAT

    def due(self) -> bool:
        """Whether a level boundary now should write a snapshot: ``every`` seconds after the last
        one, and (``every`` > 0) at least WRITE_BUDGET times as long as the last one took."""
        if self.every <= 0:
            return True
        return time.monotonic() - self.last >= max(self.every, WRITE_BUDGET * self.last_write)

    def prepare(self) -> None:
        """Make the directory (a fresh run) or check it holds a snapshot (a resumed one), so that a
        bad directory is refused before the search rather than at its first snapshot."""
        if self.resume:
            if not self.path.is_file():
                raise SnapshotError(f"no snapshot to resume in {self.directory} (no {FILE_NAME}: "
                                    "was the run killed before its first snapshot?)")
            return
        if self.path.exists():
            raise SnapshotError(f"{self.directory} already holds a snapshot: resume it with --resume "
                                f"{self.directory}, or remove {self.path}")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SnapshotError(f"cannot make the checkpoint directory {self.directory}: {e.strerror}") from None
        if not os.access(self.directory, os.W_OK):
            raise SnapshotError(f"cannot write in the checkpoint directory {self.directory}")

    # ------------------------------------------------------------------ writing
    def write(self, snap: Snapshot, frontier: Iterable[Any], encode: Any) -> None:
        """Write ``snap`` with the frontier's states encoded by ``encode``, atomically (with
        ``snap.disk``, the files it names must be on disk, synced, before this is called)."""
        began = time.monotonic()
        encoded = [encode(s) for s in frontier]
        lengths = array("I", [len(b) for b in encoded])
        if sys.byteorder != "little":
            lengths.byteswap()
        sections = [("pairs", snap.pairs), ("lengths", lengths.tobytes()), ("frontier", b"".join(encoded))]
        digest = hashlib.sha256()
        for _, data in sections:
            digest.update(data)
        header = {
            "format": FORMAT,
            "identity": self.identity,
            "depth": snap.depth,
            "states": snap.states,
            "frontier_states": len(encoded),
            "transitions": snap.transitions,
            "counts": snap.counts,
            "unseen": sorted(snap.unseen),
            "violations": snap.violations,
            "limit_hit": snap.limit_hit,
            "seconds": snap.seconds,
            "sections": {name: len(data) for name, data in sections},
            "sha256": digest.hexdigest(),
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        if snap.disk is not None:
            header["disk"] = snap.disk
            if snap.disk_directory is not None:
                header["disk_directory"] = snap.disk_directory
        head = json.dumps(header, sort_keys=True).encode()
        tmp = self.directory / (FILE_NAME + ".tmp")
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            f.write(len(head).to_bytes(8, "little"))
            f.write(head)
            for _, data in sections:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.written += 1
        self.last = time.monotonic()
        self.last_write = self.last - began
        self.write_seconds += self.last_write

    # ------------------------------------------------------------------ reading
    def load(self) -> Snapshot:
        """The snapshot in the directory, validated as far as the file alone allows and checked
        against this run's identity; :class:`SnapshotError` otherwise."""
        return read_snapshot(self.path, self.identity)


def read_snapshot(path: Path, identity: Mapping[str, Any] | None = None) -> Snapshot:
    """The snapshot at ``path`` (the frontier still encoded); ``identity``, when given, must be the
    snapshot's. Never evaluates anything of the file: JSON and flat integer arrays only."""
    where = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SnapshotError(f"cannot read the snapshot {where}: {e.strerror}") from None
    if not data.startswith(MAGIC):
        if data.startswith(MAGIC[:13]):
            raise SnapshotError(f"{where} is a snapshot of another format version: it cannot be resumed "
                                "by this isrcheck")
        raise SnapshotError(f"{where} is not an isrcheck snapshot")
    at = len(MAGIC)
    if len(data) < at + 8:
        raise SnapshotError(f"the snapshot {where} is damaged (truncated header)")
    size = int.from_bytes(data[at:at + 8], "little")
    at += 8
    if size > MAX_HEADER or at + size > len(data):
        raise SnapshotError(f"the snapshot {where} is damaged (header length {size})")
    try:
        header = json.loads(data[at:at + size].decode())
    except (UnicodeDecodeError, ValueError):
        raise SnapshotError(f"the snapshot {where} is damaged (its header is not JSON)") from None
    at += size
    if isinstance(header, dict) and isinstance(header.get("disk"), dict) and "on_file" in header["disk"]:
        raise SnapshotError(f"{where} is a snapshot of an earlier --disk layout (its frontier's offsets in memory, "
                            "before the candidates went to files): it cannot be resumed by this isrcheck")
    try:
        snap, sections, digest = _parse_header(header)
    except (KeyError, TypeError, ValueError) as e:
        raise SnapshotError(f"the snapshot {where} is damaged (its header: {e})") from None
    if identity is not None:
        why = identity_difference(snap.identity, identity)
        if why is not None:
            raise SnapshotError(f"cannot resume from {where}: {why}; start a fresh run with another "
                                "--checkpoint directory, or resume with the snapshot's settings")
    body = memoryview(data)[at:]
    if len(body) != sum(sections.values()):
        raise SnapshotError(f"the snapshot {where} is damaged ({len(body)} bytes of body, "
                            f"its header says {sum(sections.values())})")
    if hashlib.sha256(body).hexdigest() != digest:
        raise SnapshotError(f"the snapshot {where} is damaged (its SHA-256 does not match its header)")
    pairs_len, lengths_len = sections["pairs"], sections["lengths"]
    if pairs_len != (0 if snap.disk is not None else 16 * snap.states):
        raise SnapshotError(f"the snapshot {where} is damaged ({pairs_len} bytes of parent map for "
                            f"{snap.states} states)")
    lengths = array("I")
    if lengths_len % lengths.itemsize:
        raise SnapshotError(f"the snapshot {where} is damaged (frontier lengths)")
    lengths.frombytes(body[pairs_len:pairs_len + lengths_len])
    if sys.byteorder != "little":
        lengths.byteswap()
    if len(lengths) != header["frontier_states"] or sum(lengths) != sections["frontier"]:
        raise SnapshotError(f"the snapshot {where} is damaged (frontier sizes)")
    snap.pairs = bytes(body[:pairs_len])
    blob = body[pairs_len + lengths_len:]
    frontier: list[bytes] = []
    pos = 0
    for n in lengths:
        frontier.append(bytes(blob[pos:pos + n]))
        pos += n
    snap.frontier = frontier
    return snap


def snapshot_disk_directory(directory: str | os.PathLike[str]) -> str | None:
    """The ``--disk`` directory the snapshot in ``directory`` was written by, or None (a search in
    memory, or a snapshot written before snapshots named it); SnapshotError for a file that is not
    a readable snapshot of this isrcheck."""
    path = Path(directory) / FILE_NAME
    try:  # the header only: the body (a parent map of 16 bytes a state) is read by the resume itself
        with open(path, "rb") as f:
            prefix = f.read(len(MAGIC) + 8)
            if len(prefix) < len(MAGIC) + 8 or not prefix.startswith(MAGIC):
                return read_snapshot(path).disk_directory  # not ours, or damaged: said in full there
            size = int.from_bytes(prefix[len(MAGIC):], "little")
            header = json.loads(f.read(min(size, MAX_HEADER)).decode()) if size <= MAX_HEADER else None
    except OSError as e:
        raise SnapshotError(f"cannot read the snapshot {path}: {e.strerror}") from None
    except (UnicodeDecodeError, ValueError):
        header = None
    found = header.get("disk_directory") if isinstance(header, dict) and isinstance(header.get("disk"), dict) else None
    return found if isinstance(found, str) and found else None


def _parse_header(h: Any) -> tuple[Snapshot, dict[str, int], str]:
    """The header's fields, each of the type it must have (ValueError/TypeError/KeyError else)."""
    if not isinstance(h, dict):
        raise TypeError("not an object")
    if h["format"] != FORMAT:
        raise ValueError(f"format {h['format']!r}, this isrcheck reads {FORMAT}")

    def integer(v: Any, what: str) -> int:
        if type(v) is not int or v < 0:
            raise ValueError(f"{what} is not a count")
        return v

    identity = h["identity"]
    counts = h["counts"]
    unseen = h["unseen"]
    violations = h["violations"]
    sections = h["sections"]
    if not isinstance(identity, dict):
        raise TypeError("identity is not an object")
    if not isinstance(counts, dict) or not all(isinstance(k, str) and type(v) is int for k, v in counts.items()):
        raise TypeError("coverage is not a table of counts")
    if not isinstance(unseen, list) or not all(isinstance(n, str) for n in unseen):
        raise TypeError("unseen is not a list of names")
    if not isinstance(violations, list):
        raise TypeError("violations is not a list")
    for v in violations:
        if not isinstance(v, dict) or not isinstance(v["property"], str) or v["kind"] not in ("always", "transition") \
                or type(v["fp"]) is not int or not isinstance(v["message"], str) \
                or not (v["action"] is None or type(v["action"]) is int) or not isinstance(v["faulted"], bool):
            raise TypeError("a violation is malformed")
    if not isinstance(sections, dict) or sorted(sections) != ["frontier", "lengths", "pairs"]:
        raise TypeError("sections are not pairs, lengths, frontier")
    for k in sections:
        integer(sections[k], f"section {k}")
    limit = h["limit_hit"]
    if limit not in (None, "depth", "states", "memory"):
        raise ValueError("limit_hit is unknown")
    seconds = h["seconds"]
    if not isinstance(seconds, (int, float)) or seconds < 0:
        raise ValueError("seconds is not a duration")
    digest = h["sha256"]
    if not isinstance(digest, str) or len(digest) != 64:
        raise ValueError("sha256 is not a digest")
    integer(h["frontier_states"], "frontier_states")
    disk = h.get("disk")
    if disk is not None:
        if not isinstance(disk, dict) or sorted(disk) != sorted(DISK_KEYS):
            raise TypeError("disk is not the table of a --disk search")
        disk = {k: integer(disk[k], f"disk.{k}") for k in DISK_KEYS}
    directory = h.get("disk_directory")
    if directory is not None and (disk is None or not isinstance(directory, str) or not directory):
        raise TypeError("disk_directory is not the directory of a --disk search")
    snap = Snapshot(identity=identity, depth=integer(h["depth"], "depth"),
                    transitions=integer(h["transitions"], "transitions"), counts=dict(counts), unseen=list(unseen),
                    violations=list(violations), limit_hit=limit, seconds=float(seconds),
                    states=integer(h["states"], "states"), disk=disk, disk_directory=directory)
    return snap, {k: int(v) for k, v in sections.items()}, digest
