"""RedisFrontier: the Frontier of crawl nodes, kept in Redis and shared by every node.

A page costs about three round trips: ``take`` leases an item, ``claim``
claims the page's new URLs (one script for all of them), and the items put
meanwhile go in one ``push`` (puts are gathered and pushed by a background
task, with the releases). Scripts: crawling/redis_scripts.py.

Nothing a node holds is only in that node. A URL it claims is claimed with
the item it will queue, kept in Redis until it is queued; an item it takes is
leased. A lease is released only once the writer has committed the item's
outcome to this node's manifest (``Commits``), or in the same step as the item
is queued again (a retry, a busy host, a crawl stopping). A node given up (it
was silent past --node-timeout) loses both to the queue, and Redis refuses it
from then on: it stops (NodeGivenUp). An item it held may have had its outcome
stored and not yet released: the node that takes it looks in the given-up
node's part first (crawling/node_parts.py), and does not fetch it again if it
is there. So each URL is fetched and stored once, and none is lost.

A URL recorded outside the queue (a robots.txt, a sitemap) is held the same
way: claimed with the job that records it again, let go of once its row is
committed (``recorded``). A node given up leaves it claimable and its job
queued; the node that claims it next looks in the given-up node's part first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from typing import Protocol, Self

from archiver.crawling.frontier import QueueItem, SeenUrls
from archiver.crawling.node_parts import NodeParts, Stored
from archiver.crawling.redis_state import (
    GivenBack,
    Membership,
    RedisCrawl,
    call,
    decode_member,
    encode_item,
    looked_again,
    redis_error,
    url_digest,
)
from archiver.errors import NodeGivenUp

log = logging.getLogger("archiver.crawl")

SYNC_EVERY = 0.05
"""Seconds between two pushes of gathered puts and releases of committed leases."""
EMPTY_POLL = (0.05, 0.5)
"""Shortest and longest wait before asking again for an item when the queue is empty."""
JOIN_POLL = 0.25
"""Seconds between two asks whether the whole crawl is done."""
PART_LOOKS = 8
"""Times an item given back by a node given up waits for that node's part to be free (each a
quarter of --node-timeout), before it is fetched again all the same: a node stopped (SIGSTOP)
and never continued holds its part's lock forever."""


class Commits(Protocol):
    """How far the writer has gone (crawling/writer.py's Writer): items put, items committed."""

    @property
    def items_enqueued(self) -> int: ...

    @property
    def items_committed(self) -> int: ...


class SharedCookies(Protocol):
    """The node's share of the crawl's cookie jar, as the queue needs it (redis_cookies.RedisCookies)."""

    async def share(self) -> None:
        """Write what the node's jar changed, if it did."""

    async def catch_up(self, version: int) -> None:
        """Take in the crawl's jar if ``version`` is one the node has not seen."""


class RedisFrontier:
    """A Frontier whose queue, seen set and leases are in Redis, under the node of ``member``;
    ``parts`` tells what other nodes stored."""

    def __init__(self, crawl: RedisCrawl, member: Membership, commits: Commits, parts: NodeParts) -> None:
        self.lost = (*redis_error(), NodeGivenUp)
        self._crawl = crawl
        self._member = member
        self._commits = commits
        self._parts = parts
        self._seen = SeenUrls()
        self._held: dict[str, deque[str]] = {}
        """Lease numbers of the URLs got and not yet done (a URL put back and got again by
        another worker before the first is done has two)."""
        self._returned: Counter[str] = Counter()
        """URLs whose lease went with their put: the task_done() that follows releases nothing."""
        self._done: deque[tuple[str, int]] = deque()
        """(lease, writer mark) of items done whose outcome may not be committed yet."""
        self._recorded: deque[tuple[bytes, int]] = deque()
        """(digest, writer mark) of URLs recorded outside the queue whose rows may not be
        committed yet."""
        self._puts: list[tuple[bytes, str, int, int, str]] = []
        self._queued = 0
        self._sync_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._syncer: asyncio.Task[None] | None = None
        self._closed = False
        self.cookies: SharedCookies | None = None
        """The node's share of the crawl's cookie jar (redis_cookies.RedisCookies), once it has one."""

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

    async def claim(
        self, urls: Sequence[str], items: Sequence[QueueItem] | None = None, redo: QueueItem | None = None
    ) -> list[bool]:
        """Claim ``urls`` for this node in one round trip; True for each one it got.

        The ``items`` to be queued are kept in Redis until they are pushed (the crawl is not
        done meanwhile, and they are queued if this node is lost first); URLs recorded
        outside the queue (no ``items``: robots.txt, a sitemap) with their ``redo`` job until
        recorded() is said of them and their rows are committed. Such a URL that a node given
        up held is this node's to record, unless that node's part holds its row.
        """
        if not urls:
            return []
        members = [encode_item(item) for item in items] if items is not None else [""] * len(urls)
        args: list[object] = [encode_item(redo) if redo is not None and items is None else ""]
        for url, member in zip(urls, members, strict=True):
            args += [url_digest(url), member]
        answer = await self._crawl.run_as(self._member, "claim", args)
        claimed = []
        for url, got in zip(urls, answer, strict=True):
            mine = await self._unrecorded(url, json.loads(got)) if isinstance(got, bytes) else bool(got)
            if mine:
                # Only what this node got: a URL another node holds is asked about again when met.
                self._seen.claim(url)
            claimed.append(mine)
        return claimed

    async def _unrecorded(self, url: str, looks: list[list[str]]) -> bool:
        """Whether ``url``, which the nodes given up of ``looks`` ([node, token], ...) held to record
        outside the queue, is to be recorded here: not if one of their parts holds its row (then
        it is let go of at once). A part still locked is waited for a while, as in _to_fetch."""
        for node, token in looks:
            given_back = GivenBack(node, token, 0)
            for _ in range(PART_LOOKS):
                stored = self._parts.stored(node, url)
                if stored is Stored.BUSY and await self._runs_again(given_back):
                    stored = self._parts.stored(node, url, even_if_busy=True)
                if stored is not Stored.BUSY:
                    break
                await asyncio.sleep(self._member.timeout / 4)
            if stored is Stored.YES:
                self._start()
                self._recorded.append((url_digest(url), 0))
                self._wake.set()
                return False
        return True

    def recorded(self, urls: Sequence[str]) -> None:
        """The rows of ``urls`` (claimed outside the queue) are with the writer: let go of them in
        Redis once it has committed them."""
        self._start()
        mark = self._commits.items_enqueued
        self._recorded.extend((url_digest(url), mark) for url in urls)
        self._wake.set()

    async def park(self, key: str, item: QueueItem) -> None:
        """Keep ``item`` aside in the crawl's ``parked:KEY`` hash, where unpark(key), by any node,
        finds it: it outlives this node."""
        digest, member = url_digest(item.url), encode_item(item)
        await call(self._crawl.client.hset(self._crawl.key(f"parked:{key}"), digest, member))

    async def unpark(self, key: str) -> int:
        """Queue the items every node parked under ``key``; how many."""
        return int(await self._crawl.run_as(self._member, "unpark", [key]))

    async def widen(self, landings: Sequence[str]) -> list[str]:
        """Note ``landings`` in the crawl's ``landings`` set; every one any node noted so far."""
        key = self._crawl.key("landings")
        if landings:
            await call(self._crawl.client.sadd(key, *landings))
        return sorted(bytes(member).decode() for member in await call(self._crawl.client.smembers(key)))

    async def put(self, item: QueueItem, delay: float = 0.0) -> None:
        """Queue ``item`` (in ``delay`` seconds); pushed with the next batch, a moment later.

        An item this node holds (put back) gives up its lease in the same push.
        """
        self._start()
        self._push(url_digest(item.url), encode_item(item), item.depth, delay, self._hand_back(item.url))

    def _push(self, digest: bytes, member: str, depth: int, delay: float, lease: str) -> None:
        self._puts.append((digest, member, depth, round(delay * 1000), lease))
        self._wake.set()

    def _hand_back(self, url: str) -> str:
        """The lease of ``url`` that goes with its put ('' if this node holds none)."""
        leases = self._held.get(url)
        if not leases:
            return ""
        lease = leases.popleft()
        if not leases:
            del self._held[url]
        self._returned[url] += 1
        return lease

    async def get(self) -> QueueItem:
        """Lease the next item of the crawl; waits while the queue is empty. Cancelled, what
        was leased meanwhile is given back when the frontier closes."""
        self._start()
        wait = EMPTY_POLL[0]
        while True:
            if self._puts:
                await self._sync()
            answer = await self._crawl.run_as(self._member, "take", [1])
            self._queued = int(answer[0])
            if len(answer) > 2:
                lease, member = answer[2].decode(), answer[3]
                item, given_back = decode_member(member)
                if given_back is None or await self._to_fetch(item, given_back, lease, member):
                    self._held.setdefault(item.url, deque()).append(lease)
                    if self.cookies is not None:
                        # Cookies another node was set before it queued this item go with it.
                        try:
                            await self.cookies.catch_up(int(answer[1]))
                        except Exception as exc:  # the item is held: it goes on, as the jar stands
                            log.warning("cannot share the crawl's cookies through Redis: %s", exc)
                    return item
                continue
            await asyncio.sleep(wait * random.uniform(0.8, 1.2))
            wait = min(wait * 2, EMPTY_POLL[1])

    async def _to_fetch(self, item: QueueItem, given_back: GivenBack, lease: str, member: bytes) -> bool:
        """Whether an item a node given up held is to be handled here. Not if that node's part
        holds its outcome (its lease is released), nor while that node may still store it (it is
        queued again, to look once more in a while)."""
        if given_back.looks >= PART_LOOKS:
            log.warning("%s: crawl node %s still holds its part; fetched again", item.url, given_back.node)
            return True
        stored = self._parts.stored(given_back.node, item.url)
        if stored is Stored.BUSY and await self._runs_again(given_back):
            stored = self._parts.stored(given_back.node, item.url, even_if_busy=True)
        if stored is Stored.NO:
            return True
        if stored is Stored.YES:
            self._done.append((lease, 0))  # its outcome is stored: nothing to commit here
        else:
            digest = url_digest(item.url)
            self._push(digest, looked_again(member), item.depth, self._member.timeout / 4, lease)
        self._wake.set()
        return False

    async def _runs_again(self, given_back: GivenBack) -> bool:
        """True if a later run of the given-up node holds its part (so the old run is gone: the
        lock is taken before the name registers): the name is a member under another token."""
        token = await call(self._crawl.client.hget(self._crawl.key("nodes"), given_back.node))
        return token is not None and token.decode() != given_back.token

    async def task_done(self, item: QueueItem) -> None:
        """Mark ``item`` handled: its lease is released once its outcome is committed."""
        if self._returned[item.url]:
            self._returned[item.url] -= 1
            if not self._returned[item.url]:
                del self._returned[item.url]
            return
        leases = self._held.get(item.url)
        if not leases:
            raise ValueError("task_done() for an item not got")
        lease = leases.popleft()
        if not leases:
            del self._held[item.url]
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
            except NodeGivenUp:
                return  # the crawl stops on it: its workers and its heartbeat meet it too
            except Exception as exc:  # Redis away for a moment: the next round tries again
                log.warning("cannot reach the crawl's Redis: %s", exc)
                await asyncio.sleep(1)
                self._wake.set()
            await asyncio.sleep(SYNC_EVERY)
            if self._done or self._recorded:
                self._wake.set()  # outcomes waiting for the writer to commit

    async def _sync(self) -> None:
        """Push the gathered puts, then release the leases whose outcome is committed."""
        async with self._sync_lock:
            if self._puts:
                if self.cookies is not None:
                    await self.cookies.share()  # before the links of the page that set them
                puts, self._puts = self._puts, []
                args: list[object] = []
                for put in puts:
                    args += put
                try:
                    self._queued = int(await self._crawl.run_as(self._member, "push", args))
                except BaseException:
                    self._puts[:0] = puts
                    raise
            committed = self._commits.items_committed
            released = []
            while self._done and self._done[0][1] <= committed:
                released.append(self._done.popleft()[0])
            recorded = []
            while self._recorded and self._recorded[0][1] <= committed:
                recorded.append(self._recorded.popleft()[0])
            if released or recorded:
                try:
                    await self._crawl.run_as(self._member, "release", [len(released), *released, *recorded])
                except BaseException:
                    self._done.extendleft((lease, 0) for lease in reversed(released))
                    self._recorded.extendleft((digest, 0) for digest in reversed(recorded))
                    raise

    async def close(self) -> None:
        """Push what is gathered, release what is committed, and give back every other lease
        (the items this node leaves unfinished go back to the queue); safe to call twice.
        A node given up has nothing left in Redis to give back."""
        if self._closed:
            return
        self._closed = True
        self._parts.close()
        if self._syncer is not None:
            self._syncer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._syncer
        if self._member.given_up:
            return
        await self._sync()
        # What is done but not committed (a writer that failed) is given back with the rest.
        await self._crawl.run_as(self._member, "give_back")
