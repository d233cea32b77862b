"""RedisCookies: one cookie jar for every node of a shared crawl, kept in Redis.

A crawl of one process sends every request the cookies its answers set before. Its nodes each
hold a jar (crawling/cookies.py's SiteCookieJar), which they keep alike through the crawl's
``cookies`` hash: a node writes there the cookies its jar gained, changed or lost, and takes in
those the others wrote, as it joins and then every SYNC_EVERY seconds. So a cookie one node is
set reaches the others' requests within that much; of two nodes that change one cookie at once,
the last to write wins, as the later Set-Cookie does in one jar.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from archiver.crawling.cookies import SiteCookieJar, saved_cookies
from archiver.crawling.redis_state import RedisCrawl, call

log = logging.getLogger("archiver.crawl")

SYNC_EVERY = 0.5
"""Seconds between two exchanges of a node's jar with the crawl's."""


EXPIRY_SLACK = 2.0
"""Seconds by which two expiries of one cookie may differ and be the same (a jar keeps a cookie it
takes in for the seconds it has left, rounded)."""


def _key(cookie: dict[str, Any]) -> str:
    return f"{cookie.get('name')}\t{cookie.get('domain')}\t{cookie.get('path')}"


def _same(kept: str | None, value: str) -> bool:
    """True if the cookies ``kept`` and ``value`` (JSON) differ in nothing but a rounded expiry."""
    if kept is None:
        return False
    if kept == value:
        return True
    one, other = json.loads(kept), json.loads(value)
    expiries = float(one.pop("expires", -1)), float(other.pop("expires", -1))
    return one == other and abs(expiries[0] - expiries[1]) <= EXPIRY_SLACK


class RedisCookies:
    """Keeps ``jar`` alike with the crawl's ``cookies`` hash (see the module docstring)."""

    def __init__(self, crawl: RedisCrawl, jar: SiteCookieJar) -> None:
        self._crawl = crawl
        self._jar = jar
        self._hash = crawl.key("cookies")
        self._known: dict[str, str] = {}
        """Each cookie as this node and the hash last agreed on it, by name, domain and path."""

    async def sync(self) -> None:
        """Write what this node's jar changed since the last sync, then take in the others'."""
        held = json.loads(saved_cookies(self._jar))
        mine = {_key(cookie): json.dumps(cookie, sort_keys=True) for cookie in held}
        changed = {key: value for key, value in mine.items() if not _same(self._known.get(key), value)}
        gone = [key for key in self._known if key not in mine]
        if changed:
            await call(self._crawl.client.hset(self._hash, mapping=changed))
        if gone:
            await call(self._crawl.client.hdel(self._hash, *gone))
        shared = {
            bytes(key).decode(): bytes(value).decode()
            for key, value in (await call(self._crawl.client.hgetall(self._hash))).items()
        }
        theirs = [
            json.loads(value)
            for key, value in shared.items()
            if key not in changed and not _same(mine.get(key), value)
        ]
        if theirs:
            self._jar.adopt(theirs)
        dropped = [
            json.loads(value) for key, value in mine.items() if key not in shared and key not in changed
        ]
        if dropped:
            self._jar.forget(dropped)
        self._known = {**shared, **changed}

    async def run(self) -> None:
        """sync() every SYNC_EVERY seconds until cancelled; Redis away for a moment is tried again."""
        while True:
            await asyncio.sleep(SYNC_EVERY)
            try:
                await self.sync()
            except Exception as exc:  # the next round tries again
                log.warning("cannot share the crawl's cookies through Redis: %s", exc)
