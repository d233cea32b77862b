"""A rendered page on a machine that leaves the browser no CPU, with real Chromium: waiting for the
machine is not hanging, and a page whose script loops is still given up at its limit.

The browser runs in the idle scheduling class, so a busy machine can leave its renderer without
any CPU for seconds. Here that is made certain: every renderer process of the browser is stopped
(SIGSTOP) while the page waits for the data it fetched, and let go (SIGCONT) only once the page's
whole time limit has passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from browser_watch import children, subtree
from conftest import manifest_rows
from script_site import png
from test_browser import CHROMIUM
from test_browser_limits import FETCHING_PAGE, doms

from archiver.crawling import browser as browser_module
from archiver.crawling import render_attempts
from archiver.verify.verifier import verify_snapshot

LIMIT = 6
"""The pages' time limit (--browser-timeout), in seconds."""


def renderer_processes() -> list[int]:
    """Every renderer process of the browsers this process drives (under Playwright's driver)."""
    found = []
    for driver in children(os.getpid()):
        for pid in subtree(driver):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as command:
                if b"--type=renderer" in command.read():  # (OSError: a process that ended meanwhile)
                    found.append(pid)
    return found


class StoppedRenderers:
    """The browser's renderers, stopped (SIGSTOP) at the first stop() and continued by
    continue_all(), or by held_past_the_limit() LIMIT + 1 s after they were stopped."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self._let_go = asyncio.Event()

    def stop(self) -> None:
        if not self.pids:
            self.pids.extend(renderer_processes())
            for pid in self.pids:
                os.kill(pid, signal.SIGSTOP)
            asyncio.get_running_loop().call_later(LIMIT + 1, self._let_go.set)

    def continue_all(self) -> None:
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    @contextlib.asynccontextmanager
    async def held_past_the_limit(self) -> AsyncIterator[None]:
        """Past the page's whole limit, which began before they were stopped; at the latest when
        the block ends."""

        async def let_go_when_told() -> None:
            await self._let_go.wait()
            self.continue_all()

        letting_go = asyncio.ensure_future(let_go_when_told())
        try:
            yield
        finally:
            self._let_go.set()
            await letting_go


async def test_a_page_whose_renderer_gets_no_cpu_past_its_limit_is_rendered(site, run_crawl):
    """Its renderer got no CPU while the page was asked for its DOM: that wait was taken for a
    script that never gives the browser back, the tab was closed and the DOM lost. Now a renderer
    that used no CPU is waited for (within the bound the page's limit sets), and the page is
    rendered whole; a page whose script loops uses its CPU without answering, and is still given
    up, with the same error as before."""
    stopped = StoppedRenderers()

    async def data_while_the_renderers_stop(request: web.Request) -> web.StreamResponse:
        stopped.stop()
        return web.json_response({"text": "the data, rendered once the machine had time"})

    site.page("/starved", body=FETCHING_PAGE.format(name="starved"))
    site.handler("/data/starved.json", data_while_the_renderers_stop)
    site.page("/loop", body="<p>looping</p><script>setTimeout(() => { while (true) {} }, 200);</script>")
    site.page("/", links=["/starved", "/loop"], body="<p>Index</p>")
    await site.start()
    async with stopped.held_past_the_limit():
        result = await run_crawl(
            site.url("/"), browser="always", browser_tabs=1, browser_timeout=LIMIT, chromium=CHROMIUM
        )
    rows = manifest_rows(result.snapshot.root)
    rendered = doms(result.snapshot.root)
    assert stopped.pids  # the renderers were stopped while the page rendered

    starved = rows[site.url("/starved")]
    assert starved.render_error is None and starved.dom_warc_file
    assert "the data, rendered once the machine had time" in rendered[site.url("/starved")]

    loop = rows[site.url("/loop")]
    assert loop.dom_warc_file is None and site.url("/loop") not in rendered
    assert "did not give the browser back" in (loop.render_error or "")
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_page_whose_renderer_gets_no_cpu_to_the_end_is_given_up_saying_so(
    site, run_crawl, monkeypatch
):
    """A renderer starved past the page's limit and the grace after it: the wait is bounded all the
    same, the tab closed and the page left with its HTTP capture, and its row says the machine was
    too busy, not that the page's scripts held the browser."""
    monkeypatch.setattr(browser_module, "DOM_GRACE", 2.0)
    stopped = StoppedRenderers()
    render_page = render_attempts.render_page

    async def rendered_then_let_go(*args: Any, **kwargs: Any) -> Any:
        try:
            return await render_page(*args, **kwargs)
        finally:  # the renderers wait until the render is given up, however long that takes
            stopped.continue_all()

    async def data_while_the_renderers_stop(request: web.Request) -> web.StreamResponse:
        stopped.stop()  # continued only once the render is given up (rendered_then_let_go)
        return web.json_response({"text": "never rendered"})

    monkeypatch.setattr(render_attempts, "render_page", rendered_then_let_go)
    site.page("/", body=FETCHING_PAGE.format(name="starved"))
    site.handler("/data/starved.json", data_while_the_renderers_stop)
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", browser_timeout=LIMIT, chromium=CHROMIUM)
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    assert stopped.pids
    assert row.outcome == "fetched" and row.warc_file and row.dom_warc_file is None
    error = row.render_error or ""
    assert "too little CPU" in error and f"({LIMIT} s, and 2 s past it)" in error
    assert "before" in (result.snapshot.root / "mirror" / str(row.local_path)).read_text()


async def test_a_page_whose_renderer_gets_no_cpu_while_it_loads_is_loaded_whole(site, run_crawl):
    """Its renderer got no CPU while the page loaded (an image of it came as the renderers were
    stopped): the load was cut at the page's limit less its reserve, and the row said the page
    did not finish loading, though it was the machine that was busy. Now a load the browser
    could not work on is waited for, and the page is rendered whole; a page that waits on its
    server past its limit is still cut (test_browser_limits.py)."""
    stopped = StoppedRenderers()

    async def image_while_the_renderers_stop(request: web.Request) -> web.StreamResponse:
        stopped.stop()
        return web.Response(body=png(0, 128, 0), content_type="image/png")

    # The image's URL is assembled as the page runs: only the browser asks for it.
    image = "<img src=\"/sl' + 'ow.png\" onload=\"t.textContent = \\'loaded\\'\">"
    site.page("/", body=f"<p id='t'>loading</p><script>document.write('{image}');</script>")
    site.handler("/slow.png", image_while_the_renderers_stop)
    await site.start()
    async with stopped.held_past_the_limit():
        result = await run_crawl(site.url("/"), browser="always", browser_timeout=LIMIT, chromium=CHROMIUM)
    assert stopped.pids
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    assert row.render_error is None and row.dom_warc_file
    assert ">loaded</p>" in doms(result.snapshot.root)[site.url("/")]
