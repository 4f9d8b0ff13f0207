"""Scripted nemesis scenarios on real processes: one known loss, made to happen on purpose.

Why: a random schedule finds a loss only when its timing lines up (impl/rigs/torture.py); a test that must
show "unclean election under a partition loses writes" needs the faults in the one order that causes
it, each step waiting for the cluster to reach the state the next one needs (never for a fixed time).

:func:`unclean_election_after_partition`: the leader is cut from the other brokers (not from the store
or the clients), so it shrinks the ISR to itself; with ``min_insync_replicas = 1`` it then acknowledges
acks=all writes alone; it is killed; with unclean election the controller elects a follower that never
had them; after healing, the old leader comes back as a follower and truncates them away.

:func:`hw_truncation_after_leader_crash`: the model's ``hw-truncation-one-crash`` on real processes.
The leader's links to its followers are delayed, so the fetch answer that would tell them the new
high watermark is still in flight when the write is acknowledged; that answer is dropped and the
leader killed. Under ``high-watermark`` the follower that is not elected truncates to its (lagging)
HW on the change of leader and loses the write, while staying in the ISR (the model's violation).
The followers are cut from each other so that it cannot fetch the write back, and the new leader
is killed: the truncated follower is elected cleanly, and the write is lost for good. From
``kip-101`` on, the follower asks the new leader for its epoch's end instead and keeps the write.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from ..process.client import Client, ClientError
from .history import History, Verdict, Write, check
from .torture import PARTITION, TortureSetting, _Run

__all__ = ["hw_truncation_after_leader_crash", "unclean_election_after_partition"]

WRITES = 5
FULL = [1, 2, 3]  # the brokers, every one in the ISR before a scenario's faults
LAG_LIMIT_MS = 15_000  # hw_truncation_after_leader_crash: a follower cut off stays in the ISR this long


def settle_and_consume(run: _Run, steps: list[str]) -> tuple[int, ...] | None:
    """The end of a scripted scenario, after its heal: wait for the cluster to agree, then read the
    partition back (what the history checker compares the acknowledged writes with)."""
    if run.settle():
        steps.append("settled")
    return run.final_consume()


def take_down(run: _Run) -> None:
    """Stop the scenario's processes, then its proxies (also when stopping the processes fails)."""
    try:
        run.c.down()
    finally:
        run.nem.close()


def judge(run: _Run, writes: list[Write], consumed: tuple[int, ...] | None) -> Verdict:
    """The history checker's verdict on the scenario's writes, what was consumed and the final logs."""
    return check(History(tuple(writes), {PARTITION: consumed}, run.final_logs()))


def _up_with_full_isr(run: _Run, full: list[int]) -> int:
    """Start the cluster, create the topic on every broker, wait until all are in the ISR; the leader."""
    run.c.up()
    with run.c.client() as k:
        k.create_topic(1, len(full))
    run.c.wait_for(lambda k: sorted(getattr(k.snapshot().partitions[PARTITION].state, "isr", ())) == full,
                   30, "the full ISR")
    with run.c.client() as k:
        return run.leader(k)


def _scenario(setting: TortureSetting, directory: str | os.PathLike[str],
              play: Callable[[_Run, int, list[str], list[Write]], None]) -> tuple[Verdict, list[str]]:
    """The frame of every scripted scenario: the cluster up with the full ISR, then
    ``play(run, leader, steps, writes)`` (the faults and the writes, ending with the heal), then the
    settle, the read back and the verdict. The processes and proxies are taken down whatever happens;
    a client error stops the scenario, as its last step."""
    run = _Run(0, setting, Path(directory))
    steps: list[str] = []
    writes: list[Write] = []
    consumed: tuple[int, ...] | None = None
    try:
        play(run, _up_with_full_isr(run, FULL), steps, writes)
        consumed = settle_and_consume(run, steps)
    except ClientError as e:
        steps.append(f"stopped: {e}")
    finally:
        take_down(run)
    return judge(run, writes, consumed), steps


def _acked_write(run: _Run, k: Client, writes: list[Write], label: str, timeout: float) -> int:
    """One acks=all write through the proxies, recorded with its start and end for the history
    checker; the record's id (its value is ``<label>-<id>``)."""
    rid = run._next_id()
    sent = time.monotonic_ns()
    k.produce(PARTITION, f"{label}-{rid}", acks="all", timeout=timeout, record_id=rid)
    writes.append(Write(PARTITION, rid, sent, time.monotonic_ns()))
    return rid


def unclean_election_after_partition(directory: str | os.PathLike[str], generation: str = "kip-320",
                                     unclean: bool = True, zookeeper: str | None = None) -> tuple[Verdict, list[str]]:
    """Run the scenario; the verdict of the acks=all writes, and what was done, step by step."""
    setting = TortureSetting(generation=generation, min_isr=1, unclean=unclean,
                             store="zookeeper" if zookeeper else "embedded", zookeeper=zookeeper)

    def play(run: _Run, leader: int, steps: list[str], writes: list[Write]) -> None:
        others = [f"broker-{b}" for b in FULL if b != leader]
        run.nem.partition([f"broker-{leader}"], others, 30)
        steps.append(f"cut broker-{leader} (the leader) from {', '.join(others)}")
        run.c.wait_for(lambda k: list(getattr(k.snapshot().partitions[PARTITION].state, "isr", ())) == [leader],
                       20, f"broker-{leader} to shrink the ISR to itself")
        steps.append(f"the ISR shrank to [{leader}]")
        with run._routed() as k:
            for _ in range(WRITES):
                _acked_write(run, k, writes, "alone", 10.0)
        steps.append(f"{WRITES} acks=all writes acknowledged by broker-{leader} alone")
        run.c.kill(f"broker-{leader}")
        steps.append(f"SIGKILL broker-{leader}")
        if unclean:
            run.c.wait_for(lambda k: run.leader(k) not in (0, leader), 20, "an unclean election")
            with run.c.client() as k:
                steps.append(f"broker-{run.leader(k)} elected without the writes (unclean)")
        run.nem.heal()
        run.c.start_broker(leader)
        steps.append(f"healed; broker-{leader} restarted")

    return _scenario(setting, directory, play)


def _leo(run: _Run, b: int) -> int | None:
    try:
        with run.c.client(timeout=2.0) as k:
            for p, _role, _le, leo, _hw in k.metadata(b).replicas:
                if p == PARTITION:
                    return int(leo)
    except ClientError:
        return None
    return None


def hw_truncation_after_leader_crash(directory: str | os.PathLike[str], generation: str = "high-watermark",
                                     zookeeper: str | None = None) -> tuple[Verdict, list[str]]:
    """Run the scenario (acks=all, min ISR 2, clean election); the verdict and the steps done."""
    # The truncated follower is cut from the new leader, which would drop it from the ISR once the lag
    # limit passes; it must still be in the ISR when the new leader is killed, however slow the machine
    # is between the election and the kill, so the limit is far above the scenario's steps.
    setting = TortureSetting(generation=generation, min_isr=2, unclean=False,
                             store="zookeeper" if zookeeper else "embedded", zookeeper=zookeeper,
                             replica_lag_time_max_ms=LAG_LIMIT_MS)

    def play(run: _Run, leader: int, steps: list[str], writes: list[Write]) -> None:
        f1, f2 = (b for b in FULL if b != leader)
        with run._routed() as k:
            for _ in range(3):  # a first few writes, replicated everywhere
                _acked_write(run, k, writes, "before", 10.0)
            for f in (f1, f2):
                run.nem.delay(f"broker-{leader}", f"broker-{f}", 150, 30)  # far under the lag limit
            steps.append(f"delayed broker-{leader} (the leader) <-> broker-{f1}, broker-{f2} by 150 ms")
            rid = _acked_write(run, k, writes, "victim", 20.0)
            victim_end = len(writes)  # the log's length once the victim is in it
        for f in (f1, f2):  # the answer carrying the new HW is in flight: lose it
            run.nem.drop(f"broker-{leader}", f"broker-{f}", 1.0, 30)
        run.nem.partition([f"broker-{f1}"], [f"broker-{f2}"], 30)
        run.c.kill(f"broker-{leader}")
        steps.append(f"record {rid} acknowledged; the HW answers dropped; broker-{f1} cut from broker-{f2}; "
                     f"SIGKILL broker-{leader}")
        run.c.wait_for(lambda k: run.leader(k) not in (0, leader), 20, "a new leader")
        with run.c.client() as k:
            new = run.leader(k)
        other = f2 if new == f1 else f1
        steps.append(f"broker-{new} elected")
        deadline = time.monotonic() + 5.0
        truncated = False
        while time.monotonic() < deadline and not truncated:
            leo = _leo(run, other)
            truncated = leo is not None and leo < victim_end
            time.sleep(0.02)
        steps.append(f"broker-{other} truncated to its HW, losing record {rid}" if truncated
                     else f"broker-{other} kept record {rid}")
        run.c.kill(f"broker-{new}")
        steps.append(f"SIGKILL broker-{new}")
        try:
            # still in the ISR (the lag limit has not passed): elected cleanly, with or without the write
            run.c.wait_for(lambda k: run.leader(k) == other, 20, f"broker-{other} to be elected")
            steps.append(f"broker-{other} elected")
        except Exception as e:  # noqa: BLE001 - reported as a step: the verdict says the rest
            steps.append(f"broker-{other} not elected: {e}")
        run.nem.heal()
        for b in (leader, new):
            run.c.start_broker(b)
        steps.append("healed; both restarted")

    return _scenario(setting, directory, play)
