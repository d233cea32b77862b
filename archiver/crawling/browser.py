"""Rendering one page in a browser tab: every request answered through the crawl, the DOM kept.

The tab never reaches the network itself. Every request it makes, from the
document to the last lazy image, passes through PageNetwork.handle (Playwright
routing on the whole browser context: crawling/page_network.py), which asks
the crawl for the URL's stored response and fulfils the request with it (the next hop of a
redirect so answered comes through the page's own DevTools session instead:
crawling/page_devtools.py, which also gives Chromium each answer as stored). So scope, robots.txt,
politeness, limits, revisits, the manifest and the WARC apply to what the
browser asks for exactly as to any fetch, and a URL captured once is read
back from the snapshot, never fetched again. What is not answered:

- requests other than GET and HEAD (a form posted by a script): refused, since
  the crawl archives what GET returns;
- the main frame navigating away (``location.href = ...``): refused, and the
  URL goes to the crawl as a link of the page, which is taken as it stands
  (Chromium stops loading it: its load event is not waited for);
- WebSockets: refused at the handshake (Playwright's route_web_socket never
  connects them to a server), since a WARC holds no WebSocket traffic the
  replay tools use;
- service workers: blocked in the context (their requests would bypass routing);
- shared workers: the browser has none (chromium.CHROMIUM_ARGS), for the same reason. A
  dedicated worker's requests (its script, importScripts(), fetch(), XMLHttpRequest) are the
  page's: routed and answered like the page's own, redirects hop by hop.

A render loads the page, waits for the network to go quiet (no routed request
for QUIET_SECONDS, never longer than the page's time limit allows), scrolls to
the end of the page in steps so lazy content loads (again until quiet, a few
rounds while that makes the page grow), then serialises the DOM as UTF-8 HTML.

Every call into the page is bounded by its time limit: a script that never
gives the browser back (a loop) blocks each of them, and the page is then
given up (PageHung) for its tab to be closed, which ends its renderer and
nothing else of the browser. Hung is told from what the renderer did, not
from the time alone: the browser runs at idle priority, and a busy machine
can leave its renderer no CPU for seconds, when a healthy page answers no call
either. A renderer that used the CPU for the wait without answering is hung
(a loop); one that got next to none is waiting for the machine, and is waited
for while it does, until DOM_GRACE past the page's limit (cpu_waits.py). The page's load is
judged alike: one the machine kept its renderer from, while the page waited on nothing the crawl
fetches, goes on past its share of the limit, and the page is loaded whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from archiver.content import DEFAULT_DECODE_LIMIT
from archiver.crawling.cpu_waits import NoAnswer, answered_while_working, read_outcome
from archiver.crawling.page_dom import DOM_SCRIPT, KEEPER, NOTE_ROOT_SCRIPT, PREPARE_DOM_SCRIPT, dom_arguments
from archiver.crawling.page_network import Answerer, PageNetwork, RunWaits
from archiver.errors import PageHung
from archiver.sizes import human_bytes
from archiver.urls import try_normalize

if TYPE_CHECKING:
    from archiver.crawling.browser_pool import Tab

T = TypeVar("T")

SCROLL_ROUNDS = 5
SCROLL_STEPS = 30
SCROLL_PAUSE_MS = 80
DOM_RESERVE = 3.0
"""Seconds of the page's time limit kept for taking the DOM (a quarter of it, if that is less)."""
DOM_GRACE = 10.0
"""Seconds past the page's time limit that serialising its DOM may take once the page answered
(a large DOM costs its time): a page that answers nothing by its limit is hung already."""
DOM_LIMIT = DEFAULT_DECODE_LIMIT
"""A serialised DOM larger than this is not kept (the mirror rewrites pages up to this size), nor
carried from the browser: the page keeps its HTTP capture."""
CLOSE_SECONDS = 5.0
"""Time given a popup to close once its page's render ends."""

HEIGHT_SCRIPT = "() => (document.scrollingElement || document.documentElement || {}).scrollHeight || 0"
SCROLL_SCRIPT = """async ({steps, pause}) => {
  const height = () => (document.scrollingElement || document.documentElement || {}).scrollHeight || 0;
  const before = height();
  const start = window.scrollY;
  for (let step = 0; step < steps; step++) {
    const top = window.scrollY;
    window.scrollBy(0, window.innerHeight);
    await new Promise(resolve => setTimeout(resolve, pause));
    if (window.scrollY === top) break;
  }
  return [before, height(), window.scrollY !== start];
}"""


@dataclass(frozen=True)
class RenderedPage:
    """What rendering one page gave."""

    html: bytes | None
    """The DOM serialised as UTF-8 HTML (None if it could not be taken)."""
    charset: str | None
    """The encoding the browser read the page in (document.characterSet), in which it wrote its
    links' queries: the DOM's are still to be written so, though the DOM is kept as UTF-8."""
    final_url: str
    """Where the page ended up (a script may change it with history.pushState)."""
    requested: frozenset[str]
    navigations: frozenset[str]
    error: str | None = None
    """What went wrong, if the render was cut short."""
    cookies: tuple[dict[str, Any], ...] | None = None
    """Every cookie the tab's context held once the render ended (None: unknown), in Playwright's
    form: those its scripts set after its last request among them, which no request showed."""


async def render_page(
    tab: Tab, url: str, answer: Answerer, timeout: float, cookies: list[dict[str, Any]] | None = None
) -> RenderedPage:
    """Load ``url`` in ``tab``, every request answered by ``answer``, its context given ``cookies``
    first (the crawl's: SiteCookieJar.for_browser), which the page's scripts see.

    Bounded by ``timeout`` seconds in all (a page that never finishes loading
    still gives the DOM it has). Raises PageHung if the page's scripts keep its
    tab busy past then, or the machine leaves its renderer no CPU until DOM_GRACE
    past then (the tab is to be closed), Playwright's Error if the browser fails.
    """
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    network = PageNetwork(url, answer, tab.page)
    page = tab.page
    deadline = time.monotonic() + timeout
    # Of a short limit, a fixed reserve would leave loading nothing: the page load was cut
    # at once, and taking the DOM of a page still navigating failed.
    reserve = min(DOM_RESERVE, timeout / 4)
    loaded_by = deadline - reserve
    dom_by = deadline + DOM_GRACE
    # A load the machine kept the browser from may go on past loaded_by (_loading), until the
    # same reserve before the DOM's own bound.
    load_bound = dom_by - reserve
    too_large = f"the DOM is larger than {human_bytes(DOM_LIMIT)}"
    error = None
    tab.handler = network.handle
    if tab.devtools is not None:
        tab.devtools.render = network
    committed = False
    try:
        if cookies:
            await _give_cookies(tab, cookies, deadline)
        try:
            await _loading(
                tab,
                network,
                page.goto(url, wait_until="commit", timeout=_ms(load_bound)),
                loaded_by,
                load_bound,
            )
            committed = True
            await _loading(tab, network, _loaded(page, network, load_bound), loaded_by, load_bound)
        except (PlaywrightTimeout, NoAnswer):
            error = f"the page did not {'finish' if committed else 'start'} loading in {timeout:g} s"
        if error is None:
            await network.quiet(loaded_by, held_until=load_bound, waits=tab.waits)
            await _scroll(page, network, loaded_by, tab.waits)
        final_url = page.url
        html = charset = None
        try:
            if not committed:
                pass  # the tab still holds the page it showed before: no DOM of this one
            elif final_url.startswith("chrome-error:"):
                error = error or "the browser showed its error page in place of the page"
            elif (state := await _in_page(tab, PREPARE_DOM_SCRIPT, url, deadline, dom_by))[0] == "loading":
                # Its parser waits still (a script of its head that never came): the DOM is a
                # head without a body, less than the page as it was served.
                kept = "the page was still being parsed, so its DOM is not kept"
                error = f"{error}; {kept}" if error else kept
            elif network.declares_closed_roots and not await _noted_closed_roots(tab, dom_by):
                error = error or "the page's closed shadow roots could not be read"
            elif isinstance(text := await _in_page(tab, DOM_SCRIPT, dom_arguments(DOM_LIMIT), dom_by), int):
                error = error or too_large
            elif text:
                html, charset = text.encode("utf-8", errors="replace"), str(state[1])
            else:  # a script removed the document's root element
                error = error or "the page has no document element"
        except NoAnswer as exc:  # its scripts hold its tab (a loop), or the machine its renderer
            raise PageHung(url, timeout, starved_past=None if exc.busy else DOM_GRACE) from None
        held = await _held_cookies(page, dom_by)
    finally:
        tab.handler = None
        if tab.devtools is not None:
            tab.devtools.render = None
        for other in tab.context.pages:  # popups it opened: they would outlive it in the tab
            if other != page:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(other.close(), CLOSE_SECONDS)
    if html is not None and len(html) > DOM_LIMIT:
        html, error = None, too_large
    final = try_normalize(final_url)
    navigations = set(network.navigations)
    if final is not None and final != url:
        navigations.add(final)  # a client-side route: a page of its own
    return RenderedPage(
        html, charset, final_url, frozenset(network.requested), frozenset(navigations), error, held
    )


async def _held_cookies(page: Any, until: float) -> tuple[dict[str, Any], ...] | None:
    """The cookies the context of ``page`` holds (None if it cannot tell by ``until``): read from
    the browser, not the page, so a page whose script loops still answers."""
    try:
        cookies = await asyncio.wait_for(page.context.cookies(), max(until - time.monotonic(), 0.001))
    except Exception:  # noqa: BLE001 - the browser failed or closed meanwhile: none known
        return None
    return tuple(dict(cookie) for cookie in cookies)


async def _give_cookies(tab: Tab, cookies: list[dict[str, Any]], deadline: float) -> None:
    """Add ``cookies`` to the tab's context; one it refuses (a name or value it finds invalid)
    is left out, not the render."""
    from playwright.async_api import Error

    context: Any = tab.context  # Playwright's SetCookieParam: the same keys, as a TypedDict
    try:
        await asyncio.wait_for(context.add_cookies(cookies), max(deadline - time.monotonic(), 0.001))
    except Error:
        for cookie in cookies:
            with contextlib.suppress(Error):
                await asyncio.wait_for(context.add_cookies([cookie]), max(deadline - time.monotonic(), 0.001))


async def _in_page(tab: Tab, script: str, arg: Any, until: float, bound: float | None = None) -> Any:
    """``script`` evaluated in the tab's page, which must answer by ``until``, or while its
    renderers get no CPU by ``bound`` (see _answered): a call into a page whose script loops
    never returns."""
    return await _answered(tab, tab.page.evaluate(script, arg), until, until if bound is None else bound)


async def _answered(tab: Tab, call: Awaitable[T], until: float, bound: float) -> T:
    """What ``call`` into the tab's page gives (cpu_waits.answered_while_working(), the time
    counted while the tab's renderers work)."""
    return await answered_while_working(call, tab.renderers_cpu, until, bound)


async def _noted_closed_roots(tab: Tab, until: float) -> bool:
    """Hand each closed shadow root of the tab's page to what PAGE_INIT_SCRIPT noted, for DOM_SCRIPT to
    find: one a script attached is noted already, one the HTML declared (``<template
    shadowrootmode="closed">``) no script can reach, only DevTools. Bounded like ``_in_page``;
    False if DevTools failed (a page that is not Chromium's)."""
    from playwright.async_api import Error

    page = tab.page

    async def note() -> None:
        devtools = await page.context.new_cdp_session(page)
        try:
            tree = await devtools.send("DOM.getDocument", {"depth": -1, "pierce": True})
            for backend_id in closed_shadow_roots(tree["root"]):
                found = await devtools.send("DOM.resolveNode", {"backendNodeId": backend_id})
                call = {"objectId": found["object"]["objectId"], "functionDeclaration": NOTE_ROOT_SCRIPT}
                await devtools.send("Runtime.callFunctionOn", {**call, "arguments": [{"value": KEEPER}]})
        finally:
            with contextlib.suppress(Error):
                await devtools.detach()

    try:
        await _answered(tab, note(), until, until)
    except Error:
        return False
    return True


def closed_shadow_roots(node: dict[str, Any]) -> list[int]:
    """The backend node ids of the closed shadow roots in a DevTools DOM tree (DOM.getDocument,
    pierced), in its frames' documents too; not in a <template>'s content, which is inert.

    >>> roots = [{"shadowRootType": "closed", "backendNodeId": 7}, {"shadowRootType": "open"}]
    >>> closed_shadow_roots({"children": [{"shadowRoots": roots}]})
    [7]
    """
    found, todo = [], [node]
    while todo:
        current = todo.pop()
        roots = current.get("shadowRoots", [])
        found += [root["backendNodeId"] for root in roots if root.get("shadowRootType") == "closed"]
        todo += roots + current.get("children", [])
        if "contentDocument" in current:
            todo.append(current["contentDocument"])
    return sorted(found)


async def _loading(tab: Tab, network: PageNetwork, call: Awaitable[T], loaded_by: float, bound: float) -> T:
    """What ``call`` (a step of the page's load) gives, if it ends by ``loaded_by``, or later, until
    ``bound``, while the machine leaves the tab's renderers next to no CPU (what the browser
    process did for the load, routing its requests, is not the page's) and the page waits on
    nothing the crawl fetches (cpu_waits.answered_while_working()); raises NoAnswer past then. A page loaded
    slowly by a starved browser is then loaded whole, not cut at its limit: its time counts
    while the browser could work, and a page that waits on a slow server is still cut."""
    fetching = lambda: network.fetching > 0  # noqa: E731 - one test, named for what it asks
    return await answered_while_working(call, tab.renderers_cpu, loaded_by, bound, fetching)


async def _loaded(page: Any, network: PageNetwork, deadline: float) -> None:
    """Until the page's load event, or until its main frame tries to navigate away: Chromium
    then stops loading the page, and its load event never comes (a page whose script sets
    location.href waited out its whole time limit). Raises Playwright's TimeoutError."""
    load = asyncio.ensure_future(page.wait_for_load_state("load", timeout=_ms(deadline)))
    away = asyncio.ensure_future(network.navigated_away.wait())
    try:
        await asyncio.wait({load, away}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in (load, away):
            waiting.cancel()  # not awaited (a stop of this render must not be swallowed) but read:
            waiting.add_done_callback(read_outcome)  # asyncio reports an error nobody read
    if not network.navigated_away.is_set():
        load.result()


async def _scroll(page: Any, network: PageNetwork, deadline: float, waits: RunWaits) -> None:
    """Scroll to the end in steps and wait for quiet; again while that made the page grow (bounded).
    Stops at ``deadline``: a page busy then is judged when its DOM is taken."""
    for _ in range(SCROLL_ROUNDS):
        if time.monotonic() >= deadline:
            return
        try:
            before, after, moved = await asyncio.wait_for(
                page.evaluate(SCROLL_SCRIPT, {"steps": SCROLL_STEPS, "pause": SCROLL_PAUSE_MS}),
                max(deadline - time.monotonic(), 0.001),
            )
            if not moved:
                return  # the page fits its window: scrolling showed nothing the wait for quiet did not
            await network.quiet(deadline, waits=waits)
            grown = await asyncio.wait_for(
                page.evaluate(HEIGHT_SCRIPT), max(deadline - time.monotonic(), 0.001)
            )
        except TimeoutError:
            return
        if grown <= after and after <= before:
            return


def _ms(deadline: float) -> float:
    """Milliseconds left until ``deadline`` (at least one), as Playwright takes timeouts."""
    return max((deadline - time.monotonic()) * 1000, 1.0)
