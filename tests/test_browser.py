"""The mirror in a real browser: headless Chromium opens it from file:// and through serve.

The origin server is stopped before browsing, and every request the browser
makes is recorded: each must be served from the snapshot, none may fail, and
none may go to the original site.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestServer
from conftest import Site, crawled_into
from demo_site import build_demo_site

from archiver.mirror.build import build_mirror
from archiver.mirror.serve import make_app

CHROMIUM = os.environ.get("ARCHIVER_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

try:
    from playwright.async_api import async_playwright
except ImportError:  # pragma: no cover - CI installs it
    async_playwright = None  # type: ignore[assignment]

if os.environ.get("CI") != "true" and (async_playwright is None or not os.path.exists(CHROMIUM)):
    pytest.skip("Chromium or Playwright is not installed (CI=true runs this)", allow_module_level=True)

# Checked on every page: images decoded, styles and scripts applied.
PAGE_STATE = """() => ({
  images: Array.from(document.images).map(i => [i.id || i.src, i.complete && i.naturalWidth > 0]),
  js: document.documentElement.dataset.js || null,
  background: getComputedStyle(document.body).backgroundImage,
  h1: document.querySelector('h1') && getComputedStyle(document.querySelector('h1')).color,
})"""


class Recorder:
    """Every request of a browser page, and those that failed."""

    def __init__(self, page: Any) -> None:
        self.requests: list[str] = []
        self.failed: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("requestfailed", lambda request: self.failed.append(f"{request.url} {request.failure}"))
        page.on("response", self._note_failure)

    def _note_failure(self, response: Any) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.url} HTTP {response.status}")


# The tests only read the snapshot and open pages in new tabs: one browser and one crawl serve
# them all, on the module's event loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> Any:
    assert async_playwright is not None
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        await launched.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A crawled and mirrored demo site, its origin server already stopped."""
    site = Site()
    await build_demo_site(site).start()
    origin = site.url("/").rstrip("/")
    try:
        result = await crawled_into(tmp_path_factory.mktemp("browsed") / "snap", site.url("/"))
    finally:
        await site.close()
    build_mirror(result.snapshot.root)
    return result.snapshot.root, origin


async def visit(browser: Any, url: str) -> tuple[Recorder, dict[str, Any], list[str]]:
    page = await browser.new_page()
    recorder = Recorder(page)
    await page.goto(url, wait_until="load")
    await page.wait_for_load_state("networkidle")
    state = await page.evaluate(PAGE_STATE)
    links = await page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    await page.close()
    return recorder, state, links


def assert_page_complete(recorder: Recorder, state: dict[str, Any], allowed_prefix: str, origin: str) -> None:
    assert recorder.failed == []
    assert recorder.requests, "the page made no request at all"
    for url in recorder.requests:
        assert url.startswith(allowed_prefix), f"request left the snapshot: {url}"
        assert not url.startswith(origin)
    assert all(ok for _image, ok in state["images"]), state["images"]
    assert state["js"] == "ran"
    assert "bg.png" in state["background"]


async def test_mirror_from_file_urls(browser: Any, snapshot: tuple[Path, str]) -> None:
    root, origin = snapshot
    host = origin.removeprefix("http://").replace(":", "+")
    start = (root / "mirror" / host / "index.html").as_uri()
    recorder, state, links = await visit(browser, start)
    assert_page_complete(recorder, state, (root / "mirror").as_uri(), origin)
    assert len(state["images"]) == 4
    assert state["h1"] == "rgb(0, 128, 0)"  # from the @import-ed stylesheet
    assert any(url.endswith("/frame.html") for url in recorder.requests)
    # Click through: every local page opens complete, and links outside are only the origin's.
    seen, queue = set(), [start]
    while queue:
        url = queue.pop().split("#")[0]
        if url in seen:
            continue
        seen.add(url)
        recorder, state, links = await visit(browser, url)
        assert_page_complete(recorder, state, (root / "mirror").as_uri(), origin)
        for link in links:
            assert link.startswith("file://"), f"{url} links to {link}"
            assert Path(unquote(link.removeprefix("file://").split("#")[0])).is_file(), link
            queue.append(link)
    assert len(seen) == 6  # every page but the framed one is reachable by links


async def test_index_from_file_url(browser: Any, snapshot: tuple[Path, str]) -> None:
    root, _origin = snapshot
    page = await browser.new_page()
    recorder = Recorder(page)
    await page.goto((root / "index.html").as_uri())
    assert "Demo home" in await page.content()
    await page.fill("#filter", "search")
    visible = await page.eval_on_selector_all("#pages tbody tr", "rows => rows.filter(r => !r.hidden).length")
    assert visible == 1
    await page.fill("#filter", "")
    await page.click("text=Docs 2")
    await page.wait_for_load_state("load")
    assert page.url.endswith("/docs/page2.html")
    assert await page.title() == "Docs 2"
    assert recorder.failed == []
    assert all(url.startswith("file://") for url in recorder.requests)
    await page.close()


async def test_mirror_through_serve(browser: Any, snapshot: tuple[Path, str]) -> None:
    root, origin = snapshot
    server = TestServer(make_app(root), host="127.0.0.1")
    await server.start_server()
    try:
        base = f"http://127.0.0.1:{server.port}/"
        host = origin.removeprefix("http://").replace(":", "+")
        for path in (
            "",
            f"mirror/{host}/",
            f"mirror/{host}/docs/page2.html",
            f"mirror/{host}/search@q=a%20b&page=2.html",
        ):
            recorder, state, links = await visit(browser, base + path)
            if path == "":
                assert recorder.failed == [] and links
                continue
            assert_page_complete(recorder, state, base, origin)
            assert all(link.startswith((base, origin)) for link in links)
    finally:
        await server.close()
