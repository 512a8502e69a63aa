"""ControlZ in a real headless Chromium (Debian's, driven by Playwright): change a scope's
log level and a knob on the pages, and read them back on the page, as JSON and in the
server itself. Every page draws without a script error or a blocked resource, and the
docs' screenshot of it is taken by the same code ``make docs-screenshots`` runs (here into
the test's temporary directory, never the source tree)."""

from __future__ import annotations

import importlib.metadata
import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, ConsoleMessage, Error, Page, async_playwright, expect

from pilothouse.logscopes import scope_names
from tests.e2e.controlz_screenshot import HEIGHT, WIDTH, png_size, screenshot
from tests.integration.serve_in_process import ServeInProcess, serve_in_process, service_entry

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is missing: run `make browser`"
)


@pytest.fixture(autouse=True)
def restore_log_scopes() -> Iterator[None]:
    loggers = [logging.getLogger("pilothouse")] + [
        logging.getLogger(f"pilothouse.{scope}") for scope in scope_names()[1:]
    ]
    saved = [(logger, logger.level) for logger in loggers]
    logging.getLogger("pilothouse").setLevel(logging.INFO)
    yield
    for logger, level in saved:
        logger.setLevel(level)


@pytest.fixture
async def plane(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AsyncIterator[ServeInProcess]:
    (tmp_path / "alpha.yaml").write_text(service_entry("alpha"))
    monkeypatch.setenv("CTRLZ_BROWSER_SECRET_TOKEN", "do-not-show")
    async with serve_in_process(monkeypatch, tmp_path) as running:
        yield running


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            yield launched
        finally:
            await launched.close()


class Problems:
    """Console errors and uncaught exceptions of a page (a CSP violation is one)."""

    def __init__(self, page: Page) -> None:
        self.seen: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", self._error)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.seen.append(message.text)

    def _error(self, error: Error) -> None:
        self.seen.append(str(error))


def base(plane: ServeInProcess) -> str:
    return f"http://127.0.0.1:{plane.bound.ctrlz_port}"


async def test_a_scopes_log_level_changed_on_the_page(
    plane: ServeInProcess, browser: Browser
) -> None:
    xds = logging.getLogger("pilothouse.xds")
    xds.setLevel(logging.NOTSET)
    page = await browser.new_page()
    problems = Problems(page)
    await page.goto(f"{base(plane)}/scopez")
    row = page.locator('tr[data-scope="xds"]')
    level = row.locator('select[name="output_level"]')
    await expect(level).to_have_value("info")
    await expect(row.locator(".note")).to_have_text("inherited")

    await level.select_option("debug")
    await row.locator("button.apply").click()
    await expect(page.locator("#status")).to_have_text(
        "xds: output level debug, stack traces none, callers off"
    )
    await expect(level).to_have_value("debug")
    await expect(row.locator(".note")).to_have_count(0)

    assert xds.getEffectiveLevel() == logging.DEBUG
    answer = await plane.ctrlz("GET", "/scopej/xds")
    assert (answer.body["output_level"], answer.body["inherited"]) == ("debug", False)

    await page.reload()
    await expect(page.locator('tr[data-scope="xds"] select[name="output_level"]')).to_have_value(
        "debug"
    )
    other = page.locator('tr[data-scope="push"] select[name="output_level"]')
    await expect(other).to_have_value("info")
    assert problems.seen == []


async def test_a_knob_changed_on_the_page_and_a_value_it_refuses(
    plane: ServeInProcess, browser: Browser
) -> None:
    page = await browser.new_page()
    problems = Problems(page)
    await page.goto(f"{base(plane)}/knobz")
    row = page.locator('tr[data-knob="debounce.after"]')
    value = row.locator('input[name="value"]')
    await expect(value).to_have_value("0.1")

    await value.fill("0.75")
    await row.locator("button.apply").click()
    status = page.locator("#status")
    await expect(status).to_have_text("debounce.after: 0.1 → 0.75")
    await expect(row.locator('input[name="value"]')).to_have_value("0.75")
    assert plane.discovery.settings.debounce.debounce_after == 0.75
    answer = await plane.request("GET", "/admin/knobs/debounce.after")
    assert answer.body["value"] == 0.75

    await row.locator('input[name="value"]').fill("soon")
    await row.locator("button.apply").click()
    await expect(status).to_have_text(
        "debounce.after: expected seconds: a number of 0 or more (0.5) or a duration "
        '(100ms, 2s, 1m); got "soon"'
    )
    await expect(status).to_have_class("failed")
    assert plane.discovery.settings.debounce.debounce_after == 0.75
    refused = "Failed to load resource: the server responded with a status of 400 (Bad Request)"
    assert problems.seen == [refused], "the browser notes the refused request, nothing else"
    problems.seen.clear()

    eds = page.locator('tr[data-knob="debounce.eds"]')
    await eds.locator('select[name="value"]').select_option("false")
    await eds.locator("button.apply").click()
    await expect(status).to_have_text("debounce.eds: true → false")
    assert plane.discovery.settings.debounce.eds_debounce is False
    assert problems.seen == []


async def test_every_topic_page_draws_its_data(
    plane: ServeInProcess, browser: Browser, tmp_path: Path
) -> None:
    shot = tmp_path / "controlz.png"
    await screenshot(browser, base(plane), shot)
    assert png_size(shot.read_bytes()) == (WIDTH, HEIGHT)

    page = await browser.new_page()
    problems = Problems(page)
    await page.goto(base(plane))
    await expect(page.locator("dl.topics dt")).to_have_count(7)

    await page.click("nav >> text=Memory")
    await expect(page.locator('tr[data-key="residentBytes"] td')).to_contain_text("MiB")
    await page.click("text=Collect garbage now")
    await expect(page.locator("#status")).to_contain_text("unreachable objects")

    await page.click("nav >> text=Process")
    pid = page.locator('tr[data-key="pid"] td')
    await expect(pid).to_have_text(f"{os.getpid():,}")

    await page.click("nav >> text=Environment")
    secret = page.locator('tr[data-name="CTRLZ_BROWSER_SECRET_TOKEN"] td')
    await expect(secret).to_have_text("<redacted>")
    assert "do-not-show" not in await page.content()

    await page.click("nav >> text=Command line")
    await expect(page.locator("ol.args li").first).to_be_visible()
    await page.click("nav >> text=Version")
    await expect(page.locator('tr[data-key="libraries.grpcio"] td')).to_have_text(
        importlib.metadata.version("grpcio")
    )
    assert problems.seen == []
