"""``isrcheck cluster``: run the reference implementation as real processes on loopback.

    isrcheck cluster up --brokers 3 [--zookeeper HOST:PORT] [--event-log DIR]
    isrcheck cluster create-topic --partitions 1 --replication-factor 3
    isrcheck cluster produce --partition 0 hello world
    isrcheck cluster consume --partition 0
    isrcheck cluster status
    isrcheck cluster kill --broker 1          (SIGKILL; --controller kills the active controller)
    isrcheck cluster restart --broker 1
    isrcheck cluster reassign --partition 0 --replicas 2,3,1
    isrcheck cluster down

The cluster lives in ``--dir`` (default ``$ISRCHECK_CLUSTER_DIR`` or ``./.isrcheck-cluster``): its
processes' logs, data directories and ``cluster.json``. Errors are one line on stderr,
``error: ...``, with exit status 2.
"""
from __future__ import annotations

import json
import os
import signal
from typing import Any
import click

from isrcheck.commands.cluster_simulate import simulate as _simulate
from isrcheck.commands.cluster_torture import torture as _torture
from isrcheck.commands.options import Inputs, input_options
from isrcheck.commands.usage import OneLineErrors
from isrcheck.inputs import targets
# the model's side only through the inputs room: this command runs the implementation
from isrcheck.inputs.targets import ConfigError as ModelConfigError, apply_overrides
from isrcheck.specs.manifest import ManifestError
from isrcheck.impl.process.client import ClientError
from isrcheck.impl.process.cluster import ClusterError, LocalCluster
from isrcheck.impl.core.config import ConfigError, from_mapping, load_file, to_mapping
from isrcheck.impl.process.exit_reason import exit_error
from isrcheck.impl.core.store import StoreError
from isrcheck.impl.process.unsafe_settings import warning_lines

DEFAULT_DIR = os.environ.get("ISRCHECK_CLUSTER_DIR", ".isrcheck-cluster")


class _Group(OneLineErrors):
    errors = (ClusterError, ClientError, ConfigError, StoreError, OSError, ModelConfigError, ManifestError)


def _fail(message: str) -> None:
    raise click.UsageError(message)


def _ids(text: str, what: str) -> list[int]:
    try:
        out = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise click.BadParameter(f"{what} must be comma-separated broker ids, got {text!r}") from None
    if not out or len(set(out)) != len(out) or any(b < 1 for b in out):
        raise click.BadParameter(f"{what} must be distinct broker ids >= 1, got {text!r}")
    return out


dir_option = click.option("--dir", "directory", default=DEFAULT_DIR, show_default=True,
                          help="where the cluster keeps its state, logs and data")


@click.group("cluster", cls=_Group)
def cluster() -> None:
    """Run the reference implementation: brokers and controllers as processes on loopback."""


@cluster.command("up")
@click.option("--brokers", type=click.IntRange(1, 64), default=None,
              help="broker count (default: NAME's or --config's, else 3; given, it overrides theirs)")
@click.option("--controllers", type=click.IntRange(1, 8), default=2, show_default=True,
              help="controller candidates (one is elected; the others take over when it dies)")
@click.option("--zookeeper", default=None, metavar="HOST:PORT", help="use this ZooKeeper instead of the embedded store")
@input_options(refuse={"--variant": "cluster runs the implementation, which has no variants; `isrcheck check "
                                    "--variant` checks a variant on the model",
                       "--property": "cluster runs the implementation and checks no property; `isrcheck check "
                                     "--property NAME` checks one on the model",
                       "--keep-going": "cluster runs the implementation, not a search",
                       "--strict": "cluster runs the implementation and gives no vacuity verdict; `isrcheck check "
                                   "--strict` fails on vacuity",
                       "--peer": "cluster runs the implementation, not the TLA+ transcription; `isrcheck check "
                                 "--peer MODULE` checks it"},
               explain={"--config": "a configuration file (specs/03-configuration.md keys, and the "
                                    "implementation's own: topic, replica_lag_time_max_ms, fetch_interval_ms)",
                        "--set": "override a configuration key of NAME or --config, e.g. --set "
                                 "min_insync_replicas=2 (repeatable)"})
@click.option("--event-log", "event_log", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="every process writes its own event log to DIR (check it with `isrcheck validate DIR`)")
@dir_option
def up(inputs: Inputs, brokers: int | None, controllers: int, zookeeper: str | None, event_log: str | None,
       directory: str) -> None:
    """Start a cluster and wait until every broker is registered and a controller elected.

    Its settings: NAME (a manifest model, or a scenario or trace FILE: its configuration) or
    --config FILE, with --set; their broker count is the cluster's (3 without them) unless --brokers
    gives another, and the assignment is the topic's (`cluster create-topic`).

    With --event-log DIR each broker and controller writes its own event log (one JSON line per step,
    one file per process) to DIR, and the commands log the crashes they inject and the writes they
    see acknowledged; `isrcheck validate DIR` checks the run against the model after `cluster down`."""
    if zookeeper is not None:
        host, _, port = zookeeper.rpartition(":")
        if not host or not port.split("/")[0].isdigit():
            raise click.BadParameter(f"--zookeeper must be HOST:PORT, got {zookeeper!r}")
    try:
        existing = LocalCluster.load(directory)
    except ClusterError:
        existing = None
    if existing is not None and any(existing.alive(n) for n in existing.procs):
        _fail(f"a cluster is already running in {directory} (isrcheck cluster down first)")
    config = _settings(inputs)
    brokers = config["brokers"] = broker_count(config, brokers)
    c = LocalCluster(directory, brokers=brokers, zookeeper=zookeeper, config=config, controllers=controllers,
                     event_log=event_log)
    try:
        c.up()
    except ClusterError:
        c.down()
        raise
    store = c.store_spec
    click.echo(f"cluster up in {c.dir}: {brokers} brokers, {controllers} controller candidates, store {store}")
    _print_status(c)
    for line in warning_lines(from_mapping(c.config)):  # what the model shows about these settings
        click.echo(line, err=True)


def broker_count(settings: dict[str, Any], given: int | None) -> int:
    """The cluster's broker count: --brokers when given, else the settings' (NAME's or --config's,
    after --set), else 3 — never a default that silently overrides what the configuration says."""
    return given if given is not None else int(settings.get("brokers", 3))


def _settings(inputs: Inputs) -> dict[str, Any]:
    """The settings of the input group as the implementation reads them: --config FILE through the
    implementation's own reader (which knows its extra keys), NAME through the model's targets;
    --set applied to either, and the whole validated by the implementation."""
    if inputs.name is not None and inputs.config_file is not None:
        raise ConfigError("give either a NAME or FILE, or --config FILE, not both")
    raw: dict[str, Any] = {}
    if inputs.config_file:
        raw = to_mapping(load_file(inputs.config_file))
    elif inputs.name is not None:
        raw = targets.resolve(inputs.name, None).config.to_dict()
    if inputs.overrides:
        raw = apply_overrides(raw, list(inputs.overrides))
    if not raw:
        return {}
    config = to_mapping(from_mapping(raw))
    config.pop("assignment", None)
    return config


@cluster.command("down")
@dir_option
def down(directory: str) -> None:
    """Stop every process of the cluster (SIGKILL)."""
    c = LocalCluster.load(directory)
    c.down()
    click.echo(f"cluster in {c.dir} stopped")


@cluster.command("status")
@click.option("--json", "as_json", is_flag=True, help="one JSON object")
@dir_option
def status(as_json: bool, directory: str) -> None:
    """Controller, brokers, and per partition: leader, ISR and HW (with each replica's LEO/HW)."""
    c = LocalCluster.load(directory)
    if as_json:
        with c.client() as k:
            st = k.status()
        st["processes"] = {n: {"pid": p["pid"], "port": p["port"], "alive": c.alive(n),
                               "error": None if c.alive(n) else exit_error(c.dir / f"{n}.log")}
                           for n, p in c.procs.items()}
        click.echo(json.dumps(st, indent=2, default=str))
        return
    _print_status(c)


def _print_status(c: LocalCluster) -> None:
    with c.client() as k:
        st = k.status()
    ctl = st["controller"]
    click.echo(f"controller: {ctl['name'] or 'none'} (epoch {ctl['epoch']})")
    procs = []
    for name, p in sorted(c.procs.items()):
        procs.append(f"{name}:{p['port']}{'' if c.alive(name) else ' (down)'}")
    click.echo("processes: " + ", ".join(procs))
    for name in sorted(c.procs):  # a process that refused to start says why (impl/exit_reason.py)
        why = None if c.alive(name) else exit_error(c.dir / f"{name}.log")
        if why:
            click.echo(f"{name} is down: {why}")
    click.echo(f"registered brokers: {', '.join(str(b) for b in st['brokers']) or 'none'}")
    if not st["partitions"]:
        click.echo(f"topic {st['topic']!r}: not created (isrcheck cluster create-topic)")
        return
    click.echo(f"topic {st['topic']!r}" + (" (being deleted)" if st["deleting"] else ""))
    click.echo(f"{'partition':>9}  {'leader':>6}  {'isr':<12} {'hw':>5}  {'epoch':>5}  {'replicas':<12} replica leo/hw")
    for p in st["partitions"]:
        reps = " ".join(f"{b}:{r['leo']}/{r['hw']}{'*' if r['role'] == 'leader' else ''}"
                        for b, r in p["replica_status"].items())
        hw = "-" if p["hw"] is None else str(p["hw"])
        pending = f"  -> {p['reassignment']}" if p["reassignment"] else ""
        isr = ",".join(map(str, p["isr"])) or "-"
        ar = ",".join(map(str, p["replicas"]))
        click.echo(f"{p['partition']:>9}  {p['leader'] or 'none':>6}  {isr:<12} {hw:>5}  {p['leader_epoch']:>5}  "
                   f"{ar:<12} {reps}{pending}")


@cluster.command("create-topic")
@click.option("--partitions", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--replication-factor", type=click.IntRange(1, 64), default=3, show_default=True)
@click.option("--assignment", default=None, help="explicit replicas per partition, e.g. '1,2,3;2,3,1'")
@dir_option
def create_topic(partitions: int, replication_factor: int, assignment: str | None, directory: str) -> None:
    """Create the cluster's topic (one topic per cluster, as in the model)."""
    c = LocalCluster.load(directory)
    ar = None
    if assignment:
        ar = [_ids(part, "--assignment") for part in assignment.split(";")]
    with c.client() as k:
        made = k.create_topic(partitions, replication_factor, ar)
        c.wait_for(lambda k: all(k.leader(p) for p in range(len(made))), 20, "leaders for every partition")
    click.echo(f"created topic {c.topic!r}: " + "; ".join(f"{p}: {a}" for p, a in enumerate(made)))


@cluster.command("produce")
@click.option("--partition", type=click.IntRange(0), default=0, show_default=True)
@click.option("--acks", type=click.Choice(["all", "1", "0"]), default="all", show_default=True)
@click.option("--count", type=click.IntRange(0), default=None, help="write COUNT generated values instead")
@click.option("--timeout", type=click.FloatRange(0.1), default=10.0, show_default=True)
@click.argument("values", nargs=-1)
@dir_option
def produce(partition: int, acks: str, count: int | None, timeout: float, values: tuple[str, ...],
            directory: str) -> None:
    """Write records; each line printed is acknowledged (with acks=all: committed to the ISR)."""
    if count is not None and values:
        _fail("give VALUES or --count, not both")
    items = list(values) if count is None else [f"value-{i}" for i in range(count)]
    if not items:
        _fail("nothing to produce: give VALUES or --count")
    c = LocalCluster.load(directory)
    with c.client(timeout=timeout) as k:
        for v in items:
            want = c.next_record_id(partition) if c.event_log else None  # the model numbers writes 1, 2, ...
            offset, rid = k.produce(partition, v, acks=acks, timeout=timeout, record_id=want)
            if acks == "all":
                c.note_acked(partition, [rid])
            click.echo(f"partition {partition} offset {offset} id {rid}: {v}")


@cluster.command("consume")
@click.option("--partition", type=click.IntRange(0), default=0, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0, show_default=True)
@click.option("--max", "max_records", type=click.IntRange(1), default=1000, show_default=True)
@dir_option
def consume(partition: int, offset: int, max_records: int, directory: str) -> None:
    """Read committed records (below the leader's HW)."""
    c = LocalCluster.load(directory)
    with c.client() as k:
        records = k.consume(partition, offset, max_records)
    for i, r in enumerate(records):
        click.echo(f"{offset + i}\tepoch {r.epoch}\tid {r.id}\t{r.value}")


@cluster.command("reassign")
@click.option("--partition", type=click.IntRange(0), default=0, show_default=True)
@click.option("--replicas", required=True, help="the new replica list, e.g. 2,3,1")
@click.option("--wait/--no-wait", default=True, show_default=True)
@dir_option
def reassign(partition: int, replicas: str, wait: bool, directory: str) -> None:
    """Move a partition to a new replica list (the controller's 12-step reassignment)."""
    target = _ids(replicas, "--replicas")
    c = LocalCluster.load(directory)
    with c.client() as k:
        known = set(k.brokers())
        unknown = [b for b in target if b not in known]
        if unknown:
            _fail(f"--replicas names brokers that are not registered: {unknown}")
        c.request_reassignment(k, partition, target)  # logged as RequestReassignment with --event-log
    click.echo(f"reassignment of partition {partition} to {target} requested")
    if wait:
        c.wait_for(lambda k: list(k.snapshot(partition + 1).part(partition).replicas) == target
                   and partition not in k.snapshot(partition + 1).reassign, 60, "the reassignment to complete")
        click.echo("reassignment complete")
        _print_status(c)


@cluster.command("kill")
@click.option("--broker", type=click.IntRange(1), default=None)
@click.option("--controller", "controller", is_flag=True, help="the active controller")
@click.option("--signal", "sig", type=click.Choice(["KILL", "TERM"]), default="KILL", show_default=True,
              help="KILL is a crash; TERM asks a broker for a controlled shutdown")
@dir_option
def kill(broker: int | None, controller: bool, sig: str, directory: str) -> None:
    """Kill a broker's or the active controller's process."""
    if (broker is None) == (not controller):
        _fail("give exactly one of --broker N or --controller")
    c = LocalCluster.load(directory)
    if broker is not None:
        name = f"broker-{broker}"
    else:
        name = c.active_controller() or ""
        if not name:
            _fail("no controller is active")
    if name not in c.procs:
        _fail(f"no process {name!r} in this cluster")
    if not c.alive(name):
        _fail(f"{name} is not running")
    c.kill(name, signal.SIGKILL if sig == "KILL" else signal.SIGTERM)
    click.echo(f"{name} killed (SIG{sig})")


@cluster.command("restart")
@click.option("--broker", type=click.IntRange(1), required=True)
@dir_option
def restart(broker: int, directory: str) -> None:
    """Start a stopped broker again (with its data directory as it was left)."""
    c = LocalCluster.load(directory)
    name = f"broker-{broker}"
    if name not in c.procs:
        _fail(f"no broker {broker} in this cluster")
    if c.alive(name):
        _fail(f"{name} is running")
    info = c.start_broker(broker)
    click.echo(f"{name} restarted on port {info['port']}")


cluster.add_command(_simulate)  # seeded random faults, in process
cluster.add_command(_torture)  # a nemesis against real processes

__all__ = ["cluster"]
