"""A host's robots.txt as the crawl reads it: its rules for our user agent (with protego), from
what its answer gives (archiver/robots_answer.py, a rule the manifest's repair reads it by too),
and how long an answer is used.

>>> rules = RobotsRules.parse("User-agent: *\\nDisallow: /private", "archiver")
>>> rules.allows("http://h/private/x"), rules.allows("http://h/public")
(False, True)
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from protego import Protego

from archiver.crawling.robots_groups import own_groups
from archiver.crawling.robots_limits import cap_rules
from archiver.robots_answer import UNAVAILABLE, UNREACHABLE, robots_answer, robots_body
from archiver.scope import ROBOTS, ROBOTS_UNREACHABLE
from archiver.sitemaps import named_sitemaps

ROBOTS_RETRY_MAX = 3600.0
"""Longest wait, in seconds, before a robots.txt still out of reach is asked again."""


@dataclass(frozen=True)
class RobotsRules:
    """The robots.txt rules of one host, for our user agent."""

    parser: Protego | None
    """None when the host has no usable robots.txt: everything is allowed (unless out of reach)."""
    agent: str
    out_of_reach: bool = False
    """robots.txt could not be read (a server error, no answer): nothing is allowed."""
    ignored: int = 0
    """Rules past the limits of robots_limits.py, not read: matching a URL costs what those
    limits allow, however many rules the file holds."""

    @classmethod
    def parse(cls, text: str, agent: str) -> RobotsRules:
        """The rules of the robots.txt ``text`` for ``agent`` (its groups as robots_groups.py finds
        them), each agent's rules read no further than robots_limits.py allows."""
        capped = cap_rules(own_groups(text, agent))
        return cls(Protego.parse(capped.text), agent, ignored=capped.ignored)

    @classmethod
    def allow_all(cls, agent: str) -> RobotsRules:
        return cls(None, agent)

    @classmethod
    def unreachable(cls, agent: str) -> RobotsRules:
        return cls(None, agent, out_of_reach=True)

    def refusal(self, url: str) -> str | None:
        """Why robots.txt keeps us from ``url`` (ROBOTS, ROBOTS_UNREACHABLE), None if it does not."""
        if self.out_of_reach:
            return ROBOTS_UNREACHABLE
        if self.parser is None or self.parser.can_fetch(url, self.agent):
            return None
        return ROBOTS

    def allows(self, url: str) -> bool:
        return self.refusal(url) is None

    def crawl_delay(self) -> float:
        if self.parser is None:
            return 0.0
        return float(self.parser.crawl_delay(self.agent) or 0.0)

    def sitemaps(self, robots_url: str) -> list[str]:
        """The URLs of its Sitemap: lines, as named_sitemaps() resolves them against its URL
        ``robots_url`` (they apply to every user agent).

        >>> rules = RobotsRules.parse("Sitemap: http://h/s.xml\\nSitemap: /t.xml\\nSitemap: ftp://h/u", "a")
        >>> rules.sitemaps("http://h/robots.txt")
        ['http://h/s.xml', 'http://h/t.xml']
        """
        if self.parser is None:
            return []
        return named_sitemaps(self.parser.sitemaps, robots_url)


def rules_from_response(status: int | None, body: bytes, agent: str) -> RobotsRules:
    """Rules from a robots.txt fetch answered ``status`` (None: no whole answer came), as
    robots_answer() reads it: a body's rules, none (everything allowed), or everything
    disallowed while it is out of reach.

    >>> [rules_from_response(s, b"", "a").allows("http://h/") for s in (404, 301, 503, 429, None, 2000)]
    [True, True, False, False, False, False]
    """
    answer = robots_answer(status)
    if answer == UNREACHABLE:
        return RobotsRules.unreachable(agent)
    if answer == UNAVAILABLE:
        return RobotsRules.allow_all(agent)
    # UTF-8 (RFC 9309), its byte-order mark no part of its first line (which it would make no
    # "User-agent" line, and its group's rules none).
    return RobotsRules.parse(robots_body(body).decode("utf-8-sig", errors="replace"), agent)


@dataclass(frozen=True, slots=True)
class RobotsAnswer:
    """The robots.txt answer a host's URLs are judged by, kept so that its rules, once dropped
    from those kept parsed, are read again without asking the host again (RFC 9309 2.4 lets an
    answer be used for a day)."""

    status: int | None
    packed_body: bytes
    """Its body zlib-compressed, b"" for none (and where the body is kept elsewhere: Redis)."""
    url: str | None = None
    """Where it came from, the last hop of its redirects; None for its origin's /robots.txt. A
    relative Sitemap: line is resolved against it (RFC 3986 5.1.3: a document's base URI is the
    URI it was retrieved from)."""

    @property
    def out_of_reach(self) -> bool:
        return robots_answer(self.status) == UNREACHABLE

    def rules(self, agent: str) -> RobotsRules:
        """Its rules for ``agent``: up to tenths of a second of parsing, to call off the event loop."""
        body = zlib.decompress(self.packed_body) if self.packed_body else b""
        return rules_from_response(self.status, body, agent)


def read_answer(
    status: int | None, body: bytes, agent: str, url: str | None = None
) -> tuple[RobotsAnswer, RobotsRules]:
    """A robots.txt answer kept (its body as far as its rules are read, compressed; where it came
    from: ``url``) and its rules for ``agent``: to call off the event loop.

    >>> answer, rules = read_answer(200, b"User-agent: *\\nDisallow: /x", "a")
    >>> rules.allows("http://h/x"), answer.rules("a").allows("http://h/x"), answer.out_of_reach
    (False, False, False)
    """
    read = robots_body(body)
    packed = zlib.compress(read, 1) if read else b""
    return RobotsAnswer(status, packed, url), rules_from_response(status, read, agent)


def robots_keep(misses: int, max_age: float, retry: float) -> float:
    """Seconds a robots.txt answer is used before it is asked again: ``max_age`` (RFC 9309 2.4 asks
    no more than a day); one out of reach ``misses`` times in a row, ``retry`` doubled for each
    time after the first, up to ROBOTS_RETRY_MAX (and ``max_age``).

    >>> [robots_keep(misses, 86400, 60) for misses in (0, 1, 2, 3, 8)]
    [86400, 60, 120, 240, 3600.0]
    """
    if misses <= 0:
        return max_age
    backoff: float = retry * 2 ** min(misses - 1, 32)
    return min(backoff, ROBOTS_RETRY_MAX, max_age)
