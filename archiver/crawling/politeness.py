"""Politeness per host: its robots.txt asked when needed and again when old (its rules read by
robots.py), Crawl-delay, concurrency and the delay between requests."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypedDict

from archiver.config import CrawlConfig
from archiver.crawling.robots import RobotsRules, robots_agent, robots_keep, rules_from_response
from archiver.crawling.robots_limits import ROBOTS_MAX_RULES, ROBOTS_MAX_WILDCARD_RULES
from archiver.robots_answer import NO_SUCH_HOST
from archiver.urls import host_of

log = logging.getLogger("archiver.crawl")


def _host_url(url: str) -> str:
    """'http://h:8080' of 'http://h:8080/a/b' (a normalised URL)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


FetchRobots = Callable[[str, bool], Awaitable[tuple[int | None, bytes]]]
"""``fetch_robots(host_url, again)``: (status, body) of ``host_url/robots.txt``, status None if no
whole answer came (none at all, or a body cut short); ``again``: the crawl asked it before (it is
kept again: the rules used from now on are in the snapshot)."""
KeptRobots = tuple[str, int, bytes, float]
"""A robots.txt answer an interrupted crawl read: host URL, status, body, seconds since it came."""


class PolicyOptions(TypedDict):
    """The keyword arguments of HostPolicy (and of every policy built on it) that a crawl's settings give."""

    concurrency: int
    delay: float
    obey_robots: bool
    user_agent: str
    fetch_robots: FetchRobots
    max_delay: float
    robots_max_age: float
    robots_retry: float


def policy_options(config: CrawlConfig, fetch_robots: FetchRobots) -> PolicyOptions:
    """A host policy's settings from the crawl's: one rule for every frontier's policy."""
    return PolicyOptions(
        concurrency=config.host_concurrency or config.concurrency,
        delay=config.delay,
        obey_robots=config.obey_robots,
        user_agent=config.user_agent,
        fetch_robots=fetch_robots,
        max_delay=config.max_retry_after,
        robots_max_age=config.robots_max_age,
        robots_retry=config.robots_retry,
    )


class Politeness(Protocol):
    """What the crawler asks before and around each fetch (HostPolicy answers; for crawl
    nodes, RedisHostPolicy in crawling/redis_politeness.py)."""

    async def refusal(self, url: str) -> str | None:
        """Why the URL's robots.txt keeps us from fetching it (a skip reason), None if it does not."""

    async def sitemaps(self, url: str) -> list[str]:
        """The sitemaps the robots.txt of the URL's host names."""

    def busy(self, url: str) -> bool:
        """True if a fetch from the URL's host now would wait for a slot."""

    def slot(self, url: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold one of the host's slots for the length of a fetch."""


@dataclass
class _Host:
    limit: int
    """Most fetches in flight (1 when robots.txt asks a Crawl-delay)."""
    delay: float
    crawl_delay: float = 0.0
    """robots.txt's Crawl-delay (bounded): the host's delay is never less."""
    active: int = 0
    freed: asyncio.Condition = field(default_factory=asyncio.Condition)
    next_start: float = 0.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    robots: RobotsRules | None = None
    robots_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    robots_until: float = 0.0
    """When (monotonic) its robots.txt is to be asked again."""
    robots_misses: int = 0
    """Times in a row its robots.txt was out of reach."""


class HostPolicy:
    """Per-host limits every fetch goes through: robots, concurrency, delay between requests.

    ``fetch_robots(host_url, again)`` returns (status, body) of ``host_url/robots.txt``
    (status None if nothing answered); it is called when a URL of the host is
    first asked about, or its sitemaps (also with --ignore-robots), and again
    once the answer is ``robots_max_age`` seconds old (RFC 9309 2.4: a day), or,
    for a robots.txt out of reach, ``robots_retry`` seconds old, doubled each time
    in a row it is (up to ROBOTS_RETRY_MAX): one bad minute of a server keeps its
    host out for minutes, not for the rest of the crawl. Rules it had are kept
    while it is out of reach when asked again (RFC 9309 2.4).
    """

    def __init__(
        self,
        *,
        concurrency: int,
        delay: float,
        obey_robots: bool,
        user_agent: str,
        fetch_robots: FetchRobots,
        max_delay: float = 60.0,
        robots_max_age: float = 86_400.0,
        robots_retry: float = 60.0,
    ) -> None:
        self._robots_max_age = robots_max_age
        self._robots_retry = robots_retry
        self._concurrency = concurrency
        self._delay = delay
        self._obey_robots = obey_robots
        self._agent = robots_agent(user_agent)
        self._fetch_robots = fetch_robots
        self._max_delay = max_delay
        self._hosts: dict[str, _Host] = {}

    def _host(self, url: str) -> _Host:
        key = host_of(url)
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = _Host(self._concurrency, self._delay)
        return host

    def set_delay(self, seconds: float) -> None:
        """Seconds between two requests to each host from now on (robots.txt may ask more)."""
        self._delay = seconds
        for host in self._hosts.values():
            host.delay = max(seconds, host.crawl_delay)

    def set_concurrency(self, fetches: int) -> None:
        """Most fetches in flight to each host from now on (1 where robots.txt asks a delay)."""
        self._concurrency = fetches
        for host in self._hosts.values():
            host.limit = 1 if host.crawl_delay > 0 else fetches

    async def refusal(self, url: str) -> str | None:
        """Why robots.txt keeps us from ``url`` (ROBOTS, ROBOTS_UNREACHABLE); None if it lets
        us fetch it, and always with --ignore-robots."""
        if not self._obey_robots:
            return None
        return (await self._rules(url)).refusal(url)

    async def sitemaps(self, url: str) -> list[str]:
        """The URLs of the Sitemap: lines of the robots.txt of ``url``'s host."""
        return (await self._rules(url)).sitemaps(_host_url(url) + "/robots.txt")

    def robots_keep(self, misses: int, status: int | None = None) -> float:
        """Seconds a robots.txt answer ``status`` is used before it is asked again (see
        robots_keep); one of a host with no address as long as one out of reach once."""
        if status == NO_SUCH_HOST:
            misses = max(misses, 1)
        return robots_keep(misses, self._robots_max_age, self._robots_retry)

    async def _rules(self, url: str) -> RobotsRules:
        """The robots.txt rules of ``url``'s host, fetched on first need and again once they are
        too old (robots_keep)."""
        host = self._host(url)
        if host.robots is None or time.monotonic() >= host.robots_until:
            async with host.robots_lock:
                if host.robots is None or time.monotonic() >= host.robots_until:
                    before = host.robots
                    host.robots, keep = await self._robots_rules(_host_url(url), host)
                    host.robots_until = time.monotonic() + keep
                    became = before is None or not before.out_of_reach
                    if self._obey_robots and host.robots.out_of_reach and became:
                        log.warning(
                            "robots.txt of %s is out of reach (a server error, a status outside"
                            " 100-599, or no answer): none of its URLs is fetched, as RFC 9309 asks,"
                            " until it answers (it is asked again in %g s, then less and less often);"
                            " --ignore-robots fetches them regardless",
                            _host_url(url),
                            keep,
                        )
                    elif before is not None and before.out_of_reach and not host.robots.out_of_reach:
                        log.info("robots.txt of %s answers again", _host_url(url))
                    if host.robots.ignored and (before is None or before.ignored != host.robots.ignored):
                        log.warning(
                            "robots.txt of %s: %d rules past the limits (%d rules for a user agent,"
                            " %d of them with a '*') are ignored, so that judging a URL stays cheap",
                            _host_url(url),
                            host.robots.ignored,
                            ROBOTS_MAX_RULES,
                            ROBOTS_MAX_WILDCARD_RULES,
                        )
                    self._obey(host, host.robots)
        return host.robots

    def robots_streaks(self) -> dict[str, int]:
        """Hosts (host[:port]) whose robots.txt was out of reach the last times it was asked, and
        how many times in a row: kept for --resume, whose asks go on doubling the wait."""
        return {key: host.robots_misses for key, host in self._hosts.items() if host.robots_misses > 0}

    def adopt_streaks(self, streaks: Mapping[str, object]) -> None:
        """Take up the robots_streaks() of an interrupted crawl (a value no count is ignored)."""
        for key, misses in streaks.items():
            if type(misses) is int and misses > 0:
                host = self._hosts.get(key)
                if host is None:
                    host = self._hosts[key] = _Host(self._concurrency, self._delay)
                host.robots_misses = misses

    def _obey(self, host: _Host, rules: RobotsRules) -> None:
        """The host's delay and limit as its robots.txt ``rules`` set them."""
        if self._obey_robots:
            host.crawl_delay = min(rules.crawl_delay(), self._max_delay)
        host.delay = max(self._delay, host.crawl_delay)
        host.limit = 1 if host.crawl_delay > 0 else self._concurrency

    async def adopt_robots(self, kept: Callable[[], Iterable[KeptRobots]]) -> None:
        """Use the robots.txt answers ``kept()`` gives, (host URL, status, body, seconds since
        it came), that an interrupted crawl read, for what is left of their time, as the crawl
        never interrupted would have, rather than ask them again at once. They are read and
        parsed in a thread, as a fresh crawl's are: half a megabyte of rules a host takes a few
        tenths of a second, and a crawl may have met thousands of hosts. Cancelled, none is used.
        """

        def parse() -> list[tuple[str, RobotsRules, float]]:
            return [
                (host_url, rules_from_response(status, body, self._agent), age)
                for host_url, status, body, age in kept()
            ]

        for host_url, rules, age in await asyncio.to_thread(parse):
            host = self._host(host_url)
            host.robots = rules
            host.robots_until = time.monotonic() + self.robots_keep(0) - age
            self._obey(host, rules)

    async def _robots_rules(self, host_url: str, host: _Host) -> tuple[RobotsRules, float]:
        """The rules of ``host_url``'s robots.txt, fetched (by one worker: _rules() holds the host's
        lock), and the seconds they are good for."""
        status, body = await self._fetch_robots(host_url, host.robots is not None)
        # Half a megabyte of rules takes a few tenths of a second to parse: not on the loop.
        rules = await asyncio.to_thread(rules_from_response, status, body, self._agent)
        host.robots_misses = host.robots_misses + 1 if rules.out_of_reach else 0
        if rules.out_of_reach and host.robots is not None and not host.robots.out_of_reach:
            rules = host.robots  # RFC 9309 2.4: rules it had outlive their day while it is out of reach
        return rules, self.robots_keep(host.robots_misses, status)

    def robots_out_of_reach(self, url: str) -> bool:
        """True while the robots.txt of ``url``'s host, as last asked, is out of reach."""
        robots = self._host(url).robots
        return robots is not None and robots.out_of_reach

    def busy(self, url: str) -> bool:
        """True if every slot of the URL's host is taken (a fetch now would wait)."""
        host = self._host(url)
        return host.active >= host.limit

    @contextlib.asynccontextmanager
    async def slot(self, url: str) -> AsyncIterator[None]:
        """Hold one of the host's concurrent slots, starting no sooner than its delay allows."""
        host = self._host(url)
        async with host.freed:
            # The limit may change meanwhile (archiver control concurrency): read it each time.
            await host.freed.wait_for(lambda: host.active < host.limit)
            host.active += 1
        try:
            if host.delay > 0:
                async with host.lock:
                    wait = host.next_start - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    host.next_start = time.monotonic() + host.delay
            yield
        finally:
            async with host.freed:
                host.active -= 1
                host.freed.notify_all()
