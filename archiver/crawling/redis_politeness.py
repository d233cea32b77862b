"""RedisHostPolicy: politeness held across every node of a crawl shared through Redis.

A host's slots are a sorted set in Redis (``slots:HOST``: holder -> expiry),
so --host-concurrency counts the fetches of every node; the time a host may
next be asked is ``next:HOST``, so --delay spaces the requests of every node;
robots.txt is fetched by one node and kept in the ``robots`` hash for the others,
by origin (with the time it is good until: asked again as HostPolicy says). The node
fetching it holds ``robots-lock:ORIGIN`` for as long as it is a member of the
crawl: the others wait for its answer, and take its turn as soon as its
heartbeat has run out (they give it up then). A slot expires on its own after
the longest a fetch can take, and is free as soon as its node's heartbeat has
run out: a node that dies holds up no host.

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

from archiver.crawling.politeness import FetchRobots, HostPolicy, _Robots
from archiver.crawling.redis_state import Membership, RedisCrawl, call
from archiver.crawling.robots import RobotsAnswer, RobotsRules, rules_from_response
from archiver.robots_answer import ROBOTS_MAX_BYTES
from archiver.urls import host_of

log = logging.getLogger("archiver.crawl")

SLOT_POLL = (0.01, 0.03)
"""Seconds a worker waits before asking again for a slot of a full host (drawn between these)."""
ROBOTS_POLL = 0.1
"""Seconds between two looks for robots.txt that another node is fetching."""


def _entry(stored: bytes) -> tuple[int | None, int, bytes, str | None]:
    """(status, times in a row out of reach, body, where it came from: None if not said) of a
    robots.txt entry ('STATUS UNTIL MISSES URL\\nBODY'; no URL in one a node before kept).

    >>> _entry(b"503 1700000000000 2\\n"), _entry(b" 1700000000000 1 http://o/r\\n")
    ((503, 2, b'', None), (None, 1, b'', 'http://o/r'))
    >>> _entry(b"200\\nUser-agent: *")
    (200, 0, b'User-agent: *', None)
    """
    head, _, body = bytes(stored).partition(b"\n")
    fields = head.split(b" ")
    status = int(fields[0]) if fields[0] else None
    misses = int(fields[2]) if len(fields) > 2 else 0
    url = fields[3].decode("utf-8", "replace") if len(fields) > 3 and fields[3] else None
    return status, misses, body, url


class RedisHostPolicy(HostPolicy):
    """HostPolicy whose slots, delays and robots.txt are shared through Redis."""

    _keeps_robots_bodies = False

    def __init__(
        self,
        crawl: RedisCrawl,
        member: Membership,
        *,
        concurrency: int,
        delay: float,
        obey_robots: bool,
        user_agent: str,
        fetch_robots: FetchRobots,
        max_delay: float = 60.0,
        robots_max_age: float = 86_400.0,
        robots_retry: float = 60.0,
        hold: float = 60.0,
    ) -> None:
        super().__init__(
            concurrency=concurrency,
            delay=delay,
            obey_robots=obey_robots,
            user_agent=user_agent,
            fetch_robots=fetch_robots,
            max_delay=max_delay,
            robots_max_age=robots_max_age,
            robots_retry=robots_retry,
        )
        self._crawl = crawl
        self._member = member
        self._hold_ms = round(hold * 1000)
        """Longest a slot is held (the longest a fetch takes): then it frees itself."""

    async def _robots_rules(self, host_url: str, robots: _Robots) -> tuple[RobotsRules, float, RobotsAnswer]:
        """robots.txt of ``host_url`` (an origin: its name in the ``robots`` hash) as that hash
        keeps it (fetched by one node for all once it is too old), the seconds it is good for,
        and its answer (its body is kept in Redis alone: rules dropped from those a node keeps
        parsed are read from there again)."""
        name = host_url
        while True:
            answer = await self._crawl.run_as(self._member, "robots_turn", [name])
            if int(answer[0]) == 1:
                status, misses, body, came_from = _entry(answer[1])
                left = int(answer[2])
                keep = self.robots_keep(misses, status) if left < 0 else max(left / 1000, ROBOTS_POLL)
                rules = await asyncio.to_thread(rules_from_response, status, body, self._agent)
                return rules, keep, RobotsAnswer(status, b"", came_from)
            if int(answer[0]) == 2:
                return await self._fetch_turn(host_url, name, answer[1], answer[2])
            await asyncio.sleep(ROBOTS_POLL)

    async def _fetch_turn(
        self, host_url: str, name: str, before: bytes, reaped: list[bytes]
    ) -> tuple[RobotsRules, float, RobotsAnswer]:
        """Fetch the robots.txt whose turn this node holds, and store it for every node."""
        for node, count in zip(reaped[::2], reaped[1::2], strict=True):
            log.warning(
                "crawl node %s went silent: its %d URL(s) in flight go back to the queue",
                node.decode(),
                int(count),
            )
        try:
            # Asked again if any node asked it before.
            status, body, came_from = await self._fetch_robots(host_url, bool(before))
        except BaseException:
            with contextlib.suppress(Exception):  # the others take the turn once this node is gone
                await self._crawl.run_as(self._member, "robots_store", [name])
            raise
        rules = await asyncio.to_thread(rules_from_response, status, body, self._agent)
        misses = 0
        if rules.out_of_reach:
            earlier = _entry(before) if before else None
            misses = 1 + (earlier[1] if earlier is not None else 0)
            if earlier is not None:
                kept = await asyncio.to_thread(rules_from_response, earlier[0], earlier[2], self._agent)
                if not kept.out_of_reach:
                    # RFC 9309 2.4: rules it had outlive their day while it is out of reach.
                    rules, status, body, came_from = kept, earlier[0], earlier[2], earlier[3] or came_from
        keep = self.robots_keep(misses, status)
        text = str(status) if status is not None else ""
        args = [name, text, round(keep * 1000), misses, body[:ROBOTS_MAX_BYTES], came_from]
        await self._crawl.run_as(self._member, "robots_store", args)
        return rules, keep, RobotsAnswer(status, b"", came_from)

    @contextlib.asynccontextmanager
    async def slot(self, url: str) -> AsyncIterator[None]:
        """Hold one of the host's slots across the crawl, starting no sooner than its delay
        allows (the delay counted from the last start by any node)."""
        async with self._held(url):
            holder = f"{self._member.node}\n{uuid.uuid4().hex}"
            keys = [self._crawl.key(f"slots:{host_of(url)}"), self._crawl.key(f"next:{host_of(url)}")]
            acquired = False
            try:
                while True:
                    limit, delay_ms = self._limit_of(url), round(self._delay_of(url) * 1000)
                    args = [holder, limit, delay_ms, self._hold_ms, self._crawl.prefix]
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
                        await call(self._crawl.client.zrem(keys[0], holder))
