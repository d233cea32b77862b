"""run_stages(): run a wired crawl's writer and crawler (and its sitemap stage) to the end.

The crawl ends when its frontier is empty or it is stopped (``stop``, a failed
writer); either way what was fetched is written and the writer closed, so the
snapshot can be resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from archiver.crawling.crawler import Crawler
from archiver.crawling.frontier import ROBOTS_JOB, SITEMAPS_JOB
from archiver.crawling.recorded import RecordedFetch
from archiver.crawling.sitemap_stage import SitemapStage
from archiver.crawling.stats import CrawlStats
from archiver.crawling.writer import WriteItem, Writer
from archiver.errors import WriteError
from archiver.sitemaps import seed_origins
from archiver.store.rows import QUEUED, ManifestRow

PROGRESS_EVERY = 0.5
"""Seconds between two calls of a crawl's progress callback."""


ProgressCallback = Callable[[CrawlStats, int], None]
"""Called every PROGRESS_EVERY seconds while a crawl runs, with its stats and the URLs queued."""


async def run_stages(
    crawler: Crawler,
    writer: Writer,
    seeds: list[str],
    progress: ProgressCallback | None,
    stop: asyncio.Future[str] | None,
    sitemaps: SitemapStage | None = None,
    recorded: RecordedFetch | None = None,
    shared: bool = False,
) -> None:
    """Run the writer and the crawler (and the sitemap stage beside it) until the frontier is
    empty or the crawl is stopped."""

    def stop_crawler(future: asyncio.Future[str]) -> None:
        if not future.cancelled():
            crawler.stop(future.result())

    def writer_ended(task: asyncio.Task[None]) -> None:
        # A failed writer ends the crawl at once: workers that wait (paused, or for an
        # item) may never put anything again to learn of it.
        if writer.error is not None:
            crawler.stop(f"write error: {writer.error}")

    writer_task = asyncio.create_task(writer.run())
    writer_task.add_done_callback(writer_ended)
    reporter = asyncio.create_task(_report_progress(crawler, progress)) if progress else None
    if stop is not None:
        stop.add_done_callback(stop_crawler)
    try:
        if recorded is not None and shared:
            # Queued by the crawl when a node that fetched a robots.txt is lost before its rows
            # were stored: another records it.
            crawler.jobs[ROBOTS_JOB] = recorded.robots_job
        await _seed(crawler, writer, seeds)
        if sitemaps is not None and shared:
            # An item of the shared queue: one node reads a host's sitemaps, and if it is lost
            # before it is done, another reads them.
            crawler.jobs[SITEMAPS_JOB] = sitemaps.read_job
            for origin in seed_origins(seeds):
                await crawler.add(origin, 0, SITEMAPS_JOB)
        elif sitemaps is not None:
            crawler.feed(sitemaps.run(seeds))
        await crawler.run()
    finally:
        if stop is not None:
            stop.remove_done_callback(stop_crawler)
        if reporter:
            reporter.cancel()
        if writer.error is None and not writer_task.done():
            await writer.finish()
        with contextlib.suppress(Exception):
            await writer_task
        try:
            await writer.close()
        except WriteError as exc:  # the CDXJ merge on a full disk: stopped, resumable
            writer.error = writer.error or exc


async def _report_progress(crawler: Crawler, progress: ProgressCallback) -> None:
    while True:
        await asyncio.sleep(PROGRESS_EVERY)
        progress(crawler.stats, crawler.frontier.pending())


async def _seed(crawler: Crawler, writer: Writer, seeds: list[str]) -> None:
    """Queue the seeds not seen yet."""
    for seed in seeds:
        if crawler.frontier.seen(seed):
            continue
        row = ManifestRow(url=seed, found_by="seed", depth=0, outcome=QUEUED)
        await writer.put(WriteItem(None, met=[row]))
        await crawler.add(seed, 0, "seed")
