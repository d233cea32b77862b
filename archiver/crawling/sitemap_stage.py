"""The seeds' hosts' sitemaps, read while the crawl runs: the URLs they list join the frontier.

For each seed host, the sitemaps its robots.txt names (``Sitemap:`` lines)
and ``/sitemap.xml`` are fetched through the crawl's fetcher (RecordedFetch:
politeness, robots.txt, retries; every answer kept in the WARC and the
manifest, found by ``sitemap``, depth 0), read by :mod:`archiver.sitemaps`,
and their URLs judged by the crawl's scope like the links of a page: found by
``sitemap``, with the sitemap as parent, at depth 1 (a step from the seed, as
a link on its home page would be). A sitemap index leads to more sitemaps, as
far as SitemapLimits allows; of those past the limits, the first
SitemapLimits.max_skipped are recorded as skipped and the rest counted in the
log: what a hostile index lists is neither held nor written one by one.

A resumed crawl reads the sitemaps again, as the crawl never interrupted would have: those an
earlier run archived are read back from the snapshot (``kept``), not fetched again, and the URLs
met before are seen already; the others are fetched.
A crawl shared by nodes reads each host's sitemaps as an item of its queue
(frontier.SITEMAPS_JOB, which read_job does): one node reads them, and if it
is lost before it is done, the item goes back to the queue and another node
reads them again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from archiver.crawling.crawler import Crawler
from archiver.crawling.frontier import SITEMAPS_JOB, QueueItem
from archiver.crawling.politeness import Politeness
from archiver.crawling.recorded import FOUND_BY_SITEMAP, Answer, RecordedFetch
from archiver.crawling.snapshot_reads import SnapshotReads
from archiver.errors import WriteError
from archiver.sitemaps import SITEMAP_DEPTH, Sitemap, SitemapLimits, read_sitemap, seed_origins
from archiver.store.crawler_chains import KeptSitemap, kept_sitemap
from archiver.store.rows import FAILED, SKIPPED, ManifestRow

log = logging.getLogger("archiver.crawl")

SITEMAP_LIMIT = "sitemap limit"
"""Skip reason of a sitemap past SitemapLimits (too many for its host, or nested too deep)."""


class SitemapStage:
    """Reads the sitemaps of the seeds' hosts and hands their URLs to the crawler."""

    def __init__(
        self,
        crawler: Crawler,
        fetch: RecordedFetch,
        policy: Politeness,
        limits: SitemapLimits | None = None,
        kept: SnapshotReads | None = None,
    ) -> None:
        self._crawler = crawler
        self._fetch = fetch
        self._policy = policy
        self.limits = limits or SitemapLimits()
        self._kept = kept
        """Where a resumed crawl reads back the sitemaps an earlier run archived."""

    async def run(self, seeds: Iterable[str]) -> None:
        """Read the sitemaps of each seed's host in turn. Cancelled, reading stops.

        A failure of its own is logged and the crawl goes on without the sitemaps; a
        write error stops the crawl.
        """
        try:
            for origin in seed_origins(seeds):
                await self.read_host(origin)
        except WriteError as exc:
            self._crawler.stop(f"write error: {exc}")
        except Exception:
            log.exception("reading the sitemaps failed; the crawl goes on without them")

    async def read_job(self, item: QueueItem) -> None:
        """Read the sitemaps of the origin ``item.url`` (a SITEMAPS_JOB item of a crawl shared by
        nodes). A failure of their own is logged and the crawl goes on without them; a write
        error or the loss of the shared frontier is raised (the item stays queued)."""
        crawler = self._crawler
        if item.tries >= crawler.config.max_tries:
            log.warning(
                "the sitemaps of %s are not read: the crawl node reading them was lost %d times",
                item.url,
                item.tries,
            )
            return
        try:
            await self.read_host(item.url)
        except WriteError:
            raise
        except crawler.frontier.lost:
            raise
        except Exception:
            log.exception("reading the sitemaps of %s failed; the crawl goes on without them", item.url)

    async def read_host(self, origin: str) -> None:
        """Read the sitemaps robots.txt names for ``origin`` and its /sitemap.xml, and the sitemaps
        their indexes list, breadth first, as far as the limits allow."""
        robots = await self._policy.sitemaps(origin + "/")
        parent = {url: origin + "/robots.txt" for url in robots}
        plan = _HostPlan()
        for url in dict.fromkeys([*robots, origin + "/sitemap.xml"]):
            await self._plan(plan, url, parent.get(url), 0)
        while plan.todo:
            url, parent_url, level = plan.todo.popleft()
            for child in await self._read(url, parent_url, origin):
                await self._plan(plan, child, url, level + 1)
        if plan.left_out:
            log.info(
                "%s: %d more sitemaps past the limits (%d a host, indexes %d levels deep) are not read,"
                " nor recorded as skipped past the first %d",
                origin,
                plan.left_out,
                self.limits.max_sitemaps,
                self.limits.max_nesting,
                self.limits.max_skipped,
            )

    async def _plan(self, plan: _HostPlan, url: str, parent: str | None, level: int) -> None:
        """Queue the sitemap ``url`` of a host to be read, if the limits let it be and it is not
        met already; else record it as skipped (the first SitemapLimits.max_skipped of them), or
        count it: what an index lists past the limits is neither held nor written."""
        if url in plan.met:
            return
        limits = self.limits
        if level <= limits.max_nesting and plan.to_read < limits.max_sitemaps:
            plan.met.add(url)
            plan.to_read += 1
            plan.todo.append((url, parent, level))
            return
        if level > limits.max_nesting and not plan.told_nesting:
            plan.told_nesting = True
            log.info("sitemap index %s nests deeper than %d levels", parent, limits.max_nesting)
        elif level <= limits.max_nesting and not plan.told_count:
            plan.told_count = True
            log.info(
                "more than %d sitemaps for one host: %s and those after it are not read",
                limits.max_sitemaps,
                url,
            )
        if plan.skipped < limits.max_skipped:
            plan.met.add(url)
            plan.skipped += 1
            await self._skip(url, parent)
        else:
            plan.left_out += 1

    async def _read(self, url: str, parent: str | None, origin: str) -> tuple[str, ...]:
        """Fetch and read one sitemap of ``origin``'s, queue the pages it lists; returns the
        sitemaps it lists."""
        # A sitemap may be on another host (robots.txt may name one there): only --exclude
        # keeps it out, as for a page's requisites; the URLs it lists meet the whole scope.
        excluded = self._crawler.scope.skip_reason(url, 0, requisite=True)
        if excluded is not None:
            await self._skip(url, parent, excluded)
            return ()
        if self._kept is not None:
            look = functools.partial(
                kept_sitemap, url=url, max_redirects=self._crawler.config.max_redirects, limits=self.limits
            )
            kept = await self._kept.read(look)
            if kept is not None:
                return await self._read_kept(kept)
        redo = QueueItem(origin, 0, 0, found_by=SITEMAPS_JOB)
        # No more is received than is decoded: a sitemap may have no end.
        answer = await self._fetch.get(
            url, FOUND_BY_SITEMAP, parent, policy=self._policy, redo=redo, max_bytes=self.limits.max_bytes
        )
        if not answer.ok:
            await self._fetch.keep(answer)
            return ()
        async with self._crawler.discovery.queueing() as queue:
            try:
                met, children, queue[:] = await self._use(answer)
            except self._crawler.frontier.lost:
                raise
            except Exception as exc:  # a defect of its own: the sitemap gets its row all the same
                log.exception("sitemap %s could not be read", answer.url)
                if answer.row is not None:
                    reason = f"cannot read the sitemap: {type(exc).__name__}: {exc}"
                    answer = dataclasses.replace(
                        answer, row=dataclasses.replace(answer.row, outcome=FAILED, reason=reason)
                    )
                await self._fetch.keep(answer)
                return ()
            # The rows of its pages are written before they are fetched.
            await self._fetch.keep(answer, met)
        return children

    async def _read_kept(self, kept: KeptSitemap) -> tuple[str, ...]:
        """Read again the sitemap an earlier run archived, from the snapshot; returns the sitemaps
        it lists. The URLs it lists were met then (their rows written with its own), so only
        those the crawl has not met since get rows and are queued."""
        if kept.sitemap is None:  # no sitemap came: nothing to read, as the crawl found
            return ()
        async with self._crawler.discovery.queueing() as queue:
            met, children, queue[:] = await self._listed(kept.sitemap, kept.url)
            if met:
                await self._fetch.keep(Answer(kept.url, None, None), met)
        return children

    async def _use(self, answer: Answer) -> tuple[list[ManifestRow], tuple[str, ...], list[QueueItem]]:
        """Read the sitemap of ``answer``: the rows of the URLs it has met first, the sitemaps it
        lists (an index), and the items of its pages to queue once its row is written."""
        return await self._listed(await asyncio.to_thread(self._parse, answer), answer.url)

    async def _listed(
        self, sitemap: Sitemap, url: str
    ) -> tuple[list[ManifestRow], tuple[str, ...], list[QueueItem]]:
        """What the sitemap at ``url`` (where its redirects ended) lists, as _use() gives it."""
        if sitemap.problem:
            log.info("sitemap %s: %s", url, sitemap.problem)
        if sitemap.cut:
            log.info(
                "sitemap %s: read up to %d URLs and %d bytes, the rest left",
                url,
                self.limits.max_urls,
                self.limits.max_bytes,
            )
        if sitemap.is_index:
            return [], sitemap.urls, []
        met, queue = await self._crawler.discovery.found(
            sitemap.urls, found_by=FOUND_BY_SITEMAP, parent=url, depth=SITEMAP_DEPTH
        )
        return met, (), queue

    def _parse(self, answer: Answer) -> Sitemap:
        assert answer.capture is not None
        try:
            return read_sitemap(answer.body(), answer.capture.header("content-encoding"), self.limits)
        finally:
            answer.capture.body.seek(0)

    async def _skip(self, url: str, parent: str | None, reason: str = SITEMAP_LIMIT) -> None:
        """Record a sitemap not read (unless the crawl met its URL already)."""
        if self._crawler.frontier.seen(url):
            return
        row = ManifestRow(
            url=url, found_by=FOUND_BY_SITEMAP, parent=parent, depth=0, outcome=SKIPPED, reason=reason
        )
        await self._fetch.keep(Answer(url, None, None), [row])


@dataclass
class _HostPlan:
    """The sitemaps of one seed host met so far, as read_host() goes: no more are held than
    the limits let it read or record."""

    todo: deque[tuple[str, str | None, int]] = field(default_factory=deque)
    """Sitemaps to read, with the one that named them and their level."""
    met: set[str] = field(default_factory=set)
    """Sitemaps queued to be read or recorded as skipped."""
    to_read: int = 0
    skipped: int = 0
    """Sitemaps recorded as skipped for the limits."""
    left_out: int = 0
    """Sitemaps past the limits and past max_skipped: counted, neither held nor recorded."""
    told_count: bool = False
    told_nesting: bool = False
