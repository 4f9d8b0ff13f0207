"""A transcription of the public TLA+ specification of Kafka replication (hachikuji/kafka-specification:
KafkaReplication and its five truncation modules) as a model for the project's generic checker.
See README.md in this folder."""
from __future__ import annotations

from .expected import expected, load_expected
from .model import (
    MODULES,
    PROPERTY_NAMES,
    PeerAction,
    PeerModel,
    PeerModelError,
    PeerState,
    UnknownPeerModule,
    state_line,
)

__all__ = ["MODULES", "PROPERTY_NAMES", "PeerAction", "PeerModel", "PeerModelError", "PeerState",
           "UnknownPeerModule", "expected", "load_expected", "state_line"]
