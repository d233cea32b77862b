"""Politeness measured at the server: robots.txt, Crawl-delay, per-host concurrency, Retry-After."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web
from conftest import manifest_rows

from archiver.crawling.politeness import RobotsRules, robots_agent, rules_from_response


async def test_robots_disallow_is_skipped_and_recorded(site, run_crawl, tmp_path):
    site.file("/robots.txt", "User-agent: *\nDisallow: /private\n", "text/plain")
    site.page("/", links=["/private/a", "/public"])
    site.page("/public")
    site.page("/private/a")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert (rows[site.url("/private/a")].outcome, rows[site.url("/private/a")].reason) == (
        "skipped",
        "robots",
    )
    assert site.hits["/private/a"] == 0 and site.hits["/public"] == 1
    assert site.hits["/robots.txt"] == 1  # fetched once per host
    result = await run_crawl(site.url("/"), obey_robots=False, output=tmp_path / "ignored")
    assert manifest_rows(result.snapshot.root)[site.url("/private/a")].outcome == "fetched"


async def test_robots_groups_match_our_agent(site, run_crawl):
    site.file("/robots.txt", "User-agent: archiver\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "text/plain")
    site.page("/")
    await site.start()
    result = await run_crawl(site.url("/"))
    assert manifest_rows(result.snapshot.root)[site.url("/")].reason == "robots"


async def test_crawl_delay_spaces_requests(site, run_crawl):
    starts: list[float] = []

    async def timed(request: web.Request) -> web.Response:
        starts.append(time.monotonic())
        return web.Response(text="<p>x</p>", content_type="text/html")

    site.file("/robots.txt", "User-agent: *\nCrawl-delay: 0.2\n", "text/plain")
    site.page("/", links=[f"/p{i}" for i in range(4)])
    for i in range(4):
        site.handler(f"/p{i}", timed)
    await site.start()
    await run_crawl(site.url("/"), concurrency=8)
    starts.sort()
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert len(starts) == 4 and min(gaps) >= 0.19


async def test_host_concurrency_never_exceeded(site, run_crawl):
    state = {"now": 0, "most": 0}

    async def slow(request: web.Request) -> web.Response:
        state["now"] += 1
        state["most"] = max(state["most"], state["now"])
        await asyncio.sleep(0.03)
        state["now"] -= 1
        return web.Response(text="<p>x</p>", content_type="text/html")

    site.page("/", links=[f"/s{i}" for i in range(20)])
    for i in range(20):
        site.handler(f"/s{i}", slow)
    await site.start()
    await run_crawl(site.url("/"), concurrency=8, host_concurrency=2)
    assert state["most"] == 2


async def test_retry_after_is_waited_out(site, run_crawl):
    seen: list[float] = []

    async def limited(request: web.Request) -> web.Response:
        seen.append(time.monotonic())
        if len(seen) == 1:
            return web.Response(status=429, headers={"Retry-After": "1"})
        return web.Response(text="ok", content_type="text/plain")

    site.page("/", links=["/limited"])
    site.handler("/limited", limited)
    await site.start()
    result = await run_crawl(site.url("/"))
    assert manifest_rows(result.snapshot.root)[site.url("/limited")].status == 200
    assert seen[1] - seen[0] >= 0.95


@pytest.mark.parametrize(
    ("status", "body", "allowed"),
    [(404, b"", True), (None, b"", True), (503, b"", False), (200, b"User-agent: *\nDisallow: /x", False)],
)
def test_rules_from_response(status, body, allowed):
    assert rules_from_response(status, body, "archiver").allows("http://h/x") is allowed


def test_robots_agent_token():
    assert robots_agent("archiver/0.1.0 (+https://example.org)") == "archiver"
    assert RobotsRules.parse("User-agent: *\nCrawl-delay: 3", "archiver").crawl_delay() == 3.0
