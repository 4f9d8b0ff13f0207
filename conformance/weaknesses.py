"""The known-weakness gallery, replayed on the implementation.

For each weakness of specs/weaknesses.toml (:mod:`isrcheck.specs.weaknesses`) and each of its
manifest models (one per protocol generation): when the model breaks a property
(``expect = "safety_failure"``), the checker's shortest counterexample is driven on the implementation
configured with the same generation, every step is compared with the model, and the property is
evaluated on the *implementation's* observation (its observation form,
:data:`isrcheck.invariants.properties.OBSERVATION_PROPERTIES`) after every step. The weakness is
**reproduced** when the implementation breaks the same property at the same step as the model.
Generations the implementation does not accept yet are **skipped** (asked of ``impl`` through its
configuration error, so they are picked up as soon as it accepts them); generations where the model
holds have no counterexample to replay (**fixed**). The manifest entries are the caller's
(``isrcheck.inputs.manifest.load()``): conformance does not load the manifest itself.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from isrcheck.invariants.properties import OBSERVATION_PROPERTIES, holds_on_observation
from isrcheck.model.config import Config
from isrcheck.specs.manifest import ModelEntry, get
from isrcheck.specs.weaknesses import load_weaknesses

from .export import counterexample
from .replay import ConformResult, conform_actions
from .sides import impl_support
from .traces import Trace

__all__ = ["WeaknessReplay", "replay_model", "replay_weaknesses"]


@dataclass
class WeaknessReplay:
    weakness: str
    model: str
    generation: str
    status: str  # "reproduced" | "not-reproduced" | "diverged" | "skipped" | "fixed" | "no-observation-form"
    property: str | None = None
    length: int | None = None
    model_step: int | None = None  # where the property first breaks in the model's trace
    impl_step: int | None = None  # ... and on the implementation's observations
    message: str = ""
    conform: ConformResult | None = None


def replay_model(entry: ModelEntry[Config], weakness: str = "", trace: Trace | None = None) -> WeaknessReplay:
    """Replay manifest model ``entry``'s counterexample (``trace``, or the checker's) on the implementation."""
    name = entry.name
    gen = entry.config.generation.value
    out = WeaknessReplay(weakness, name, gen, "skipped")
    if entry.expect != "safety_failure":
        out.status = "fixed"
        out.message = "every property holds in the model: nothing to replay"
        return out
    reason = impl_support(entry.config)
    if reason is not None:
        out.message = f"the implementation does not accept generation {gen}: {reason}"
        return out
    trace = trace if trace is not None else counterexample(entry.target())
    if trace is None:  # pragma: no cover - the manifest's own gate would fail first
        out.status = "not-reproduced"
        out.message = "the checker found no counterexample (the manifest expectation is stale)"
        return out
    out.property, out.length = trace.prop, len(trace.steps) - 1
    if out.property not in OBSERVATION_PROPERTIES:
        out.status = "no-observation-form"
        out.message = f"{out.property} has no form over observations"
        return out
    for st in trace.steps:
        if not holds_on_observation(out.property, st.observation, st.acked):
            out.model_step = st.index
            break
    first: list[int] = []

    def watch(i: int, obs: dict, acked: list) -> None:
        if not first and not holds_on_observation(out.property, obs, acked):  # type: ignore[arg-type]
            first.append(i)

    res = conform_actions(trace.config, trace.actions, label=name, expected=[(s.observation, s.acked) for s in trace.steps],
                          against="both", observer=watch)
    out.conform = res
    out.impl_step = first[0] if first else None
    if res.divergence is not None:
        out.status = "diverged"
        out.message = res.divergence.summary()
    elif out.impl_step is not None and out.impl_step == out.model_step:
        out.status = "reproduced"
        out.message = f"the implementation breaks {out.property} at step {out.impl_step}, as the model does"
    else:
        out.status = "not-reproduced"
        out.message = (f"the model breaks {out.property} at step {out.model_step}, the implementation "
                       f"{'at step ' + str(out.impl_step) if out.impl_step is not None else 'never'}")
    return out


def replay_weaknesses(entries: Sequence[ModelEntry[Config]],
                      titles: list[str] | None = None) -> list[WeaknessReplay]:
    """Every weakness (or those titled ``titles``) on every generation; ``entries``: the manifest."""
    out = []
    for w in load_weaknesses():
        if titles and w.title not in titles:
            continue
        for name in w.generations:
            out.append(replay_model(get(name, entries), w.title))
    return out
