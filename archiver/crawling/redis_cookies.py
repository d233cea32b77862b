"""RedisCookies: one cookie jar for every node of a shared crawl, kept in Redis.

A crawl of one process sends every request the cookies its answers set before. Its nodes each
hold a jar (crawling/cookies.py's SiteCookieJar), which they keep alike through the crawl's
``cookies`` hash: a node writes there the cookies its jar gained, changed or lost, and takes in
those the others wrote, as it joins and then every SYNC_EVERY seconds; of two nodes that change
one cookie at once, the last to write wins, as the later Set-Cookie does in one jar.

A page's links go with the cookies its answer set, as a browser sends them: the node that was
set them writes its jar's changes before it queues the links (RedisFrontier calls share()), each
write counting one more ``cookies:version``, which the take of an item gives; a node that takes
an item under a version it has not seen takes in the jar first (catch_up()). A jar unchanged
costs nothing more than the comparison.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from archiver.crawling.cookies import SiteCookieJar
from archiver.crawling.redis_state import RedisCrawl, call
from archiver.crawling.saved_cookies import saved_cookies

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
        self._version_key = crawl.key("cookies:version")
        self._known: dict[str, str] = {}
        """Each cookie as this node and the hash last agreed on it, by name, domain and path."""
        self._version = 0
        """The ``cookies:version`` of the hash as this node last took it in."""
        self._lock = asyncio.Lock()
        """Held by one exchange at a time (the sync loop, a take, a push of links)."""

    async def sync(self) -> None:
        """Write what this node's jar changed since the last sync, then take in the others'."""
        async with self._lock:
            mine, changed, _version = await self._write()
            await self._take_in(mine, changed)

    async def share(self) -> None:
        """Write what this node's jar changed since the last exchange (nothing if it did not)."""
        async with self._lock:
            _mine, _changed, version = await self._write()
            if version == self._version + 1:
                self._version = version  # its own write: nothing of the others' to take in

    async def catch_up(self, version: int) -> None:
        """Take in the jar, as sync(), if its ``cookies:version`` (as a take gave it) is one this
        node has not seen."""
        if version > self._version:
            async with self._lock:
                if version > self._version:
                    mine, changed, _version = await self._write()
                    await self._take_in(mine, changed)

    async def _write(self) -> tuple[dict[str, str], dict[str, str], int | None]:
        """Write what the jar changed since the last exchange: the jar's cookies and those written,
        by key, and the ``cookies:version`` the write made (None: nothing to write)."""
        held = json.loads(saved_cookies(self._jar))
        mine = {_key(cookie): json.dumps(cookie, sort_keys=True) for cookie in held}
        changed = {key: value for key, value in mine.items() if not _same(self._known.get(key), value)}
        gone = [key for key in self._known if key not in mine]
        if not changed and not gone:
            return mine, changed, None
        if changed:
            await call(self._crawl.client.hset(self._hash, mapping=changed))
        if gone:
            await call(self._crawl.client.hdel(self._hash, *gone))
        version = int(await call(self._crawl.client.incr(self._version_key)))
        self._known = {key: value for key, value in {**self._known, **changed}.items() if key in mine}
        return mine, changed, version

    async def _take_in(self, mine: dict[str, str], changed: dict[str, str]) -> None:
        """Take in what the others wrote: ``mine``, the jar's cookies as _write() found them (one
        set since is no cookie the others dropped), ``changed``, those it wrote."""
        version = int(await call(self._crawl.client.get(self._version_key)) or 0)
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
        self._version = max(self._version, version)

    async def run(self) -> None:
        """sync() every SYNC_EVERY seconds until cancelled; Redis away for a moment is tried again."""
        while True:
            await asyncio.sleep(SYNC_EVERY)
            try:
                await self.sync()
            except Exception as exc:  # the next round tries again
                log.warning("cannot share the crawl's cookies through Redis: %s", exc)
