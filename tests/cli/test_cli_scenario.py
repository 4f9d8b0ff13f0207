"""isrcheck.inputs.scenario: reading and replaying scenario files."""
from __future__ import annotations

import pytest

from isrcheck.invariants import build_model
from isrcheck.model.actions import Action
from isrcheck.model.config import from_mapping
from isrcheck.inputs.scenario import ScenarioError, broken_properties, load_scenario, replay, run_scenario


def _file(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_run_scenario(tmp_path):
    p = _file(tmp_path, 'description = "d"\nsteps = ["Produce(1, 0)", "Fetch(2, 0)"]\n[config]\nbrokers = 3\n')
    cfg, steps = run_scenario(p)
    assert cfg.brokers == 3
    assert [s.action for s in steps] == [None, Action("Produce", (1, 0)), Action("Fetch", (2, 0))]
    assert steps[-1].state.brokers[1].replicas[0].log == steps[-1].state.brokers[0].replicas[0].log
    assert load_scenario(p).description == "d"


def test_empty_scenario_is_the_initial_state(tmp_path):
    _, steps = run_scenario(_file(tmp_path, "steps = []\n[config]\nbrokers = 3\n"))
    assert len(steps) == 1 and steps[0].action is None


def test_not_enabled_names_the_step_and_lists_enabled(tmp_path):
    p = _file(tmp_path, 'steps = ["Crash(1)"]\n[config]\nbrokers = 3\n')  # no crash budget
    with pytest.raises(ScenarioError) as e:
        run_scenario(p)
    msg = str(e.value)
    assert "step 1: Crash(1) is not enabled; enabled: " in msg and "Produce(1, 0)" in msg
    assert "\n" not in msg


def test_steps_are_never_evaluated(tmp_path):
    p = _file(tmp_path, 'steps = ["__import__(\'os\').system(\'false\')"]\n[config]\nbrokers = 3\n')
    with pytest.raises(ScenarioError, match="step 1"):
        run_scenario(p)


@pytest.mark.parametrize("text, fragment", [
    ("steps = []\n", "exactly one"),
    ('steps = "Produce(1, 0)"\n[config]\nbrokers = 3\n', "steps must be a list"),
    ("steps = [3]\n[config]\nbrokers = 3\n", "step 1: must be text"),
    ("[config]\nbrokers = 3\n", "steps must be a list"),
    ('model = 3\nsteps = []\n', "model must be a model name"),
    ('steps = []\nconfig = 3\n', "config must be a table"),
    ("steps = [\n", "not valid TOML"),
])
def test_bad_scenarios(tmp_path, text, fragment):
    with pytest.raises(ScenarioError) as e:
        run_scenario(_file(tmp_path, text))
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_broken_properties_finds_the_step():
    model = build_model(from_mapping({"brokers": 3, "max_records": 1, "faults": {"crashes": 1}}))
    from isrcheck.engine.checker import Checker

    v = Checker(model).run().violations[0]
    steps = replay(model, [s.action for s in v.trace[1:]])
    broken = broken_properties(model, steps)
    assert (v.length, v.property) in broken
    assert broken_properties(model, steps[:1]) == []
