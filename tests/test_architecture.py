"""ARCHITECTURE.md against the tree, so that the page cannot go stale silently.

The page describes every module in tables. A *module table* is a Markdown table whose first header
cell is a package folder in backticks (`` `engine/` ``): the first cell of each of its rows names
one or more modules, in backticks, relative to that folder. The *C table* is the one whose first
header cell is ``C source``: its rows name C files from the checkout root, with their line count in
the second column. This test holds that

- every ``.py``, ``.c`` and ``.h`` file of the packages (the folders ``pyproject.toml`` maps to
  import names, tests and build output aside) is named in a module table or the C table, so a new
  module fails here until the page says what it is for;
- every module those tables name exists, so a moved or deleted one fails here too;
- every file path written anywhere on the page (in backticks, with a folder and an extension of a
  source or data file) exists;
- the line counts of the C table are the files' own, within a tenth (the page says how big the C is;
  a rewrite that doubles a file must say so);
- the table of invariants/symbolic/ is in the package's import order, as the page says;
- every link to a section of the page finds its heading.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "ARCHITECTURE.md"
#: what a module is: a source file of a package
SOURCE_SUFFIXES = (".py", ".c", ".h")
#: how far a stated line count may be from the file's own
LINE_TOLERANCE = 0.10

_BACKTICKED = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
#: a path worth checking wherever the page writes it: a folder, a name, a source or data suffix
_PATH = re.compile(r"^[\w.-]+(/[\w.-]+)+\.(py|c|h|toml|md)$")


def package_folders() -> list[str]:
    """The folders of the packages, as pyproject.toml maps them to import names."""
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return sorted(set(doc["tool"]["setuptools"]["package-dir"].values()))


def tree_modules() -> set[str]:
    """Every source file of the packages, as a path from the checkout root."""
    found = set()
    for folder in package_folders():
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in SOURCE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                found.add(path.relative_to(ROOT).as_posix())
    return found


def tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table of ``text``: its rows (the header first, the separator left out), each a
    list of cells."""
    out: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.append(cells)
        elif current:
            out.append(current)
            current = []
    return out


def named_modules(text: str) -> tuple[dict[str, str], dict[str, int]]:
    """The modules the page's tables name (path -> the table that names it) and the line counts
    its C table gives (path -> lines)."""
    named: dict[str, str] = {}
    lines: dict[str, int] = {}
    for table in tables(text):
        head = table[0][0]
        folder = _BACKTICKED.fullmatch(head)
        if folder and folder.group(1).endswith("/"):
            prefix = folder.group(1)
        elif head.startswith("C source"):
            prefix = ""
        else:
            continue
        for row in table[1:]:
            names = _BACKTICKED.findall(row[0])
            assert names, f"a row of the {head} table names no module: {row[0]!r}"
            for name in names:
                named[prefix + name] = head
                if not prefix:
                    lines[name] = int(row[1].replace(",", ""))
    return named, lines


def _without_module_cells(text: str) -> str:
    """``text`` without the first cells of the module tables, whose names are relative to the
    table's folder (the tests above check them); every other cell and line stays."""
    out, in_module_table = [], False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_module_table = False
        elif not in_module_table and line.startswith("| `") and line.split("|")[1].strip().endswith("/`"):
            in_module_table = True
        if in_module_table:
            line = "|".join(line.split("|")[2:])
        out.append(line)
    return "\n".join(out)


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_the_tables_parse_and_cover_every_package(page: str) -> None:
    """The reader below sees the page's tables (so the checks that follow are not vacuous): a
    module table for every package folder and a C table."""
    named, lines = named_modules(page)
    for folder in package_folders():
        assert any(path.startswith(folder + "/") for path in named), f"no module table for {folder}/"
    assert lines and all(path.endswith((".c", ".h")) for path in lines)


def test_every_module_of_the_tree_is_named(page: str) -> None:
    named, _ = named_modules(page)
    missing = sorted(tree_modules() - set(named))
    assert missing == [], ("modules ARCHITECTURE.md does not describe (add each to its package's "
                           f"module table, or the C table): {missing}")


def test_every_module_named_exists(page: str) -> None:
    named, _ = named_modules(page)
    gone = sorted(f"{path} (table {table})" for path, table in named.items() if not (ROOT / path).is_file())
    assert gone == [], f"ARCHITECTURE.md names modules that do not exist: {gone}"


def test_every_path_the_page_mentions_exists(page: str) -> None:
    prose = _without_module_cells(_FENCE.sub("", page))  # a fenced block is a drawing: its backticks pair with nothing
    mentioned = {m for m in _BACKTICKED.findall(prose) if _PATH.match(m)}
    assert "model/statehash.py" in mentioned  # the reader sees the page's paths
    gone = sorted(m for m in mentioned if not (ROOT / m).exists())
    assert gone == [], f"ARCHITECTURE.md mentions files that do not exist: {gone}"


def test_the_c_line_counts_are_the_files_own(page: str) -> None:
    _, lines = named_modules(page)
    wrong = {}
    for path, stated in lines.items():
        real = len((ROOT / path).read_text(encoding="utf-8").splitlines())
        if abs(real - stated) > LINE_TOLERANCE * real:
            wrong[path] = f"page {stated}, file {real}"
    assert wrong == {}, f"ARCHITECTURE.md's C line counts are stale: {wrong}"
    total = re.search(r"(\w+) hand-written C extensions, ([\d,]+) lines", page)
    assert total is not None, "the page no longer states how many lines of C there are"
    real_total = sum(len((ROOT / p).read_text(encoding="utf-8").splitlines()) for p in lines)
    assert abs(int(total.group(2).replace(",", "")) - real_total) <= LINE_TOLERANCE * real_total
    extensions = sum(1 for p in lines if p.endswith(".c"))
    assert total.group(1) == _COUNTS[extensions], f"the page counts {total.group(1)} C extensions, its table {extensions}"


_COUNTS = {6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}


def test_the_reader_catches_a_missing_and_a_gone_module() -> None:
    """The checks above fail when they should: a table without a module of the tree, and a table
    naming one that does not exist, are both seen."""
    text = ("| `engine/` | role |\n|---|---|\n| `core.py`, `no_such_module.py` | x |\n\n"
            "| C source | lines | what |\n|---|---|---|\n| `engine/_codec.c` | 7 | x |\n")
    named, lines = named_modules(text)
    assert set(named) == {"engine/core.py", "engine/no_such_module.py", "engine/_codec.c"}
    assert "engine/explore.py" in tree_modules() - set(named)
    assert not (ROOT / "engine/no_such_module.py").is_file()
    assert lines == {"engine/_codec.c": 7}
    assert _PATH.match("engine/core.py") and not _PATH.match("isrcheck/native__mypyc*.so")
    fenced = "```\n`a\n```\nsee `model/gone.py` and `x`\n"
    assert [m for m in _BACKTICKED.findall(_FENCE.sub("", fenced)) if _PATH.match(m)] == ["model/gone.py"]


def test_the_symbolic_table_keeps_the_import_order(page: str) -> None:
    """The page says its table of invariants/symbolic/ is in the order the modules import each
    other, the order the package's docstring lists (tests/invariants/test_symbolic_package.py
    holds the imports to it): the two lists are the same."""
    init = (ROOT / "invariants" / "symbolic" / "__init__.py").read_text(encoding="utf-8")
    listed = re.findall(r"^- ``(\w+)``:", init, flags=re.M)
    table = next(t for t in tables(page) if t[0][0] == "`invariants/symbolic/`")
    on_page = [Path(name).stem for row in table[1:] for name in _BACKTICKED.findall(row[0])]
    assert on_page == ["__init__", *listed]


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_within_the_page_has_its_heading(page: str) -> None:
    """A section renamed or dropped leaves no link pointing nowhere."""
    anchors = {_slug(h) for h in re.findall(r"^#+ (.+)$", _FENCE.sub("", page), flags=re.M)}
    assert _slug("The engine (`engine/`)") == "the-engine-engine"
    dangling = sorted(set(re.findall(r"\]\(#([\w-]+)\)", page)) - anchors)
    assert dangling == [], f"ARCHITECTURE.md links to sections it does not have: {dangling}"
