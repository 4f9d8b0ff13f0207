"""The SparkSession factory: local mode by default, a cluster with ``master``.

The recipes that keep PySpark sane here:

- Workers run the project's interpreter: ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` are this
  process's ``sys.executable`` (kept for a cluster when already set), so every task imports the
  same ``isrcheck`` as the driver.
- Java is checked first (Spark 4 needs Java 17 or later); without it the caller gets one
  :class:`~isrcheck.pipeline.errors.PipelineError` line, not a JVM stack trace.
- Local mode binds to the loopback interface only, the web UI and the console progress bar are
  off, and Spark's own logging is cut to errors (a log4j2 file written for the session); a
  task's failure is not logged by the executor as well, since the job's failure carries it to
  the driver, which says it in one line (or, for a bug, in full).
- Few shuffle partitions (twice the cores) suit a 2-core machine; Arrow is on for the
  Python <-> JVM exchange.

:func:`spark_session` is a context manager: it reuses an active session (the tests' session-scoped
one, say) and leaves it running, or creates one and stops it on exit.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import PipelineError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_JAVA = 17
DEFAULT_MASTER = "local[*]"

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
"""


def java_version(java: str | None = None) -> tuple[int, str] | None:
    """(major version, first line of ``java -version``) of ``$JAVA_HOME/bin/java`` or the ``java``
    on PATH; ``None`` when there is none."""
    if java is None:
        home = os.environ.get("JAVA_HOME")
        java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stderr or out.stdout).strip()
    first = text.splitlines()[0] if text else ""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', first)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_392" is Java 8
        major = int(m.group(2))
    return major, first


def check_java() -> None:
    """Raise :class:`PipelineError` unless Java 17 or later is there."""
    found = java_version()
    if found is None:
        raise PipelineError(f"Spark needs Java {MIN_JAVA} or later and none was found "
                            "(run scripts/ensure-java.sh, or set JAVA_HOME)")
    if found[0] < MIN_JAVA:
        raise PipelineError(f"Spark needs Java {MIN_JAVA} or later, found {found[1]!r} "
                            "(run scripts/ensure-java.sh, or set JAVA_HOME)")


def check_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise PipelineError("the Spark pipeline needs pyspark: pip install -e '.[spark]'") from None


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster")


def _local_cores(master: str) -> int:
    m = re.match(r"local\[(\d+|\*)", master)
    if m and m.group(1) != "*":
        return max(1, int(m.group(1)))
    if master == "local":
        return 1
    return os.cpu_count() or 2


def task_slots(master: str, default_parallelism: int, task_cpus: int = 1) -> int:
    """How many tasks the session runs at once: the most a barrier stage (all its tasks started
    together, :mod:`.resident`) may have. Local mode's default parallelism is twice its cores
    (:func:`session_conf`), so it is read from the master; a cluster's is its executors' cores."""
    m = re.match(r"local-cluster\[(\d+),(\d+),", master)
    if m:
        cores = int(m.group(1)) * int(m.group(2))
    elif _is_local(master):
        cores = _local_cores(master)
    else:
        cores = default_parallelism
    return max(1, cores // max(1, task_cpus))


def session_conf(master: str = DEFAULT_MASTER, app_name: str = "isrcheck",
                 extra: dict[str, str] | None = None) -> dict[str, str]:
    """The configuration :func:`create_session` uses (exposed for tests and documentation)."""
    local = _is_local(master)
    cores = _local_cores(master) if local else 0
    conf = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.python.worker.reuse": "true",
        "spark.sql.session.timeZone": "UTC",
    }
    if local:
        parts = str(2 * cores)
        conf.update({
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": parts,
            "spark.default.parallelism": parts,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.memory": os.environ.get("ISRCHECK_SPARK_DRIVER_MEMORY", "2g"),
        })
    conf.update(extra or {})
    return conf


_MASTER_FORMS = re.compile(
    r"local|local\[(\d+|\*)(,\d+)?\]|local-cluster\[\d+,\d+,\d+\]"
    r"|spark://[^\s/:]+:\d+(,[^\s/:]+:\d+)*|yarn|k8s://\S+|mesos://\S+")


def check_master(master: str) -> None:
    """A one-line :class:`PipelineError` for a master URL Spark cannot take, before a JVM starts:
    Spark's own answer to ``--master bogus`` is a Java stack trace after seconds of startup."""
    if not _MASTER_FORMS.fullmatch(master):
        raise PipelineError(f"--master {master!r}: not a Spark master URL (local, local[N], local[*], "
                            "local-cluster[WORKERS,CORES,MiB], spark://HOST:PORT, yarn, k8s://URL)")


def submitted_master() -> str | None:
    """The master chosen by ``spark-submit --master`` when this process was started by spark-submit
    (its JVM is already running and passes the settings as system properties), else None."""
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connect to spark-submit's JVM, whose properties hold the master
    return SparkConf().get("spark.master", None)


def create_session(master: str | None = None, app_name: str = "isrcheck",
                   extra: dict[str, str] | None = None) -> SparkSession:
    """A new (or the active) SparkSession configured as :func:`session_conf` says. Without
    ``master``, spark-submit's master when started by spark-submit, else ``local[*]``."""
    check_pyspark()
    master = master or submitted_master() or DEFAULT_MASTER
    check_master(master)
    if _is_local(master):
        check_java()
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = session_conf(master, app_name, extra)
    log_dir = Path(tempfile.gettempdir()) / "isrcheck-spark"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_file = log_dir / "log4j2.properties"
    if not log_file.exists() or log_file.read_text() != _LOG4J:
        log_file.write_text(_LOG4J)
    java_opts = f"-Dlog4j2.configurationFile=file:{log_file} -Dlog4j.configurationFile=file:{log_file}"
    conf.setdefault("spark.driver.extraJavaOptions", java_opts)
    conf.setdefault("spark.executor.extraJavaOptions", java_opts)

    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # noqa: BLE001 - a JVM that does not start is one line for the user
        raise PipelineError(f"cannot start Spark ({master}): {' '.join(str(e).split())[:300]}") from None
    spark.sparkContext.setLogLevel("ERROR")
    quiet_python_loggers()
    return spark


def quiet_python_loggers() -> None:
    """PySpark logs every SQL error a second time, as JSON on stderr; the pipeline reports it in
    one line instead."""
    import logging

    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # pragma: no cover - older PySpark
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def session_info(spark: Any) -> dict[str, Any]:
    """Where a session's jobs ran: the master URL and the number of executors registered with it
    (0 in local mode, where the driver runs the tasks itself)."""
    sc = spark.sparkContext
    try:
        executors = int(sc._jsc.sc().getExecutorIds().size())
    except Exception:  # noqa: BLE001 - informative only
        executors = -1
    return {"master": sc.master, "executors": executors}


def active_session() -> SparkSession | None:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


@contextmanager
def spark_session(master: str | None = None, app_name: str = "isrcheck") -> Iterator[Any]:
    """Use the active session if there is one (and leave it running), else create one and stop it
    at the end."""
    existing = active_session()
    if existing is not None:
        yield existing
        return
    spark = create_session(master, app_name)
    try:
        yield spark
    finally:
        spark.stop()


def stage_text(spark: Any) -> str:
    """What Spark is doing now, from its status tracker: ``stage 3: 5/8 tasks`` per active stage;
    ``in-process`` while no session has started (None: a hybrid run's first levels)."""
    if spark is None:
        return "in-process"
    try:
        tracker = spark.sparkContext.statusTracker()
        parts = []
        for sid in sorted(tracker.getActiveStageIds()):
            info = tracker.getStageInfo(sid)
            if info is not None:
                parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks")
    except Exception:  # noqa: BLE001 - a stopped context mid-report: say nothing of stages
        return "Spark starting or stopping"
    return "; ".join(parts) or "between Spark stages"


@contextmanager
def heartbeat(spark: Any, label: str, say: Callable[[str], None], every: float,
              current: Callable[[], Any] | None = None) -> Iterator[None]:
    """While the block runs, call ``say`` every ``every`` seconds with the time so far and the
    active stages' task counts. For a pipe or a CI log, where Spark's own console progress bar
    (a terminal's) shows nothing and a long job would otherwise print nothing at all.

    ``current``, when given, is asked for the session at every beat instead of ``spark`` (a lazy
    session that may start halfway through the block, or never)."""
    stop = threading.Event()
    start = time.monotonic()
    now = current if current is not None else (lambda: spark)

    def beat() -> None:
        while not stop.wait(every):
            say(f"{label}: {time.monotonic() - start:.0f} s  {stage_text(now())}")

    thread = threading.Thread(target=beat, name="isrcheck-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


class LazySession:
    """A session started on first use (hybrid exploration may never need one)."""

    def __init__(self, master: str | None = None, app_name: str = "isrcheck") -> None:
        self.master = master
        self.app_name = app_name
        self._spark: Any = None
        self._owned = False
        self.info: dict[str, Any] | None = None  # session_info, recorded when it stops

    @property
    def started(self) -> bool:
        return self._spark is not None

    @property
    def current(self) -> Any:
        """The session if it has been started, else None (a heartbeat must not start it)."""
        return self._spark

    def get(self) -> Any:
        if self._spark is None:
            existing = active_session()
            if existing is not None:
                self._spark = existing
            else:
                self._spark = create_session(self.master, self.app_name)
                self._owned = True
        return self._spark

    def stop(self) -> None:
        if self._spark is not None:
            self.info = session_info(self._spark)
        if self._spark is not None and self._owned:
            self._spark.stop()
        self._spark = None
        self._owned = False
