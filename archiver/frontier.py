"""The frontier owns crawl state: the queue of URLs to fetch and the set of URLs seen.

``Frontier`` is the seam: the crawler needs only these methods, so a frontier
kept elsewhere (SQLite on disk, Redis for a crawl spread over machines) fits
without touching the crawler. On resume the manifest refills it.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class QueueItem:
    """One URL waiting to be fetched: the seed's ``(url, redirects_left)`` and more."""

    url: str
    depth: int
    redirects_left: int
    requisite: bool = False
    """Fetched to render a page (image, CSS...): host scope and --max-depth do not apply."""
    chain: tuple[str, ...] = ()
    """URLs that redirected here in this chain, to tell a loop from chains that meet."""


class Frontier(Protocol):
    """What the crawler needs from crawl state."""

    def claim(self, url: str) -> bool:
        """Mark ``url`` seen; True the first time only."""

    def seen(self, url: str) -> bool:
        """True if ``url`` was claimed before."""

    async def put(self, item: QueueItem) -> None:
        """Queue an item (its URL already claimed)."""

    async def get(self) -> QueueItem:
        """The next item; waits while the queue is empty."""

    def task_done(self) -> None:
        """Mark the last item got as handled."""

    async def join(self) -> None:
        """Wait until every queued item is handled."""

    def pending(self) -> int:
        """Items queued and not yet got."""


def url_key(url: str) -> int:
    """An 8-byte hash of a URL: a set of these costs about half a set of strings."""
    return int.from_bytes(hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest(), "big")


class MemoryFrontier:
    """A frontier in RAM: an asyncio.Queue and a set of URL hashes."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[QueueItem] = asyncio.Queue()
        self._seen: set[int] = set()

    def claim(self, url: str) -> bool:
        key = url_key(url)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def seen(self, url: str) -> bool:
        return url_key(url) in self._seen

    async def put(self, item: QueueItem) -> None:
        self._queue.put_nowait(item)

    async def get(self) -> QueueItem:
        return await self._queue.get()

    def task_done(self) -> None:
        self._queue.task_done()

    async def join(self) -> None:
        await self._queue.join()

    def pending(self) -> int:
        return self._queue.qsize()
