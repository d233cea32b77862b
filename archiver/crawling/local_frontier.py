"""The frontiers of one process: ``SqliteFrontier``, the one crawls use, and ``MemoryFrontier``.

``SqliteFrontier`` keeps its queue in a SQLite file in the snapshot and only a
bounded head and tail of it in RAM, so memory does not grow with the site. Its
seen set is frontier.SeenUrls.

What makes a crawl resumable is the manifest, not this file: every URL met has
a manifest row, ``queued`` until its fetch is stored, and ``--resume`` refills
a fresh frontier from those rows. So the queue file is scratch, removed when
the crawl ends; a crash can only leave a stale one, which the next run replaces.

>>> import asyncio
>>> async def demo():
...     frontier = MemoryFrontier()
...     if await frontier.claim(["http://h/"]) == [True]:
...         await frontier.put(QueueItem("http://h/", 0, 5))
...     item = await frontier.get()
...     await frontier.task_done(item)
...     return await frontier.claim(["http://h/", "http://h/a"]), item.url
>>> asyncio.run(demo())
([False, True], 'http://h/')
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Self

from archiver.crawling.frontier import (
    PARKED_MAX,
    QueueItem,
    SeenUrls,
)
from archiver.errors import WriteError
from archiver.request_headers import (
    negotiation_pairs,
    negotiation_text,
)


class _LocalFrontier:
    """What the frontiers of one process share: claim() and seen() over their SeenUrls,
    items waiting out a delay (timers of the event loop), and ``async with`` to close them.

    A subclass queues an item at once with ``_enqueue``, counts what is queued or
    got and not yet done in ``_unfinished``, and waits for that count to reach
    zero with ``_queue_done``.
    """

    _seen: SeenUrls
    lost: tuple[type[BaseException], ...] = ()  # its state is in this process

    def __init__(self) -> None:
        self._seen = SeenUrls()
        self._timers: set[asyncio.TimerHandle] = set()
        self._came_due = asyncio.Event()
        self._unfinished = 0
        """Items queued, or got and not marked done."""
        self._landings: dict[str, None] = {}
        self._parked: dict[str, list[QueueItem]] = {}
        self._parked_items = 0
        """Items parked under every key together (at most PARKED_MAX)."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _enqueue(self, item: QueueItem) -> None:
        raise NotImplementedError

    async def _queue_done(self) -> None:
        raise NotImplementedError

    async def put(self, item: QueueItem, delay: float = 0.0) -> None:
        """Queue ``item``, at once or in ``delay`` seconds (join() waits for it meanwhile)."""
        if delay <= 0:
            self._enqueue(item)
            return

        def due() -> None:
            self._timers.discard(timer)
            self._enqueue(item)
            self._came_due.set()

        timer = asyncio.get_running_loop().call_later(delay, due)
        self._timers.add(timer)

    async def join(self) -> None:
        """Wait until every queued item is handled, those waiting out a delay included."""
        while True:
            await self._queue_done()
            # Looked at again after the wait: between the last task_done() and this line,
            # a timer may have come due and queued its item.
            if self._timers:
                self._came_due.clear()
                await self._came_due.wait()
            elif self._unfinished == 0:
                return

    async def close(self) -> None:
        """Release what the frontier holds (items waiting out a delay are dropped); safe to call twice."""
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    async def claim(
        self, urls: Sequence[str], items: Sequence[QueueItem] | None = None, redo: QueueItem | None = None
    ) -> list[bool]:
        """Mark ``urls`` seen; True for each one claimed here first (the items are put next)."""
        claim = self._seen.claim
        return [claim(url) for url in urls]

    def recorded(self, urls: Sequence[str]) -> None:
        """Nothing to let go of: this process holds its claims until it ends."""

    async def park(self, key: str, item: QueueItem) -> None:
        """Keep ``item`` aside under ``key`` in RAM (up to PARKED_MAX under every key together:
        the others stay skipped, and a resumed crawl takes them up)."""
        if self._parked_items < PARKED_MAX:
            self._parked.setdefault(key, []).append(item)
            self._parked_items += 1

    async def unpark(self, key: str) -> int:
        """Queue the items parked under ``key``; how many."""
        parked = self._parked.pop(key, [])
        self._parked_items -= len(parked)
        for item in parked:
            await self.put(item)
        return len(parked)

    async def widen(self, landings: Sequence[str]) -> list[str]:
        """Note ``landings``; every landing noted so far (by this process: the only one)."""
        self._landings.update(dict.fromkeys(landings))
        return list(self._landings)

    def seen(self, url: str) -> bool:
        """True if ``url`` was claimed before."""
        return url in self._seen

    def unseen(self, urls: Iterable[str]) -> list[str]:
        """The ``urls`` not claimed before, in their order."""
        return self._seen.missing(urls)


class MemoryFrontier(_LocalFrontier):
    """A frontier all in RAM: an asyncio.Queue and a set of URL hashes (for tests and small crawls)."""

    def __init__(self) -> None:
        super().__init__()
        self._queue: asyncio.Queue[QueueItem] = asyncio.Queue()

    def _enqueue(self, item: QueueItem) -> None:
        self._unfinished += 1
        self._queue.put_nowait(item)

    async def _queue_done(self) -> None:
        await self._queue.join()

    async def get(self) -> QueueItem:
        return await self._queue.get()

    async def task_done(self, item: QueueItem) -> None:
        self._queue.task_done()
        self._unfinished -= 1

    def pending(self) -> int:
        return self._queue.qsize()


_SCHEMA = """
CREATE TABLE queue (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    depth INTEGER NOT NULL,
    redirects_left INTEGER NOT NULL,
    requisite INTEGER NOT NULL,
    chain TEXT NOT NULL,
    found_by TEXT NOT NULL,
    parent TEXT,
    referrer TEXT,
    tries INTEGER NOT NULL,
    negotiation TEXT NOT NULL,
    referrer_policy TEXT NOT NULL,
    site_for_cookies TEXT,
    cors TEXT NOT NULL,
    client TEXT,
    document TEXT NOT NULL,
    hop_referrer TEXT
)
"""
_COLUMNS = (
    "url, depth, redirects_left, requisite, chain, found_by, parent, referrer, tries, negotiation,"
    " referrer_policy, site_for_cookies, cors, client, document, hop_referrer"
)
_PLACES = ", ".join("?" * len(_COLUMNS.split(",")))


def _to_row(item: QueueItem) -> tuple[object, ...]:
    # Normalised URLs never hold a newline, so it can separate the chain's URLs.
    return (
        item.url,
        item.depth,
        item.redirects_left,
        int(item.requisite),
        "\n".join(item.chain),
        item.found_by,
        item.parent,
        item.referrer,
        item.tries,
        negotiation_text(item.negotiation),
        item.referrer_policy,
        item.site_for_cookies,
        item.cors,
        item.client,
        item.document,
        item.hop_referrer,
    )


def _from_row(
    row: tuple[
        str,
        int,
        int,
        int,
        str,
        str,
        str | None,
        str | None,
        int,
        str,
        str,
        str | None,
        str,
        str | None,
        str,
        str | None,
    ],
) -> QueueItem:
    (
        url,
        depth,
        redirects_left,
        requisite,
        chain,
        found_by,
        parent,
        referrer,
        tries,
        negotiation,
        policy,
        site,
        cors,
        client,
        document,
        hop_referrer,
    ) = row
    return QueueItem(
        url,
        depth,
        redirects_left,
        bool(requisite),
        tuple(chain.split("\n")) if chain else (),
        found_by,
        parent,
        referrer,
        tries,
        negotiation_pairs(negotiation),
        policy,
        site,
        cors,
        client,
        document,
        hop_referrer,
    )


class SqliteFrontier(_LocalFrontier):
    """A FIFO frontier whose middle lives in a SQLite file: RAM holds at most
    ``batch`` items at each end.

    Items are got in the order they were put: first the head (in RAM), then
    the rows on disk, then the tail (in RAM, written to disk a batch at a time).
    Disk work is a batch insert or a batch read per ``batch`` items, a
    millisecond or so, done on the event loop because it is that small.
    """

    def __init__(self, path: Path, batch: int = 1000) -> None:
        super().__init__()
        self.path = path
        self._batch = batch
        path.unlink(missing_ok=True)  # a stale queue from a crash: the manifest says what is left
        self._db: sqlite3.Connection | None = sqlite3.connect(str(path))
        # Scratch data (see the module docstring): no journal, no fsync.
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute(_SCHEMA)
        self._head: deque[QueueItem] = deque()
        self._tail: list[QueueItem] = []
        self._on_disk = 0
        self._finished = asyncio.Event()
        self._finished.set()
        self._ready = asyncio.Event()

    def _enqueue(self, item: QueueItem) -> None:
        self._unfinished += 1
        self._finished.clear()
        if not self._on_disk and not self._tail and len(self._head) < self._batch:
            self._head.append(item)
        else:
            self._tail.append(item)
            if len(self._tail) >= self._batch:
                self._spill()
        self._ready.set()

    async def get(self) -> QueueItem:
        """The next item; waits while the queue is empty. Cancelled, nothing is taken."""
        while not self.pending():
            self._ready.clear()
            await self._ready.wait()
        if not self._head:
            self._refill()
        return self._head.popleft()

    async def task_done(self, item: QueueItem) -> None:
        """Mark ``item`` handled; ValueError if more items are marked than were got."""
        if self._unfinished <= 0:
            raise ValueError("task_done() called more times than items were got")
        self._unfinished -= 1
        if self._unfinished == 0:
            self._finished.set()

    async def _queue_done(self) -> None:
        await self._finished.wait()

    def pending(self) -> int:
        return len(self._head) + self._on_disk + len(self._tail)

    def _spill(self) -> None:
        assert self._db is not None
        try:
            with self._db:
                self._db.executemany(
                    f"INSERT INTO queue ({_COLUMNS}) VALUES ({_PLACES})",
                    [_to_row(item) for item in self._tail],
                )
        except sqlite3.Error as exc:  # a full disk: the crawl stops as for any write error
            raise WriteError(f"cannot write the crawl queue {self.path}: {exc}") from None
        self._on_disk += len(self._tail)
        self._tail.clear()

    def _refill(self) -> None:
        if not self._on_disk:
            self._head.extend(self._tail)
            self._tail.clear()
            return
        assert self._db is not None
        rows = self._db.execute(
            f"SELECT id, {_COLUMNS} FROM queue ORDER BY id LIMIT ?", (self._batch,)
        ).fetchall()
        with self._db:
            self._db.execute("DELETE FROM queue WHERE id <= ?", (rows[-1][0],))
        self._on_disk -= len(rows)
        self._head.extend(_from_row(row[1:]) for row in rows)

    async def close(self) -> None:
        """Close and remove the queue file; safe to call twice."""
        await super().close()
        if self._db is not None:
            self._db.close()
            self._db = None
            self.path.unlink(missing_ok=True)
