"""One headless Chromium for the crawl, driven by Playwright: a few tabs, restarted when it fails.

Memory stays bounded however long the crawl: at most ``tabs`` pages are open,
each in a browser context of its own that is replaced every TAB_RENDERS
renders (and after any failure in it), and the browser itself is replaced
every RECYCLE_AFTER pages. A tab's page is reused from render to render: a
new page costs a renderer process, about as long as rendering a small page.
A tab that failed is closed, which ends its renderer process (even one whose
page loops) and touches no other tab; the browser itself is replaced only
when it is gone or no longer answers (alive()), and the pages it held are
tried once more by the renderer. A browser the machine leaves no CPU is waited for, when it
answers and when it opens a tab, not called stuck (cpu_waits.py).

Which Chromium it is, how it is launched (with no way out to the network of its own) and
the idle priority it runs at are crawling/chromium.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from archiver.crawling.chromium import (
    CHROMIUM_ARGS,
    NO_SPECULATION_SCRIPT,
    browser_error_types,
    browser_pids,
    cpu_times,
    driver_pids,
    launch_exit,
    quiet_about_the_driver_gone,
    refusing_port,
    renderer_pids,
    run_waits,
    started_at_idle_priority,
    use_node_compile_cache,
)
from archiver.crawling.cpu_waits import NoAnswer, answered_while_working
from archiver.crawling.page_devtools import PageDevtools
from archiver.crawling.page_dom import init_script
from archiver.errors import BrowserUnusable, ConfigError

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright, Route, WebSocketRoute

RECYCLE_AFTER = 200
"""Pages rendered by one browser before it is replaced by a fresh one (its memory with it)."""
TAB_RENDERS = 25
"""Pages rendered in one tab (one browser context) before it is replaced by a fresh one."""
LAUNCH_TIMEOUT = 60.0
OPEN_TIMEOUT = 30.0
"""Wait for a new tab (a browser context and its page) past which a browser that used the CPU
meanwhile without opening it is stuck (cpu_waits.py)."""
OPEN_BOUND = 300.0
"""Longest wait for a new tab, of a browser that the machine left next to no CPU meanwhile."""
CLOSE_TIMEOUT = 10.0
ALIVE_TIMEOUT = 5.0
"""Wait for an answer to a DevTools call past which a browser that used the CPU meanwhile without
answering is stuck (see alive())."""
ALIVE_BOUND = 120.0
"""Longest wait for that answer, of a browser that the machine left next to no CPU meanwhile: it
is stuck too (stopped, or waiting for something that never comes)."""
VIEWPORT = {"width": 1280, "height": 900}


@dataclass
class Tab:
    """One page of the browser, reused from render to render, in a context of its own.

    Its context routes every request to ``handler`` (the render under way),
    and refuses WebSockets; between renders, requests are refused.
    """

    context: BrowserContext
    page: Page
    generation: int
    """The browser it belongs to (see BrowserPool.generation)."""
    devtools: PageDevtools | None = None
    """The page's own DevTools session, which gives Chromium each answer as stored and answers
    the next hops of redirects (for its ``render``: the render under way)."""
    renders: int = 0
    handler: Callable[[Route], Awaitable[None]] | None = None
    browser_argument: str | None = None
    """An argument of its browser's command line that no other browser has: its processes are
    found by it."""

    renderers: list[int] = field(default_factory=list)
    """Its browser's renderer processes, as last found (see renderers_cpu)."""
    drivers: list[int] = field(default_factory=list)
    """Playwright's driver process, as last found (see waits)."""

    def renderers_cpu(self, look_again: bool = False) -> dict[int, float] | None:
        """The CPU seconds each renderer process of its browser has used so far (None where that
        cannot be known): whether a page that does not answer is busy or waits for the CPU. The
        processes are found once (a walk of Chromium's processes costs the event loop some 6 ms),
        and again when asked (``look_again``: a page has not answered in time)."""
        if not self._found_renderers(look_again):
            return None
        return cpu_times(self.renderers) if self.renderers else None

    def waits(self, look_again: bool = False) -> dict[int, float] | None:
        """The seconds each renderer process of its browser, and Playwright's driver (which hands
        the crawl the page's requests), has waited for a CPU so far (None where that cannot be
        known): whether a page that made no request meanwhile could have made one
        (PageNetwork.quiet). Found as renderers_cpu finds them."""
        if not self._found_renderers(look_again):
            return None
        if look_again or not self.drivers:
            self.drivers = driver_pids()
        return run_waits(self.renderers + self.drivers)

    def _found_renderers(self, look_again: bool) -> bool:
        """Find the renderers once, and again if ``look_again``; False where they cannot be."""
        if self.browser_argument is None:
            return False
        if look_again or not self.renderers:
            self.renderers = renderer_pids(self.browser_argument)
        return True

    async def route(self, route: Route) -> None:
        handler = self.handler
        if handler is None:
            with contextlib.suppress(Exception):
                await route.abort("blockedbyclient")
            return
        await handler(route)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.context.close(), CLOSE_TIMEOUT)


async def _refuse_websocket(websocket: WebSocketRoute) -> None:
    with contextlib.suppress(Exception):
        await websocket.close(code=1008, reason="not archived")


class BrowserPool:
    """A Chromium and ``tabs`` pages in it, lent one render at a time; use with ``async with``.

    >>> async def example(pool):
    ...     async with pool.tab() as tab:
    ...         await tab.page.goto("http://127.0.0.1:8000/")
    """

    def __init__(
        self, executable: str, tabs: int, user_agent: str, recycle_after: int = RECYCLE_AFTER
    ) -> None:
        self.executable = executable
        self.tabs = tabs
        self.user_agent = user_agent
        self.recycle_after = recycle_after
        self.generation = 0
        """Counts browsers launched: a crash is reported against the one that had it."""
        self.restarts = 0
        """Browsers replaced because they crashed or disconnected."""
        self._idle: asyncio.Queue[Tab | None] = asyncio.Queue()
        for _ in range(tabs):
            self._idle.put_nowait(None)
        self._lock = asyncio.Lock()
        self._recycling = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._renders = 0
        self._browser_processes: list[int] = []
        """The processes of the running browser other than its renderers, as last found."""
        self._refusing: socket.socket | None = None
        self._proxy: str | None = None
        """The browser's --proxy-server argument (a proxy that refuses every connection)."""
        self._closed = False

    async def __aenter__(self) -> BrowserPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def browser(self) -> Browser | None:
        """The running browser, if one was launched and not closed."""
        return self._browser

    def connected(self, generation: int) -> bool:
        """True if the browser of ``generation`` is the current one and still running."""
        return self.generation == generation and self._browser is not None and self._browser.is_connected()

    @contextlib.asynccontextmanager
    async def tab(self) -> AsyncIterator[Tab]:
        """A tab to render one page in; waits while all are busy.

        A tab comes back for the next render unless something went wrong in
        it (an exception, even cancellation): then it is closed, and the next
        render gets a fresh one.
        """
        if self._renders >= self.recycle_after:
            await self._recycle()
        tab = await self._idle.get()
        try:
            if tab is None or not self.connected(tab.generation) or tab.renders >= TAB_RENDERS:
                if tab is not None:
                    await tab.close()
                tab = None
                tab = await self._open_tab()
            self._renders += 1
            tab.renders += 1
            yield tab
        except BaseException:
            if tab is not None:
                await asyncio.shield(tab.close())
            self._idle.put_nowait(None)
            raise
        self._idle.put_nowait(tab)

    async def alive(self, generation: int) -> bool:
        """True if the browser of ``generation`` is the current one and answers: a page that
        failed in it (a loop, its renderer crashed) leaves the browser whole, and the other
        tabs' renders go on. A browser the machine leaves no CPU is waited for (until
        ALIVE_BOUND), not replaced: that would cut the other tabs' renders for nothing."""
        browser = self._browser
        if browser is None or not self.connected(generation):
            return False

        async def version() -> None:
            devtools = await browser.new_browser_cdp_session()
            await devtools.send("Browser.getVersion")
            await devtools.detach()

        now = time.monotonic()
        try:
            await answered_while_working(version(), self.browser_cpu, now + ALIVE_TIMEOUT, now + ALIVE_BOUND)
        except Exception:  # noqa: BLE001 - gone, closing, or stuck (NoAnswer): not alive
            return False
        return True

    def browser_cpu(self, look_again: bool = False) -> dict[int, float] | None:
        """The CPU seconds each process of the running browser but its renderers has used (None
        where that cannot be known): a page's loop in a renderer is no work of the browser's."""
        if self._proxy is None:
            return None
        if look_again or not self._browser_processes:
            self._browser_processes = browser_pids(self._proxy)
        return cpu_times(self._browser_processes) if self._browser_processes else None

    async def _open_tab(self) -> Tab:
        browser = await self._ready()
        generation = self.generation
        # Bounded: a browser stuck (not gone) would hold the render, and the pool, forever.
        now = time.monotonic()
        try:
            return await answered_while_working(
                self._new_tab(browser, generation), self.browser_cpu, now + OPEN_TIMEOUT, now + OPEN_BOUND
            )
        except NoAnswer:
            raise TimeoutError(f"the browser opened no tab in {OPEN_TIMEOUT:g} s") from None

    async def _new_tab(self, browser: Browser, generation: int) -> Tab:
        context = await browser.new_context(
            service_workers="block",  # their requests would bypass routing
            user_agent=self.user_agent,
            viewport=VIEWPORT,  # type: ignore[arg-type]
            accept_downloads=False,
        )
        try:
            # Notes what the DOM is taken with but no page property shows (page_dom.py).
            await context.add_init_script(script=init_script())
            await context.add_init_script(script=f"({NO_SPECULATION_SCRIPT})()")
            page = await context.new_page()
            devtools = await PageDevtools.open(context, page)
            tab = Tab(context, page, generation, devtools, browser_argument=self._proxy)
            await context.route("**/*", tab.route)
            await context.route_web_socket("**/*", _refuse_websocket)
        except BaseException:
            with contextlib.suppress(Exception):
                await context.close()
            raise
        return tab

    async def restart(self, generation: int) -> None:
        """Replace the browser of ``generation``, which crashed or is stuck (a later one is left
        alone)."""
        async with self._lock:
            if self.generation == generation and not self._closed:
                self.restarts += 1
                await self._replace()

    async def _ready(self) -> Browser:
        async with self._lock:
            if self._closed:
                raise ConfigError("the browser pool is closed")
            if self._browser is None or not self._browser.is_connected():
                if self._browser is not None:
                    self.restarts += 1
                await self._replace()
            assert self._browser is not None
            return self._browser

    async def _recycle(self) -> None:
        """Replace the browser once the pages open in it are done (so its memory goes with it)."""
        async with self._recycling:
            if self._renders < self.recycle_after:
                return
            tabs = [await self._idle.get() for _ in range(self.tabs)]
            try:
                for tab in tabs:
                    if tab is not None:
                        await tab.close()
                async with self._lock:
                    if not self._closed:
                        await self._replace()
            finally:
                for _ in tabs:
                    self._idle.put_nowait(None)

    async def _replace(self) -> None:
        old, self._browser = self._browser, None
        if old is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(old.close(), CLOSE_TIMEOUT)
        if self._playwright is None:
            from playwright.async_api import async_playwright

            use_node_compile_cache()
            self._playwright = await started_at_idle_priority(async_playwright().start())
            quiet_about_the_driver_gone(asyncio.get_running_loop())
        if self._refusing is None:
            self._refusing = refusing_port()
        # The proxy's port is this pool's own, so the argument names its browser among the
        # processes too (Tab.renderers_cpu).
        self._browser_processes = []
        self._proxy = proxy = f"--proxy-server=http://127.0.0.1:{self._refusing.getsockname()[1]}"
        try:
            self._browser = await self._launch(proxy)
        except browser_error_types() as exc:
            exited = launch_exit(str(exc))
            if exited is None:  # it did not exit (a launch past LAUNCH_TIMEOUT): one render fails
                raise
            raise BrowserUnusable(f"{self.executable}: {exited}") from None
        self.generation += 1
        self._renders = 0

    async def _launch(self, proxy: str) -> Browser:
        assert self._playwright is not None
        return await self._playwright.chromium.launch(
            executable_path=self.executable,
            args=[
                *CHROMIUM_ARGS,
                # Loopback too: Chromium sends it past proxies unless told not to.
                proxy,
                "--proxy-bypass-list=<-loopback>",
            ],
            handle_sigint=False,
            handle_sigterm=False,
            handle_sighup=False,
            timeout=LAUNCH_TIMEOUT * 1000,
        )

    async def close(self) -> None:
        """Close the browser and stop Playwright; safe to call twice, bounded in time."""
        if self._closed:
            return
        self._closed = True
        browser, self._browser = self._browser, None
        playwright, self._playwright = self._playwright, None
        if browser is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), CLOSE_TIMEOUT)
        if playwright is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(playwright.stop(), CLOSE_TIMEOUT)
        if self._refusing is not None:
            self._refusing.close()
            self._refusing = None
