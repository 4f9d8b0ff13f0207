"""Issue 16: one variant loader for every command that runs the model, a raising variant as one
line with exit status 2, and verdicts of `prove` that say what they mean.

Each command is given a variant two ways: a file path (``path/to/file.py:ATTR``) and a module name
found in the current directory. A variant whose ``select`` raises proves the variant really runs:
a command that ignored ``--variant`` would not exit 2 with the variant's error.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from isrcheck.invariants.variants import VariantFailure, failure_from_text, load_variant

from shared import SLOPPY_SELECTOR_VARIANT

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "variants" / "eager_election.py"

BOOM = textwrap.dedent('''
    from isrcheck.model.protocol import Protocol
    from isrcheck.model.selectors import Selector

    class Boom(Protocol):
        name = "boom"

        def select(self, selector, inp):
            if selector is Selector.OFFLINE_PARTITION:
                raise ZeroDivisionError("boom in select")
            return super().select(selector, inp)

    def make_boom(config):
        return Boom(config)
''')


@pytest.fixture
def boom_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding boom_variants.py, made the current directory (for MODULE:ATTR)."""
    d = tmp_path / "variants_here"
    d.mkdir()
    (d / "boom_variants.py").write_text(BOOM)
    monkeypatch.chdir(d)
    monkeypatch.syspath_prepend(str(d))  # what load_variant does for "" as well; undone after the test
    return d


def _scenario(tmp_path: Path) -> str:
    p = tmp_path / "crash.toml"
    # the leader of partition 0 crashes; the controller's broker change elects with OFFLINE_PARTITION
    p.write_text('steps = ["Produce(1, 0)", "Crash(1)", "ProcessBrokerChange(1)"]\n'
                 "[config]\nbrokers = 3\nmax_records = 1\n[config.faults]\ncrashes = 1\n")
    return str(p)


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    """Every command that runs the model, without its --variant (tiny-crash: fake_manifest)."""
    return {
        "check": ["check", "tiny-crash"],
        "check-workers": ["check", "tiny-crash", "--workers", "2"],
        "simulate": ["simulate", "tiny-crash", "--walks", "200", "--max-depth", "12"],
        "run": ["run", _scenario(tmp_path)],
        "diff": ["diff", "high-watermark", "{variant}", "--model", "tiny-crash"],
        "traces-export": ["traces", "export", "tiny-crash", "--out", str(tmp_path / "t.jsonl")],
        "conform": ["conform", "--model", "tiny-crash", "--cover", "depth", "--depth", "3"],
        "prove-selectors": ["prove", "selectors", "--max-brokers", "3", "--samples", "20",
                            "--exhaustive-brokers", "2"],
    }


def _with_variant(args: list[str], variant: str) -> list[str]:
    if "{variant}" in args:
        return [variant if a == "{variant}" else a for a in args]
    return [*args, "--variant", variant]


def _assert_variant_failure(result, variant: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    lines = result.stderr.strip("\n").splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: variant ") and variant in line, line
    assert "Protocol.select" in line and "ZeroDivisionError: boom in select" in line, line
    return line


COMMANDS = ["check", "check-workers", "simulate", "run", "diff", "traces-export", "conform", "prove-selectors"]


RUN_MODEL = [c for c in COMMANDS if c != "prove-selectors"]


@pytest.mark.parametrize("command", RUN_MODEL)
def test_a_raising_variant_given_by_file_path_is_one_line_and_exit_2(cli, fake_manifest, tmp_path, boom_dir,
                                                                    command):
    variant = f"{boom_dir / 'boom_variants.py'}:Boom"
    _assert_variant_failure(cli(*_with_variant(_commands(tmp_path)[command], variant)), variant)


@pytest.mark.parametrize("command", RUN_MODEL)
def test_a_raising_variant_given_by_module_name_from_the_current_directory(cli, fake_manifest, tmp_path, boom_dir,
                                                                          command):
    variant = "boom_variants:make_boom"  # a function config -> Protocol, guarded as well
    _assert_variant_failure(cli(*_with_variant(_commands(tmp_path)[command], variant)), variant)


@pytest.mark.parametrize("variant", ["boom_variants:Boom", "boom_variants.py:Boom"])
def test_prove_selectors_refutes_a_select_that_raises(cli, boom_dir, variant):
    """prove selectors does not run the model: a select() that raises breaks the contract's
    'well-formed answer' clause (specs/08-symbolic.md), a refutation naming the exception."""
    r = cli(*_with_variant(_commands(boom_dir)["prove-selectors"], variant))
    assert r.exit_code == 1, (r.stdout, r.stderr)
    assert "boom in select" in r.stdout and "well-formed answer" in r.stdout


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "diff"])
def test_every_command_accepts_the_example_variant_file(cli, fake_manifest, tmp_path, command):
    variant = f"{EXAMPLE.relative_to(ROOT)}:EagerElection"
    import os

    old = os.getcwd()
    os.chdir(ROOT)  # examples/variants/<file>.py, as the README writes it
    try:
        r = cli(*_with_variant(_commands(tmp_path)[command], variant))
    finally:
        os.chdir(old)
    assert r.exit_code in (0, 1), (r.exit_code, r.stdout, r.stderr)
    assert "error" not in r.stderr


def test_check_with_the_example_variant_finds_what_the_standard_protocol_does_not(cli, fake_manifest):
    shrink = ["--set", "replication_factor=2", "--set", "max_records=2", "--set", "faults.isr_shrinks=1"]
    code, doc = cli.json("check", "tiny-crash", *shrink, "--property", "NoCommittedWriteLost", "--json")
    assert code == 0, doc
    code, doc = cli.json("check", "tiny-crash", *shrink, "--property", "NoCommittedWriteLost",
                         "--variant", f"{EXAMPLE}:EagerElection", "--json")
    assert code == 1 and doc["violations"][0]["property"] == "NoCommittedWriteLost"


def test_traces_export_writes_the_variants_counterexample(cli, fake_manifest, tmp_path):
    out = tmp_path / "ce.jsonl"
    r = cli("traces", "export", "tiny-crash", "--out", str(out), "--property", "LeaderEpochBelowThree",
            "--set", "faults.crashes=2", "--variant", f"{EXAMPLE}:EpochBudget")
    # the property exists only in the variant: an export that ignored --variant could not name it
    assert r.exit_code in (0, 2), r.stderr
    if r.exit_code == 0:
        head = json.loads(out.read_text().splitlines()[0])
        assert "LeaderEpochBelowThree" in json.dumps(head)


def test_debug_prints_the_path_to_the_state_where_the_variant_raised(cli, fake_manifest, boom_dir):
    variant = "boom_variants:Boom"
    for args in (["--debug", "check", "tiny-crash", "--variant", variant],
                 ["check", "tiny-crash", "--variant", variant, "--debug"]):
        r = cli(*args)
        assert r.exit_code == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert lines[0].startswith("error: variant boom_variants:Boom raised in Protocol.select")
        assert any(line.startswith("debug: a shortest path") for line in lines), r.stderr
        assert any("Crash(" in line for line in lines[1:]), r.stderr  # the leader's crash comes first
        assert lines[-1].startswith("debug: there it raised while taking ProcessBrokerChange(")


def test_the_guard_lets_the_models_own_exceptions_through(tmp_path):
    """NoEligibleLeader is part of select()'s contract: a variant raising it is not a failure."""
    f = tmp_path / "noleader.py"
    f.write_text(textwrap.dedent('''
        from isrcheck.model.protocol import Protocol
        from isrcheck.model.selectors import NoEligibleLeader

        class NoLeader(Protocol):
            def select(self, selector, inp):
                raise NoEligibleLeader(selector, "never")
    '''))
    from isrcheck.model.config import from_mapping
    from isrcheck.model.selectors import NoEligibleLeader, Selector

    proto = load_variant(f"{f}:NoLeader")(from_mapping({"brokers": 2}))
    with pytest.raises(NoEligibleLeader):
        proto.select(Selector.OFFLINE_PARTITION, None)


def test_a_variant_failure_pickles_and_is_found_in_a_workers_report():
    import pickle

    e = VariantFailure("v.py:X", "select", "KeyError: 3")
    back = pickle.loads(pickle.dumps(e))
    assert str(back) == str(e) == "variant v.py:X raised in Protocol.select: KeyError: 3"
    remote = f"Traceback (most recent call last):\n  ...\nisrcheck.invariants.variants.VariantFailure: {e}\n\tat org.apache"
    assert failure_from_text(remote) == str(e)
    assert failure_from_text("java.lang.OutOfMemoryError") is None


# ---------------------------------------------------------------------------- prove
def test_prove_selectors_takes_a_variant_file_path_and_keeps_protocol_as_a_hidden_alias(cli, tmp_path):
    f = tmp_path / "sloppy.py"
    f.write_text(SLOPPY_SELECTOR_VARIANT)
    for opt in ("--variant", "--protocol"):
        r = cli("prove", "selectors", "--max-brokers", "3", "--samples", "0", opt, f"{f}:Sloppy")
        assert r.exit_code == 1, (opt, r.stdout, r.stderr)
        assert "REFUTED" in r.stdout and "sloppy" in r.stdout
    help_text = cli("prove", "selectors", "--help").stdout
    assert "--variant" in help_text and "--protocol" not in help_text


@pytest.mark.parametrize("command", [["prove", "transitions"], ["prove", "inductive", "tiny"], ["bmc", "tiny"]])
def test_encodings_that_cannot_read_a_variant_refuse_it_in_one_line(cli, fake_manifest, assert_input_error, command):
    line = assert_input_error(cli(*command, "--variant", f"{EXAMPLE}:EagerElection"), "does not take --variant")
    assert command[-1] not in ("tiny",) or command[0] in line or "prove inductive" in line


def test_prove_transitions_exits_0_with_only_the_expected_refutations(cli):
    from isrcheck.invariants.symbolic.expected import expected_refutations

    expected = [e.property for e in expected_refutations("transitions")]
    assert len(expected) == 5
    r = cli("prove", "transitions", "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["exit_code"] == 0 and doc["verdict"] == "PROVED", doc["summary"]
    refuted = [o for o in doc["obligations"] if o["verdict"] == "REFUTED"]
    assert refuted and all(o["expected"] for o in refuted)
    assert sorted(o["property"].split(":")[0] for o in refuted) == sorted(expected)
    assert doc["summary"].startswith("PROVED except the 5 expected refutations: ")
    text = cli("prove", "transitions")
    assert text.exit_code == 0
    assert "PROVED except the 5 expected refutations: invariant OutsideAssignmentMeansNonExistent" in \
        " ".join(text.stdout.split())


def test_an_unexpected_refutation_still_fails_prove_transitions(cli, monkeypatch):
    from isrcheck.invariants.symbolic import expected as X

    monkeypatch.setattr(X, "expected_refutations", lambda command="transitions": ())
    r = cli("prove", "transitions", "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["verdict"] == "REFUTED"


def test_the_expected_refutations_are_the_ones_the_spec_documents():
    from isrcheck.invariants.symbolic.expected import expected_refutations

    spec = (ROOT / "specs" / "08-symbolic.md").read_text()
    for e in expected_refutations("transitions"):
        assert f"*{e.property.removeprefix('invariant ')}*" in spec, e.property
    assert "specs/expected_refutations.toml" in spec


def test_prove_inductive_says_not_inductive_for_a_safe_property_it_cannot_prove(cli, tmp_path):
    f = tmp_path / "two.toml"
    f.write_text("brokers = 2\nreplication_factor = 2\nmax_records = 1\n[faults]\ncrashes = 1\n")
    # the explicit checker: every property holds on these bounds
    assert cli("check", "--config", str(f)).exit_code == 0
    r = cli("prove", "inductive", "--config", str(f), "--json")
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "NOT INDUCTIVE" and r.exit_code == 3, doc["summary"]
    verdicts = {o["property"]: o["verdict"] for o in doc["obligations"]}
    assert verdicts["NoCommittedWriteLost"] == "NOT INDUCTIVE"
    assert "REFUTED" not in verdicts.values()
    assert doc["reachability"]["complete"] and doc["reachability"]["reachable"] == []
    ob = next(o for o in doc["obligations"] if o["property"] == "NoCommittedWriteLost")
    assert ob["counterexample"]["before"] and "not reachable" in ob["detail"]


def test_a_cti_whose_pre_state_is_reachable_stays_refuted():
    from isrcheck.commands.prove import _classify_ctis
    from isrcheck.invariants import build_model
    from isrcheck.invariants.symbolic.cti import Cti
    from isrcheck.invariants.symbolic.houdini import InductionObligation
    from isrcheck.invariants.symbolic.verdicts import Verdict
    from isrcheck.model.config import from_mapping

    cfg = from_mapping({"brokers": 2, "replication_factor": 2, "max_records": 1})
    model = build_model(cfg, properties=[])
    s0 = model.init_states()[0]
    s1 = model.next_state(s0, next(iter(model.actions(s0))))
    reachable = InductionObligation("inductive", "P", "g", Verdict.REFUTED, 0.0, cti=Cti(s1, "a", "k", s1, []))
    unreachable = InductionObligation("inductive", "Q", "g", Verdict.REFUTED, 0.0,
                                      cti=Cti(s0._replace(ghost=()), "a", "k", s0, []))
    info = _classify_ctis(cfg, None, [reachable, unreachable], 100_000, lambda _: None)
    assert reachable.verdict == Verdict.REFUTED and "reachable" in reachable.detail
    assert unreachable.verdict == Verdict.NOT_INDUCTIVE
    assert info["complete"] and info["reachable"] == ["P"]


# ---------------------------------------------------------------------------- Spark
def _spark_ok() -> bool:
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        return False
    from isrcheck.pipeline.session import MIN_JAVA, java_version

    v = java_version()
    return v is not None and v[0] >= MIN_JAVA


@pytest.mark.spark
@pytest.mark.skipif(not _spark_ok(), reason="needs pyspark and Java 17+")
def test_spark_swarm_ships_a_file_variant_and_a_cwd_module_to_the_workers(cli, fake_manifest, tmp_path, boom_dir,
                                                                          monkeypatch):
    # the error is the one line read here: no heartbeat line of a long job before it (on a pipe
    # a spark command prints one every ISRCHECK_PROGRESS_SECONDS; tests/pipeline/test_spark_progress.py)
    monkeypatch.setenv("ISRCHECK_PROGRESS_SECONDS", "3600")
    base = ["spark", "swarm", "tiny-crash", "--master", "local[2]", "--walks", "40", "--tasks", "2",
            "--max-depth", "8"]
    # a file path given relative to the current directory: the workers (another cwd) still find it
    r = cli(*base, "--variant", "boom_variants.py:Boom")
    assert r.exit_code == 2 and "boom in select" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = cli(*base, "--variant", "boom_variants:Boom")
    assert r.exit_code == 2 and "raised in Protocol.select" in r.stderr, r.stderr
    # and the example variant runs there: a result, not an error
    r = cli(*base, "--variant", f"{EXAMPLE}:EagerElection", "--json")
    assert r.exit_code in (0, 1), r.stderr
    assert json.loads(r.stdout)["walks"] == 40
