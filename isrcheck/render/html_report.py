"""``isrcheck report``: one self-contained HTML page a designer can attach to a design review.

The page holds the verdict, the configuration, the counterexample as a message sequence diagram
(inline SVG, lanes from :mod:`isrcheck.render.sequence`), the state at every step (the cells of
``isrcheck check``'s table, from :mod:`isrcheck.render.tables`), and the coverage. It is one file with
inline CSS and SVG, no script and no external reference: a Content-Security-Policy forbids every
fetch, so it renders the same offline, in a mail attachment or an archive. Every text from a
model, a trace or a file name goes through :func:`html.escape`.

Each lane has a solid colour band at its head (:data:`LANE_COLOURS`); the headless-browser test
finds the lanes in a screenshot by those colours.
"""
from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from isrcheck import __version__
from isrcheck.engine.core import Step
from isrcheck.model.config import Config, settings
from isrcheck.render import tables
from isrcheck.render.sequence import CLIENTS, CONTROLLER, STORE, Lane, Message, Note, lanes, sequence
from isrcheck.specs.properties import NAMES

#: lane -> colour of its head band and lifeline (brokers take BROKER_COLOURS in turn)
LANE_COLOURS = {CONTROLLER: "#1f5fbf", STORE: "#b8860b", CLIENTS: "#7b3fbf"}
BROKER_COLOURS = ("#1e8a4c", "#c2410c", "#0e7490", "#be185d", "#4d7c0f", "#6b4f2a", "#475569", "#9333ea")

LEFT = 250  # the step column
LANE_W = 165
STEP_CHARS = 33  # a longer step label is cut (the full text is its tooltip)
HEAD_Y, HEAD_H = 12, 34
ROW_H = 30
TOP = HEAD_Y + HEAD_H + 22


def lane_colour(lane: Lane, index: int) -> str:
    if lane.key in LANE_COLOURS:
        return LANE_COLOURS[lane.key]
    return BROKER_COLOURS[(index - 2) % len(BROKER_COLOURS)]


@dataclass(frozen=True)
class Report:
    """What the page shows; built by the command from a check or a trace file."""

    title: str
    verdict: str  # one line
    verdict_class: str  # "ok" | "fail" | "unknown"
    config: Config
    steps: list[Step]  # the counterexample (or the trace); empty: nothing to draw
    trace_title: str = ""
    violation_step: int | None = None  # the step where the property broke (highlighted)
    loop: int | None = None  # a lasso's loop start
    details: list[str] = field(default_factory=list)  # lines under the verdict
    figures: list[tuple[str, str]] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)
    coverage_title: str = "Coverage: how often each action was taken"
    #: the variant checked (invariants.variants.VariantSource: name, docstring, path, source, SHA-256),
    #: None for the model's own protocol
    variant: Any = None
    #: the variant's field declarations (model.extension.Extension): its partition fields get columns
    extension: Any = None


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


# ---------------------------------------------------------------------------- the diagram
def sequence_svg(steps: Sequence[Step], violation_step: int | None = None) -> str:
    """The message sequence diagram of ``steps`` as an inline ``<svg>``: one ``g.lane`` per lane,
    one ``g.msg`` per message (``data-step``, ``data-from``, ``data-to``), one ``g.note`` per note."""
    first = next(st.state for st in steps if st.state is not None)
    lane_list = lanes(first)
    x_of = {ln.key: LEFT + LANE_W * k + LANE_W // 2 for k, ln in enumerate(lane_list)}
    events = sequence(steps)
    by_step: dict[int, list[Message | Note]] = {}
    for ev in events:
        by_step.setdefault(ev.step, []).append(ev)
    rows = sum(max(1, len(by_step.get(i, []))) for i in range(1, len(steps)))
    width = LEFT + LANE_W * len(lane_list) + 10
    height = TOP + rows * ROW_H + 20
    out = [f'<svg class="msc" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="message sequence diagram">']
    out.append('<defs><style>.msc text{font:12px sans-serif}.msc .lbl{paint-order:stroke;stroke:#fff;'
               'stroke-width:4px}.msc .step{font:12px monospace}</style></defs>')
    for k, ln in enumerate(lane_list):
        x, colour = x_of[ln.key], lane_colour(ln, k)
        out.append(f'<g class="lane" data-lane="{_e(ln.key)}" data-colour="{colour}">'
                   f'<rect x="{x - 80}" y="{HEAD_Y}" width="160" height="{HEAD_H}" fill="{colour}"/>'
                   f'<text x="{x}" y="{HEAD_Y + 22}" text-anchor="middle" fill="#fff" font-weight="bold">'
                   f'{_e(ln.title)}</text>'
                   f'<line x1="{x}" y1="{HEAD_Y + HEAD_H}" x2="{x}" y2="{height - 10}" stroke="{colour}" '
                   f'stroke-width="2" stroke-dasharray="6 4"/></g>')
    y = TOP
    for i in range(1, len(steps)):
        evs = by_step.get(i, [])
        n = max(1, len(evs))
        bad = violation_step == i
        if bad:
            out.append(f'<rect class="bad" x="0" y="{y - ROW_H + 8}" width="{width}" height="{n * ROW_H}" '
                       'fill="#fde2e2"/>')
        out.append(f'<line x1="0" y1="{y - ROW_H + 8}" x2="{width}" y2="{y - ROW_H + 8}" stroke="#e5e7eb"/>')
        label = f"{i}  {steps[i].action}"
        shown = label if len(label) <= STEP_CHARS else label[:STEP_CHARS - 1] + "\u2026"
        emphasis = ' fill="#b91c1c" font-weight="bold"' if bad else ""
        out.append(f'<text class="step" x="6" y="{y}"{emphasis}><title>{_e(label)}</title>{_e(shown)}</text>')
        for j, ev in enumerate(evs):
            yy = y + j * ROW_H
            if isinstance(ev, Message):
                out.append(_arrow(ev, x_of[ev.src], x_of[ev.dst], yy))
            else:
                out.append(_note(ev, x_of[ev.lane], yy))
        y += n * ROW_H
    out.append("</svg>")
    return "".join(out)


def _arrow(m: Message, x1: int, x2: int, y: int) -> str:
    direction = 1 if x2 >= x1 else -1
    tip = x2 - direction * 3
    head = f"{tip},{y} {tip - direction * 10},{y - 5} {tip - direction * 10},{y + 5}"
    dash = ' stroke-dasharray="5 3"' if m.response else ""
    mid = (x1 + x2) // 2
    return (f'<g class="msg" data-step="{m.step}" data-from="{_e(m.src)}" data-to="{_e(m.dst)}" '
            f'data-kind="{"response" if m.response else "request"}"><title>{_e(m.label)}</title>'
            f'<line x1="{x1}" y1="{y}" x2="{tip - direction * 8}" y2="{y}" stroke="#111"{dash} stroke-width="1.5"/>'
            f'<polygon points="{head}" fill="#111"/>'
            f'<text class="lbl" x="{mid}" y="{y - 5}" text-anchor="middle">{_e(m.label)}</text></g>')


def _note(n: Note, x: int, y: int) -> str:
    fill, stroke = ("#ffe4e6", "#be123c") if n.fault else ("#fef9c3", "#a16207")
    fits = (LANE_W - 14) // 6  # characters of 11px text that fit in a note as wide as a lane
    shown = n.text if len(n.text) <= fits else n.text[:fits - 1] + "\u2026"
    w = max(60, 6 * len(shown) + 14)
    return (f'<g class="note" data-step="{n.step}" data-lane="{_e(n.lane)}"><title>{_e(n.text)}</title>'
            f'<rect x="{x - w // 2}" y="{y - 15}" width="{w}" height="20" rx="3" fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{x}" y="{y - 1}" text-anchor="middle" style="font-size:11px">{_e(shown)}</text></g>')


# ---------------------------------------------------------------------------- the state table
def state_table(steps: Sequence[Step], loop: int | None = None, violation_step: int | None = None,
                extension: Any = None) -> str:
    """The state at every step: the columns of ``check``'s counterexample table, changed cells
    marked ``chg``, a dead broker's ``dead``, the step where a property broke ``bad``."""
    first = next(st.state for st in steps if st.state is not None)
    heads = tables.state_headers(first, extension)
    out = ['<table class="states"><thead><tr><th>#</th><th>action</th>']
    out += [f"<th>{_e(h)}</th>" for h in heads]
    out.append("</tr></thead><tbody>")
    prev: list[str] | None = None
    for n, st in enumerate(steps):
        action = "(initial state)" if st.action is None else str(st.action)
        mark = f"{tables.LOOP_MARK} {n}" if loop is not None and n == loop else str(n)
        row = ' class="bad"' if n == violation_step else ""
        out.append(f"<tr{row}><td>{_e(mark)}</td><td class=\"act\">{_e(action)}</td>")
        if st.state is None:
            out.append(f'<td class="bad" colspan="{len(heads)}">illegal transition ({NAMES.OnlyValidTransitions})</td></tr>')
            continue
        cells, dead = tables.state_cells(st.state, extension)
        for i, c in enumerate(cells):
            cls = "chg" if prev is not None and prev[i] != c else "dead" if dead[i] else ""
            out.append(f'<td class="{cls}">{_e(c)}</td>' if cls else f"<td>{_e(c)}</td>")
        out.append("</tr>")
        prev = cells
    if loop is not None:
        last = len(steps) - 1
        what = "(stutters forever)" if loop == last else f"(back to step {loop}, forever)"
        out.append(f'<tr><td>{tables.LOOP_MARK}</td><td class="act" colspan="{len(heads) + 1}">{_e(what)}</td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


# ---------------------------------------------------------------------------- the page
_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#111;background:#fff}
h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.verdict{padding:10px 14px;border-radius:6px;font-weight:bold;font-size:16px}
.verdict.ok{background:#dcfce7;color:#14532d}.verdict.fail{background:#fee2e2;color:#7f1d1d}
.verdict.unknown{background:#fef9c3;color:#713f12}
.details{margin:6px 0 0 2px}.scroll{overflow-x:auto}
table{border-collapse:collapse;font:12px monospace}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;
white-space:nowrap}th{background:#f3f4f6}td.chg{background:#fef08a}td.dead{color:#b91c1c}
tr.bad td.act{color:#b91c1c;font-weight:bold}td.bad{background:#fee2e2;color:#7f1d1d;font-weight:bold}pre{background:#f8fafc;padding:8px;font-size:12px}
dl.figures{display:grid;grid-template-columns:max-content auto;gap:2px 14px}dt{font-weight:bold}dd{margin:0}
"""


def _config_table(cfg: Config) -> str:
    """Every configuration key (model/config.py's settings: sub-tables flattened to
    ``faults.crashes``), values as JSON."""
    body = "".join(f"<tr><td>{_e(s.name)}</td><td>{_e(json.dumps(s.value))}</td></tr>" for s in settings(cfg))
    return f'<table class="config"><thead><tr><th>key</th><th>value</th></tr></thead><tbody>{body}</tbody></table>'


def _variant_section(v: Any) -> str:
    """Which change was checked: the variant's class, docstring, file and SHA-256, and its source
    (folded), so a page read later still says what it is about."""
    where = f" from <code>{_e(v.path)}</code>" if v.path else ""
    out = [f'<section id="variant"><h2>Variant</h2><p><b>{_e(v.name)}</b>{where}, '
           f"SHA-256 <code>{_e(v.sha256)}</code></p>"]
    if v.doc:
        out.append(f"<p>{_e(v.doc)}</p>")
    if v.source:
        out.append(f"<details><summary>source ({len(v.source.splitlines())} lines)</summary>"
                   f"<pre>{_e(v.source)}</pre></details>")
    out.append("</section>")
    return "".join(out)


def render_report(r: Report) -> str:
    """The whole page as one string."""
    parts = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
             '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
             f"<title>isrcheck report: {_e(r.title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>isrcheck report: {_e(r.title)}</h1>",
             f'<section id="verdict"><div class="verdict {_e(r.verdict_class)}">{_e(r.verdict)}</div>']
    if r.details:
        parts.append('<div class="details">' + "<br>".join(_e(d) for d in r.details) + "</div>")
    parts.append("</section>")
    if r.variant is not None:
        parts.append(_variant_section(r.variant))
    parts.append('<section id="sequence"><h2>Message sequence</h2>')
    if r.steps and len(r.steps) > 1:
        if r.trace_title:
            parts.append(f"<p>{_e(r.trace_title)}</p>")
        parts.append(f'<div class="scroll">{sequence_svg(r.steps, r.violation_step)}</div>')
    else:
        parts.append("<p>No counterexample: there is no behaviour to draw.</p>")
    parts.append("</section>")
    if r.steps:
        parts.append('<section id="states"><h2>State at every step</h2>'
                     "<p>Per partition the replica list (AR), leader, ISR and leader epoch in ZooKeeper and the "
                     "acknowledged writes; per broker each replica's log (<code>m2@e1</code>: record 2 appended "
                     "in leader epoch 1), log end offset and high watermark. Yellow: changed since the previous "
                     "step; red: the broker is down.</p>"
                     f'<div class="scroll">{state_table(r.steps, r.loop, r.violation_step, r.extension)}</div></section>')
    parts.append('<section id="configuration"><h2>Configuration</h2>'
                 f"<p><code>{_e(tables.config_line(r.config))}</code></p>"
                 f"{_config_table(r.config)}</section>")
    parts.append(f'<section id="coverage"><h2>{_e(r.coverage_title)}</h2>')
    if r.figures:
        parts.append('<dl class="figures">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in r.figures)
                     + "</dl>")
    parts.append('<table class="coverage"><thead><tr><th>action</th><th>times taken</th></tr></thead><tbody>')
    for name, count in sorted(r.coverage.items()):
        parts.append(f"<tr><td>{_e(name)}</td><td>{count:,}</td></tr>")
    if not r.coverage:
        parts.append('<tr><td colspan="2">(no action was taken)</td></tr>')
    parts.append("</tbody></table></section>")
    parts.append(f"<footer><p>isrcheck {_e(__version__)}</p></footer></body></html>\n")
    return "".join(parts)


def trace_coverage(steps: Sequence[Step]) -> dict[str, int]:
    """Actions taken along a trace, by name."""
    return dict(Counter(getattr(st.action, "name", str(st.action)) for st in steps if st.action is not None))
