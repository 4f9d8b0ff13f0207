"""Lockstep random testing with hypothesis: model and implementation side by side.

:func:`lockstep_machine` builds a ``RuleBasedStateMachine`` for one configuration. Its single rule
draws one of the actions the *model* enables (so every run is a model behaviour) and performs it on
both sides; its invariant is that the two observations, and the acknowledged writes, are equal. A
failure is shrunk by hypothesis to a short action list.

:func:`run_lockstep` runs the machine and, when it fails, saves the shrunk failing run as a
regression trace (JSON lines, ``kind = "regression"``, observations from the model) in ``save_dir``
before re-raising; ``tests/conformance/test_regressions.py`` replays every saved trace.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from isrcheck.invariants import build_model
from isrcheck.model.actions import Action
from isrcheck.engine.checker import replay_actions
from isrcheck.model.config import Config
from isrcheck.specs.actions import action_text

from .observations import diff, flatten
from .sides import ImplFailed, ImplRefused, ImplSide, ModelSide
from .traces import trace_from_steps, write_trace

__all__ = ["LockstepFailure", "lockstep_machine", "run_lockstep", "save_regression"]


class LockstepFailure(AssertionError):
    pass


def lockstep_machine(config: Config, ignore: tuple[str, ...] = ()) -> type[RuleBasedStateMachine]:
    """A state machine class driving the model and the implementation with ``config``."""

    class Lockstep(RuleBasedStateMachine):
        #: the actions of the run in progress (the last run is the shrunk failure after a failure)
        last_run: list[tuple[str, tuple]] = []

        def __init__(self) -> None:
            super().__init__()
            self.model = ModelSide(config)
            self.impl = ImplSide(config)
            self.taken: list[tuple[str, tuple]] = []
            type(self).last_run = self.taken

        @rule(data=st.data())
        def step(self, data: Any) -> None:
            enabled = [a for a in self.model.enabled()]
            if not enabled:
                return
            a: Action = data.draw(st.sampled_from(enabled), label="action")
            act = (a.name, tuple(a.args))
            self.taken.append(act)
            self.model.step(*act)
            try:
                self.impl.step(*act)
            except (ImplRefused, ImplFailed) as e:
                raise LockstepFailure(f"step {len(self.taken)} {action_text(*act)}: {e}") from None

        @invariant()
        def same_observation(self) -> None:
            want = (self.model.observation(), self.model.acked())
            got = (self.impl.observation(), self.impl.acked())
            if want != got:
                d = diff(flatten(*want), flatten(*got), ignore)
                if d:
                    where = f"step {len(self.taken)} {action_text(*self.taken[-1])}" if self.taken else "initial state"
                    fields = "; ".join(f"{x.path}: model {x.expected!r}, implementation {x.actual!r}" for x in d[:4])
                    raise LockstepFailure(f"{where}: {len(d)} field(s) differ: {fields}")

    Lockstep.__name__ = "Lockstep"
    return Lockstep


def save_regression(config: Config, actions: list[tuple[str, tuple]], save_dir: str | Path, name: str,
                    description: str) -> Path:
    """Write the model's run of ``actions`` as a regression trace; returns the file."""
    model = build_model(config, symmetry=False, properties=[])
    steps = replay_actions(model, [Action(n, a) for n, a in actions])
    trace = trace_from_steps(steps, config, kind="regression", model=name, description=description)
    digest = hashlib.sha1(repr(actions).encode()).hexdigest()[:10]
    path = Path(save_dir) / f"{name}-{digest}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_trace(trace, path, "jsonl")
    return path


def run_lockstep(config: Config, *, name: str = "lockstep", max_examples: int = 50, steps: int = 40,
                 save_dir: str | Path | None = None, seed: int | None = 0, ignore: tuple[str, ...] = ()) -> None:
    """Run the lockstep machine; on failure save the shrunk run in ``save_dir`` (if given) and re-raise."""
    machine = lockstep_machine(config, ignore)
    opts = settings(max_examples=max_examples, stateful_step_count=steps, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck), derandomize=seed is not None, print_blob=False)
    try:
        run_state_machine_as_test(machine, settings=opts)
    except Exception as e:
        run = list(machine.last_run)
        if save_dir is not None and run:
            path = save_regression(config, run, save_dir, name,
                                   f"found by lockstep testing and shrunk by hypothesis: {' '.join(str(e).split())[:300]}")
            e.add_note(f"the shrunk failing run is saved as {path}")
        raise
