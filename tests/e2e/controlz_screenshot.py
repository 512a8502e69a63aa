"""The ControlZ screenshot of the docs' debugging guide (``docs/img/controlz.png``), taken in
Debian's headless Chromium by the code the browser test runs.

:func:`screenshot` opens ControlZ's log-scope page at a fixed size, waits until it has
drawn every scope, and writes the page as a PNG. ``tests/e2e/test_controlz_browser.py``
calls it on its own server, writing into its temporary directory; ``make
docs-screenshots`` runs this module (``python -m tests.e2e.controlz_screenshot OUT``),
which starts ``serve`` in this process over a one-ServiceEntry mesh, as the test's
fixture does, and writes OUT.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import sys
import tempfile
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright, expect

from pilothouse.logscopes import scope_names
from tests.integration.serve_in_process import serve_in_process, service_entry

CHROMIUM = Path("/usr/bin/chromium")
WIDTH, HEIGHT = 1100, 720
PAGE = "/scopez"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


async def screenshot(browser: Browser, base_url: str, path: Path) -> None:
    """ControlZ's scope page at ``base_url``, drawn whole, written to ``path``."""
    page = await browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        await page.goto(f"{base_url}{PAGE}")
        await expect(page.locator("tr[data-scope]")).to_have_count(len(scope_names()))
        await page.screenshot(path=str(path))
    finally:
        await page.close()


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height, read from its IHDR chunk."""
    if not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def write(out: Path) -> None:
    logging.getLogger("pilothouse").setLevel(logging.INFO)  # serve's default level
    with tempfile.TemporaryDirectory() as directory, pytest.MonkeyPatch.context() as patch:
        (Path(directory) / "alpha.yaml").write_text(service_entry("alpha"))
        async with serve_in_process(patch, Path(directory)) as running, async_playwright() as p:
            browser = await p.chromium.launch(executable_path=str(CHROMIUM))
            try:
                await screenshot(browser, f"http://127.0.0.1:{running.bound.ctrlz_port}", out)
            finally:
                await browser.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.e2e.controlz_screenshot OUT.png")
    asyncio.run(write(Path(sys.argv[1])))
    print(f"wrote {sys.argv[1]}")
