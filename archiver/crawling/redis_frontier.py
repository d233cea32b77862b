"""RedisFrontier: the Frontier of crawl nodes, kept in Redis and shared by every node.

A page costs about three round trips: ``take`` leases an item, ``claim``
claims the page's new URLs (one script for all of them), and the items put
meanwhile go in one ``push`` (puts are gathered and pushed by a background
task, with the releases). Keys and scripts: crawling/redis_state.py.

A lease is released only once the writer has committed the item's outcome to
this node's manifest (``Commits``): a node killed before that loses its
leases to the others, who fetch those URLs again, so nothing it fetched but
never stored is lost. A URL it claimed but had not queued yet is unclaimed
then, and claimed again when its page is fetched again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Protocol, Self

from archiver.crawling.frontier import QueueItem, SeenUrls
from archiver.crawling.redis_state import RedisCrawl, call, decode_item, encode_item, redis_error, url_digest

log = logging.getLogger("archiver.crawl")

SYNC_EVERY = 0.05
"""Seconds between two pushes of gathered puts and releases of committed leases."""
EMPTY_POLL = (0.05, 0.5)
"""Shortest and longest wait before asking again for an item when the queue is empty."""
JOIN_POLL = 0.25
"""Seconds between two asks whether the whole crawl is done."""


class Commits(Protocol):
    """How far the writer has gone (crawling/writer.py's Writer): items put, items committed."""

    @property
    def items_enqueued(self) -> int: ...

    @property
    def items_committed(self) -> int: ...


class RedisFrontier:
    """A Frontier whose queue, seen set and leases are in Redis, under node ``node``."""

    def __init__(self, crawl: RedisCrawl, node: str, commits: Commits) -> None:
        self.lost = redis_error()
        self._crawl = crawl
        self._node = node
        self._commits = commits
        self._seen = SeenUrls()
        self._held: dict[QueueItem, deque[str]] = {}
        """Lease numbers of the items got and not yet done (an item put back and got again
        by another worker before the first is done has two)."""
        self._done: deque[tuple[str, int]] = deque()
        """(lease, writer mark) of items done whose outcome may not be committed yet."""
        self._puts: list[tuple[bytes, str, int, int]] = []
        self._queued = 0
        self._sync_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._syncer: asyncio.Task[None] | None = None
        self._closed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _start(self) -> None:
        if self._syncer is None and not self._closed:
            self._syncer = asyncio.create_task(self._sync_forever())

    def seen(self, url: str) -> bool:
        """True if this node claimed ``url`` (one another node claimed is asked again: see claim)."""
        return url in self._seen

    def unseen(self, urls: Iterable[str]) -> list[str]:
        """The ``urls`` this node has not claimed, in their order."""
        return self._seen.missing(urls)

    async def claim(self, urls: Sequence[str], queued: bool = True) -> list[bool]:
        """Claim ``urls`` for this node in one round trip; True for each one it got.

        A URL to be queued is staged until it is pushed (the crawl is not done meanwhile);
        one recorded outside the queue (``queued=False``: robots.txt, a sitemap) is not.
        """
        if not urls:
            return []
        keys = ("seen", f"staged:{self._node}" if queued else "outside")
        answer = await self._crawl.run("claim", keys, [url_digest(url) for url in urls])
        claimed = [bool(got) for got in answer]
        for url, got in zip(urls, claimed, strict=True):
            if got:
                # Only what this node got: one another node holds is given back to the crawl if
                # that node dies before queueing it, and must then be claimed when met again.
                self._seen.claim(url)
        return claimed

    async def put(self, item: QueueItem, delay: float = 0.0) -> None:
        """Queue ``item`` (in ``delay`` seconds); pushed with the next batch, a moment later."""
        self._start()
        self._puts.append((url_digest(item.url), encode_item(item), item.depth, round(delay * 1000)))
        self._wake.set()

    async def get(self) -> QueueItem:
        """Lease the next item of the crawl; waits while the queue is empty. Cancelled, what
        was leased meanwhile is given back when the frontier closes."""
        self._start()
        wait = EMPTY_POLL[0]
        while True:
            if self._puts:
                await self._sync()
            answer = await self._crawl.run("take", ("queue", "delayed", f"leases:{self._node}", "meta"), [1])
            self._queued = int(answer[0])
            if len(answer) > 1:
                lease, member = answer[1].decode(), answer[2]
                item = decode_item(member)
                self._held.setdefault(item, deque()).append(lease)
                return item
            await asyncio.sleep(wait * random.uniform(0.8, 1.2))
            wait = min(wait * 2, EMPTY_POLL[1])

    async def task_done(self, item: QueueItem) -> None:
        """Mark ``item`` handled: its lease is released once its outcome is committed."""
        leases = self._held.get(item)
        if not leases:
            raise ValueError("task_done() for an item not got")
        lease = leases.popleft()
        if not leases:
            del self._held[item]
        self._done.append((lease, self._commits.items_enqueued))
        self._wake.set()

    async def join(self) -> None:
        """Wait until the whole crawl is done: nothing queued, waiting or leased on any node."""
        self._start()
        while True:
            await self._sync()
            total, queued = await self._crawl.run("outstanding", args=[self._crawl.prefix])
            self._queued = int(queued)
            if int(total) == 0:
                return
            await asyncio.sleep(JOIN_POLL)

    def pending(self) -> int:
        """The queue's length at the last look, and the puts not pushed yet."""
        return self._queued + len(self._puts)

    async def _sync_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._sync()
            except Exception as exc:  # Redis away for a moment: the next round tries again
                log.warning("cannot reach the crawl's Redis: %s", exc)
                await asyncio.sleep(1)
                self._wake.set()
            await asyncio.sleep(SYNC_EVERY)
            if self._done:
                self._wake.set()  # outcomes waiting for the writer to commit

    async def _sync(self) -> None:
        """Push the gathered puts, then release the leases whose outcome is committed.

        In that order: a page's new URLs are queued before its lease goes.
        """
        async with self._sync_lock:
            if self._puts:
                puts, self._puts = self._puts, []
                args: list[object] = []
                for digest, member, depth, delay in puts:
                    args += [digest, member, depth, delay]
                try:
                    keys = ("queue", f"staged:{self._node}", "delayed", "meta")
                    self._queued = int(await self._crawl.run("push", keys, args))
                except BaseException:
                    self._puts[:0] = puts
                    raise
            committed = self._commits.items_committed
            released = []
            while self._done and self._done[0][1] <= committed:
                released.append(self._done.popleft()[0])
            if released:
                try:
                    await call(self._crawl.client.hdel(self._crawl.key(f"leases:{self._node}"), *released))
                except BaseException:
                    self._done.extendleft((lease, 0) for lease in reversed(released))
                    raise

    async def close(self) -> None:
        """Push what is gathered, release what is committed, and give back every other lease
        (the items this node leaves unfinished go back to the queue); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._syncer is not None:
            self._syncer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._syncer
        await self._sync()
        # What is done but not committed (a writer that failed) is given back with the rest.
        await self._crawl.run("give_back", args=[self._crawl.prefix, self._node])
