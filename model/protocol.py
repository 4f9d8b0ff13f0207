"""The protocol's replaceable parts, bundled with the configuration.

A :class:`Protocol` is what the model consults whenever a design decision could go another way:
which selector elects, whether the controller's writes are fenced, whether a quick restart is
noticed. Protocol variants (a designer's change to try) subclass it and override one method.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Protocol as Structural

from mypy_extensions import mypyc_attr

from isrcheck.specs.protocol import EpochAnswer, Generation

from .brokersets import size
from . import epochs as E
from isrcheck.engine.core import Property
from .config import Config
from .follower import become_follower_reconciling_by_epoch, become_follower_truncating_to_hw
from .selectors import SELECTORS, Election, Selector, SelectorInput

if TYPE_CHECKING:
    from .state import LeaderAndIsr, Replica


# What the decisions below read of the model's working copies (model/world.py: World and
# ControllerWork satisfy these). Described here rather than imported, so that world.py, which holds
# the Protocol, and this module do not import each other.
class WorldView(Structural):
    """The world of one step (a :class:`~.world.World`), as far as a decision reads it."""

    controller_epoch: int  # the controller epoch in ZooKeeper


class ControllerView(Structural):
    """One controller's context (a :class:`~.world.ControllerWork`), as far as a decision reads it."""

    epoch: int


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

    @property
    def generation(self) -> Generation:
        return self.config.generation

    def extra_properties(self) -> list[Property]:
        """Properties a variant adds to the standard ones (checked like them)."""
        return []

    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        """Run leader selector ``selector``; raise NoEligibleLeader when none qualifies."""
        return SELECTORS[selector](inp)

    def controller_fenced(self, w: WorldView, c: ControllerView) -> bool:
        """Whether ZooKeeper refuses this controller's writes outright.

        The 0.8 design does not fence them (only the leader/ISR znode's controller-epoch check
        protects a partition), so a deposed controller can still write. With
        ``fenced_controller_writes`` (Kafka 2.1+) every write is a multi-op conditional on the
        controller epoch znode, which a deposed controller fails.
        """
        return self._fenced_controller_writes and c.epoch != w.controller_epoch

    def reassignment_step_fenced(self, w: WorldView, c: ControllerView) -> bool:
        """Whether this controller abandons its reassignment instead of performing the next step.

        The seeds' design performs the in-memory steps of a reassignment whoever is controller
        now. With ``fenced_reassignment_steps`` (a designer's option) the controller reads the
        controller epoch znode before each step and, once deposed, forgets the reassignment; the
        new controller resumes it from /admin/reassign_partitions.
        """
        return self._fenced_reassignment_steps and c.epoch != w.controller_epoch

    def detects_restarts(self) -> bool:
        """Whether the controller notices a broker that re-registered before it looked (2.2+)."""
        return self._detect_restarts

    def isr_removal_receivers(self, leader: int, assignment: tuple[int, ...], removed: int) -> tuple[int, ...]:
        """Who gets LeaderAndIsr after the controller takes ``removed`` out of the ISR.

        The seeds (0.8) tell only the leader. From 0.11 on every remaining replica is told, which
        KIP-320's fencing needs: a follower left on the old leader epoch would be fenced forever.
        """
        if not self.isr_removal_tells_replicas:
            return (leader,) if leader else ()
        return tuple(r for r in assignment if r != removed)

    def accepts_controller_epoch(self, request_epoch: int, highest_seen: int) -> bool:
        """A broker applies a controller request only if no newer controller has spoken to it."""
        return request_epoch >= highest_seen

    def accepts_leader_epoch(self, request_epoch: int, current: int) -> bool:
        """A broker applies LeaderAndIsr for a partition only with a newer leader epoch."""
        return request_epoch > current

    def isr_write_succeeds(self, znode_version: int, cached_version: int) -> bool:
        """A leader's ISR change is a conditional write on the znode version it last saw."""
        return znode_version == cached_version

    def epoch_matches(self, follower_epoch: int, leader_epoch: int) -> bool:
        """Whether a fetch or epoch query carrying ``follower_epoch`` is served (KIP-320 fencing)."""
        return not self.fences_by_leader_epoch or follower_epoch == leader_epoch

    def become_follower(self, w: WorldView, b: int, p: int, r: Replica, req: LeaderAndIsr) -> Replica:
        """Broker ``b`` applies a LeaderAndIsr that makes it a follower of ``req.leader``.

        Without leader epochs (high-watermark): truncate to the HW on a leader change. With them
        (kip-101 on): reconcile through OffsetsForLeaderEpoch on a leader change, or (kip-320) on
        every leader-epoch change.
        """
        if not self.uses_leader_epochs:
            return become_follower_truncating_to_hw(r, req)
        return become_follower_reconciling_by_epoch(r, req, on_every_epoch=self.reconciles_on_epoch_change)

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
