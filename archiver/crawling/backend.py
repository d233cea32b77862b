"""Where a crawl keeps the state its processes share: SQLite and this process (local_backend),
or Redis for crawl nodes (crawling/nodes.py), which give run.run_crawl() its frontier, host
policy, budget, controls and, shared, its cookie jar."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from archiver.config import CrawlConfig
from archiver.crawling.budget import Budget, LocalBudget
from archiver.crawling.control import ControlSource
from archiver.crawling.control_file import FileControlSource
from archiver.crawling.cookies import SiteCookieJar
from archiver.crawling.frontier import Frontier
from archiver.crawling.local_frontier import SqliteFrontier
from archiver.crawling.policy_options import policy_options
from archiver.crawling.politeness import FetchRobots, HostPolicy
from archiver.crawling.referrers import LookUp, ReferrerEncodings
from archiver.crawling.writer import Writer
from archiver.store.snapshot import Snapshot


class ClosingFrontier(Frontier, Protocol):
    """A Frontier used as ``async with``, which closes it."""

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> None: ...


class SharedJar(Protocol):
    """A cookie jar kept alike with the other processes of a crawl (redis_cookies.RedisCookies)."""

    async def sync(self) -> None:
        """Give the others what this jar changed, and take in what they did."""

    async def run(self) -> None:
        """sync() now and then, until cancelled."""


@dataclass
class Backend:
    """Where a crawl keeps the state its processes share: SQLite and this process
    (``local_backend``), or Redis for crawl nodes (crawling/nodes.py)."""

    frontier: Callable[[Snapshot, Writer], ClosingFrontier]
    policy: Callable[[CrawlConfig, FetchRobots], HostPolicy]
    """Given how robots.txt is fetched (and kept in the WARC: crawling/recorded.py)."""
    budget: Callable[[CrawlConfig], Budget]
    controls: Callable[[Snapshot], ControlSource]
    referrers: Callable[[LookUp], ReferrerEncodings] = ReferrerEncodings
    cookies: Callable[[SiteCookieJar], SharedJar] | None = None
    """The crawl's one cookie jar, when its processes share it (crawl nodes)."""
    """Given how the snapshot being written reads an encoding back (referrers.SnapshotEncodings)."""
    reload: bool = True
    """A resumed crawl refills its frontier from the manifest (a shared one keeps its state)."""


def _local_policy(config: CrawlConfig, fetch_robots: FetchRobots) -> HostPolicy:
    return HostPolicy(**policy_options(config, fetch_robots))


def local_backend() -> Backend:
    """A crawl made by one process: its queue in frontier.sqlite3, its controls in control.sqlite3."""
    return Backend(
        frontier=lambda snapshot, writer: SqliteFrontier(snapshot.frontier_path),
        policy=_local_policy,
        budget=lambda config: LocalBudget(config.max_pages, config.max_bytes),
        controls=lambda snapshot: FileControlSource(snapshot.control_path),
    )
