"""Which URLs are being captured and not yet committed, so a browser asking for one waits for it.

A URL's outcome is *settled* once the writer has committed its row (and its
records). A page's render asks for URLs the crawl may be fetching right now,
or may have queued without starting: Settling tells these apart, so such a
URL is fetched once, by whoever comes first, and read back from the snapshot
by the others.

>>> import asyncio
>>> async def demo():
...     settling = Settling()
...     settling.start("http://h/a")
...     waiter = asyncio.ensure_future(settling.wait("http://h/a"))
...     await asyncio.sleep(0)
...     settling.committed(["http://h/a"])
...     await waiter
...     return "http://h/a" in settling
>>> asyncio.run(demo())
False
"""

from __future__ import annotations

import asyncio

from archiver.crawling.frontier import url_key


class Settling:
    """URLs in flight or written but not committed; and queued URLs captured ahead of their turn."""

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Event | None] = {}
        self._ahead: set[int] = set()

    def __contains__(self, url: str) -> bool:
        return url in self._pending

    def start(self, url: str) -> None:
        """``url``'s capture begins: from now until its row is committed, askers wait."""
        self._pending.setdefault(url, None)

    def drop(self, url: str) -> None:
        """``url`` goes back to the queue unfetched: release whoever waits (they ask again)."""
        event = self._pending.pop(url, None)
        if event is not None:
            event.set()

    def committed(self, urls: list[str]) -> None:
        """The writer committed the final rows of ``urls`` (its on_commit hook)."""
        if not self._pending:
            return
        for url in urls:
            self.drop(url)

    async def wait(self, url: str) -> None:
        """Return once ``url`` is settled (at once if it is not pending)."""
        if url not in self._pending:
            return
        event = self._pending[url]
        if event is None:
            event = self._pending[url] = asyncio.Event()
        await event.wait()

    def take_ahead(self, url: str) -> None:
        """``url`` sits in the queue but is captured now: its queue item is to be passed over."""
        self._ahead.add(url_key(url))

    def taken_ahead(self, url: str) -> bool:
        """True (once) if a queue item's URL was captured ahead of it."""
        if not self._ahead:
            return False
        key = url_key(url)
        if key in self._ahead:
            self._ahead.discard(key)
            return True
        return False
