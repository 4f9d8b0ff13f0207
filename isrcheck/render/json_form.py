"""Results as JSON: plain data (``json.dumps`` works on every value returned here, and no Python
repr ever leaks into it), what ``--json`` prints. Nothing here decides a verdict."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from isrcheck.engine.checker import CheckResult, Step, Violation
from isrcheck.invariants.properties import describe
from isrcheck.model.action_text import to_json as action_to_json
from isrcheck.model.brokersets import members
from isrcheck.model.config import Config
from isrcheck.model.extension import Extension, Scope
from isrcheck.model.records import record_epoch, record_id
from isrcheck.model.state import LEADER_AND_ISR, NO_LEADER, STOP_REPLICA, Controller, Replica, Request, State
from isrcheck.model.tables import PartitionState, ReplicaState


def _ids(mask: int) -> list[int]:
    return list(members(mask))


def _by_broker(values: Sequence[int]) -> dict[str, int]:
    return {str(i + 1): v for i, v in enumerate(values)}


def _leader(b: int) -> int | None:
    return None if b == NO_LEADER else b


def _records(log: Sequence[int]) -> list[dict[str, int]]:
    return [{"id": record_id(r), "epoch": record_epoch(r)} for r in log]


def request_to_json(req: Request) -> dict[str, Any]:
    if req[0] == LEADER_AND_ISR:
        return {
            "type": "LeaderAndIsr", "controller_epoch": req[1], "partition": req[2],
            "leader": _leader(req[3]), "isr": _ids(req[4]), "leader_epoch": req[5],
            "zk_version": req[6], "replicas": list(req[7]),
        }
    if req[0] == STOP_REPLICA:
        return {"type": "StopReplica", "controller_epoch": req[1], "partition": req[2], "delete": bool(req[3])}
    out: dict[str, Any] = {"type": "UpdateMetadata", "controller_epoch": req[1]}
    if req[2]:  # brokers keep a metadata cache: what it tells them
        out["live"] = _ids(req[2][0])
        out["leader_epochs"] = list(req[2][1:])
    return out


def variant_values(values: tuple[int, ...], scope: Scope, extension: Extension | None) -> dict[str, Any]:
    """A variant's values held by one state object as ``{"variant": {name: value}}`` (broker sets as
    id lists, a broker as its id or null, booleans as booleans), or ``{"variant": {"ext": [...]}}``
    without the declarations; ``{}`` when it holds none (the model's own states)."""
    if not values:
        return {}
    if extension is None or len(extension.of(scope)) != len(values):
        return {"variant": {"ext": list(values)}}
    return {"variant": extension.as_json(scope, values)}


def _controller_to_json(c: Controller | None, extension: Extension | None = None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "epoch": c.epoch,
        "live": _ids(c.live),
        "registrations": _by_broker(c.registrations),
        "partition_states": {str(p): PartitionState(s).label for p, s in enumerate(c.partition_states)},
        "replica_states": {
            str(p): {str(b + 1): ReplicaState(s).label for b, s in enumerate(row)}
            for p, row in enumerate(c.replica_states)
        },
        "reassign_step": {str(p): s for p, s in enumerate(c.reassign_step)},
        "reassign_old": {str(p): list(r) for p, r in enumerate(c.reassign_old)},
        "reassign_new": {str(p): list(r) for p, r in enumerate(c.reassign_new)},
        "shutting_down": _ids(c.shutting_down),
    } | variant_values(c.ext, Scope.CONTROLLER, extension)


def _replica_to_json(r: Replica | None, extension: Extension | None = None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "log": _records(r.log),
        "leo": len(r.log),
        "hw": r.hw,
        "checkpoint": r.checkpoint,
        "leader": _leader(r.leader),
        "leader_epoch": r.leader_epoch,
        "isr": _ids(r.isr),
        "zk_version": r.zk_version,
        "remote_leo": _by_broker(r.remote_leo),
        "pending": _ids(r.pending),
    } | variant_values(r.ext, Scope.REPLICA, extension)


def state_to_json(s: State, extension: Extension | None = None) -> dict[str, Any]:
    """The state as plain JSON: broker sets as sorted id lists, records as {id, epoch},
    controller state machines by their labels, per-broker maps keyed by broker id; a variant's
    fields under ``variant`` in the object that holds them (named by ``extension``)."""
    zk = s.zk
    return {
        "zk": {
            "live": _ids(zk.live),
            "registrations": _by_broker(zk.registrations),
            "controller_epoch": zk.controller_epoch,
            "partitions": [
                {
                    "partition": p, "replicas": list(zp.replicas), "leader": _leader(zp.leader),
                    "isr": _ids(zp.isr), "leader_epoch": zp.leader_epoch, "version": zp.version,
                    "controller_epoch": zp.controller_epoch,
                } | variant_values(zp.ext, Scope.PARTITION, extension)
                for p, zp in enumerate(zk.partitions)
            ],
            "reassign": {str(p): list(t) for p, t in enumerate(zk.reassign) if t},
            "preferred": _ids(zk.preferred),
            "deleting": _ids(zk.deleting),
        },
        "controller": _controller_to_json(s.controller, extension),
        "stale_controller": _controller_to_json(s.stale, extension),
        "brokers": [
            {
                "id": i + 1, "alive": br.alive, "controller_epoch": br.controller_epoch,
                "replicas": {str(p): _replica_to_json(r, extension) for p, r in enumerate(br.replicas)},
                "inbox": [request_to_json(q) for q in s.inbox[i]],
            } | variant_values(br.ext, Scope.BROKER, extension)
            for i, br in enumerate(s.brokers)
        ],
        "ghost": [
            {
                "partition": p, "produced": g.produced, "acked": _ids(g.acked),
                "exposed": _records(g.exposed), "reassign_origin": list(g.reassign_origin),
            }
            for p, g in enumerate(s.ghost)
        ],
        "budget": dict(s.budget._asdict()),
        "pending_reassignments": [{"partition": p, "target": list(t)} for p, t in s.reassignments],
    }


def trace_to_json(trace: Sequence[Step], extension: Extension | None = None) -> list[dict[str, Any]]:
    return [
        {
            "step": i,
            "action": None if st.action is None else action_to_json(st.action),
            "state": None if st.state is None else state_to_json(st.state, extension),
        }
        for i, st in enumerate(trace)
    ]


def violation_to_json(v: Violation, extension: Extension | None = None) -> dict[str, Any]:
    out = {
        "property": v.property,
        "kind": v.kind,
        "message": describe(v),  # never empty: the property and the values that broke it
        "length": v.length,
        "trace": trace_to_json(v.trace, extension),
    }
    if v.kind == "liveness":
        out["loop"] = v.loop  # the step the last one goes back to (== length: it stutters there)
    return out


def liveness_to_json(result: Any, extension: Extension | None = None) -> dict[str, Any]:
    """A LivenessResult as plain data (the ``liveness`` object of ``check --json``)."""
    return {
        "fairness": list(result.fairness),
        "complete": result.complete,
        "states": result.states,
        "edges": result.edges,
        "bytes": result.bytes,
        "seconds": _round(result.seconds),
        "verdicts": [
            {"property": v.property,
             "verdict": "unknown" if v.holds is None else ("holds" if v.holds else "broken"),
             "instance": v.lasso.instance if v.lasso is not None else None,
             "violation": violation_to_json(v.violation, extension) if v.violation is not None else None}
            for v in result.verdicts
        ],
    }


def _round(x: float) -> float:
    return round(x, 6)


def result_to_json(model_name: str, config: Config, result: CheckResult,
                   extension: Extension | None = None) -> dict[str, Any]:
    """A CheckResult as one JSON object (what ``isrcheck check --json`` prints)."""
    return {
        "model": model_name,
        "mode": "check",
        "outcome": result.outcome,
        "violations": [violation_to_json(v, extension) for v in result.violations],
        "distinct_states": result.distinct_states,
        "depth": result.depth,
        "seconds": _round(result.seconds),
        "transitions": result.transitions,
        "states_per_second": _round(result.states_per_second),
        "collision_probability": result.collision_probability,
        "coverage": dict(result.coverage),
        "unwitnessed": list(result.unwitnessed),
        "limit_hit": result.limit_hit,
        "config": config.to_dict(),
    }


def check_to_json(model_name: str, config: Config, result: CheckResult, lres: Any,
                  verdict: dict[str, Any], extension: Extension | None = None) -> dict[str, Any]:
    """What ``check --json`` prints (specs/check-result.schema.json): the safety result, the
    liveness result, and the one verdict on top. ``outcome`` is the run's verdict (the one the
    exit status gives); the safety search's own is ``safety_outcome``; every broken property,
    safety or liveness, is in ``violations`` (a liveness one with ``kind: "liveness"`` and its
    ``loop``); a variant's fields by the names ``extension`` declares."""
    out = result_to_json(model_name, config, result, extension)
    out["safety_outcome"] = result.outcome
    if lres is not None:
        out["liveness"] = liveness_to_json(lres, extension)
        out["violations"] += [violation_to_json(v.violation, extension) for v in lres.verdicts
                              if v.violation is not None]
    out.update(verdict)
    return out


def simulation_to_json(model_name: str, config: Config, result: Any,
                       extension: Extension | None = None) -> dict[str, Any]:
    """A SimulationResult as one JSON object (what ``isrcheck simulate --json`` prints)."""
    return {
        "model": model_name,
        "mode": "simulate",
        "outcome": result.outcome,
        "seed": result.seed,
        "strategy": result.strategy,
        "walks": result.walks,
        "first_found": result.first_found,  # the walk that found the first violation (then: shrinking)
        "max_depth": result.max_depth,
        "violations": [violation_to_json(v, extension) for v in result.violations],
        "distinct_states": result.distinct_states,
        "depth": result.deepest,
        "dead_ends": result.dead_ends,
        "seconds": _round(result.seconds),
        "transitions": result.steps,
        "steps_per_second": _round(result.steps_per_second),
        "coverage": dict(result.coverage),
        "witnessed": list(result.witnessed),
        "unwitnessed": list(result.unwitnessed),
        "config": config.to_dict(),
    }
