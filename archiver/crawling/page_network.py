"""The network of one rendered page: each request its tab makes, answered through the crawl.

The tab never reaches the network itself: every request, from the document to
the last lazy image, passes through PageNetwork.handle (Playwright routing on
the whole browser context), which asks the crawl for the URL's stored response
(``Answerer``), asked as the browser asked it (``Asked``: the headers that
choose its answer, its Referer, its cookies and credentials mode, the frame
whose stylesheet it is), and fulfils the request with it; what is refused and
why is browser.py's account. PageNetwork.quiet tells when the page's network
has gone quiet.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from archiver.crawling.chromium import longest_wait_since
from archiver.crawling.page_devtools import Hop, given_headers, next_hop
from archiver.crawling.request_frames import FRAME_ORIGIN_WAIT, FrameFacts, main_frame
from archiver.crawling.stored_answers import Answer
from archiver.link_requests import READ_IN, SANDBOXED, SRCDOC
from archiver.request_headers import Negotiation, negotiation
from archiver.urls import header_url, try_normalize

if TYPE_CHECKING:
    from playwright.async_api import Route

QUIET_SECONDS = 0.5
"""The network counts as quiet after this long without a request in flight."""
QUIET_STEP = 0.05
"""Seconds between two looks at the page's requests while waiting for quiet."""
IDLE_LIMIT = 10.0
"""Longest wait for quiet at each step (the page's time limit bounds it too)."""
ANSWERED_METHODS = frozenset({"GET", "HEAD"})
DECLARED_CLOSED_ROOT = re.compile(
    rb"""shadowrootmode\s*=\s*(?:["']|&quot;|&apos;|&#0*3[49];)?\s*closed""", re.IGNORECASE
)
"""What declares a closed shadow root in HTML (``<template shadowrootmode="closed">``, in a
frame's srcdoc too, its quotes escaped)."""


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
    document: str = ""
    """For a frame's document: link_requests.SANDBOXED if its iframe's sandbox (or its parent's
    lack of one) leaves it no origin, as QueueItem.document says; for a stylesheet of a frame
    whose document is no fetched one and is UTF-8 (about:srcdoc, about:blank a script wrote, a
    blob: or data: URL whose type names that charset), which Chromium reads in UTF-8 whatever its
    page's encoding: link_requests.SRCDOC; for one of such a frame read in another encoding (a
    blob: or data: URL's type names Shift_JIS): link_requests.READ_IN and that codec; '' for any
    other."""
    opaque: bool = False
    """True when a frame's document of no origin asked for it (a sandboxed frame's, or a frame
    navigated by one): of no site, it is cross-site to SameSite. The page's own document is
    judged by its queue item (QueueItem.document)."""
    frame: str | None = None
    """The URL (normalised) of the frame's document that asked for it, when that document was
    fetched from an http(s) URL of its own (a page of the crawl); None for the page's own and for
    a frame's built by a script."""


NOTHING_ASKED = Asked()
"""A request the browser sent nothing of note with."""


RunWaits = Callable[..., dict[int, float] | None]
"""The seconds each process a page runs in has waited for a CPU so far (Tab.waits: called with
True, its processes are found again), None where that cannot be known."""


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
    """Normalised URLs the page asked for and was answered (not the next hops of their redirects,
    which the crawl found in their answers)."""
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
    fetching: int = 0
    """Requests of the page the crawl is answering now (fetching them, or reading them back from
    the snapshot): a page that waits on them waits on the network, not on the browser."""
    last_change: float = field(default_factory=time.monotonic)
    handing_over: int = 0
    """Answers given to the browser that it has not taken yet (each a moment, but for a browser
    the machine stops: see quiet())."""
    answers_given: dict[str, Answer] = field(default_factory=dict)
    """The answer each request was fulfilled with, by its URL as the browser wrote it: the page's
    DevTools session gives it again where Playwright's fulfilment changed it (page_devtools.py)."""
    next_hops: dict[str, Asked] = field(default_factory=dict)
    """What the next hop of each redirect answered is asked with (page_devtools.next_hop()), by
    its normalised URL."""

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
        if request.is_navigation_request() and main_frame(request):
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
        asked = await _asked(request, self.page)
        answer = await self._fetched(url, asked)
        if answer is None:
            self.refused.append(f"{url}: not captured")
            await _quietly(route.abort("blockedbyclient"))
            return
        self.requested.add(url)
        self._redirecting(url, answer, asked)
        if document:
            self.declares_closed_roots = DECLARED_CLOSED_ROOT.search(answer.body) is not None
        self.answers_given[request.url] = answer
        self.handing_over += 1
        try:
            headers = _header_dict(given_headers(answer.headers))
            await _quietly(route.fulfill(status=answer.status, headers=headers, body=answer.body))
        finally:
            self.handing_over -= 1

    def given(self, url: str) -> Answer | None:
        """The answer the request of ``url`` (as the browser wrote it) was fulfilled with, if any."""
        return self.answers_given.get(url)

    async def follow(self, hop: Hop) -> Answer | None:
        """Answer the next hop of a redirect answered to this page (page_devtools.py), asked for
        as the hop before it was (``next_hops``); None to refuse it."""
        self.in_flight += 1
        self.last_change = time.monotonic()
        try:
            url = try_normalize(hop.url)
            if url is None or hop.method not in ANSWERED_METHODS:
                self.refused.append(f"{hop.method} {hop.url}")
                return None
            asked = self.next_hops.get(url) or Asked(negotiation(hop.headers), hop.headers.get("referer"))
            answer = await self._fetched(url, asked)
            if answer is None:
                self.refused.append(f"{url}: not captured")
                return None
            self._redirecting(url, answer, asked)
            return answer
        finally:
            self.in_flight -= 1
            self.last_change = time.monotonic()

    async def _fetched(self, url: str, asked: Asked) -> Answer | None:
        """The crawl's answer to the request of ``url``, counted in ``fetching`` while it comes."""
        self.fetching += 1
        try:
            return await self.answer(url, asked)
        finally:
            self.fetching -= 1

    def _redirecting(self, url: str, answer: Answer, asked: Asked) -> None:
        """Note what the next hop of ``answer``, given for ``url`` as ``asked``, is asked with, if it
        is a redirect: Chromium follows it, and asks for that hop through page_devtools.py."""
        location = next((value for name, value in answer.headers if name.lower() == "location"), None)
        if not 300 <= answer.status < 400 or location is None:
            return
        target = try_normalize(header_url(location), url)
        if target is not None:
            self.next_hops[target] = next_hop(asked, url, target)

    async def quiet(
        self,
        deadline: float,
        seconds: float = QUIET_SECONDS,
        held_until: float | None = None,
        waits: RunWaits | None = None,
    ) -> bool:
        """Wait until no request has been in flight for ``seconds`` (True), or until ``deadline``.

        The ``seconds`` count from the wait's start at the earliest (a request the page's scripts
        make on its load reaches handle() a moment after the load, through Playwright's driver),
        and with ``waits``, less the time the page's processes waited for a CPU meanwhile: a
        page the machine kept from running made no request because it could not.

        With ``held_until``, the page gets its ``seconds`` past ``deadline`` if need be, until
        ``held_until`` at most: once after the wait's start (a load the machine held back ends
        past the deadline) and again whenever an answer the browser has not taken yet
        (``handing_over``: one the machine stops takes none) is taken, to run what it asked it
        for, rather than have its DOM taken before its scripts read the answer."""
        began = time.monotonic()
        at_start = waits(True) if waits is not None else None
        limit = min(deadline, began + IDLE_LIMIT)
        once = max(limit, began + seconds + QUIET_STEP)  # the window after the start, past deadline
        change, at_change = self.last_change, at_start
        while True:
            now = time.monotonic()
            waited = waits() if waits is not None else None
            if change != self.last_change:  # a request began or ended: its silence counts from then
                change, at_change = self.last_change, waited
            silent = now - max(self.last_change, began) - _waited_since(at_change, waited)
            if self.in_flight == 0 and silent >= seconds:
                return True
            if held_until is not None:
                limit = max(limit, min(held_until, once + _waited_since(at_start, waited)))
                if self.handing_over:
                    limit = max(limit, min(held_until, now + seconds + QUIET_STEP))
            if now >= limit:
                return False
            await asyncio.sleep(min(QUIET_STEP, max(limit - now, 0.001)))


def _waited_since(before: dict[int, float] | None, now: dict[int, float] | None) -> float:
    """The longest wait for a CPU of the page's processes between two readings of RunWaits."""
    return longest_wait_since(before, now) if before is not None and now is not None else 0.0


async def _asked(request: Any, page: Any) -> Asked:
    """What ``request`` carried that the crawl's request carries too: Chromium shows the Cookie
    and Referer it chose in the headers of a request it routes. Each fact of its frame (the
    origin of the document asking, the cookies held for its URL) is asked of the browser once."""
    headers = request.headers
    held: tuple[dict[str, Any], ...] | None = None
    if page is not None:
        with contextlib.suppress(Exception):  # the page closed meanwhile: none known
            held = tuple(dict(cookie) for cookie in await page.context.cookies())
    sent = headers.get("cookie")
    cors_without_cookie = "cookie" not in headers and "origin" in headers
    may_include = cors_without_cookie and request.resource_type in CROSSORIGIN_TYPES
    for_url = await _cookies_for(request.url, page) if sent or may_include else ()
    cookies: tuple[dict[str, Any], ...] = ()
    if sent:
        names = {pair.partition("=")[0].strip() for pair in sent.split(";")}
        cookies = tuple(cookie for cookie in for_url if cookie.get("name") in names)
    credentials = not cors_without_cookie or (may_include and await _includes(request, page, for_url))
    frame = FrameFacts.of(request)
    asking = await frame.asking_origin()
    client = asking if request.resource_type == "stylesheet" and not frame.navigation else None
    words = [SANDBOXED] if await frame.leaves_no_origin(asking) else []
    frame_url = frame.document_url()
    built_in = await frame.built_in(frame_url) if request.resource_type == "stylesheet" else None
    if built_in == "utf-8":
        words.append(SRCDOC)  # its document is UTF-8, as an iframe's srcdoc document is
    elif built_in is not None:
        words.append(READ_IN + built_in)
    document = " ".join(words)
    return Asked(
        negotiation(headers),
        headers.get("referer"),
        cookies,
        held,
        credentials,
        client if client is None or client.isprintable() else None,
        document,
        asking == "null",
        try_normalize(frame_url) if frame_url.startswith(("http:", "https:")) else None,
    )


async def _cookies_for(url: str, page: Any) -> tuple[dict[str, Any], ...]:
    """The cookies the context of ``page`` holds for ``url`` (none once the page closed)."""
    if page is None:
        return ()
    with contextlib.suppress(Exception):  # the page closed meanwhile: none kept
        return tuple(dict(cookie) for cookie in await page.context.cookies(url))
    return ()


INCLUDING_ELEMENT = """url => [...document.querySelectorAll('[crossorigin]')].some(e =>
    e.crossOrigin === 'use-credentials' && [e.src, e.href, e.currentSrc].includes(url))"""
"""Whether an element of a document asks for ``url`` with crossorigin=use-credentials."""


CROSSORIGIN_TYPES = frozenset({"image", "script", "stylesheet", "media"})
"""The resource types of requests an element's crossorigin attribute may put in CORS mode (a font's,
a fetch()'s or a manifest's mode is never an element's to say)."""


async def _includes(request: Any, page: Any, held_for_url: tuple[dict[str, Any], ...]) -> bool:
    """Whether a CORS-mode request that went without a Cookie (of CROSSORIGIN_TYPES) was in
    credentials mode include all the same: it had none to send (``held_for_url``: the cookies
    its context held for its URL), and an element of its frame asks for its URL with
    crossorigin=use-credentials. Then the crawl's request sends credentials and keeps the
    cookies its answer sets, as the browser does; it went without."""
    if page is None or held_for_url:
        return False  # had it cookies to send and sent none, its mode keeps them home
    try:
        found = await asyncio.wait_for(
            request.frame.evaluate(INCLUDING_ELEMENT, request.url), FRAME_ORIGIN_WAIT
        )
    except Exception:  # noqa: BLE001 - the page or frame gone, or a worker's request: not known to include
        return False
    return found is True


def _of_another_page(request: Any, page: Any) -> bool:
    try:
        return bool(request.frame.page != page)
    except Exception:  # noqa: BLE001 - no frame yet: a popup's first navigation (a worker's request has its page's)
        return bool(request.is_navigation_request())


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
