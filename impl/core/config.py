"""The implementation's configuration: the model's keys (specs/03-configuration.md) plus its own.

A configuration written for the model configures the implementation too: the protocol keys
(``brokers``, ``partitions``, ``replication_factor``, ``min_insync_replicas``,
``unclean_leader_election``, ``hw_checkpoint``, ``stale_controller``, ``assignment``) mean the same
here, and so does ``max_fetch_records`` (the most records one fetch response carries; 0: no
limit). So do the protocol keys ``generation`` (its former name ``truncation`` is accepted as an
alias, never together with it), ``acks``, ``detect_restarts`` (the controller notices a quick
restart by the registration's czxid, Kafka 2.2+) and ``fenced_controller_writes`` (every controller
write is a multi conditional on ``/controller_epoch``, Kafka 2.1+), and the designer's option
``fenced_reassignment_steps`` (a deposed controller abandons its reassignment instead of
performing the next step). ``reintroduce`` puts back the Kafka bugs of specs/history.toml that carry an
``impl`` key (each a named switch of the cores, read through :meth:`ImplConfig.reintroduces`); another
reproduced bug is refused in one line naming what this implementation lacks (its ``impl_lacks``). The
model's growth keys ``isr_change``, ``metadata_cache`` and ``initial_isr`` are accepted at their defaults only.
``controller_connections = "per-controller"`` gives each controller its own connection to a broker: the step-mode simulator then lets a request overtake those of other
controllers in the broker's inbox without spending ``faults.delayed_requests``. Every protocol generation of
specs/protocol.toml is implemented: ``"high-watermark"`` (the seeds'), ``"kip-101"``, ``"kip-279"``
and ``"kip-320"`` (leader-epoch caches and the OffsetsForLeaderEpoch exchange, see
:mod:`.epoch_cache` and :mod:`.broker`); ``acks = "1"`` acknowledges on the leader's append.

This module is the one place that decides what a generation means here: :class:`ImplConfig` holds
the :class:`~isrcheck.specs.protocol.Generation` and exposes its traits (``cfg.traits``), which the
cores, the epoch cache and the simulator read; none of them compares a generation's name.
The model's bounds on checking (``max_records``, ``[faults]``, ``[operations]``, ``name``,
``description``) are accepted and kept, but only the simulator's scheduler reads them
(``operations.topic_creation`` decides whether the simulated cluster starts with the topic).

Keys of the implementation only:

| key | default | meaning |
|---|---|---|
| ``topic`` | ``"isrcheck"`` | the topic's name in the metadata store |
| ``replica_lag_time_max_ms`` | 500 | a leader drops a follower that has not caught up for this long |
| ``fetch_interval_ms`` | 5 | a follower's pause before fetching again after an error (or after an empty answer when fetches do not wait) |
| ``replica_fetch_wait_max_ms`` | 100 | a leader holds a caught-up follower's fetch this long, answering at once when data or the HW moves (0: answer at once) |
| ``hw_checkpoint_interval_ms`` | 200 | period of the HW checkpoint (``hw_checkpoint = "periodic"``) |
| ``log_flush_interval_ms`` | 100 | period of the log flush (fsync); an unflushed suffix is lost on power loss |
| ``controller_recheck_ms`` | 200 | the controller re-reads the store this often even without a watch event |
| ``max_connection_creation_rate`` | 50 | new connections a broker or controller accepts a second after a burst of 64 (Kafka's ``max.connection.creation.rate``, KIP-612); more wait in the listen backlog |

Errors are :class:`ConfigError` with a one-line message.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from isrcheck.specs import history
from isrcheck.specs.inputs import InputError, Kind, read_toml
from isrcheck.specs.protocol import (
    DEFAULT_GENERATION,
    GENERATION_ALIASES,
    GENERATION_KEY,
    GENERATION_NAMES,
    GENERATIONS,
    Generation,
    Traits,
    generation_setting,
)

ACKS = ("all", "1")
CONTROLLER_CONNECTIONS = ("shared", "per-controller")
#: the protocol generations this implementation has (all of specs/protocol.toml)
IMPLEMENTED_GENERATIONS: tuple[Generation, ...] = GENERATIONS


class ConfigError(ValueError):
    """A configuration that cannot be used; the message is one line."""


@dataclass(frozen=True)
class ImplConfig:
    brokers: int = 3
    partitions: int = 1
    replication_factor: int = 3
    max_records: int = 2
    max_fetch_records: int = 0  # the most records a fetch response carries (0: no limit)
    min_insync_replicas: int = 1
    unclean_leader_election: bool = False
    hw_checkpoint: str = "periodic"
    stale_controller: bool = True
    generation: Generation = DEFAULT_GENERATION
    acks: str = "all"
    detect_restarts: bool = False
    controller_connections: str = "shared"
    fenced_controller_writes: bool = False
    fenced_reassignment_steps: bool = False
    reintroduce: tuple[str, ...] = ()  # Kafka bugs put back (specs/history.toml, those with an ``impl`` key)
    assignment: tuple[tuple[int, ...], ...] = ()
    faults: Mapping[str, int] = field(default_factory=dict)
    operations: Mapping[str, Any] = field(default_factory=dict)
    # implementation only
    topic: str = "isrcheck"
    replica_lag_time_max_ms: int = 500
    fetch_interval_ms: int = 5
    hw_checkpoint_interval_ms: int = 200
    log_flush_interval_ms: int = 100
    controller_recheck_ms: int = 200
    replica_fetch_wait_max_ms: int = 100
    max_connection_creation_rate: int = 50

    def __post_init__(self) -> None:
        # dataclasses.replace(cfg, generation="kip-320") gives the name: hold the Generation
        object.__setattr__(self, "generation", check_generation(self.generation))

    @property
    def traits(self) -> Traits:
        """What the generation decides (specs/protocol.toml): the only thing the cores read of it."""
        return self.generation.traits

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    def replicas_of(self, p: int) -> tuple[int, ...]:
        return self.assignment[p]

    @property
    def topic_creation(self) -> bool:
        return bool(self.operations.get("topic_creation", False))

    def reintroduces(self, bug_id: str) -> bool:
        """Whether the pre-fix rule of ``bug_id`` is put back: each switch of the cores asks this at its
        decision point, so a bug's old behaviour is one named condition, off unless configured."""
        return bug_id in self.reintroduce

    def with_changes(self, **changes: Any) -> ImplConfig:
        return from_mapping({**to_mapping(self), **changes})


_MODEL_KEYS = {"brokers", "partitions", "replication_factor", "max_records", "max_fetch_records",
               "min_insync_replicas",
               "unclean_leader_election", "hw_checkpoint", "stale_controller", "assignment", "faults",
               "operations", "name", "description", GENERATION_KEY, *GENERATION_ALIASES, "acks",
               "detect_restarts", "fenced_controller_writes", "controller_connections",
               "fenced_reassignment_steps",
               "failover_offline_replicas",  # KAFKA-3143's fix: the model's only (refused below when true)
               "reintroduce",  # Kafka's bugs put back: those whose mechanism the implementation has
               "isr_change",  # AlterIsr (KIP-497): the model's only (refused below unless "zookeeper")
               "metadata_cache",  # brokers' metadata cache: the model's only (refused below when true)
               "initial_isr",  # a short ISR at the start: the model's scenario only (refused below unless [])
               "unfair"}  # the checker's fairness assumptions: nothing the implementation runs
_IMPL_INT_KEYS = {"replica_lag_time_max_ms": (1, 600_000), "fetch_interval_ms": (0, 60_000),
                  "hw_checkpoint_interval_ms": (1, 600_000), "log_flush_interval_ms": (1, 600_000),
                  "controller_recheck_ms": (1, 600_000), "replica_fetch_wait_max_ms": (0, 60_000),
                  "max_connection_creation_rate": (1, 1_000_000)}
_IMPL_KEYS = {"topic", *_IMPL_INT_KEYS}


def _int(raw: Mapping[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    v = raw.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{key} must be an integer, got {v!r}")
    if not lo <= v <= hi:
        raise ConfigError(f"{key} must be in {lo}..{hi}, got {v}")
    return v


def _bool(raw: Mapping[str, Any], key: str, default: bool) -> bool:
    v = raw.get(key, default)
    if not isinstance(v, bool):
        raise ConfigError(f"{key} must be true or false, got {v!r}")
    return v


def check_generation(value: Any, key: str = GENERATION_KEY) -> Generation:
    """``value`` (a name, or a Generation) as an implemented :class:`Generation`, else a ConfigError."""
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {value!r}")
    if value not in GENERATION_NAMES:
        raise ConfigError(f"{key} must be one of {', '.join(GENERATION_NAMES)}, got {value!r}")
    generation = Generation(value)
    if generation not in IMPLEMENTED_GENERATIONS:
        raise ConfigError(f"{key} {value!r} is not implemented "
                          f"(implemented: {', '.join(g.value for g in IMPLEMENTED_GENERATIONS)})")
    return generation


def _generation(raw: Mapping[str, Any]) -> Generation:
    """The key ``generation``, or its alias ``truncation`` (never both); the default when neither."""
    try:
        given = generation_setting(raw)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return DEFAULT_GENERATION if given is None else check_generation(given[1], given[0])


def from_mapping(raw: Mapping[str, Any]) -> ImplConfig:
    """A validated configuration from a TOML-shaped mapping (unknown keys are errors)."""
    if not isinstance(raw, Mapping):
        raise ConfigError("a configuration must be a table")
    unknown = sorted(set(raw) - _MODEL_KEYS - _IMPL_KEYS)
    if unknown:
        raise ConfigError(f"unknown configuration key {unknown[0]!r}")
    reintroduce = _reintroduce_ids(raw.get("reintroduce", []))
    if raw.get("failover_offline_replicas"):
        raise ConfigError("failover_offline_replicas is not implemented by the reference implementation")
    if raw.get("isr_change", "zookeeper") != "zookeeper":  # its leaders write their ISR changes themselves
        raise ConfigError(f"isr_change = {raw.get('isr_change')!r} is not implemented by the reference "
                          "implementation (its leaders write their ISR changes to the store: \"zookeeper\")")
    if raw.get("metadata_cache"):  # its brokers learn their leader from LeaderAndIsr alone
        raise ConfigError("metadata_cache is not implemented by the reference implementation")
    if raw.get("initial_isr"):  # its topics start as created: every replica in the ISR
        raise ConfigError("initial_isr is not implemented by the reference implementation (a topic starts "
                          "with every replica in its ISR)")
    brokers = _int(raw, "brokers", 3, 1, 64)
    partitions = _int(raw, "partitions", 1, 1, 64)
    rf = _int(raw, "replication_factor", min(3, brokers), 1, brokers)
    max_records = _int(raw, "max_records", 2, 0, 1_000_000)
    max_fetch_records = _int(raw, "max_fetch_records", 0, 0, 1_000_000)
    min_isr = _int(raw, "min_insync_replicas", 1, 1, rf)
    unclean = _bool(raw, "unclean_leader_election", False)
    stale = _bool(raw, "stale_controller", True)
    hw_checkpoint = raw.get("hw_checkpoint", "periodic")
    if hw_checkpoint not in ("periodic", "every-change"):
        raise ConfigError(f"hw_checkpoint must be \"periodic\" or \"every-change\", got {hw_checkpoint!r}")
    generation = _generation(raw)
    acks = raw.get("acks", "all")
    if isinstance(acks, int) and not isinstance(acks, bool):
        acks = str(acks)
    if acks not in ACKS:
        raise ConfigError(f"acks must be \"all\" or \"1\", got {acks!r}")
    detect = _bool(raw, "detect_restarts", False)
    connections = raw.get("controller_connections", "shared")
    if connections not in CONTROLLER_CONNECTIONS:
        raise ConfigError(f"controller_connections must be \"shared\" or \"per-controller\", got {connections!r}")
    fenced = _bool(raw, "fenced_controller_writes", False)
    fenced_steps = _bool(raw, "fenced_reassignment_steps", False)
    topic = raw.get("topic", "isrcheck")
    if not isinstance(topic, str) or not topic or not all(c.isalnum() or c in "._-" for c in topic):
        raise ConfigError(f"topic must be a non-empty name of letters, digits, '.', '_' or '-', got {topic!r}")
    if "assignment" in raw:
        assignment = raw["assignment"]
        if not isinstance(assignment, (list, tuple)) or len(assignment) != partitions:
            raise ConfigError(f"assignment must have one list per partition ({partitions})")
        out = []
        for p, ar in enumerate(assignment):
            if (not isinstance(ar, (list, tuple)) or len(ar) != rf
                    or any(isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= brokers for b in ar)
                    or len(set(ar)) != len(ar)):
                raise ConfigError(f"assignment[{p}] must be {rf} distinct broker ids in 1..{brokers}, got {ar!r}")
            out.append(tuple(ar))
        assignment_t = tuple(out)
    else:
        assignment_t = tuple(tuple((p + i) % brokers + 1 for i in range(rf)) for p in range(partitions))
    faults = raw.get("faults", {})
    operations = raw.get("operations", {})
    if not isinstance(faults, Mapping) or not isinstance(operations, Mapping):
        raise ConfigError("faults and operations must be tables")
    ints = {k: _int(raw, k, d, *_IMPL_INT_KEYS[k]) for k, d in
            (("replica_lag_time_max_ms", 500), ("fetch_interval_ms", 5), ("hw_checkpoint_interval_ms", 200),
             ("log_flush_interval_ms", 100), ("controller_recheck_ms", 200), ("replica_fetch_wait_max_ms", 100),
             ("max_connection_creation_rate", 50))}
    cfg = ImplConfig(brokers=brokers, partitions=partitions, replication_factor=rf, max_records=max_records,
                      max_fetch_records=max_fetch_records,
                      min_insync_replicas=min_isr, unclean_leader_election=unclean, hw_checkpoint=hw_checkpoint,
                      stale_controller=stale, acks=acks, detect_restarts=detect,
                      controller_connections=connections,
                      fenced_controller_writes=fenced, fenced_reassignment_steps=fenced_steps,
                      assignment=assignment_t, faults=dict(faults),
                      operations=dict(operations), generation=generation, topic=topic, **ints)
    return replace(cfg, reintroduce=_reintroduce(reintroduce, cfg))


def _reintroduce_ids(value: Any) -> tuple[str, ...]:
    """The ``reintroduce`` list: bugs of specs/history.toml the model reproduces and this implementation
    can put back (an ``impl`` key); a bug whose mechanism it lacks is refused with the reason the
    history gives (``impl_lacks``). Checked before the other keys, so that a pair's configuration
    (history-kafka-13091: isr_change = "alter-isr" too) is refused naming the bug."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
        raise ConfigError(f"reintroduce must be a list of bug ids such as \"KAFKA-708\", got {value!r}")
    known = ", ".join(b.id for b in history.in_impl())
    for i, bug_id in enumerate(value):
        if bug_id in value[:i]:
            raise ConfigError(f"reintroduce: {bug_id} is listed twice")
        try:
            b = history.bug(bug_id)
        except KeyError:
            raise ConfigError(f"reintroduce: unknown bug {bug_id!r} (the implementation puts back: {known})") from None
        if b.classification != "reproduced":
            raise ConfigError(f"reintroduce: {bug_id} is not reproduced (classified {b.classification!r} in "
                              f"specs/history.toml; the implementation puts back: {known})")
        if b.impl is None:
            raise ConfigError(f"reintroduce: the reference implementation has no {b.impl_lacks}, so {bug_id} "
                              f"cannot be put back in it (it can: {known})")
    return tuple(value)


def _reintroduce(ids: tuple[str, ...], cfg: ImplConfig) -> tuple[str, ...]:
    """``ids``, once each bug's ``requires`` is met by ``cfg``: elsewhere its pre-fix rule would change
    nothing here either (the model's own rule, model/config.py)."""
    for bug_id in ids:
        for key, want in history.bug(bug_id).requires:
            have = getattr(cfg, key) if hasattr(cfg, key) else getattr(cfg.traits, key)
            if have != want or isinstance(have, bool) != isinstance(want, bool):
                raise ConfigError(f"reintroduce: {bug_id} needs {key} = {_toml(want)}, which this configuration "
                                  f"does not have ({key} = {_toml(have)}), so its pre-fix rule would change nothing")
    return ids


def _toml(value: Any) -> str:
    """``value`` as a configuration file writes it (true, "kip-320"), for the one-line errors."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else str(value)


def to_mapping(cfg: ImplConfig) -> dict[str, Any]:
    out = {k: getattr(cfg, k) for k in ("brokers", "partitions", "replication_factor", "max_records",
                                        "max_fetch_records",
                                        "min_insync_replicas", "unclean_leader_election", "hw_checkpoint",
                                        "stale_controller", "generation", "acks", "detect_restarts",
                                        "controller_connections",
                                        "fenced_controller_writes", "fenced_reassignment_steps", "topic",
                                        *_IMPL_INT_KEYS)}
    if cfg.reintroduce:
        out["reintroduce"] = list(cfg.reintroduce)
    out["generation"] = cfg.generation.value
    out["assignment"] = [list(a) for a in cfg.assignment]
    out["faults"] = dict(cfg.faults)
    out["operations"] = dict(cfg.operations)
    return out


def load_file(path: str) -> ImplConfig:
    """Read a configuration file through the bounded reader (specs/inputs.py: a regular file, its
    size and nesting capped), so that ``cluster up --config /dev/zero`` is an error, not a hang."""
    try:
        raw = read_toml(path, Kind.CONFIG)
    except InputError as e:
        raise ConfigError(str(e)) from None
    return from_mapping(raw)


__all__ = ["ConfigError", "ImplConfig", "IMPLEMENTED_GENERATIONS", "from_mapping", "to_mapping", "load_file",
           "check_generation"]
