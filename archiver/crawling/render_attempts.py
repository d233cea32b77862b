"""Rendering one page in the crawl's browser pool, once more after a crash of its tab or browser.

A page's own failure (its time limit passed, its scripts hung its tab) costs that page its
render and nothing else: its tab is closed on the way out of BrowserPool.tab(). A crash of the
tab's renderer or of the whole browser is no fault of the page, which is tried once more in a
fresh tab; a browser that is gone or no longer answers is replaced first, so the other tabs'
renders go on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from archiver.crawling.browser import RenderedPage, render_page
from archiver.crawling.browser_pool import BrowserPool
from archiver.crawling.chromium import browser_error_types
from archiver.crawling.cpu_waits import NoAnswer, answered_while_working
from archiver.crawling.page_network import Answerer
from archiver.errors import PageHung

log = logging.getLogger("archiver.crawl")

HANG_SLACK = 20.0
"""Seconds past the page's time limit after which a render that has not ended is given up if the
browser used the CPU meanwhile (every call into the page is bounded before then: what is left
is the browser, or its driver, stuck)."""
HANG_BOUND = 120.0
"""Seconds past the page's time limit after which a render that has not ended is given up though
the machine left the browser next to no CPU meanwhile (cpu_waits.py): a browser stopped for good
is stuck too."""


async def attempt_render(
    pool: BrowserPool,
    url: str,
    answer: Answerer,
    timeout: float,
    cookies: Callable[[], list[dict[str, Any]]] | None = None,
) -> tuple[RenderedPage | None, str | None]:
    """Render ``url`` in a tab of ``pool``, once more if its tab's renderer or the browser crashed:
    (the page rendered, None) or (None, the error its manifest row keeps). ``cookies`` gives the
    crawl's cookies as each attempt starts (SiteCookieJar.for_browser). Cancelled, the render
    stops and its tab is closed."""
    errors: tuple[type[BaseException], ...] = (*browser_error_types(), TimeoutError)
    error = None
    for attempt in (1, 2):
        generation = pool.generation
        try:
            # The time limit starts once the page has its tab: launching the browser
            # (bounded by LAUNCH_TIMEOUT) and waiting for a free tab are not the page's time.
            async with pool.tab() as tab:
                generation = tab.generation
                given = cookies() if cookies is not None else []
                began = time.monotonic()
                try:
                    rendered = await answered_while_working(
                        render_page(tab, url, answer, timeout, given),
                        pool.browser_cpu,
                        began + timeout + HANG_SLACK,
                        began + timeout + HANG_BOUND,
                        measured_from=began + timeout,  # what the browser did past the page's limit
                    )
                except NoAnswer:
                    raise TimeoutError from None
                return rendered, None
        except PageHung as exc:  # its scripts (or the busy machine) would hold a tab as long again
            log.warning("gave up rendering %s: %s", url, exc)
            return None, f"browser: {exc}"
        except errors as exc:
            if isinstance(exc, TimeoutError):  # which says nothing of itself
                text = f"the render did not end within its time limit ({timeout:g} s)"
            else:
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            error = f"browser: {text}"[:300]
            alive = await pool.alive(generation)
            if alive and (
                isinstance(exc, TimeoutError) or not any(word in text.lower() for word in ("crash", "closed"))
            ):
                return None, error  # the page's own failure: its tab is closed, nothing else
            if not alive:
                await pool.restart(generation)
            log.warning(
                "the %s failed on %s (%s); %s",
                "browser" if not alive else "tab",
                url,
                text,
                "retrying" if attempt == 1 else "giving up",
            )
    return None, error
