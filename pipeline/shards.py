"""The distributed layout of an exploration: states, the seen set and parent pointers sharded by
fingerprint, and the order keys that let a level skip the global sort.

Why shards: a level on Spark used to cost two to three jobs (an aggregation collected to the
driver, a range-partitioned sort with its sampling job, the write) plus a broadcast of every
fingerprint seen so far, read on the driver. Here every state belongs to one of ``parts`` shards
(:func:`shard_of`, fixed for a run), and a level is one Spark job (:mod:`.explore_spark`): map task
``p`` expands shard ``p`` of the frontier and routes each successor to its fingerprint's shard;
reduce task ``p`` keeps each fingerprint at its smallest key, drops what shard ``p``'s seen set
holds, and writes the shard's new states and its new seen set as files of the level's directory.
Only counts, coverage and the first violation of each shard come back to the driver.

Why path keys: the Checker takes a level's steps in key order (``(rank of the parent, action
index)``, :mod:`isrcheck.engine.explore`), and that order decides which violation comes first,
where ``--max-states`` stops and which shortest counterexample is printed. A dense rank needs a
global sort of every level. The path of action indices from the initial state orders the states
of a level exactly as the ranks do (by induction: comparing ``(parent's path, aidx)`` is comparing
``(parent's rank, aidx)``), needs no sort, and is a byte string that Spark and pyarrow compare
lexicographically: :func:`initial_key` (4 bytes) then :func:`step_key` (2 bytes per step).

Files of a level directory (``levels/NNNNN/``): ``part-PPPPP.parquet`` (the shard's states; one
``part-00000.parquet`` for a level computed in-process; ``task-TTTTT.parquet`` per task in a
resident stretch, :mod:`.resident`, whose last level has ``part-PPPPP-TTTTT.parquet`` per shard
and task) and ``_seen-PPPPP.npy`` (the sorted
fingerprints of every state of shard ``P`` up to this level; written by Spark levels only). Names
that start with ``_`` are skipped by Spark's and pyarrow's Parquet readers.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from pathlib import Path
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .errors import PipelineError

#: the columns of every level of a run directory (specs/09-pipeline.md); here, below the store, since
#: a shard's empty part is a table of them
LEVEL_SCHEMA = pa.schema([
    pa.field("fingerprint", pa.int64(), nullable=False),
    pa.field("parent", pa.int64()),          # null for an initial state
    pa.field("prank", pa.int64()),           # the parent's rank in its level (null at level 0 and in Spark levels)
    pa.field("aidx", pa.int32()),            # the action's index among the parent's (null at level 0)
    pa.field("action", pa.string()),         # the action's text, e.g. Fetch(2, 0) (null at level 0)
    pa.field("depth", pa.int32()),
    pa.field("rank", pa.int64()),            # position in the Checker's queue order (in-process levels; null in Spark levels)
    pa.field("state", pa.binary()),          # the state, encoded by model.codec (codec_id())
    pa.field("broken", pa.list_(pa.string())),  # always-properties the state breaks
    pa.field("key", pa.binary()),            # the Checker's order in the level: the path of action indices (shards.py)
])

INIT_KEY_BYTES = 4
STEP_KEY_BYTES = 2
MAX_AIDX = (1 << (8 * STEP_KEY_BYTES)) - 1
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads fingerprints whose low bits agree


def initial_key(i: int) -> bytes:
    """The key of the ``i``-th initial state."""
    return i.to_bytes(INIT_KEY_BYTES, "big")


def step_key(parent_key: bytes, aidx: int) -> bytes:
    """The key of the state reached by the ``aidx``-th action of the state keyed ``parent_key``."""
    if aidx > MAX_AIDX:
        raise PipelineError(f"a state has more than {MAX_AIDX + 1} enabled actions; the exploration's keys "
                            "hold at most that many")
    return parent_key + aidx.to_bytes(STEP_KEY_BYTES, "big")


def shard_of(fingerprints: np.ndarray, parts: int) -> np.ndarray:
    """The shard of each fingerprint (int64 array), in ``0..parts-1``."""
    with np.errstate(over="ignore"):
        mixed = fingerprints.astype(np.int64, copy=False).view(np.uint64) * _MIX
    return ((mixed >> np.uint64(32)) % np.uint64(parts)).astype(np.int64)


_M64 = (1 << 64) - 1


def shard_one(fingerprint: int, parts: int) -> int:
    """:func:`shard_of` for one fingerprint, in plain Python (a lookup per successor)."""
    return ((((fingerprint & _M64) * 0x9E3779B97F4A7C15) & _M64) >> 32) % parts


def part_path(level_dir: str | Path, p: int) -> Path:
    return Path(level_dir) / f"part-{p:05d}.parquet"


def shard_files(level_dir: str | Path, p: int) -> list[Path]:
    """The files of shard ``p`` in a level with seen files: ``part-PPPPP.parquet`` (a level of its
    own job) or ``part-PPPPP-TTTTT.parquet``, one per task of a resident stretch (:mod:`.resident`)."""
    level = Path(level_dir)
    return sorted(level.glob(f"part-{p:05d}.parquet")) + sorted(level.glob(f"part-{p:05d}-*.parquet"))


def seen_path(level_dir: str | Path, p: int) -> Path:
    return Path(level_dir) / f"_seen-{p:05d}.npy"


def has_seen(level_dir: str | Path) -> bool:
    """Whether a level directory holds the seen sets (it was computed on Spark)."""
    return seen_path(level_dir, 0).exists()


def level_dataset(level_dir: str | Path) -> ds.Dataset:
    return ds.dataset(str(level_dir), format="parquet", ignore_prefixes=[".", "_"])


def replace_file(tmp: Path, final: Path) -> None:
    """Atomic publish of a file a task wrote (a retried task writes the same bytes again)."""
    os.replace(tmp, final)


def temporary_name(final: Path) -> Path:
    """Where a task writes ``final`` before renaming it into place: a hidden name of this host and
    process, so that two attempts of a task (a retry, or a speculative copy on another executor of
    a cluster sharing the run directory) never write the same file."""
    return final.with_name(f".{final.name}.{socket.gethostname()}.{os.getpid()}.tmp")


def write_parquet(table: pa.Table, final: Path) -> None:
    tmp = temporary_name(final)
    pq.write_table(table, tmp, compression="snappy")
    replace_file(tmp, final)


def write_seen(array: np.ndarray, final: Path) -> None:
    tmp = temporary_name(final)
    with open(tmp, "wb") as f:
        np.save(f, array, allow_pickle=False)
    replace_file(tmp, final)


def read_shard(level_dir: str | Path, p: int, parts: int, columns: list[str]) -> pa.Table:
    """Shard ``p`` of a level: its files when the level was written by Spark with seen files
    (:func:`shard_files`), else the rows of the level's files that belong to shard ``p``."""
    if has_seen(level_dir):
        files = shard_files(level_dir, p)
        if not files:
            return _empty(columns)
        return pa.concat_tables([pq.read_table(f, columns=columns) for f in files])
    t = level_dataset(level_dir).to_table(columns=sorted(set(columns) | {"fingerprint"}))
    mask = shard_of(t.column("fingerprint").to_numpy(), parts) == p
    return t.filter(pa.array(mask)).select(columns)


def _empty(columns: list[str]) -> pa.Table:
    return LEVEL_SCHEMA.empty_table().select(columns)


def seen_shard(level_dirs: list[str], seen_dir: str | None, p: int, parts: int) -> np.ndarray:
    """Shard ``p``'s seen set (sorted int64): the snapshot in ``seen_dir`` (the last level computed
    on Spark) and the shard's states of the in-process levels after it (``level_dirs``)."""
    chunks = [np.load(seen_path(seen_dir, p))] if seen_dir is not None else []
    for d in level_dirs:
        fps = level_dataset(d).to_table(columns=["fingerprint"]).column("fingerprint").to_numpy()
        chunks.append(fps[shard_of(fps, parts) == p])
    if not chunks:
        return np.empty(0, dtype=np.int64)
    out = np.concatenate(chunks).astype(np.int64, copy=False)
    out.sort()
    return out


def contains_sorted(sorted_array: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Membership of ``values`` in a sorted array (a boolean mask)."""
    if len(sorted_array) == 0:
        return np.zeros(len(values), dtype=bool)
    pos = np.searchsorted(sorted_array, values)
    pos[pos == len(sorted_array)] = 0
    return sorted_array[pos] == values


class SeenSet:
    """The visited set of an in-process level that follows Spark levels: the shards' seen files
    of the last Spark level, memory-mapped (only the pages a lookup touches are read), plus the
    fingerprints of the in-process levels since, in a Python set. The driver never loads the
    whole seen set."""

    def __init__(self, seen_dir: str | Path, parts: int, recent: Iterable[int] = ()) -> None:
        self.parts = parts
        self.snapshot = [np.load(seen_path(seen_dir, p), mmap_mode="r") for p in range(parts)]
        self.recent: set[int] = set(recent)

    def __contains__(self, fp: object) -> bool:
        if fp in self.recent:
            return True
        if not isinstance(fp, int):
            return False
        arr = self.snapshot[shard_one(fp, self.parts)]
        i = int(np.searchsorted(arr, fp))
        return i < len(arr) and int(arr[i]) == fp

    def update(self, fps: Iterable[int]) -> None:
        self.recent.update(fps)


def sort_by_key(table: pa.Table) -> pa.Table:
    """A table of states in key order (the Checker's queue order within the level)."""
    if table.num_rows == 0:
        return table
    return table.take(pc.sort_indices(table, sort_keys=[("key", "ascending")]))
