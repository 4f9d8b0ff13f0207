"""`isrcheck report` rendered by a real browser: headless Chromium, network disabled.

Chromium comes from Debian's package (``scripts/chromium.sh``, run by ``make system-deps``); the
fixture runs the script, which installs it when it is missing, and fails (never skips) when it
cannot. The screenshot is decoded here with zlib (Pillow is not a dependency) and the lanes of the
sequence diagram are found by the solid colour of their head bands, left to right.
"""
from __future__ import annotations

import re
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from isrcheck.render.html_report import BROKER_COLOURS, LANE_COLOURS

ROOT = Path(__file__).resolve().parents[2]
CRASH = 'brokers = 3\nmax_records = 1\n[faults]\ncrashes = 1\n'
WIDTH, HEIGHT = 1300, 700


@pytest.fixture(scope="module")
def chromium() -> str:
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "chromium.sh"), "path"], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"scripts/chromium.sh could not provide Chromium (make system-deps installs it): "
                    f"{proc.stderr.strip()}")
    return proc.stdout.strip().splitlines()[-1]


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _c, _f, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                up_left = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prev[i], up_left)) & 0xFF
        rows.append(bytes(line) if bpp == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3))
        prev = line
    return width, height, rows


def _rgb(colour: str) -> bytes:
    return bytes.fromhex(colour.lstrip("#"))


def test_the_lanes_show_in_a_headless_browser(cli, tmp_path, chromium):
    cfg = tmp_path / "crash.toml"
    cfg.write_text(CRASH)
    page = tmp_path / "report.html"
    assert cli("report", "--config", str(cfg), "-o", str(page)).exit_code == 1  # a safety failure, page written
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-background-networking", "--force-device-scale-factor=1", "--host-resolver-rules=MAP * ~NOTFOUND",
         f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}",
         page.as_uri()],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    width, height, rows = read_png(shot.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    lanes = [LANE_COLOURS["controller"], LANE_COLOURS["zk"], *BROKER_COLOURS[:3], LANE_COLOURS["clients"]]
    wanted = {_rgb(c): c for c in lanes}
    count = {c: 0 for c in lanes}
    xsum = {c: 0 for c in lanes}
    for row in rows:
        for x in range(width):
            c = wanted.get(row[3 * x:3 * x + 3])
            if c is not None:
                count[c] += 1
                xsum[c] += x
    # each head band is 160 x 34 px of solid colour, less its white title
    assert all(n >= 3000 for n in count.values()), count
    centres = [xsum[c] / count[c] for c in lanes]
    assert centres == sorted(centres), centres  # controller, ZooKeeper, brokers 1-3, clients: left to right
