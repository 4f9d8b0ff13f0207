"""specs/ against the code: generated sections, names, configuration keys and links.

``python tests/test_specs.py`` rewrites the generated sections of the chapters (see
``isrcheck.model.vocabulary.GENERATED``) from the code and the vocabulary files.
"""
from __future__ import annotations

import dataclasses
import re
import sys
import tomllib
from pathlib import Path

import pytest

from isrcheck.invariants import ALL_PROPERTIES
from isrcheck.model.actions import APPLY
from isrcheck.model.config import Config, Faults, Operations
from isrcheck.model.vocabulary import GENERATED, extract, load_actions, regenerate, render_state_machines

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
CHAPTERS = [
    "00-scope.md", "01-vocabulary.md", "02-state-machines.md", "03-configuration.md",
    "04-controller.md", "05-replication.md", "06-properties.md", "07-checker.md",
]


def read(name: str) -> str:
    return (SPECS / name).read_text(encoding="utf-8")


def _without_code(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def headings(text: str) -> list[tuple[int, str]]:
    """(level, text) of every markdown heading outside fenced code."""
    return [(len(m.group(1)), m.group(2).strip())
            for m in re.finditer(r"^(#{1,6})\s+(.+)$", _without_code(text), flags=re.M)]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading (before de-duplication)."""
    s = heading.strip().lower().replace("`", "")
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(text: str) -> set[str]:
    out: set[str] = set()
    counts: dict[str, int] = {}
    for _, h in headings(text):
        a = slug(h)
        n = counts.get(a, 0)
        counts[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    return out


def section(text: str, anchor: str) -> str:
    """The body of the heading with this anchor, up to the next heading of the same or higher level."""
    hs = list(re.finditer(r"^(#{1,6})\s+(.+)$", text, flags=re.M))
    for i, m in enumerate(hs):
        if slug(m.group(2)) == anchor:
            level = len(m.group(1))
            end = len(text)
            for n in hs[i + 1:]:
                if len(n.group(1)) <= level:
                    end = n.start()
                    break
            return text[m.end():end]
    raise KeyError(anchor)


# ---------------------------------------------------------------------------- chapters and generated parts
def test_the_chapters_exist_and_start_with_their_number() -> None:
    present = sorted(p.name for p in SPECS.glob("[0-9][0-9]-*.md"))
    assert present == CHAPTERS
    for name in CHAPTERS:
        first = read(name).splitlines()[0]
        assert first.startswith(f"# {name[:2]} "), f"{name}: first line is {first!r}"


@pytest.mark.parametrize("chapter, section_name",
                         [(c, s) for c, sections in GENERATED.items() for s in sections])
def test_generated_section_is_current(chapter: str, section_name: str) -> None:
    doc = read(chapter)
    expected = GENERATED[chapter][section_name]().strip("\n")
    assert extract(doc, section_name) == expected, (
        f"specs/{chapter}: the generated section {section_name!r} is out of date; "
        f"run `python tests/test_specs.py` to regenerate it"
    )


def test_state_machine_section_names_every_state_and_move() -> None:
    from isrcheck.model.tables import PARTITION_VALID_PREVIOUS, REPLICA_VALID_PREVIOUS
    from isrcheck.model.vocabulary import transitions

    text = render_state_machines()
    for table in (PARTITION_VALID_PREVIOUS, REPLICA_VALID_PREVIOUS):
        for source, target in transitions(table):
            assert f"    {source} --> {target}\n" in text + "\n"
    assert text.count(" --> ") == sum(len(v) for v in PARTITION_VALID_PREVIOUS.values()) + sum(
        len(v) for v in REPLICA_VALID_PREVIOUS.values())


# ---------------------------------------------------------------------------- properties
def test_every_property_has_a_heading_with_exactly_its_name() -> None:
    hs = {h for level, h in headings(read("06-properties.md")) if level == 2}
    missing = [p.name for p in ALL_PROPERTIES if p.name not in hs]
    assert not missing, f"06-properties.md has no '## NAME' heading for {missing}"


def test_every_property_heading_is_a_property() -> None:
    names = {p.name for p in ALL_PROPERTIES}
    extra = [h for level, h in headings(read("06-properties.md"))
             if level == 2 and re.fullmatch(r"[A-Z][A-Za-z]+", h) and h not in names]
    assert not extra, f"headings that look like properties but are not in ALL_PROPERTIES: {extra}"


@pytest.mark.parametrize("prop", ALL_PROPERTIES, ids=lambda p: p.name)
def test_property_spec_link_resolves(prop) -> None:
    assert prop.spec == f"06-properties.md#{slug(prop.name)}"
    assert slug(prop.name) in anchors(read("06-properties.md"))


# ---------------------------------------------------------------------------- actions
@pytest.mark.parametrize("name", sorted(APPLY))
def test_action_spec_link_resolves_and_names_the_action(name: str) -> None:
    spec = load_actions()[name]["spec"]
    chapter, anchor = spec.split("#")
    text = read(chapter)
    assert anchor in anchors(text), f"{name}: {spec} has no such heading"
    assert f"`{name}" in section(text, anchor), f"{name}: not mentioned in {spec}"


# ---------------------------------------------------------------------------- configuration
def _config_rows() -> dict[str, list[str]]:
    """First-column key -> cells, from the 03 tables whose header has a default column."""
    rows: dict[str, list[str]] = {}
    header: list[str] = []
    for line in read("03-configuration.md").splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        if "default" in header and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells
    return rows


def _documented_keys() -> set[str]:
    keys = {f.name for f in dataclasses.fields(Config)}
    keys |= {f"faults.{f.name}" for f in dataclasses.fields(Faults)}
    keys |= {f"operations.{f.name}" for f in dataclasses.fields(Operations)}
    return keys


def test_every_configuration_key_is_documented() -> None:
    missing = sorted(_documented_keys() - set(_config_rows()))
    assert not missing, f"03-configuration.md has no row for {missing}"


def test_every_documented_key_exists() -> None:
    stale = sorted(set(_config_rows()) - _documented_keys())
    assert not stale, f"03-configuration.md documents keys the code does not have: {stale}"


def test_documented_defaults_match_the_code() -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(Config) if f.default is not dataclasses.MISSING}
    defaults |= {f"faults.{f.name}": f.default for f in dataclasses.fields(Faults)}
    defaults |= {f"operations.{f.name}": f.default for f in dataclasses.fields(Operations)}
    checked = 0
    for key, cells in _config_rows().items():
        text = cells[2]
        m = re.fullmatch(r"`([^`]+)`", text)
        if key not in defaults or not m:
            continue
        try:
            value = tomllib.loads(f"v = {m.group(1)}")["v"]
        except tomllib.TOMLDecodeError:
            continue  # an expression such as min(3, brokers)
        want = defaults[key]
        if isinstance(want, tuple):
            value = tuple(value)
        assert value == want, f"03-configuration.md: default of {key} is {text}, the code says {want!r}"
        checked += 1
    assert checked >= 12


# ---------------------------------------------------------------------------- links
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_relative_links_resolve(chapter: str) -> None:
    text = read(chapter)
    for target in re.findall(r"\]\(([^)\s]+)\)", _without_code(text)):
        if re.match(r"^[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        file = (SPECS / path).resolve() if path else SPECS / chapter
        assert file.exists(), f"{chapter}: link to missing {target}"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file.read_text(encoding="utf-8")), f"{chapter}: no anchor {target}"


def _regenerate() -> None:
    for chapter, renderers in GENERATED.items():
        path = SPECS / chapter
        old = path.read_text(encoding="utf-8")
        new = regenerate(old, renderers)
        if new != old:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote specs/{chapter}")


if __name__ == "__main__":
    _regenerate()
    sys.exit(0)
