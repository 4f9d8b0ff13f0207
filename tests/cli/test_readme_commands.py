"""The README's commands run as documented (issue 31): its example `check tiny-crash --variant
my_variants:Boom --debug` failed for a newcomer (no such model, no such module).

Every ``isrcheck ...`` line of a ``sh`` block of README.md is either run here (RUN, in one
directory, producers of files first, each exit status as the README says) or listed in SKIP with
the reason; a README line in neither fails the test, so a new example is classified when it is
written. Every command of the group is run at least once, except those whose README lines are
all in SKIP (each with its reason).
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from isrcheck.cli import main

ROOT = Path(__file__).resolve().parents[2]

#: README lines not run here, with why
SKIP: dict[str, str] = {
    "ISRCHECK_PURE=1 isrcheck check replication": "the same as `isrcheck check replication` (run), interpreted",
    "isrcheck gate [--all] [NAME...] [--json]": "a synopsis, not a command",
    "isrcheck gate --junit gate.xml": "the whole default gate (minutes); tests/cli/test_ci_output.py runs gate --junit",
    "isrcheck check leader-crash-kip-320 --liveness": "tens of seconds; tests/cli/test_cli_liveness.py covers --liveness",
    "isrcheck check clean-election --set faults.crashes=2 --set max_records=3": "a minute or more",
    "isrcheck simulate replication-stress --seed 7 --walks 2000": "tens of seconds; simulate runs below",
    "isrcheck check leader-crash-kip-320 --set faults.crashes=2 --checkpoint runs/lc2":
        "941,523 states, minutes; tests/cli/test_cli_checkpoint.py kills and resumes a checkpointed run",
    "isrcheck check leader-crash-kip-320 --set faults.crashes=2 --resume runs/lc2":
        "needs the killed run above; tests/cli/test_cli_checkpoint.py resumes after SIGKILL",
    "isrcheck check leader-crash-kip-320 --set faults.crashes=2 --disk runs/lc2-disk":
        "941,523 states, minutes; tests/cli/test_cli_disk.py runs check --disk on smaller models",
    "isrcheck check leader-crash-kip-320 --set faults.crashes=2 --disk runs/lc2-disk --checkpoint runs/lc2-ck":
        "941,523 states, minutes; tests/cli/test_cli_checkpoint.py kills and resumes a --disk run",
    "isrcheck check leader-crash-kip-320 --set faults.crashes=2 --resume runs/lc2-ck":
        "needs the killed run above; tests/cli/test_cli_checkpoint.py resumes a --disk run after SIGKILL",
    "isrcheck check --peer kip-320 --replicas 3": "9,985,570 states",
    "isrcheck check --peer kip-320 --replicas 3 --symmetry": "1,665,204 orbits",
    "isrcheck cluster up --brokers 3": "starts real broker processes (tests/impl)",
    "isrcheck cluster create-topic / produce / consume / reassign / kill / status": "a synopsis, not a command",
    "isrcheck cluster simulate --seeds 2000 --generation high-watermark": "2,000 seeds; the one-seed form runs below",
    "isrcheck cluster torture --seed 3 --generation kip-320 --duration 10": "real processes for 10 s (tests/impl)",
    "isrcheck cluster torture --seed 3 --store zookeeper --zookeeper 127.0.0.1:2181": "needs a ZooKeeper server",
    "isrcheck prove selectors --max-brokers 8": "z3, seconds; prove transitions runs below",
    "isrcheck prove inductive hw-truncation-one-crash": "z3, minutes (tests/invariants)",
    "isrcheck prove inductive leader-crash-kip-320": "z3, minutes",
    "isrcheck prove inductive controlled-shutdown": "z3, minutes",
    "isrcheck prove inductive controller-failover --generation kip-320 --set fenced_controller_writes=true": "z3, minutes",
    "isrcheck prove inductive --config examples/two-brokers-one-crash.toml --mutation "
    "no-truncation-on-becoming-follower": "z3, minutes",
    "isrcheck bmc hw-truncation-one-crash --depth 8": "z3, minutes (tests/invariants cover bmc)",
    "isrcheck bmc reassignment-with-data --depth 5": "z3, tens of seconds (tests/invariants cover bmc)",
    "isrcheck bmc unclean-election --depth 4 --property NoCommittedWriteLost":
        "z3, seconds; tests/cli/test_prove_inputs.py runs bmc --property on a smaller configuration",
    "isrcheck prove inductive hw-truncation-one-crash --property LeaderInIsr --strict":
        "z3, about a minute; tests/cli/test_prove_inputs.py runs prove inductive --property and --strict",
    "isrcheck traces show trace.jsonl [-v]": "a synopsis; `traces show trace.jsonl` runs below",
    "isrcheck conform --model reassignment --cover edges": "every edge on the implementation, tens of seconds",
    "isrcheck validate LOG": "a synopsis (LOG: an implementation's event log)",
    "isrcheck validate EVENTS_DIR": "a synopsis (a real cluster's logs)",
    **{line: "Spark jobs (tests/pipeline, `-m spark`)" for line in [
        "isrcheck spark explore replication-stress --out runs/stress",
        "isrcheck spark explore clean-election --max-states 1000",
        "isrcheck spark sweep --grid grid.toml",
        "isrcheck spark swarm replication-stress --walks 10000 --seed 1",
        "isrcheck spark traces clean-election --count 500 --out corpus",
        "isrcheck spark analyze corpus",
        'isrcheck spark query corpus "SELECT ..."',
        "isrcheck spark conform corpus --out results",
        "isrcheck spark conform corpus --mutant tests/conformance/conform_mutants.py:hw_ignores_isr",
        "isrcheck spark explore replication-stress --master spark://127.0.0.1:7077 --out runs/stress"]},
}

#: README lines whose documented exit status is not 0 or 1 (the README says why beside them)
EXIT: dict[str, int] = {
    "isrcheck check clean-election --variant examples/variants/boom.py:Boom --debug": 2,
}

#: commands the README shows only in SKIP lines, and why that is enough
UNRUN_COMMANDS = {"spark": "Spark", "bmc": "z3, slow",
                  "gallery": "named inline, not in a sh block; tests/test_gallery.py runs it",
                  "history": "regenerates specs/12-history.md from runs; tests/model/test_bug_history.py checks the page"}


def readme_lines() -> list[str]:
    """Every ``isrcheck`` command line of README.md's sh blocks (continuations joined, comments cut)."""
    out: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S):
        pending = ""
        for raw in block.splitlines():
            line = pending + raw
            if line.rstrip().endswith("\\"):
                pending = line.rstrip()[:-1].rstrip() + " "
                continue
            pending = ""
            command = re.split(r"\s+#", line, maxsplit=1)[0].strip()
            command = " ".join(command.split())
            if command.startswith(("isrcheck", "ISRCHECK_")):
                out.append(command)
    return out


def _produces(line: str) -> bool:
    """A line that writes a file other lines read (trace.jsonl, lasso.itf.json)."""
    return line.startswith("isrcheck traces export")


def test_every_readme_line_is_run_or_skipped_with_a_reason():
    lines = readme_lines()
    assert len(lines) > 40  # the parser found the blocks
    unknown = [line for line in lines if line not in SKIP and not line.startswith("isrcheck")]
    assert not unknown
    stale = [line for line in SKIP if line not in lines]
    assert not stale, f"SKIP names lines the README no longer has: {stale}"
    ran = {shlex.split(line)[1] for line in lines if line not in SKIP and len(shlex.split(line)) > 1}
    for name in main.list_commands(click.Context(main)):
        assert name in ran or name in UNRUN_COMMANDS, f"the README runs no `isrcheck {name}` here"


def test_the_readme_commands_run_as_documented(tmp_path, monkeypatch):
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    lines = [line for line in readme_lines() if line not in SKIP]
    lines.sort(key=lambda line: not _produces(line))  # trace.jsonl before `run trace.jsonl`
    failures = []
    for line in lines:
        args = shlex.split(line)[1:]
        result = runner.invoke(main, args, prog_name="isrcheck")
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            failures.append(f"{line}: raised {result.exception!r}")
            continue
        want = EXIT.get(line)
        if (want is None and result.exit_code not in (0, 1)) or (want is not None and result.exit_code != want):
            failures.append(f"{line}: exit {result.exit_code}: {result.stderr.strip()[:300]}")
        if "Traceback" in result.stderr:
            failures.append(f"{line}: a traceback")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("line", sorted(EXIT))
def test_the_raising_variant_example_prints_what_the_readme_shows(line, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, shlex.split(line)[1:], prog_name="isrcheck")
    text = (ROOT / "README.md").read_text()
    shown = text[text.index(line):].split("```", 1)[0].splitlines()[1:]
    for want in shown:
        assert want.startswith("# ")
        assert want[2:] in result.stderr, (want, result.stderr)
