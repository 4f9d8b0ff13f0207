"""Action text (isrcheck.specs.actions, read into the model's Action by isrcheck.model.action_text)
is parsed without evaluation and round-trips."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isrcheck.model.action_text import format_action, from_json, parse, to_json
from isrcheck.model.actions import APPLY, Action
from isrcheck.specs.actions import ActionSyntaxError, action_arity


@pytest.mark.parametrize("text, action", [
    ("Fetch(2, 0)", Action("Fetch", (2, 0))),
    ("Fetch(2,0)", Action("Fetch", (2, 0))),
    ("  Fetch ( 2 , 0 )  ", Action("Fetch", (2, 0))),
    ("RequestReassignment(0, [2,3])", Action("RequestReassignment", (0, (2, 3)))),
    ("RequestReassignment(0, [ 2, 3, ])", Action("RequestReassignment", (0, (2, 3)))),
    ("LossyCrash(1, [0])", Action("LossyCrash", (1, (0,)))),
    ("LossyCrash(1, [])", Action("LossyCrash", (1, ()))),
    ("ControllerFailover()", Action("ControllerFailover", ())),
    ("DeliverRequest(3)", Action("DeliverRequest", (3,))),
])
def test_parse_examples(text, action):
    got = parse(text)
    assert got == action
    assert isinstance(got.args, tuple)
    assert all(isinstance(a, (int, tuple)) for a in got.args)


def test_format_is_str():
    a = Action("RequestReassignment", (0, (2, 3)))
    assert format_action(a) == str(a) == "RequestReassignment(0, [2,3])"


@pytest.mark.parametrize("text, fragment", [
    ("Explode(1)", "unknown action 'Explode'"),
    ("fetch(2, 0)", "unknown action 'fetch' (did you mean 'Fetch'?)"),
    # the known names, sorted (a variant's actions join them once a variant is built in the process)
    ("Zzz(2, 0)", "(known: "),
    ("Fetch 2 0", "expected Name(arg, ...)"),
    ("Fetch(2, 0", "expected Name(arg, ...)"),
    ("Fetch", "expected Name(arg, ...)"),
    ("", "expected Name(arg, ...)"),
    ("Fetch(2,,0)", "cannot read the arguments"),
    ("Fetch(2 0)", "cannot read the arguments"),
    ("Fetch('a', 0)", "must be integers"),
    ("Fetch(\"a\", 0)", "must be integers"),
    ("Fetch(1.5, 0)", "must be integers"),
    ("Fetch(true, 0)", "must be integers"),
    ("Fetch({a = 1}, 0)", "must be integers"),
    ("LossyCrash(1, [[0]])", "lists inside lists"),
    ("Fetch(2)", "Fetch takes 2 arguments, got 1"),
    ("ControllerFailover(1)", "takes 0 arguments"),
    ("Fetch(1]\nb = [2)", "one line"),
    ("Fetch(1] # comment)", "one line"),
    ("Fetch(1], b = [2)", "cannot read the arguments"),
    ("Fetch(2, 0) Crash(1)", "cannot read the arguments"),
    ("__import__('os').system('true')", "expected Name(arg, ...)"),
])
def test_parse_errors(text, fragment):
    with pytest.raises(ActionSyntaxError) as e:
        parse(text)
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert fragment in msg, msg
    assert "\n" not in msg


def test_non_text_is_rejected():
    with pytest.raises(ActionSyntaxError):
        parse(3)  # type: ignore[arg-type]


def test_every_action_has_a_fixed_arity():
    for name in APPLY:
        assert 0 <= action_arity(name) <= 4, name


_ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_arg = st.one_of(_ints, st.lists(_ints, max_size=5).map(tuple))


@st.composite
def actions(draw) -> Action:
    name = draw(st.sampled_from(sorted(APPLY)))
    args = tuple(draw(_arg) for _ in range(action_arity(name)))
    return Action(name, args)


@given(actions())
def test_round_trip_text(a):
    assert parse(format_action(a)) == a


@given(actions())
def test_round_trip_json(a):
    assert from_json(to_json(a)) == a


@given(st.text(max_size=40))
def test_arbitrary_text_only_raises_action_syntax_error(text):
    try:
        a = parse(text)
    except ActionSyntaxError as e:
        assert "\n" not in str(e)
    else:
        assert a.name in APPLY and parse(str(a)) == a


@given(st.sampled_from(sorted(APPLY)), st.text(alphabet="0123456789[], -+_xo.e#\"'\n", max_size=20))
def test_argument_soup_never_escapes(name, inner):
    try:
        a = parse(f"{name}({inner})")
    except ActionSyntaxError:
        return
    assert a.name == name and parse(str(a)) == a


@pytest.mark.parametrize("obj", [
    {"name": "Fetch", "args": [2]},
    {"name": "Nope", "args": []},
    {"name": "Fetch", "args": "2, 0"},
    {"name": "Fetch"},
    ["Fetch", [2, 0]],
    {"name": "Fetch", "args": [2, True]},
])
def test_from_json_errors(obj):
    with pytest.raises(ActionSyntaxError):
        from_json(obj)
