"""The protocol's replaceable parts, bundled with the configuration.

A :class:`Protocol` is what the model consults whenever a design decision could go another way:
which selector elects, whether the controller's writes are fenced, whether a quick restart is
noticed. Protocol variants (a designer's change to try) subclass it and override one method.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .brokersets import size
from .broker import become_follower_truncating_to_hw
from .config import Config
from .selectors import SELECTORS, Election, Selector, SelectorInput

if TYPE_CHECKING:
    from .state import LeaderAndIsr, Replica
    from .world import ControllerWork, World


class Protocol:
    """The seeds' (0.8-era) design. Subclass and override to describe a variant."""

    name = "kafka-0.8"

    def __init__(self, config: Config) -> None:
        self.config = config

    def select(self, selector: Selector, inp: SelectorInput) -> Election:
        """Run leader selector ``selector``; raise NoEligibleLeader when none qualifies."""
        return SELECTORS[selector](inp)

    def controller_fenced(self, w: World, c: ControllerWork) -> bool:
        """Whether ZooKeeper refuses this controller's writes outright.

        The 0.8 design does not fence them (only the leader/ISR znode's controller-epoch check
        protects a partition), so a deposed controller can still write.
        """
        return False

    def detects_restarts(self) -> bool:
        """Whether the controller notices a broker that re-registered before it looked."""
        return False

    def become_follower(self, w: World, b: int, p: int, r: Replica, req: LeaderAndIsr) -> Replica:
        """Broker ``b`` applies a LeaderAndIsr that makes it a follower of ``req.leader``."""
        return become_follower_truncating_to_hw(w, b, p, r, req)

    def may_join_isr(self, leader_replica: Replica, fetch_offset: int) -> bool:
        """Whether a follower fetching from ``fetch_offset`` has caught up enough to rejoin the ISR."""
        return fetch_offset >= leader_replica.hw

    def acknowledges(self, leader_replica: Replica, committed: int) -> bool:
        """Whether committing ``committed`` (record ids) acknowledges them to the producer.

        With acks=all the leader answers NotEnoughReplicasAfterAppend instead when its ISR has
        shrunk below min.insync.replicas.
        """
        return size(leader_replica.isr) >= self.config.min_insync_replicas
