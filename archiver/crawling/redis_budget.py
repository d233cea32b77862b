"""RedisBudget: --max-pages and --max-bytes counted across every node of a crawl.

Each page a node starts is counted in Redis by one script that refuses it
once a limit is reached, so the nodes together start at most --max-pages
pages. With --max-bytes, a page's bytes are counted in Redis as soon as it is
fetched, before its outcome can be stored: a node lost takes none of the bytes
it stored with it, so the nodes together never overshoot the limit by more than
a crawl of one process does (the pages in flight when it is reached). A page a
lost node fetched and did not store is fetched again, and its bytes counted
twice: the crawl may stop that much short of the limit, never past it.
"""

from __future__ import annotations

from archiver.crawling.redis_state import RedisCrawl, call
from archiver.scope import BYTE_LIMIT, PAGE_LIMIT


class RedisBudget:
    """A Budget kept in the crawl's ``budget`` hash in Redis."""

    def __init__(self, crawl: RedisCrawl, max_pages: int | None, max_bytes: int | None) -> None:
        self._crawl = crawl
        self._max_pages = -1 if max_pages is None else max_pages
        self._max_bytes = -1 if max_bytes is None else max_bytes
        self._reached: str | None = None

    def exhausted(self) -> str | None:
        """The limit the last count met, if any."""
        return self._reached

    async def start_page(self) -> str | None:
        """Count a page in Redis unless a limit of the whole crawl is reached (then say which)."""
        if self._max_pages < 0 and self._max_bytes < 0:
            return None
        answer = int(await self._crawl.run("start_page", ("budget",), [self._max_pages, self._max_bytes, 0]))
        self._reached = {0: None, 1: PAGE_LIMIT, 2: BYTE_LIMIT}[answer]
        return self._reached

    async def add_bytes(self, size: int) -> None:
        """Count ``size`` bytes fetched in Redis at once (with --max-bytes only): sent later, they
        would be lost with this node if it were lost meanwhile."""
        if self._max_bytes >= 0 and size:
            await call(self._crawl.client.hincrby(self._crawl.key("budget"), "bytes", size))

    def count_done(self, pages: int, size: int) -> None:
        """Nothing to do: what earlier runs did is counted in Redis already."""
