"""The base of the replication encoding: its actions and the interfaces of its plug-ins (specs/08-symbolic.md).

:class:`Instance` is one action of the model with concrete arguments, as a guard on a symbolic
state and the state after it; every module that contributes actions builds them.

The encoding (:class:`~.replication.Encoding`) transcribes the replication path and the active
controller's broker change, and consults plug-ins wherever the model would consult its
``Protocol`` or a controller operation: a **generation** (:class:`TruncationRule`, implemented by
:mod:`.generations` and :mod:`.epochs`) and, when the configuration has them, the **controller
operations** (:mod:`.operations`, which hands topic administration to :mod:`.admin` and
reassignments to :mod:`.reassignment`). The plug-ins see the encoding only through
:class:`Encoder`, and admin and reassignment see the acting controller only through
:class:`ControllerContext`, so none of them imports the encoding and the imports stay one-way (``a <- b``: b imports a)::

    types <- instance <- epochs, admin, reassignment
    epochs <- generations;  admin, reassignment <- operations
    generations, operations <- replication <- bmc, induction
"""
from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import z3

from isrcheck.model.config import Config
from isrcheck.model.protocol import Protocol
from isrcheck.specs.protocol import Generation, Traits

from .types import SymLog, SymReplica, SymRequest, SymState, as_bool, fresh_replica_if

B = z3.BoolVal


class Unsupported(ValueError):
    """A configuration or generation the encoding does not cover; the message is one line."""


@dataclass
class Instance:
    """One action of the model with concrete arguments (``args``; a LossyCrash's kept lengths are
    symbolic, in ``extra``), as a guard on a state and the state after it."""

    name: str
    args: tuple
    kind: str  # the group in induction reports, e.g. "DeliverRequest: LeaderAndIsr, becomes follower"
    guard: z3.BoolRef
    effect: SymState
    extra: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"

    @property
    def illegal(self) -> z3.BoolRef:
        """When the model's step raises IllegalTransition (the effect is then meaningless)."""
        return as_bool(self.effect.illegal)


# ============================================================================ what the plug-ins see
class Encoder(typing.Protocol):
    """The encoding as its plug-ins see it (implemented by :class:`~.replication.Encoding`): the
    configuration's shape and the controller and broker steps a plug-in composes its own from."""

    @property
    def cfg(self) -> Config: ...
    @property
    def N(self) -> int: ...  # brokers
    @property
    def P(self) -> int: ...  # partitions
    @property
    def K(self) -> int: ...  # records per log
    @property
    def Q(self) -> int: ...  # requests per queue
    @property
    def AR(self) -> tuple[tuple[int, ...], ...]: ...  # the initial assignment
    @property
    def U(self) -> tuple[tuple[int, ...], ...]: ...  # every broker that can be assigned each partition
    @property
    def periodic(self) -> bool: ...  # hw_checkpoint = "periodic"
    @property
    def ops(self) -> ControllerContext | None: ...  # the controller operations, when encoded

    def brokers(self) -> range: ...
    def trunc(self, lg: SymLog, n: z3.ArithRef) -> SymLog: ...
    def log_ite(self, c: z3.BoolRef, a: SymLog, b: SymLog) -> SymLog: ...
    def follower_replica(self, log: SymLog, hw: z3.ArithRef, ckpt: z3.ArithRef, leader: z3.ArithRef,
                         epoch: z3.ArithRef) -> SymReplica: ...
    def send(self, t: SymState, b: int, kind: int, p: int = 0, cond: z3.BoolRef = ...,
             delete: bool = False) -> None: ...
    def pop(self, t: SymState, b: int, k: int) -> SymRequest: ...
    def delivery_slots(self, s: SymState, b: int) -> Iterator[tuple[int, str, tuple, z3.BoolRef, str | None]]: ...
    def write_leader_isr(self, t: SymState, p: int, leader: z3.ArithRef, isr: dict[int, z3.BoolRef],
                         cond: z3.BoolRef) -> None: ...
    def unfenced(self, t: SymState, p: int) -> z3.BoolRef | bool: ...
    def broadcast_metadata(self, t: SymState, cond: z3.BoolRef | bool) -> None: ...
    def in_assignment(self, t: SymState, p: int, b: int) -> z3.BoolRef | bool: ...
    def elect_offline(self, t: SymState, p: int, cond: z3.BoolRef) -> None: ...
    def elect_offline_and_new(self, t: SymState, cond: z3.BoolRef | bool) -> None: ...
    def remove_from_isr(self, t: SymState, p: int, b: int, cond: z3.BoolRef | bool) -> None: ...
    def process_broker_change(self, s: SymState,
                              case: dict[int, str] | None = None) -> tuple[z3.BoolRef, SymState]: ...
    def crash(self, s: SymState, b: int, lossy: bool) -> Instance: ...


class ControllerContext(typing.Protocol):
    """The acting controller as the operation plug-ins see it (implemented by
    :class:`~.operations.Operations`): which controller acts, whether ZooKeeper refuses its writes,
    and how a request of its epoch is accepted by a broker."""

    @property
    def enc(self) -> Encoder: ...

    def acting_as(self, epoch: z3.ArithRef) -> AbstractContextManager[None]: ...
    def controller_fenced(self, t: SymState) -> z3.BoolRef | bool: ...
    def wrote(self, t: SymState, p: int, cond: z3.BoolRef) -> None: ...
    def accepts(self, s: SymState, b: int, k: int) -> z3.BoolRef: ...
    def accepted(self, s: SymState, t: SymState, b: int, k: int) -> None: ...
    def active_epochs(self) -> range: ...
    def stale_epochs(self) -> range: ...
    def stale_instance(self, s: SymState, name: str, args: tuple, kind: str, e: int,
                       build: Callable[[SymState], tuple[z3.BoolRef | bool, SymState]]) -> Instance: ...


def deleting_delivery(enc: Encoder, ctl: ControllerContext, s: SymState, b: int, k: int, budget: str | None,
                      hosts: tuple[tuple[int, ...], ...],
                      gone: Callable[[SymState, int, z3.BoolRef], None]) -> SymState:
    """The state after broker ``b`` takes the deleting StopReplica in slot ``k`` of its queue, as the
    plug-ins that delete replicas (topic deletion, reassignment step 9) share it: charged to
    ``budget``, accepted in the context of ``ctl``, popped, and the replica of the partition it names
    gone (a fresh replica's fields; for each partition ``p`` whose ``hosts[p]`` include ``b``), which
    ``gone(t, p, c)`` records in the plug-in's own state (``c``: the request names ``p``)."""
    q = s.inbox[b].slots[k]
    t = s.spend(budget)
    ctl.accepted(s, t, b, k)
    enc.pop(t, b, k)
    for p in range(enc.P):
        if b not in hosts[p]:
            continue
        c = q.partition == p
        t.replicas[p][b] = fresh_replica_if(c, t.replicas[p][b])
        gone(t, p, c)
    return t


# ============================================================================ the generation plug-in
class TruncationRule:
    """What a protocol generation does where the generations differ (05-replication.md#protocol-generations).

    ``become_follower`` is ``Protocol.become_follower`` as z3 terms; ``may_join_isr`` is
    ``Protocol.may_join_isr``; ``fetch_allowed`` is an extra condition on Fetch (KIP-320 fences
    fetches by leader epoch). ``matches(protocol)`` says whether a model protocol implements this
    rule, so that BMC results can be compared with the explicit checker's.

    A rule is made for one generation of ``specs/protocol.toml`` and decides by its ``traits``.
    """

    def __init__(self, generation: Generation) -> None:
        self.generation = generation
        self.name: str = generation.value
        self.description: str = generation.description
        self.traits: Traits = generation.traits

    def become_follower(self, enc: Encoder, r: SymReplica, req: SymRequest) -> SymReplica:
        raise NotImplementedError

    def may_join_isr(self, enc: Encoder, rl: SymReplica, offset: z3.ArithRef) -> z3.BoolRef:
        return offset >= rl.hw

    def fetch_allowed(self, enc: Encoder, rf: SymReplica, rl: SymReplica) -> z3.BoolRef:
        return B(True)

    def matches(self, protocol: Protocol) -> bool:
        return False

    # hooks where the leader-epoch generations touch the epoch cache (no-ops under high-watermark;
    # see invariants/symbolic/epochs.py)
    @property
    def uses_leader_epochs(self) -> bool:
        return self.traits.leader_epochs

    def initial_slots(self, cfg: Config) -> int:
        """Leader-epoch cache entries per replica (0: no cache, no reconciliation state)."""
        return 0

    def on_become_leader(self, enc: Encoder, t: SymState, old: SymReplica, new: SymReplica, req: SymRequest,
                         was: z3.BoolRef) -> None:
        pass

    def on_produce(self, enc: Encoder, t: SymState, old: SymReplica, new: SymReplica) -> None:
        pass

    def on_fetch(self, enc: Encoder, t: SymState, old: SymReplica, new: SymReplica, offset: z3.ArithRef) -> None:
        pass

    def on_cut(self, enc: Encoder, old: SymReplica, new: SymReplica, crashed: bool) -> None:
        pass

    def isr_removal_receiver(self, m: int, removed: int, new_leader: z3.ArithRef) -> Any:
        """Protocol.isr_removal_receivers: is assigned replica ``m`` told? Only the new leader (0.8),
        or with ``isr_removal_tells_replicas`` (0.11 on) every remaining replica."""
        if self.traits.isr_removal_tells_replicas:
            return m != removed
        return new_leader == m

    def extra_instances(self, enc: Encoder, s: SymState, b: int, p: int) -> list[Instance]:
        """Actions of follower ``b`` of partition ``p`` that only this generation has."""
        return []


__all__ = ["Instance", "Unsupported", "Encoder", "ControllerContext", "TruncationRule", "deleting_delivery"]
