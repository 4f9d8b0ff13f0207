"""specs/10-weaknesses.md is generated from checker runs; it must match a fresh run."""
from __future__ import annotations

from pathlib import Path

from isrcheck.inputs import manifest
from isrcheck.analyses.gallery import render_gallery
from isrcheck.specs.weaknesses import load_weaknesses

GALLERY = Path(__file__).resolve().parents[1] / "specs" / "10-weaknesses.md"


def test_gallery_models_exist_and_share_bounds_per_weakness():
    for w in load_weaknesses():
        entries = [manifest.get(n) for n in w.generations]
        assert w.example in w.generations
        assert manifest.get(w.example).expect == "safety_failure"
        sizes = {(e.config.brokers, e.config.replication_factor, e.config.max_records, e.config.faults)
                 for e in entries}
        assert len(sizes) == 1, w.title


def test_gallery_file_is_what_a_fresh_run_generates():
    fresh = render_gallery()
    assert GALLERY.read_text(encoding="utf-8") == fresh, (
        "specs/10-weaknesses.md is stale: run `isrcheck gallery --write specs/10-weaknesses.md`")
