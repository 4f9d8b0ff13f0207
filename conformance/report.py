"""Terminal tables (rich) and JSON for conformance results."""
from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from isrcheck.specs.actions import action_text

from .cover import CoverReport
from .replay import ConformResult, Divergence

__all__ = ["conform_json", "cover_json", "cover_table", "divergence_json", "divergence_table"]


def _cell(v: Any, missing: bool) -> Text:
    if missing:
        return Text("(absent)", style="dim")
    return Text(repr(v) if isinstance(v, str) else _compact(v))


def _compact(v: Any) -> str:
    if isinstance(v, list) and v and all(isinstance(x, dict) and set(x) == {"id", "epoch"} for x in v):
        return "[" + " ".join(f"m{x['id']}@e{x['epoch']}" for x in v) + "]"  # a log, as the gallery shows it
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v).replace("'", "")


def divergence_table(d: Divergence, title: str = "") -> Table:
    t = Table(title=title or f"First divergence: step {d.index}, {d.action_text}", box=box.SIMPLE_HEAD,
              title_justify="left", caption=d.message, caption_justify="left")
    t.add_column("field", style="bold")
    t.add_column("model")
    t.add_column("trace" if d.reason == "stale-trace" else "implementation", style="red")
    for x in d.differences:
        t.add_row(x.path, _cell(x.expected, x.missing == "expected"), _cell(x.actual, x.missing == "actual"))
    return t


def divergence_json(d: Divergence | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"step": d.index, "action": None if d.action is None else {"name": d.action[0], "args": [
        list(a) if isinstance(a, tuple) else a for a in d.action[1]]}, "action_text": d.action_text,
        "reason": d.reason, "message": d.message,
        "differences": [{"field": x.path, "model": x.expected, "implementation": x.actual,
                         **({"missing": x.missing} if x.missing else {})} for x in d.differences]}


def conform_json(r: ConformResult) -> dict[str, Any]:
    return {"trace": r.label, "ok": r.ok, "skipped": r.skipped, "steps": r.steps, "matched": r.matched,
            "seconds": round(r.seconds, 6), "steps_per_second": round(r.steps_per_second, 1),
            "divergence": divergence_json(r.divergence)}


def cover_json(r: CoverReport) -> dict[str, Any]:
    return {"model": r.label, "mode": r.mode, "ok": r.ok, "skipped": r.skipped,
            "states": {"covered": r.states_covered, "total": r.states_total, "ratio": round(r.state_coverage, 6)},
            "edges": {"covered": r.edges_covered, "total": r.edges_total, "ratio": round(r.edge_coverage, 6)},
            "paths": r.paths, "paths_total": r.paths_total, "steps": r.steps, "seconds": round(r.seconds, 6),
            "graph_seconds": round(r.build_seconds, 6), "steps_per_second": round(r.steps_per_second, 1),
            "model_faults": r.model_faults, "divergence": divergence_json(r.divergence),
            "failing_path": [action_text(n, a) for n, a in r.failing_path]}


def cover_table(reports: list[CoverReport]) -> Table:
    t = Table(title="Conformance coverage of the model's state graph", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("model", "paths", "mode", "steps", "states", "edges", "steps/s", "verdict"):
        t.add_column(col, justify="right" if col in ("paths", "steps", "steps/s") else "left")
    for r in reports:
        if r.skipped:
            verdict = Text("skipped", style="yellow")
        elif r.ok:
            verdict = Text("conforms", style="green")
        else:
            verdict = Text(f"diverges at step {r.divergence.index}", style="bold red")  # type: ignore[union-attr]
        t.add_row(r.label, f"{r.paths}", r.mode, f"{r.steps:,}",
                  f"{r.states_covered:,}/{r.states_total:,} ({100 * r.state_coverage:.1f}%)",
                  f"{r.edges_covered:,}/{r.edges_total:,} ({100 * r.edge_coverage:.1f}%)",
                  f"{r.steps_per_second:,.0f}", verdict)
    return t
