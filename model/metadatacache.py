"""The brokers' metadata cache (``metadata_cache = true``): who a broker believes alive.

From 0.9 a broker keeps a metadata cache filled by the controller's UpdateMetadata requests, and
applies the become-follower part of a LeaderAndIsr only when the cache lists the new leader as
alive: otherwise it skips that partition's entry (its leader epoch stays) and waits for another
request. A restarted broker's cache is empty until its first UpdateMetadata, so the order in which
a controller sends the two requests matters: a new controller sends UpdateMetadata first from
0.10.2 on (KAFKA-4443's fix), last before (the model's own order, harmless without a cache).

The cache is broker fields: ``metadata_unknown``, the brokers it does not list as alive (0, the
initial value, is every broker: the initial state follows the initial controller's UpdateMetadata),
which a restart sets to every broker and an UpdateMetadata to those outside the sender's live set
(``UpdateMetadata.metadata[0]``); and ``metadata_epoch_<p>``, each partition's leader epoch as the
last UpdateMetadata gave it (``UpdateMetadata.metadata[1 + p]``), which is what clients read. The controller builds
its UpdateMetadata from its context's cached leadership, ``cached_epoch_<p>``, loaded at failover and
updated by each of its leader/ISR writes (:meth:`Protocol.cache_leadership`; a reassignment's epoch
bumps too from 2.4, KAFKA-9212's fix). specs/05-replication.md, "Metadata cache".
"""
from __future__ import annotations

from typing import Any

from .config import MAX_PARTITIONS, Config
from .extension import Field, Kind, Scope
from .protocol import ControllerView, Protocol, WorldView
from .state import LeaderAndIsr

UNKNOWN = "metadata_unknown"


def broker_epoch_field(p: int) -> str:
    """The broker field holding partition ``p``'s leader epoch as its metadata cache has it."""
    return f"metadata_epoch_{p}"


def controller_epoch_field(p: int) -> str:
    """The controller field holding partition ``p``'s leader epoch as the controller's context caches it."""
    return f"cached_epoch_{p}"


class MetadataCache(Protocol):
    """Brokers follow only a leader their metadata cache lists alive, selected by ``metadata_cache``."""

    fields = ((Field(UNKNOWN, Scope.BROKER, Kind.BROKERS,
                     doc="metadata cache: the brokers this broker does not know to be alive"),)
              + tuple(Field(broker_epoch_field(p), Scope.BROKER, Kind.INT, persistent=False,
                            doc=f"metadata cache: partition {p}'s leader epoch") for p in range(MAX_PARTITIONS))
              + tuple(Field(controller_epoch_field(p), Scope.CONTROLLER, Kind.INT,
                            doc=f"the controller's cached leader epoch of partition {p}")
                      for p in range(MAX_PARTITIONS)))

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self.metadata_carries_live = True
        self._every_broker = sum(1 << b for b in config.broker_ids)

    def failover_sends_metadata_first(self) -> bool:
        return True

    def follows_leader(self, w: WorldView, b: int, req: LeaderAndIsr) -> bool:
        unknown = self.field(w.brokers[b - 1], UNKNOWN)
        return not unknown >> req.leader & 1 and super().follows_leader(w, b, req)

    def on_update_metadata(self, w: Any, b: int, req: Any) -> None:
        super().on_update_metadata(w, b, req)
        live, epochs = req.metadata[0], req.metadata[1:]
        w.set_broker_field(b, UNKNOWN, self._every_broker & ~live)
        for p, epoch in enumerate(epochs):
            w.set_broker_field(b, broker_epoch_field(p), epoch)

    # -- the controller's cached leadership, from which its UpdateMetadata is built
    def cache_leadership(self, w: Any, c: Any, p: int) -> None:
        super().cache_leadership(w, c, p)
        w.set_controller_field(c, controller_epoch_field(p), w.parts[p].leader_epoch)

    def on_controller_failover(self, w: Any, c: Any) -> None:
        super().on_controller_failover(w, c)
        for p, zp in enumerate(w.parts):  # a new controller loads the leadership from ZooKeeper
            w.set_controller_field(c, controller_epoch_field(p), zp.leader_epoch)

    def cached_leader_epochs(self, w: WorldView, c: ControllerView) -> tuple[int, ...]:
        return tuple(self.field(c, controller_epoch_field(p)) for p in range(len(w.parts)))

    def on_restart(self, w: Any, b: int, noticed: bool) -> None:
        super().on_restart(w, b, noticed)
        w.set_broker_field(b, UNKNOWN, self._every_broker)  # an empty cache until the first UpdateMetadata


__all__ = ["MetadataCache", "UNKNOWN"]
