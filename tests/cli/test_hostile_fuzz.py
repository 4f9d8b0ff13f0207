"""Issue 18: random and randomly nested input for every kind of file the tools read never shows a
traceback: the exit status is 0, 1 or 2, and a 2 comes with an ``error:`` line.

Hypothesis draws raw bytes, random JSON values, JSON and TOML nested to a random depth (0-5000: both
sides of the 64-level cap, and deep enough to break the recursive parsers without it), and feeds them to ``check --config``, ``run``, ``traces show``,
``validate``, ``cluster status`` (as cluster.json) and ``check --set``. The example counts are kept
modest and derandomised (the suite stays short and repeatable); each test counts the inputs it
really tried, asserts that count and prints it (``pytest -s`` shows the figures).
"""
from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

EXAMPLES = 60

#: no shrinking: a failing input thousands of brackets deep takes minutes to shrink, and the
#: unshrunk one already names the problem
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

_OPEN_JSON = {"[": "]", '{"k": ': "}"}
_OPEN_TOML = {"[": "]", "{ a = ": "}"}


#: about the cap (64), and past the recursion of the parsers (tomllib about 400, json about 1000)
_DEPTHS = st.sampled_from([0, 1, 63, 64, 65, 500, 1500, 5000]) | st.integers(0, 5000)


@st.composite
def _nested(draw: st.DrawFn, opens: dict[str, str], leaves: list[str]) -> str:
    depth = draw(_DEPTHS)
    chain = draw(st.lists(st.sampled_from(sorted(opens)), min_size=depth, max_size=depth))
    return "".join(chain) + draw(st.sampled_from(leaves)) + "".join(opens[o] for o in reversed(chain))


_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                        max_size=4),
                            max_leaves=20)
deep_json = _nested(_OPEN_JSON, ["1", '"x"', "null", "[]", "{}"])
deep_toml_value = _nested(_OPEN_TOML, ["1", '"x"', "[]", "{}"])

JSON_TEXT = st.one_of(
    st.binary(max_size=1024).map(lambda b: b.decode("latin-1")),
    _json_values.map(json.dumps),
    deep_json,
    deep_json.map(lambda v: '{"format": "isrcheck-trace", "version": 1, "config": ' + v + "}"),
    deep_json.map(lambda v: '{"format": "isrcheck-selflog", "version": 1, "config": ' + v + "}\n"),
    st.lists(deep_json, min_size=1, max_size=3).map("\n".join),
)
TOML_TEXT = st.one_of(
    st.binary(max_size=1024).map(lambda b: b.decode("latin-1")),
    deep_toml_value.map(lambda v: f"brokers = {v}\n"),
    st.integers(1, 2000).map(lambda n: ".".join(["a"] * n) + " = 1\n"),
    deep_toml_value.map(lambda v: f'model = "tiny"\nsteps = ["RequestReassignment(0, {v})"]\n'),
    st.text(max_size=200),
)


def _check_outcome(result) -> None:
    """What every input must give: 0, 1 or 2, no traceback, and an ``error:`` line with a 2."""
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    if result.exit_code == 2:
        assert any(line.startswith("error: ") for line in result.stderr.splitlines()), result.stderr


def _fuzz_file(cli, name: str, data: str | bytes, command: Callable[[str], list[str]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        _check_outcome(cli(*command(str(p))))


KINDS: dict[str, tuple[str, st.SearchStrategy[str], Callable[[str], list[str]]]] = {
    "config": ("config.toml", TOML_TEXT, lambda p: ["check", "--config", p, "--max-states", "50"]),
    "scenario": ("scenario.toml", TOML_TEXT, lambda p: ["run", p]),
    "trace-jsonl": ("t.jsonl", JSON_TEXT, lambda p: ["traces", "show", p]),
    "trace-itf": ("t.itf.json", JSON_TEXT, lambda p: ["traces", "show", p]),
    "event-log": ("run.events.jsonl", JSON_TEXT, lambda p: ["validate", p]),
    "cluster-json": ("cluster.json", JSON_TEXT, lambda p: ["cluster", "status", "--dir", str(Path(p).parent)]),
}
TRIED: dict[str, int] = {}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_random_input_never_shows_a_traceback(cli, fake_manifest, kind):
    name, strategy, command = KINDS[kind]
    TRIED[kind] = 0

    @FUZZ
    @given(text=strategy)
    def one(text: str) -> None:
        TRIED[kind] += 1
        _fuzz_file(cli, name, text, command)

    one()
    print(f"\n{kind}: {TRIED[kind]} random inputs tried")
    assert TRIED[kind] >= EXAMPLES // 2  # hypothesis really generated them (not one trivial case)


def test_random_set_values_never_show_a_traceback(cli, fake_manifest):
    tried = 0

    @FUZZ
    @given(value=st.one_of(deep_toml_value, st.text(max_size=60)))
    def one(value: str) -> None:
        nonlocal tried
        tried += 1
        _check_outcome(cli("check", "tiny", "--max-states", "50", "--set", f"brokers={value}"))

    one()
    print(f"\n--set: {tried} random inputs tried")
    assert tried >= EXAMPLES // 2
