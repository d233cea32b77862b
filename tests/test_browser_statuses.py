"""A rendered page's scripts see each answer's status line as Chromium alone shows it.

A server answers a page's fetch()es with status lines outside 100-599 (``HTTP/1.1 0``,
``020``, ``2000``), with a reason phrase of its own or none, with no status or one that is no
number, and one of another origin with no CORS header. The page writes what its scripts saw
(status, ok, statusText, or the failure) into its DOM; Chromium loads it on its own, and the
crawl renders it through its browser: the two DOMs say the same.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from raw_server import RawRequest, RawServer
from test_browser import CHROMIUM
from test_browser_limits import doms

try:
    from playwright.async_api import async_playwright
except ImportError:  # pragma: no cover - CI installs it
    async_playwright = None  # type: ignore[assignment]

STATUS_LINES = {
    "/zero": b"HTTP/1.1 0 Zero",
    "/twenty": b"HTTP/1.1 020 Odd",
    "/big": b"HTTP/1.1 2000 Big",
    "/fine": b"HTTP/1.1 200 Fine",
    "/none": b"HTTP/1.1",
    "/word": b"HTTP/1.1 abc",
    "/bare": b"HTTP/1.1 200",
    "/spaced": b"HTTP/1.1 200 ",
    "/odd": b"HTTP/1.1 200 abc\tdef",
    "/glued": b"HTTP/1.1 200abc",
    "/signed": b"HTTP/1.1 +200 Plus",
    "/http10": b"HTTP/1.0 404",
}
"""Each path's status line."""
PAGE = (
    "<p id=seen>waiting</p><script>"
    "const asked = ['/zero', '/twenty', '/big', '/fine', '/none', '/word', '/bare', '/spaced', '/odd',"
    " '/glued', '/signed', '/http10',"
    " 'http://localhost:' + location.port + '/other'];"
    "Promise.all(asked.map(path => fetch(path).then(r => [r.status, r.ok, r.statusText].join(' '),"
    " e => 'failed'))).then(seen => document.getElementById('seen').textContent = seen.join(', '))"
    "</script>"
)
"""A page whose script fetches each path and writes what it saw, in order."""
SEEN = re.compile(r"<p id=\"?seen\"?>([^<]*)</p>")


async def answer(request: RawRequest, writer: Any) -> None:
    if request.path == "/":
        head, body, kind = b"HTTP/1.1 200 OK", PAGE.encode(), b"text/html"
    else:
        head, body, kind = STATUS_LINES.get(request.path, b"HTTP/1.1 200 OK"), b"{}", b"application/json"
    writer.write(head + b"\r\nContent-Type: " + kind + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)


@pytest.fixture
async def server() -> AsyncIterator[RawServer]:
    started = await RawServer(answer).start()
    yield started
    await started.close()


async def seen_by_chromium(url: str) -> str:
    """What the page at ``url`` wrote of its fetch()es, loaded by Chromium on its own."""
    assert async_playwright is not None
    async with async_playwright() as playwright:
        args = ["--headless", "--no-sandbox"]
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        page = await browser.new_page()
        await page.goto(url, wait_until="networkidle")
        seen = await page.text_content("#seen")
        await browser.close()
    return seen or ""


async def test_a_pages_scripts_see_each_status_line_as_chromium_shows_it(server, run_crawl):
    """Chromium shows a fetch() a status of 0, 20 or 2000 as it came (not ok), a reason phrase as
    it came, none (an empty statusText) where the status line names none or its status is no
    number (``HTTP/1.1 abc``, ``+200``: 200), "OK" where it has no status at all, and refuses
    another origin's answer that names no CORS header. The crawl's browser was given 200 for 0,
    Playwright's own phrase for each status ("OK", "Not Found" where the server named none),
    and, for the other origin, headers Playwright adds that allow it."""
    chromium = await seen_by_chromium(server.url("/"))
    assert chromium.endswith("failed"), chromium
    root = (await run_crawl(server.url("/"), browser="always", chromium=CHROMIUM, scope="any")).snapshot.root
    found = SEEN.search(doms(root)[server.url("/")])
    assert found is not None
    assert found.group(1) == chromium
