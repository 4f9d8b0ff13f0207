"""The implementation's own event log (impl/process/event_log.py): the writer's format, what a store answer
tells the writer of a leader/ISR znode, and the lines real processes write under fault injection
(embedded store, and ZooKeeper under the ``zookeeper`` marker), checked line by line against the
documented schema and, merged, against the model."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from isrcheck import specs
from isrcheck.impl.core import layout as L
from isrcheck.impl.core.messages import StoreOp
from isrcheck.impl.core.store import Create, SetData, Stat
from isrcheck.impl.process.event_log import FORMAT, _state_writes, _written_facts, broker_facts, open_writer

HEADER_KEYS = {"format", "version", "process", "role", "pid", "clock", "config"}
LINE_KEYS = {"seq", "t", "kind", "step", "facts", "input", "note"}
PATH = re.compile(r"^(controller\.\w+|brokers\[\d+\]\.\w+|partitions\[\d+\]\.\w+|replicas\[\d+,\d+\]\.\w+|acked\[\d+\])$")


def test_the_writer_writes_a_header_and_one_complete_line_per_step(tmp_path):
    assert open_writer(None, "broker-1", "broker", {}) is None  # logging off
    w = open_writer(tmp_path / "logs", "broker-1", "broker", {"brokers": 3})
    assert w is not None and w.path.name.startswith("broker-1.") and w.path.name.endswith(".events.jsonl")
    w.write("action", {"name": "Produce", "args": [1, 0]}, {"replicas[1,0].leo": 1}, inp="ProduceRequest")
    text = w.path.read_text()  # no close, no flush call: each line is on disk as soon as it is written
    assert text.endswith("\n") and len(text.splitlines()) == 2
    w.write("observation", None, {"replicas[1,0].hw": 1}, note="the leader's half")
    w.close()
    head, one, two = (json.loads(x) for x in w.path.read_text().splitlines())
    assert set(head) == HEADER_KEYS and head["format"] == FORMAT and head["clock"] == "CLOCK_MONOTONIC ns"
    assert one == {"seq": 1, "t": one["t"], "kind": "action", "step": {"name": "Produce", "args": [1, 0]},
                   "facts": {"replicas[1,0].leo": 1}, "input": "ProduceRequest"}
    assert two["seq"] == 2 and two["t"] >= one["t"] and two["step"] is None and two["note"] == "the leader's half"


def test_a_leader_isr_write_is_read_back_from_the_store_answer():
    state = L.LeaderIsr(2, (2, 3), 4, 1).encode()
    path = L.state_path("isrcheck", 0)
    w = _state_writes(StoreOp(7, "set", (path, state, 5)))
    assert _written_facts(w, Stat(6, 1, 2, 0)) == {0: {"partitions[0].leader": 2, "partitions[0].isr": [2, 3],
                                                       "partitions[0].leader_epoch": 4,
                                                       "partitions[0].zk_version": 7}}
    assert _written_facts(w, [6, 1, 2, 0, 0, 0]) == _written_facts(w, Stat(6, 1, 2, 0))  # the remote store's JSON
    multi = StoreOp(8, "multi", ([SetData("/controller_epoch", b"1", 0), Create(L.state_path("isrcheck", 1), state)],))
    assert _written_facts(_state_writes(multi), [Stat(1, 0, 0, 0), "/x"])[1]["partitions[1].zk_version"] == 1
    assert _state_writes(StoreOp(9, "set", ("/brokers/ids/1", b"{}", 0))) == []  # not a leader/ISR znode


def test_a_broker_owns_its_own_fields_under_observation_paths():
    obs = {"controller_epoch": 2, "replicas": {0: {"present": True, "log": [{"id": 1, "epoch": 0}], "leo": 1,
                                                   "hw": 1, "leader_epoch": 0, "role": "leader", "epochs": [],
                                                   "fetch_state": "fetching"}}}
    facts = broker_facts(obs, 3, 2)
    assert facts["brokers[3].alive"] is True and facts["brokers[3].controller_epoch"] == 2
    assert facts["replicas[3,0].log"] == [{"id": 1, "epoch": 0}] and facts["replicas[3,1].present"] is False
    assert all(PATH.match(p) and (p.startswith("brokers[3]") or p.startswith("replicas[3,")) for p in facts)


# ---------------------------------------------------------------------------- real processes
def _check_schema(events: Path) -> dict[str, list[dict]]:
    """Every file of the run against the documented schema; the lines per process."""
    vocabulary = {a["name"] for a in specs.load("actions.toml")["action"]}
    out: dict[str, list[dict]] = {}
    for f in sorted(events.glob("*.events.jsonl")):
        text = f.read_text()
        assert text.endswith("\n")
        head, *lines = (json.loads(x) for x in text.splitlines())
        assert set(head) == HEADER_KEYS and head["format"] == FORMAT and head["version"] == 1
        assert f.name.startswith(f"{head['process']}.{head['pid']}") and f.name.endswith(".events.jsonl")
        prev_t = 0
        for i, ln in enumerate(lines, start=1):
            assert set(ln) <= LINE_KEYS and {"seq", "t", "kind", "step", "facts"} <= set(ln)
            assert ln["seq"] == i and ln["t"] >= prev_t
            prev_t = ln["t"]
            assert ln["kind"] in ("action", "observation") or (ln["kind"] == "end" and head["role"] == "launcher")
            if ln["step"] is not None:
                assert ln["step"]["name"] in vocabulary
            if ln["kind"] == "action":
                assert ln["step"] is not None and "args" in ln["step"]
            for p in ln["facts"]:
                assert PATH.match(p), p
                if head["role"] == "broker":  # a broker logs only what it owns, and ZooKeeper's znode it wrote
                    b = head["process"].split("-")[1]
                    assert p.startswith((f"brokers[{b}]", f"replicas[{b},", "partitions[")), p
        out.setdefault(head["process"], []).extend(lines)
    return out


@pytest.mark.cluster
@pytest.mark.parametrize("backend", ["embedded", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
def test_real_processes_log_their_steps_and_the_run_validates(backend, tmp_path, request):
    from isrcheck.conformance.selflog import validate_selflogs
    from isrcheck.conformance.runs import self_logged_run

    zk = request.getfixturevalue("zk_fresh_chroot") if backend == "zookeeper" else None
    events = self_logged_run(tmp_path, zookeeper=zk)
    by_process = _check_schema(events)
    assert {"broker-1", "broker-2", "broker-3", "launcher"} <= set(by_process)
    steps = [(p, ln["step"]["name"]) for p, lines in by_process.items() for ln in lines
             if ln["kind"] == "action"]
    assert sum(1 for _, n in steps if n == "Restart") == 3 + 2  # every start, and the two restarts
    assert [n for p, n in steps if p == "launcher"].count("Crash") == 2
    assert any(n == "Produce" for _, n in steps) and any(n == "CheckpointHighWatermark" for _, n in steps)
    isr_writes = [ln for lines in by_process.values() for ln in lines if "partitions[0].isr" in ln["facts"]]
    assert isr_writes and all(ln["facts"]["partitions[0].zk_version"] >= 1 for ln in isr_writes)
    merged, r = validate_selflogs([events])
    assert r.ok, f"{r.reason} {r.details}"
    assert len(merged.log.events) > 40


@pytest.mark.cluster
def test_the_cluster_commands_write_a_run_that_isrcheck_validate_accepts(tmp_path):
    from click.testing import CliRunner

    from isrcheck.commands.cluster import cluster
    from isrcheck.commands.conform import validate

    def run(group, *args: str):
        r = CliRunner().invoke(group, list(args), catch_exceptions=False)
        assert r.exit_code == 0, r.output
        return r.output

    d, ev = str(tmp_path / "c"), str(tmp_path / "events")
    try:
        run(cluster, "up", "--brokers", "3", "--event-log", ev, "--dir", d)
        run(cluster, "create-topic", "--partitions", "1", "--replication-factor", "3", "--dir", d)
        assert " id 1: a" in run(cluster, "produce", "a", "b", "--dir", d)  # ids 1, 2, ... as the model numbers writes
        run(cluster, "kill", "--broker", "1", "--dir", d)
        assert " id 3: c" in run(cluster, "produce", "c", "--dir", d)
        run(cluster, "restart", "--broker", "1", "--dir", d)
    finally:
        run(cluster, "down", "--dir", d)
    out = run(validate, ev)
    assert "valid" in out and "the first" in out
    launcher = [json.loads(x) for f in Path(ev).glob("launcher.*") for x in f.read_text().splitlines()[1:]]
    assert {"name": "Crash", "args": [1]} in [x["step"] for x in launcher]
    assert sorted(i for x in launcher for i in x["facts"].get("acked[0]", [])) == [1, 2, 3]


def test_a_controller_logs_a_finished_controlled_shutdown_as_the_model_step(tmp_path):
    """The controller's line is the model's ControlledShutdown(e, b), with the leader/ISR it wrote;
    a refused request (not done) is no step."""
    from types import SimpleNamespace

    from isrcheck.impl.process.event_log import StepLogger
    from isrcheck.impl.core.messages import StoreResult

    core = SimpleNamespace(active=True, epoch=3, history=[])
    w = open_writer(tmp_path, "controller-1", "controller", {"brokers": 3})
    logger = StepLogger(w, core)
    multi = StoreOp(5, "multi", ([SetData(L.state_path("isrcheck", 0), L.LeaderIsr(2, (2, 3), 1, 3).encode(), 0)],))
    logger.after("snapshot answer", [multi], logger.before("snapshot answer"))
    before = logger.before("commit")
    core.history.append(("ControlledShutdown", (1,), "done"))
    logger.after(StoreResult(5, [Stat(1, 0, 0, 0)]), [], before)
    before = logger.before("again")
    core.history.append(("ControlledShutdown", (2,), "not-enabled: broker 2 is not a live broker"))
    logger.after(StoreResult(6, None), [], before)
    lines = [json.loads(x) for x in w.path.read_text().splitlines()[1:]]
    assert [ln["step"] for ln in lines] == [None, {"name": "ControlledShutdown", "args": [3, 1]}]
    assert lines[0]["facts"] == {"controller.epoch": 3} and lines[1]["kind"] == "action"
    assert lines[1]["facts"] == {"partitions[0].leader": 2, "partitions[0].isr": [2, 3],
                                 "partitions[0].leader_epoch": 1, "partitions[0].zk_version": 2,
                                 "controller.epoch": 3}
