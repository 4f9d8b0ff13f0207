"""Properties over observations agree with the model's properties, and the gallery's weaknesses
reproduce on the implementation."""
from __future__ import annotations

import pytest

from isrcheck.inputs import manifest
from isrcheck.conformance.cover import build_graph
from isrcheck.conformance.sides import impl_support
from isrcheck.model.observe import acked_of
from isrcheck.conformance.weaknesses import replay_model
from isrcheck.invariants.properties import ALL_PROPERTIES, OBSERVATION_PROPERTIES
from isrcheck.invariants.properties import broken_on_observation as broken
from isrcheck.model.observe import observe
from isrcheck.specs.weaknesses import load_weaknesses

_MODEL = {p.name: p for p in ALL_PROPERTIES}


def test_every_observation_property_names_a_model_property():
    assert set(OBSERVATION_PROPERTIES) <= set(_MODEL)
    assert all(_MODEL[n].kind == "always" for n in OBSERVATION_PROPERTIES)


@pytest.mark.parametrize("name", ["unclean-election", "lossy-undetected-restart", "reassignment", "clean-election"])
def test_observation_properties_agree_with_the_model_on_every_state(name):
    sg = build_graph(manifest.get(name).config)
    seen_broken: set[str] = set()
    for s in sg.states.values():
        obs, acked = observe(s), acked_of(s)
        for n, f in OBSERVATION_PROPERTIES.items():
            assert f(obs, acked) == _MODEL[n].check(s), (name, n)
        seen_broken |= set(broken(obs, acked))
    if manifest.get(name).expect == "safety_failure":
        assert manifest.get(name).property in seen_broken


GALLERY = [(w.title, n) for w in load_weaknesses() for n in w.generations]


@pytest.mark.parametrize("title,name", GALLERY, ids=[n for _, n in GALLERY])
def test_gallery_weakness_replayed_on_the_implementation(title, name, ce_trace):
    entry = manifest.get(name)
    r = replay_model(entry, title, ce_trace(name) if entry.expect == "safety_failure" else None)
    if entry.expect != "safety_failure":
        assert r.status == "fixed"
        return
    if impl_support(entry.config) is not None:
        assert r.status == "skipped" and "does not accept" in r.message
        pytest.skip(r.message)
    if entry.property not in OBSERVATION_PROPERTIES:
        # a broken state machine (OnlyValidTransitions) leaves no state to observe: the implementation's
        # own state machine refuses the same move instead (test_conform_deposed_controller.py)
        assert r.status == "no-observation-form", r.message
        return
    assert r.status == "reproduced", r.message
    assert r.property == entry.property and r.length == entry.length
    assert r.impl_step == r.model_step == entry.length  # the real code breaks it at the very last step
