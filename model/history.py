"""Kafka's bugs put back: the pre-fix rule of each reproduced bug of specs/history.toml, as hooks.

A bug of the history is a decision Kafka once made differently. Its pre-fix rule is therefore not a
second code path through the model's steps but a :class:`~.protocol.Protocol` mixin overriding the
hooks of that decision, exactly as a designer's variant would (README, "Variants"). The
configuration key ``reintroduce = ["KAFKA-708", ...]`` names the bugs; :func:`configured_protocol` puts
their mixins in front of the protocol's class (the model's own, or a ``--variant``), in the order
given, so that each overrides only its decision and defers to the rest with ``super()``.

Each mixin's docstring says the pre-fix rule; specs/history.toml has the facts (symptom, fix commit,
versions) and the manifest pair that shows the bug; tests/model/test_bug_history.py checks that every
bug classified ``reproduced`` has a mixin here and the reverse.
"""
from __future__ import annotations

from typing import Any

from .alterisr import AlterIsr, Decision
from .config import MAX_PARTITIONS, Config, ConfigError
from .metadatacache import MetadataCache
from .extension import Field, Kind, Scope
from .follower import become_follower_reconciling_by_epoch
from .protocol import ControllerView, IsrChange, Protocol, Removal, Stop, VariantAction, WorldView
from .state import FETCHING, LeaderAndIsr, Replica, make_replica


class Kafka708(Protocol):
    """KAFKA-708 (fixed in 0.8.0): taking the leader's replica out of the ISR kept it as the
    partition's leader. The fix leaves the partition leaderless, as :meth:`Protocol.isr_removal`
    does; before it the removal only dropped the replica from the ISR, which, with unclean election
    (the only election 0.8.0 had), could leave an empty ISR under a recorded leader."""

    def isr_removal(self, w: WorldView, c: ControllerView, p: int, removed: int, cause: Removal) -> IsrChange:
        fixed = super().isr_removal(w, c, p, removed, cause)
        return IsrChange(w.parts[p].leader, fixed.isr, fixed.fields)


class Kafka1188(Protocol):
    """KAFKA-1188 (fixed in 0.8.2): a follower applying any newer LeaderAndIsr truncated its log to
    its HW and restarted fetching, even when its leader had not changed; and the controller's ISR
    removal was told to the leader only. After a same-leader epoch bump (a reassignment step, an
    ISR removal seen by a follower at failover) an in-sync follower whose HW lagged dropped
    acknowledged records. The fix truncates only on a leader change (the model's
    high-watermark rule) and tells every remaining replica of a removal. Without leader epochs only
    (``requires``): later generations reconcile instead of truncating."""

    def become_follower(self, w: WorldView, b: int, p: int, r: Replica, req: LeaderAndIsr) -> Replica:
        log = r.log[: r.hw]
        return make_replica(log, min(r.hw, len(log)), r.checkpoint, req.leader, req.leader_epoch, 0, 0, (), 0, 0,
                            (), FETCHING, (), r.ext)

    def isr_removal_receivers(self, leader: int, assignment: tuple[int, ...], removed: int) -> tuple[int, ...]:
        return (leader,) if leader else ()


class Kafka7164(Protocol):
    """KAFKA-7164 (fixed in 2.0.1 and 2.1.0): with leader epochs, a follower reconciled its log with
    the leader only when the named leader changed, so a follower that missed the epochs in which its
    (same) leader lost the end of its log kept records the leader no longer had. The fix also
    reconciles when the epoch moved by more than one; the model's kip-320 rule reconciles on every
    epoch change (``requires``: the generation must have that rule for the bug to be put back)."""

    def become_follower(self, w: WorldView, b: int, p: int, r: Replica, req: LeaderAndIsr) -> Replica:
        return become_follower_reconciling_by_epoch(r, req, on_every_epoch=False)


class Kafka1097(Protocol):
    """KAFKA-1097 (fixed in 0.8.1): the leader served fetches from any broker that believed it
    followed, and could put it back in the ISR. A replica a reassignment had just removed kept
    fetching until its StopReplica arrived, so the ISR in ZooKeeper ended up holding a broker
    outside the assignment. The fix carries the assignment in LeaderAndIsr and serves only its
    replicas, as :meth:`Protocol.serves_fetch` does."""

    def serves_fetch(self, leader_replica: Replica, follower: int) -> bool:
        return True


class Kafka15665(Protocol):
    """KAFKA-15665 (fixed in 3.8.0, a KRaft controller's rule): a reassignment left its caught-up
    step once the replicas it adds (RAR - OAR) were in the ISR, not every target replica. A target
    replica that was already assigned but out of the ISR then never had to catch up: the election
    among the targets found none in sync and kept the old leader, which the last steps keep in the
    ISR, so the partition finished with an ISR outside its new assignment. The fix, and the
    ZooKeeper controller's step 4 all along (:meth:`Protocol.reassignment_caught_up`), waits for all
    of RAR."""

    def reassignment_caught_up(self, isr: int, old: tuple[int, ...], new: tuple[int, ...]) -> bool:
        return all(isr >> r & 1 for r in new if r not in old)


class Kafka10706(Protocol):
    """KAFKA-10706 (fixed in 2.6.1, 2.7.0 and 2.8.0): a truncation at or beyond the log end returned
    early, leaving the epoch cache as it was. After elections without writes a follower kept an
    entry at its log end that its leader never had, so it asked the same OffsetsForLeaderEpoch
    question forever and never fetched again. The fix always cuts the cache at the truncation point,
    as :meth:`Protocol.epoch_cache_after_truncation` does. Only where followers walk back by epoch
    (``requires``: the KIP-279 answer)."""

    def epoch_cache_after_truncation(self, r: Replica, cut: int) -> tuple[tuple[int, int], ...]:
        if cut >= len(r.log):
            return r.epochs
        return super().epoch_cache_after_truncation(r, cut)


class Kafka15583(Protocol):
    """KAFKA-15583 (fixed in 3.7.0, with KIP-966's eligible leader replicas): the leader advanced
    the HW while its ISR was smaller than min.insync.replicas, exposing records the producer had
    been refused; a replica of the ELR that lacked them could then be elected, and a consumer read
    two records at one offset. The model's own HW rule is the pre-fix one (harmless without an ELR),
    so the bug exists only over a protocol whose HW waits for min ISR: the ELR example
    (examples/variants/eligible_leader_replicas.py), given with ``--variant``."""

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        mro = type(self).__mro__
        after = mro[mro.index(Kafka15583) + 1:]
        owner = next(k for k in after if "high_watermark" in k.__dict__)
        if owner is Protocol:
            raise ConfigError("reintroduce: KAFKA-15583 needs a protocol whose high watermark waits for "
                              "min_insync_replicas (KIP-966: --variant examples/variants/eligible_leader_replicas.py:"
                              "EligibleLeaderReplicas); the model's own rule is already the pre-fix one")

    def high_watermark(self, w: WorldView, leader: int, p: int, r: Replica) -> int:
        return Protocol.high_watermark(self, w, leader, p, r)


class Kafka10432(Protocol):
    """KAFKA-10432 (fixed in 2.6.1 and 2.7.0; the slip came with 2.2): rebuilding the leader-epoch
    cache from the log after an unclean shutdown skipped the records of epoch 0, so the cache no
    longer described the log. Here: after a crash or a lossy crash the replica's cache loses its
    entry of epoch 0 (a controlled shutdown needs no recovery and keeps it). With leader epochs only
    (``requires``)."""

    def replica_after_stop(self, r: Replica, kept: int, how: Stop) -> Replica:
        out = super().replica_after_stop(r, kept, how)
        if how is Stop.CONTROLLED_SHUTDOWN:
            return out
        epochs = tuple(e for e in out.epochs if e[0] != 0)
        return make_replica(out.log, out.hw, out.checkpoint, out.leader, out.leader_epoch, out.isr, out.zk_version,
                            out.remote_leo, out.pending, out.assigned, epochs, out.fetch_state, out.answer, out.ext)


class Kafka3143(Protocol):
    """KAFKA-3143 (fixed in 2.3.0): a new controller only recorded the replicas of dead brokers as
    OfflineReplica, without the move that takes them out of the ISR, so a broker that died while
    the controller changed (often the old controller itself) stayed in the ISR. The model's failover
    is this pre-fix rule unless ``failover_offline_replicas`` asks for the fix (``requires``)."""

    def failover_takes_dead_replicas_offline(self) -> bool:
        return False


class Kafka4447(Protocol):
    """KAFKA-4447 (fixed in 0.10.2.0): resigning did not stop the controller's ZooKeeper listeners;
    callbacks queued before the resignation (broker changes, reassignment, preferred elections,
    deletions) still ran, each acting as controller, for a long time. Here ResignController leaves
    the deposed controller's context and every action it enables in place: it keeps acting as if it
    had not noticed the loss of its session. The safety effects are those of any deposed controller,
    which the model explores before it resigns; what separates the bug is that it never stops."""

    def resignation_stops_controller(self) -> bool:
        return False


def _cached_isr(p: int) -> str:
    return f"kafka1170_isr_{p}"


class Kafka1170(Protocol):
    """KAFKA-1170 (fixed in 0.8.1): the controller decided whether a replica going offline had to
    leave the ISR from its own cached copy of the partition's leader and ISR, not from ZooKeeper.
    The copy followed the controller's own writes and reads, not the leader's ISR expansions, so
    a replica a reassignment removed, and that the leader had meanwhile put back in ZooKeeper's ISR,
    was left there: an ISR member outside the assignment.

    The copy is a controller field per partition (0: not loaded, read ZooKeeper), loaded at
    failover and set to what each of the controller's leader/ISR writes leaves. The initial
    controller loads it lazily (Kafka's loaded it at its election, before the model starts)."""

    fields = tuple(Field(_cached_isr(p), Scope.CONTROLLER, Kind.BROKERS,
                         doc=f"KAFKA-1170: the controller's cached ISR of partition {p}")
                   for p in range(MAX_PARTITIONS))

    def isr_membership_view(self, w: WorldView, c: ControllerView, p: int) -> int:
        cached = self.field(c, _cached_isr(p))
        return cached if cached else super().isr_membership_view(w, c, p)

    def on_controller_write(self, w: Any, c: Any, p: int) -> None:
        super().on_controller_write(w, c, p)
        w.set_controller_field(c, _cached_isr(p), w.parts[p].isr)

    def on_controller_failover(self, w: Any, c: Any) -> None:
        super().on_controller_failover(w, c)
        for p, zp in enumerate(w.parts):
            w.set_controller_field(c, _cached_isr(p), zp.isr)


_LISTED = "kafka3085_listed"
_PENDING = "kafka3085_pending"


class Kafka3085(Protocol):
    """KAFKA-3085 (fixed in 0.10.0.0): the broker-change listener first listed the registered ids,
    then read each registration; new and dead brokers came from the list, the live set from what it
    could read. A broker that deregistered between the two reads was dropped from the live set
    without being handled as failed, so its partitions kept it as leader.

    The first read is an action of its own, ``ReadBrokerIds(e)`` (enabled, like ProcessBrokerChange,
    when the registrations differ from the controller's view), which keeps the listed ids in a
    controller field; ProcessBrokerChange then reads the registrations that still exist. Without a
    pending list it reads both at once, as the model does."""

    fields = (Field(_LISTED, Scope.CONTROLLER, Kind.BROKERS, doc="KAFKA-3085: the broker ids listed"),
              Field(_PENDING, Scope.CONTROLLER, Kind.BOOL, doc="KAFKA-3085: ids listed, registrations not read yet"))
    actions = (VariantAction("ReadBrokerIds", ("controller_epoch",), fair=True,
                             doc="KAFKA-3085: the broker-change listener lists the registered ids"),)

    def extra_enabled(self, state: Any) -> list[Any]:
        from .actions import make_action

        out = list(super().extra_enabled(state))
        for c in (state.controller, state.stale):
            if c is not None and not self.field(c, _PENDING) and c.live != state.zk.live:
                out.append(make_action("ReadBrokerIds", (c.epoch,)))
        return out

    def extra_apply(self, w: Any, action: Any) -> None:
        if action.name != "ReadBrokerIds":
            super().extra_apply(w, action)
            return
        c = w.controller(action.args[0])
        w.set_controller_field(c, _LISTED, w.live)
        w.set_controller_field(c, _PENDING, 1)

    def broker_change_reads(self, w: WorldView, c: ControllerView) -> tuple[int, int]:
        if not self.field(c, _PENDING):
            return super().broker_change_reads(w, c)
        listed = self.field(c, _LISTED)
        setter: Any = getattr(w, "set_controller_field")
        setter(c, _PENDING, 0)
        setter(c, _LISTED, 0)
        return listed, listed & getattr(w, "live")


class Kafka1382(Protocol):
    """KAFKA-1382 (fixed in 0.8.2): when ZooKeeper applied a leader's conditional ISR write but the
    response was lost, the client's retry failed on the znode version and the leader kept its old
    ISR and version; every later ISR write of that leader failed the same way, until a LeaderAndIsr
    came. The fix re-reads the znode on a version mismatch and takes the write as done when the
    znode holds exactly what the leader wrote.

    With the fix a lost response is a plain successful write, which the model's atomic write
    already is. The pre-fix rule adds its other outcome: ``ShrinkIsrResponseLost(b, p, f)``, a
    ShrinkIsr (same guard, same budget ``faults.isr_shrinks``) whose write reaches ZooKeeper while
    the leader keeps its ISR and znode version. The leader still counts ``f`` in its ISR, so it never
    writes ``f`` back, and it can write nothing else: ZooKeeper's ISR never heals."""

    actions = (VariantAction("ShrinkIsrResponseLost", ("broker", "partition", "broker"), fair=False,
                             doc="KAFKA-1382: a ShrinkIsr applied by ZooKeeper whose response the leader lost"),)

    def extra_enabled(self, state: Any) -> list[Any]:
        from .actions import make_action
        from .brokersets import members

        out = list(super().extra_enabled(state))
        if not state.budget.isr_shrinks:
            return out
        for i, br in enumerate(state.brokers):
            b = i + 1
            if not br.alive:
                continue
            for p, r in enumerate(br.replicas):
                if r is None or r.leader != b:
                    continue
                if self.isr_write_succeeds(state.zk.partitions[p].version, r.zk_version):
                    for f in members(r.isr):
                        if f != b and self.may_shrink_isr(r, f, r.isr & ~(1 << f)):
                            out.append(make_action("ShrinkIsrResponseLost", (b, p, f)))
        return out

    def extra_apply(self, w: Any, action: Any) -> None:
        if action.name != "ShrinkIsrResponseLost":
            super().extra_apply(w, action)
            return
        from .broker import write_isr
        from .state import Budget, budget_with

        leader, p, follower = action.args
        i = Budget._fields.index("isr_shrinks")
        w.budget = budget_with(w.budget, i, w.budget[i] - 1)
        rl = w.replica(leader, p)
        written = write_isr(w, leader, p, rl, rl.isr & ~(1 << follower))
        assert written is not None, "enabled only when the conditional write succeeds"
        # the response is lost: the leader's ISR and znode version stay as they were


def _drop_requests_outside_map(w: Any, c: Any) -> None:
    """KAFKA-6193's pre-fix write: /admin/reassign_partitions becomes the controller's in-memory map
    (the partitions it is reassigning), so every pending request it has not taken up vanishes."""
    from .state import make_ghost

    for q, target in enumerate(w.reassign):
        if target and not c.reassign_step[q]:
            w.set_reassign(q, ())
            g = w.ghost[q]
            w.set_ghost(q, make_ghost(g.produced, g.acked, g.exposed, ()))


class Kafka6193(Protocol):
    """KAFKA-6193 (fixed in 1.1.0): /admin/reassign_partitions is one znode for every partition, and
    removing a finished (or refused) partition rewrote it from the controller's in-memory map of
    reassignments. A request the controller had not taken up yet vanished with it, notably at
    failover, where the new controller removed the already completed partitions before loading the
    others into its empty map: a partition left half moved (AR = OAR + RAR) with no request to
    finish it. The fix fills the map first and deletes the znode only when it is empty; the model
    keeps one request per partition, so removing one never touches another."""

    def on_reassignment_request_removed(self, w: Any, c: Any, p: int) -> None:
        super().on_reassignment_request_removed(w, c, p)
        _drop_requests_outside_map(w, c)

    def on_controller_failover(self, w: Any, c: Any) -> None:
        super().on_controller_failover(w, c)
        done = [p for p, target in enumerate(w.reassign) if target and target == w.parts[p].replicas]
        for p in done:  # completed partitions first, while the map is still empty
            from .state import make_ghost

            w.set_reassign(p, ())
            g = w.ghost[p]
            w.set_ghost(p, make_ghost(g.produced, g.acked, g.exposed, ()))
        if done:
            _drop_requests_outside_map(w, c)


class Kafka12686(AlterIsr):
    """KAFKA-12686 (fixed in 3.0.0): with AlterIsr, applying a LeaderAndIsr also dropped the AlterIsr
    manager's item for the partition, although its request was still in flight. The leader could
    then propose another change, which the manager queued but did not send (one request at a time);
    the first request's answer, handled next, removed that queued item and was itself out of date,
    so the leader stayed waiting for a change nobody would ever answer, refusing every later one.
    The fix keeps the item until its answer (:meth:`AlterIsr.leader_and_isr_clears_queued`);
    ``requires`` isr_change = "alter-isr"."""

    def leader_and_isr_clears_queued(self) -> bool:
        return True


class Kafka13091(AlterIsr):
    """KAFKA-13091 (fixed in 3.1.0): with AlterIsr, the leader recomputed its high watermark when it
    proposed a shrink (while the shrinking member still counted) but not when the controller's
    answer applied it, so a write waiting only for the removed follower waited until some other
    event moved the high watermark. The fix recomputes it on the answer
    (:meth:`AlterIsr.recomputes_hw_on_answer`); ``requires`` isr_change = "alter-isr"."""

    def recomputes_hw_on_answer(self) -> bool:
        return False


class Kafka14144(AlterIsr):
    """KAFKA-14144 (a 3.3.0 regression, fixed before its release): the controller compared an
    AlterPartition's version with the znode's before its content, so a request whose first copy it
    had applied, sent again after a lost answer, was refused as stale; the leader gave up and waited
    for a LeaderAndIsr that nothing would send, its ISR change pending forever. The fix answers with
    the znode when it already holds what was asked (:meth:`AlterIsr.alter_isr_decision`);
    ``requires`` isr_change = "alter-isr"."""

    def alter_isr_decision(self, zp: Any, leader: int, isr: int, epoch: int, version: int) -> Decision:
        if epoch < zp.leader_epoch:
            return Decision.FENCED
        if zp.version != version:
            return Decision.STALE_VERSION
        return super().alter_isr_decision(zp, leader, isr, epoch, version)


class Kafka14139(AlterIsr):
    """KAFKA-14139 (fixed in 3.5.0 by KIP-903, for KRaft; the ZooKeeper controller never checked):
    the controller accepted an ISR expansion for a broker whatever had happened to it since the
    fetch that qualified it. A follower that restarted meanwhile with a lost (replaced, or here
    unflushed) log was put in the ISR empty, and could then be elected, losing committed records.
    The fix carries the follower's broker epoch from its fetch to the request and refuses a stale
    one (:meth:`AlterIsr.checks_broker_epochs`); ``requires`` isr_change = "alter-isr" and
    detect_restarts = true (the registration count is the broker epoch)."""

    def checks_broker_epochs(self) -> bool:
        return False


class Kafka4443(Protocol):
    """KAFKA-4443 (fixed in 0.10.2.0): a new controller sent its LeaderAndIsr requests before the
    UpdateMetadata that tells the brokers who is alive. A broker whose metadata cache did not list
    the named leader (one that had just restarted, its cache empty) skipped the become-follower
    transition, and when the UpdateMetadata arrived nothing sent it another LeaderAndIsr: it never
    followed and never rejoined the ISR. The fix sends UpdateMetadata first
    (:meth:`Protocol.failover_sends_metadata_first`); ``requires`` metadata_cache = true."""

    def failover_sends_metadata_first(self) -> bool:
        return False


class Kafka9212(Protocol):
    """KAFKA-9212 (fixed in 2.3.2, 2.4.0): the leader epoch bumps of a reassignment (steps
    bump-epoch and leader) were written to ZooKeeper and sent in LeaderAndIsr, but not recorded in
    the controller's cached leadership, from which UpdateMetadata is built. The brokers' metadata
    caches kept the old leader epoch, and clients validating epochs (KIP-320), fenced by the leader,
    could not learn the new one. The fix records the bumps like every other write
    (:meth:`Protocol.caches_leader_epoch_bumps`); ``requires`` metadata_cache = true."""

    def caches_leader_epoch_bumps(self) -> bool:
        return False


class Kafka14704(Protocol):
    """KAFKA-14704 (fixed in 3.4.1 and 3.5.0): with truncation on fetch, a follower applied a fetch
    response's high watermark before the truncation the same response asked for: HW = min(the
    leader's HW, its own log end), while its log still held its divergent suffix. For a moment its HW
    covered records no leader committed, and elected then it would expose them. Here the answer of
    OffsetsForLeaderEpoch stands for that response (:meth:`Protocol.hw_with_epoch_answer`);
    ``requires`` leader_epochs = true."""

    def hw_with_epoch_answer(self, r: Any, leader_hw: int) -> int:
        return min(leader_hw, len(r.log))


#: bug id -> the mixin that puts its pre-fix rule back
MIXINS: dict[str, type[Protocol]] = {
    "KAFKA-708": Kafka708,
    "KAFKA-1188": Kafka1188,
    "KAFKA-7164": Kafka7164,
    "KAFKA-1097": Kafka1097,
    "KAFKA-15665": Kafka15665,
    "KAFKA-10706": Kafka10706,
    "KAFKA-15583": Kafka15583,
    "KAFKA-10432": Kafka10432,
    "KAFKA-3143": Kafka3143,
    "KAFKA-4447": Kafka4447,
    "KAFKA-1170": Kafka1170,
    "KAFKA-3085": Kafka3085,
    "KAFKA-1382": Kafka1382,
    "KAFKA-6193": Kafka6193,
    "KAFKA-12686": Kafka12686,
    "KAFKA-13091": Kafka13091,
    "KAFKA-14144": Kafka14144,
    "KAFKA-14139": Kafka14139,
    "KAFKA-4443": Kafka4443,
    "KAFKA-9212": Kafka9212,
    "KAFKA-14704": Kafka14704,
}

_COMPOSED: dict[tuple[type, tuple[str, ...]], type] = {}


def protocol_class(base: type[Protocol], ids: tuple[str, ...]) -> type[Protocol]:
    """``base`` with the mixins of ``ids`` in front (the first id's mixin first in the MRO); one
    class per combination, so that two models of the same configuration share it."""
    if not ids:
        return base
    key = (base, ids)
    cls = _COMPOSED.get(key)
    if cls is None:
        missing = [i for i in ids if i not in MIXINS]
        if missing:  # the configuration accepted it: specs/history.toml and this module disagree
            raise ConfigError(f"reintroduce: {missing[0]} has no pre-fix rule in model/history.py")
        bases = tuple(MIXINS[i] for i in ids) + (base,)
        # a mixin's own state and actions join the base's (a class attribute would hide them)
        extra: dict[str, Any] = {"__module__": __name__}
        for attr in ("fields", "actions"):
            joined = tuple(x for m in bases[:-1] for x in m.__dict__.get(attr, ())) + tuple(getattr(base, attr, ()))
            if joined:
                extra[attr] = joined
        cls = type(f"{base.__name__}+{'+'.join(ids)}", bases, extra)
        _COMPOSED[key] = cls
    return cls


def _options(cfg: Config) -> tuple[type[Protocol], ...]:
    """The built-in protocols a configuration's options select, each a Protocol subclass with state
    of its own: ISR changes through the controller (model/alterisr.py), the brokers' metadata
    cache (model/metadatacache.py)."""
    out: list[type[Protocol]] = []
    if cfg.isr_change == "alter-isr":
        out.append(AlterIsr)
    if cfg.metadata_cache:
        out.append(MetadataCache)
    return tuple(out)


def _with_options(base: type[Protocol], options: tuple[type[Protocol], ...]) -> type[Protocol]:
    """``base`` with the option protocols it lacks behind it: a designer's variant keeps its own
    rules, and each option's rules stand where it defines none."""
    missing = tuple(o for o in options if not issubclass(base, o))
    if not missing:
        return base
    if base is Protocol and len(missing) == 1:
        return missing[0]
    key = (base, tuple(o.__name__ for o in missing))
    cls = _COMPOSED.get(key)
    if cls is None:
        bases = missing if base is Protocol else (base,) + missing
        extra: dict[str, Any] = {"__module__": base.__module__}
        for attr in ("fields", "actions"):  # the options' first: their layout does not depend on the variant
            joined = tuple(x for k in missing for x in getattr(k, attr, ())) + tuple(getattr(base, attr, ()))
            if joined:
                extra[attr] = joined
        cls = type("+".join(k.__name__ for k in bases), bases, extra)
        _COMPOSED[key] = cls
    return cls


def configured_protocol(cfg: Config, protocol: Protocol | None = None) -> Protocol:
    """The protocol for ``cfg``: ``protocol`` (or the model's own), with the option protocols the
    configuration selects behind it (``isr_change = "alter-isr"``, ``metadata_cache``) and the bugs
    of ``cfg.reintroduce`` put back in front (their mixins, in the order given). ``protocol`` itself
    when it already is all that; else a new instance built from the configuration. A protocol whose
    class cannot be built from the configuration alone (a variant's factory function) cannot take
    them: one line, a ConfigError."""
    ids = tuple(cfg.reintroduce)
    options = _options(cfg)
    if protocol is None:
        base = _with_options(Protocol, options)
        return protocol_class(base, ids)(cfg) if ids else base(cfg)
    if all(isinstance(protocol, o) for o in options) and all(isinstance(protocol, MIXINS.get(i, ())) for i in ids):
        return protocol
    try:
        return protocol_class(_with_options(type(protocol), options), ids)(protocol.config)
    except TypeError as e:
        what = ", ".join(ids + tuple(o.__name__ for o in options))
        raise ConfigError(f"cannot build protocol {type(protocol).__name__} with {what}: {e}") from None


__all__ = ["MIXINS", "protocol_class", "configured_protocol"]
