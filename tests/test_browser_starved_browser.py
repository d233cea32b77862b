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
    # A limit a machine busy with other tests still loads the page in (its script asks for the
    # data once the page has loaded, and a load past the limit less its reserve is cut).
    limit, slack = 12, 1.0
    monkeypatch.setattr(render_attempts, "HANG_SLACK", slack)
    stopping: list[Any] = []

    async def data_while_the_browser_stops(request: web.Request) -> web.StreamResponse:
        if not stopping:
            stopping.append(stopped_for(limit + slack + 3))
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
    assert stopping
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    assert row.render_error is None
    assert row.dom_warc_file
    assert "the data, rendered once the machine had time" in doms(result.snapshot.root)[site.url("/")]
    assert watch.pools[0].restarts == 0
    assert verify_snapshot(result.snapshot.root).ok
