"""Counterexamples to induction as text (specs/08-symbolic.md#inductive-invariants).

A counterexample to induction (CTI) is a satisfying z3 model of a consecution query: a state within
the bounds that satisfies the invariant, an action, and the state after it that breaks a member.
:func:`counterexample_to_induction` decodes both states with the model's own types
(:meth:`~.types.SymState.decode`) and names the action as the model does; :func:`describe` and
:func:`describe_pair` print them as lines, the changed ones marked, for the command line and JSON.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from isrcheck.model.brokersets import render
from isrcheck.model.records import render_log
from isrcheck.model.state import ASK_EPOCH_END, FETCHING, TRUNCATE_PENDING, LeaderAndIsr, State, StopReplica

from .instance import Instance
from .logic import Judgement
from .replication import Encoding
from .types import SymState

_FETCH_STATES = {FETCHING: "fetching", ASK_EPOCH_END: "must ask its epoch's end", TRUNCATE_PENDING: "must truncate"}


def describe(s: State, enc: Encoding) -> list[str]:
    """A state of the encoded fragment, one line per partition and per broker."""
    out = []
    c = s.controller
    out.append(f"controller: believes alive {render(c.live)}; ZooKeeper registrations {render(s.zk.live)}")
    for p, zp in enumerate(s.zk.partitions):
        g = s.ghost[p]
        state = "Online" if c.partition_states[p] == 2 else "Offline"
        out.append(f"p{p}: znode leader {zp.leader or 'none'}, ISR {render(zp.isr)}, leader epoch {zp.leader_epoch}, "
                   f"version {zp.version}; {state}; produced {g.produced}, acked {render(g.acked)}, "
                   f"exposed {render_log(g.exposed)}")
    for i, br in enumerate(s.brokers):
        b = i + 1
        head = f"broker {b} {'up' if br.alive else 'DOWN'}"
        parts = []
        for p, r in enumerate(br.replicas):
            if r is None:
                continue
            role = ("leads" if r.leader == b else f"follows {r.leader}" if r.leader else "no leader")
            t = f"p{p}: log {render_log(r.log)} hw {r.hw} ckpt {r.checkpoint}, {role} (epoch {r.leader_epoch})"
            if r.leader == b:
                remote = ",".join(f"{m + 1}:{v}" for m, v in enumerate(r.remote_leo) if m + 1 in enc.U[p] and m + 1 != b)
                t += f", ISR {render(r.isr)}, zkv {r.zk_version}, remote LEO {{{remote}}}, pending {render(r.pending)}"
            if enc.E:  # the leader-epoch generations
                cache = " ".join(f"e{e}@{o}" for e, o in r.epochs) or "empty"
                t += f", epochs [{cache}], {_FETCH_STATES.get(r.fetch_state, r.fetch_state)}"
                if r.answer:
                    t += f" (answer: epoch {r.answer[0]} ends at {r.answer[1]})"
            parts.append(t)
        reqs = []
        for q in s.inbox[i]:
            if isinstance(q, LeaderAndIsr):
                reqs.append(f"LeaderAndIsr(p{q.partition}: leader {q.leader or 'none'}, ISR {render(q.isr)}, "
                            f"epoch {q.leader_epoch}, zkv {q.zk_version})")
            elif isinstance(q, StopReplica):
                reqs.append(f"StopReplica(p{q.partition})")
            else:
                reqs.append("UpdateMetadata")
        if reqs:
            parts.append("queue: " + ", ".join(reqs))
        out.append(head + ("; " + "; ".join(parts) if parts else ""))
    left = s.budget
    out.append(f"budgets left: crashes {left.crashes}, lossy {left.lossy_crashes}, undetected restarts "
               f"{left.undetected_restarts}, ISR shrinks {left.isr_shrinks}, delayed deliveries {left.delayed_requests}")
    return out


def describe_pair(before: State, label: str, after: State, enc: Encoding) -> list[str]:
    a, b = describe(before, enc), describe(after, enc)
    lines = ["before:"] + [f"    {x}" for x in a] + [f"action: {label}", "after (changed lines marked *):"]
    lines += [f"  {'*' if i >= len(a) or a[i] != x else ' '} {x}" for i, x in enumerate(b)]
    return lines


@dataclass
class Cti:
    before: State
    action: str
    kind: str
    after: State
    lines: list[str]

    def to_json(self) -> dict[str, Any]:
        """Plain data: the action and both states as readable lines (isrcheck.render turns the
        states themselves into JSON where the command line wants it)."""
        return {"action": self.action, "kind": self.kind, "before": self.lines_of("before"),
                "after": self.lines_of("after")}

    def lines_of(self, which: str) -> list[str]:
        start = self.lines.index("before:" if which == "before" else "after (changed lines marked *):") + 1
        out = []
        for line in self.lines[start:]:
            if not line.startswith("  "):
                break
            out.append(line.strip().lstrip("* ").strip())
        return out


def counterexample_to_induction(enc: Encoding, inst: Instance, judgement: Judgement[SymState]) -> Cti:
    """The pair of model states (and the action ``inst`` between them) of a refuted consecution
    check on ``inst`` (its states: the symbolic state before and ``inst``'s effect), decoded by the
    model's own types."""
    decoded = judgement.counterexample(lambda m, s: s.decode(m, enc.init_state))
    assert decoded is not None and judgement.model is not None, "only a refuted check has a counterexample"
    before, after = decoded
    label = str(enc.action_of(inst, judgement.model))
    return Cti(before, label, inst.kind, after, describe_pair(before, label, after, enc))


__all__ = ["Cti", "counterexample_to_induction", "describe", "describe_pair"]
