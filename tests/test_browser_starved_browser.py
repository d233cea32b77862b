"""The browser itself on a machine that leaves it no CPU, with real Chromium: a browser stopped
for a while is waited for, not called stuck, and one stopped for good is still caught.

As in test_browser_starved.py, starving is made certain: every process of the browser is
stopped (SIGSTOP) and let go (SIGCONT) only once the wait under test has passed its limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

from aiohttp import web
from browser_watch import BrowserWatch, children, subtree
from conftest import manifest_rows
from test_browser import CHROMIUM
from test_browser_limits import FETCHING_PAGE, doms

from archiver.crawling import browser_pool as pool_module
from archiver.crawling import render_attempts
from archiver.crawling.browser_pool import BrowserPool
from archiver.verify.verifier import verify_snapshot


def browser_processes() -> list[int]:
    """Every process of the browsers this process drives (under Playwright's driver), the
    driver itself left running."""
    found = []
    for driver in children(os.getpid()):
        for pid in subtree(driver)[1:]:
            with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as command:
                if b"chrom" in command.read():  # (OSError: a process that ended meanwhile)
                    found.append(pid)
    return found


@contextlib.contextmanager
def stopped_for(seconds: float) -> Iterator[list[int]]:
    """The browser's processes stopped now and let go ``seconds`` later (or on the way out)."""
    stopped = browser_processes()
    assert stopped
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)

    def let_go() -> None:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    timer = asyncio.get_running_loop().call_later(seconds, let_go)
    try:
        yield stopped
    finally:
        timer.cancel()
        let_go()


async def test_a_browser_the_machine_stops_for_longer_than_the_alive_wait_is_alive(monkeypatch):
    """A browser that got no CPU for 5 s was called stuck by alive() (a render that failed in one
    tab then replaced the browser, cutting the other tabs' renders). Now a browser that used no
    CPU is waited for, and found alive once the machine lets it run."""
    monkeypatch.setattr(pool_module, "ALIVE_TIMEOUT", 1.0)
    async with BrowserPool(CHROMIUM, tabs=1, user_agent="archiver-test") as pool:
        async with pool.tab() as tab:
            await tab.page.goto("about:blank")
        generation = pool.generation
        with stopped_for(pool_module.ALIVE_TIMEOUT + 2):
            began = time.monotonic()
            assert await pool.alive(generation)
            assert time.monotonic() - began >= pool_module.ALIVE_TIMEOUT + 2 - 0.5  # it waited
        assert pool.restarts == 0


async def test_a_browser_stopped_for_good_is_still_not_alive(monkeypatch):
    """Waiting for a browser the machine stops is bounded: one that never runs again is stuck."""
    monkeypatch.setattr(pool_module, "ALIVE_TIMEOUT", 0.5)
    monkeypatch.setattr(pool_module, "ALIVE_BOUND", 2.0)
    async with BrowserPool(CHROMIUM, tabs=1, user_agent="archiver-test") as pool:
        async with pool.tab() as tab:
            await tab.page.goto("about:blank")
        with stopped_for(30):
            began = time.monotonic()
            assert not await pool.alive(pool.generation)
            assert time.monotonic() - began < 10


async def test_a_tab_opened_while_the_browser_gets_no_cpu_opens(monkeypatch):
    """Opening a tab was given up after OPEN_TIMEOUT of wall time, and the page's render with it,
    though the browser only waited for the machine. Now it opens once the browser runs again."""
    monkeypatch.setattr(pool_module, "OPEN_TIMEOUT", 6.0)
    async with BrowserPool(CHROMIUM, tabs=2, user_agent="archiver-test") as pool:
        async with pool.tab() as tab:
            await tab.page.goto("about:blank")
        with stopped_for(pool_module.OPEN_TIMEOUT + 2):
            async with pool.tab() as opened:  # the second tab, opened now
                assert opened is not tab
                await opened.page.goto("about:blank")
        assert pool.restarts == 0


async def test_a_render_whose_browser_gets_no_cpu_past_the_slack_is_not_cut(site, run_crawl, monkeypatch):
    """The whole render was given up HANG_SLACK past the page's limit in wall time: a browser
    that the machine stopped for longer lost the page's DOM ("the render did not end within its
    time limit"). Now a browser that used no CPU meanwhile is waited for, and the page keeps
    its DOM; a render that never ends is still given up (HANG_BOUND)."""
    watch = BrowserWatch(monkeypatch)
    limit, slack = 12, 1.0
    monkeypatch.setattr(render_attempts, "HANG_SLACK", slack)
    stopping: list[Any] = []
    stopped_seconds: list[float] = []

    async def data_while_the_browser_stops(request: web.Request) -> web.StreamResponse:
        if not stopping:
            # Stopped until a second past the page's limit and the slack, counted from the render's
            # start (its document's request), not from this request, which a busy machine makes
            # late: past the slack the render is still waited for, and its load until DOM_GRACE
            # less DOM_RESERVE past the limit, time enough for the script to put the data in.
            began = watch.first_routed[site.url("/")]
            stopped_seconds.append(began + limit + slack + 1 - time.monotonic())
            stopping.append(stopped_for(max(stopped_seconds[0], 0)))
            stopping[0].__enter__()
        return web.json_response({"text": "the data, rendered once the machine had time"})

    site.page("/", body=FETCHING_PAGE.format(name="starved"))
    site.handler("/data/starved.json", data_while_the_browser_stops)
    await site.start()
    try:
        result = await run_crawl(site.url("/"), browser="always", browser_timeout=limit, chromium=CHROMIUM)
    finally:
        for stopped in stopping:
            stopped.__exit__(None, None, None)
    assert stopped_seconds and stopped_seconds[0] > slack + 1, "the script asked for the data past the limit"
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    assert row.render_error is None
    assert row.dom_warc_file
    assert "the data, rendered once the machine had time" in doms(result.snapshot.root)[site.url("/")]
    assert watch.pools[0].restarts == 0
    assert verify_snapshot(result.snapshot.root).ok


LOAD_FETCHING_PAGE = (
    "<p id='t'>before</p><script>const image = new Image(); image.src = '/st' + 'op.png';"
    "document.body.appendChild(image); addEventListener('load', () => fetch('/data/' + 'late.json')"
    ".then(r => r.json()).then(d => { document.getElementById('t').textContent = d.text; }));</script>"
)
"""A page whose load event fetches its text, and whose load waits for an image (its URL
assembled by a script, so only the render asks for it)."""


async def test_a_page_whose_load_the_stopped_browser_ended_past_its_limit_gets_its_quiet_wait(
    site, run_crawl
):
    """A load the machine held back past the page's limit (less the DOM's reserve) is waited for;
    but the wait for quiet that follows ended at once, the limit passed, and the DOM was taken
    before the script of the load event could ask for the data. Now the page gets its half
    second of quiet after its load (until the load's own bound at most)."""
    limit = 8  # its load is waited for until limit - 2 (a quarter, the DOM's reserve)
    stopping: list[Any] = []

    async def image_while_the_browser_stops(request: web.Request) -> web.StreamResponse:
        if not stopping:
            stopping.append(stopped_for(limit - 1))
            stopping[0].__enter__()
        return web.Response(body=b"\x89PNG\r\n\x1a\n", content_type="image/png")

    async def data(request: web.Request) -> web.StreamResponse:
        return web.json_response({"text": "the data asked on load"})

    site.page("/", body=LOAD_FETCHING_PAGE)
    site.handler("/stop.png", image_while_the_browser_stops)
    site.handler("/data/late.json", data)
    await site.start()
    began = time.monotonic()
    try:
        result = await run_crawl(site.url("/"), browser="always", browser_timeout=limit, chromium=CHROMIUM)
    finally:
        for stopped in stopping:
            stopped.__exit__(None, None, None)
    assert stopping and time.monotonic() - began > limit - 1
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    assert row.render_error is None
    assert "the data asked on load" in doms(result.snapshot.root)[site.url("/")]
    assert verify_snapshot(result.snapshot.root).ok
