"""Rendering one page in a browser tab: every request answered through the crawl, the DOM kept.

The tab never reaches the network itself. Every request it makes, from the
document to the last lazy image, passes through PageNetwork.handle (Playwright
routing on the whole browser context), which asks the crawl for the URL's
stored response and fulfils the request with it. So scope, robots.txt,
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
- service workers: blocked in the context (their requests would bypass routing).

A render loads the page, waits for the network to go quiet (no routed request
for QUIET_SECONDS, never longer than the page's time limit allows), scrolls to
the end of the page in steps so lazy content loads (again until quiet, a few
rounds while that makes the page grow), then serialises the DOM as UTF-8 HTML.

Every call into the page is bounded by its time limit: a script that never
gives the browser back (a loop) blocks each of them, and the page is then
given up (PageHung) for its tab to be closed, which ends its renderer and
nothing else of the browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from archiver.content import DEFAULT_DECODE_LIMIT
from archiver.crawling.page_dom import DOM_SCRIPT, KEEPER, NOTE_ROOT_SCRIPT, PREPARE_DOM_SCRIPT, dom_arguments
from archiver.crawling.stored_answers import Answer
from archiver.errors import PageHung
from archiver.request_headers import Negotiation, negotiation
from archiver.sizes import human_bytes
from archiver.urls import try_normalize

if TYPE_CHECKING:
    from playwright.async_api import Route

    from archiver.crawling.browser_pool import Tab

QUIET_SECONDS = 0.5
"""The network counts as quiet after this long without a request in flight."""
IDLE_LIMIT = 10.0
"""Longest wait for quiet at each step (the page's time limit bounds it too)."""
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
ANSWERED_METHODS = frozenset({"GET", "HEAD"})
DECLARED_CLOSED_ROOT = re.compile(
    rb"""shadowrootmode\s*=\s*(?:["']|&quot;|&apos;|&#0*3[49];)?\s*closed""", re.IGNORECASE
)
"""What declares a closed shadow root in HTML (``<template shadowrootmode="closed">``, in a
frame's srcdoc too, its quotes escaped)."""
CLOSE_SECONDS = 5.0
"""Time given a popup to close once its page's render ends."""
FRAME_ORIGIN_WAIT = 2.0
"""Seconds a frame is given to tell its origin (browser._frame_origin)."""

HEIGHT_SCRIPT = "() => (document.scrollingElement || document.documentElement || {}).scrollHeight || 0"
SCROLL_SCRIPT = """async ({steps, pause}) => {
  const height = () => (document.scrollingElement || document.documentElement || {}).scrollHeight || 0;
  const before = height();
  for (let step = 0; step < steps; step++) {
    const top = window.scrollY;
    window.scrollBy(0, window.innerHeight);
    await new Promise(resolve => setTimeout(resolve, pause));
    if (window.scrollY === top) break;
  }
  return [before, height()];
}"""


@dataclass(frozen=True)
class Asked:
    """What the browser sent with a request that the crawl's request for its URL carries too."""

    negotiation: Negotiation = ()
    """The headers that choose its answer (request_headers.negotiation)."""
    referer: str | None = None
    """The Referer it sent (its page's and its element's referrer policies applied), or None."""
    cookies: tuple[dict[str, Any], ...] = ()
    """The cookies it sent, as its context holds them (name, value, domain, path, expires,
    secure...: Playwright's form), those the page's scripts set among them."""
    held: tuple[dict[str, Any], ...] | None = None
    """Every cookie its context held as it sent it (None: unknown), in that form: one held
    before and held no more was deleted (a script's ``max-age=0``) or expired."""
    credentials: bool = True
    """False for a CORS-mode request of another origin (it sent an Origin) that went without a
    Cookie: its credentials mode keeps them home (a script's fetch() of another origin, a
    crossorigin image), and the crawl's request sends none either."""
    client: str | None = None
    """For a stylesheet a frame of the page asked for: the origin of that frame's document, whose
    stylesheet it is (``null`` for a frame its sandbox leaves no origin); None for the page's."""


Answerer = Callable[[str, Asked], Awaitable[Answer | None]]
"""Normalised URL and what the browser asked it with -> its stored response (captured through
the crawl first, asked alike), or None to refuse it."""


@dataclass
class PageNetwork:
    """The requests of one rendered page, each answered by ``answer``."""

    page_url: str
    answer: Answerer
    page: Any = None
    """The tab's page: a request of another (a popup the page opened) is refused."""
    requested: set[str] = field(default_factory=set)
    """Normalised URLs the page asked for and was answered."""
    navigations: set[str] = field(default_factory=set)
    """URLs the main frame tried to navigate to (refused; they are links of the page)."""
    navigated_away: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the main frame tried to navigate away (the page's load event never comes then)."""
    refused: list[str] = field(default_factory=list)
    """What was refused, and why, for the log."""
    document_answered: bool = False
    """Whether the page's own document was answered: any navigation of the main frame after it
    (a reload, a form posted) would replace the page, and is refused."""
    declares_closed_roots: bool = False
    """Whether the page's document as served declares closed shadow roots (<template
    shadowrootmode="closed">), which are found only through DevTools (_noted_closed_roots)."""
    in_flight: int = 0
    last_change: float = field(default_factory=time.monotonic)

    async def handle(self, route: Route) -> None:
        """Answer one request from the crawl, or refuse it (Playwright's route handler)."""
        self.in_flight += 1
        self.last_change = time.monotonic()
        try:
            await self._handle(route)
        finally:
            self.in_flight -= 1
            self.last_change = time.monotonic()

    async def _handle(self, route: Route) -> None:
        request = route.request
        url = try_normalize(request.url)
        answered = request.method in ANSWERED_METHODS
        if self.page is not None and _of_another_page(request, self.page):
            # A popup (window.open, target=_blank): where it goes is a link of the page, and it
            # loads nothing (loaded, it went on making requests through the renders after).
            if request.is_navigation_request() and url is not None and answered:
                self.navigations.add(url)
            self.refused.append(f"a popup's {request.method} {request.url}")
            await _quietly(route.abort("aborted"))
            return
        if request.is_navigation_request() and _main_frame(request):
            if self.document_answered or url != self.page_url or not answered:
                # The page would be replaced (by another, by itself reloaded, by the answer to
                # a form it posted): refused, so it is kept as it stood ("aborted": a refusal
                # of the client would put the browser's error page in its place).
                if url is not None and answered and url != self.page_url:
                    self.navigations.add(url)
                self.refused.append(f"navigation to {request.method} {request.url}")
                self.navigated_away.set()
                await _quietly(route.abort("aborted"))
                return
            self.document_answered = document = True
        else:
            document = False
        if url is None or not answered:
            self.refused.append(f"{request.method} {request.url}")
            await _quietly(route.abort("blockedbyclient"))
            return
        answer = await self.answer(url, await _asked(request, self.page))
        if answer is None:
            self.refused.append(f"{url}: not captured")
            await _quietly(route.abort("blockedbyclient"))
            return
        self.requested.add(url)
        if document:
            self.declares_closed_roots = DECLARED_CLOSED_ROOT.search(answer.body) is not None
        await _quietly(
            route.fulfill(status=answer.status, headers=_header_dict(answer.headers), body=answer.body)
        )

    async def quiet(self, deadline: float, seconds: float = QUIET_SECONDS) -> bool:
        """Wait until no request has been in flight for ``seconds`` (True), or until ``deadline``."""
        limit = min(deadline, time.monotonic() + IDLE_LIMIT)
        while True:
            now = time.monotonic()
            if self.in_flight == 0 and now - self.last_change >= seconds:
                return True
            if now >= limit:
                return False
            await asyncio.sleep(min(0.05, max(limit - now, 0.001)))


async def _asked(request: Any, page: Any) -> Asked:
    """What ``request`` carried that the crawl's request carries too: Chromium shows the Cookie
    and Referer it chose in the headers of a request it routes."""
    headers = request.headers
    cookies: tuple[dict[str, Any], ...] = ()
    held: tuple[dict[str, Any], ...] | None = None
    if page is not None:
        with contextlib.suppress(Exception):  # the page closed meanwhile: none known
            held = tuple(dict(cookie) for cookie in await page.context.cookies())
    sent = headers.get("cookie")
    if sent and page is not None:
        names = {pair.partition("=")[0].strip() for pair in sent.split(";")}
        with contextlib.suppress(Exception):  # the page closed meanwhile: none kept
            for_url = await page.context.cookies(request.url)
            cookies = tuple(dict(cookie) for cookie in for_url if cookie.get("name") in names)
    credentials = "cookie" in headers or "origin" not in headers
    client = await _frame_origin(request)
    return Asked(negotiation(headers), headers.get("referer"), cookies, held, credentials, client)


async def _frame_origin(request: Any) -> str | None:
    """The origin of the frame's document that asked for a stylesheet with ``request`` (its
    fonts' Origin), as the frame tells it: None for the main frame's, or when it cannot tell."""
    if request.resource_type != "stylesheet" or _main_frame(request):
        return None
    try:
        origin = await asyncio.wait_for(request.frame.evaluate("self.origin"), FRAME_ORIGIN_WAIT)
    except Exception:  # noqa: BLE001 - the frame gone or navigating: its page's origin stands
        return None
    return origin if isinstance(origin, str) and origin.isprintable() else None


def _of_another_page(request: Any, page: Any) -> bool:
    try:
        return bool(request.frame.page != page)
    except Exception:  # noqa: BLE001 - no frame yet: a popup's first navigation (a worker's request has its page's)
        return bool(request.is_navigation_request())


def _main_frame(request: Any) -> bool:
    try:
        return request.frame.parent_frame is None
    except Exception:  # noqa: BLE001 - a request made before its frame exists is not the main frame's
        return False


def _header_dict(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Response headers as Playwright takes them: one value per name (repeated ones joined)."""
    merged: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key in merged:
            merged[key] += ("\n" if key == "set-cookie" else ", ") + value
        else:
            merged[key] = value
    return merged


async def _quietly(action: Awaitable[None]) -> None:
    """Run a route action, ignoring the error a page closed meanwhile gives."""
    from playwright.async_api import Error

    with contextlib.suppress(Error):
        await action


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
    tab busy past then (the tab is to be closed), Playwright's Error if the
    browser fails.
    """
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    network = PageNetwork(url, answer, tab.page)
    page = tab.page
    deadline = time.monotonic() + timeout
    # Of a short limit, a fixed reserve would leave loading nothing: the page load was cut
    # at once, and taking the DOM of a page still navigating failed.
    loaded_by = deadline - min(DOM_RESERVE, timeout / 4)
    dom_by = deadline + DOM_GRACE
    too_large = f"the DOM is larger than {human_bytes(DOM_LIMIT)}"
    error = None
    tab.handler = network.handle
    committed = False
    try:
        if cookies:
            await _give_cookies(tab, cookies, deadline)
        try:
            await page.goto(url, wait_until="commit", timeout=_ms(loaded_by))
            committed = True
            await _loaded(page, network, loaded_by)
        except PlaywrightTimeout:
            error = f"the page did not {'finish' if committed else 'start'} loading in {timeout:g} s"
        if error is None:
            await network.quiet(loaded_by)
            await _scroll(page, network, loaded_by)
        final_url = page.url
        html = charset = None
        try:
            if not committed:
                pass  # the tab still holds the page it showed before: no DOM of this one
            elif final_url.startswith("chrome-error:"):
                error = error or "the browser showed its error page in place of the page"
            elif (state := await _in_page(page, PREPARE_DOM_SCRIPT, url, deadline))[0] == "loading":
                # Its parser waits still (a script of its head that never came): the DOM is a
                # head without a body, less than the page as it was served.
                kept = "the page was still being parsed, so its DOM is not kept"
                error = f"{error}; {kept}" if error else kept
            elif network.declares_closed_roots and not await _noted_closed_roots(page, dom_by):
                error = error or "the page's closed shadow roots could not be read"
            elif isinstance(text := await _in_page(page, DOM_SCRIPT, dom_arguments(DOM_LIMIT), dom_by), int):
                error = error or too_large
            elif text:
                html, charset = text.encode("utf-8", errors="replace"), str(state[1])
            else:  # a script removed the document's root element
                error = error or "the page has no document element"
        except TimeoutError:  # the page answered nothing: its scripts hold its tab (a loop)
            raise PageHung(url, timeout) from None
        held = await _held_cookies(page, dom_by)
    finally:
        tab.handler = None
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


async def _in_page(page: Any, script: str, arg: Any, until: float) -> Any:
    """``script`` evaluated in ``page``, which must answer by ``until`` (else TimeoutError): a
    call into a page whose script loops never returns."""
    return await asyncio.wait_for(page.evaluate(script, arg), max(until - time.monotonic(), 0.001))


async def _noted_closed_roots(page: Any, until: float) -> bool:
    """Hand each closed shadow root of ``page`` to what PAGE_INIT_SCRIPT noted, for DOM_SCRIPT to
    find: one a script attached is noted already, one the HTML declared (``<template
    shadowrootmode="closed">``) no script can reach, only DevTools. Bounded like ``_in_page``;
    False if DevTools failed (a page that is not Chromium's)."""
    from playwright.async_api import Error

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
        await asyncio.wait_for(note(), max(until - time.monotonic(), 0.001))
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
            waiting.add_done_callback(_read)  # asyncio reports an error nobody read
    if not network.navigated_away.is_set():
        load.result()


def _read(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()


async def _scroll(page: Any, network: PageNetwork, deadline: float) -> None:
    """Scroll to the end in steps and wait for quiet; again while that made the page grow (bounded).
    Stops at ``deadline``: a page busy then is judged when its DOM is taken."""
    for _ in range(SCROLL_ROUNDS):
        if time.monotonic() >= deadline:
            return
        try:
            before, after = await asyncio.wait_for(
                page.evaluate(SCROLL_SCRIPT, {"steps": SCROLL_STEPS, "pause": SCROLL_PAUSE_MS}),
                max(deadline - time.monotonic(), 0.001),
            )
            await network.quiet(deadline)
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
