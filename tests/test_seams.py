"""The crawler's seams: it crawls through any Fetch, Frontier and WriteQueue, and a frontier
shared with other processes decides which of them queues a URL."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from archiver.config import CrawlConfig
from archiver.crawling.capture_workers import CaptureWorkers
from archiver.crawling.crawler import Crawler
from archiver.crawling.fetch import Fetch, Fetcher, FetchOutcome
from archiver.crawling.fetch_request import FetchRequest
from archiver.crawling.frontier import Frontier, QueueItem
from archiver.crawling.local_frontier import MemoryFrontier
from archiver.crawling.politeness import HostPolicy
from archiver.crawling.recorded import RecordedFetch
from archiver.crawling.stats import CrawlStats
from archiver.crawling.writer import WriteItem, WriteQueue
from archiver.scope import Scope
from archiver.store.rows import ManifestRow


class Wrapping:
    """A Fetch around another one, as a browser-driven fetcher wraps the HTTP fetcher."""

    def __init__(self, inner: Fetch) -> None:
        self.inner = inner
        self.asked: list[str] = []

    async def fetch(self, request: FetchRequest, tries: int = 0) -> FetchOutcome:
        self.asked.append(request.url)
        return await self.inner.fetch(request, tries)


class Collected:
    """A WriteQueue that keeps what it is given (bodies closed, as the writer closes them)."""

    def __init__(self) -> None:
        self.items: list[WriteItem] = []

    async def put(self, item: WriteItem) -> None:
        if item.capture is not None:
            item.capture.body.close()
        self.items.append(item)

    def rows(self) -> dict[str, ManifestRow]:
        """The last row given for each URL, as the manifest would hold it."""
        rows: dict[str, ManifestRow] = {}
        for item in self.items:
            for met in item.met:
                rows.setdefault(met.url, met)
            if item.row is not None:
                rows[item.row.url] = item.row
        return rows


class ClaimedElsewhere(MemoryFrontier):
    """A frontier shared with another crawl process, which has claimed ``taken`` already."""

    def __init__(self, taken: set[str]) -> None:
        super().__init__()
        self.taken = taken

    async def claim(
        self, urls: Sequence[str], items: Sequence[QueueItem] | None = None, redo: QueueItem | None = None
    ) -> list[bool]:
        mine = await super().claim(urls, items, redo)
        return [ok and url not in self.taken for url, ok in zip(urls, mine, strict=True)]


async def crawl_with(seed: str, frontier: Frontier, tmp_path: Path) -> tuple[Wrapping, Collected, CrawlStats]:
    config = CrawlConfig(seeds=(seed,), output=tmp_path / "unused", concurrency=2)
    written = Collected()
    stats = CrawlStats()
    async with Fetcher(config) as http, CaptureWorkers(processes=0) as workers:
        fetch = Wrapping(http)
        fetcher: Fetch = fetch
        writer: WriteQueue = written
        # robots.txt goes through the same seams as pages, and is kept.
        robots = RecordedFetch(fetcher, frontier, writer, max_redirects=5)
        policy = HostPolicy(
            concurrency=2, delay=0, obey_robots=True, user_agent="t", fetch_robots=robots.fetch_robots
        )
        scope = Scope.from_seeds([seed])
        crawler = Crawler(config, frontier, fetcher, writer, scope, stats, policy, workers)
        await crawler.add(seed, 0, "seed")
        await crawler.run()
    return fetch, written, stats


async def test_the_crawler_runs_through_any_fetch_and_write_queue(site, tmp_path) -> None:
    site.page("/", links=["/a", "/moved"])
    site.page("/a", links=["/", "/b"])
    site.page("/b")
    site.redirect("/moved", "/b")
    await site.start()
    fetch, written, stats = await crawl_with(site.url("/"), MemoryFrontier(), tmp_path)
    assert sorted(fetch.asked) == sorted(site.url(p) for p in ("/", "/a", "/b", "/moved", "/robots.txt"))
    rows = written.rows()
    assert {url: row.outcome for url, row in rows.items()} == {
        site.url("/robots.txt"): "fetched",
        site.url("/"): "fetched",
        site.url("/a"): "fetched",
        site.url("/b"): "fetched",
        site.url("/moved"): "redirected",
    }
    assert rows[site.url("/a")].title == "Page /a"
    assert (stats.fetched, stats.redirects) == (4, 1)


async def test_a_url_claimed_by_another_process_is_neither_fetched_nor_recorded(site, tmp_path) -> None:
    site.page("/", links=["/a", "/b", "/moved"])
    site.page("/a")
    site.page("/b", links=["/c"])
    site.page("/c")
    site.redirect("/moved", "/b")
    await site.start()
    frontier = ClaimedElsewhere({site.url("/b")})
    fetch, written, _ = await crawl_with(site.url("/"), frontier, tmp_path)
    assert sorted(fetch.asked) == sorted(site.url(p) for p in ("/", "/a", "/moved", "/robots.txt"))
    assert site.hits["/b"] == 0 and site.hits["/c"] == 0
    rows = written.rows()
    assert site.url("/b") not in rows  # the process that claimed it records it
    assert rows[site.url("/moved")].outcome == "redirected"
    assert rows[site.url("/moved")].redirect_to == site.url("/b")
