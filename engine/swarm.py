"""Swarm walks: the random walks ``simulate`` takes by default, biased so that rare orderings happen.

A uniform walk (:func:`.explore.walk`) takes, at each step, an enabled action chosen uniformly among
those that change the state. The weaknesses of the manifest need a few actions at precise moments
and others held back for a long time (a crash just after a follower fetched, before the next fetch;
a deposed controller idle while its successor performs seven steps, then resuming before it
resigns), which uniform choices almost never produce: measured, 1,000 uniform walks find 5 of the
12 weaknesses of the default gate. Two ideas from random testing change that:

- **Swarm weights.** Each walk draws its own weights: a spread ``s`` uniform in [0, :data:`SPREAD`],
  then for each action name, and for each (action, how often this walk has taken it), a factor
  ``exp(uniform(-s, s))``; an action's weight is the product. One walk favours produces and holds
  back fetches, another runs one controller and starves the other, and because the second
  occurrence of an action has a weight of its own, "fetch once, then crash before the next fetch"
  is as likely as any other shape. The enabled actions are put in weighted random order
  (Efraimidis-Spirakis: key ``-log(u) / w``), so a light action still comes when nothing else can.
- **Novelty.** Among the actions that change the state, in that order, the walk takes the first
  whose next state no walk of the run has reached yet (``seen``, the simulator's set of
  fingerprints), else the first that changes the state. Walks spread over the state space instead
  of retracing the likeliest paths.

The walk is a function of ``rng`` and ``seen``: the same seed gives the same run. Like
:func:`.explore.walk` it checks every step it takes and ends at quiescence, after ``max_depth``
steps, or at the first step that breaks a property (yielded with ``kind`` set). Actions must be
hashable (they key the weights).
"""
from __future__ import annotations

import math
import random
from collections.abc import Iterator, Set
from typing import Any

from .core import Checks, Model, action_name
from .explore import PathStep, walk

__all__ = ["SPREAD", "Weights", "swarm_walk"]

#: the largest spread of a walk's log-weights: weights range over about e^-5 .. e^5 per factor
SPREAD = 5.0


class Weights:
    """One walk's random action weights, drawn as actions are first met (so deterministic in ``rng``)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.spread = rng.uniform(0.0, SPREAD)
        self.by_name: dict[str, float] = {}
        self.by_occurrence: dict[tuple[Any, int], float] = {}

    def _factor(self) -> float:
        return math.exp(self.rng.uniform(-self.spread, self.spread))

    def weight(self, action: Any, taken: int) -> float:
        """The weight of ``action`` when this walk has taken it ``taken`` times already."""
        key = (action, taken)
        w = self.by_occurrence.get(key)
        if w is None:
            name = action_name(action)
            per_name = self.by_name.get(name)
            if per_name is None:
                per_name = self.by_name[name] = self._factor()
            w = self.by_occurrence[key] = per_name * self._factor()
        return w


def swarm_walk(model: Model[Any, Any], rng: random.Random, max_depth: int, checks: Checks,
               seen: Set[int]) -> Iterator[PathStep]:
    """One swarm walk (see the module's docstring); ``seen`` is read, never changed. It is
    :func:`~.explore.walk` with the actions ordered by this walk's weights (an exponential race:
    each action's time is ``-log(u) / weight``) and a preference for a state not in ``seen``."""
    weights = Weights(random.Random(rng.random()))
    taken: dict[Any, int] = {}
    fingerprint = model.fingerprint

    def order(state: Any, enabled: list[Any]) -> list[Any]:
        return sorted(enabled, key=lambda a: -math.log(rng.random() or 5e-324) / weights.weight(a, taken.get(a, 0)))

    for step in walk(model, rng, max_depth, checks, order=order, fresh=lambda t: fingerprint(t) not in seen):
        yield step  # the consumer asks for the next step only now: the count below comes first
        if step.action is not None:
            taken[step.action] = taken.get(step.action, 0) + 1
