"""The DevTools session of a tab's page: each answer given to Chromium exactly as stored, the
hops of each redirect answered at their own URLs.

Playwright's routing (page_network.py) answers a request with ``route.fulfill``, which gives
Chromium less than the stored answer: a status of 0 becomes 200, each status its own reason
phrase ("Unknown" past its table, "OK" for 200 where the status line named none), and a
request of another origin the CORS headers that allow it (Access-Control-Allow-Origin,
-Credentials), which Chromium alone would refuse when the server sent none. Handed a
redirect, it lets Chromium follow the hop past the routing, to the network, which the crawl's
browser cannot reach: answering the chain's first URL with its end instead made the end's
document or stylesheet live at the first URL (its relative links, its base and the Referer of
what it loads were the first URL's).

So each tab's page has a DevTools session of its own with the Fetch domain on (PageDevtools),
which Chromium asks before Playwright's routing for every request of the page, and again for
its response once the routing gave one. A request goes on to the routing; the response it got
is given again as stored (``Given.given``) where it differs in status, reason phrase or the
headers it holds. The next hop of a redirect is answered here (``Given.follow``), through the
crawl, as a fulfilled response, another redirect among them, whose next hop Chromium asks for
here in turn. Chromium runs every frame of the page in the page's own renderer
(chromium.CHROMIUM_ARGS: no site isolation), so the session sees the requests of frames of
other sites too.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from archiver.cors_requests import hop_negotiation, redirected_client
from archiver.crawling.stored_answers import Answer

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, CDPSession, Page

    from archiver.crawling.page_network import Asked

log = logging.getLogger("archiver.crawl")

EVERY_REQUEST = {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}
REFUSED = "BlockedByClient"
"""The error a hop the crawl does not answer fails with (Playwright's abort("blockedbyclient"))."""
NOT_GIVEN = frozenset({"speculation-rules"})
"""Response headers kept in the WARC but not given to Chromium: a Speculation-Rules header names
rules by which Chromium would prefetch and prerender pages past the crawl (chromium.py)."""


@dataclass(frozen=True)
class Hop:
    """The next hop of a redirect, as Chromium asks for it."""

    url: str
    method: str
    headers: dict[str, str]
    """Its request headers, names lowercased (as Playwright shows a routed request's)."""


class Given(Protocol):
    """What the render under way gave (page_network.PageNetwork provides it)."""

    def given(self, url: str) -> Answer | None:
        """The answer the routing gave the request of ``url`` (as Chromium wrote it), if any."""

    async def follow(self, hop: Hop) -> Answer | None:
        """The answer of the next hop of a redirect (captured through the crawl first), or None
        to refuse it."""


class PageDevtools:
    """The DevTools session of one tab's page (see the module docstring); ``render`` is the render
    under way (None between renders: a hop is refused, a response goes as it is)."""

    def __init__(self, session: CDPSession) -> None:
        self.session = session
        self.render: Given | None = None
        self._answering: set[asyncio.Task[None]] = set()

    @classmethod
    async def open(cls, context: BrowserContext, page: Page) -> PageDevtools:
        """The session of ``page``, asked by Chromium for each request of it from now on."""
        devtools = cls(await context.new_cdp_session(page))
        devtools.session.on("Fetch.requestPaused", devtools._paused)
        await devtools.session.send("Fetch.enable", EVERY_REQUEST)
        return devtools

    def _paused(self, event: dict[str, Any]) -> None:
        task = asyncio.ensure_future(self._answer(event))
        self._answering.add(task)  # held: a task nobody holds may be collected before it runs
        task.add_done_callback(self._answering.discard)

    async def _answer(self, event: dict[str, Any]) -> None:
        """Let a request through to the routing (asking for its response back), give a response
        as stored, or answer the next hop of a redirect; a page closed meanwhile leaves nothing
        to answer."""
        from playwright.async_api import Error

        request_id = event["requestId"]
        with contextlib.suppress(Error):
            if "responseErrorReason" in event:  # failed in the routing: it fails so
                await self.session.send("Fetch.continueRequest", {"requestId": request_id})
            elif "responseStatusCode" in event:
                render = self.render
                answer = render.given(event["request"]["url"]) if render is not None else None
                if answer is None or as_stored(event, answer):
                    await self.session.send("Fetch.continueResponse", {"requestId": request_id})
                else:
                    await self._fulfil(request_id, answer)
            elif event.get("redirectedRequestId") is None:
                onward = {"requestId": request_id, "interceptResponse": True}
                await self.session.send("Fetch.continueRequest", onward)
            elif (answer := await self._answer_hop(event["request"])) is None:
                refusal = {"requestId": request_id, "errorReason": REFUSED}
                await self.session.send("Fetch.failRequest", refusal)
            else:
                await self._fulfil(request_id, answer)

    async def _fulfil(self, request_id: str, answer: Answer) -> None:
        fulfilled: dict[str, Any] = {
            "requestId": request_id,
            "responseCode": answer.status,
            "responseHeaders": [
                {"name": name, "value": value} for name, value in given_headers(answer.headers)
            ],
            "body": base64.b64encode(answer.body).decode("ascii"),
            # Given even when empty: left out, Chromium would show its own phrase ("OK") where
            # the status line named none, which it shows as it came. It refuses an empty phrase,
            # and reads a space as none (its status line's spaces at the end are dropped).
            "responsePhrase": answer.reason or " ",
        }
        await self.session.send("Fetch.fulfillRequest", fulfilled)

    async def _answer_hop(self, request: dict[str, Any]) -> Answer | None:
        render = self.render
        if render is None:
            return None
        headers = {str(name).lower(): str(value) for name, value in request.get("headers", {}).items()}
        hop = Hop(str(request["url"]), str(request["method"]), headers)
        try:
            return await render.follow(hop)
        except Exception:  # a hop left unanswered would hold its frame loading until the page's limit
            log.exception("error answering the redirect hop to %s", hop.url)
            return None


def as_stored(event: dict[str, Any], answer: Answer) -> bool:
    """Whether the response of a paused request (``event``, at its response stage) is ``answer``
    as stored: its status, its reason phrase (an empty one too), and no header it does not hold.

    >>> answer = Answer(200, "Fine", [("Content-Type", "text/css")], b"", "text/css", None)
    >>> head = {"responseStatusCode": 200, "responseStatusText": "Fine"}
    >>> as_stored({**head, "responseHeaders": [{"name": "content-type", "value": "text/css"}]}, answer)
    True
    >>> cors = [{"name": "access-control-allow-origin", "value": "http://h"}]
    >>> as_stored({**head, "responseHeaders": cors}, answer)
    False
    >>> as_stored({**head, "responseStatusText": "OK"}, answer)
    False
    >>> as_stored({**head, "responseStatusText": "OK"}, dataclasses.replace(answer, reason=""))
    False
    """
    if event.get("responseStatusCode") != answer.status:
        return False
    if event.get("responseStatusText", "") != answer.reason:
        return False
    held = {name.lower() for name, _value in answer.headers}
    return all(str(header.get("name", "")).lower() in held for header in event.get("responseHeaders", []))


def given_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The response headers Chromium is given of those stored: all but NOT_GIVEN.

    >>> given_headers([("Content-Type", "text/html"), ("Speculation-Rules", '"/rules.json"')])
    [('Content-Type', 'text/html')]
    """
    return [(name, value) for name, value in headers if name.lower() not in NOT_GIVEN]


def next_hop(how: Asked, url: str, target: str) -> Asked:
    """What the browser asks the hop to ``target`` of a redirect at ``url`` with: as it asked the
    first, but a CORS-mode request's Origin, null once tainted (cors_requests.redirected_client)."""
    origin = dict(how.negotiation).get("Origin")
    if origin is None:
        return how
    client = redirected_client(origin, url, target)
    negotiation = hop_negotiation(how.negotiation, client, target)
    return dataclasses.replace(how, negotiation=negotiation)
