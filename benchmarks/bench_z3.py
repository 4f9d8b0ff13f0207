"""Solve times of the symbolic checks (specs/08-symbolic.md).

    python benchmarks/bench_z3.py            # the standard set (a few minutes)
    python benchmarks/bench_z3.py --quick    # smaller bounds (about a minute)

Prints one line per proof: what was checked, the verdict, the solver time, and for BMC and
induction the number of queries. Not part of the test suite; the figures depend on the machine
and on z3's version (shown in the header).
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from collections import Counter

import z3

from isrcheck.inputs import manifest
from isrcheck.invariants.symbolic.bmc import bmc
from isrcheck.invariants.symbolic.houdini import prove_inductive
from isrcheck.invariants.symbolic.selectors import prove_selectors
from isrcheck.invariants.symbolic.transitions import prove_transitions
from isrcheck.invariants.symbolic.verdicts import overall
from isrcheck.model.config import from_mapping


def line(what: str, verdict: str, seconds: float, extra: str = "") -> None:
    print(f"{what:<58} {verdict:<9} {seconds:9.2f} s  {extra}", flush=True)


def verdicts(obs) -> str:
    c = Counter(o.verdict.value for o in obs)
    return ", ".join(f"{n} {k.lower()}" for k, n in sorted(c.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller bounds")
    args = ap.parse_args()
    print(f"z3 {z3.get_version_string()}, Python {platform.python_version()}, {platform.machine()}")
    print(f"{'proof':<58} {'verdict':<9} {'time':>11}")

    # selectors: one query per clause; the per-clause times are tiny, so report the total per bound
    for n in ((4, 8) if not args.quick else (4,)):
        t = time.perf_counter()
        rep = prove_selectors(n, timeout=120, samples=0, exhaustive_brokers=1)
        z3_obs = [o for o in rep.obligations if o.method == "z3"]
        line(f"selectors: {len(z3_obs)} contract clauses, <= {n} brokers", overall(z3_obs).value,
             sum(o.seconds for o in z3_obs), f"(wall {time.perf_counter() - t:.2f} s, slowest clause "
                                              f"{max(o.seconds for o in z3_obs):.3f} s)")
    t = time.perf_counter()
    rep = prove_selectors(3, timeout=120, samples=0, exhaustive_brokers=3)
    enum = [o for o in rep.obligations if o.method == "exhaustive"]
    line("selectors: the Python code on every input <= 3 brokers", overall(enum).value, time.perf_counter() - t)

    # transitions
    t = time.perf_counter()
    rep = prove_transitions(timeout=120)
    moves = [o for o in rep.obligations if o.property.endswith("in its table")]
    invs = [o for o in rep.obligations if o.property.startswith("invariant")]
    line(f"transitions: {len(moves)} operations' moves vs the tables", overall(moves).value,
         sum(o.seconds for o in moves))
    line(f"transitions: {len(invs)} context invariants preserved", overall(invs).value,
         sum(o.seconds for o in invs), verdicts(invs))
    print(f"  (wall {time.perf_counter() - t:.2f} s)")

    # induction
    cases = [("replication (no faults)", manifest.get("replication").config),
             ("hw-truncation-one-crash", manifest.get("hw-truncation-one-crash").config),
             ("leader-crash-kip-320", manifest.get("leader-crash-kip-320").config),
             ("controller-failover, kip-320, fenced writes",  # specs/08-symbolic.md#the-committed-prefix
              from_mapping({"brokers": 3, "replication_factor": 2, "max_records": 2, "generation": "kip-320",
                            "fenced_controller_writes": True, "faults": {"controller_failovers": 1}}))]
    if args.quick:
        cases = [("2 replicas, no faults", from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1})),
                 ("2 replicas, one crash", from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 2,
                                                         "faults": {"crashes": 1}})),
                 ("2 replicas, one crash, kip-320", from_mapping({"brokers": 2, "replication_factor": 2,
                                                                  "max_records": 1, "generation": "kip-320",
                                                                  "faults": {"crashes": 1}}))]
    for label, cfg in cases:
        res = prove_inductive(cfg, timeout=300)
        line(f"inductive: {label}", overall(res.obligations).value, res.seconds,
             f"{res.queries} queries; {verdicts(res.obligations)}")
        for o in res.obligations:
            print(f"    {o.property:<26} {o.verdict.value}")

    # bounded model checking
    runs = [("unclean-election", 4, False), ("clean-election", 6, False), ("hw-truncation-one-crash", 8, True),
            ("controlled-shutdown", 6, False),  # a controller operation (invariants/symbolic/operations.py)
            ("unclean-election-kip-320", 4, False), ("leader-crash-kip-320", 8, False)]  # invariants/symbolic/epochs.py
    if args.quick:
        runs = [("unclean-election", 4, False), ("controlled-shutdown", 4, False),
                ("unclean-election-kip-320", 4, False)]
    for name, depth, first in runs:
        res = bmc(manifest.get(name).config, depth, stop_at_first=first)
        found = [f"{o.property} in {o.counterexample['length']}" for o in res.obligations
                 if o.verdict.value == "REFUTED"]
        line(f"bmc: {name}, depth {depth}{' (first)' if first else ''}", overall(res.obligations).value,
             res.seconds, ", ".join(found) or "no violation")

    # the deposed-controller weaknesses (17 and 20 steps): BMC from the state `tail` steps before the
    # explicit checker's counterexample ends, so that the run stays in minutes
    from isrcheck.invariants import build_model
    from isrcheck.engine.checker import Checker

    for name, tail in ([("deposed-controller-reassignment", 5), ("deposed-controller-ar-write", 5)]
                       if not args.quick else [("deposed-controller-reassignment", 3)]):
        cfg = manifest.get(name).config
        v = Checker(build_model(cfg, symmetry=False)).run().violations[0]
        states = [st.state for st in v.trace if st.state is not None]
        res = bmc(cfg, tail, stop_at_first=True, init_state=states[v.length - tail])
        found = [f"{o.property} in {o.counterexample['length']}" for o in res.obligations
                 if o.verdict.value == "REFUTED"]
        line(f"bmc: {name}, last {tail} of {v.length} steps (first)", overall(res.obligations).value,
             res.seconds, ", ".join(found) or "no violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
