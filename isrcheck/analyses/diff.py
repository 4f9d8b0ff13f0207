"""``isrcheck diff A B``: how two protocol variants or configurations of the same bounds differ.

Two questions: which properties change verdict (with the shortest counterexample on the side
that breaks), and which behaviours one side can reach that the other cannot (with a shortest
witness trace). A behaviour is a state seen from outside, without generation-specific internals
(epoch caches, reconciliation progress): per partition AR, leader and ISR in ZooKeeper; per
broker liveness, log and high watermark; and which writes were acknowledged.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from isrcheck.engine.checker import Checker, CheckResult, Step, Violation
from isrcheck.inputs import manifest
from isrcheck.invariants import build_model
from isrcheck.invariants.variants import ProtocolFactory, load_variant
from isrcheck.model.config import PROTOCOL_KEYS, Config, ConfigError
from isrcheck.model.protocol import Protocol
from isrcheck.model.state import State
from isrcheck.specs.protocol import GENERATION_NAMES

@dataclass
class Side:
    label: str
    config: Config
    factory: ProtocolFactory = Protocol


def resolve_side(text: str, base: Config | None) -> Side:
    """A generation name, a variant ``module:attr``, a config file, or a manifest model."""
    if text in GENERATION_NAMES:
        if base is None:
            raise ConfigError(f"{text!r} is a generation: give the bounds with --config FILE or --model NAME")
        return Side(text, dataclasses.replace(base, generation=text))
    if ":" in text:
        if base is None:
            raise ConfigError(f"{text!r} is a variant: give the bounds with --config FILE or --model NAME")
        factory = load_variant(text)
        return Side(text, base, factory)
    if text.endswith(".toml"):
        return Side(text, manifest.resolve(None, text).config)
    return Side(text, manifest.resolve(text, None).config)


def bounds(cfg: Config) -> dict[str, Any]:
    """The configuration less the keys that choose the protocol (model/config.py's metadata marks
    them): two sides with the same bounds differ only in their protocols."""
    d = cfg.to_dict()
    for k in PROTOCOL_KEYS:
        d.pop(k, None)
    return d


def behaviour(s: State) -> tuple:
    parts = tuple((zp.replicas, zp.leader, zp.isr) for zp in s.zk.partitions)
    replicas = tuple(
        (br.alive, tuple((r.log, r.hw) if r is not None else None for r in br.replicas)) for br in s.brokers
    )
    return parts, replicas, tuple(g.acked for g in s.ghost)


@dataclass
class Explored:
    side: Side
    result: CheckResult
    checker: Checker
    first: dict[tuple, tuple[int, int]] = field(default_factory=dict)  # behaviour -> (depth, fingerprint)


def explore(side: Side, max_states: int | None) -> Explored:
    model = build_model(side.config, protocol=side.factory(side.config), symmetry=False)
    first: dict[tuple, tuple[int, int]] = {}

    def observe(state: State, fp: int, depth: int) -> None:
        key = behaviour(state)
        if key not in first:
            first[key] = (depth, fp)

    checker = Checker(model, stop_on_first=False, max_states=max_states, observer=observe)
    result = checker.run()
    return Explored(side, result, checker, first)


@dataclass
class VerdictChange:
    property: str
    broken_in: str  # the label of the side that breaks it
    violation: Violation


@dataclass
class DiffResult:
    a: Explored
    b: Explored
    changes: list[VerdictChange]
    only_a: list[tuple[int, list[Step]]]  # (count of such behaviours is separate) shortest witnesses
    only_b: list[tuple[int, list[Step]]]
    count_only_a: int
    count_only_b: int


def diff(a: Side, b: Side, *, witnesses: int = 1, max_states: int | None = None) -> DiffResult:
    if bounds(a.config) != bounds(b.config):
        raise ConfigError(f"{a.label} and {b.label} do not have the same bounds; diff compares protocols, not sizes")
    ea, eb = explore(a, max_states), explore(b, max_states)
    va = {v.property: v for v in ea.result.violations}
    vb = {v.property: v for v in eb.result.violations}
    changes = [VerdictChange(p, a.label, va[p]) for p in sorted(va.keys() - vb.keys())]
    changes += [VerdictChange(p, b.label, vb[p]) for p in sorted(vb.keys() - va.keys())]

    def witnesses_of(mine: Explored, other: Explored) -> tuple[int, list[tuple[int, list[Step]]]]:
        missing = sorted((depth, fp) for key, (depth, fp) in mine.first.items() if key not in other.first)
        return len(missing), [(depth, mine.checker.trace_to(fp)) for depth, fp in missing[:witnesses]]

    na, wa = witnesses_of(ea, eb)
    nb, wb = witnesses_of(eb, ea)
    return DiffResult(ea, eb, changes, wa, wb, na, nb)
