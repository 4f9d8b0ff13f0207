"""Model configuration: the bounds of one check, read from TOML (specs/03-configuration.md).

Every field is validated here so that a bad file fails with one clear line
(:class:`ConfigError`) before the checker starts, never with a traceback halfway through.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from isrcheck.specs.inputs import InputError, Kind, NestingError, loads_toml, max_depth, read_toml, value_depth
from isrcheck.specs.protocol import (
    DEFAULT_GENERATION,
    GENERATION_ALIASES,
    Generation,
    generation_setting,
    parse_generation,
)

MAX_BROKERS = 8
MAX_PARTITIONS = 4
MAX_RECORDS = 8

ACKS = ("all", "1")
CONTROLLER_CONNECTIONS = ("shared", "per-controller")
#: how a leader changes its ISR: its own conditional ZooKeeper write (the seeds, up to 2.6) or an
#: AlterIsr request the controller applies (KIP-497, 2.7+; model/alterisr.py)
ISR_CHANGES = ("zookeeper", "alter-isr")


class ConfigError(ValueError):
    """A configuration that cannot describe a model; the message is one line for the user."""


# ---------------------------------------------------------------------------- what a key is
#: when the one-line header of a check names a key: always, when its value differs from the
#: default, or never (a key derived from others, or one only liveness checks read)
Shown = Literal["always", "changed", "never"]
#: the entry of a field's ``metadata`` that holds its :class:`KeyInfo`
METADATA = "isrcheck"


@dataclass(frozen=True)
class KeyInfo:
    """What the command line knows of a configuration key, declared on the key's field, so that
    every reader (the header of ``check`` and the commands like it, the configuration section of
    ``report``'s page, ``diff``) reads one list instead of keeping its own: a new key says here
    whether it chooses the protocol and when the header shows it, and each reader follows.

    ``protocol``: the key chooses the protocol rather than the bounds (``diff`` compares two
    sides that differ only in such keys). ``shown``: when the header names the key.
    """

    protocol: bool = False
    shown: Shown = "changed"


def _key(default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING, protocol: bool = False,
         shown: Shown = "changed") -> Any:
    """A configuration key: a dataclass field with its :class:`KeyInfo` as metadata."""
    return field(default=default, default_factory=factory, metadata={METADATA: KeyInfo(protocol, shown)})


@dataclass(frozen=True)
class Reassignment:
    partition: int
    target: tuple[int, ...]


@dataclass(frozen=True)
class Faults:
    """Budgets of perturbations. Healing (restart, delivery, fetch) is never bounded."""

    crashes: int = _key(0)
    lossy_crashes: int = _key(0)
    undetected_restarts: int = _key(0)
    controller_failovers: int = _key(0)
    isr_shrinks: int = _key(0)
    delayed_requests: int = _key(0)
    #: a running broker loses its ZooKeeper session (ExpireSession): its registration vanishes
    #: while the process keeps its state, until it registers again (Reregister)
    session_expiries: int = _key(0)
    #: with ``isr_change = "alter-isr"``: the controller applies an AlterIsr but its answer is lost,
    #: and the leader's channel sends the same request again (AlterIsrAnswerLost)
    lost_isr_answers: int = _key(0)
    #: a leader handles a follower's fetch (records its offset, may expand the ISR and advance the
    #: HW) but the answer never reaches the follower (FetchAnswerLost)
    lost_fetch_answers: int = _key(0)


@dataclass(frozen=True)
class Operations:
    """Administrative operations the model may perform (each at most as often as given)."""

    reassignments: tuple[Reassignment, ...] = _key(())
    preferred_elections: int = _key(0)
    controlled_shutdowns: int = _key(0)
    topic_deletions: int = _key(0)
    topic_creation: bool = _key(False)


@dataclass(frozen=True)
class Config:
    """The bounds of one check and the protocol it checks; every field is a key with its
    :class:`KeyInfo` (a sub-table, ``faults`` or ``operations``, has one on each of its keys)."""

    brokers: int = _key(3, shown="always")
    partitions: int = _key(1, shown="always")
    replication_factor: int = _key(3, shown="always")
    max_records: int = _key(2, shown="always")
    #: the most records one fetch returns (0: no limit, the leader's whole suffix in one fetch)
    max_fetch_records: int = _key(0, protocol=True)
    min_insync_replicas: int = _key(1, protocol=True)
    unclean_leader_election: bool = _key(False, protocol=True)
    hw_checkpoint: str = _key("periodic", protocol=True)  # "periodic" | "every-change"
    stale_controller: bool = _key(True, protocol=True)
    #: the protocol generation (specs/protocol.toml)
    generation: Generation = _key(DEFAULT_GENERATION, protocol=True, shown="always")
    acks: str = _key("all", protocol=True)  # "all" | "1"
    detect_restarts: bool = _key(False, protocol=True)  # the controller notices a quick restart (Kafka 2.2+)
    #: "shared": one FIFO queue of controller requests per broker; "per-controller": each controller
    #: has its own connection, so requests of different controllers may arrive in any order
    controller_connections: str = _key("shared")
    #: ZooKeeper refuses a deposed controller's writes (2.1+)
    fenced_controller_writes: bool = _key(False, protocol=True)
    #: a deposed controller abandons its reassignment (a designer's option)
    fenced_reassignment_steps: bool = _key(False, protocol=True)
    #: at failover the controller moves the replicas of dead brokers to OfflineReplica, taking them
    #: out of the ISR (Kafka 2.3+, KAFKA-3143's fix)
    failover_offline_replicas: bool = _key(False, protocol=True)
    #: how a leader changes its ISR (ISR_CHANGES): "zookeeper", its own conditional write; "alter-isr",
    #: an asynchronous request to the controller (KIP-497, Kafka 2.7+; specs/05-replication.md)
    isr_change: str = _key("zookeeper", protocol=True)
    #: brokers keep a metadata cache of the live brokers, filled by UpdateMetadata, and follow only a
    #: leader it lists (0.9+; model/metadatacache.py)
    metadata_cache: bool = _key(False, protocol=True)
    #: Kafka bugs whose pre-fix rule the protocol puts back (specs/history.toml, model/history.py)
    reintroduce: tuple[str, ...] = _key((), protocol=True)
    #: derived from the bounds unless given (default_assignment): not in the header
    assignment: tuple[tuple[int, ...], ...] = _key((), shown="never")
    #: the ISR each partition starts with, a subset of its assignment holding its first replica (the
    #: leader); () starts every partition fully in sync. A scenario's input, like the assignment:
    #: followers that fell behind before the run (KAFKA-15665's reassignment needs one)
    initial_isr: tuple[tuple[int, ...], ...] = _key(())
    #: healing actions whose weak fairness liveness checks do not assume: an action name (every
    #: instance) or one instance's text, "Restart(3)" (specs/06-properties.md, "Liveness")
    unfair: tuple[str, ...] = _key((), shown="never")
    faults: Faults = _key(factory=Faults)
    operations: Operations = _key(factory=Operations)

    def __post_init__(self) -> None:
        try:  # dataclasses.replace(cfg, generation="kip-320") gives the name: hold the Generation
            object.__setattr__(self, "generation", parse_generation(self.generation))
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if not self.assignment:  # the default spreads partitions round-robin over the brokers
            object.__setattr__(self, "assignment", default_assignment(self.brokers, self.partitions,
                                                                      self.replication_factor))

    # ------------------------------------------------------------------ derived
    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    def replicas_of(self, partition: int) -> tuple[int, ...]:
        return self.assignment[partition]

    def initial_isr_of(self, partition: int) -> tuple[int, ...]:
        """The ISR ``partition`` starts with (its whole assignment unless ``initial_isr`` says)."""
        return self.initial_isr[partition] if self.initial_isr else self.assignment[partition]

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["generation"] = self.generation.value
        d["assignment"] = [list(a) for a in self.assignment]
        d["initial_isr"] = [list(a) for a in self.initial_isr]
        d["unfair"] = list(self.unfair)
        d["reintroduce"] = list(self.reintroduce)
        d["operations"]["reassignments"] = [
            {"partition": r.partition, "target": list(r.target)} for r in self.operations.reassignments
        ]
        return d


@dataclass(frozen=True)
class Setting:
    """One key of a configuration as the readers of the metadata see it: ``name`` dotted for a
    sub-table's key (``faults.crashes``), ``value`` and ``default`` in their JSON form (to_dict)."""

    name: str
    value: Any
    default: Any
    info: KeyInfo

    @property
    def changed(self) -> bool:
        """The value differs from the default configuration's."""
        return self.value != self.default


def key_info(f: dataclasses.Field[Any]) -> KeyInfo:
    """The :class:`KeyInfo` of a configuration key's field."""
    info: KeyInfo = f.metadata[METADATA]
    return info


def settings(cfg: Config) -> list[Setting]:
    """Every key of ``cfg`` with its metadata, in declaration order, a sub-table's keys in its place."""
    value, default = cfg.to_dict(), Config().to_dict()
    out: list[Setting] = []
    for f in dataclasses.fields(Config):
        table = getattr(cfg, f.name)
        if dataclasses.is_dataclass(table):
            out += [Setting(f"{f.name}.{g.name}", value[f.name][g.name], default[f.name][g.name], key_info(g))
                    for g in dataclasses.fields(table)]
        else:
            out.append(Setting(f.name, value[f.name], default[f.name], key_info(f)))
    return out


#: the keys that choose the protocol rather than the bounds (KeyInfo.protocol)
PROTOCOL_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Config) if key_info(f).protocol)

_TOP_KEYS = {f.name for f in dataclasses.fields(Config)}
_FAULT_KEYS = {f.name for f in dataclasses.fields(Faults)}
_OP_KEYS = {f.name for f in dataclasses.fields(Operations)}


def _int(where: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"{where} must be between {lo} and {hi}, got {value}")
    return value


def _bool(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def _choice(where: str, value: Any, allowed: tuple[str, ...]) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and str(value) in allowed:
        return str(value)  # acks = 1 written as a number
    if value not in allowed:
        raise ConfigError(f"{where} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")
    return value


def _table(where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"[{where}] must be a table, got {value!r}")
    return value


def _unknown(where: str, keys: set[str], known: set[str]) -> None:
    extra = sorted(keys - known)
    if extra:
        raise ConfigError(f"unknown key '{where}{extra[0]}' (known: {', '.join(sorted(known))})")


def from_mapping(raw: dict[str, Any]) -> Config:
    """Build and validate a :class:`Config` from a parsed TOML document."""
    raw = dict(raw)
    raw.pop("name", None)
    raw.pop("description", None)
    _unknown("", set(raw) - set(GENERATION_ALIASES), _TOP_KEYS)
    brokers = _int("brokers", raw.get("brokers", 3), 1, MAX_BROKERS)
    partitions = _int("partitions", raw.get("partitions", 1), 1, MAX_PARTITIONS)
    rf = _int("replication_factor", raw.get("replication_factor", min(3, brokers)), 1, MAX_BROKERS)
    if rf > brokers:
        raise ConfigError(f"replication_factor {rf} exceeds brokers {brokers}")
    max_records = _int("max_records", raw.get("max_records", 2), 0, MAX_RECORDS)
    max_fetch_records = _int("max_fetch_records", raw.get("max_fetch_records", 0), 0, MAX_RECORDS)
    min_isr = _int("min_insync_replicas", raw.get("min_insync_replicas", 1), 1, MAX_BROKERS)
    if min_isr > rf:
        raise ConfigError(f"min_insync_replicas {min_isr} exceeds replication_factor {rf}: no write could commit")
    unclean = _bool("unclean_leader_election", raw.get("unclean_leader_election", False))
    stale = _bool("stale_controller", raw.get("stale_controller", True))
    hw_checkpoint = _choice("hw_checkpoint", raw.get("hw_checkpoint", "periodic"), ("periodic", "every-change"))
    generation = _generation(raw)
    acks = _choice("acks", raw.get("acks", "all"), ACKS)
    detect_restarts = _bool("detect_restarts", raw.get("detect_restarts", False))
    connections = _choice("controller_connections", raw.get("controller_connections", "shared"),
                          CONTROLLER_CONNECTIONS)
    fenced_writes = _bool("fenced_controller_writes", raw.get("fenced_controller_writes", False))
    fenced_steps = _bool("fenced_reassignment_steps", raw.get("fenced_reassignment_steps", False))
    failover_offline = _bool("failover_offline_replicas", raw.get("failover_offline_replicas", False))
    isr_change = _choice("isr_change", raw.get("isr_change", "zookeeper"), ISR_CHANGES)
    metadata_cache = _bool("metadata_cache", raw.get("metadata_cache", False))

    if "assignment" in raw:
        assignment_raw = raw["assignment"]
        if not isinstance(assignment_raw, list) or len(assignment_raw) != partitions:
            raise ConfigError(f"assignment must be a list of {partitions} replica lists")
        assignment = tuple(
            _replica_list(f"assignment[{p}]", a, brokers, rf) for p, a in enumerate(assignment_raw)
        )
    else:
        assignment = default_assignment(brokers, partitions, rf)

    initial_isr = _initial_isr(raw.get("initial_isr", []), assignment, brokers)
    unfair = _unfair(raw.get("unfair", []), brokers, partitions)
    reintroduce = _reintroduce(raw.get("reintroduce", []), generation, {
        "unclean_leader_election": unclean, "acks": acks, "controller_connections": connections,
        "fenced_controller_writes": fenced_writes, "detect_restarts": detect_restarts, "hw_checkpoint": hw_checkpoint,
        "failover_offline_replicas": failover_offline, "stale_controller": stale,
        "isr_change": isr_change, "metadata_cache": metadata_cache})

    f = _table("faults", raw.get("faults", {}))
    _unknown("faults.", set(f), _FAULT_KEYS)
    faults = Faults(**{k: _int(f"faults.{k}", v, 0, 16) for k, v in f.items()})

    o = _table("operations", raw.get("operations", {}))
    _unknown("operations.", set(o), _OP_KEYS)
    reassignments = []
    listed = o.get("reassignments", [])
    if not isinstance(listed, list):
        raise ConfigError(f"operations.reassignments must be a list of {{partition, target}} tables, got {listed!r}")
    for i, r in enumerate(listed):
        r = _table(f"operations.reassignments[{i}]", r)
        _unknown(f"operations.reassignments[{i}].", set(r), {"partition", "target"})
        if "partition" not in r or "target" not in r:
            raise ConfigError(f"operations.reassignments[{i}] needs both partition and target")
        p = _int(f"operations.reassignments[{i}].partition", r["partition"], 0, partitions - 1)
        target = _replica_list(f"operations.reassignments[{i}].target", r["target"], brokers, None)
        reassignments.append(Reassignment(p, target))
    ops = Operations(
        reassignments=tuple(reassignments),
        preferred_elections=_int("operations.preferred_elections", o.get("preferred_elections", 0), 0, 16),
        controlled_shutdowns=_int("operations.controlled_shutdowns", o.get("controlled_shutdowns", 0), 0, 16),
        topic_deletions=_int("operations.topic_deletions", o.get("topic_deletions", 0), 0, 1),
        topic_creation=_bool("operations.topic_creation", o.get("topic_creation", False)),
    )
    if initial_isr and ops.topic_creation:
        raise ConfigError("initial_isr needs a topic that exists at the start: with operations.topic_creation = "
                          "true the controller chooses the first ISR (every live replica)")
    return Config(
        brokers=brokers,
        partitions=partitions,
        replication_factor=rf,
        max_records=max_records,
        max_fetch_records=max_fetch_records,
        min_insync_replicas=min_isr,
        unclean_leader_election=unclean,
        hw_checkpoint=hw_checkpoint,
        stale_controller=stale,
        generation=generation,
        acks=acks,
        detect_restarts=detect_restarts,
        controller_connections=connections,
        fenced_controller_writes=fenced_writes,
        fenced_reassignment_steps=fenced_steps,
        failover_offline_replicas=failover_offline,
        isr_change=isr_change,
        metadata_cache=metadata_cache,
        reintroduce=reintroduce,
        assignment=assignment,
        initial_isr=initial_isr,
        unfair=unfair,
        faults=faults,
        operations=ops,
    )


def _initial_isr(value: Any, assignment: tuple[tuple[int, ...], ...], brokers: int) -> tuple[tuple[int, ...], ...]:
    """The ``initial_isr`` list: one ISR per partition, each a subset of its assignment that holds the
    first replica, which leads at the start (a leader outside its ISR is what LeaderInIsr forbids).
    An empty list is the default, every replica in sync."""
    if not isinstance(value, list):
        raise ConfigError(f"initial_isr must be a list of {len(assignment)} ISR lists, got {value!r}")
    if not value:
        return ()
    if len(value) != len(assignment):
        raise ConfigError(f"initial_isr must be a list of {len(assignment)} ISR lists (one per partition), "
                          f"got {len(value)}")
    out = []
    for p, (isr_raw, ar) in enumerate(zip(value, assignment)):
        isr = _replica_list(f"initial_isr[{p}]", isr_raw, brokers, None)
        outside = [b for b in isr if b not in ar]
        if outside:
            raise ConfigError(f"initial_isr[{p}] names broker {outside[0]}, which is not a replica of partition {p} "
                              f"(assignment {list(ar)})")
        if ar[0] not in isr:
            raise ConfigError(f"initial_isr[{p}] must hold broker {ar[0]}, the first replica of assignment "
                              f"{list(ar)}, which leads at the start")
        out.append(tuple(b for b in ar if b in isr))  # in assignment order: the ISR is a set
    return tuple(out)


def _unfair(value: Any, brokers: int, partitions: int) -> tuple[str, ...]:
    """The ``unfair`` list: each entry a fair action's name or one of its instances, as text."""
    from isrcheck.specs.actions import ActionSyntaxError, VocabularyError, action_text, check_action, fair_actions
    from isrcheck.specs.actions import read_text

    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ConfigError(f"unfair must be a list of action names or instances such as 'Restart(3)', got {value!r}")
    fair = fair_actions()
    out: list[str] = []
    for text in value:
        if "(" not in text:
            if text not in fair:
                raise ConfigError(f"unfair: {text!r} is not a fair action (fair: {', '.join(fair)})")
            out.append(text)
            continue
        try:
            name, args = read_text(text)
            check_action({"name": name, "args": list(args)}, brokers, partitions)
        except (ActionSyntaxError, VocabularyError) as e:
            raise ConfigError(f"unfair: {e}") from None
        if name not in fair:
            raise ConfigError(f"unfair: {name!r} is not a fair action (fair: {', '.join(fair)})")
        out.append(action_text(name, args))
    return tuple(out)


def _reintroduce(value: Any, generation: Generation, keys: dict[str, Any]) -> tuple[str, ...]:
    """The ``reintroduce`` list: ids of bugs of specs/history.toml that the model reproduces, each
    refused where the configuration lacks its mechanism (``requires``: a generation trait or a key
    with another value), since putting that bug back there would change nothing."""
    from isrcheck.specs.history import bug, reproduced

    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ConfigError(f"reintroduce must be a list of bug ids such as \"KAFKA-708\", got {value!r}")
    known = ", ".join(b.id for b in reproduced())
    for i, bug_id in enumerate(value):
        if bug_id in value[:i]:
            raise ConfigError(f"reintroduce: {bug_id} is listed twice")
        try:
            b = bug(bug_id)
        except KeyError:
            raise ConfigError(f"reintroduce: unknown bug {bug_id!r} (reproduced: {known})") from None
        if b.classification != "reproduced":
            raise ConfigError(f"reintroduce: {bug_id} is not reproduced by the model (classified "
                              f"{b.classification!r} in specs/history.toml; reproduced: {known})")
        for key, want in b.requires:
            if key in keys:
                have, where = keys[key], ""
            else:
                have, where = getattr(generation.traits, key), f" under generation {generation.value!r}"
            if str(have) != str(want) or isinstance(have, bool) != isinstance(want, bool):
                raise ConfigError(f"reintroduce: {bug_id} needs {key} = {_toml(want)}, which this configuration "
                                  f"does not have ({key} = {_toml(have)}{where}), so its pre-fix rule would "
                                  f"change nothing")
    return tuple(value)


def _toml(value: Any) -> str:
    """A value as a configuration file writes it (true, "kip-320")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"\"{value}\"" if isinstance(value, str) else str(value)


def _generation(raw: dict[str, Any]) -> Generation:
    """The protocol generation: the key ``generation``, or its alias ``truncation`` (not both)."""
    try:
        given = generation_setting(raw)
        return DEFAULT_GENERATION if given is None else parse_generation(given[1], given[0])
    except ValueError as e:
        raise ConfigError(str(e)) from None


def default_assignment(brokers: int, partitions: int, rf: int) -> tuple[tuple[int, ...], ...]:
    """Partition ``p`` on brokers ``p+1, p+2, ...`` (wrapping), the first of them preferred."""
    return tuple(tuple(((p + i) % brokers) + 1 for i in range(rf)) for p in range(partitions))


def _replica_list(where: str, value: Any, brokers: int, length: int | None) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where} must be a non-empty list of broker ids")
    ids = tuple(_int(f"{where} entry", b, 1, brokers) for b in value)
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{where} lists a broker twice: {list(ids)}")
    if length is not None and len(ids) != length:
        raise ConfigError(f"{where} must have replication_factor={length} replicas, got {len(ids)}")
    return ids


def load(path: str | Path) -> Config:
    """Read a configuration file; any problem is a :class:`ConfigError`."""
    try:  # the bounded reader: a regular file, size and nesting capped (specs/inputs.py)
        raw = read_toml(path, Kind.CONFIG)
    except InputError as e:
        raise ConfigError(str(e)) from None
    return from_mapping(raw)


def parse_override(text: str) -> tuple[list[str], Any]:
    """``faults.crashes=1`` -> (["faults", "crashes"], 1); the value is read as TOML."""
    if "=" not in text:
        raise ConfigError(f"--set expects KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"--set expects KEY=VALUE, got {text!r}")
    try:
        parsed = loads_toml(f"v = {value.strip()}", f"--set {key}")["v"]
    except NestingError as e:
        raise ConfigError(str(e)) from None
    except InputError:
        parsed = value.strip()  # a bare word is a string
    path = key.split(".")
    if len(path) + value_depth(parsed) > max_depth():  # a dotted key nests too
        raise ConfigError(f"--set {key[:40]}: nested deeper than {max_depth()} levels")
    return path, parsed


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Return a copy of ``raw`` with each ``KEY=VALUE`` applied (dotted keys reach into tables)."""
    out: dict[str, Any] = copy.deepcopy(raw)
    for text in overrides:
        path, value = parse_override(text)
        set_path(out, path, value, where="--set ")
    return out


def set_path(raw: dict[str, Any], path: list[str], value: Any, where: str = "") -> None:
    """Set ``raw[path[0]][path[1]]... = value`` in place, creating tables on the way."""
    node = raw
    for part in path[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            raise ConfigError(f"{where}{'.'.join(path)}: {part} is not a table")
        node = child
    node[path[-1]] = value
