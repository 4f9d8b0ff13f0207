"""What `check` prints beside a counterexample: `depth` (the deepest level searched, one less than the
length of a counterexample the search stopped at) is labelled so it cannot be read as the
counterexample's length, and every violation of `check --json` carries a one-line `message` saying
what broke (README, "Checking a model")."""
from __future__ import annotations

import re


def test_depth_beside_a_counterexample_is_labelled(cli):
    code, doc = cli.json("check", "hw-truncation-one-crash", "--json")
    assert code == 0 and doc["outcome"] == "as_pinned" and doc["found"] == "safety_failure"  # pinned
    (v,) = doc["violations"]
    assert v["length"] == 8 and doc["depth"] == 7  # the level whose expansion found the 8th step
    out = cli("check", "hw-truncation-one-crash").stdout
    row = next(line for line in out.splitlines() if line.startswith("depth"))
    assert re.match(r"depth searched\s+7 \(violation found at depth 8, while expanding depth 7\)", row), row
    assert "broken after 8 steps" in out


def test_depth_without_a_violation_is_just_the_depth(cli, small_config):
    code, doc = cli.json("check", "--config", str(small_config), "--json")
    assert code == 0 and not doc["violations"]
    out = cli("check", "--config", str(small_config)).stdout
    row = next(line for line in out.splitlines() if line.startswith("depth"))
    assert row.split()[:3] == ["depth", "searched", str(doc["depth"])] and "(" not in row


def test_a_violation_message_says_what_broke(cli):
    _, doc = cli.json("check", "hw-truncation-one-crash", "--json")
    msg = doc["violations"][0]["message"]
    assert "\n" not in msg
    assert msg.startswith("Every acknowledged write is in the log of the leader and of every live ISR member.")
    assert "partition 0: acknowledged write(s) m1 missing from the log of broker 3 (an ISR member)" in msg
    _, doc = cli.json("check", "unclean-election", "--json")
    assert "m1 missing from the log of broker 2 (the leader)" in doc["violations"][0]["message"]
    # the table shows the same values under the property's description
    out = cli("check", "hw-truncation-one-crash").stdout
    assert "m1 missing from the log of broker 3" in " ".join(out.split())


def test_an_illegal_transition_keeps_its_own_message(cli, tmp_path):
    """A step the state machines refuse says which move (the model's own message)."""
    from isrcheck.invariants.properties import describe
    from isrcheck.engine.core import Step, Violation

    v = Violation("OnlyValidTransitions", "transition", [Step(None, None)], "illegal replica transition: A -> B")
    assert describe(v) == "illegal replica transition: A -> B"
    assert describe(Violation("Mine", "always", [Step(None, None)])) == "Mine broken after 0 step(s)."
