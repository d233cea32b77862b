"""The crawl's budget: --max-pages and --max-bytes, counted by one process (LocalBudget) or
by every node of a crawl shared through Redis (crawling/redis_budget.py).

>>> budget = LocalBudget(max_pages=1, max_bytes=None)
>>> import asyncio
>>> asyncio.run(budget.start_page()), asyncio.run(budget.start_page())
(None, 'page limit')
"""

from __future__ import annotations

from typing import Protocol

from archiver.scope import BYTE_LIMIT, PAGE_LIMIT


class Budget(Protocol):
    """What the crawler asks before it starts a page and tells after it stored one."""

    def exhausted(self) -> str | None:
        """The limit reached as far as this process knows (no round trip), or None."""

    async def start_page(self) -> str | None:
        """Count a page about to be fetched; the limit that refuses it (not counted), or None."""

    async def add_bytes(self, size: int) -> None:
        """Count ``size`` payload bytes fetched (before they are stored)."""

    def count_done(self, pages: int, size: int) -> None:
        """Count what earlier runs fetched (a resumed crawl)."""


class LocalBudget:
    """The budget of a crawl made by one process: two counters."""

    def __init__(self, max_pages: int | None, max_bytes: int | None) -> None:
        self.max_pages = max_pages
        self.max_bytes = max_bytes
        self.pages = 0
        self.bytes = 0

    def exhausted(self) -> str | None:
        """PAGE_LIMIT or BYTE_LIMIT once reached, else None."""
        if self.max_pages is not None and self.pages >= self.max_pages:
            return PAGE_LIMIT
        if self.max_bytes is not None and self.bytes >= self.max_bytes:
            return BYTE_LIMIT
        return None

    async def start_page(self) -> str | None:
        """Count a page unless a limit is reached (then say which)."""
        limit = self.exhausted()
        if limit is None:
            self.pages += 1
        return limit

    async def add_bytes(self, size: int) -> None:
        self.bytes += size

    def count_done(self, pages: int, size: int) -> None:
        self.pages += pages
        self.bytes += size
