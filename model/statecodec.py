"""The Kafka model's state codec: the engine's generic :class:`StateCodec` over :class:`State`.

The codec itself (engine/codec.py) knows nothing of Kafka; this module tells it the root class and
which fields hold the controller's state-machine enums, so that decoded states carry the same
IntEnum members as the states the model builds.
"""
from __future__ import annotations

from isrcheck.engine.codec import StateCodec

from .state import State
from .tables import PartitionState, ReplicaState

_KAFKA: dict[bool, StateCodec] = {}


def kafka_state_codec(native: bool = True) -> StateCodec:
    """The codec of :class:`isrcheck.model.state.State`, with the controller's partition and
    replica states rebuilt as :class:`PartitionState` and :class:`ReplicaState` members (built once
    per process; ``native=False``: one that never runs the program in C, for comparisons)."""
    codec = _KAFKA.get(native)
    if codec is None:
        codec = StateCodec(State, enums={
            ("Controller", "partition_states"): PartitionState,
            ("Controller", "replica_states"): ReplicaState,
        }, native=native)
        _KAFKA[native] = codec
    return codec
