"""RedisHostPolicy: politeness held across every node of a crawl shared through Redis.

A host's slots are a sorted set in Redis (``slots:HOST``: holder -> expiry),
so --host-concurrency counts the fetches of every node; the time a host may
next be asked is ``next:HOST``, so --delay spaces the requests of every node;
robots.txt is fetched by one node (under a lock that expires) and kept in the
``robots`` hash for the others. A slot expires on its own after the longest a
fetch can take, so a node that dies frees its slots.

Each node also holds a host's limit locally, so only as many of its workers
as the host has slots ask Redis; the rest wait at home or serve other hosts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import AsyncIterator

from archiver.crawling.politeness import (
    ROBOTS_MAX_BYTES,
    FetchRobots,
    HostPolicy,
    RobotsRules,
    rules_from_response,
)
from archiver.crawling.redis_state import RedisCrawl, call
from archiver.urls import host_of

log = logging.getLogger("archiver.crawl")

SLOT_POLL = (0.01, 0.03)
"""Seconds a worker waits before asking again for a slot of a full host (drawn between these)."""
ROBOTS_POLL = 0.1
"""Seconds between two looks for robots.txt that another node is fetching."""


class RedisHostPolicy(HostPolicy):
    """HostPolicy whose slots, delays and robots.txt are shared through Redis."""

    def __init__(
        self,
        crawl: RedisCrawl,
        *,
        concurrency: int,
        delay: float,
        obey_robots: bool,
        user_agent: str,
        fetch_robots: FetchRobots,
        max_delay: float = 60.0,
        hold: float = 60.0,
    ) -> None:
        super().__init__(
            concurrency=concurrency,
            delay=delay,
            obey_robots=obey_robots,
            user_agent=user_agent,
            fetch_robots=fetch_robots,
            max_delay=max_delay,
        )
        self._crawl = crawl
        self._hold_ms = round(hold * 1000)
        """Longest a slot is held (the longest a fetch takes): then it frees itself."""

    async def _robots_rules(self, host_url: str) -> RobotsRules:
        """robots.txt of ``host_url``, fetched by one node for all."""
        host = host_of(host_url)
        key = self._crawl.key("robots")
        client = self._crawl.client
        while True:
            stored = await call(client.hget(key, host))
            if stored is not None:
                status, _, body = bytes(stored).partition(b"\n")
                return rules_from_response(int(status) if status else None, body, self._agent)
            lock = self._crawl.key(f"robots-lock:{host}")
            if await call(client.set(lock, b"1", nx=True, px=self._hold_ms)):
                status_got, body = await self._fetch_robots(host_url)
                text = (str(status_got) if status_got is not None else "").encode()
                await call(client.hset(key, host, text + b"\n" + body[:ROBOTS_MAX_BYTES]))
                await call(client.delete(lock))
                return rules_from_response(status_got, body, self._agent)
            await asyncio.sleep(ROBOTS_POLL)

    @contextlib.asynccontextmanager
    async def slot(self, url: str) -> AsyncIterator[None]:
        """Hold one of the host's slots across the crawl, starting no sooner than its delay
        allows (the delay counted from the last start by any node)."""
        host = self._host(url)
        async with host.freed:
            await host.freed.wait_for(lambda: host.active < host.limit)
            host.active += 1
        holder = uuid.uuid4().bytes
        keys = [self._crawl.key(f"slots:{host_of(url)}"), self._crawl.key(f"next:{host_of(url)}")]
        acquired = False
        try:
            while True:
                args = [holder, host.limit, round(host.delay * 1000), self._hold_ms]
                wait = int(await call(self._crawl.scripts["acquire"](keys=keys, args=args)))
                if wait == 0:
                    acquired = True
                    break
                pause = wait / 1000 if wait > 0 else random.uniform(*SLOT_POLL)
                await asyncio.sleep(pause)
            yield
        finally:
            if acquired:
                with contextlib.suppress(Exception):  # else it frees itself when it expires
                    await self._crawl.client.zrem(keys[0], holder)
            async with host.freed:
                host.active -= 1
                host.freed.notify_all()
