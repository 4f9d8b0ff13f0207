"""The model's state: nested NamedTuples of ints, bitmasks and tuples.

Everything here is immutable and hashes in C (no strings, no enums with salted hashes, no
frozensets). The checker's fingerprint of a state (:mod:`statehash`) hashes it part by part, with a
fixed number for the two places a state holds None (``hash(None)`` differs between processes
before Python 3.12), so it is the same in every process. Broker sets are bitmasks (see :mod:`brokersets`); per-broker tuples are indexed by ``broker - 1``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

from isrcheck.engine.core import tuple_constructor

NO_LEADER: Final = 0
UNKNOWN_EPOCH: Final = -1

# Request kinds (the first field of every request, so two kinds never compare equal).
LEADER_AND_ISR: Final = 1
STOP_REPLICA: Final = 2
UPDATE_METADATA: Final = 3


class LeaderAndIsr(NamedTuple):
    kind: int
    controller_epoch: int
    partition: int
    leader: int
    isr: int
    leader_epoch: int
    zk_version: int
    replicas: tuple[int, ...]


class StopReplica(NamedTuple):
    kind: int
    controller_epoch: int
    partition: int
    delete: bool


class UpdateMetadata(NamedTuple):
    kind: int
    controller_epoch: int
    #: where brokers keep a metadata cache: the sender's live brokers (a mask), then the leader epoch of
    #: each partition as it caches them; () otherwise. One tuple, so that the request's arity (3) tells
    #: it apart from the other requests in the codec
    metadata: tuple[int, ...]


Request = LeaderAndIsr | StopReplica | UpdateMetadata


class ZkPartition(NamedTuple):
    """A partition as the metadata store holds it."""

    replicas: tuple[int, ...]  # assigned replicas (AR); () when the partition has no znode
    leader: int  # NO_LEADER when none
    isr: int  # bitmask
    leader_epoch: int
    version: int  # zkVersion of the leader/ISR znode; 0 while that znode does not exist
    controller_epoch: int  # epoch of the controller that last wrote leader/ISR
    ext: tuple[int, ...] = ()  # a variant's partition fields (model/extension.py), () without one


class Zk(NamedTuple):
    live: int  # registered brokers (ephemeral znodes), bitmask
    registrations: tuple[int, ...]  # per broker, how often it registered so far (a stand-in for the czxid)
    controller_epoch: int
    partitions: tuple[ZkPartition, ...]
    reassign: tuple[tuple[int, ...], ...]  # /admin/reassign_partitions: target per partition, () if none
    preferred: int  # /admin/preferred_replica_election: bitmask of partitions
    deleting: int  # /admin/delete_topics: bitmask of partitions queued for deletion


class Controller(NamedTuple):
    """One controller's in-memory context. The active one has the highest epoch."""

    epoch: int
    live: int  # the brokers it believes alive
    registrations: tuple[int, ...]  # the registration counts it has seen (Zk.registrations)
    partition_states: tuple[int, ...]  # PartitionState per partition
    replica_states: tuple[tuple[int, ...], ...]  # ReplicaState per partition, per broker
    reassign_step: tuple[int, ...]  # next step (numbered as in specs/protocol.toml) of a reassignment, 0 for none
    reassign_old: tuple[tuple[int, ...], ...]  # OAR per partition while reassigning
    reassign_new: tuple[tuple[int, ...], ...]  # RAR per partition while reassigning
    shutting_down: int  # brokers in controlled shutdown, bitmask
    ext: tuple[int, ...] = ()  # a variant's controller fields (model/extension.py), () without one


class Replica(NamedTuple):
    """One broker's copy of one partition. ``log`` and ``checkpoint`` survive a crash."""

    log: tuple[int, ...]
    hw: int
    checkpoint: int  # HW checkpoint file
    leader: int  # who this broker believes leads; itself when it leads; NO_LEADER when unknown
    leader_epoch: int
    isr: int  # leader only: its cached ISR
    zk_version: int  # leader only: cached version of the leader/ISR znode
    remote_leo: tuple[int, ...]  # leader only: each broker's LEO as last fetched, () otherwise
    pending: int  # leader only: ids of records appended and not yet acknowledged, bitmask
    assigned: int  # leader only: the assignment (AR) of its last LeaderAndIsr, bitmask; 0 otherwise
    # Leader-epoch generations only (always empty/zero under the seeds' high-watermark rule):
    epochs: tuple[tuple[int, int], ...] = ()  # leader-epoch cache: (epoch, start offset), on disk
    fetch_state: int = 0  # FETCHING, or a follower reconciling its log (see below)
    answer: tuple[int, ...] = ()  # the (epoch, end offset) answer of OffsetsForLeaderEpoch, once received
    ext: tuple[int, ...] = ()  # a variant's replica fields (model/extension.py), () without one


FETCHING: Final = 0  # the follower fetches normally
ASK_EPOCH_END: Final = 1  # it must ask its leader where its latest epoch ends before fetching
TRUNCATE_PENDING: Final = 2  # it has the answer and must truncate before fetching


class Broker(NamedTuple):
    alive: bool
    controller_epoch: int  # highest controller epoch seen since start-up
    replicas: tuple[Replica | None, ...]  # per partition; None when the broker hosts no replica
    ext: tuple[int, ...] = ()  # a variant's broker fields (model/extension.py), () without one


class Ghost(NamedTuple):
    """History variables for the properties; no protocol step reads them."""

    produced: int  # records handed out so far (the next id is produced + 1)
    acked: int  # ids acknowledged to a producer, bitmask
    exposed: tuple[int, ...]  # longest prefix any leader has made visible below its HW
    reassign_origin: tuple[int, ...]  # AR when the pending reassignment was requested


class Budget(NamedTuple):
    """Remaining perturbations and administrative operations: one field per budgeted fault
    (``Config.faults``) and per counted operation (``Config.operations``), named as there; the
    initial budget is read from the configuration by these names (:func:`initial_budget`)."""

    crashes: int
    lossy_crashes: int
    undetected_restarts: int
    controller_failovers: int
    isr_shrinks: int
    delayed_requests: int
    session_expiries: int
    lost_isr_answers: int
    lost_fetch_answers: int
    preferred_elections: int
    controlled_shutdowns: int
    topic_deletions: int


class State(NamedTuple):
    zk: Zk
    controller: Controller  # the active controller
    stale: Controller | None  # a deposed controller that has not yet noticed
    brokers: tuple[Broker, ...]
    inbox: tuple[tuple[Request, ...], ...]  # controller requests in flight, per broker, oldest first
    ghost: tuple[Ghost, ...]  # per partition
    budget: Budget
    reassignments: tuple[tuple[int, tuple[int, ...]], ...]  # (partition, target) not yet requested


# ---------------------------------------------------------------------------- fast constructors
# Calling a NamedTuple class runs its generated ``__new__``, interpreted Python even in the compiled
# build; on the checker's hot path that was the largest cost of a step. These build the same values
# (equal, same class, same hash) through ``_new``: engine/_newtuple.c in the compiled build (one
# allocation, no argument parsing), ``tuple.__new__`` otherwise. Every field is passed: a NamedTuple
# built this way gets no defaults filled in. ``ext`` (a variant's fields) has no default either, so
# that a step rebuilding an object cannot drop them by omission (the type checker of the compiled
# build refuses such a call).
#
# Final: the compiled build keeps these in C variables instead of looking each name up in the
# module's dictionary on every call (8% of a check's time before).
_new: Final[Callable[..., Any]] = tuple_constructor()
_REPLICA: Final = Replica
_BROKER: Final = Broker
_ZK_PARTITION: Final = ZkPartition
_ZK: Final = Zk
_CONTROLLER: Final = Controller
_GHOST: Final = Ghost
_STATE: Final = State
_LEADER_AND_ISR: Final = LeaderAndIsr
_STOP_REPLICA: Final = StopReplica
_UPDATE_METADATA: Final = UpdateMetadata
_BUDGET: Final = Budget


def make_replica(log: tuple[int, ...], hw: int, checkpoint: int, leader: int, leader_epoch: int, isr: int,
                 zk_version: int, remote_leo: tuple[int, ...], pending: int, assigned: int,
                 epochs: tuple[tuple[int, int], ...], fetch_state: int, answer: tuple[int, ...],
                 ext: tuple[int, ...]) -> Replica:
    return _new(_REPLICA, log, hw, checkpoint, leader, leader_epoch, isr, zk_version, remote_leo, pending, assigned,
                epochs, fetch_state, answer, ext)


def make_broker(alive: bool, controller_epoch: int, replicas: tuple[Replica | None, ...],
                ext: tuple[int, ...]) -> Broker:
    return _new(_BROKER, alive, controller_epoch, replicas, ext)


def make_zk_partition(replicas: tuple[int, ...], leader: int, isr: int, leader_epoch: int, version: int,
                      controller_epoch: int, ext: tuple[int, ...]) -> ZkPartition:
    return _new(_ZK_PARTITION, replicas, leader, isr, leader_epoch, version, controller_epoch, ext)


def make_zk(live: int, registrations: tuple[int, ...], controller_epoch: int, partitions: tuple[ZkPartition, ...],
            reassign: tuple[tuple[int, ...], ...], preferred: int, deleting: int) -> Zk:
    return _new(_ZK, live, registrations, controller_epoch, partitions, reassign, preferred, deleting)


def make_controller(epoch: int, live: int, registrations: tuple[int, ...], partition_states: tuple[int, ...],
                    replica_states: tuple[tuple[int, ...], ...], reassign_step: tuple[int, ...],
                    reassign_old: tuple[tuple[int, ...], ...], reassign_new: tuple[tuple[int, ...], ...],
                    shutting_down: int, ext: tuple[int, ...]) -> Controller:
    return _new(_CONTROLLER, epoch, live, registrations, partition_states, replica_states, reassign_step,
                reassign_old, reassign_new, shutting_down, ext)


def make_ghost(produced: int, acked: int, exposed: tuple[int, ...], reassign_origin: tuple[int, ...]) -> Ghost:
    return _new(_GHOST, produced, acked, exposed, reassign_origin)


def make_state(zk: Zk, controller: Controller, stale: Controller | None, brokers: tuple[Broker, ...],
               inbox: tuple[tuple[Request, ...], ...], ghost: tuple[Ghost, ...], budget: Budget,
               reassignments: tuple[tuple[int, tuple[int, ...]], ...]) -> State:
    return _new(_STATE, zk, controller, stale, brokers, inbox, ghost, budget, reassignments)


def make_leader_and_isr(controller_epoch: int, partition: int, leader: int, isr: int, leader_epoch: int,
                        zk_version: int, replicas: tuple[int, ...]) -> LeaderAndIsr:
    return _new(_LEADER_AND_ISR, LEADER_AND_ISR, controller_epoch, partition, leader, isr, leader_epoch, zk_version,
                replicas)


def make_stop_replica(controller_epoch: int, partition: int, delete: bool) -> StopReplica:
    return _new(_STOP_REPLICA, STOP_REPLICA, controller_epoch, partition, delete)


def make_update_metadata(controller_epoch: int, metadata: tuple[int, ...]) -> UpdateMetadata:
    return _new(_UPDATE_METADATA, UPDATE_METADATA, controller_epoch, metadata)


def initial_budget(config: Any) -> Budget:
    """The budget a configuration gives: each field of :class:`Budget` read, by its name, from the
    configuration's ``faults`` or ``operations`` (a test holds the three lists to one another)."""
    faults, operations = config.faults, config.operations
    return Budget(*[getattr(faults, name) if hasattr(faults, name) else getattr(operations, name)
                    for name in Budget._fields])


def budget_with(budget: Budget, index: int, value: int) -> Budget:
    """``budget`` with field number ``index`` set to ``value``."""
    values = list(budget)
    values[index] = value
    return _new(_BUDGET, *values)
