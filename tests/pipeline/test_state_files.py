"""The pipeline's own state files (a run's run.json and progress.json, a corpus's marker) are read
through the bounded reader: a FIFO, an oversized or a deeply nested file is a one-line
PipelineError, never a hang, a MemoryError or a RecursionError."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from isrcheck.pipeline.errors import PipelineError
from isrcheck.pipeline.store import RunStore
from isrcheck.pipeline.traces import MARKER, check_corpus

DEEP = "[" * 5000 + "]" * 5000


def _hostile(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "deep":
        path.write_text(DEEP)
    else:
        path.write_bytes(b"{" + b" " * (17 * 1024 * 1024) + b"}")


@pytest.mark.parametrize("kind,message", [("fifo", "not a regular file"), ("deep", "nested deeper"),
                                          ("huge", "larger than")])
def test_a_hostile_run_file_is_a_one_line_error(tmp_path, kind, message):
    store = RunStore(tmp_path)
    _hostile(store.meta_path, kind)
    with pytest.raises(PipelineError, match=message) as e:
        store.load_meta()
    assert "\n" not in str(e.value)
    _hostile(store.progress_path, kind)
    with pytest.raises(PipelineError, match=message):
        store.read_progress()


def test_missing_run_files_keep_their_meaning(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(PipelineError, match="no exploration run to resume"):
        store.load_meta()
    assert store.read_progress() == {"levels": [], "finished": False}


@pytest.mark.parametrize("kind,message", [("fifo", "not a regular file"), ("deep", "nested deeper")])
def test_a_hostile_corpus_marker_is_a_one_line_error(tmp_path, kind, message):
    _hostile(tmp_path / MARKER, kind)
    with pytest.raises(PipelineError, match=message):
        check_corpus(tmp_path)
