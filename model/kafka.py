"""KafkaModel: the protocol plugged into the generic checker.

The model does not import the properties (``invariants`` imports ``model``, never the other way);
whoever builds a check hands them in — see :func:`isrcheck.invariants.build_model`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from isrcheck.specs.actions import fair_actions
from isrcheck.specs.properties import NAMES

from .actions import Action, apply, enabled_actions, initial_controller
from .brokersets import mask_of
from isrcheck.engine.core import ModelFault, Property
from isrcheck.engine.codec import StateCodec

from .statecodec import kafka_state_codec
from .protocol import Protocol
from .extension import Scope
from .state import FETCHING, Broker, Controller, Ghost, Replica, State, Zk, ZkPartition, initial_budget
from .statehash import new_hasher
from .symmetry import canonical
from .tables import IllegalTransition
from .tables import PartitionState as PS
from .tables import ReplicaState as RS

FIRST_CONTROLLER_EPOCH = 1


def initial_state(protocol: Protocol) -> State:
    """Every broker up, one controller (epoch 1), the topic's partitions as configured.

    Unless ``operations.topic_creation`` is set, the topic exists already: each partition led by
    the first replica of its assignment with every replica in the ISR and in sync (empty logs),
    as after creation and delivery of the first LeaderAndIsr requests; ``initial_isr`` may start
    an ISR smaller (followers that fell out of it before the run, their logs as empty as the
    leader's: the next fetch that reaches the HW brings them back).
    """
    cfg = protocol.config
    ext = protocol.extension
    nb, np_ = cfg.brokers, cfg.partitions
    everyone = mask_of(cfg.broker_ids)
    created = not cfg.operations.topic_creation
    parts = []
    for p in range(np_):
        ar = cfg.replicas_of(p)
        if created:
            parts.append(ZkPartition(ar, ar[0], mask_of(cfg.initial_isr_of(p)), 0, 1, FIRST_CONTROLLER_EPOCH,
                                     ext.initial(Scope.PARTITION)))
        else:
            parts.append(ZkPartition(ar, 0, 0, 0, 0, 0, ext.initial(Scope.PARTITION)))
    zk = Zk(everyone, (0,) * nb, FIRST_CONTROLLER_EPOCH, tuple(parts), ((),) * np_, 0, 0)

    c = initial_controller(FIRST_CONTROLLER_EPOCH, nb, np_, ext.initial(Scope.CONTROLLER))
    if created:
        replica_states = []
        for p in range(np_):
            ar = cfg.replicas_of(p)
            replica_states.append(tuple(RS.ONLINE if b in ar else RS.NON_EXISTENT for b in cfg.broker_ids))
        c = c._replace(partition_states=(PS.ONLINE,) * np_, replica_states=tuple(replica_states))
    c = c._replace(live=everyone)

    brokers = []
    for b in cfg.broker_ids:
        replicas: list[Replica | None] = []
        for p in range(np_):
            ar = cfg.replicas_of(p)
            if not created or b not in ar:
                replicas.append(None)
            elif b == ar[0]:
                epochs = ((0, 0),) if protocol.uses_leader_epochs else ()
                replicas.append(Replica((), 0, 0, b, 0, mask_of(cfg.initial_isr_of(p)), 1, (0,) * nb, 0, mask_of(ar),
                                        epochs, FETCHING, (),
                                        ext.initial(Scope.REPLICA)))
            else:
                replicas.append(Replica((), 0, 0, ar[0], 0, 0, 0, (), 0, 0, (), FETCHING, (),
                                        ext.initial(Scope.REPLICA)))
        brokers.append(Broker(True, FIRST_CONTROLLER_EPOCH if created else 0, tuple(replicas),
                              ext.initial(Scope.BROKER)))

    budget = initial_budget(cfg)
    ghost = tuple(Ghost(0, 0, (), ()) for _ in range(np_))
    reassignments = tuple((r.partition, r.target) for r in cfg.operations.reassignments)
    return State(zk, c, None, tuple(brokers), ((),) * nb, ghost, budget, reassignments)


class KafkaModel:
    """The engine-facing model: initial state, enabled actions, next state, fingerprint."""

    def __init__(self, protocol: Protocol, properties: Sequence[Property] = (), symmetry: bool = False) -> None:
        self.protocol = protocol
        self.config = protocol.config
        self._properties = list(properties)
        self.symmetry = symmetry
        unfair = set(protocol.config.unfair)
        #: the healing actions assumed weakly fair (specs/actions.toml), less those the config drops
        self.fair_names = frozenset(fair_actions()) - unfair
        self._unfair_instances = frozenset(u for u in unfair if "(" in u)
        self._hasher = new_hasher()
        # bound once: the checker asks for a fingerprint per transition
        self._fingerprint: Callable[[State], int] = self._hasher.fingerprint

    def init_states(self) -> list[State]:
        return [initial_state(self.protocol)]

    def actions(self, state: State) -> list[Action]:
        return enabled_actions(self.protocol, state)

    def next_state(self, state: State, action: Action) -> State:
        try:
            return apply(self.protocol, state, action)
        except IllegalTransition as e:
            raise ModelFault(NAMES.OnlyValidTransitions, str(e)) from e

    def properties(self) -> list[Property]:
        return self._properties

    @property
    def state_codec(self) -> StateCodec:
        """The binary codec of :class:`State` (the parallel workers move states with it)."""
        return kafka_state_codec()

    def fair_key(self, action: Action) -> Action | None:
        """The fairness instance of ``action`` (the action itself, as in ``WF_vars(Fetch(2, 0))``),
        or None when no fairness is assumed for it."""
        if action.name not in self.fair_names:
            return None
        if self._unfair_instances and str(action) in self._unfair_instances:
            return None
        return action

    def fairness_assumptions(self) -> list[str]:
        """The fairness this model assumes, in words, for the output of a liveness check."""
        fair = [a for a in fair_actions() if a in self.fair_names]
        out = [f"weak fairness of every instance of {', '.join(fair)}"] if fair else ["no fairness"]
        dropped = [u for u in self.config.unfair if "(" not in u]
        if dropped:
            out.append(f"not assumed for {', '.join(dropped)} (unfair)")
        if self._unfair_instances:
            out.append(f"not assumed for the instances {', '.join(sorted(self._unfair_instances))} (unfair)")
        return out

    def fingerprint(self, state: State) -> int:
        if self.symmetry:
            return self._fingerprint(canonical(state, self.protocol.extension))
        return self._fingerprint(state)


__all__ = ["KafkaModel", "initial_state", "Controller"]
