"""Whether a URL taken from the queue may be fetched now (Admission): the crawl's limits, the
excludes an operator added, robots.txt; and the rows of the URLs it keeps out.

A URL kept out is recorded as skipped with its reason, and with what its request carries
(frontier.request_facts), so a resumed crawl that lifts the limit asks for it as this one
would have. A URL skipped because its host's robots.txt is out of reach is parked in the
frontier and queued again once that robots.txt answers (a watcher per host asks it again as
often as the politeness lets it). The first time a limit of the crawl is reached, the log
says so: what stops a crawler trap is seen there as it happens.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator

from archiver.config import CrawlConfig
from archiver.crawling.budget import Budget
from archiver.crawling.control import Controls
from archiver.crawling.frontier import PARKED_MAX, Frontier, QueueItem, request_facts
from archiver.crawling.politeness import Politeness
from archiver.crawling.stats import CrawlStats
from archiver.crawling.writer import WriteItem, WriteQueue
from archiver.errors import WriteError
from archiver.scope import (
    BYTE_LIMIT,
    EXCLUDED,
    MAX_PATH_REPEATS,
    MAX_URL_LENGTH,
    PAGE_LIMIT,
    PATH_REPEATS,
    ROBOTS_UNREACHABLE,
    TOO_DEEP,
    TOO_LONG,
)
from archiver.store.rows import FAILED, SKIPPED, ManifestRow
from archiver.urls import origin_of

log = logging.getLogger("archiver.crawl")

LIMITS = {
    TOO_DEEP: "--max-depth {config.max_depth} reached: links deeper are recorded as skipped",
    PAGE_LIMIT: "--max-pages {config.max_pages} reached: the URLs not fetched yet are recorded as skipped",
    BYTE_LIMIT: "--max-bytes {config.max_bytes} reached: the URLs not fetched yet are recorded as skipped",
    TOO_LONG: f"a URL past {MAX_URL_LENGTH:,} characters: such URLs are recorded as skipped",
    PATH_REPEATS: f"a URL whose path says the same segments more than {MAX_PATH_REPEATS} times in a row,"
    " a crawler trap: such URLs are recorded as skipped",
}
"""Skip reasons that are limits of the crawl: what the log says when one is first reached."""


def item_row(item: QueueItem, outcome: str, **facts: object) -> ManifestRow:
    """The manifest row of ``item`` with ``outcome`` and the other ``facts`` of ManifestRow."""
    return ManifestRow(
        url=item.url,
        found_by=item.found_by,
        parent=item.parent,
        depth=item.depth,
        outcome=outcome,
        **facts,  # type: ignore[arg-type]
    )


ASKED_AT_ONCE = 16
"""robots.txt files out of reach asked again at once."""


class Admission:
    """Lets queued URLs be fetched, or records why not (see the module docstring)."""

    def __init__(
        self,
        config: CrawlConfig,
        frontier: Frontier,
        writer: WriteQueue,
        stats: CrawlStats,
        policy: Politeness,
        budget: Budget,
        controls: Controls,
        stop: Callable[[str], None],
    ) -> None:
        self.config = config
        self.frontier = frontier
        self.writer = writer
        self.stats = stats
        self.policy = policy
        self.budget = budget
        self.controls = controls
        self._stop = stop
        """Stops the crawl, with its reason (a write error while a watcher queued URLs)."""
        self._told: set[str] = set()
        """The limits (LIMITS) the log has said were reached."""
        self._unreachable: dict[str, str] = {}
        """Each host whose robots.txt is out of reach and whose skipped URLs are parked, with one
        of its URLs: asked again by _watch_robots; PARKED_MAX hosts at most, as many as the URLs
        the frontier keeps parked (the URLs of a host past them stay skipped, resumable)."""
        self._watcher: asyncio.Task[None] | None = None

    async def admitted(self, item: QueueItem) -> bool:
        """True if limits, live excludes and robots.txt let ``item`` be fetched; else its
        skipped (or given up) row is written."""
        reason = self.budget.exhausted() if item.tries == 0 else None  # a URL begun is finished
        if reason is None and self.controls.excluded(item.url):  # an exclude added while crawling
            reason = EXCLUDED
        if reason is None and item.tries >= self.config.max_tries:
            # Only a lease that ran out counts a try without a fetch: the crawl node fetching
            # it died, every time. Give the URL up rather than let it end more nodes.
            self.stats.failed += 1
            why = f"given up: the crawl node fetching it was lost {item.tries} times"
            await self.writer.put(WriteItem(item_row(item, FAILED, reason=why, tries=item.tries)))
            return False
        if reason is None:
            reason = await self.policy.refusal(item.url)
        if reason is None:
            return True
        await self.skip(item, reason)
        if reason == ROBOTS_UNREACHABLE:
            await self._keep_unreachable(item)
        return False

    async def page_started(self, item: QueueItem) -> bool:
        """Count ``item``'s first try against --max-pages (across every node of a shared crawl);
        False, and its skipped row written, once the limit is reached."""
        if item.tries > 0:
            return True
        limit = await self.budget.start_page()
        if limit:
            await self.skip(item, limit)
            return False
        return True

    async def skip(self, item: QueueItem, reason: str) -> None:
        """Record ``item`` as skipped for ``reason``."""
        self.stats.skipped += 1
        self.tell(reason)
        # A limit or a robots.txt out of reach may be lifted when the crawl resumes: what its
        # request carries is kept, as for a queued URL.
        request = request_facts(item, self.config.max_redirects)
        await self.writer.put(WriteItem(item_row(item, SKIPPED, reason=reason, request=request)))

    def tell(self, reason: str) -> None:
        """Say in the log, once, that the limit of the crawl ``reason`` names was reached (any
        other reason: nothing)."""
        if reason in self._told or reason not in LIMITS:
            return
        self._told.add(reason)
        log.info("%s (%s)", LIMITS[reason].format(config=self.config), reason)

    def tell_met(self, met: Iterable[ManifestRow]) -> None:
        """Say which limits kept out links a page gave (rows of the URLs it met)."""
        for row in met:
            if row.reason in LIMITS and row.reason not in self._told:
                self.tell(row.reason)

    def close(self) -> None:
        """Stop asking robots.txt files again (the crawl ends: their URLs stay skipped,
        resumable); safe to call twice."""
        if self._watcher is not None:
            self._watcher.cancel()

    async def _keep_unreachable(self, item: QueueItem) -> None:
        """Park ``item``, skipped for its origin's robots.txt out of reach, in the frontier, to queue
        it again once the robots.txt answers; its origin is watched from then (_watch_robots)."""
        key = origin_of(item.url)
        await self.frontier.park(key, item)
        if key not in self._unreachable and len(self._unreachable) < PARKED_MAX:
            self._unreachable[key] = item.url
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.create_task(self._watch_robots())

    async def _watch_robots(self) -> None:
        """Ask the robots.txt of each host out of reach again as often as the politeness lets it be
        asked (it backs off), ASKED_AT_ONCE hosts at a time, and queue again the URLs skipped
        meanwhile once it answers (those every process of a shared crawl parked). One task for
        them all, where a crawl kept one for each host down that it met. Ends when no host is
        out of reach, or with the crawl (cancelled): those URLs then stay skipped."""

        async def ask(key: str, url: str) -> None:
            try:
                if await self.policy.refusal(url) == ROBOTS_UNREACHABLE:
                    return
                del self._unreachable[key]
                queued = await self.frontier.unpark(key)
                log.info("robots.txt of %s answers: its %d URL(s) skipped meanwhile are queued", key, queued)
            except WriteError as exc:
                self._stop(f"write error: {exc}")
            except Exception as exc:  # the crawl goes on; these URLs stay skipped, resumable
                self._unreachable.pop(key, None)
                log.warning("robots.txt of %s asked again: %s: %s", key, type(exc).__name__, exc)

        async def asking(hosts: Iterator[tuple[str, str]]) -> None:
            for key, url in hosts:  # (the iterator the askers share)
                await ask(key, url)

        while self._unreachable:
            await asyncio.sleep(max(self.config.robots_retry / 4, 0.01))
            hosts = iter(list(self._unreachable.items()))
            await asyncio.gather(*(asking(hosts) for _ in range(ASKED_AT_ONCE)))
