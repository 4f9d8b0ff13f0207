"""The known-weakness gallery: specs/10-weaknesses.md, generated from checker runs.

Each weakness names manifest models; the write-up shows, for every protocol generation, whether
the checker finds it, and prints the shortest counterexample the checker produced. Nothing in
the counterexamples is typed in: ``isrcheck gallery --write`` regenerates the file, and a test
fails when the file differs from a fresh run.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from isrcheck import manifest
from isrcheck.invariants import build_model
from isrcheck.model.brokersets import members
from isrcheck.model.checker import Checker, Step, Violation
from isrcheck.model.records import render_log
from isrcheck.model.state import NO_LEADER


@dataclass(frozen=True)
class Weakness:
    title: str
    summary: str
    example: str  # the manifest model whose counterexample is shown
    generations: tuple[str, ...]  # manifest models of the same bounds, one per generation


WEAKNESSES: tuple[Weakness, ...] = (
    Weakness(
        "Truncating to the high watermark loses acknowledged writes",
        "A follower learns the high watermark one fetch late. When the leader changes, the seeds' rule "
        "has every follower cut its log back to its own high watermark, which may be below a write the "
        "old leader already acknowledged. The follower stays in the ISR without that write; one more "
        "failure and a replica without it leads. Leader epochs (KIP-101) replace the rule.",
        "hw-truncation-one-crash",
        ("hw-truncation-one-crash", "leader-crash-kip-101", "leader-crash-kip-279", "leader-crash-kip-320"),
    ),
    Weakness(
        "A controller failover hides a crash",
        "The same truncation, reached another way: a new controller starts from ZooKeeper and never "
        "processes a follower's crash that its predecessor had not yet handled, so the follower is still "
        "in the ISR when it restarts and truncates to its checkpointed high watermark.",
        "failover-misses-crash",
        ("failover-misses-crash", "failover-misses-crash-kip-101", "failover-misses-crash-kip-279",
         "failover-misses-crash-kip-320"),
    ),
    Weakness(
        "Reassignment moves leadership onto a lagging replica set",
        "Step 7 of the reassignment elects a leader from the target replicas; the other new replica "
        "applies the leader change by truncating to a high watermark that lags the acknowledged writes.",
        "reassignment-with-data",
        ("reassignment-with-data", "reassignment-with-data-kip-101", "reassignment-with-data-kip-279",
         "reassignment-with-data-kip-320"),
    ),
    Weakness(
        "A lossy crash lets a diverged follower back into the ISR",
        "The leader loses the unflushed end of its log, comes back and leads again in a new epoch. A "
        "follower that still holds the lost suffix follows the same leader, so before KIP-320 it neither "
        "reconciles (truncation happened only on a leader change) nor is fenced (fetches did not carry "
        "the leader epoch): it fetches on from its own log end and rejoins the ISR with a log that "
        "disagrees below both high watermarks.",
        "lossy-divergence",
        ("lossy-divergence", "lossy-divergence-kip-101", "lossy-divergence-kip-279", "lossy-divergence-kip-320"),
    ),
    Weakness(
        "Unclean leader election",
        "With unclean election enabled, a partition whose ISR has no live member elects any live replica; "
        "an acknowledged write it never received is gone. This is the option's documented price, in "
        "every generation.",
        "unclean-election",
        ("unclean-election", "unclean-election-kip-320"),
    ),
    Weakness(
        "The last ISR member outlives a reassignment",
        "When the only target replica dies after step 7, step 8 cannot take the last old replica out of the "
        "ISR (the 0.8 rule keeps the last member when unclean election is off) and step 10 writes an "
        "assignment that no longer contains the ISR.",
        "reassignment-target-crash",
        ("reassignment-target-crash",),
    ),
)


def _cell(s, p: int) -> list[str]:
    zp = s.zk.partitions[p]
    acked = [str(i) for i in range(1, 64) if s.ghost[p].acked >> i & 1]
    if not zp.replicas:
        return ["-", "-", "-", "-", "-"]
    isr = "{" + ",".join(map(str, members(zp.isr))) + "}"
    return ["[" + ",".join(map(str, zp.replicas)) + "]", str(zp.leader) if zp.leader != NO_LEADER else "none",
            isr, str(zp.leader_epoch), ",".join("m" + a for a in acked) or "-"]


def trace_markdown(trace: Sequence[Step]) -> str:
    """A counterexample as a Markdown table (one partition: the gallery's models have one)."""
    first = trace[0].state
    heads = ["#", "action", "AR", "leader", "ISR", "epoch", "acked"]
    for b in range(1, len(first.brokers) + 1):
        heads += [f"b{b} log", "LEO", "HW"]
    rows = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for i, st in enumerate(trace):
        s = st.state
        cells = [str(i), f"`{st.action}`" if st.action is not None else "(initial state)"] + _cell(s, 0)
        for br in s.brokers:
            r = br.replicas[0]
            if r is None:
                cells += ["-" if br.alive else "down", "-", "-"]
            else:
                log = render_log(r.log)
                cells += [log if br.alive else f"{log} down", str(len(r.log)), str(r.hw)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _run(name: str):
    e = manifest.get(name)
    model = build_model(e.config, symmetry=e.symmetry, properties=list(e.properties) if e.properties else None)
    return e, Checker(model).run()


def render_gallery() -> str:
    out = [
        "# 10 — The known-weakness gallery",
        "",
        "<!-- Generated by `isrcheck gallery --write specs/10-weaknesses.md` from checker runs; do not edit. -->",
        "",
        "Each section is a weakness of a Kafka replication design that the checker finds on its own. The",
        "table shows what the checker answers for the same bounds under each protocol generation",
        "(`truncation`, see [05-replication.md](05-replication.md)); the counterexample is the shortest one the",
        "checker produced for the first model. Logs show `m2@e1` for record 2 appended in leader epoch 1;",
        "`acked` lists acknowledged writes.",
        "",
    ]
    for w in WEAKNESSES:
        out += [f"## {w.title}", "", w.summary, "", "| model | generation | checker finds |", "|---|---|---|"]
        example: Violation | None = None
        for name in w.generations:
            e, r = _run(name)
            found = "every property holds" if r.outcome == "success" else (
                f"{r.violations[0].property} broken in {r.violations[0].length} steps" if r.violations else r.outcome)
            out.append(f"| `{name}` | {e.config.truncation} | {found} |")
            if name == w.example and r.violations:
                example = r.violations[0]
        if example is not None:
            out += ["", f"Shortest counterexample (`isrcheck check {w.example}`), {example.property} "
                    f"broken after {example.length} steps:", "", trace_markdown(example.trace)]
        out.append("")
    return "\n".join(out)
