"""The on-disk layout of an exploration run (``isrcheck spark explore --out DIR``), read and written
with pyarrow so that the driver never needs Spark for it.

```
DIR/run.json          what is explored: model label, configuration, symmetry, codec signature,
                      fingerprint scheme, tool version (a resume must match it)
DIR/progress.json     the committed levels with their counts, and the result once finished
DIR/levels/00000/     level 0 (the initial states) as Parquet
DIR/levels/00001/     level 1, ...
DIR/levels/00007.staging/   a level being written; never read, removed on resume
DIR/levels/00007.maps/      a Spark level's map output (per frontier shard); kept on resume, removed once the level is done
DIR/levels/stretch-00012-ID/ where the tasks of a resident stretch meet; removed when it ends, and on resume
```

A level computed on Spark is one ``part-PPPPP.parquet`` per shard of fingerprints and the shards'
seen sets (``_seen-PPPPP.npy``); an in-process level is one ``part-00000.parquet`` (:mod:`.shards`).
A level of a resident stretch (:mod:`.resident`) is one ``task-TTTTT.parquet`` per task, without
seen files, except the stretch's last: one ``part-PPPPP-TTTTT.parquet`` per shard and task, and
the seen files.

A level is committed when ``progress.json`` lists it; ``progress.json`` is replaced atomically
(write to a temporary file, then rename), after the level's directory is complete. Anything beyond
the committed levels is debris of an interrupted run and is deleted on ``--resume``.

Every level has the columns of :data:`.shards.LEVEL_SCHEMA` (specs/09-pipeline.md).
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from isrcheck.specs.inputs import Kind, check_json_depth, read_text

from .errors import PipelineError
from .shards import LEVEL_SCHEMA, has_seen, seen_path, shard_files, shard_one

FORMAT = 2  # 2: the key column and sharded levels


LEVEL_DDL = ("fingerprint long, parent long, prank long, aidx int, action string, depth int, rank long, "
             "state binary, broken array<string>, key binary")


def _atomic_write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def codec_id() -> str:
    """The state codec as run directories record it: the binary codec's format and schema signature."""
    from isrcheck.model.statecodec import kafka_state_codec

    return f"binary-1:{kafka_state_codec().signature}"


def check_codec(recorded: Any, where: str) -> None:
    """A one-line :class:`PipelineError` unless states recorded with codec ``recorded`` can be read here."""
    current = codec_id()
    if recorded != current:
        raise PipelineError(f"{where}: its states are encoded with codec {recorded!r} and this isrcheck reads "
                            f"codec {current!r} (the encoding or the state classes changed); explore again")


class RunStore:
    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.levels_dir = self.out / "levels"

    # ------------------------------------------------------------------ metadata
    @property
    def meta_path(self) -> Path:
        return self.out / "run.json"

    @property
    def progress_path(self) -> Path:
        return self.out / "progress.json"

    def exists(self) -> bool:
        return self.meta_path.exists()

    def create(self, meta: dict[str, Any]) -> None:
        if self.out.exists() and not self.out.is_dir():
            raise PipelineError(f"{self.out}: exists and is not a directory")
        if self.exists():
            raise PipelineError(f"{self.out}: already holds an exploration run; add --resume to continue it, "
                                "or choose another --out")
        if self.out.exists() and any(self.out.iterdir()):
            raise PipelineError(f"{self.out}: directory is not empty and holds no exploration run")
        self.levels_dir.mkdir(parents=True, exist_ok=True)
        _atomic_write_json(self.meta_path, {"format": FORMAT, **meta})
        self.write_progress({"levels": [], "finished": False})

    def load_meta(self) -> dict[str, Any]:
        try:
            meta = _read_json(self.meta_path)
        except FileNotFoundError:
            raise PipelineError(f"{self.out}: no exploration run to resume (no run.json)") from None
        except (OSError, ValueError) as e:  # InputError (not a regular file, too large, too deep) too
            raise PipelineError(f"{self.out}/run.json: unreadable: {e}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise PipelineError(f"{self.out}/run.json: not a run of this version of isrcheck")
        check_codec(meta.get("codec"), f"{self.out}")
        return meta

    def read_progress(self) -> dict[str, Any]:
        try:
            p = _read_json(self.progress_path)
        except FileNotFoundError:
            return {"levels": [], "finished": False}
        except (OSError, ValueError) as e:
            raise PipelineError(f"{self.out}/progress.json: unreadable: {e}") from None
        if not isinstance(p, dict) or not isinstance(p.get("levels"), list):
            raise PipelineError(f"{self.out}/progress.json: malformed")
        return p

    def write_progress(self, progress: dict[str, Any]) -> None:
        _atomic_write_json(self.progress_path, progress)

    # ------------------------------------------------------------------ levels
    def level_dir(self, depth: int) -> Path:
        return self.levels_dir / f"{depth:05d}"

    def staging_dir(self, depth: int) -> Path:
        return self.levels_dir / f"{depth:05d}.staging"

    def clean_uncommitted(self, committed: int) -> list[str]:
        """Remove every level directory beyond the first ``committed`` ones, and staging debris."""
        removed = []
        if not self.levels_dir.exists():
            return removed
        for p in sorted(self.levels_dir.iterdir()):
            name = p.name
            # the next level's map output stays: the shards a killed run finished are not redone
            keep = (name.isdigit() and int(name) < committed) or name == f"{committed:05d}.maps"
            if not keep:
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                removed.append(name)
        return removed

    def commit_staging(self, depth: int) -> None:
        final = self.level_dir(depth)
        if final.exists():
            shutil.rmtree(final)
        os.replace(self.staging_dir(depth), final)

    def discard_staging(self, depth: int) -> None:
        shutil.rmtree(self.staging_dir(depth), ignore_errors=True)

    def write_level(self, depth: int, columns: dict[str, Sequence[Any]]) -> None:
        """Write a level from Python columns (the in-process path), staged then renamed."""
        table = pa.Table.from_pydict(dict(columns), schema=LEVEL_SCHEMA)
        staging = self.staging_dir(depth)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        pq.write_table(table, staging / "part-00000.parquet", compression="snappy")  # an in-process level: one file
        self.commit_staging(depth)

    def _dataset(self, depth: int) -> ds.Dataset:
        return ds.dataset(str(self.level_dir(depth)), format="parquet")

    def read_level(self, depth: int, columns: Sequence[str]) -> pa.Table:
        return self._dataset(depth).to_table(columns=list(columns))

    def read_frontier(self, depth: int, decode: Any) -> tuple[list[tuple[int, int, Any]], list[bytes]]:
        """(fingerprint, rank, state) of a level in key order, states decoded, ranks their positions
        (a Spark level stores no ranks), and the keys beside them."""
        t = self.read_level(depth, ["fingerprint", "key", "state"])
        t = t.sort_by([("key", "ascending")])
        fps = t.column("fingerprint").to_pylist()
        states = t.column("state").to_pylist()
        return [(f, r, decode(s)) for r, (f, s) in enumerate(zip(fps, states))], t.column("key").to_pylist()

    def seen_level(self, depth: int) -> int | None:
        """The last level up to ``depth`` whose directory holds the shards' seen sets (the last
        level computed on Spark), or None."""

        for d in range(depth, -1, -1):
            if has_seen(self.level_dir(d)):
                return d
        return None

    def fingerprints(self, depths: Iterable[int]) -> pa.ChunkedArray:
        arrays = [self.read_level(d, ["fingerprint"]).column("fingerprint") for d in depths]
        chunks = [c for a in arrays for c in a.chunks]
        return pa.chunked_array(chunks, type=pa.int64())

    def lookup(self, depth: int, fingerprint: int) -> dict[str, Any]:
        """The stored row of state ``fingerprint`` in level ``depth``: in a Spark level only its
        shard's file is read (one file per level when a counterexample is walked back)."""

        level = self.level_dir(depth)
        source: ds.Dataset = self._dataset(depth)
        if seen_path(level, 0).exists():
            parts = sum(1 for p in level.iterdir() if p.name.startswith("_seen-"))
            files = shard_files(level, shard_one(fingerprint, parts))
            if not files:
                raise self._missing(depth, fingerprint)
            source = ds.dataset([str(f) for f in files], format="parquet")
        t = source.to_table(filter=pc.field("fingerprint") == fingerprint,
                            columns=["fingerprint", "parent", "aidx", "action", "key"])
        if t.num_rows == 0:
            raise self._missing(depth, fingerprint)
        return {k: t.column(k)[0].as_py() for k in t.column_names}

    def _missing(self, depth: int, fingerprint: int) -> PipelineError:
        return PipelineError(f"{self.out}: state {fingerprint} is missing from level {depth} (the run is damaged)")

    def chain_to(self, depth: int, fingerprint: int) -> list[int]:
        """Fingerprints from an initial state to the state ``fingerprint`` of level ``depth``."""
        chain = [fingerprint]
        fp = fingerprint
        for d in range(depth, 0, -1):
            fp = self.lookup(d, fp)["parent"]
            chain.append(fp)
        chain.reverse()
        return chain


def _read_json(path: Path) -> Any:
    """A state file of a run, read through the bounded reader (regular file, size and nesting
    capped): a hand-edited or foreign file is a one-line error, never a hang or a RecursionError.
    A missing file stays a FileNotFoundError, which the callers answer."""
    if not os.path.lexists(path):
        raise FileNotFoundError(path)
    text = read_text(path, Kind.PIPELINE)
    check_json_depth(text, str(path))
    return json.loads(text)
