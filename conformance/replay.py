"""Model -> implementation: drive the implementation through a trace's actions, compare every step.

:func:`conform_trace` takes a loaded :class:`~.traces.Trace`; :func:`conform_actions` takes a
configuration and a list of actions. Each creates the implementation's step-mode simulator with the
same configuration, compares the initial observations, then for every action: performs it on the
implementation (and, when the expectation comes from the model, on the model), and compares the two
observations and acknowledged writes field by field (:mod:`.observations`). The first difference
stops the replay and is returned as a :class:`Divergence`: the step, the action, and the fields.

Where the expectation comes from (``against``):

- ``"trace"``: the observations stored in the trace (no model needed: the file is the contract);
- ``"model"``: a fresh replay of the model (the trace's observations are ignored);
- ``"both"``: the model, and the trace's stored observations are checked against the model too, so a
  stale trace (one the current model no longer produces) is reported as such, not blamed on the
  implementation.

The implementation's observation is also validated against specs/observation.toml at every step.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from isrcheck.model.config import Config
from isrcheck.model.protocol import Protocol
from isrcheck.specs.actions import action_text
from isrcheck.specs.observation import ObservationError
from isrcheck.specs.observation import validate as validate_observation

from .observations import Difference, diff, flatten, strict_equal
from .sides import ImplFailed, ImplRefused, ImplSide, ModelRefused, ModelSide, impl_support
from .traces import Trace

__all__ = ["ConformResult", "Divergence", "conform_actions", "conform_trace"]


@dataclass
class Divergence:
    index: int  # the step (0: the initial state; i: after the i-th action)
    action: tuple[str, tuple] | None
    reason: str  # "observation", "impl-refused", "impl-failed", "impl-invalid", "model-refused", "stale-trace"
    message: str
    differences: list[Difference] = field(default_factory=list)

    @property
    def action_text(self) -> str:
        return "(initial state)" if self.action is None else action_text(*self.action)

    def summary(self) -> str:
        head = f"step {self.index} {self.action_text}: {self.message}"
        if self.differences:
            d = self.differences[0]
            more = f" (and {len(self.differences) - 1} more field(s))" if len(self.differences) > 1 else ""
            head += f"; first field {d.path}: model {_short(d.expected)}, implementation {_short(d.actual)}{more}"
        return head


@dataclass
class ConformResult:
    label: str
    config: Config
    steps: int  # actions in the trace
    matched: int  # steps whose comparison passed (the initial state counts as step 0)
    divergence: Divergence | None = None
    skipped: str | None = None  # why nothing ran (the implementation refuses the configuration)
    seconds: float = 0.0
    actions: list[tuple[str, tuple]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.divergence is None and self.skipped is None

    @property
    def steps_per_second(self) -> float:
        return self.matched / self.seconds if self.seconds > 0 else 0.0


def _short(v: Any) -> str:
    t = repr(v)
    return t if len(t) <= 60 else t[:57] + "..."


def _impl_state(impl: ImplSide) -> tuple[dict[str, Any], list[list[int]]]:
    try:
        return impl.observation(), impl.acked()
    except Exception as e:  # noqa: BLE001 - a broken implementation must be reported, not crash the harness
        raise ImplFailed(f"observe: {type(e).__name__}: {e}") from e


def compare_step(index: int, action: tuple[str, tuple] | None, expected: tuple[dict, list], impl: ImplSide,
                 ignore: Sequence[str] = (), validate: bool = True) -> Divergence | None:
    """Compare the implementation's current observation with ``expected`` = (observation, acked)."""
    try:
        obs, acked = _impl_state(impl)
    except ImplFailed as e:
        return Divergence(index, action, "impl-failed", f"the implementation failed: {e}")
    if obs == expected[0] and acked == expected[1] and not ignore and (
            not validate or (strict_equal(obs, expected[0]) and strict_equal(acked, expected[1]))):
        return None  # equal, types included, to an observation that is valid: valid too
    if validate:
        try:
            validate_observation(obs)
        except ObservationError as e:
            return Divergence(index, action, "impl-invalid",
                              f"the implementation's observation breaks specs/observation.toml: {e}")
    diffs = diff(flatten(expected[0], expected[1]), flatten(obs, acked), ignore)
    if diffs:
        return Divergence(index, action, "observation", f"{len(diffs)} field(s) differ", diffs)
    return None


def conform_actions(config: Config, actions: Iterable[tuple[str, tuple]], *, label: str = "actions",
                    expected: Sequence[tuple[dict, list]] | None = None, against: str = "model",
                    ignore: Sequence[str] = (), seed: int = 0, protocol: Protocol | None = None,
                    validate: bool = True, observer: Callable[[int, dict, list], None] | None = None) -> ConformResult:
    """Replay ``actions`` on the implementation and compare after every step.

    ``expected`` (one ``(observation, acked)`` per step, the initial state first) is what a trace
    stored; ``against`` says whether to use it (``"trace"``), the model (``"model"``), or the model
    while also checking ``expected`` against it (``"both"``). ``observer(index, observation, acked)``
    sees the implementation's side of every step that matched.
    """
    actions = [(n, tuple(a)) for n, a in actions]
    result = ConformResult(label, config, len(actions), 0, actions=actions)
    reason = impl_support(config)
    if reason is not None:
        result.skipped = f"the implementation does not accept this configuration: {reason}"
        return result
    if against not in ("trace", "model", "both"):
        raise ValueError(f"against must be trace, model or both, got {against!r}")
    if against != "model" and expected is None:
        raise ValueError("comparing against a trace needs its observations")
    start = time.perf_counter()
    model = ModelSide(config, protocol) if against in ("model", "both") else None
    try:
        impl = ImplSide(config, seed=seed)
    except ImplRefused as e:
        result.skipped = str(e)
        return result
    except Exception as e:  # noqa: BLE001
        result.divergence = Divergence(0, None, "impl-failed", f"the implementation failed to start: {type(e).__name__}: {e}")
        result.seconds = time.perf_counter() - start
        return result

    def want(i: int) -> tuple[dict, list] | Divergence:
        if model is None:
            return expected[i]  # type: ignore[index]
        mine = (model.observation(), model.acked())
        if against == "both" and expected is not None and (expected[i][0] != mine[0] or expected[i][1] != mine[1]):
            diffs = diff(flatten(*mine), flatten(*expected[i]))
            return Divergence(i, actions[i - 1] if i else None, "stale-trace",
                              "the trace's stored observation is not the model's (a stale trace); "
                              "the fields list the model's value, then the trace's", diffs)
        return mine

    def look(i: int) -> None:
        if observer is not None:
            observer(i, impl.observation(), impl.acked())

    w = want(0)
    div = w if isinstance(w, Divergence) else compare_step(0, None, w, impl, ignore, validate)
    if div is None:
        look(0)
        result.matched = 1
        for i, (name, args) in enumerate(actions, start=1):
            if model is not None:
                try:
                    model.step(name, args)
                except ModelRefused as e:
                    div = Divergence(i, (name, args), "model-refused", f"the model cannot take this step: {e}")
                    break
            try:
                impl.step(name, args)
            except ImplRefused as e:
                div = Divergence(i, (name, args), "impl-refused", f"the implementation refused the action: {e}")
                break
            except ImplFailed as e:
                div = Divergence(i, (name, args), "impl-failed", f"the implementation failed: {e}")
                break
            w = want(i)
            div = w if isinstance(w, Divergence) else compare_step(i, (name, args), w, impl, ignore, validate)
            if div is not None:
                break
            look(i)
            result.matched += 1
    result.divergence = div
    result.seconds = time.perf_counter() - start
    return result


def conform_trace(trace: Trace, *, against: str = "trace", ignore: Sequence[str] = (), seed: int = 0,
                  validate: bool = True, protocol: Protocol | None = None) -> ConformResult:
    """Replay a loaded trace on the implementation (see the module's docstring for ``against``);
    ``protocol`` (a variant's) is the model side's, when the model is replayed."""
    expected = [(s.observation, s.acked) for s in trace.steps]
    return conform_actions(trace.config, trace.actions, label=trace.label, expected=expected, against=against,
                           ignore=ignore, seed=seed, validate=validate, protocol=protocol)
