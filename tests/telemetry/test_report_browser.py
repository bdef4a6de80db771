"""The report renders in a real browser: headless Chromium opens the file and takes a screenshot.

Runs the steps of ``scripts/screenshot_report.py``. Skips when no Chromium binary is
found (``apt-get install -y chromium``, or point ``$CHROMIUM`` at one).
"""

from __future__ import annotations

import importlib.util
import re
import struct
import zlib
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("matplotlib", reason='plots need matplotlib: pip install "contextwright[report]"')

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "screenshot_report.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshot_report_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def png_facts(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the decompressed (still filtered) scanlines of a PNG, with the stdlib only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, width, height, idat = 8, 0, 0, b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    return width, height, zlib.decompress(idat)


def test_report_renders_in_headless_chromium(tmp_path):
    script = load_script()
    chromium = script.find_chromium()
    if chromium is None:
        pytest.skip("no Chromium binary found ($CHROMIUM, /usr/bin/chromium or chromium on PATH); apt-get install -y chromium")

    html_path = script.build_demo_report(tmp_path / "report.html", turns=12)
    html = html_path.read_text(encoding="utf-8")
    # Check: the page asks the browser for nothing: no URL of any scheme, no script.
    assert not re.search(r"(?i)(https?:|ftp:|<script|<link|@import)", html)
    assert not [ref for ref in re.findall(r'(?:src|href)="([^"]*)"', html) if not ref.startswith("#")]

    png = script.screenshot(html_path, tmp_path / "report.png", chromium=chromium)
    data = png.read_bytes()
    width, height, pixels = png_facts(data)
    # Check: a full-size screenshot that is far from one flat colour.
    assert (width, height) == (1280, 2000)
    assert len(data) > 50_000, f"screenshot is only {len(data)} bytes"
    assert len(set(pixels)) > 64, "the screenshot is (nearly) a single colour"
