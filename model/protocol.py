"""The protocol's replaceable parts, bundled with the configuration.

A :class:`Protocol` is what the model consults whenever a design decision could go another way:
which selector elects, what the controller's ISR removal leaves, how the high watermark advances,
what a crash leaves of a replica. Every such decision is one method here (the README's hook table
lists them with the step that calls each), and the model's steps decide nothing of the kind
themselves: a designer's variant subclasses :class:`Protocol`, overrides the methods of its change
and may add state (``fields``, model/extension.py), actions (``extra_actions``) and properties
(``extra_properties``). Hooks that decide a write return the value written; hooks named ``on_*``
are the places where a variant adds effects of its own to a step (the defaults add none).
"""
from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any, NamedTuple
from typing import Protocol as Structural

from mypy_extensions import mypyc_attr

from isrcheck.engine.core import Property
from isrcheck.specs.actions import add_variant_actions
from isrcheck.specs.protocol import EpochAnswer, Generation

from . import epochs as E
from .brokersets import bit, members, size
from .config import Config
from .extension import Extension, Field, Scope
from .follower import become_follower_reconciling_by_epoch, become_follower_truncating_to_hw
from .selectors import SELECTORS, Election, Selector, SelectorInput
from .state import FETCHING, NO_LEADER, Broker, Controller, LeaderAndIsr, Replica, ZkPartition, make_replica


# What the decisions below read of the model's working copies (model/world.py: World and
# ControllerWork satisfy these). Described here rather than imported, so that world.py, which holds
# the Protocol, and this module do not import each other.
class WorldView(Structural):
    """The world of one step (a :class:`~.world.World`), as far as a decision reads it."""

    @property
    def controller_epoch(self) -> int: ...  # the controller epoch in ZooKeeper

    @property
    def parts(self) -> Sequence[ZkPartition]: ...  # ZooKeeper's partitions

    @property
    def brokers(self) -> Sequence[Broker]: ...


class ControllerView(Structural):
    """One controller's context (a :class:`~.world.ControllerWork`), as far as a decision reads it."""

    @property
    def epoch(self) -> int: ...

    @property
    def live(self) -> int: ...


class Removal(Enum):
    """Why the controller takes a replica out of the ISR (the operation moving it to OfflineReplica)."""

    BROKER_FAILURE = "broker-failure"
    CONTROLLED_SHUTDOWN = "controlled-shutdown"
    REASSIGNMENT = "reassignment"  # step old-offline: the replicas of OAR not in RAR
    DELETION = "deletion"  # topic deletion


class Stop(Enum):
    """How a broker stopped."""

    CRASH = "crash"  # the process died; its log survives (flushed)
    LOSSY_CRASH = "lossy-crash"  # the process died and its log lost an unflushed suffix
    CONTROLLED_SHUTDOWN = "controlled-shutdown"  # it flushed and checkpointed, then stopped


class IsrChange(NamedTuple):
    """A leader/ISR write a hook decided: the leader, the ISR, and the partition's variant fields
    (None: unchanged). Hooks return the write instead of performing it, so that a write the model
    then refuses (a fenced controller, a stale znode version) leaves no trace of the decision."""

    leader: int
    isr: int
    fields: tuple[int, ...] | None = None


class VariantAction(NamedTuple):
    """An action a variant adds: its name (not one of the model's), the kinds of its arguments (as
    specs/actions.toml names them: "broker", "partition", "controller", "int", ...) and whether
    liveness checks assume it weakly fair. The variant's :meth:`Protocol.extra_enabled` gives its
    enabled instances and :meth:`Protocol.extra_apply` its effect."""

    name: str
    args: tuple[str, ...] = ()
    fair: bool = False
    doc: str = ""


@mypyc_attr(allow_interpreted_subclasses=True)  # designers' variants subclass it (compiled build)
class Protocol:
    """The protocol selected by a configuration: the seeds' (0.8-era) design by default, with the
    later generations and options of specs/05-replication.md switched on by configuration keys.
    Subclass and override a method to describe a designer's variant (README, "Variants")."""

    name = "kafka"

    def __init__(self, config: Config) -> None:
        self.config = config
        # The generation's traits (specs/protocol.toml), one attribute per decision; the methods
        # below and the model's steps read these, never the generation's name.
        traits = config.generation.traits
        #: replicas keep a leader-epoch cache, and a new follower reconciles instead of truncating to its HW
        self.uses_leader_epochs: bool = traits.leader_epochs
        #: OffsetsForLeaderEpoch answers with an epoch and its end (KIP-279), not only an end offset (KIP-101)
        self.answers_with_epoch: bool = traits.epoch_answer is EpochAnswer.EPOCH_AND_END_OFFSET
        #: fetches and epoch queries carry the follower's leader epoch and are fenced (KIP-320)
        self.fences_by_leader_epoch: bool = traits.fenced_by_leader_epoch
        #: a follower reconciles on every leader-epoch change, not only on a leader change (KAFKA-7164)
        self.reconciles_on_epoch_change: bool = traits.reconcile_on_epoch_change
        #: joining the ISR also needs the start of the leader's current epoch (KAFKA-7128)
        self.isr_join_needs_epoch_start: bool = traits.isr_join_needs_epoch_start
        #: after an ISR removal every remaining replica gets LeaderAndIsr, not only the leader
        self.isr_removal_tells_replicas: bool = traits.isr_removal_tells_replicas
        # The configuration values every step reads, copied as plain attributes: in the compiled
        # build these are struct fields, while a field of the (interpreted) Config dataclass is a
        # dictionary lookup.
        self.max_records: int = config.max_records
        #: the most records one fetch copies (0: no limit)
        self.max_fetch_records: int = config.max_fetch_records
        self.min_insync_replicas: int = config.min_insync_replicas
        self.acks_one: bool = config.acks == "1"
        self.periodic_checkpoints: bool = config.hw_checkpoint == "periodic"
        self.topic_creation: bool = config.operations.topic_creation
        self.unclean_leader_election: bool = config.unclean_leader_election
        self._detect_restarts: bool = config.detect_restarts
        #: each controller has its own connection to a broker (``controller_connections``): a request
        #: may overtake those of other controllers without spending ``faults.delayed_requests``
        self.per_controller_connections: bool = config.controller_connections == "per-controller"
        self._fenced_controller_writes: bool = config.fenced_controller_writes
        self._fenced_reassignment_steps: bool = config.fenced_reassignment_steps
        self._failover_offline_replicas: bool = config.failover_offline_replicas
        #: UpdateMetadata carries the sender's live brokers (set by a protocol whose brokers keep a
        #: metadata cache, model/metadatacache.py); 0 otherwise
        self.metadata_carries_live: bool = False
        # A variant's own state and actions (class attributes ``fields`` and ``actions`` of the
        # subclass; read dynamically, as an interpreted subclass defines them).
        declared: Any = getattr(type(self), "fields", ())
        #: the variant's fields, laid out per scope (model/extension.py); empty for the model itself
        self.extension: Extension = Extension(declared)
        added: Any = getattr(type(self), "actions", ())
        #: the actions a variant adds (empty for the model itself)
        self.variant_actions: tuple[VariantAction, ...] = tuple(added)
        #: whether enabled_actions must ask the variant for its actions (a flag: the model's own
        #: protocol pays one attribute read per state for them)
        self.has_extra_actions: bool = bool(self.variant_actions)
        if self.variant_actions:  # their text and JSON forms are read like the model's from now on
            add_variant_actions([(a.name, tuple(a.args), a.fair) for a in self.variant_actions])

    @property
    def generation(self) -> Generation:
        return self.config.generation

    # ------------------------------------------------------------------ a variant's additions
    def extra_properties(self) -> list[Property]:
        """Properties a variant adds to the standard ones (checked like them)."""
        return []

    def extra_enabled(self, state: Any) -> list[Any]:
        """The enabled instances of the variant's own actions in ``state`` (their guards), as
        ``model.actions.Action`` values (``make_action(name, args)``); checked after the model's."""
        return []

    def extra_apply(self, w: Any, action: Any) -> None:
        """The effect of one of the variant's own actions on the world ``w`` of the step."""
        raise ValueError(f"{action} is not an action of this protocol")

    # ------------------------------------------------------------------ variant fields
    def field(self, obj: Any, name: str) -> int:
        """The value of the variant field ``name`` in a state object (a ZkPartition, Replica,
        Broker or Controller, or the controller's working copy): the scope follows from the object."""
        scope = _scope_of(obj)
        return self.extension.get(scope, obj.ext, name)

    def with_field(self, obj: Any, name: str, value: int) -> tuple[int, ...]:
        """``obj``'s variant fields with ``name`` set to ``value`` (a new ``ext`` tuple, for an
        :class:`IsrChange` or an :class:`Election`'s ``fields``)."""
        return self.extension.with_value(_scope_of(obj), obj.ext, name, value)

    # ------------------------------------------------------------------ the controller
    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        """Run leader selector ``selector``; raise NoEligibleLeader when none qualifies.

        The input carries what the controller knows of the partition (assignment, leader, ISR, live
        brokers, the reassignment target, the partition's variant fields) and what a designer's
        selector may read besides: every broker's replica (log, high watermark, leader epoch,
        epoch cache). An Election may carry new partition ``fields``, written with the leader."""
        return SELECTORS[selector](inp)

    def initial_leader_and_isr(self, live_replicas: tuple[int, ...]) -> IsrChange:
        """A new partition's first leader and ISR (NewPartition -> OnlinePartition): the first live
        assigned replica leads, every live assigned replica is in the ISR."""
        isr = 0
        for b in live_replicas:
            isr |= bit(b)
        return IsrChange(live_replicas[0], isr)

    def isr_removal(self, w: WorldView, c: ControllerView, p: int, removed: int, cause: Removal) -> IsrChange:
        """What the controller writes when it takes ``removed`` out of partition ``p``'s ISR (a
        replica moving to OfflineReplica: broker failure, controlled shutdown, reassignment step
        old-offline, topic deletion; ``cause`` says which).

        The seeds' rule for every cause: a removed leader leaves the partition leaderless, and the
        last ISR member is kept unless unclean election is enabled (then the ISR may become empty).
        """
        zp = w.parts[p]
        leader = NO_LEADER if zp.leader == removed else zp.leader
        isr = zp.isr & ~bit(removed)
        if not isr and not self.unclean_leader_election:
            isr = zp.isr
        return IsrChange(leader, isr)

    def isr_removal_receivers(self, leader: int, assignment: tuple[int, ...], removed: int) -> tuple[int, ...]:
        """Who gets LeaderAndIsr after the controller takes ``removed`` out of the ISR.

        The seeds (0.8) tell only the leader. From 0.11 on every remaining replica is told, which
        KIP-320's fencing needs: a follower left on the old leader epoch would be fenced forever.
        """
        if not self.isr_removal_tells_replicas:
            return (leader,) if leader else ()
        return tuple(r for r in assignment if r != removed)

    def controller_fenced(self, w: WorldView, c: ControllerView) -> bool:
        """Whether ZooKeeper refuses this controller's writes outright.

        The 0.8 design does not fence them (only the leader/ISR znode's controller-epoch check
        protects a partition), so a deposed controller can still write. With
        ``fenced_controller_writes`` (Kafka 2.1+) every write is a multi-op conditional on the
        controller epoch znode, which a deposed controller fails.
        """
        return self._fenced_controller_writes and c.epoch != w.controller_epoch

    def controller_write_refused(self, w: WorldView, c: ControllerView, p: int) -> bool:
        """Whether controller ``c`` may not write partition ``p``'s leader/ISR znode: a newer
        controller stamped it (the znode's controller epoch, 0.8.0 on, KAFKA-532's fix), or
        ZooKeeper refuses a deposed controller outright (:meth:`controller_fenced`)."""
        return w.parts[p].controller_epoch > c.epoch or self.controller_fenced(w, c)

    def reassignment_step_fenced(self, w: WorldView, c: ControllerView) -> bool:
        """Whether this controller abandons its reassignment instead of performing the next step.

        The seeds' design performs the in-memory steps of a reassignment whoever is controller
        now. With ``fenced_reassignment_steps`` (a designer's option) the controller reads the
        controller epoch znode before each step and, once deposed, forgets the reassignment; the
        new controller resumes it from /admin/reassign_partitions.
        """
        return self._fenced_reassignment_steps and c.epoch != w.controller_epoch

    def reassignment_caught_up(self, isr: int, old: tuple[int, ...], new: tuple[int, ...]) -> bool:
        """Whether a reassignment from ``old`` (OAR) to ``new`` (RAR) may leave step caught-up, with
        the partition's ISR ``isr`` in ZooKeeper: the ZooKeeper controller waits until every
        replica of RAR is in the ISR (a KRaft rule before KAFKA-15665 waited only for RAR - OAR)."""
        for r in new:
            if not isr >> r & 1:
                return False
        return True

    def resignation_stops_controller(self) -> bool:
        """Whether a deposed controller that notices the loss of its session (ResignController)
        stops acting: its context is dropped and its listeners do nothing more, as every listener
        checks that its broker is still the active controller (0.10.2 on, KAFKA-4447's fix)."""
        return True

    def failover_takes_dead_replicas_offline(self) -> bool:
        """Whether a new controller, after moving the live replicas to OnlineReplica, moves every
        replica of a dead broker to OfflineReplica (out of the ISR, leader epoch + 1), as Kafka
        does from 2.3 (KAFKA-3143's fix, ``failover_offline_replicas``). The seeds only record them
        as OfflineReplica, so a follower that died during the failover stays in the ISR."""
        return self._failover_offline_replicas

    def isr_membership_view(self, w: WorldView, c: ControllerView, p: int) -> int:
        """The ISR controller ``c`` consults to decide whether taking a replica of partition ``p``
        offline needs an ISR removal at all: ZooKeeper's, read at that moment (0.8.1 on,
        KAFKA-1170's fix; before it, the controller's own cached copy)."""
        return w.parts[p].isr

    def cache_leadership(self, w: Any, c: Any, p: int) -> None:
        """Controller ``c`` records in its context what it just wrote to partition ``p``'s
        leader/ISR znode. The model's controller keeps no such copy (it reads ZooKeeper); a
        protocol whose brokers keep a metadata cache does (model/metadatacache.py): its
        UpdateMetadata is built from it."""

    def caches_leader_epoch_bumps(self) -> bool:
        """Whether a reassignment's leader epoch bump (steps bump-epoch and leader) is recorded in
        the controller's context like any other write (2.4 on, KAFKA-9212's fix)."""
        return True

    def cached_leader_epochs(self, w: WorldView, c: ControllerView) -> tuple[int, ...]:
        """The leader epoch of each partition as controller ``c``'s context holds it, which its
        UpdateMetadata carries: the model keeps no copy, so ZooKeeper's."""
        return tuple(zp.leader_epoch for zp in w.parts)

    def on_controller_write(self, w: Any, c: Any, p: int) -> None:
        """Effects a variant adds after controller ``c`` wrote partition ``p``'s leader/ISR znode
        (an election, an ISR removal, a leader-epoch bump); ``w.parts[p]`` holds what it wrote."""

    def on_reassignment_request_removed(self, w: Any, c: Any, p: int) -> None:
        """Effects a variant adds when controller ``c`` removed partition ``p``'s request from
        /admin/reassign_partitions (a start refused, or a reassignment completed). The model keeps
        one request per partition, so removing one touches no other (KAFKA-6193's fix)."""

    def on_controller_failover(self, w: Any, c: Any) -> None:
        """Effects a variant adds when ``c`` becomes the active controller, right after it adopts
        ZooKeeper's registrations and before it moves any replica or partition."""

    def broker_change_reads(self, w: WorldView, c: ControllerView) -> tuple[int, int]:
        """What controller ``c``'s broker-change listener reads (ProcessBrokerChange): the broker
        ids listed and the registrations it then reads, as masks. New and dead brokers follow from
        the first, the controller's live set from the second. The model reads both at once, in one
        step, so they agree (Kafka computes all three from the registrations read since 0.10.0,
        KAFKA-3085's fix)."""
        live: int = getattr(w, "live")
        return live, live

    def failover_sends_metadata_first(self) -> bool:
        """Whether a new controller sends UpdateMetadata to the live brokers before any
        LeaderAndIsr of its failover (0.10.2 on, KAFKA-4443's fix) rather than last. Without a
        metadata cache at the brokers (the model's own) the order changes nothing they decide, so
        the model keeps the older order, last."""
        return False

    def detects_restarts(self) -> bool:
        """Whether the controller notices a broker that re-registered before it looked (2.2+)."""
        return self._detect_restarts

    def on_broker_failure(self, w: Any, c: Any, dead: int) -> None:
        """Effects a variant adds when controller ``c`` handles the failure of the brokers in the
        mask ``dead`` (after the model's: elections, replicas to OfflineReplica)."""

    def on_broker_startup(self, w: Any, c: Any, started: int) -> None:
        """Effects a variant adds when controller ``c`` handles the brokers in the mask ``started``
        coming (back) up (after the model's: replicas to OnlineReplica, elections)."""

    # ------------------------------------------------------------------ a broker's requests
    def accepts_controller_epoch(self, request_epoch: int, highest_seen: int) -> bool:
        """A broker applies a controller request only if no newer controller has spoken to it."""
        return request_epoch >= highest_seen

    def request_epoch(self, w: WorldView, sender_epoch: int) -> int:
        """The controller epoch a request carries, sent now by the controller of ``sender_epoch``:
        its own, read once when it became controller (0.8.2 on, KAFKA-1096's fix). A request
        sent with an epoch older than ZooKeeper's comes from a deposed controller."""
        return sender_epoch

    def follows_leader(self, w: WorldView, b: int, req: LeaderAndIsr) -> bool:
        """Whether broker ``b`` takes the become-follower transition a LeaderAndIsr asks for: the
        model's brokers always do; with a metadata cache only if it lists the new leader alive
        (model/metadatacache.py)."""
        return True

    def on_update_metadata(self, w: Any, b: int, req: Any) -> None:
        """Effects a variant adds when broker ``b`` applies an UpdateMetadata ``req`` (after the
        model's: the controller epoch it has seen)."""

    def accepts_leader_epoch(self, request_epoch: int, current: int) -> bool:
        """A broker applies LeaderAndIsr for a partition only with a newer leader epoch."""
        return request_epoch > current

    def become_follower(self, w: WorldView, b: int, p: int, r: Replica, req: LeaderAndIsr) -> Replica:
        """Broker ``b`` applies a LeaderAndIsr that makes it a follower of ``req.leader``.

        Without leader epochs (high-watermark): truncate to the HW on a leader change. With them
        (kip-101 on): reconcile through OffsetsForLeaderEpoch on a leader change, or (kip-320) on
        every leader-epoch change.
        """
        if not self.uses_leader_epochs:
            return become_follower_truncating_to_hw(r, req)
        return become_follower_reconciling_by_epoch(r, req, on_every_epoch=self.reconciles_on_epoch_change)

    def become_leader(self, w: WorldView, b: int, p: int, r: Replica, req: LeaderAndIsr) -> Replica:
        """Broker ``b`` applies a LeaderAndIsr that makes it the leader (the high watermark then
        advances by :meth:`high_watermark`).

        It takes the request's leader epoch, ISR, znode version and assignment; with leader
        epochs it records the new epoch at its log end. A leader already leading keeps what it
        knows of its followers; a new one starts knowing nothing (every follower at offset 0).
        """
        assigned = 0
        for x in req.replicas:
            assigned |= bit(x)
        epochs = E.assign(r.epochs, req.leader_epoch, len(r.log)) if self.uses_leader_epochs else r.epochs
        if r.leader == b:  # still the leader, with a newer epoch (an ISR or assignment change)
            return make_replica(r.log, r.hw, r.checkpoint, r.leader, req.leader_epoch, req.isr, req.zk_version,
                                r.remote_leo, r.pending, assigned, epochs, r.fetch_state, r.answer, r.ext)
        return make_replica(r.log, r.hw, r.checkpoint, b, req.leader_epoch, req.isr, req.zk_version,
                            (0,) * len(w.brokers), 0, assigned, epochs, FETCHING, (), r.ext)

    # ------------------------------------------------------------------ the replication path
    def accepts_produce(self, leader_replica: Replica) -> bool:
        """Whether the leader takes a write (the guard of Produce): with acks=all only while its
        ISR has at least ``min_insync_replicas`` members; with acks=1 always."""
        return self.acks_one or size(leader_replica.isr) >= self.min_insync_replicas

    def high_watermark(self, w: WorldView, leader: int, p: int, r: Replica) -> int:
        """The leader's high watermark given what it knows (Produce, Fetch, ShrinkIsr and becoming
        leader recompute it; it only ever advances, so a smaller answer changes nothing): the
        smallest log end offset among its cached ISR, its own and its followers' last fetched."""
        hw = len(r.log)
        remote = r.remote_leo
        for m in members(r.isr):
            if m != leader and remote[m - 1] < hw:
                hw = remote[m - 1]
        return hw

    def acknowledges(self, leader_replica: Replica, committed: int) -> bool:
        """Whether committing ``committed`` (record ids) acknowledges them to the producer.

        With acks=all the leader answers NotEnoughReplicasAfterAppend instead when its ISR has
        shrunk below min.insync.replicas. With acks=1 the producer was answered at append time,
        a promise about nothing but the leader's log; the ghost then records the write when it
        commits, so that NoCommittedWriteLost speaks of committed writes in both modes.
        """
        if self.acks_one:
            return True
        return size(leader_replica.isr) >= self.min_insync_replicas

    def serves_fetch(self, leader_replica: Replica, follower: int) -> bool:
        """Whether the leader serves a fetch from ``follower`` (a guard of Fetch, besides the
        leader-epoch fencing): only from a replica of the assignment its last LeaderAndIsr carried
        (0.8.1 on, KAFKA-1097), so a replica a reassignment removed is never put back in the ISR."""
        return bool(leader_replica.assigned >> follower & 1)

    def epoch_matches(self, follower_epoch: int, leader_epoch: int) -> bool:
        """Whether a fetch or epoch query carrying ``follower_epoch`` is served (KIP-320 fencing)."""
        return not self.fences_by_leader_epoch or follower_epoch == leader_epoch

    def may_join_isr(self, leader_replica: Replica, fetch_offset: int) -> bool:
        """Whether a follower fetching from ``fetch_offset`` has caught up enough to rejoin the ISR.

        Always: it reached the leader's HW. From kip-320 on (KAFKA-7128) it must also have reached
        the start of the leader's current epoch.
        """
        if fetch_offset < leader_replica.hw:
            return False
        if self.isr_join_needs_epoch_start:
            return fetch_offset >= E.start_of(leader_replica.epochs, leader_replica.leader_epoch)
        return True

    def may_expand_isr(self, leader_replica: Replica, follower: int, fetch_offset: int, new_isr: int) -> bool:
        """Whether the leader puts ``follower`` back in the ISR (``new_isr``) on its fetch from
        ``fetch_offset``: by default, when :meth:`may_join_isr` says it caught up."""
        return self.may_join_isr(leader_replica, fetch_offset)

    def may_shrink_isr(self, leader_replica: Replica, follower: int, new_isr: int) -> bool:
        """Whether the leader may drop ``follower`` from its ISR, leaving ``new_isr`` (the guard of
        ShrinkIsr, besides its budget and a current znode version): the seeds allow any member
        but the leader itself (the lag time is a nondeterministic choice in the model)."""
        return True

    def propose_isr(self, w: WorldView, leader: int, p: int, r: Replica, new_isr: int) -> Replica | None:
        """How the leader changes its ISR to ``new_isr`` (a ShrinkIsr, or an expansion on a fetch):
        None for the model's synchronous rule, its own conditional ZooKeeper write
        (:meth:`leader_isr_change`); otherwise the leader's replica after it proposed the change,
        to be applied later by the controller (``isr_change = "alter-isr"``, model/alterisr.py)."""
        return None

    def isr_write_succeeds(self, znode_version: int, cached_version: int) -> bool:
        """A leader's ISR change is a conditional write on the znode version it last saw."""
        return znode_version == cached_version

    def leader_isr_change(self, w: WorldView, leader: int, p: int, r: Replica, new_isr: int) -> IsrChange:
        """What the leader writes to the leader/ISR znode when it changes its ISR to ``new_isr`` (a
        shrink, or an expansion on a fetch), once the conditional write is known to succeed: itself
        as leader and that ISR; a variant may write another ISR or partition fields."""
        return IsrChange(leader, new_isr)

    def epoch_end_answer(self, leader_replica: Replica, asked_epoch: int) -> tuple[int, int]:
        """The leader's OffsetsForLeaderEpoch answer to ``asked_epoch``: KIP-101 answers where that
        epoch ends; KIP-279 on, the largest epoch it knows not above it, and where that one ends."""
        if self.answers_with_epoch:
            return E.end_offset_kip279(leader_replica.epochs, len(leader_replica.log), asked_epoch)
        return E.end_offset_kip101(leader_replica.epochs, len(leader_replica.log), asked_epoch)

    def hw_with_epoch_answer(self, r: Replica, leader_hw: int) -> int:
        """The follower's HW once its leader's epoch answer arrives (with truncation on fetch, 2.7
        on, the answer is a fetch response that also carries the leader's HW ``leader_hw``): the
        answer only decides the truncation, and the HW comes with the next fetch, after it (3.4.1
        on, KAFKA-14704's fix)."""
        return r.hw

    def truncation_point(self, r: Replica) -> tuple[int, bool]:
        """Where a follower holding the OffsetsForLeaderEpoch answer truncates, and whether it is
        done (KIP-279 on, a follower that does not know the answered epoch asks again)."""
        epoch, end = r.answer[0], r.answer[1]
        leo = len(r.log)
        if epoch == E.UNDEFINED:  # neither side knows a common epoch: fall back to the HW
            return min(r.hw, leo), True
        if not self.answers_with_epoch:
            return min(end, leo), True
        mine, my_end = E.end_offset_kip279(r.epochs, leo, epoch)  # its own cache, with the leader's rule
        if mine == E.UNDEFINED:
            return min(r.hw, leo), True
        return min(end, my_end), mine == epoch

    def epoch_cache_after_truncation(self, r: Replica, cut: int) -> tuple[tuple[int, int], ...]:
        """The epoch cache a reconciling follower keeps when it truncates at ``cut`` (its log is cut
        there too): every entry starting at or beyond ``cut`` goes, even when the log itself is not
        shortened (``cut`` at its end), as Kafka does since KAFKA-10706."""
        return E.truncate(r.epochs, cut)

    # ------------------------------------------------------------------ crashes and restarts
    def replica_after_stop(self, r: Replica, kept: int, how: Stop) -> Replica:
        """What survives of a replica when its broker stops: the first ``kept`` records of its log
        (all of them unless a lossy crash lost a suffix) and its epoch cache up to there; the HW
        from the checkpoint file (with ``hw_checkpoint = "every-change"``, the HW itself), no role;
        the variant's persistent replica fields."""
        log = r.log[:kept]
        on_disk = r.checkpoint if self.periodic_checkpoints else r.hw
        hw = min(on_disk, len(log))
        return make_replica(log, hw, hw if self.periodic_checkpoints else 0, NO_LEADER, -1, 0, 0, (), 0, 0,
                            E.truncate(r.epochs, len(log)), FETCHING, (),
                            self.extension.after_crash(Scope.REPLICA, r.ext))

    def on_stop(self, w: Any, b: int, how: Stop) -> None:
        """Effects a variant adds when broker ``b`` stops (a crash, a lossy crash or the end of a
        controlled shutdown), after the model's: its registration gone, its requests dropped."""

    def on_restart(self, w: Any, b: int, noticed: bool) -> None:
        """Effects a variant adds when broker ``b`` starts again (``noticed``: the controller saw it
        stop; False for a quick restart), after the model's: it registers again."""


def _scope_of(obj: Any) -> Scope:
    """The scope of a state object's variant fields, from its type."""
    if isinstance(obj, ZkPartition):
        return Scope.PARTITION
    if isinstance(obj, Replica):
        return Scope.REPLICA
    if isinstance(obj, Broker):
        return Scope.BROKER
    if isinstance(obj, Controller) or hasattr(obj, "reassign_step"):  # a Controller or its working copy
        return Scope.CONTROLLER
    raise TypeError(f"{type(obj).__name__} holds no variant fields")


__all__ = ["Protocol", "IsrChange", "VariantAction", "Removal", "Stop", "WorldView", "ControllerView", "Field", "Scope"]
