"""Conformance speed: how fast the implementation replays the model's traces, and how fast the model
validates the implementation's event logs.

    python benchmarks/bench_conformance.py [--quick] [--model NAME ...]

Replay (steps/s): each step performs one action on the implementation's step-mode simulator, takes
its observation, and compares it with the model's (the model stepped alongside, or the trace's
stored observation); the implementation's observation is checked against specs/observation.toml.

- ``trace``: a counterexample replayed against its stored observations and against the model;
- ``cover``: the edge-covering paths of a model's state graph (graph construction reported apart).

Validation (events/s), each log first recorded from the implementation:

- ``named``: a step-mode simulator run, every step logged with its action and the changed fields;
- ``anonymous``: the same without action names (the validator finds the step from the facts);
- ``coarse``: deliveries, fetches, checkpoints and controller reactions unlogged (up to 8 silent
  steps per event), the other events with a subset of the fields;
- ``auto``: a fault-injection run of the autonomous cores (AutoSimulator), quiet snapshots only;
- ``selflog``: real multi-process cluster runs, every process writing its own event log, the files
  merged by CLOCK_MONOTONIC and validated (merge time reported apart): fault injection (SIGKILL the
  leader, restart, kill the active controller, SIGKILL a follower, acks=all writes) under the
  high-watermark and kip-320 generations; two partitions; two controlled shutdowns (SIGTERM).

Every figure is measured now, on this machine; none is a target.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from isrcheck.inputs import manifest  # noqa: E402
from isrcheck.conformance.cover import build_graph, cover  # noqa: E402
from isrcheck.conformance.eventlog import coarsen, record_simulator, validate_log  # noqa: E402
from isrcheck.conformance.export import counterexample, samples  # noqa: E402
from isrcheck.conformance.replay import conform_trace  # noqa: E402
from isrcheck.conformance.runs import (AutoRun, controlled_shutdowns, fault_injection, self_logged_run,  # noqa: E402
                                       two_partitions)
from isrcheck.conformance.selflog import merge_selflogs  # noqa: E402

COVER = ["replication", "controlled-shutdown", "reassignment", "controller-failover", "delayed-requests",
         "clean-election", "topic-deletion"]
QUICK = ["replication", "controlled-shutdown", "controller-failover"]
SILENT = ("DeliverRequest", "Fetch", "CheckpointHighWatermark", "ProcessBrokerChange", "ResignController")


def _coarse(path: str) -> bool:
    return path.startswith(("partitions[", "brokers[", "acked[")) or path.endswith((".leo", ".hw", ".role"))


def bench_traces(rows: list) -> None:
    for name in ("hw-truncation-one-crash", "reassignment-with-data", "lossy-divergence"):
        t = counterexample(manifest.resolve(name, None))
        for against in ("trace", "model"):
            steps, secs = 0, 0.0
            for _ in range(20):
                r = conform_trace(t, against=against)
                assert r.ok, r.divergence.summary() if r.divergence else r.skipped
                steps += r.matched
                secs += r.seconds
            rows.append(("trace", f"{name} vs {against}", steps, secs))
    for name in ("clean-election", "topic-deletion"):
        steps, secs = 0, 0.0
        for t in samples(manifest.resolve(name, None), n=50, seed=1, max_depth=60):
            r = conform_trace(t, against="model")
            assert r.ok
            steps += r.matched
            secs += r.seconds
        rows.append(("trace", f"{name}: 50 sample paths vs model", steps, secs))


def bench_cover(models: list[str], rows: list) -> None:
    for name in models:
        cfg = manifest.get(name).config
        t = time.perf_counter()
        sg = build_graph(cfg)
        built = time.perf_counter() - t
        r = cover(cfg, "edges", label=name, graph=sg)
        assert r.ok, r.divergence.summary() if r.divergence else r.skipped
        rows.append(("cover", f"{name}: {r.paths} paths, {r.edges_covered}/{r.edges_total} edges, "
                              f"{r.states_covered}/{r.states_total} states (graph {built:.2f} s)", r.steps, r.seconds))


def bench_validation(rows: list, quick: bool) -> None:
    names = ["clean-election", "controller-failover", "two-partitions", "topic-deletion"][: 2 if quick else 4]
    for kind in ("named", "anonymous", "coarse"):
        events, secs = 0, 0.0
        for name in names:
            for seed in range(3 if quick else 8):
                log = record_simulator(manifest.get(name).config, seed=seed, steps=150, anonymous=kind == "anonymous")
                if kind == "coarse":
                    log = coarsen(log, SILENT, _coarse, max_silent=8)
                r = validate_log(log)
                assert r.ok, r.reason
                events += r.explained
                secs += r.seconds
        rows.append(("validate", f"{kind}: simulator logs of {', '.join(names)}", events, secs))
    events, secs = 0, 0.0
    for seed in range(2 if quick else 5):
        run = AutoRun({"brokers": 3, "replication_factor": 3, "max_records": 0, "stale_controller": False}, seed=seed)
        for _ in range(3):
            run.produce(0)
        run.crash(1)
        run.produce(0)
        run.restart(1)
        run.kill_controller()
        run.produce(0)
        r = validate_log(run.log())
        assert r.ok, r.reason
        events += r.explained
        secs += r.seconds
    rows.append(("validate", "auto: AutoSimulator fault-injection runs (quiet snapshots, silent steps)", events, secs))
    bench_selflog(rows, quick)


#: the self-logged runs measured: (label, configuration overrides, scenario)
SELFLOG_RUNS = (("fault injection", {}, fault_injection),
                ("fault injection, kip-320", {"generation": "kip-320"}, fault_injection),
                ("two partitions", {"partitions": 2}, two_partitions),
                ("controlled shutdowns", {}, controlled_shutdowns))


def bench_selflog(rows: list, quick: bool) -> None:
    import tempfile

    runs = 1 if quick else 3
    for label, config, scenario in SELFLOG_RUNS:
        events, secs, merge_secs, lines, cands, run_secs = 0, 0.0, 0.0, 0, 0, 0.0
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="isrcheck-bench-selflog-") as d:
                t = time.perf_counter()
                directory = self_logged_run(d, config=config, scenario=scenario)
                run_secs += time.perf_counter() - t
                t = time.perf_counter()
                merged = merge_selflogs([directory])
                merge_secs += time.perf_counter() - t
                r = validate_log(merged.log)
                assert r.ok, r.reason
                events += r.explained
                secs += r.seconds
                lines += merged.lines
                cands = max(cands, r.max_candidates)
        rows.append(("validate", f"selflog, {label}: {runs} real-cluster run(s) logged by their own processes "
                                 f"({lines} lines, merged in {merge_secs:.2f} s; runs took {run_secs:.1f} s; at "
                                 f"most {cands} candidate states)", events, secs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer models and logs")
    ap.add_argument("--model", action="append", default=[], help="cover this manifest model (repeatable)")
    a = ap.parse_args()
    rows: list = []
    bench_traces(rows)
    bench_cover(a.model or (QUICK if a.quick else COVER), rows)
    bench_validation(rows, a.quick)
    print(f"{'what':9} {'count':>8} {'seconds':>8} {'per second':>11}  detail")
    for what, detail, n, secs in rows:
        unit = "events" if what == "validate" else "steps"
        print(f"{what:9} {n:8d} {secs:8.2f} {n / secs if secs else 0:11,.0f}  {unit}/s  {detail}")


if __name__ == "__main__":
    main()
