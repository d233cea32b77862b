"""Politeness per host: its robots.txt asked when needed and again when old (its rules read by
robots.py), Crawl-delay, concurrency and the delay between requests."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from archiver.crawling.robots import RobotsAnswer, RobotsRules, read_answer, robots_keep
from archiver.crawling.robots_limits import ROBOTS_MAX_RULES, ROBOTS_MAX_WILDCARD_RULES
from archiver.robots_answer import NO_SUCH_HOST
from archiver.robots_directives import robots_agent
from archiver.urls import host_of, origin_of

log = logging.getLogger("archiver.crawl")


FetchRobots = Callable[[str, bool], Awaitable[tuple[int | None, bytes, str]]]
"""``fetch_robots(host_url, again)``: (status, body, URL) of ``host_url/robots.txt``, status None
if no whole answer came (none at all, or a body cut short), URL where the answer came from (its
redirects' last hop); ``again``: the crawl asked it before (it is kept again: the rules used from
now on are in the snapshot)."""
KeptRobots = tuple[str, int | None, bytes, float, str]
"""A robots.txt answer an interrupted crawl read: origin, status, body, seconds since it came,
where it came from; status None for one it asked whose answer is not to be used (out of reach,
given up)."""


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


ROBOTS_PARSED_HOSTS = 64
"""Hosts whose robots.txt rules are kept parsed: those judged last. Every other host keeps the
answer its rules come from, compressed, and is parsed again (in a thread) when next judged, not
asked again. The workers of a crawl (16 by default) fetch from no more hosts at once, so the
hosts a crawl goes back and forth between stay parsed; parsed rules cost far more than their
file (some 11 KB for no robots.txt at all, 2.5 MB for 9,000 rules), so that 64 hosts at the
limits of robots_limits.py hold some 160 MB, however many hosts a crawl with --scope any meets."""


@dataclass(slots=True)
class _Robots:
    """What the crawl keeps of each origin (scheme, host and port) it met while it runs: a few
    numbers, and the robots.txt answer its URLs are judged by."""

    crawl_delay: float = 0.0
    """robots.txt's Crawl-delay (bounded): the delay of the origin's fetches is never less, and
    they take one slot of their host."""
    answer: RobotsAnswer | None = None
    """None until its robots.txt is asked."""
    robots_until: float = 0.0
    """When (monotonic) its robots.txt is to be asked again."""
    robots_misses: int = 0
    """Times in a row its robots.txt was out of reach."""
    robots_ignored: int = 0
    """Rules of its robots.txt past the limits of robots_limits.py (the log says so when it changes)."""
    asked: bool = False
    """Its robots.txt was asked by the crawl before it was resumed, its answer not used."""


@dataclass
class _Busy:
    """The locks of a host that workers of this process fetch from, or ask its robots.txt: kept
    only while some do (_using)."""

    freed: asyncio.Condition = field(default_factory=asyncio.Condition)
    """Notified when one of its slots is freed."""
    active: int = 0
    """Fetches holding one of its slots."""
    delay_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by the fetch waiting out the host's delay."""
    robots_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by the worker reading its robots.txt rules (the others wait for them)."""
    users: int = 0
    """Workers using these: at 0 they go."""


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

    What it keeps is bounded whatever the crawl meets: parsed rules for the
    ROBOTS_PARSED_HOSTS hosts judged last, and for each host met a few numbers and
    its robots.txt answer, compressed.
    """

    _keeps_robots_bodies = True
    """False where the robots.txt answers are kept elsewhere (Redis): rules dropped from those
    kept parsed are read from there again."""

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
        self._next_start: dict[str, float] = {}
        """By host, when (monotonic) its next fetch may start."""
        self._robots: dict[str, _Robots] = {}
        """By origin: a robots.txt is for its scheme, host and port (RFC 9309 2.3)."""
        self._parsed: collections.OrderedDict[str, RobotsRules] = collections.OrderedDict()
        """By origin, the rules of the ROBOTS_PARSED_HOSTS origins judged last (the last at the end)."""
        self._busy: dict[str, _Busy] = {}

    def _robots_of(self, origin: str) -> _Robots:
        robots = self._robots.get(origin)
        if robots is None:
            robots = self._robots[origin] = _Robots()
        return robots

    @contextlib.contextmanager
    def _using(self, key: str) -> Iterator[_Busy]:
        """The locks of host ``key``, made for the first worker that needs them and dropped
        when the last one is done."""
        busy = self._busy.get(key)
        if busy is None:
            busy = self._busy[key] = _Busy()
        busy.users += 1
        try:
            yield busy
        finally:
            busy.users -= 1
            if busy.users == 0:
                del self._busy[key]

    def _crawl_delay(self, url: str) -> float:
        robots = self._robots.get(origin_of(url))
        return robots.crawl_delay if robots is not None else 0.0

    def _delay_of(self, url: str) -> float:
        return max(self._delay, self._crawl_delay(url))

    def _limit_of(self, url: str) -> int:
        """Most fetches in flight to the host of ``url`` (1 when its robots.txt asks a Crawl-delay)."""
        return 1 if self._crawl_delay(url) > 0 else self._concurrency

    @property
    def parsed_robots(self) -> int:
        """Hosts whose robots.txt rules are kept parsed now (at most ROBOTS_PARSED_HOSTS)."""
        return len(self._parsed)

    @property
    def hosts_in_use(self) -> int:
        """Hosts this process fetches from or reads the robots.txt of now: those that hold locks."""
        return len(self._busy)

    def set_delay(self, seconds: float) -> None:
        """Seconds between two requests to each host from now on (robots.txt may ask more)."""
        self._delay = seconds

    def set_concurrency(self, fetches: int) -> None:
        """Most fetches in flight to each host from now on (1 where robots.txt asks a delay)."""
        self._concurrency = fetches

    async def refusal(self, url: str) -> str | None:
        """Why robots.txt keeps us from ``url`` (ROBOTS, ROBOTS_UNREACHABLE); None if it lets
        us fetch it, and always with --ignore-robots."""
        if not self._obey_robots:
            return None
        return (await self._rules(url)).refusal(url)

    async def sitemaps(self, url: str) -> list[str]:
        """The URLs of the Sitemap: lines of the robots.txt of ``url``'s origin, resolved against
        the URL its answer came from."""
        rules = await self._rules(url)
        answer = self._robots_of(origin_of(url)).answer
        came_from = answer.url if answer is not None else None
        return rules.sitemaps(came_from or origin_of(url) + "/robots.txt")

    def robots_keep(self, misses: int, status: int | None = None) -> float:
        """Seconds a robots.txt answer ``status`` is used before it is asked again (see
        robots_keep); one of a host with no address as long as one out of reach once."""
        if status == NO_SUCH_HOST:
            misses = max(misses, 1)
        return robots_keep(misses, self._robots_max_age, self._robots_retry)

    async def _rules(self, url: str) -> RobotsRules:
        """The robots.txt rules of ``url``'s origin: those kept parsed; else its answer parsed
        again while it is fresh; else asked (on first need, and once too old: robots_keep)."""
        key = origin_of(url)
        robots = self._robots_of(key)
        rules = self._fresh_rules(key, robots)
        if rules is None:
            with self._using(key) as busy:
                async with busy.robots_lock:
                    rules = self._fresh_rules(key, robots)
                    if rules is None:
                        rules = await self._read_rules(key, robots)
                        self._keep_parsed(key, rules)
        return rules

    def _keep_parsed(self, key: str, rules: RobotsRules) -> None:
        """Keep the ``rules`` of origin ``key`` parsed, as the last judged, and drop those of the
        origin judged longest ago past ROBOTS_PARSED_HOSTS."""
        self._parsed[key] = rules
        self._parsed.move_to_end(key)
        while len(self._parsed) > ROBOTS_PARSED_HOSTS:
            self._parsed.popitem(last=False)

    def _fresh_rules(self, key: str, robots: _Robots) -> RobotsRules | None:
        """The rules of origin ``key`` kept parsed, if they are not too old (they become the
        last judged)."""
        if time.monotonic() >= robots.robots_until:
            return None
        rules = self._parsed.get(key)
        if rules is not None:
            self._parsed.move_to_end(key)
        return rules

    async def _read_rules(self, host_url: str, robots: _Robots) -> RobotsRules:
        """The rules of ``host_url``'s robots.txt: those of the answer kept while it is fresh,
        else of an answer asked now (one worker at a time: _rules() holds the host's lock)."""
        if self._keeps_robots_bodies and robots.answer is not None and time.monotonic() < robots.robots_until:
            return await asyncio.to_thread(robots.answer.rules, self._agent)
        before = robots.answer
        rules, keep, robots.answer = await self._robots_rules(host_url, robots)
        robots.robots_until = time.monotonic() + keep
        became = before is None or not before.out_of_reach
        if self._obey_robots and rules.out_of_reach and became:
            log.warning(
                "robots.txt of %s is out of reach (a server error, a status outside"
                " 100-599, or no answer): none of its URLs is fetched, as RFC 9309 asks,"
                " until it answers (it is asked again in %g s, then less and less often);"
                " --ignore-robots fetches them regardless",
                host_url,
                keep,
            )
        elif before is not None and before.out_of_reach and not rules.out_of_reach:
            log.info("robots.txt of %s answers again", host_url)
        if rules.ignored and rules.ignored != robots.robots_ignored:
            log.warning(
                "robots.txt of %s: %d rules past the limits (%d rules for a user agent,"
                " %d of them with a '*') are ignored, so that judging a URL stays cheap",
                host_url,
                rules.ignored,
                ROBOTS_MAX_RULES,
                ROBOTS_MAX_WILDCARD_RULES,
            )
        robots.robots_ignored = rules.ignored
        self._obey(robots, rules.crawl_delay())
        return rules

    def robots_streaks(self) -> dict[str, int]:
        """Origins whose robots.txt was out of reach the last times it was asked, and how many
        times in a row: kept for --resume, whose asks go on doubling the wait."""
        return {key: robots.robots_misses for key, robots in self._robots.items() if robots.robots_misses > 0}

    def adopt_streaks(self, streaks: Mapping[str, object]) -> None:
        """Take up the robots_streaks() of an interrupted crawl (a value no count is ignored).
        A crawl before they were kept by origin kept them by host[:port]: such a streak is
        taken up for both schemes."""
        for key, misses in streaks.items():
            if type(misses) is int and misses > 0:
                for origin in (key,) if "://" in key else (f"http://{key}", f"https://{key}"):
                    self._robots_of(origin).robots_misses = misses

    def _obey(self, robots: _Robots, crawl_delay: float) -> None:
        """The delay and limit of an origin's fetches as the Crawl-delay of its robots.txt sets them."""
        if self._obey_robots:
            robots.crawl_delay = min(crawl_delay, self._max_delay)

    async def adopt_robots(self, kept: Callable[[], Iterable[KeptRobots]]) -> None:
        """Use the robots.txt answers ``kept()`` gives, (origin, status, body, seconds since
        it came), that an interrupted crawl read, for what is left of their time, as the crawl
        never interrupted would have, rather than ask them again at once. They are read and
        parsed in a thread, as a fresh crawl's are: half a megabyte of rules a host takes a few
        tenths of a second, and a crawl may have met thousands of hosts (the rules of the last
        ROBOTS_PARSED_HOSTS of them are kept parsed, the others parsed again when judged).
        One whose status is None is asked again at first need, and recorded again (the crawl
        asked it before). Cancelled, none is used.
        """

        def read() -> tuple[list[tuple[str, RobotsAnswer, float, int, float]], dict[str, RobotsRules]]:
            adopted = []
            parsed: collections.OrderedDict[str, RobotsRules] = collections.OrderedDict()
            for host_url, status, body, age, came_from in kept():
                if status is None:
                    asked.append(host_url)
                    continue
                answer, rules = read_answer(status, body, self._agent, came_from)
                adopted.append((host_url, answer, rules.crawl_delay(), rules.ignored, age))
                parsed[host_url] = rules
                if len(parsed) > ROBOTS_PARSED_HOSTS:
                    parsed.popitem(last=False)
            return adopted, parsed

        asked: list[str] = []
        adopted, parsed = await asyncio.to_thread(read)
        for host_url in asked:
            self._robots_of(host_url).asked = True
        for host_url, answer, crawl_delay, ignored, age in adopted:
            robots = self._robots_of(host_url)
            robots.answer = answer
            robots.robots_ignored = ignored
            robots.robots_until = time.monotonic() + self.robots_keep(0) - age
            self._obey(robots, crawl_delay)
        for key, rules in parsed.items():
            self._keep_parsed(key, rules)

    async def _robots_rules(self, host_url: str, robots: _Robots) -> tuple[RobotsRules, float, RobotsAnswer]:
        """The rules of ``host_url``'s robots.txt, fetched, the seconds they are good for, and the
        answer they come from."""
        again = robots.answer is not None or robots.asked
        status, body, came_from = await self._fetch_robots(host_url, again)
        # Half a megabyte of rules takes a few tenths of a second to parse: not on the loop.
        answer, rules = await asyncio.to_thread(read_answer, status, body, self._agent, came_from)
        robots.robots_misses = robots.robots_misses + 1 if rules.out_of_reach else 0
        before = robots.answer
        if rules.out_of_reach and before is not None and not before.out_of_reach:
            # RFC 9309 2.4: rules it had outlive their day while it is out of reach.
            answer, rules = before, await asyncio.to_thread(before.rules, self._agent)
        return rules, self.robots_keep(robots.robots_misses, status), answer

    def busy(self, url: str) -> bool:
        """True if every slot of the URL's host is taken (a fetch now would wait)."""
        busy = self._busy.get(host_of(url))
        return busy is not None and busy.active >= self._limit_of(url)

    @contextlib.asynccontextmanager
    async def _held(self, url: str) -> AsyncIterator[_Busy]:
        """Hold one of this process's slots of the host of ``url`` (as many as its limit)."""
        with self._using(host_of(url)) as busy:
            async with busy.freed:
                # The limit may change meanwhile (archiver control concurrency): read it each time.
                await busy.freed.wait_for(lambda: busy.active < self._limit_of(url))
                busy.active += 1
            try:
                yield busy
            finally:
                async with busy.freed:
                    busy.active -= 1
                    busy.freed.notify_all()

    @contextlib.asynccontextmanager
    async def slot(self, url: str) -> AsyncIterator[None]:
        """Hold one of the host's concurrent slots, starting no sooner than its delay allows."""
        async with self._held(url) as busy:
            delay = self._delay_of(url)
            if delay > 0:
                async with busy.delay_lock:
                    wait = self._next_start.get(host_of(url), 0.0) - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    self._next_start[host_of(url)] = time.monotonic() + delay
            yield
