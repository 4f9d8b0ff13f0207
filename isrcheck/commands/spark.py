"""``isrcheck spark ...``: the Spark pipeline's commands (registered by isrcheck/cli.py on the
``isrcheck`` group).

Nothing here imports pyspark or pyarrow at import time: ``isrcheck --help`` works without them,
and a pipeline command on a machine without them (or without Java 17) fails with one ``error:``
line and exit status 2, like every other input error.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import click

from isrcheck.commands.options import emit_json, exit_with, json_opt, set_opt
from isrcheck.commands.resources import progress_seconds
from isrcheck.commands.usage import error_line
from isrcheck.inputs import manifest
from isrcheck.invariants.variants import VariantFailure, failure_from_text, variant_option
from isrcheck.model.config import ConfigError
from isrcheck.pipeline.errors import PipelineError
from isrcheck.render import json_form, tablefit, tables, terminal
from isrcheck.specs.actions import ActionSyntaxError
from isrcheck.specs.manifest import ManifestError


def _user_errors() -> tuple[type[BaseException], ...]:
    from isrcheck.engine.codec import CodecError

    return (ConfigError, ManifestError, ActionSyntaxError, PipelineError, CodecError)


class _SparkGroup(click.Group):
    """Turns input errors into ``error: ...`` (one line) and exit status 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except _user_errors() as e:
            click.echo(error_line(e), err=True)
            ctx.exit(2)
        except (VariantFailure, click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise  # a variant that raised in this process: the main group reports it
        except Exception as e:
            line = failure_from_text(str(e))  # a variant that raised on a worker: Spark reports its text
            if line is None:
                raise
            click.echo(f"error: {line}", err=True)
            ctx.exit(2)


def _descriptions() -> dict[str, str]:
    from isrcheck.invariants import ALL_PROPERTIES

    return {p.name: p.description for p in ALL_PROPERTIES}


def _extension(spec: Any) -> Any:
    """The variant's field declarations of ``spec`` (None for the model's own), for JSON traces."""
    if spec.variant is None:
        return None
    from isrcheck.invariants.variants import load_variant

    return load_variant(spec.variant, search_path=spec.variant_path)(spec.build_config()).extension


def _require_spark() -> None:
    from isrcheck.pipeline.session import check_java, check_pyspark

    check_pyspark()
    check_java()


@contextmanager
def _session(master: str | None, label: str = "spark") -> Iterator[Any]:
    """The Spark session of a command. When stderr is not a terminal (a pipe, a CI log) a line
    on stderr every ISRCHECK_PROGRESS_SECONDS (5 s) says the job is alive and how far its stages
    are, so a 70 s run does not print nothing; a terminal has Spark's own progress bar."""
    _require_spark()
    from isrcheck.pipeline.session import check_master, heartbeat, spark_session

    if master is not None:  # also when a session is already active (the tests', spark-submit's)
        check_master(master)

    with spark_session(master) as spark:
        if terminal.is_terminal(sys.stderr):
            yield spark
            return
        with heartbeat(spark, label, terminal.progress_line, max(progress_seconds(), 0.5)):
            yield spark


def _spec(name: str | None, config_file: str | None, overrides: tuple[str, ...], symmetry: bool | None,
          variant: str | None = None) -> Any:
    from isrcheck.pipeline.spec import ModelSpec

    target = manifest.resolve(name, config_file, overrides)
    label = target.label if target.entry is not None else Path(target.label).stem
    sym = target.symmetry if symmetry is None else symmetry
    return ModelSpec.of(label, target.config, sym, variant or target.variant), target


_model_arg = click.argument("name", required=False, metavar="[MODEL]")
_config_opt = click.option("--config", "config_file", metavar="FILE",
                           help="A configuration file (TOML) instead of a MODEL name.")
_master_opt = click.option("--master", metavar="URL", default=None,
                           help="Spark master (default: spark-submit's when started by it, else local[*]: every core here).")


@click.group("spark", cls=_SparkGroup, context_settings={"help_option_names": ["-h", "--help"]})
def spark() -> None:
    """Distributed exploration, sweeps, swarms, the trace corpus and its analytics, on Spark.

    Local mode (no cluster) by default; --master URL for a cluster. Needs pyspark and Java 17+.
    """


# ---------------------------------------------------------------------------- explore
def _level_table(levels: list[Any]) -> Any:
    from rich import box
    from rich.table import Table

    t = Table(title="Levels", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("depth", "engine", "frontier", "new states", "visited", "transitions", "seconds"):
        t.add_column(col, justify="left" if col == "engine" else "right")
    for x in levels:
        t.add_row(str(x.depth), x.engine, f"{x.frontier:,}", f"{x.new:,}", f"{x.visited:,}", f"{x.transitions:,}",
                  f"{x.seconds:.2f}")
    return t


@spark.command(short_help="Breadth-first exploration on Spark (hybrid, resumable).")
@_model_arg
@_config_opt
@set_opt
@_master_opt
@click.option("--out", "out_dir", metavar="DIR", help="Run directory (Parquet levels); default: a temporary one.")
@click.option("--resume", is_flag=True, help="Continue the run in --out DIR from its last complete level.")
@click.option("--spark-threshold", type=click.IntRange(min=0), default=None, metavar="N",
              help="Run a level on Spark when its frontier has at least N states (default 20000; 0: every level).")
@click.option("--max-depth", type=click.IntRange(min=0), metavar="N", help="Explore at most this many steps deep.")
@click.option("--max-states", type=click.IntRange(min=1), metavar="N",
              help="Stop after this many distinct states (as `isrcheck check --max-states`: outcome incomplete).")
@click.option("--stop-after-levels", type=click.IntRange(min=1), metavar="N",
              help="Compute at most N levels now (resume later with --resume).")
@click.option("--partitions", type=click.IntRange(min=1), metavar="N",
              help="Shards of the states on Spark, fixed for the run (default: twice Spark's cores).")
@click.option("--per-level", is_flag=True,
              help="Run each wide level as a Spark job of its own, its frontier read from files, instead of the "
                   "wide levels together as one job whose tasks keep their states in memory (resident levels: "
                   "Spark must run one task per core at once).")
@click.option("--symmetry/--no-symmetry", default=None, help="Force broker-symmetry reduction on or off.")
@variant_option
@json_opt
def explore(name: str | None, config_file: str | None, overrides: tuple[str, ...], master: str | None,
            out_dir: str | None, resume: bool, spark_threshold: int | None, max_depth: int | None,
            max_states: int | None, stop_after_levels: int | None, partitions: int | None, per_level: bool,
            symmetry: bool | None, variant: str | None, as_json: bool) -> None:
    """Explore every reachable state of MODEL (or --config FILE) level by level, each level stored as
    Parquet; wide levels run on Spark, narrow ones in-process. Consecutive wide levels are one Spark
    job whose tasks keep their states in memory from level to level (--per-level: a job per level).
    The verdict, state count, depth and counterexample length are those of `isrcheck check`."""
    from isrcheck.pipeline.session import LazySession, check_pyspark

    check_pyspark()
    from isrcheck.pipeline.explore import DEFAULT_SPARK_THRESHOLD, Explorer

    if master is not None:  # refused now, not after the in-process levels
        from isrcheck.pipeline.session import check_master

        check_master(master)
    if resume and not out_dir:
        raise PipelineError("--resume needs --out DIR (the run to continue)")
    if stop_after_levels and not out_dir:
        raise PipelineError("--stop-after-levels needs --out DIR (to resume from)")
    spec, target = _spec(name, config_file, overrides, symmetry, variant)
    threshold = DEFAULT_SPARK_THRESHOLD if spark_threshold is None else spark_threshold
    temp = None
    if out_dir is None:
        temp = tempfile.mkdtemp(prefix="isrcheck-explore-")
        out = Path(temp) / "run"
    else:
        out = Path(out_dir)
    show = not as_json or not terminal.is_terminal(sys.stderr)  # on a pipe: with --json too, as gate
    console = terminal.make_console(stderr=True)

    def on_level(stats: Any) -> None:
        if show:
            rate = stats.new / stats.seconds if stats.seconds > 0 else 0.0
            console.print(f"level {stats.depth:>3} [{stats.engine:5}] frontier {stats.frontier:>9,} -> "
                          f"new {stats.new:>9,}  visited {stats.visited:>10,}  {stats.seconds:6.2f} s  "
                          f"{rate:>9,.0f} states/s" + _jobs_text(stats)
                          + (f"  {stats.reused_map_shards} map shard(s) reused" if stats.reused_map_shards else ""),
                          highlight=False,
                          markup=False)  # "[spark]" is the engine, not a style

    try:
        session = LazySession(master)
        if threshold <= 1:  # every level on Spark: fail early when Spark cannot start
            _require_spark()
        ex = Explorer(spec, out, spark_threshold=threshold, session=session, resume=resume, max_depth=max_depth,
                      max_states=max_states, stop_after_levels=stop_after_levels, on_level=on_level,
                      partitions=partitions, resident=not per_level)
        with _level_heartbeat(session, show and not terminal.is_terminal(sys.stderr)):
            res = ex.run()
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    result = res.result
    if as_json:
        obj = json_form.result_to_json(spec.label, target.config, result, _extension(spec))
        obj.update({
            "mode": "spark-explore",
            "levels": [{k: getattr(x, k) for k in ("depth", "engine", "frontier", "new", "visited", "transitions",
                                                    "seconds", "jobs", "reused_map_shards", "resident")}
                       for x in res.levels],
            "spark_levels": res.spark_levels, "out": None if temp else str(out), "resumed_at": res.resumed_at,
            "finished": res.finished, "spark_threshold": threshold,
            "spark": session.info,  # master and executors, when a level ran on Spark
        })
        emit_json(obj)
    else:
        out_console = terminal.make_console()
        out_console.print(f"[bold]{spec.label}[/bold]  {tables.config_line(target.config)}"
                          f"  symmetry={'on' if spec.symmetry else 'off'}  spark-threshold={threshold}", highlight=False)
        out_console.print(_level_table(res.levels))
        desc = _descriptions()
        for v in result.violations:
            tablefit.print_wide(out_console, tables.violation_table(v, desc.get(v.property, "")))
            out_console.print()
        for item in tables.check_summary(spec.label, result):
            out_console.print(item)
        if not res.finished:
            out_console.print(f"stopped after {stop_after_levels} level(s); continue with --resume --out {out}",
                              highlight=False)
    exit_with(0 if result.outcome == "success" else 1)


def _jobs_text(stats: Any) -> str:
    """What a Spark level cost in jobs: its own job, or a level of a resident stretch (one job for
    the stretch, counted on its first level)."""
    if stats.engine != "spark":
        return ""
    if stats.resident:
        return f"  {stats.jobs} job(s), resident" if stats.jobs else "  resident"
    return f"  {stats.jobs} job(s)"


@contextmanager
def _level_heartbeat(session: Any, on: bool) -> Iterator[None]:
    """On a pipe, a line every ISRCHECK_PROGRESS_SECONDS while a level is computed (a wide Spark
    level can take minutes and the level lines come only at its end): the time so far, in-process
    until the lazy session has started, then its active stages' task counts."""
    if not on:
        yield
        return
    from isrcheck.pipeline.session import heartbeat

    with heartbeat(None, "spark explore", terminal.progress_line, max(progress_seconds(), 0.5),
                   current=lambda: session.current):
        yield


# ---------------------------------------------------------------------------- sweep
@spark.command(short_help="One complete check per point of a grid, in parallel.")
@click.option("--grid", "grid_file", required=True, metavar="FILE", help="The grid (TOML; see specs/09-pipeline.md).")
@_master_opt
@click.option("--out", "out_dir", metavar="DIR", help="Write the results table as Parquet here.")
@variant_option
@json_opt
def sweep(grid_file: str, master: str | None, out_dir: str | None, variant: str | None, as_json: bool) -> None:
    """Check every configuration of a grid (base configuration x lists of values per key); each
    point is one Spark task running the single-process checker. Exit 0 when every point succeeds."""
    _require_spark()
    from isrcheck.pipeline.sweep import load_grid, run_sweep

    grid = load_grid(grid_file, lambda name: dict(manifest.get(name).raw_config))
    from isrcheck.invariants.variants import resolve_variant

    resolve_variant(variant)  # a bad --variant is an input error before Spark starts
    from isrcheck.pipeline.session import session_info

    with _session(master, "spark sweep") as spark_:
        rows = run_sweep(spark_, grid, out_dir, variant=variant)
        info = session_info(spark_)
    if as_json:
        emit_json({"grid": grid_file, "keys": grid.keys, "spark": info, "rows": [
            {**{k: r[k] for k in ("index", "outcome", "property", "length", "states", "depth", "transitions",
                                  "seconds", "unwitnessed", "limit_hit")}, "values": r["values"]} for r in rows]})
    else:
        from rich import box
        from rich.table import Table

        t = Table(title=f"Sweep {grid_file}", box=box.SIMPLE_HEAD, title_justify="left")
        for k in grid.keys:
            t.add_column(k)
        for c in ("outcome", "property", "length", "states", "seconds"):
            t.add_column(c, justify="right" if c in ("length", "states", "seconds") else "left")
        for r in rows:
            t.add_row(*[json.dumps(r["values"][k]) for k in grid.keys],
                      tables.outcome_text(r["outcome"]), r["property"] or "", "" if r["length"] is None else str(r["length"]),
                      f"{r['states']:,}", f"{r['seconds']:.2f}")
        console = terminal.make_console()
        console.print(t)
        if out_dir:
            console.print(f"results: {out_dir} (Parquet)", highlight=False)
    exit_with(0 if all(r["outcome"] == "success" for r in rows) else 1)


# ---------------------------------------------------------------------------- swarm
@spark.command(short_help="Many seeded random walks over Spark tasks.")
@_model_arg
@_config_opt
@set_opt
@_master_opt
@click.option("--walks", type=click.IntRange(min=1), default=1000, show_default=True, metavar="N")
@click.option("--seed", type=int, default=0, show_default=True, metavar="S",
              help="Run seed; task i walks with a seed derived from (S, i).")
@click.option("--tasks", type=click.IntRange(min=1), default=8, show_default=True, metavar="N",
              help="Spark tasks to split the walks over (part of what a seed reproduces).")
@click.option("--max-depth", type=click.IntRange(min=1), default=100, show_default=True, metavar="N")
@click.option("--symmetry/--no-symmetry", default=None)
@click.option("--out", "out_dir", metavar="DIR", help="Write the per-task table as Parquet here.")
@variant_option
@json_opt
def swarm(name: str | None, config_file: str | None, overrides: tuple[str, ...], master: str | None, walks: int,
          seed: int, tasks: int, max_depth: int, symmetry: bool | None, out_dir: str | None, variant: str | None,
          as_json: bool) -> None:
    """Random walks through MODEL (or --config FILE), spread over Spark tasks: finds bugs in models too
    large to exhaust, proves nothing. The same seed and --tasks give the same result."""
    _require_spark()
    from isrcheck.pipeline.swarm import run_swarm

    spec, target = _spec(name, config_file, overrides, symmetry, variant)
    with _session(master, "spark swarm") as spark_:
        res = run_swarm(spark_, spec, walks=walks, seed=seed, tasks=tasks, max_depth=max_depth)
        if out_dir:
            rows = [{"task": r["task"], "seed": r["seed"], "walks": r["walks"], "steps": r["steps"],
                     "deepest": r["deepest"], "seconds": r["seconds"],
                     "property": r["violation"]["property"] if r["violation"] else None,
                     "length": r["violation"]["length"] if r["violation"] else None} for r in res.tasks]
            spark_.createDataFrame(rows, "task int, seed long, walks int, steps long, deepest int, seconds double, "
                                         "property string, length int").coalesce(1).write.mode("overwrite").parquet(out_dir)
    shortest = res.violations[0] if res.violations else None
    if as_json:
        emit_json({
            "model": spec.label, "mode": "spark-swarm", "outcome": res.outcome, "seed": seed, "tasks": len(res.tasks),
            "walks": res.walks, "steps": res.steps, "distinct_states": res.distinct_states,
            "violations_found": len(res.violations),
            "shortest": None if shortest is None else json_form.violation_to_json(shortest, _extension(spec)),
            "task_results": [{k: r[k] for k in ("task", "seed", "walks", "steps", "deepest")} | {
                "property": r["violation"]["property"] if r["violation"] else None,
                "length": r["violation"]["length"] if r["violation"] else None} for r in res.tasks],
            "coverage": res.coverage, "witnessed": res.witnessed, "unwitnessed": res.unwitnessed,
            "seconds": round(res.seconds, 6), "config": target.config.to_dict(),
        })
    else:
        console = terminal.make_console()
        console.print(f"[bold]{spec.label}[/bold]  {tables.config_line(target.config)}  seed={seed} tasks={len(res.tasks)}",
                      highlight=False)
        if shortest is not None:
            tablefit.print_wide(console, tables.violation_table(shortest, _descriptions().get(shortest.property, "")))
        console.print(tables.coverage_table(res.coverage))
        console.print(tables.outcome_text(res.outcome, simulated=True))
        console.print(f"{res.walks:,} walks, {res.steps:,} steps, {res.distinct_states:,} distinct states, "
                      f"{len(res.violations)} task(s) found a violation"
                      + (f"; shortest: {shortest.property} in {shortest.length}" if shortest else "")
                      + (f"; never witnessed: {', '.join(res.unwitnessed)}" if res.unwitnessed else "")
                      + f" ({res.seconds:.1f} s)", highlight=False)
    exit_with(0 if res.outcome == "success" else 1)


# ---------------------------------------------------------------------------- traces
@spark.command(short_help="Generate a corpus of regression traces (partitioned Parquet).")
@_model_arg
@_config_opt
@set_opt
@_master_opt
@click.option("--count", type=click.IntRange(min=1), required=True, metavar="N", help="Number of traces.")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="The corpus directory (created or extended).")
@click.option("--mode", type=click.Choice(["exhaustive", "random"]), default="random", show_default=True,
              help="exhaustive: shortest paths to the deepest states of a full search; random: seeded walks.")
@click.option("--seed", type=int, default=0, show_default=True, metavar="S")
@click.option("--max-depth", type=click.IntRange(min=1), default=50, show_default=True, metavar="N",
              help="Longest random walk.")
@click.option("--max-states", type=click.IntRange(min=1), default=200_000, show_default=True, metavar="N",
              help="Largest exhaustive search.")
@click.option("--symmetry/--no-symmetry", default=None)
@variant_option
@json_opt
def traces(name: str | None, config_file: str | None, overrides: tuple[str, ...], master: str | None, count: int,
           out_dir: str, mode: str, seed: int, max_depth: int, max_states: int, symmetry: bool | None,
           variant: str | None, as_json: bool) -> None:
    """Write COUNT traces of MODEL into the corpus --out DIR, one row per step (schema in
    specs/09-pipeline.md), partitioned by generation, model and mode."""
    _require_spark()
    from isrcheck.pipeline.traces import generate

    spec, _ = _spec(name, config_file, overrides, symmetry, variant)
    with _session(master, "spark traces") as spark_:
        res = generate(spark_, spec, out_dir, count=count, mode=mode, seed=seed, max_depth=max_depth,
                       max_states=max_states)
    obj = {"corpus": str(res.out), "model": spec.label, "generation": spec.generation, "mode": mode,
           "traces": res.traces, "steps": res.steps, "violating_traces": res.violating,
           "searched_states": res.searched, "search_complete": res.complete, "seconds": round(res.seconds, 6)}
    if as_json:
        emit_json(obj)
    else:
        extra = "" if res.searched is None else (f" from a search of {res.searched:,} states"
                                                 + ("" if res.complete else " (stopped at --max-states)"))
        click.echo(f"{res.out}: {res.traces} {mode} traces of {spec.label} ({spec.generation}), {res.steps} steps, "
                   f"{res.violating} breaking a property{extra} ({res.seconds:.1f} s)")


# ---------------------------------------------------------------------------- analyze
@spark.command(short_help="Coverage and property statistics of a trace corpus.")
@click.argument("corpus", metavar="CORPUS")
@_master_opt
@click.option("--out", "out_dir", metavar="DIR", help="Write the tables (Parquet) and summary.txt here.")
@json_opt
def analyze(corpus: str, master: str | None, out_dir: str | None, as_json: bool) -> None:
    """Action and state-machine coverage, properties exercised and violated (and never), trace-length
    distribution and a per-generation comparison of the corpus CORPUS."""
    from isrcheck.pipeline.traces import check_corpus

    check_corpus(corpus)
    _require_spark()
    from isrcheck.pipeline.analyze import analyze as run_analysis
    from isrcheck.pipeline.analyze import summary_text, write_analysis

    with _session(master, "spark analyze") as spark_:
        a = run_analysis(spark_, corpus)
        text = summary_text(a)
        if out_dir:
            write_analysis(spark_, a, out_dir, text)
    if as_json:
        emit_json({"corpus": corpus, "traces": a.traces, "steps": a.steps, "distinct_states": a.distinct_states,
                    "actions": a.actions, "transitions": a.transitions, "properties": a.properties,
                    "depths": a.depths, "generations": a.generations})
    else:
        click.echo(text, nl=False)


# ---------------------------------------------------------------------------- query
@spark.command(short_help="Spark SQL over the states of a corpus or an exploration run.")
@click.argument("source", metavar="CORPUS")
@click.argument("sql", metavar="SQL")
@_master_opt
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, metavar="N",
              help="Print at most N rows.")
@json_opt
def query(source: str, sql: str, master: str | None, limit: int, as_json: bool) -> None:
    """Run SQL over the views steps, states, partitions and replicas of CORPUS (a trace corpus, or the
    --out DIR of `isrcheck spark explore`). See specs/09-pipeline.md for the columns."""
    from isrcheck.pipeline.analyze import _is_run_dir
    from isrcheck.pipeline.traces import check_corpus

    if not (Path(source).is_dir() and _is_run_dir(Path(source))):
        check_corpus(source)
    _require_spark()
    from isrcheck.pipeline.analyze import run_query

    with _session(master, "spark query") as spark_:
        cols, rows = run_query(spark_, source, sql, limit)
    if as_json:
        emit_json({"columns": cols, "rows": rows})
        return
    from rich import box
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD)
    for c in cols:
        t.add_column(c)
    for r in rows:
        t.add_row(*[json.dumps(v) if isinstance(v, (list, dict)) else str(v) for v in r])
    console = terminal.make_console()
    console.print(t)
    console.print(f"{len(rows)} row(s)" + (f" (at most {limit})" if len(rows) >= limit else ""), highlight=False)


# ---------------------------------------------------------------------------- conform
@spark.command(short_help="Replay a trace corpus against the implementation, in parallel.")
@click.argument("corpus", metavar="CORPUS")
@_master_opt
@click.option("--out", "out_dir", metavar="DIR",
              help="Write the per-trace results (Parquet, results/) and summary.txt here (a new directory).")
@click.option("--model", "models", multiple=True, metavar="NAME", help="Only the traces of this model (repeatable).")
@click.option("--generation", "generations", multiple=True, metavar="G", help="Only this generation (repeatable).")
@click.option("--mode", "modes", multiple=True, type=click.Choice(["exhaustive", "random"]),
              help="Only the traces of this mode (repeatable).")
@click.option("--mutant", metavar="MODULE:ATTR",
              help="A planted bug: a context manager patching the implementation, entered on the workers "
                   "(a module importable there, or a path to a .py file).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the implementation's simulator.")
@click.option("--batch-size", type=click.IntRange(min=1), default=5000, show_default=True, metavar="N",
              help="Traces per Spark job (progress is shown after each).")
@variant_option
@json_opt
def conform(corpus: str, master: str | None, out_dir: str | None, models: tuple[str, ...],
            generations: tuple[str, ...], modes: tuple[str, ...], mutant: str | None, seed: int, batch_size: int,
            variant: str | None, as_json: bool) -> None:
    """Replay every trace of CORPUS (written by `isrcheck spark traces`) on the reference implementation,
    comparing its observation with the model's after every step; the traces are spread over Spark
    tasks. Exit 0 when every replayed trace conforms, 1 when one diverges (or nothing was checked)."""
    from isrcheck.pipeline.traces import check_corpus

    check_corpus(corpus)
    _require_spark()
    from isrcheck.pipeline.conform import resolve_mutant, run_conform, summary_text

    resolve_mutant(mutant)  # a bad --mutant is an input error before Spark starts
    from isrcheck.invariants.variants import resolve_variant

    resolve_variant(variant)  # so is a bad --variant (the model side of the replay)
    show = not as_json or not terminal.is_terminal(sys.stderr)  # on a pipe: with --json too, as gate

    def on_batch(b: Any) -> None:
        if show:
            v = b.verdicts
            click.echo(f"batch {b.batch}/{b.batches}: {b.traces:,} traces ({v.get('conforms', 0):,} conform, "
                       f"{v.get('diverges', 0):,} diverge, {v.get('skipped', 0):,} skipped), {b.steps:,} steps, "
                       f"{b.seconds:.1f} s", err=True)

    with _session(master, "spark conform") as spark_:
        run = run_conform(spark_, corpus, out=out_dir, seed=seed, mutant=mutant, batch_size=batch_size,
                          models=models, generations=generations, modes=modes, on_batch=on_batch,
                          variant=variant)
    if as_json:
        emit_json({"corpus": corpus, "ok": run.ok, "traces": run.traces, "steps": run.steps,
                    "verdicts": run.verdicts, "groups": run.groups, "divergences": run.divergences,
                    "batches": [{"batch": b.batch, "traces": b.traces, "verdicts": b.verdicts, "steps": b.steps,
                                 "seconds": round(b.seconds, 6)} for b in run.batches],
                    "out": out_dir, "mutant": run.mutant, "seconds": round(run.seconds, 6)})
    else:
        click.echo(summary_text(run), nl=False)
        if out_dir:
            click.echo(f"results: {out_dir}/results (Parquet), {out_dir}/summary.txt")
    invalid = run.verdicts.get("invalid", 0)
    if invalid:
        first = next(d for d in run.divergences if d["verdict"] == "invalid") if any(
            d["verdict"] == "invalid" for d in run.divergences) else None
        where = f"; first: {first['trace_id']}: {first['message']}" if first else ""
        raise PipelineError(f"{corpus}: {invalid} trace(s) are not valid traces{where}")
    exit_with(0 if run.ok else 1)
