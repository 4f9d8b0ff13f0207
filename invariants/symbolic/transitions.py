"""The controller's operations against the state-machine tables (specs/08-symbolic.md#state-machines).

Every controller operation of ``model/controller.py`` moves the partition and replica state
machines of its context in a fixed pattern: CreateTopic drives a partition NonExistent -> New ->
Online and each replica NonExistent -> New -> Online, reassignment step 9 drives an old replica
Offline -> DeletionStarted -> DeletionSuccessful -> NonExistent, and so on. Some moves can be
refused (a fenced ZooKeeper write, an election without candidate) and leave the state where it
was, which later moves of the same operation then start from.

This module writes each operation as a small **move program** over one *pair*: one partition and
one broker's replica of it, in one controller's context (the operations treat pairs
independently). A program reads the pair's two states and a few **facts** about the pair (the
partition exists, is queued for deletion, the broker is in AR, the reassignment's step, ...). Two
kinds of claim are checked with z3, for every value of every fact and every refusal:

- **validity**: every move an operation makes is in its table (``model/tables.py``, read through
  :mod:`.types`), from every pair state that satisfies the operation's guards and the
  **context invariants** below — or the source state and the moves that break it;
- **preservation**: each context invariant holds in the initial contexts and is preserved by every
  operation and by every change other actors (administrators, other controllers, brokers) can
  make to the facts — or a counterexample to induction.

Both the programs and the facts are transcriptions of the code; tests/invariants/test_symbolic_transitions.py
checks them against it: every step the explicit checker takes in a set of configurations must be a
behaviour some program allows (same moves, same resulting states and facts), and every reachable
pair must satisfy the invariants.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import z3

from isrcheck.model import controller as C
from isrcheck.model.state import NO_LEADER, Controller, State
from isrcheck.model.tables import PARTITION_VALID_PREVIOUS, REPLICA_VALID_PREVIOUS
from isrcheck.model.tables import PartitionState as P
from isrcheck.model.tables import ReplicaState as R
from isrcheck.specs.protocol import REASSIGNMENT_STEPS, step_number

from .logic import Solver, consecution, initiation, number, truth
from .types import fresh_name, partition_move_ok, replica_move_ok, state_label
from .verdicts import Obligation, Progress, Verdict, no_progress

# ============================================================================ facts about a pair
BOOL_FACTS = (
    "exists",  # the partition has an AR in ZooKeeper
    "deleting",  # the partition is queued for deletion
    "v0",  # its leader/ISR znode does not exist yet (version 0)
    "in_ar",  # the broker is in ZooKeeper's AR
    "in_old",  # the broker is in this controller's OAR of the partition's reassignment
    "in_new",  # ... in its RAR
    "live",  # this controller believes the broker alive
    "zk_leader_is_b",  # the znode names this broker leader
    "zk_leader_live",  # the znode names a leader this controller believes alive
    "leader_in_new_live",  # the znode's leader is in RAR and believed alive (step 7)
    "multi",  # the controller's AR view has more than one replica (controlled shutdown)
    "started",  # this controller has started deleting (deletion_started)
    "complete",  # every replica of the queued partitions is deleted in its context (deletion_complete)
)
STEPS = range(len(REASSIGNMENT_STEPS) + 1)  # c.reassign_step: the next step to perform, 0 for none
STEP_START = step_number("start")
STEP_CAUGHT_UP = step_number("caught-up")
STEP_AR_IN_MEMORY = step_number("ar-in-memory")  # from the next step on the controller's view of AR is RAR
LAST_STEP = len(REASSIGNMENT_STEPS)

OWN_FACTS = ("step", "in_old", "in_new", "live")  # changed only by this controller's own operations


@dataclass
class Env:
    """Values of one pair (z3 terms or Python values): the two states, the facts, and the flags of
    a program run (``ok``: the last move was not refused; ``stopped``: the program stopped)."""

    ps: Any
    rs: Any
    step: Any
    facts: dict[str, Any]
    ok: Any = True
    stopped: Any = False

    def in_view(self, z: bool) -> Any:
        f = self.facts
        if z:
            return z3.If(self.step > STEP_AR_IN_MEMORY, f["in_new"], f["in_ar"])
        return f["in_new"] if self.step > STEP_AR_IN_MEMORY else f["in_ar"]


# ---------------------------------------------------------------------------- conditions
class Cond:
    def sym(self, e: Env) -> z3.BoolRef:
        raise NotImplementedError

    def conc(self, e: Env) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class F(Cond):
    name: str

    def sym(self, e: Env) -> z3.BoolRef:
        return e.in_view(True) if self.name == "in_view" else e.facts[self.name]

    def conc(self, e: Env) -> bool:
        return bool(e.in_view(False) if self.name == "in_view" else e.facts[self.name])

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class _OneOf(Cond):
    """The pair's value in one of its machines (``machine``: the ``Env`` field ps, rs or step) is one
    of ``values``."""

    values: tuple[int, ...]
    machine: ClassVar[str]
    title: ClassVar[str]

    def __init__(self, *values: int) -> None:
        object.__setattr__(self, "values", values)

    @staticmethod
    def label(value: int) -> str:
        return str(value)

    def sym(self, e: Env) -> z3.BoolRef:
        return z3.Or([getattr(e, self.machine) == int(v) for v in self.values])

    def conc(self, e: Env) -> bool:
        return getattr(e, self.machine) in self.values

    def __str__(self) -> str:
        return f"{self.title} " + "|".join(self.label(v) for v in self.values)


class PS(_OneOf):
    """The partition's state is one of the given."""

    machine, title = "ps", "partition"

    @staticmethod
    def label(value: int) -> str:
        return P(value).label


class RS(_OneOf):
    """The replica's state is one of the given."""

    machine, title = "rs", "replica"

    @staticmethod
    def label(value: int) -> str:
        return R(value).label


class Step(_OneOf):
    """The reassignment's step is one of the given."""

    machine, title = "step", "step"


def steps_from(first: str, last: str) -> Step:
    """The reassignment steps from the one called ``first`` to the one called ``last`` (names of
    specs/protocol.toml), both included."""
    return Step(*range(step_number(first), step_number(last) + 1))


@dataclass(frozen=True)
class _Flag(Cond):
    """A flag of the program's run (``flag``: the ``Env`` field ok or stopped) is set."""

    flag: ClassVar[str]

    def sym(self, e: Env) -> z3.BoolRef:
        return getattr(e, self.flag)

    def conc(self, e: Env) -> bool:
        return bool(getattr(e, self.flag))


class Ok(_Flag):
    """The last move was not refused."""

    flag = "ok"


class Stopped(_Flag):
    """The program stopped."""

    flag = "stopped"


@dataclass(frozen=True)
class Not(Cond):
    c: Cond

    def sym(self, e: Env) -> z3.BoolRef:
        return z3.Not(self.c.sym(e))

    def conc(self, e: Env) -> bool:
        return not self.c.conc(e)

    def __str__(self) -> str:
        return f"not {self.c}"


@dataclass(frozen=True)
class _Junction(Cond):
    """Conditions joined: all of them (:class:`All`) or any (:class:`AnyOf`); ``unit`` is the value of
    none at all."""

    cs: tuple[Cond, ...]
    unit: ClassVar[bool]
    join: ClassVar[Callable[[list[z3.BoolRef]], z3.BoolRef]]
    fold: ClassVar[Callable[[Iterable[bool]], bool]]

    def __init__(self, *cs: Cond) -> None:
        object.__setattr__(self, "cs", cs)

    def sym(self, e: Env) -> z3.BoolRef:
        return type(self).join([c.sym(e) for c in self.cs]) if self.cs else z3.BoolVal(self.unit)

    def conc(self, e: Env) -> bool:
        return type(self).fold(c.conc(e) for c in self.cs)


class All(_Junction):
    unit, join, fold = True, z3.And, all

    def __str__(self) -> str:
        return " and ".join(map(str, self.cs)) or "true"


class AnyOf(_Junction):
    unit, join, fold = False, z3.Or, any

    def __str__(self) -> str:
        return "(" + " or ".join(map(str, self.cs)) + ")"


@dataclass(frozen=True)
class Implies(Cond):
    a: Cond
    b: Cond

    def sym(self, e: Env) -> z3.BoolRef:
        return z3.Implies(self.a.sym(e), self.b.sym(e))

    def conc(self, e: Env) -> bool:
        return (not self.a.conc(e)) or self.b.conc(e)

    def __str__(self) -> str:
        return f"{self.a} => {self.b}"


TRUE = All()


# ---------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class Free:
    """A refusal the program cannot predict from the pair's facts (fenced write, no candidate)."""

    reason: str


@dataclass(frozen=True)
class Move:
    machine: str  # "partition" | "replica"
    target: int
    refused: Cond | Free | None = None  # when the move fails and leaves the state unchanged

    def __str__(self) -> str:
        return f"{self.machine} -> {state_label(self.machine, self.target)}"


def MoveP(target: P, refused: Cond | Free | None = None) -> Move:  # noqa: N802
    return Move("partition", int(target), refused)


def MoveR(target: R, refused: Cond | Free | None = None) -> Move:  # noqa: N802
    return Move("replica", int(target), refused)


@dataclass(frozen=True)
class Set:
    """A direct assignment (a new controller's initialisation), not a move: no table applies."""

    machine: str
    target: int


@dataclass(frozen=True)
class When:
    cond: Cond
    then: tuple = ()
    orelse: tuple = ()


@dataclass(frozen=True)
class Stop:
    """Skip the rest of the program when ``cond`` holds (``return`` / ``raise Fenced``)."""

    cond: Cond


# ---------------------------------------------------------------------------- post-values of facts
class Val:
    def sym(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        raise NotImplementedError

    def conc(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class Const(Val):
    v: Any

    def sym(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return z3.BoolVal(self.v) if isinstance(self.v, bool) else z3.IntVal(self.v)

    def conc(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return self.v


@dataclass(frozen=True)
class FactV(Val):
    """A fact's value before the program."""

    name: str

    def sym(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return pre.step if self.name == "step" else pre.facts[self.name]

    def conc(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return pre.step if self.name == "step" else pre.facts[self.name]


@dataclass(frozen=True)
class CondV(Val):
    """A Boolean computed from the program's end state (or, with ``before``, its start)."""

    c: Cond
    before: bool = False

    def sym(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return self.c.sym(pre if self.before else e)

    def conc(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return self.c.conc(pre if self.before else e)


@dataclass(frozen=True)
class IfV(Val):
    c: Val
    a: Val
    b: Val

    def sym(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return z3.If(self.c.sym(e, pre, frees), self.a.sym(e, pre, frees), self.b.sym(e, pre, frees))

    def conc(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return self.a.conc(e, pre, frees) if self.c.conc(e, pre, frees) else self.b.conc(e, pre, frees)


@dataclass(frozen=True)
class FreeV(Val):
    """A value the program chooses freely (a named free fact of the program)."""

    name: str

    def sym(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return frees[self.name]

    def conc(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return frees[self.name]


@dataclass(frozen=True)
class _BinaryV(Val):
    """Two values joined: both (:class:`AndV`) or either (:class:`OrV`)."""

    a: Val
    b: Val
    join: ClassVar[Callable[[z3.BoolRef, z3.BoolRef], z3.BoolRef]]
    fold: ClassVar[Callable[[Iterable[bool]], bool]]

    def sym(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return type(self).join(self.a.sym(e, pre, frees), self.b.sym(e, pre, frees))

    def conc(self, e: Env, pre: Env, frees: dict[str, Any]) -> Any:
        return type(self).fold(bool(v.conc(e, pre, frees)) for v in (self.a, self.b))


class AndV(_BinaryV):
    join, fold = z3.And, all


class OrV(_BinaryV):
    join, fold = z3.Or, any


HAVOC = "*"  # a post-fact that may take any value (subject to the axioms)

ZK_FACTS = ("v0", "zk_leader_is_b", "zk_leader_live", "leader_in_new_live", "multi", "started", "complete")
"""Facts that follow ZooKeeper or other pairs; any operation may change them (they are havocked)."""


@dataclass(frozen=True)
class Program:
    """One operation's moves on one pair, transcribed from ``code``.

    ``guard``: when the operation touches the pair at all (with ``assumes``, what the code's guards
    tell about the facts); ``free``: per-run choices (which phase of a broker change includes the
    broker, ...); ``post``: how the operation changes facts (unlisted facts it does not change,
    except the ZooKeeper-derived ones of ZK_FACTS, which may change arbitrarily). ``context``:
    "own" (the pair's controller runs it), "fresh" (it creates the controller context), "env"
    (someone else acts; only facts change).
    """

    name: str
    action: str
    code: str
    body: tuple = ()
    guard: Cond = TRUE
    assumes: tuple[Cond, ...] = ()
    free: tuple[str, ...] = ()
    post: dict[str, Any] = field(default_factory=dict)
    context: str = "own"
    step: int | None = None  # for ReassignPartition: the step performed


# ============================================================================ the transcriptions
NE_P, NEW_P, ON_P, OFF_P = P.NON_EXISTENT, P.NEW, P.ONLINE, P.OFFLINE
NE_R, NEW_R, ON_R, OFF_R = R.NON_EXISTENT, R.NEW, R.ONLINE, R.OFFLINE
DS_R, DOK_R, DI_R = R.DELETION_STARTED, R.DELETION_SUCCESSFUL, R.DELETION_INELIGIBLE

ELECTABLE = All(F("exists"), Not(F("deleting")))


def _failure(phase_any: str, b_in: str, leader_in: str) -> tuple:
    """on_broker_failure(dead) for one pair; ``phase_any``: some broker is in ``dead``;
    ``b_in``: this broker is; ``leader_in``: the partition's leader is."""
    return (When(F(phase_any), (
        When(All(ELECTABLE, F(leader_in), Not(PS(NE_P))), (MoveP(OFF_P),)),
        When(All(ELECTABLE, PS(OFF_P, NEW_P)), (MoveP(ON_P, Free("no eligible leader, or fenced")),)),
        When(All(F(b_in), F("exists"), F("in_view")), (
            When(F("deleting"),
                 (When(RS(DS_R, OFF_R), (MoveR(DI_R),)),),
                 (When(Not(RS(NE_R)), (MoveR(OFF_R, Free("fenced ISR write")),)),)),
        )),
    )),)


def _startup(phase_any: str, b_in: str) -> tuple:
    return (When(F(phase_any), (
        When(All(F(b_in), F("exists"), F("in_view")), (
            When(F("deleting"),
                 (When(RS(DI_R), (MoveR(OFF_R, Free("fenced ISR write")), When(Ok(), (MoveR(DS_R),)))),),
                 (When(Not(RS(NE_R)), (MoveR(ON_R),)),)),
        )),
        When(All(ELECTABLE, PS(OFF_P, NEW_P)), (MoveP(ON_P, Free("no eligible leader, or fenced")),)),
    )),)


def _reassign(name: str, body: tuple = (), post: dict[str, Any] | None = None, **kw: Any) -> Program:
    """The program of the reassignment step called ``name`` (after start; model/controller.py's
    function ``_`` + the name): the step after it is due next, none after the last."""
    step = step_number(name)
    p: dict[str, Any] = {"step": Const(0 if step == LAST_STEP else step + 1)}
    p.update(post or {})
    return Program(f"ReassignPartition step {step}", "ReassignPartition", "_" + name.replace("-", "_"), body,
                   guard=Step(step), post=p, step=step, **kw)


def _fenced_then(name: str) -> dict[str, Any]:
    """The post-value of the step number of a step a refused write ends (controller.Fenced):
    none, else the step called ``name``."""
    return {"step": IfV(FreeV("fenced"), Const(0), Const(step_number(name)))}


PROGRAMS: tuple[Program, ...] = (
    Program("CreateTopic", "CreateTopic", "on_new_partition_creation", (
        MoveP(NEW_P),
        When(F("in_view"), (MoveR(NEW_R, F("zk_leader_is_b")),)),
        MoveP(ON_P, Free("no live replica, or fenced")),
        When(F("in_view"), (MoveR(ON_R),)),
    ), guard=All(F("exists"), PS(NE_P), F("v0"))),
    Program("ProcessBrokerChange", "ProcessBrokerChange", "process_broker_change",
            _failure("some_bounced", "b_bounced", "leader_bounced") + _startup("some_came", "b_came")
            + _failure("some_left", "b_left", "leader_left"),
            free=("some_bounced", "b_bounced", "leader_bounced", "some_came", "b_came", "some_left", "b_left",
                  "leader_left", "live_after", "target_came"),
            assumes=(Implies(F("b_bounced"), All(F("some_bounced"), F("b_came"))),
                     Implies(F("some_bounced"), F("some_came")), Implies(F("b_came"), F("some_came")),
                     Implies(F("b_left"), F("some_left")), Not(All(F("b_left"), F("b_came"))),
                     Implies(F("leader_bounced"), F("some_bounced")), Implies(F("leader_left"), F("some_left")),
                     Implies(F("target_came"), F("some_came"))),
            # on_broker_startup resumes a reassignment waiting at caught-up for a target that came
            post={"live": FreeV("live_after"),
                  "step": IfV(AndV(CondV(Step(STEP_CAUGHT_UP), before=True), FreeV("target_came")),
                              Const(STEP_START), FactV("step"))}),
    Program("ControllerFailover", "ControllerFailover", "on_controller_failover", (
        When(F("in_ar"), (When(F("live"), (Set("replica", int(ON_R)),), (Set("replica", int(OFF_R)),)),)),
        When(F("v0"), (Set("partition", int(NEW_P)),),
             (When(F("zk_leader_live"), (Set("partition", int(ON_P)),), (Set("partition", int(OFF_P)),)),)),
        When(All(Not(F("deleting")), F("in_ar"), F("live")), (MoveR(ON_R),)),
        When(All(Not(F("deleting")), PS(OFF_P, NEW_P)), (MoveP(ON_P, Free("no eligible leader, or fenced")),)),
    ), guard=F("exists"), context="fresh", free=("pending",),
        post={"step": IfV(FreeV("pending"), Const(STEP_START), Const(0)), "in_old": Const(False),
              "in_new": Const(False)}),
    Program("ElectPreferredLeader", "ElectPreferredLeader", "on_preferred_replica_election", (
        When(All(ELECTABLE, Step(0), PS(ON_P, OFF_P)), (MoveP(ON_P, Free("no eligible leader, or fenced")),)),
    )),
    Program("ControlledShutdown", "ControlledShutdown", "controlled_shutdown", (
        When(All(ELECTABLE, F("in_view"), Not(RS(NE_R))), (
            When(F("zk_leader_is_b"), (When(F("multi"), (MoveP(ON_P, Free("no eligible leader, or fenced")),)),),
                 (MoveR(OFF_R, Free("fenced ISR write")),)),
        )),
    ), free=("live_after",), post={"live": AndV(FactV("live"), FreeV("live_after"))}),
    Program("StartTopicDeletion", "StartTopicDeletion", "start_topic_deletion", (
        Stop(F("stopped_before")),
        When(All(F("exists"), Not(PS(NE_P))), (
            When(All(F("in_view"), Not(RS(NE_R))), (
                MoveR(OFF_R, Free("fenced ISR write")), Stop(Not(Ok())),
                When(F("live"), (MoveR(DS_R),), (MoveR(DI_R),)),
            )),
            Stop(F("stopped_after")),
            MoveP(OFF_P),
        )),
    ), guard=All(F("deleting"), Not(F("started")), Step(0)), free=("stopped_before", "stopped_after")),
    Program("CompleteTopicDeletion", "CompleteTopicDeletion", "complete_topic_deletion", (
        When(All(F("in_ar"), RS(DOK_R)), (MoveR(NE_R),)),
        When(Not(PS(NE_P)), (MoveP(NE_P),)),
    ), guard=All(F("deleting"), F("started"), F("complete")),
        post={"exists": Const(False), "deleting": Const(False), "in_ar": Const(False), "step": Const(0)}),
    Program("DeliverRequest (StopReplica with deletion)", "DeliverRequest", "broker._stop_replica", (
        When(RS(DS_R), (MoveR(DOK_R),)),
    )),
    Program(
        f"ReassignPartition step {STEP_START}", "ReassignPartition", "_start", (),
        guard=All(Step(0, STEP_START), F("exists"), Not(F("deleting"))),
        free=("dropped", "in_target"), step=STEP_START,
        post={"step": IfV(FreeV("dropped"), Const(0), Const(STEP_START + 1)),
              "in_old": IfV(FreeV("dropped"), FactV("in_old"), FactV("in_ar")),
              "in_new": IfV(FreeV("dropped"), FactV("in_new"), FreeV("in_target")),
              "in_ar": IfV(FreeV("dropped"), FactV("in_ar"), OrV(FactV("in_ar"), FreeV("in_target")))}),
    _reassign("bump-epoch", free=("fenced",), post=_fenced_then("new-replicas")),
    _reassign("new-replicas", (When(All(F("in_new"), Not(F("in_old"))), (MoveR(NEW_R, F("zk_leader_is_b")),)),)),
    _reassign("caught-up"),
    _reassign("online", (When(F("in_new"), (MoveR(ON_R),)),)),
    _reassign("ar-in-memory"),
    _reassign("leader", (When(Not(F("leader_in_new_live")), (MoveP(ON_P, Free("no eligible leader, or fenced")),)),),
              free=("fenced",), post=_fenced_then("old-offline")),
    _reassign("old-offline", (When(All(F("in_old"), Not(F("in_new"))),
                                   (MoveR(OFF_R, Free("fenced ISR write")), Stop(Not(Ok())))),),
              post={"step": IfV(CondV(Stopped()), Const(0), Const(step_number("old-deleted")))}),
    _reassign("old-deleted", (When(All(F("in_old"), Not(F("in_new"))), (MoveR(DS_R), MoveR(DOK_R), MoveR(NE_R))),)),
    _reassign("ar-in-zk", post={"in_ar": FactV("in_new")}),
    _reassign("clear-request"),
    _reassign("metadata", post={"in_old": Const(False), "in_new": Const(False)}),
)

ENV_PROGRAMS: tuple[Program, ...] = (
    Program("another actor changes ZooKeeper", "*", "(administrators, other controllers, leaders)", (),
            context="env", free=("exists2", "deleting2", "in_ar2"),
            post={"exists": AndV(FactV("exists"), FreeV("exists2")),
                  "deleting": IfV(FreeV("exists2"), OrV(FactV("deleting"), FreeV("deleting2")), FreeV("deleting2")),
                  "in_ar": AndV(FreeV("exists2"), FreeV("in_ar2"))}),
)

# ---------------------------------------------------------------------------- what facts always mean
AXIOMS: tuple[tuple[str, Cond], ...] = (
    ("a partition without AR has no replica in AR", Implies(Not(F("exists")), Not(F("in_ar")))),
    ("without a leader/ISR znode there is no leader", Implies(F("v0"), All(Not(F("zk_leader_is_b")),
                                                                          Not(F("zk_leader_live"))))),
    ("a live znode leader that is this broker", Implies(All(F("zk_leader_is_b"), F("live")), F("zk_leader_live"))),
    ("a deleted replica means the deletion has started",
     Implies(All(F("deleting"), F("in_ar"), RS(DS_R, DOK_R, DI_R)), F("started"))),
    ("a complete deletion has no replica left in AR", Implies(All(F("complete"), F("in_ar")), RS(DOK_R, NE_R))),
)

# ---------------------------------------------------------------------------- the context invariants
REASSIGNING = steps_from("bump-epoch", "old-deleted")

INVARIANTS: tuple[tuple[str, Cond], ...] = (
    ("NotCreatedMeansNoReplicas: a NonExistentPartition has only NonExistentReplicas",
     Implies(All(F("exists"), PS(NE_P)), RS(NE_R))),
    ("DeletionStatesOnlyWhileDeleting: no replica is in a deletion state unless its partition is queued",
     Implies(All(F("exists"), Not(F("deleting"))), Not(RS(DS_R, DOK_R, DI_R)))),
    ("OutsideAssignmentMeansNonExistent: a replica outside AR and the controller's view is NonExistentReplica",
     Implies(All(F("exists"), Not(F("in_ar")), Not(F("in_view"))), RS(NE_R))),
    ("DeletedPartitionIsOffline: a started and complete deletion has its partition Offline or NonExistent",
     Implies(All(F("deleting"), F("started"), F("complete")), PS(OFF_P, NE_P))),
    ("ReassignmentKnowsPartition: during steps 2-9 the controller knows the partition",
     Implies(REASSIGNING, Not(PS(NE_P)))),
    ("NoDeletionDuringReassignment: during steps 2-9 no replica is in ReplicaDeletionStarted/Successful",
     Implies(REASSIGNING, Not(RS(DS_R, DOK_R)))),
    ("NewTargetReplicasNonExistentUntilStep3: before step 3, a replica of RAR - OAR is NonExistentReplica",
     Implies(All(steps_from("bump-epoch", "new-replicas"), F("in_new"), Not(F("in_old"))), RS(NE_R))),
    ("TargetReplicasExistFromStep4: at steps 4-6 a replica of RAR exists",
     Implies(All(steps_from("caught-up", "ar-in-memory"), F("in_new")), Not(RS(NE_R)))),
    ("OldReplicasExistUntilStep8: during steps 2-8 a replica of OAR - RAR exists",
     Implies(All(steps_from("bump-epoch", "old-offline"), F("in_old"), Not(F("in_new"))), Not(RS(NE_R)))),
    ("OldReplicasOfflineAtStep9: at step 9 a replica of OAR - RAR is OfflineReplica",
     Implies(All(steps_from("old-deleted", "old-deleted"), F("in_old"), Not(F("in_new"))), RS(OFF_R))),
)

CROSS_PAIR = {"DeletedPartitionIsOffline"}
"""Invariants about several replicas at once: a single pair cannot show them preserved, so they are
premises checked on every reachable state by the tests (explicit search), not proved here."""

INITIAL = AnyOf(
    # the topic exists at the start: Online partition, Online replicas of AR, nothing else
    All(F("exists"), Not(F("deleting")), Not(F("v0")), Step(0), Not(F("in_old")), Not(F("in_new")), PS(ON_P),
        Implies(F("in_ar"), RS(ON_R)), Implies(Not(F("in_ar")), RS(NE_R))),
    # operations.topic_creation: only the AR exists
    All(F("exists"), Not(F("deleting")), F("v0"), Step(0), Not(F("in_old")), Not(F("in_new")), PS(NE_P), RS(NE_R)),
)


def invariant_name(text: str) -> str:
    return text.split(":", 1)[0]


# ============================================================================ execution
@dataclass
class MoveRecord:
    machine: str
    source: int
    target: int
    refused: bool

    def text(self) -> str:
        s = f"{self.machine} {state_label(self.machine, self.source)} -> {state_label(self.machine, self.target)}"
        return s + (" (refused)" if self.refused else "")


class _Run:
    """Runs a program on an Env, symbolically (z3) or concretely (Python values)."""

    def __init__(self, prog: Program, e: Env, symbolic: bool, refusals: dict[int, bool] | None = None,
                 oracle: Callable[[int, str, int, int], bool] | None = None) -> None:
        self.prog = prog
        self.oracle = oracle
        self.e = e
        self.sym = symbolic
        self.refusals = refusals or {}
        self.free_refusals: list[tuple[z3.BoolRef, str]] = []
        self.obligations: list[tuple[z3.BoolRef, Move]] = []
        self.moves: list[MoveRecord] = []
        self.illegal: MoveRecord | None = None
        self.index = move_index(prog)
        self.refusal_terms: dict[int, z3.BoolRef] = {}

    def run(self) -> Env:
        path = z3.BoolVal(True) if self.sym else True
        self._block(self.prog.body, path)
        return self.e

    def _cond(self, c: Cond) -> Any:
        return c.sym(self.e) if self.sym else c.conc(self.e)

    def _block(self, stmts: Sequence[Any], path: Any) -> None:
        for st in stmts:
            self._stmt(st, path)

    def _stmt(self, st: Any, path: Any) -> None:
        e = self.e
        if self.sym:
            active = z3.And(path, z3.Not(e.stopped))
        else:
            active = path and not e.stopped
            if not active:
                return
        if isinstance(st, When):
            c = self._cond(st.cond)
            if self.sym:
                self._block(st.then, z3.And(active, c))
                self._block(st.orelse, z3.And(active, z3.Not(c)))
            else:
                self._block(st.then if c else st.orelse, True)
        elif isinstance(st, Stop):
            c = self._cond(st.cond)
            e.stopped = z3.Or(e.stopped, z3.And(active, c)) if self.sym else bool(c)
        elif isinstance(st, Set):
            if self.sym:
                if st.machine == "partition":
                    e.ps = z3.If(active, st.target, e.ps)
                else:
                    e.rs = z3.If(active, st.target, e.rs)
            elif st.machine == "partition":
                e.ps = st.target
            else:
                e.rs = st.target
        elif isinstance(st, Move):
            self._move(st, active)
        else:  # pragma: no cover
            raise TypeError(st)

    def _move(self, m: Move, active: Any) -> None:
        e = self.e
        src = e.ps if m.machine == "partition" else e.rs
        k = self.index[id(m)]
        if self.sym:
            ok = partition_move_ok(src, P(m.target)) if m.machine == "partition" else replica_move_ok(src, R(m.target))
            self.obligations.append((z3.Implies(active, ok), m))
            if isinstance(m.refused, Free):
                refused = z3.Bool(fresh_name(f"refused{k}"))
                self.free_refusals.append((refused, m.refused.reason))
                self.refusal_terms[k] = refused
            elif isinstance(m.refused, Cond):
                refused = m.refused.sym(e)
            else:
                refused = z3.BoolVal(False)
            new = z3.If(z3.And(active, z3.Not(refused)), m.target, src)
            e.ok = z3.If(active, z3.Not(refused), e.ok)
        else:
            table = PARTITION_VALID_PREVIOUS if m.machine == "partition" else REPLICA_VALID_PREVIOUS
            legal = src in table[P(m.target) if m.machine == "partition" else R(m.target)]
            if isinstance(m.refused, Free):
                if self.oracle is not None:
                    refused = bool(self.oracle(len(self.moves), m.machine, int(src), m.target))
                else:
                    refused = bool(self.refusals.get(k, False))
            elif isinstance(m.refused, Cond):
                refused = m.refused.conc(e)
            else:
                refused = False
            rec = MoveRecord(m.machine, int(src), m.target, refused)
            self.moves.append(rec)
            if not legal and self.illegal is None:
                self.illegal = rec
            new = src if refused else m.target
            e.ok = not refused
        if m.machine == "partition":
            e.ps = new
        else:
            e.rs = new



def move_index(prog: Program) -> dict[int, int]:
    """Each Move statement of ``prog`` numbered in program order (both branches of every When)."""
    out: dict[int, int] = {}

    def walk(stmts: Sequence[Any]) -> None:
        for st in stmts:
            if isinstance(st, Move):
                out[id(st)] = len(out)
            elif isinstance(st, When):
                walk(st.then)
                walk(st.orelse)

    walk(prog.body)
    return out


def post_env(prog: Program, pre: Env, end: Env, frees: dict[str, Any], symbolic: bool,
             havoc: dict[str, Any] | None = None) -> Env:
    """The pair after the program: its end states, and the facts as ``prog.post`` says."""
    facts = dict(pre.facts)
    step = pre.step
    for name in ZK_FACTS:
        facts[name] = havoc[name] if havoc is not None else facts[name]
    for name, val in prog.post.items():
        v = val.sym(end, pre, frees) if symbolic else val.conc(end, pre, frees)
        if name == "step":
            step = v
        else:
            facts[name] = v
    return Env(end.ps, end.rs, step, facts)


# ============================================================================ z3 queries
def _sym_env(prefix: str) -> Env:
    facts = {f: z3.Bool(fresh_name(f"{prefix}.{f}")) for f in BOOL_FACTS}
    return Env(z3.Int(fresh_name(f"{prefix}.ps")), z3.Int(fresh_name(f"{prefix}.rs")),
               z3.Int(fresh_name(f"{prefix}.step")), facts, z3.BoolVal(True), z3.BoolVal(False))


def _domain(e: Env) -> z3.BoolRef:
    return z3.And(e.ps >= 0, e.ps <= max(P), e.rs >= 0, e.rs <= max(R), e.step >= 0, e.step <= max(STEPS))


def _axioms(e: Env) -> z3.BoolRef:
    return z3.And([c.sym(e) for _, c in AXIOMS])


def _invariants(e: Env, skip: Sequence[str] = ()) -> z3.BoolRef:
    return z3.And([c.sym(e) for n, c in INVARIANTS if invariant_name(n) not in skip] or [z3.BoolVal(True)])


def _frees(prog: Program, prefix: str) -> dict[str, z3.BoolRef]:
    return {f: z3.Bool(fresh_name(f"{prefix}.{f}")) for f in prog.free}


def _setup(prog: Program, with_invariants: bool) -> tuple[Env, Env, dict[str, z3.BoolRef], _Run, list[z3.BoolRef]]:
    pre = _sym_env("pre")
    frees = _frees(prog, "free")
    start = Env(pre.ps, pre.rs, pre.step, {**pre.facts, **frees}, z3.BoolVal(True), z3.BoolVal(False))
    if prog.context == "fresh":  # a new controller's context starts empty
        start.ps, start.rs = z3.IntVal(int(NE_P)), z3.IntVal(int(NE_R))
    premises = [_domain(pre), _axioms(pre), prog.guard.sym(start), *[a.sym(start) for a in prog.assumes]]
    run = _Run(prog, Env(start.ps, start.rs, start.step, dict(start.facts), start.ok, start.stopped), symbolic=True)
    run.run()
    if with_invariants and prog.context != "fresh":
        premises.append(_invariants(pre))
    return pre, start, frees, run, premises


def _values(m: z3.ModelRef, e: Env, frees: dict[str, z3.BoolRef] | None = None) -> dict[str, Any]:
    out = {"partition": number(m, e.ps), "replica": number(m, e.rs), "step": number(m, e.step),
           "facts": {f: truth(m, e.facts[f]) for f in BOOL_FACTS}}
    if frees:
        out["choices"] = {f: truth(m, t) for f, t in frees.items()}
    return out


def _describe(v: dict[str, Any]) -> str:
    facts = ", ".join(f if on else f"not {f}" for f, on in v["facts"].items())
    return (f"partition {state_label('partition', v['partition'])}, replica {state_label('replica', v['replica'])}, "
            f"step {v['step']}; {facts}")


def _concrete_env(v: dict[str, Any]) -> Env:
    return Env(P(v["partition"]), R(v["replica"]), v["step"], {**v["facts"], **v.get("choices", {})})


def _replay(prog: Program, v: dict[str, Any], refusals: dict[int, bool]) -> _Run:
    e = _concrete_env(v)
    if prog.context == "fresh":
        e.ps, e.rs = NE_P, NE_R
    run = _Run(prog, e, symbolic=False, refusals=refusals)
    run.run()
    return run


def check_program(prog: Program, timeout: float | None, with_invariants: bool = True) -> Obligation:
    """Every move of ``prog`` is in its table, from every pair state its guards and the context
    invariants admit."""
    pre, start, frees, run, premises = _setup(prog, with_invariants)
    s = Solver(timeout)
    s.add(*premises)
    s.add(z3.Or([z3.Not(ob) for ob, _ in run.obligations]) if run.obligations else z3.BoolVal(False))
    answer = s.check()
    scope = ("every pair state satisfying the operation's guards"
             + (" and the context invariants" if with_invariants and prog.context != "fresh" else ""))
    ob = Obligation("transitions", f"{prog.name}: every move is in its table", "", answer.verdict, answer.seconds,
                    scope, detail=f"{len(run.obligations)} moves, model/controller.py {prog.code}")
    if answer.model is not None:
        m = answer.model
        v = _values(m, pre, frees)
        refusals = {k: truth(m, t) for k, t in run.refusal_terms.items()}
        replay = _replay(prog, v, refusals)
        ob.counterexample = {"operation": prog.name, "source": {**v, "partition": state_label("partition", v["partition"]),
                                                                "replica": state_label("replica", v["replica"])},
                             "moves": [r.text() for r in replay.moves],
                             "illegal": replay.illegal.text() if replay.illegal else None}
        ob.lines = [f"source: {_describe(v)}",
                    f"moves:  {'; '.join(r.text() for r in replay.moves)}",
                    f"illegal: {replay.illegal.text() if replay.illegal else '(none on replay)'}"]
    elif answer.unknown:
        ob.detail += f"; z3: {answer.reason}"
    return ob


def check_preservation(inv: tuple[str, Cond], programs: Sequence[Program], timeout: float | None) -> Obligation:
    """``inv`` holds initially and every program preserves it (given all invariants before)."""
    name, cond = inv
    start_t = time.perf_counter()
    s0 = Solver(timeout)  # the solvers live as they always did: z3's answers depend on when terms are released
    e0 = _sym_env("init")
    init = initiation(s0, e0, (_domain, _axioms, INITIAL.sym), cond.sym)
    if not init.answer.proved:
        ob = Obligation("transitions", f"invariant {name}", "", init.verdict, time.perf_counter() - start_t,
                        "the initial controller contexts")
        initial = init.counterexample(_values)
        if initial is not None:
            (v,) = initial
            ob.lines = [f"initial pair: {_describe(v)}"]
            ob.counterexample = {"initial": v}
        return ob
    unknown: list[str] = []
    for prog in programs:
        pre, start, frees, run, premises = _setup(prog, with_invariants=True)
        havoc = {f: z3.Bool(fresh_name(f"post.{f}")) for f in ZK_FACTS}
        post = post_env(prog, start, run.e, frees, True, havoc)
        s = Solver(timeout)
        s.add(*premises, _axioms(post), _domain(post))  # the premises hold the invariants before the step
        s.add(*[ob for ob, _ in run.obligations])  # illegal moves are reported by check_program
        answer = consecution(s, pre, post, (), cond.sym).answer
        if answer.model is not None:
            m = answer.model
            v = _values(m, pre, frees)
            after = _values(m, post)
            refusals = {k: truth(m, t) for k, t in run.refusal_terms.items()}
            replay = _replay(prog, v, refusals)
            ob = Obligation("transitions", f"invariant {name}", "", Verdict.REFUTED, time.perf_counter() - start_t,
                            "initial contexts, then every operation and every change by other actors",
                            detail="counterexample to induction")
            ob.counterexample = {"operation": prog.name, "before": v, "after": after,
                                 "moves": [x.text() for x in replay.moves]}
            ob.lines = [f"before: {_describe(v)}",
                        f"step:   {prog.name}" + (f" (choices: {', '.join(k for k, on in v.get('choices', {}).items() if on) or 'none'})"
                                                  if prog.free else ""),
                        f"moves:  {'; '.join(x.text() for x in replay.moves) or 'none'}",
                        f"after:  {_describe(after)}"]
            return ob
        if answer.unknown:
            unknown.append(prog.name)
    seconds = time.perf_counter() - start_t
    verdict = Verdict.UNKNOWN if unknown else Verdict.PROVED
    ob = Obligation("transitions", f"invariant {name}", "", verdict, seconds,
                    "initial contexts, then every operation and every change by other actors")
    if unknown:
        ob.detail = "unknown for: " + ", ".join(unknown)
    return ob


@dataclass
class TransitionReport:
    obligations: list[Obligation]
    assumed: list[str]  # invariants used as premises but not provable per pair (checked by tests)


def programs_for(detects_restarts: bool = False) -> tuple[Program, ...]:
    """The programs for a protocol: without bounce detection (0.8) no broker change contains a
    bounced broker."""
    if detects_restarts:
        return PROGRAMS
    out = []
    for prog in PROGRAMS:
        if prog.name == "ProcessBrokerChange":
            prog = Program(prog.name, prog.action, prog.code, prog.body, prog.guard,
                           prog.assumes + (Not(F("some_bounced")),), prog.free, prog.post, prog.context, prog.step)
        out.append(prog)
    return tuple(out)


def prove_transitions(timeout: float | None = 30.0, generation: str = "kafka-0.8",
                      progress: Progress = no_progress, with_invariants: bool = True,
                      detects_restarts: bool = False) -> TransitionReport:
    out: list[Obligation] = []
    programs = programs_for(detects_restarts)
    for prog in programs:
        progress(f"moves: {prog.name}")
        ob = check_program(prog, timeout, with_invariants)
        ob.generation = generation
        out.append(ob)
    if with_invariants:
        for inv in INVARIANTS:
            if invariant_name(inv[0]) in CROSS_PAIR:
                continue
            progress(f"invariant: {invariant_name(inv[0])}")
            ob = check_preservation(inv, programs + ENV_PROGRAMS, timeout)
            ob.generation = generation
            out.append(ob)
    return TransitionReport(out, [n for n, _ in INVARIANTS if invariant_name(n) in CROSS_PAIR])


# ============================================================================ concrete facts (for tests)
def pair_env(s: State, c: Controller, p: int, b: int) -> Env:
    """The pair (partition p, broker b) of controller context ``c`` in the concrete state ``s``."""
    zp = s.zk.partitions[p]
    step = c.reassign_step[p]
    old, new = c.reassign_old[p], c.reassign_new[p]
    view = new if step > STEP_AR_IN_MEMORY else zp.replicas
    leader = zp.leader
    deleting = bool(s.zk.deleting >> p & 1)
    facts = {
        "exists": bool(zp.replicas),
        "deleting": deleting,
        "v0": zp.version == 0,
        "in_ar": b in zp.replicas,
        "in_old": b in old,
        "in_new": b in new,
        "live": bool(c.live >> b & 1),
        "zk_leader_is_b": leader == b,
        "zk_leader_live": leader != NO_LEADER and bool(c.live >> leader & 1),
        "leader_in_new_live": leader in new and bool(c.live >> leader & 1),
        "multi": len(view) > 1,
        "started": bool(s.zk.deleting) and C.deletion_started(s.zk, c),
        "complete": bool(s.zk.deleting) and C.deletion_complete(s.zk, c),
    }
    return Env(P(c.partition_states[p]), R(c.replica_states[p][b - 1]), step, facts)


def violated_invariants(s: State) -> list[str]:
    """The context invariants (and axioms) that some pair of some controller context breaks in ``s``."""
    bad = []
    for c in (s.controller, s.stale):
        if c is None:
            continue
        for p in range(len(s.zk.partitions)):
            for b in range(1, len(s.brokers) + 1):
                e = pair_env(s, c, p, b)
                for name, cond in (*INVARIANTS, *AXIOMS):
                    if not cond.conc(e):
                        bad.append(f"{invariant_name(name)} (controller {c.epoch}, partition {p}, broker {b})")
    return bad


def possible_runs(prog: Program, pre: Env) -> Iterator[tuple[dict[str, bool], dict[int, bool], _Run, Env]]:
    """Every run of ``prog`` from the concrete pair ``pre``: over all free choices and refusals."""
    names = list(prog.free)
    npoints = len(move_index(prog))
    for values in itertools.product((False, True), repeat=len(names)):
        frees = dict(zip(names, values))
        e0 = Env(pre.ps, pre.rs, pre.step, {**pre.facts, **frees})
        if not all(a.conc(e0) for a in prog.assumes) or not prog.guard.conc(e0):
            continue
        for refs in itertools.product((False, True), repeat=npoints):
            e = Env(pre.ps, pre.rs, pre.step, {**pre.facts, **frees})
            if prog.context == "fresh":
                e.ps, e.rs = NE_P, NE_R
            run = _Run(prog, e, symbolic=False, refusals=dict(enumerate(refs)))
            run.run()
            yield frees, dict(enumerate(refs)), run, e


def explains(prog: Program, pre: Env, moves: Sequence[tuple[str, int, int]], post: Env,
             check_facts: Sequence[str] = ("step", "in_old", "in_new", "exists", "deleting", "in_ar")) -> bool:
    """Whether some run of ``prog`` from the concrete pair ``pre`` attempts exactly ``moves``
    ((machine, source, target), in order), ends in ``post``'s states and gives ``post``'s values of
    ``check_facts``. Free choices are enumerated; refusals are read off the observation."""
    names = list(prog.free)

    def oracle(i: int, machine: str, src: int, target: int) -> bool:
        # refused when the next attempted move of the same machine (or the end state) starts from src
        for mach, s2, _ in moves[i + 1:]:
            if mach == machine:
                return s2 == src and src != target
        end = post.ps if machine == "partition" else post.rs
        return end == src and src != target

    for values in itertools.product((False, True), repeat=len(names)):
        frees = dict(zip(names, values))
        e0 = Env(pre.ps, pre.rs, pre.step, {**pre.facts, **frees})
        if not prog.guard.conc(e0) or not all(a.conc(e0) for a in prog.assumes):
            continue
        e = Env(pre.ps, pre.rs, pre.step, {**pre.facts, **frees})
        if prog.context == "fresh":
            e.ps, e.rs = NE_P, NE_R
        run = _Run(prog, e, symbolic=False, oracle=oracle)
        run.run()
        if [(m.machine, m.source, m.target) for m in run.moves] != list(moves):
            continue
        if (run.e.ps, run.e.rs) != (post.ps, post.rs):
            continue
        after = post_env(prog, e0, run.e, frees, False, havoc={f: post.facts[f] for f in ZK_FACTS})
        if all((after.step if f == "step" else after.facts[f]) == (post.step if f == "step" else post.facts[f])
               for f in check_facts if f == "step" or f in prog.post or prog.context == "fresh"):
            return True
    return False


__all__ = ["PROGRAMS", "ENV_PROGRAMS", "INVARIANTS", "AXIOMS", "prove_transitions", "check_program",
           "check_preservation", "pair_env", "violated_invariants", "possible_runs", "post_env", "Env", "explains",
           "programs_for"]
