"""The two sides behind one small interface: the model and the implementation's step-mode simulator.

Both take actions by name (specs/actions.toml), report the observation of specs/observation.toml
and the writes acknowledged to producers. This is the only module that drives ``isrcheck.impl``.

- :class:`ModelSide` runs :class:`~isrcheck.model.kafka.KafkaModel` (no symmetry reduction: the
  states are the concrete ones the implementation is in).
- :class:`ImplSide` runs :class:`isrcheck.impl.rigs.simulator.Simulator` with the same configuration.
  An action the implementation refuses (its guard does not hold, or it cannot drive it) raises
  :class:`ImplRefused`; any other exception out of the implementation is :class:`ImplFailed`.

:func:`impl_support` asks the implementation whether it accepts a configuration (today it refuses
a ``generation`` it does not implement with a one-line ``ConfigError``; today it implements all of
them); conformance uses it to skip, never to guess, so a generation is covered as soon as ``impl/``
accepts it.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from isrcheck.impl.core import config as impl_config
from isrcheck.impl.rigs.simulator import ActionError, NotEnabled, Simulator
from isrcheck.invariants import build_model
from isrcheck.model.actions import Action
from isrcheck.engine.explore import replay
from isrcheck.model.config import Config
from isrcheck.model.kafka import KafkaModel
from isrcheck.model.observe import acked_of, observe
from isrcheck.model.protocol import Protocol
from isrcheck.model.state import State
from isrcheck.specs.protocol import GENERATION_KEY, GENERATIONS, Generation

__all__ = ["ImplFailed", "ImplRefused", "ImplSide", "ModelRefused", "ModelSide",
           "impl_support", "supported_generations"]


class ModelRefused(RuntimeError):
    """The action is not enabled in the model's current state."""


class ImplRefused(RuntimeError):
    """The implementation refused the action (not enabled there, or not drivable)."""


class ImplFailed(RuntimeError):
    """The implementation raised something other than a refusal while taking the action."""


def impl_support(config: Config | Mapping[str, Any]) -> str | None:
    """None when the implementation accepts ``config``; otherwise its one-line reason."""
    raw = config.to_dict() if isinstance(config, Config) else dict(config)
    try:
        impl_config.from_mapping(raw)
    except impl_config.ConfigError as e:
        return str(e)
    return None


@lru_cache(maxsize=None)
def _generation_ok(gen: Generation) -> str | None:
    return impl_support({GENERATION_KEY: gen.value})


def supported_generations() -> list[Generation]:
    """The protocol generations (specs/protocol.toml) that the implementation accepts right now."""
    return [g for g in GENERATIONS if _generation_ok(g) is None]


class ModelSide:
    def __init__(self, config: Config, protocol: Protocol | None = None) -> None:
        self.config = config
        self.model: KafkaModel = build_model(config, protocol=protocol, symmetry=False)
        self.state: State = self.model.init_states()[0]

    def reset(self) -> None:
        self.state = self.model.init_states()[0]

    def enabled(self) -> list[Action]:
        return self.model.actions(self.state)

    def step(self, name: str, args: tuple) -> None:
        a = Action(name, tuple(args))
        r = replay(self.model, [a], self.state)
        if r.stopped_at is not None:
            raise ModelRefused(f"{a} is not enabled in the model")
        if r.fault is not None:
            raise ModelRefused(f"{a}: {r.fault.property_name}: {r.fault}") from None
        self.state = r.steps[-1].state

    def observation(self) -> dict[str, Any]:
        return observe(self.state)

    def acked(self) -> list[list[int]]:
        return acked_of(self.state)


class ImplSide:
    def __init__(self, config: Config, seed: int = 0) -> None:
        reason = impl_support(config)
        if reason is not None:
            raise ImplRefused(f"the implementation does not accept this configuration: {reason}")
        self.config = config
        self.seed = seed
        self.sim = Simulator(config.to_dict(), seed=seed)

    def reset(self) -> None:
        self.sim = Simulator(self.config.to_dict(), seed=self.seed)

    def step(self, name: str, args: tuple) -> None:
        try:
            self.sim.apply(name, args)
        except (NotEnabled, ActionError) as e:
            raise ImplRefused(" ".join(str(e).split())) from None
        except Exception as e:  # noqa: BLE001 - a bug (or a planted mutation) in the implementation
            raise ImplFailed(f"{type(e).__name__}: {' '.join(str(e).split())}") from e

    def observation(self) -> dict[str, Any]:
        return self.sim.observe()

    def acked(self) -> list[list[int]]:
        return [sorted(self.sim.acked[p]) for p in range(self.config.partitions)]
