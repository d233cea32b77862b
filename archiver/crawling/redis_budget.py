"""RedisBudget: --max-pages and --max-bytes counted across every node of a crawl.

Each page a node starts is counted in Redis by one script that refuses it
once a limit is reached, so the nodes together start at most --max-pages
pages. Bytes stored are sent along with the next page's count: like a crawl
of one process, the byte limit stops the crawl after the pages in flight.
"""

from __future__ import annotations

from archiver.crawling.redis_state import RedisCrawl
from archiver.scope import BYTE_LIMIT, PAGE_LIMIT


class RedisBudget:
    """A Budget kept in the crawl's ``budget`` hash in Redis."""

    def __init__(self, crawl: RedisCrawl, max_pages: int | None, max_bytes: int | None) -> None:
        self._crawl = crawl
        self._max_pages = -1 if max_pages is None else max_pages
        self._max_bytes = -1 if max_bytes is None else max_bytes
        self._unsent = 0
        self._reached: str | None = None

    def exhausted(self) -> str | None:
        """The limit the last count met, if any."""
        return self._reached

    async def start_page(self) -> str | None:
        """Count a page in Redis unless a limit of the whole crawl is reached (then say which)."""
        if self._max_pages < 0 and self._max_bytes < 0:
            return None
        unsent, self._unsent = self._unsent, 0
        try:
            answer = int(
                await self._crawl.run("start_page", ("budget",), [self._max_pages, self._max_bytes, unsent])
            )
        except BaseException:
            self._unsent += unsent
            raise
        self._reached = {0: None, 1: PAGE_LIMIT, 2: BYTE_LIMIT}[answer]
        return self._reached

    def add_bytes(self, size: int) -> None:
        self._unsent += size

    def count_done(self, pages: int, size: int) -> None:
        """Nothing to do: what earlier runs did is counted in Redis already."""
