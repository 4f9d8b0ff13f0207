"""The compiled build (mypyc, isrcheck/native.py) against the Python source it is compiled from.

The two must be the same checker: identical state counts, depths, transitions, coverage and
counterexamples (as text, step by step) on the manifest's small models and the peer
transcription. Each build runs in a fresh interpreter (ISRCHECK_PURE=1 for the source).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from isrcheck import native
from native_helpers import run_json

# Small manifest models that between them stop early and run to the end, use symmetry, several
# generations, reassignment, failover, deletion and creation.
MODELS = ["replication", "hw-truncation-one-crash", "clean-election", "unclean-election", "controlled-shutdown",
          "reassignment", "reassignment-target-crash", "controller-failover", "failover-misses-crash",
          "topic-creation", "topic-deletion", "lossy-undetected-restart", "spare-brokers", "lossy-crash",
          "preferred-election", "delayed-requests"]
# ... of which these also run on two workers (the pure build's with the Python fingerprint table):
# one that stops at a counterexample, two run to the end
PARALLEL = ["hw-truncation-one-crash", "reassignment", "clean-election"]

_SNIPPET = """
    import json
    from isrcheck import native
    from isrcheck.inputs import manifest
    from isrcheck.invariants import build_model
    from isrcheck.engine.checker import Checker
    from isrcheck.engine.fptable import new_table
    from isrcheck.engine.parallel import ParallelChecker
    from isrcheck.peers.kafka_specification import PeerModel

    def summary(result):
        return {
            "outcome": result.outcome, "states": result.distinct_states, "depth": result.depth,
            "transitions": result.transitions, "coverage": result.coverage,
            "unwitnessed": result.unwitnessed,
            "violations": [[v.property, v.length, [str(s.action) for s in v.trace],
                            [repr(s.state) for s in v.trace]] for v in result.violations],
        }

    def run(models, parallel):
        out = {"build": native.build(), "table": type(new_table(64, 16)).__name__, "models": {}}
        for name in models:
            e = manifest.get(name)
            model = build_model(e.config, symmetry=e.symmetry)
            out["models"][name] = summary(Checker(model).run())
            if name in parallel:
                out["models"][f"parallel:{name}"] = summary(ParallelChecker(model, workers=2).run())
        for module in ("truncate-to-hw", "kip-320"):
            for symmetry in (False, True):
                peer = PeerModel(module, 2, symmetry)
                out["models"][f"peer:{module}:{symmetry}"] = summary(Checker(peer, stop_on_first=False).run())
        print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def both_builds() -> tuple[dict, dict]:
    snippet = textwrap.dedent(_SNIPPET) + f"\nrun({MODELS!r}, {PARALLEL!r})\n"
    return run_json(snippet, pure=False), run_json(snippet, pure=True)


def test_the_installed_build_is_compiled() -> None:
    """`make` compiles the hot path: a silent fall-back to the source would only be slower, so it
    is checked here (ISRCHECK_BUILD_PURE=1 installs are the one deliberate exception)."""
    if os.environ.get("ISRCHECK_BUILD_PURE"):
        pytest.skip("installed with ISRCHECK_BUILD_PURE=1")
    assert native.build() == "compiled", native.describe()


def test_pure_mode_imports_the_source(both_builds: tuple[dict, dict]) -> None:
    compiled, pure = both_builds
    assert compiled["build"] == "compiled"
    assert pure["build"] == "pure"
    # the parallel workers' shared table: lock-free C, or the Python one under a lock
    assert compiled["table"] == "FingerprintTable"
    assert pure["table"] == "PyFingerprintTable"


@pytest.mark.parametrize("name", PARALLEL)
def test_the_parallel_checker_gives_the_single_result_in_both_builds(both_builds: tuple[dict, dict],
                                                                     name: str) -> None:
    compiled, pure = both_builds
    single = compiled["models"][name]
    assert compiled["models"][f"parallel:{name}"] == single
    assert pure["models"][f"parallel:{name}"] == single


@pytest.mark.parametrize("name", MODELS + [f"peer:{m}:{s}" for m in ("truncate-to-hw", "kip-320") for s in (False, True)])
def test_compiled_and_pure_give_the_same_result(both_builds: tuple[dict, dict], name: str) -> None:
    compiled, pure = both_builds
    assert compiled["models"][name] == pure["models"][name]


def test_a_variant_subclasses_the_compiled_protocol(tmp_path) -> None:
    """Designers' variants are interpreted subclasses of the compiled Protocol: they load, their
    overrides are called by the compiled model, and the verdict changes as it should."""
    proc = subprocess.run(
        [sys.executable, "-m", "isrcheck", "check", "clean-election-isr-shrink",
         "--variant", "examples/variants/eager_election.py:EagerElection"],
        capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    assert "NoCommittedWriteLost" in proc.stdout


def test_describe_names_the_build() -> None:
    assert native.describe().startswith(("compiled", "pure"))
    assert set(native.COMPILED_MODULES) >= {"isrcheck.engine.checker", "isrcheck.model.actions",
                                             "isrcheck.invariants.properties"}


def test_every_module_of_a_compiled_package_is_compiled() -> None:
    """A compiled package's __path__ points under the group library's folder (mypyc), so the import
    system would not find an interpreted module beside its compiled ones: each must be listed."""
    from pathlib import Path

    import tomllib

    root = Path(__file__).resolve().parents[1]
    with open(root / "pyproject.toml", "rb") as f:
        dirs = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    missing = []
    for name in native.COMPILED_MODULES:
        top = max((p for p in dirs if name == p or name.startswith(p + ".")), key=len)
        folder = root / dirs[top] / name[len(top):].lstrip(".").replace(".", "/")
        if (folder / "__init__.py").exists():
            missing += [f"{name}.{f.stem}" for f in sorted(folder.glob("*.py"))
                        if f.stem != "__init__" and f"{name}.{f.stem}" not in native.COMPILED_MODULES]
    assert missing == []


def test_an_edited_source_makes_its_compiled_module_stale(tmp_path) -> None:
    """After an edit, an editable install must not run the old compiled code silently."""
    import hashlib
    import json

    (tmp_path / "model").mkdir()
    source = tmp_path / "model" / "records.py"
    source.write_text("X = 1\n")
    record = tmp_path / "native_build.json"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    record.write_text(json.dumps({"modules": {"isrcheck.model.records": {"source": "model/records.py",
                                                                         "sha256": digest}}}))
    assert native.stale_sources(str(record), str(tmp_path)) == []
    source.write_text("X = 2\n")
    assert native.stale_sources(str(record), str(tmp_path)) == ["isrcheck.model.records"]
    record.write_text("not json")
    assert native.stale_sources(str(record), str(tmp_path)) == []
