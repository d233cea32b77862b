"""A host policy's settings from the crawl's: one rule for every frontier's policy (HostPolicy, and
RedisHostPolicy for crawl nodes)."""

from __future__ import annotations

from typing import TypedDict

from archiver.config import CrawlConfig
from archiver.crawling.politeness import FetchRobots


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
