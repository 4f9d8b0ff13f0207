"""`isrcheck report`: the HTML page, read back with html.parser (the browser test renders it).

The page must be self-contained (no script, no external reference), escape what it quotes, draw
one lane per actor and the messages of every step, and show the state table and coverage.
"""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from isrcheck.invariants import build_model
from isrcheck.engine.checker import Checker
from isrcheck.model.config import from_mapping, settings
from isrcheck.render.sequence import Message, sequence

CRASH = {"brokers": 3, "max_records": 1, "faults": {"crashes": 1}}


class _Page(HTMLParser):
    """Collects the elements the tests look at, with their attributes and the path of open groups."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.lanes: list[dict[str, str]] = []
        self.msgs: list[dict[str, str]] = []
        self.notes: list[dict[str, str]] = []
        self.rows = {"states": 0, "coverage": 0, "config": 0}
        self._table: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "g":
            {"lane": self.lanes, "msg": self.msgs, "note": self.notes}.get(a.get("class", ""), []).append(a)
        if tag == "table":
            self._table.append(a.get("class", ""))
        if tag == "tr" and self._table and self._table[-1] in self.rows:
            self.rows[self._table[-1]] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._table:
            self._table.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _write_config(path: Path, raw: dict[str, Any]) -> None:
    lines = [f"{k} = {json.dumps(v)}" for k, v in raw.items() if not isinstance(v, dict)]
    for table, body in ((k, v) for k, v in raw.items() if isinstance(v, dict)):
        lines += [f"[{table}]"] + [f"{k} = {json.dumps(v)}" for k, v in body.items()]
    path.write_text("\n".join(lines) + "\n")


def _page(path: Path) -> tuple[str, _Page]:
    text = path.read_text(encoding="utf-8")
    p = _Page()
    p.feed(text)
    return text, p


def _counterexample() -> Any:
    return Checker(build_model(from_mapping(CRASH))).run().violations[0]


def test_report_of_a_model_draws_lanes_messages_states_and_coverage(cli, tmp_path):
    cfg = tmp_path / "crash.toml"
    _write_config(cfg, CRASH)
    out = tmp_path / "report.html"
    result = cli("report", "--config", str(cfg), "-o", str(out))
    assert result.exit_code == 1, result.output  # the verdict's status, as check's; the page is written
    assert "SAFETY FAILURE" in result.stdout
    text, page = _page(out)
    v = _counterexample()
    # one lane per actor: controller, ZooKeeper, each broker, clients, each a distinct colour
    assert [ln["data-lane"] for ln in page.lanes] == ["controller", "zk", "b1", "b2", "b3", "clients"]
    assert len({ln["data-colour"] for ln in page.lanes}) == 6
    # the arrows are the messages of the counterexample's steps, each drawn once, in order
    want = [(m.step, m.src, m.dst) for m in sequence(v.trace) if isinstance(m, Message)]
    assert [(int(m["data-step"]), m["data-from"], m["data-to"]) for m in page.msgs] == want
    for i, st in enumerate(v.trace[1:], 1):
        arrows = [m for m in page.msgs if int(m["data-step"]) == i]
        name, args = st.action.name, st.action.args
        if name == "Produce":  # a client's write to the leader
            assert ("clients", f"b{args[0]}") in [(m["data-from"], m["data-to"]) for m in arrows]
        elif name == "Fetch":  # a request to the leader and its response
            assert [(m["data-from"], m["data-kind"]) for m in arrows[:2]] == [(f"b{args[0]}", "request"),
                                                                               ("b1", "response")]
            assert arrows[0]["data-to"] == "b1" and arrows[1]["data-to"] == f"b{args[0]}"
        elif name == "DeliverRequest":  # the controller's request reaches the broker
            assert [(m["data-from"], m["data-to"]) for m in arrows] == [("controller", f"b{args[0]}")]
        elif name == "ProcessBrokerChange":  # the watch fires, the controller writes the new leader
            pairs = [(m["data-from"], m["data-to"]) for m in arrows]
            assert pairs[:2] == [("zk", "controller"), ("controller", "zk")]
        elif name == "Crash":  # no message: a fault note on the broker's lane
            assert arrows == []
            assert any(n["data-step"] == str(i) and n["data-lane"] == f"b{args[0]}" for n in page.notes)
    # every step shows: an arrow or a note
    shown = {int(g["data-step"]) for g in page.msgs + page.notes}
    assert shown == set(range(1, v.length + 1))
    # the state at every step (header row + initial state + one row per step), and the coverage
    assert page.rows["states"] == 1 + len(v.trace)
    assert page.rows["coverage"] >= 1 + 3  # Produce, Fetch, Crash, ...
    body = "".join(page.text)
    assert "NoCommittedWriteLost" in body and "distinct states" in body and "brokers=3" in body
    assert page.rows["config"] == 1 + len(settings(from_mapping(CRASH)))  # every key the metadata lists
    assert "generation=high-watermark" in body  # the header line names the generation


def test_report_is_self_contained_and_escapes_what_it_quotes(cli, tmp_path):
    cfg = tmp_path / 'a<b>&"q".toml'  # the file name becomes the page's title
    _write_config(cfg, CRASH)
    out = tmp_path / "r.html"
    assert cli("report", "--config", str(cfg), "-o", str(out)).exit_code == 1  # a safety failure, not pinned
    text, page = _page(out)
    assert "<b>" not in text and "&lt;b&gt;" in text
    tags = {t for t, _a in page.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed"}
    for _tag, attrs in page.tags:
        for k in ("src", "href", "xlink:href"):
            assert not re.match(r"\s*(https?:)?//", attrs.get(k, "")), attrs
    assert not re.search(r"url\(", text)  # no fetch from CSS either
    assert "default-src 'none'" in text


def test_report_of_a_trace_replays_it(cli, fake_manifest, tmp_path):
    trace = tmp_path / "t.jsonl"
    assert cli("traces", "export", "tiny-crash", "--out", str(trace)).exit_code == 0
    out = tmp_path / "t.html"
    result = cli("report", str(trace), "-o", str(out))
    assert result.exit_code == 1, result.output  # a property broken along the trace, as `run` exits
    _text, page = _page(out)
    steps = len(trace.read_text().splitlines()) - 1  # the header, then one line per state
    assert page.rows["states"] == 1 + steps
    assert {int(g["data-step"]) for g in page.msgs + page.notes} == set(range(1, steps))
    body = "".join(page.text)
    assert f"broken at step {steps - 1} of the trace" in body
    assert "the actions this trace takes" in body


def test_report_of_a_model_that_holds(cli, fake_manifest, tmp_path):
    out = tmp_path / "ok.html"
    result = cli("report", "tiny", "-o", str(out))
    assert result.exit_code == 0 and "SUCCESS" in result.stdout
    _text, page = _page(out)
    assert page.msgs == [] and page.lanes == []
    assert "No counterexample" in "".join(page.text)


def test_report_bad_input(cli, fake_manifest, tmp_path, assert_input_error):
    assert_input_error(cli("report", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "r.html")), "none.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert_input_error(cli("report", str(bad), "-o", str(tmp_path / "r.html")), "bad.jsonl")
    trace = tmp_path / "t.jsonl"
    assert cli("traces", "export", "tiny-crash", "--out", str(trace)).exit_code == 0
    assert_input_error(cli("report", str(trace), "--set", "brokers=2", "-o", str(tmp_path / "r.html")),
                       "TRACE carries its configuration")
    assert_input_error(cli("report", "no-such-model", "-o", str(tmp_path / "r.html")), "unknown model")
    assert cli("report", "tiny").exit_code == 2  # -o is required (click's usage error)


def test_report_refuses_a_trace_the_model_does_not_replay_to(cli, fake_manifest, tmp_path, assert_input_error):
    """A trace whose stored observations the replay does not reproduce (tampered, or written from a
    variant) is refused, as `traces show` refuses it, rather than reported as another behaviour."""
    trace = tmp_path / "t.jsonl"
    assert cli("traces", "export", "tiny-crash", "--out", str(trace)).exit_code == 0
    lines = trace.read_text().strip().split("\n")
    step = json.loads(lines[2])  # step 1: the first action's state
    step["observation"]["replicas"][0]["hw"] += 7
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:2], json.dumps(step), *lines[3:]]) + "\n")
    assert_input_error(cli("report", str(bad), "-o", str(tmp_path / "r.html")), "step 1",
                       "differs from the stored observation")
    assert not (tmp_path / "r.html").exists()
