"""Profile the single-process checker on one configuration: where does a check spend its time?

    .venv/bin/python benchmarks/bench_profile.py                       # the "rf2-crashes2" standard
    .venv/bin/python benchmarks/bench_profile.py --standard clean-rf2
    .venv/bin/python benchmarks/bench_profile.py --model unclean-election
    .venv/bin/python benchmarks/bench_profile.py --config '{"brokers": 3}' --max-states 20000
    .venv/bin/python benchmarks/bench_profile.py --output /tmp/check.prof   # for snakeviz & co.

Prints the top functions by cumulative time (what a call costs with everything below it) and by
total time (time spent in the function's own code): the second list is the hot path to optimise.
cProfile slows Python code down by about 2x, unevenly: read shares, not absolute times.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_checker import STANDARD, load_manifest_entry  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--standard", default=None, choices=sorted(STANDARD), help="a standard configuration")
    src.add_argument("--model", metavar="NAME", help="a model of specs/models.toml")
    src.add_argument("--config", metavar="JSON", help="a configuration given inline, as JSON")
    ap.add_argument("--max-states", type=int, default=None, help="stop the check at this many states")
    ap.add_argument("--top", type=int, default=25, help="how many functions to list (default 25)")
    ap.add_argument("--output", metavar="FILE", help="also save the raw profile (pstats format)")
    args = ap.parse_args(argv)

    from isrcheck.invariants import build_model
    from isrcheck.engine.checker import Checker
    from isrcheck.model.config import from_mapping

    symmetry = None
    if args.config:
        name, cfg = "config", json.loads(args.config)
    elif args.model:
        name = args.model
        _, cfg, symmetry = load_manifest_entry(args.model)
    else:
        name = args.standard or "rf2-crashes2"
        cfg = STANDARD[name][2]
    model = build_model(from_mapping(cfg), symmetry=symmetry)
    checker = Checker(model, max_states=args.max_states)

    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    result = checker.run()
    profiler.disable()
    wall = time.perf_counter() - start
    print(f"# {name}: {json.dumps(cfg)}  symmetry={model.symmetry}")
    print(f"# {result.outcome}: {result.distinct_states} states, {result.transitions} transitions, depth "
          f"{result.depth}, {wall:.2f} s under the profiler ({result.distinct_states / wall:,.0f} states/s)")
    if args.output:
        profiler.dump_stats(args.output)
    for order, title in (("cumulative", "by cumulative time"), ("tottime", "by total (own) time")):
        print(f"\n## top {args.top} {title}")
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.strip_dirs().sort_stats(order).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
