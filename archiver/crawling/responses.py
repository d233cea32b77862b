"""What a fetched answer leads to: the row it is recorded with, and what the crawl does next.

A redirect is a hop of its chain (a loop, or past --max-redirects, fails) and its target is
queued like a link; a page is prepared (parsed for links, its encoding noted for what refers
to it), its links discovered and queued with its row, and it is offered to the render stage.
Where a seed's redirects land, the scope grows. The Crawler (crawling/crawler.py) takes the
URL from the queue, fetches it and hands each answer here: it orchestrates, this records.
"""

from __future__ import annotations

import dataclasses
import io
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from archiver.content import CSS_TYPE, HTML_TYPES, is_parsed, mime_type
from archiver.crawling import log as crawl_log
from archiver.crawling.admission import item_row
from archiver.crawling.discovery import PageHeaders, referrer_policy_of, stylesheet_client
from archiver.crawling.fetch import FetchOutcome
from archiver.crawling.frontier import QueueItem
from archiver.crawling.writer import WriteItem
from archiver.link_requests import SRCDOC, read_in, says
from archiver.redirects import (
    REDIRECT_STATUSES,
    leads_away,
    redirect_failure,
    redirect_fragment,
    redirect_nowhere,
    redirect_target,
)
from archiver.robots_directives import meta_nofollow, robots_agent
from archiver.store.rows import FAILED, FETCHED, REDIRECTED, ManifestRow, reasons
from archiver.warc.capture import Capture

if TYPE_CHECKING:
    from archiver.crawling.crawler import Crawler

log = logging.getLogger("archiver.crawl")


class Responses:
    """What the crawl does with each answer it fetched; it reads the crawler's stages as they
    are at the time (its scope grows where seeds' redirects land, an operator's excludes)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._agent = robots_agent(crawler.config.user_agent)

    async def handle(self, item: QueueItem, outcome: FetchOutcome) -> None:
        """Count and record the answer ``outcome`` fetched for ``item`` (not a failure: it has a
        capture), and queue what it leads to."""
        crawler = self.crawler
        capture = outcome.capture
        assert capture is not None
        status = capture.status
        content_type = capture.content_type
        crawler.stats.fetched += 1
        crawler.stats.bytes += capture.body_length
        await crawler.budget.add_bytes(capture.body_length)
        crawl_log.fetched(item.url, status, mime_type(content_type), capture.body_length, outcome.error)
        facts = dict(
            tries=outcome.tries,
            status=status,
            content_type=mime_type(content_type) or None,
            length=capture.body_length,
            truncated=capture.truncated is not None,
        )
        if outcome.error:  # not the resource: cut short, refused, or a --retry-on status to the end
            crawler.stats.failed += 1
            row = item_row(item, FAILED, reason=outcome.error, **facts)
            await crawler.writer.put(WriteItem(row, capture))
            return
        location = capture.header("location")
        target = redirect_target(location, item.url)
        if status in REDIRECT_STATUSES and target:
            await self._redirect(item, capture, target, facts)
            return
        if item.depth == 0 and item.found_by == "redirect":
            # Where a seed's redirect chain lands is part of the seed: it joins the scope (of
            # every process of a shared crawl, before they take the page's links).
            crawler.scope = crawler.scope.with_seeds(await crawler.frontier.widen([item.url]))
        elif not item.requisite and not crawler.scope.in_bounds(item.url):
            # A page another process queued: where a seed landed there, as it may know only.
            crawler.scope = crawler.scope.with_seeds(await crawler.frontier.widen([]))
        mime = mime_type(content_type)
        parse = is_parsed(status, mime, leads_away(status, location))
        renderer = crawler.renderer if parse and mime in HTML_TYPES else None
        try:
            prepared = await crawler.workers.prepare(
                capture,
                parse,
                renderer is not None and renderer.inspects,
                (read_in(item.document) or await crawler.referrers.of(item.referrer))
                if mime == CSS_TYPE and not says(item.document, SRCDOC)  # a srcdoc's: UTF-8
                else None,
            )
        except BaseException:
            capture.body.close()  # stopped meanwhile: the capture goes nowhere
            raise
        await crawler.referrers.read(item.url, prepared.encoding)
        said = PageHeaders.of(capture.response_headers, self._agent)
        nofollow = crawler.config.obey_robots and (
            meta_nofollow(prepared.nofollow, self._agent) or said.nofollow
        )
        if nofollow:
            log.info("links of %s not followed: its robots directives say nofollow", item.url)
        # A document its Content-Security-Policy sandboxes asks for its links as one of no origin,
        # rendered too.
        asking = said.asking(item) if mime in HTML_TYPES else item
        links, cut = crawler.discovery.followed(item.url, prepared.links)
        async with crawler.discovery.queueing() as queue:
            met, claimed = await crawler.discovery.links(
                links,
                asking,
                nofollow,
                prepared.hints,
                said.referrer_policy,
                stylesheet_client(item) if mime == CSS_TYPE else None,
                stylesheet=mime == CSS_TYPE,
            )
            queue += claimed
            crawler.admission.tell_met(met)
            decision = renderer.decide(item, prepared) if renderer is not None else None
            reason = decision.reason if decision is not None and decision.render else None
            nowhere = redirect_nowhere(status, location, item.url)
            row = item_row(
                item,
                FETCHED,
                reason=reasons(nowhere, cut),
                title=prepared.title,
                render_reason=reason,
                **facts,
            )
            if prepared.exchange is not None and not crawler.writer.reads_body(content_type):
                # Its records are encoded: the writer only appends them. The body (up to a MiB, and
                # a hundred captures may wait for the writer) goes now.
                capture.body.close()
                capture = dataclasses.replace(capture, body=io.BytesIO())
            await crawler.writer.put(WriteItem(row, capture, met, prepared.exchange, draft=prepared.draft))
        if renderer is not None and decision is not None:
            await renderer.offer(asking, prepared.links, decision, nofollow)

    async def _redirect(
        self, item: QueueItem, capture: Capture, target: str, facts: Mapping[str, object]
    ) -> None:
        """Record the redirect ``item`` answered with, to ``target``, and queue where it leads."""
        crawler = self.crawler
        crawler.stats.redirects += 1
        met: list[ManifestRow] = []
        queue: list[QueueItem] = []
        max_redirects = crawler.config.max_redirects
        hops = max_redirects - item.redirects_left
        reason = redirect_failure(target, (*item.chain, item.url), hops, max_redirects)
        outcome = FAILED if reason is not None else REDIRECTED
        if reason is None:
            policy = referrer_policy_of(capture.response_headers) or item.referrer_policy
            crawler.discovery.redirected(item, target, policy, met, queue)
        else:
            crawler.stats.failed += 1
        fragment = redirect_fragment(capture.header("location"), item.url)
        row = item_row(item, outcome, reason=reason, redirect_to=target, redirect_fragment=fragment, **facts)
        async with crawler.discovery.queueing() as claimed:
            met, claimed[:] = await crawler.discovery.claimed(met, queue)
            await crawler.writer.put(WriteItem(row, capture, met))
