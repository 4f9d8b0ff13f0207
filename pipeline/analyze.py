"""``isrcheck spark analyze`` and ``isrcheck spark query``: analytics over a trace corpus, and a
state store queried with Spark SQL.

Analysis (each table also written as Parquet under ``--out``):

- ``actions``: every action of the vocabulary with the steps and traces that take it (0 = never);
- ``transitions``: every move of the partition and replica state machines — the tables'
  (``model/tables.py``) and any other seen — with how often consecutive observations of a trace show
  it; a move of the table never seen has count 0, a move outside the table is flagged;
- ``properties``: per property, the steps that exercised it (each property's ``exercised``
  predicate, :func:`isrcheck.invariants.properties.exercised`), broke it, and for
  sometimes-properties witnessed it; never-exercised properties stand out;
- ``depths``: how many traces have each length;
- ``generations``: per protocol generation, traces, steps, distinct states, violating traces and
  the properties violated.

State store views (``isrcheck spark query``), over a corpus or an exploration run directory:

- ``steps``: the corpus rows as written (a corpus only);
- ``states``: one row per distinct state — model, generation, fingerprint, and ``obs``, the
  observation parsed into nested columns (specs/observation.toml, converted to a Spark schema);
- ``partitions``: one row per (state, partition) — ``model, generation, fingerprint, partition,
  leader, isr, leader_epoch, zk_version, partition_state, exists, replicas, reassignment``;
- ``replicas``: one row per (state, broker, partition) — ``model, generation, fingerprint, broker,
  partition, replica_state, present, leo, hw, leader_epoch, role``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isrcheck.specs.protocol import DEFAULT_GENERATION

from .errors import PipelineError

_LIST = re.compile(r"^list\[(.+)\]$")
_SCALAR_DDL = {"int": "bigint", "bool": "boolean", "string": "string"}

#: An example for the documentation and the tests: partitions whose leader's high watermark is
#: above the smallest log end offset among the ISR's replicas.
HW_ABOVE_ISR_LEO = """
SELECT p.model, p.fingerprint, p.partition, l.hw AS leader_hw, min(m.leo) AS min_isr_leo
FROM partitions p
JOIN replicas l ON l.model = p.model AND l.fingerprint = p.fingerprint
               AND l.partition = p.partition AND l.broker = p.leader
JOIN replicas m ON m.model = p.model AND m.fingerprint = p.fingerprint
               AND m.partition = p.partition AND array_contains(p.isr, m.broker)
GROUP BY p.model, p.fingerprint, p.partition, l.hw
HAVING l.hw > min(m.leo)
""".strip()


def observation_ddl(schema: dict[str, Any] | None = None) -> str:
    """specs/observation.toml as a Spark DDL type (for ``from_json``)."""
    from isrcheck.specs.observation import load_schema

    schema = schema or load_schema()
    objects = {o["name"]: o.get("field", []) for o in schema["object"]}

    def ddl(t: str) -> str:
        m = _LIST.match(t)
        if m:
            return f"array<{ddl(m.group(1))}>"
        if t in _SCALAR_DDL:
            return _SCALAR_DDL[t]
        return "struct<" + ", ".join(f"`{f['name']}`: {ddl(f['type'])}" for f in objects[t]) + ">"

    return ddl(schema["root"])


# ============================================================================ state store
def _is_run_dir(p: Path) -> bool:
    return (p / "run.json").exists() and (p / "levels").is_dir()


def decode_observe_arrow(batches: Any) -> Any:
    """mapInArrow over stored levels: (fingerprint, depth, state) -> (fingerprint, depth, observation)."""
    import pyarrow as pa

    from isrcheck.model.observe import observe

    from isrcheck.model.statecodec import kafka_state_codec

    decode = kafka_state_codec().decode
    schema = pa.schema([("fingerprint", pa.int64()), ("depth", pa.int32()), ("observation", pa.string())])
    for b in batches:
        obs = [json.dumps(observe(decode(s)), separators=(",", ":")) for s in b.column("state").to_pylist()]
        yield pa.RecordBatch.from_arrays([b.column("fingerprint"), b.column("depth"), pa.array(obs, pa.string())],
                                         schema=schema)


def register_views(spark: Any, source: str | Path) -> list[str]:
    """Register the state-store views over a corpus or an exploration run; their names."""
    from pyspark.sql import functions as F

    from .traces import check_corpus

    p = Path(source)
    if p.is_dir() and _is_run_dir(p):
        from .store import RunStore

        store = RunStore(p)
        meta = store.load_meta()
        committed = len(store.read_progress()["levels"])
        if committed == 0:
            raise PipelineError(f"{source}: the exploration run has no committed level yet")
        levels = spark.read.parquet(*[str(store.level_dir(d)) for d in range(committed)])
        raw = (levels.select("fingerprint", "depth", "state")
               .mapInArrow(decode_observe_arrow, "fingerprint long, depth int, observation string")
               .withColumn("model", F.lit(meta["model"]))
               .withColumn("generation", F.lit(meta.get("generation", DEFAULT_GENERATION.value))))
        views = []
    else:
        check_corpus(p)
        steps = spark.read.parquet(str(p))
        steps.createOrReplaceTempView("steps")
        raw = (steps.filter(F.col("observation").isNotNull())
               .dropDuplicates(["model", "generation", "fingerprint"])
               .select("model", "generation", "fingerprint", "observation"))
        views = ["steps"]
    states = raw.withColumn("obs", F.from_json("observation", observation_ddl())).drop("observation")
    states.createOrReplaceTempView("states")
    spark.sql("""
        SELECT s.model, s.generation, s.fingerprint, p.`index` AS partition, p.leader, p.isr, p.leader_epoch,
               p.zk_version, p.partition_state, p.`exists`, p.replicas, p.reassignment
        FROM states s LATERAL VIEW explode(s.obs.partitions) x AS p
    """).createOrReplaceTempView("partitions")
    spark.sql("""
        SELECT s.model, s.generation, s.fingerprint, r.broker, r.partition, r.replica_state, r.present, r.leo,
               r.hw, r.leader_epoch, r.role
        FROM states s LATERAL VIEW explode(s.obs.replicas) x AS r
    """).createOrReplaceTempView("replicas")
    return views + ["states", "partitions", "replicas"]


def run_query(spark: Any, source: str | Path, sql: str, limit: int | None = None) -> tuple[list[str], list[list[Any]]]:
    """Run ``sql`` over the views of ``source``: (column names, rows as JSON-able lists)."""
    from pyspark.errors import PySparkException

    from .session import quiet_python_loggers

    quiet_python_loggers()
    register_views(spark, source)
    try:
        df = spark.sql(sql)
        if limit is not None:
            df = df.limit(limit)
        rows = df.collect()
    except PySparkException as e:
        first = str(e).strip().split("\n")[0]
        m = re.search(r"SQLSTATE: \w+", first)
        if m:
            first = first[:m.end()]
        raise PipelineError(f"query failed: {' '.join(first.split())[:300]}") from None
    cols = df.columns
    return cols, [[_plain(r[c]) for c in cols] for r in rows]


def _plain(v: Any) -> Any:
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return v


# ============================================================================ analysis
@dataclass
class Analysis:
    traces: int
    steps: int
    distinct_states: int
    actions: list[dict[str, Any]] = field(default_factory=list)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    properties: list[dict[str, Any]] = field(default_factory=list)
    depths: list[dict[str, Any]] = field(default_factory=list)
    generations: list[dict[str, Any]] = field(default_factory=list)

    def never(self, table: str, key: str, count: str) -> list[str]:
        return [r[key] for r in getattr(self, table) if not r[count]]


def _table_moves() -> dict[str, set[tuple[str, str]]]:
    from isrcheck.model.tables import PARTITION_VALID_PREVIOUS, REPLICA_VALID_PREVIOUS

    return {
        "partition": {(src.label, dst.label) for dst, srcs in PARTITION_VALID_PREVIOUS.items() for src in srcs},
        "replica": {(src.label, dst.label) for dst, srcs in REPLICA_VALID_PREVIOUS.items() for src in srcs},
    }


def analyze(spark: Any, corpus: str | Path) -> Analysis:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from isrcheck.invariants import ALL_PROPERTIES
    from isrcheck.model.actions import APPLY

    from .traces import check_corpus

    steps = spark.read.parquet(str(check_corpus(corpus))).cache()
    try:
        totals = steps.agg(F.countDistinct("trace_id").alias("t"), F.count(F.lit(1)).alias("s"),
                           F.countDistinct("model", "generation", "fingerprint").alias("d")).collect()[0]
        out = Analysis(int(totals["t"]), int(totals["s"]), int(totals["d"]))
        if out.steps == 0:
            raise PipelineError(f"{corpus}: the corpus holds no trace")

        # -- actions
        seen = {r["action"]: (int(r["n"]), int(r["t"])) for r in
                steps.filter(F.col("action").isNotNull()).groupBy("action")
                .agg(F.count(F.lit(1)).alias("n"), F.countDistinct("trace_id").alias("t")).collect()}
        for name in sorted(set(APPLY) | set(seen)):
            n, t = seen.get(name, (0, 0))
            out.actions.append({"action": name, "steps": n, "traces": t, "in_vocabulary": name in APPLY})

        # -- state-machine transitions, from consecutive observations of a trace
        obs = steps.filter(F.col("observation").isNotNull()).select(
            "trace_id", "step",
            F.from_json("observation", "struct<partitions: array<struct<`index`: bigint, partition_state: string>>, "
                        "replicas: array<struct<broker: bigint, partition: bigint, replica_state: string>>>").alias("o"))
        parts = obs.select("trace_id", "step", F.explode("o.partitions").alias("x")).select(
            "trace_id", "step", F.lit("partition").alias("machine"),
            F.col("x.index").cast("string").alias("subject"), F.col("x.partition_state").alias("state"))
        reps = obs.select("trace_id", "step", F.explode("o.replicas").alias("x")).select(
            "trace_id", "step", F.lit("replica").alias("machine"),
            F.concat_ws("/", F.col("x.broker").cast("string"), F.col("x.partition").cast("string")).alias("subject"),
            F.col("x.replica_state").alias("state"))
        w = Window.partitionBy("trace_id", "machine", "subject").orderBy("step")
        moves = (parts.unionByName(reps).withColumn("prev", F.lag("state").over(w))
                 .filter(F.col("prev").isNotNull() & (F.col("prev") != F.col("state")))
                 .groupBy("machine", "prev", "state").agg(F.count(F.lit(1)).alias("n"),
                                                           F.countDistinct("trace_id").alias("t")).collect())
        counted = {(r["machine"], r["prev"], r["state"]): (int(r["n"]), int(r["t"])) for r in moves}
        table = _table_moves()
        keys = {(m, a, b) for m, pairs in table.items() for a, b in pairs if a != b} | set(counted)
        for m, a, b in sorted(keys):
            n, t = counted.get((m, a, b), (0, 0))
            out.transitions.append({"machine": m, "source": a, "target": b, "count": n, "traces": t,
                                    "in_table": (a, b) in table.get(m, set())})

        # -- properties
        tagged = None
        for col in ("exercised", "broken", "witnessed"):
            part = steps.select(F.lit(col).alias("col"), "trace_id", F.explode(col).alias("p"))
            tagged = part if tagged is None else tagged.unionByName(part)
        per: dict[str, dict[str, tuple[int, int]]] = {"exercised": {}, "broken": {}, "witnessed": {}}
        for r in (tagged.groupBy("col", "p")
                  .agg(F.count(F.lit(1)).alias("n"), F.countDistinct("trace_id").alias("t")).collect()):
            per[r["col"]][r["p"]] = (int(r["n"]), int(r["t"]))
        exercised, broken, witnessed = per["exercised"], per["broken"], per["witnessed"]
        for p in ALL_PROPERTIES:
            e = witnessed.get(p.name, (0, 0)) if p.kind == "sometimes" else exercised.get(p.name, (0, 0))
            b = broken.get(p.name, (0, 0))
            out.properties.append({"property": p.name, "kind": p.kind, "exercised_steps": e[0],
                                   "exercised_traces": e[1], "broken_steps": b[0], "broken_traces": b[1]})

        # -- depth distribution
        lengths = (steps.select("trace_id", "trace_length").distinct().groupBy("trace_length")
                   .agg(F.count(F.lit(1)).alias("n")).orderBy("trace_length").collect())
        out.depths = [{"length": int(r["trace_length"]), "traces": int(r["n"])} for r in lengths]

        # -- per generation
        gens = (steps.groupBy("generation")
                .agg(F.countDistinct("trace_id").alias("traces"), F.count(F.lit(1)).alias("steps"),
                     F.countDistinct("model", "fingerprint").alias("states"),
                     F.countDistinct(F.when(F.size("broken") > 0, F.col("trace_id"))).alias("violating"),
                     F.array_sort(F.array_distinct(F.flatten(F.collect_list("broken")))).alias("violated"),
                     F.countDistinct("action").alias("actions"))
                .orderBy("generation").collect())
        out.generations = [{"generation": r["generation"], "traces": int(r["traces"]), "steps": int(r["steps"]),
                            "distinct_states": int(r["states"]), "violating_traces": int(r["violating"]),
                            "properties_violated": list(r["violated"]), "actions_taken": int(r["actions"])}
                           for r in gens]
        return out
    finally:
        steps.unpersist()


#: the Parquet tables of an analysis (specs/09-pipeline.md)
TABLE_DDL = {
    "actions": "action string, steps long, traces long, in_vocabulary boolean",
    "transitions": "machine string, source string, target string, count long, traces long, in_table boolean",
    "properties": ("property string, kind string, exercised_steps long, exercised_traces long, broken_steps long, "
                   "broken_traces long"),
    "depths": "length int, traces long",
    "generations": ("generation string, traces long, steps long, distinct_states long, violating_traces long, "
                    "properties_violated array<string>, actions_taken long"),
}


def write_analysis(spark: Any, a: Analysis, out: str | Path, summary: str) -> None:
    out_path = Path(out)
    if out_path.exists() and not out_path.is_dir():
        raise PipelineError(f"{out}: exists and is not a directory")
    out_path.mkdir(parents=True, exist_ok=True)
    for name, ddl in TABLE_DDL.items():
        cols = [c.split()[0] for c in ddl.split(", ")]
        rows = [tuple(r[c] for c in cols) for r in getattr(a, name)]
        spark.createDataFrame(rows, ddl).coalesce(1).write.mode("overwrite").parquet(str(out_path / name))
    (out_path / "summary.txt").write_text(summary, encoding="utf-8")


def summary_text(a: Analysis) -> str:
    """A readable summary of an :class:`Analysis` (what ``summary.txt`` holds)."""
    lines = [f"corpus: {a.traces} traces, {a.steps} steps, {a.distinct_states} distinct states", ""]
    acts = [r for r in a.actions if r["in_vocabulary"]]
    covered = sum(1 for r in acts if r["steps"])
    lines.append(f"actions: {covered} of {len(acts)} taken")
    never = [r["action"] for r in acts if not r["steps"]]
    if never:
        lines.append(f"  never taken: {', '.join(never)}")
    table = [r for r in a.transitions if r["in_table"]]
    seen = sum(1 for r in table if r["count"])
    lines.append(f"state-machine transitions: {seen} of {len(table)} table moves observed")
    for r in table:
        if not r["count"]:
            lines.append(f"  never observed: {r['machine']} {r['source']} -> {r['target']}")
    for r in a.transitions:
        if not r["in_table"]:
            lines.append(f"  OUTSIDE THE TABLE: {r['machine']} {r['source']} -> {r['target']} ({r['count']} times)")
    lines.append("properties (exercised steps / broken steps):")
    for r in a.properties:
        mark = "never exercised" if not r["exercised_steps"] else ""
        lines.append(f"  {r['property']:26} {r['kind']:10} {r['exercised_steps']:8} / {r['broken_steps']:<6} {mark}")
    lines.append("trace lengths: " + ", ".join(f"{r['length']}:{r['traces']}" for r in a.depths))
    lines.append("per generation:")
    for g in a.generations:
        lines.append(f"  {g['generation']:16} traces={g['traces']} steps={g['steps']} states={g['distinct_states']} "
                     f"violating={g['violating_traces']} violated={','.join(g['properties_violated']) or '-'}")
    return "\n".join(lines) + "\n"

