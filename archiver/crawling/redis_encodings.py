"""RedisEncodings: the encodings of the documents every node of a shared crawl read, in Redis.

A stylesheet that names no encoding is read in its referrer's (crawling/referrers.py), and
the node that fetches it is often not the one that read its referrer. Each node notes in the
crawl's ``encodings`` hash the encoding of each document it read in one other than UTF-8,
before it queues that document's links; a node that reads a stylesheet looks its referrer up
there. A document it does not hold was read in UTF-8, or has no encoding.
"""

from __future__ import annotations

from archiver.crawling.redis_state import RedisCrawl, call, url_digest

UTF_8 = "utf-8"


class RedisEncodings:
    """ReferrerEncodings' look-up and share over the crawl's ``encodings`` hash."""

    def __init__(self, crawl: RedisCrawl) -> None:
        self._crawl = crawl
        self._key = crawl.key("encodings")

    async def look_up(self, url: str) -> str | None:
        """The encoding some node read the document at ``url`` in (UTF-8 if none noted it)."""
        found = await call(self._crawl.client.hget(self._key, url_digest(url)))
        return bytes(found).decode() if found is not None else UTF_8

    async def share(self, url: str, encoding: str) -> None:
        """Note that this node read the document at ``url`` in ``encoding`` (not UTF-8)."""
        await call(self._crawl.client.hset(self._key, url_digest(url), encoding))
