"""How a benchmark measures: every figure in a fresh interpreter of its own (a child), so that one
run's memory peak, garbage and warm caches do not leak into the next, and the compiled and the pure
build (ISRCHECK_PURE=1) can be measured from one command. The benchmark script is its own child:
``--child SPEC`` makes it measure SPEC (JSON) and print the figures as one JSON line.

Written once here for bench_checker.py, bench_liveness.py and bench_peer.py (each imports it as a
sibling: a script's folder is the first entry of ``sys.path``)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any


def add_options(ap: argparse.ArgumentParser, max_states: str = "stop every run at this many states") -> None:
    """The options every child-measuring benchmark takes: the bounds of a child (``--max-states``,
    whose meaning ``max_states`` says, and ``--timeout``), ``--json FILE`` (every figure, for
    comparing revisions) and the hidden ``--child SPEC``."""
    ap.add_argument("--max-states", type=int, default=None, help=max_states)
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed to one run (one child)")
    ap.add_argument("--json", metavar="FILE", help="also write every figure to FILE")
    ap.add_argument("--child", metavar="SPEC", help=argparse.SUPPRESS)


def served_as_child(args: argparse.Namespace, measure: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
    """When this process is a child (``--child``), measure its SPEC, print the figures and say so."""
    if not args.child:
        return False
    print(json.dumps(measure(json.loads(args.child))))
    return True


def run_child(script: str, spec: dict[str, Any], timeout: float | None, *, pure: bool = False) -> dict[str, Any]:
    """Run ``script`` as a child measuring ``spec`` (the pure build with ``pure``, else the compiled
    one whatever this process's environment says) and return its figures. A child that fails or
    outlives ``timeout`` seconds raises RuntimeError with one line saying why (its last line of
    stderr), so that a table can show the failure in its row."""
    env = dict(os.environ)
    env.pop("ISRCHECK_PURE", None)
    if pure:
        env["ISRCHECK_PURE"] = "1"
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(script), "--child", json.dumps(spec)],
                              check=False, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"took more than {timeout:g} s (--timeout)") from None
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        raise RuntimeError(lines[-1] if lines else f"exit status {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def finish(path: str | None, results: list[dict[str, Any]], load_start: float | None = None) -> None:
    """The closing line (the load average, without which no figure can be judged) and every figure
    of the run to ``path`` (``--json``), when one was given."""
    start = "" if load_start is None else f"at the start {load_start:.2f}, "
    print(f"# load average {start}at the end {os.getloadavg()[0]:.2f} "
          f"(figures are only comparable on an otherwise idle machine)")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
