"""A robots.txt is for its scheme, host and port (RFC 9309 2.3): http://h and https://h each have
their own, in the crawl, in a resumed crawl and in a crawl shared through Redis."""

from __future__ import annotations

from archiver.crawling.politeness import HostPolicy
from archiver.scope import ROBOTS

ANSWERS = {
    "http://h.test": (200, b"User-agent: *\nDisallow: /plain\n"),
    "https://h.test": (200, b"User-agent: *\nDisallow: /secret\n"),
}
"""The robots.txt of each scheme of one host on its default port."""


class _Robots:
    """fetch_robots answering each origin with its own robots.txt, counting the asks."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, origin: str, again: bool) -> tuple[int | None, bytes, str]:
        self.asked.append(origin)
        return (*ANSWERS[origin], origin + "/robots.txt")


def _policy(fetch_robots: _Robots) -> HostPolicy:
    return HostPolicy(
        concurrency=1, delay=0.0, obey_robots=True, user_agent="archiver", fetch_robots=fetch_robots
    )


async def _refusals(policy: HostPolicy) -> list[str | None]:
    urls = ("https://h.test/secret", "http://h.test/secret", "http://h.test/plain", "https://h.test/plain")
    return [await policy.refusal(url) for url in urls]


async def test_http_and_https_of_a_host_each_obey_their_own_robots_txt():
    """Robots state was kept by host[:port], which drops the scheme with a default port: the
    robots.txt of http://h decided for https://h too (and was the only one asked). Each origin's
    robots.txt is asked and obeyed now."""
    fetch_robots = _Robots()
    policy = _policy(fetch_robots)
    assert await _refusals(policy) == [ROBOTS, None, ROBOTS, None]
    assert sorted(fetch_robots.asked) == ["http://h.test", "https://h.test"]


async def test_a_resumed_crawl_adopts_the_robots_txt_of_each_scheme():
    """Resuming, the robots.txt answers of http://h and https://h went to one key: the last
    adopted decided for both schemes. Each is adopted for its own origin now, and neither is
    asked again."""
    fetch_robots = _Robots()
    policy = _policy(fetch_robots)
    await policy.adopt_robots(
        lambda: [(origin, *answer, 1.0, origin + "/robots.txt") for origin, answer in ANSWERS.items()]
    )
    assert await _refusals(policy) == [ROBOTS, None, ROBOTS, None]
    assert fetch_robots.asked == []


def test_streaks_kept_by_host_before_are_taken_up_for_both_schemes():
    """A snapshot written before kept its robots.txt streaks by host[:port]; they are read still."""
    policy = _policy(_Robots())
    policy.adopt_streaks({"h.test": 2, "https://o.test:8443": 1, "bad": "x"})
    assert policy.robots_streaks() == {"http://h.test": 2, "https://h.test": 2, "https://o.test:8443": 1}


async def test_a_shared_crawl_keeps_the_robots_txt_of_each_scheme(redis_url):
    """Nodes of a shared crawl kept one robots.txt in Redis for http://h and https://h."""
    from archiver.crawling.redis_politeness import RedisHostPolicy
    from archiver.crawling.redis_state import Membership, connect

    crawl = connect(redis_url, "origins")
    fetch_robots = _Robots()
    try:
        member = Membership("A", "token-A", 100.0)
        await crawl.run("register", args=[crawl.prefix, "A", member.token, 100_000])
        policy = RedisHostPolicy(
            crawl,
            member,
            concurrency=1,
            delay=0.0,
            obey_robots=True,
            user_agent="archiver",
            fetch_robots=fetch_robots,
        )
        assert await _refusals(policy) == [ROBOTS, None, ROBOTS, None]
        assert sorted(fetch_robots.asked) == ["http://h.test", "https://h.test"]
    finally:
        await crawl.close()
