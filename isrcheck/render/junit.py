"""JUnit XML reports (``--junit FILE``) for CI systems that show test results: ``gate`` writes one
testcase per model, ``conform`` one per trace or per covered model.

The file is the common JUnit XML dialect CI tools read (Jenkins, GitLab, GitHub actions that
publish test reports)::

    <testsuites name="isrcheck gate" tests="3" failures="1" errors="0" skipped="0" time="1.234">
      <testsuite name="isrcheck gate" tests="3" failures="1" errors="0" skipped="0" time="1.234" timestamp="...">
        <testcase classname="isrcheck.gate" name="replication" time="0.012"/>
        <testcase classname="isrcheck.gate" name="hw-truncation" time="0.400">
          <failure type="mismatch" message="length: expected ...">length: expected ...</failure>
        </testcase>
      </testsuite>
    </testsuites>

A failure's ``message`` is the lines that explain it (for the gate: every mismatch with the
pinned expectation, liveness included), one per line; its text is the same lines, then the
command that reproduces it and the counterexample as plain text (``Case.body``), because a CI
page that shows only "length: expected 8, found 9" sends the reader to rerun everything. Written with the standard
library (xml.etree), so nothing is evaluated and every value is escaped.
"""
from __future__ import annotations

import datetime
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from isrcheck.model.config import ConfigError

__all__ = ["Case", "junit_xml", "write_junit"]


@dataclass
class Case:
    """One testcase: ``failures`` (lines) make it fail, ``error`` (one line) an error, ``skipped`` skipped."""

    name: str
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None
    #: what a reader needs to act on a failure beyond its one-line reasons: the command that
    #: reproduces it and the counterexample as text; below the reasons in the failure's body
    body: str = ""


def _seconds(s: float) -> str:
    return f"{max(s, 0.0):.3f}"


def junit_xml(suite: str, classname: str, cases: Sequence[Case], seconds: float | None = None) -> ET.ElementTree:
    """The report as an element tree: ``<testsuites>`` holding one ``<testsuite>`` named ``suite``."""
    total = sum(c.seconds for c in cases) if seconds is None else seconds
    counts = {"tests": str(len(cases)),
              "failures": str(sum(1 for c in cases if c.failures and c.error is None)),
              "errors": str(sum(1 for c in cases if c.error is not None)),
              "skipped": str(sum(1 for c in cases if c.skipped is not None and not c.failures and c.error is None)),
              "time": _seconds(total)}
    root = ET.Element("testsuites", {"name": suite, **counts})
    ts = ET.SubElement(root, "testsuite", {"name": suite, **counts,
                                           "timestamp": datetime.datetime.now().isoformat(timespec="seconds")})
    for c in cases:
        tc = ET.SubElement(ts, "testcase", {"classname": classname, "name": c.name, "time": _seconds(c.seconds)})
        if c.error is not None:
            el = ET.SubElement(tc, "error", {"type": "error", "message": c.error})
            el.text = c.error
        elif c.failures:
            text = "\n".join(c.failures)
            el = ET.SubElement(tc, "failure", {"type": "mismatch", "message": text})
            el.text = text + ("\n\n" + c.body if c.body else "")
        elif c.skipped is not None:
            ET.SubElement(tc, "skipped", {"message": c.skipped})
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: str | Path, suite: str, classname: str, cases: Sequence[Case],
                seconds: float | None = None) -> None:
    """Write the report to ``path``; a file that cannot be written is a one-line :class:`ConfigError`."""
    tree = junit_xml(suite, classname, cases, seconds)
    try:
        tree.write(path, encoding="utf-8", xml_declaration=True)
    except OSError as e:
        raise ConfigError(f"cannot write the JUnit report {path}: {e.strerror}") from None
