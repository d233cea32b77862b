"""What a page's render asks of the crawl: each URL the browser requests, and what the render found.

The renderer (crawling/renderer.py) drives the browser; ``CrawlPages`` is its
side of the crawler (the ``Pages`` protocol), and answer_for() answers each
request of the page from the snapshot. Every request a page makes is captured
first, if it was not yet, through ensure(), under the same scope, limits, robots.txt
and politeness as a URL of the queue, and is fetched once, by whoever comes
first (crawling/settling.py); what the render found comes back through
rendered(), as a page's links do.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from archiver.crawling.discovery import NO_SITE, PageHeaders
from archiver.crawling.frontier import QueueItem, requeued
from archiver.crawling.page_network import NOTHING_ASKED, Asked
from archiver.crawling.stored_answers import Answer, StoredAnswers
from archiver.crawling.writer import RenderNote, WriteItem
from archiver.link_requests import INCLUDE, OMIT, SANDBOXED, Hint, says, tells_reading
from archiver.links import REQUISITE
from archiver.referrer_policy import policy_sending
from archiver.robots_directives import meta_nofollow, robots_agent
from archiver.store.frames import ran_in_a_render
from archiver.store.rows import FAILED, QUEUED, ManifestRow
from archiver.urls import try_normalize

if TYPE_CHECKING:
    from archiver.crawling.crawler import Crawler


ENSURE_TRIES = 3
"""Times a URL is asked of the crawler before the browser is refused it (it went back to the queue)."""


class Pages(Protocol):
    """What the renderer needs of the crawler (render_pages.CrawlPages provides it)."""

    @property
    def stopped(self) -> bool:
        """True once the crawl is stopping."""

    def stop(self, reason: str) -> None:
        """Stop the crawl, resumable, saying ``reason``."""

    async def settled(self, url: str) -> None:
        """Return once the capture of ``url`` (if any is under way) is committed."""

    async def encoding_of(self, url: str) -> str | None:
        """The encoding the crawl read the document at ``url`` in, if it is not UTF-8 (read back
        from the snapshot when not kept: crawling/referrers.py)."""

    async def ensure(self, url: str, page: QueueItem, how: Asked = NOTHING_ASKED) -> None:
        """Return once ``url``, asked for by the render of ``page`` as ``how`` says (what the
        browser sent with it, which its capture sends too: page_network.Asked), has a committed
        outcome."""

    def begin_render(self, url: str) -> None:
        """Note that the render of the page at ``url`` is under way: a page found loaded as its
        frame is noted so until rendered() stores what it gave."""

    def render_ended(self, url: str) -> bool:
        """Note that the render of ``url`` is over; True if rendered() stored nothing of it (the
        render failed on the way), which must then be stored for the writer to let it go."""

    async def rendered(
        self,
        page: QueueItem,
        links: dict[str, str],
        note: RenderNote,
        nofollow: bool = False,
        hints: dict[str, Hint] | None = None,
        headers: Sequence[tuple[str, str]] = (),
        metas: frozenset[str] = frozenset(),
    ) -> None:
        """Store what rendering ``page`` gave: its DOM and its links ({url: kind}), not followed
        if ``nofollow`` (or its answer's ``headers`` say so, or its robots metas, static or
        rendered: ``metas``, the names of those saying nofollow), each requested as ``hints``
        say (link_requests.Hint), else as those headers say."""


class CrawlPages:
    """The crawler as a page's render sees it."""

    def __init__(self, crawler: Crawler, row_of: Callable[[str], ManifestRow | None] | None = None) -> None:
        """``row_of``: the committed manifest row of a URL (StoredAnswers.row), where a URL queued
        and asked for by a browser before its turn finds the facts of its queue item."""
        self.crawler = crawler
        self.row_of = row_of
        self._rendering: set[str] = set()
        """The pages whose render is under way and has stored nothing yet: the writer holds the
        frames noted of each until its DOM record is written (Writer._frames), and is told of
        no frame of a render whose record is written, which it would hold for ever."""

    def begin_render(self, url: str) -> None:
        """Note that the render of ``url`` is under way (frames loaded in it are noted so)."""
        self._rendering.add(url)

    def render_ended(self, url: str) -> bool:
        """Note that the render of ``url`` is over; True if rendered() stored nothing of it."""
        if url not in self._rendering:
            return False
        self._rendering.discard(url)
        return True

    @property
    def stopped(self) -> bool:
        return self.crawler.stopped

    def stop(self, reason: str) -> None:
        self.crawler.stop(reason)

    async def settled(self, url: str) -> None:
        """Return once the capture of ``url`` under way (if any) is committed."""
        await self.crawler.settling.wait(url)

    async def encoding_of(self, url: str) -> str | None:
        """The encoding the crawl read the document at ``url`` in (crawling/referrers.py)."""
        return await self.crawler.referrers.of(url)

    async def ensure(self, url: str, page: QueueItem, how: Asked = NOTHING_ASKED) -> None:
        """Return once ``url``, which the render of ``page`` asks for, has a committed outcome.

        A URL in flight is waited for; one queued but not started is captured now, as it was
        queued (its queue item, read back from its manifest row, is passed over later); one
        never met is judged as a requisite of ``page``, or of the page of its frame that asked
        for it (_asking_page()), scope, then limits and robots.txt, and captured or recorded as
        skipped. A capture made here is asked for with
        ``how.negotiation``, the headers the browser chose its answer with (Accept...), and the
        Referer it sent (``how.referer``: the browser applied the referrer policies; None, it
        sent none): from the document that linked it, under a policy that sends that Referer
        (referrer_policy.policy_sending()), which the hops of a redirect apply again; a stylesheet
        is read in that document's encoding. One that sent an Origin is a CORS-mode
        request of that origin, whose hops send theirs as Fetch says; without
        ``how.credentials`` (it went without a cookie), it and its hops send none.
        ``how.client``: the origin of the frame's document that asked for it (a stylesheet: its
        fonts' Origin), if not the page's; ``how.document``: link_requests.SANDBOXED for a frame
        its sandbox leaves no origin, whose own requests are asked for as such
        (QueueItem.document). A request of a document of no origin (``page`` when its
        Content-Security-Policy sandboxes it, or a frame's: ``how.opaque``) is of no site, as in
        Chromium: SameSite judges it cross-site (discovery.NO_SITE). Cancelled, a capture begun
        here goes on (the crawl waits for it).
        """
        crawler = self.crawler
        sent = try_normalize(how.referer) if how.referer else None
        settling = crawler.settling
        row = await self._row(url) if url not in settling and crawler.frontier.seen(url) else None
        if row is not None and row.outcome != QUEUED:
            return  # captured meanwhile
        if url in settling:
            await settling.wait(url)
            return
        document = how.document
        if row is not None:
            # Taken ahead as it was queued: found by the document that linked it (the stylesheet
            # that @imports it, a frame's page), read in that document's encoding, as its row says.
            settling.take_ahead(url)
            max_redirects = crawler.config.max_redirects
            item = requeued(url, row.depth, row.found_by, row.parent, max_redirects, row.request)
            document = " ".join(word for word in how.document.split() if not tells_reading(word))
        elif crawler.frontier.seen(url):  # queued by another crawl process: as the page's
            settling.take_ahead(url)
            item = QueueItem(
                url, page.depth + 1, crawler.config.max_redirects, True, (), "requisite", page.url
            )
        else:  # as a link of the page, or of its frame's page that asked for it
            met, queue = await crawler.discovery.links({url: REQUISITE}, await self._asking_page(page, how))
            if met:
                crawler.admission.tell_met(met)
                await crawler.writer.put(WriteItem(None, met=met))
            if not queue:  # skipped (its row is on its way), or claimed by another crawl process
                await crawler.writer.committed()
                return
            item = queue[0]
        # Sent none, its hops send none. SameSite judges it by the page rendered (the top-level
        # page: its Referer may be a stylesheet's or a frame's URL), unless a document of no
        # origin asked for it.
        origin = dict(how.negotiation).get("Origin")
        no_site = how.opaque or says(page.document, SANDBOXED)
        # Its referrer stays the document that linked it (what a stylesheet is read in is that
        # document's encoding), under a policy that sends what the browser sent; else (a
        # stylesheet's or a frame's URL) the Referer sent is its referrer.
        linked_by = item.referrer or page.url
        policy = policy_sending(sent, linked_by, url)
        item = dataclasses.replace(
            item,
            negotiation=how.negotiation,
            referrer=linked_by if policy is not None else sent,
            referrer_policy=policy or "",
            site_for_cookies=NO_SITE if no_site else page.top_level,
            cors=item.cors if origin is None else INCLUDE if how.credentials else OMIT,
            client=origin or how.client or item.client,
            document=" ".join(dict.fromkeys([*item.document.split(), *document.split()])),
        )
        settling.start(url)
        # A task the crawl waits for: the render may end (and cancel this) before the capture
        # does, which then goes on; a capture abandoned left its URL queued in a crawl done.
        await asyncio.shield(crawler.feed(crawler.capture_now(item)))
        await settling.wait(url)

    async def _asking_page(self, page: QueueItem, how: Asked) -> QueueItem:
        """The page a request of the render of ``page`` is found on: the page of the frame that
        asked for it (``how.frame``), whose encoding a stylesheet is read in, as Chromium reads
        it, if that page ran in a render (store/frames.py: rendered too, or loaded as a frame of
        a page that did, which verify then does not read whole from its HTML); else ``page``.
        A frame's page found otherwise (a link of another page) runs in this render all the
        same: it is noted as loaded as a frame of ``page`` (ManifestRow.framed_by), before what
        it asks for, which store/frames.py then counts, for the crawl and verify alike."""
        if self.row_of is None or how.frame in (None, page.url):
            return page
        frame = self.row_of(how.frame)
        if frame is None:
            return page
        if not ran_in_a_render(frame, self.row_of):
            if page.url not in self._rendering:
                # A request the render left in flight when it ended: its DOM record is written,
                # and lists the frames loaded in it no more.
                return page
            framed = dataclasses.replace(frame, framed_by=page.url)
            if frame.framed_by is not None or not ran_in_a_render(framed, self.row_of):
                return page
            await self.crawler.writer.put(WriteItem(None, framed=(frame.url, page.url)))
        return dataclasses.replace(
            page,
            url=frame.url,
            depth=frame.depth,
            requisite=True,
            found_by=frame.found_by,
            parent=frame.parent,
            site_for_cookies=page.top_level,
        )

    async def _row(self, url: str) -> ManifestRow | None:
        """The committed manifest row of ``url``, met already: queued, it keeps the facts of its
        queue item (frontier.request_facts()); None if this crawl process wrote none (another
        claimed it)."""
        if self.row_of is None:
            return None
        row = self.row_of(url)
        if row is None:  # its row may still be on its way to the manifest
            await self.crawler.writer.committed()
            row = self.row_of(url)
        return row

    async def rendered(
        self,
        page: QueueItem,
        links: dict[str, str],
        note: RenderNote,
        nofollow: bool = False,
        hints: dict[str, Hint] | None = None,
        headers: Sequence[tuple[str, str]] = (),
        metas: frozenset[str] = frozenset(),
    ) -> None:
        """Store what rendering ``page`` gave: its DOM record, and its links ({url: kind}) met first,
        as far as --max-links-per-page, as a static parse's are (Discovery.followed(): its row then
        says how many it had); ``nofollow``: the page's robots directives said not to follow them
        when it was fetched; ``hints``: how its DOM says a browser requests them, link_requests.Hint;
        ``headers``: those of its stored answer, read as the static parse's links read them
        (PageHeaders: X-Robots-Tag, Referrer-Policy, a sandbox); ``metas``: the names of its robots
        metas, static or rendered, that say nofollow (robots_directives.meta_nofollow())."""
        crawler = self.crawler
        self._rendering.discard(page.url)  # the frames noted from now on are not its
        links, cut = crawler.discovery.followed(page.url, links)
        if cut:
            note = dataclasses.replace(note, links_cut=cut)
        agent = robots_agent(crawler.config.user_agent)
        said = PageHeaders.of(headers, agent)
        nofollow = crawler.config.obey_robots and (nofollow or said.nofollow or meta_nofollow(metas, agent))
        async with crawler.discovery.queueing() as queue:
            met, queue[:] = await crawler.discovery.links(
                links, said.asking(page), nofollow, hints, said.referrer_policy
            )
            crawler.admission.tell_met(met)  # a limit they reach first is said, as for a static parse's
            await crawler.writer.put(WriteItem(None, met=met, render=note))


async def answer_for(
    pages: Pages, answers: StoredAnswers, url: str, page: QueueItem, how: Asked
) -> Answer | None:
    """The stored response of ``url`` (in ``answers``) for the render of ``page``, captured first
    through ``pages`` if need be, asked as the browser asked it (``how``: the headers it chose its
    answer with, its Referer).

    A URL captured already is answered with that capture, whatever the browser asks it
    with: a URL has one capture, which the mirror shows too. A redirect is answered as it was
    stored: the browser follows it, and asks for its next hop through the crawl in turn
    (page_devtools.py), so the document or stylesheet at the chain's end lives at its own URL,
    as in Chromium alone. A hop the crawl recorded as failed (a loop, a chain too long) is
    refused: the chain ends where the crawl ended it.
    """
    row = answers.row(url)
    for _ in range(ENSURE_TRIES):
        if (row is not None and row.outcome != QUEUED) or pages.stopped:
            break
        await pages.ensure(url, page, how)
        row = answers.row(url)
    if row is None or row.warc_file is None:
        return None  # skipped, failed with no response, or claimed by another process
    if row.redirect_to and row.outcome == FAILED:
        return None
    return await answers.answer(row)
