"""Which URLs met on a page the crawl takes on: scope, the frontier's claims, and their rows.

A page's links, a redirect's target, a URL a rendered page asks for and the URLs
a sitemap lists all come through here, so one rule judges them: a URL seen before is nothing new; one
out of scope (or excluded, too deep, nofollow) gets a skipped row, once; any
other gets a queued row and a queue item, if the frontier lets this process
claim it. A URL claimed is its claimer's to queue (queueing()): no other process of a shared
crawl will take it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable, Mapping

from archiver.cors_requests import hop_negotiation, origin_of, redirected_client, with_cors
from archiver.crawling.frontier import Frontier, QueueItem, SeenUrls, request_facts
from archiver.crawling.stats import CrawlStats
from archiver.link_requests import (
    FRAME,
    NO_HINT,
    NO_ORIGIN,
    SANDBOXED,
    Hint,
    policy_sandboxes,
    says,
    tells_reading,
)
from archiver.links import REQUISITE
from archiver.referrer_policy import NO_REFERRER, header_policy, hop_referrer
from archiver.request_headers import Negotiation, destination_negotiation
from archiver.robots_directives import x_robots_nofollow
from archiver.scope import MAX_LINKS_PER_PAGE, NOFOLLOW, Scope, links_kept
from archiver.store.rows import QUEUED, SKIPPED, ManifestRow

log = logging.getLogger("archiver.crawl")

NO_SITE = "null"
"""The site for cookies of what a document of no origin loads (a sandboxed frame's): no site, so
SameSite judges each of its requests cross-site, as Chromium does (its Lax and Strict cookies
stay home, even from the top-level page's own site)."""


class Discovery:
    """Judges the URLs a crawl meets (see the module docstring)."""

    def __init__(
        self,
        frontier: Frontier,
        scope: Scope,
        stats: CrawlStats,
        max_redirects: int,
        max_links: int = MAX_LINKS_PER_PAGE,
    ) -> None:
        self.frontier = frontier
        self.scope = scope
        self.stats = stats
        self.max_redirects = max_redirects
        self.max_links = max_links
        """--max-links-per-page: the links of a page past it are not followed (followed())."""
        self._skipped = SeenUrls()
        """URLs recorded as skipped already (their rows are written once)."""

    @contextlib.asynccontextmanager
    async def queueing(self) -> AsyncIterator[list[QueueItem]]:
        """A list for the items the block claims (what links(), found() and claimed() give), each
        queued as the block ends, whether or not it raises: the frontier holds a URL claimed for
        its claimer alone, so one that went unqueued would never be fetched (a shared crawl would
        wait for it forever). The block hands the items' rows to the writer first."""
        queue: list[QueueItem] = []
        try:
            yield queue
        finally:
            for item in queue:
                await self.frontier.put(item)

    def followed(self, page: str, links: dict[str, str]) -> tuple[dict[str, str], str | None]:
        """The links ({url: kind}) of the page at ``page`` the crawl follows: the first
        --max-links-per-page, in their order (its static parse's, or its rendered DOM's, then where
        its scripts navigated), and the reason its row records when it had more (scope.links_kept()),
        said in the log. Whichever way a page's links are found, they are cut alike, so verify and a
        repair know which of them the crawl met."""
        kept, cut = links_kept(links, self.max_links)
        if cut:
            log.info("%s: %s (--max-links-per-page %d)", page, cut, self.max_links)
        return kept, cut

    async def links(
        self,
        links: dict[str, str],
        item: QueueItem,
        nofollow: bool = False,
        hints: Mapping[str, Hint] | None = None,
        page_policy: str = "",
        client: str | None = None,
        stylesheet: bool = False,
    ) -> tuple[list[ManifestRow], list[QueueItem]]:
        """Rows for the URLs a page links to ({url: kind}) that the crawl has not met, and what to queue.

        With ``nofollow`` (the page's robots meta or X-Robots-Tag), its links are
        recorded as skipped; its requisites are still fetched, so it renders offline.
        Each is requested as ``hints`` say a browser requests it (link_requests.Hint): under the
        referrer policy its element or the page's <meta name="referrer"> gives, else under
        ``page_policy`` (its Referrer-Policy header); with the Accept of its destination and,
        in CORS mode, the Origin of ``client``, the origin of the document whose request it is
        (``item``'s if None; a stylesheet's: that of the document it serves), and the
        credentials CORS mode gives: ``null`` for a document with no origin (a sandboxed frame's or
        srcdoc document's). What it loads is loaded for the top-level page (item's
        site_for_cookies, else item itself), whose site SameSite judges it by; what a document of
        no origin loads or links to is of no site (NO_SITE). A document of no
        origin sends no Referer; a ``stylesheet`` it loads sends its own URL, as in Chromium.
        """
        hints = hints or {}
        met: list[ManifestRow] = []
        queue: list[QueueItem] = []
        depth = item.depth + 1
        client = client or origin_of(item.url)
        top = item.top_level
        for url in self.frontier.unseen(links):
            requisite = links[url] == REQUISITE
            found_by = "requisite" if requisite else "link"
            hint = hints.get(url, NO_HINT)
            words = hint[3].split()
            opaque = NO_ORIGIN in words or says(item.document, SANDBOXED)  # by a document of no origin
            asking = "null" if opaque else client
            negotiation = destination_negotiation(hint[1])
            cors = hint[2] if requisite else ""  # a link followed is a navigation
            if cors:  # a no-cors request names no origin, a null one neither (Chromium 156)
                negotiation = with_cors(negotiation, asking, url, hint[1])
            # A frame in a sandboxed document is sandboxed too; a stylesheet it loads is its, of no
            # origin (its fonts' Origin is null, through any redirect).
            framed = FRAME in words and (SANDBOXED in words or opaque)
            loads_style = requisite and hint[1] == "style"
            said = [SANDBOXED] if framed or (opaque and loads_style) else []
            if loads_style:  # read in its document's encoding, if that is no page's own
                said += [word for word in words if tells_reading(word)]
            document = " ".join(said)
            self.consider(
                url,
                depth,
                requisite,
                found_by,
                item.url,
                met,
                queue,
                self.max_redirects,
                referrer=item.url,
                skip=NOFOLLOW if nofollow and not requisite else None,
                referrer_policy=NO_REFERRER if opaque and not stylesheet else hint[0] or page_policy,
                negotiation=negotiation,
                # A document of no origin is of no site: what it loads, and where its links lead,
                # is cross-site to SameSite (a link's Lax cookies go, its Strict ones do not).
                site_for_cookies=NO_SITE if opaque else top if requisite else None,
                cors=cors,
                client=asking if requisite else None,
                document=document,
            )
        return await self.claimed(met, queue)

    async def found(
        self, urls: Iterable[str], *, found_by: str, parent: str, depth: int
    ) -> tuple[list[ManifestRow], list[QueueItem]]:
        """Rows for URLs met outside a page (those a sitemap lists) that the crawl has not met,
        judged like links, and what to queue once the rows are handed to the writer."""
        met: list[ManifestRow] = []
        queue: list[QueueItem] = []
        for url in dict.fromkeys(urls):  # claimed once: a URL listed twice is one URL
            self.consider(url, depth, False, found_by, parent, met, queue, self.max_redirects)
        return await self.claimed(met, queue)

    def redirected(
        self,
        item: QueueItem,
        target: str,
        referrer_policy: str,
        met: list[ManifestRow],
        queue: list[QueueItem],
    ) -> None:
        """Meet ``target``, where ``item`` redirects, as its chain's next hop: by a link's scope
        rules (a target met before ends the chain: chains meet), asked as a browser asks it,
        as it asked the first hop, but under ``referrer_policy`` (a redirect's own header
        changes the policy of the hops after it), its Referer made from the one ``item`` was
        sent (what a hop left out stays out: hop_referrer()) and, for a CORS-mode request, with
        the Origin Fetch gives: null once it went from another origin than its own to a third."""
        negotiation, client = item.negotiation, item.client
        if item.cors and client is not None:
            client = redirected_client(client, item.url, target)
            negotiation = hop_negotiation(negotiation, client, target)
        self.consider(
            target,
            item.depth,
            item.requisite,
            "redirect",
            item.url,
            met,
            queue,
            item.redirects_left - 1,
            (*item.chain, item.url),
            referrer=item.referrer,
            seed_chain=item.depth == 0,  # only a seed and its redirects have depth 0
            negotiation=negotiation,
            referrer_policy=referrer_policy,
            site_for_cookies=item.site_for_cookies,
            cors=item.cors,
            client=client,
            document=item.document,
            hop_referrer=hop_referrer(item.hop_referrer or item.referrer, item.url, item.referrer_policy),
        )

    def consider(
        self,
        url: str,
        depth: int,
        requisite: bool,
        found_by: str,
        parent: str,
        met: list[ManifestRow],
        queue: list[QueueItem],
        redirects_left: int,
        chain: tuple[str, ...] = (),
        referrer: str | None = None,
        skip: str | None = None,
        seed_chain: bool = False,
        negotiation: Negotiation = (),
        referrer_policy: str = "",
        site_for_cookies: str | None = None,
        cors: str = "",
        client: str | None = None,
        document: str = "",
        hop_referrer: str | None = None,
    ) -> None:
        """Add a skipped row for ``url``, or a queued row and an item (to claim), unless it was seen.

        ``skip``: a reason to skip it whatever the scope says. ``seed_chain``: it is where
        a seed redirects, part of the seed, which only --exclude keeps out. ``negotiation``,
        ``referrer_policy``, ``site_for_cookies``, ``cors``, ``client``, ``document`` and
        ``hop_referrer``: what its request carries (QueueItem's).
        """
        if self.frontier.seen(url):
            return
        reason = skip or self.scope.skip_reason(url, depth, requisite or seed_chain)
        if reason:
            if self._skipped.claim(url):  # record once; it may still be claimed later
                self.stats.skipped += 1
                met.append(
                    ManifestRow(
                        url=url, found_by=found_by, parent=parent, depth=depth, outcome=SKIPPED, reason=reason
                    )
                )
            return
        item = QueueItem(
            url,
            depth,
            redirects_left,
            requisite,
            chain,
            found_by,
            parent,
            referrer,
            0,
            negotiation,
            referrer_policy,
            site_for_cookies,
            cors,
            client,
            document,
            hop_referrer,
        )
        request = request_facts(item, self.max_redirects)
        met.append(
            ManifestRow(
                url=url, found_by=found_by, parent=parent, depth=depth, outcome=QUEUED, request=request
            )
        )
        queue.append(item)

    async def claimed(
        self, met: list[ManifestRow], queue: list[QueueItem]
    ) -> tuple[list[ManifestRow], list[QueueItem]]:
        """``met`` and ``queue`` without the URLs the frontier refuses to claim (claimed elsewhere).

        One call for all of a page's new URLs: a shared frontier answers in one round trip.
        """
        if not queue:
            return met, queue
        claimed = await self.frontier.claim([queued.url for queued in queue], queue)
        if all(claimed):
            return met, queue
        refused = {queued.url for queued, ok in zip(queue, claimed, strict=True) if not ok}
        met = [row for row in met if row.outcome != QUEUED or row.url not in refused]
        return met, [queued for queued in queue if queued.url not in refused]


def stylesheet_client(item: QueueItem) -> str | None:
    """The origin of the document the stylesheet ``item`` serves, whose requests its fonts and
    images are (a frame's, not its top-level page's): the client it was loaded for, as far as
    the crawl knows it (else the top-level page's, else the one that linked it): ``null`` for a
    document with no origin (a sandboxed frame's, its document SANDBOXED, through any redirect),
    not for a stylesheet a redirect led from another origin to a third (Fetch taints its
    request's origin, not its document's)."""
    if says(item.document, SANDBOXED):
        return "null"
    if item.client is not None and (item.client != "null" or item.found_by != "redirect"):
        return item.client
    document = item.site_for_cookies or item.referrer
    return origin_of(document) if document else None


def referrer_policy_of(headers: Iterable[tuple[str, str]]) -> str:
    """The referrer policy the Referrer-Policy headers of an answer give ('' for none)."""
    return header_policy(value for name, value in headers if name.lower() == "referrer-policy")


@dataclasses.dataclass(frozen=True)
class PageHeaders:
    """What the headers of a page's answer say of the links found on it: read alike for the links
    of the page as served and for those of its rendered DOM, however long after its capture (a
    render an interrupted crawl left reads them from the page's stored answer)."""

    nofollow: bool
    """Its X-Robots-Tag says not to follow them (for every robot, or for ours by name)."""
    referrer_policy: str
    """What its Referrer-Policy headers give ('' for none): its links are requested under it,
    unless their element or a <meta name="referrer"> says otherwise."""
    sandboxed: bool
    """Its Content-Security-Policy sandboxes it without allow-same-origin: its links are asked for
    as from a document of no origin, as a sandboxed frame's are (link_requests.policy_sandboxes())."""

    @classmethod
    def of(cls, headers: Iterable[tuple[str, str]], agent: str) -> PageHeaders:
        """What ``headers`` say, to a crawler whose name in robots directives is ``agent``."""
        pairs = list(headers)
        robots = (value for name, value in pairs if name.lower() == "x-robots-tag")
        policies = (value for name, value in pairs if name.lower() == "content-security-policy")
        return cls(x_robots_nofollow(robots, agent), referrer_policy_of(pairs), policy_sandboxes(policies))

    def asking(self, item: QueueItem) -> QueueItem:
        """``item``, the page, as the document that asks for its links: SANDBOXED if its
        Content-Security-Policy sandboxes it (and was not said so yet)."""
        if not self.sandboxed or says(item.document, SANDBOXED):
            return item
        return dataclasses.replace(item, document=" ".join([SANDBOXED, *item.document.split()]))
