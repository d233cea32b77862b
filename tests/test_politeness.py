"""Politeness measured at the server: robots.txt, Crawl-delay, per-host concurrency, Retry-After."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from conftest import manifest_rows
from raw_server import RawHandler, RawRequest, RawServer, reset
from test_robots_kept import warc_records

from archiver.crawling.robots import RobotsRules, rules_from_response
from archiver.report import CUT_BODY
from archiver.robots_directives import robots_agent
from archiver.scope import ROBOTS_UNREACHABLE
from archiver.store.rows import FETCHED, SKIPPED
from archiver.verify.verifier import verify_snapshot


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


@pytest.mark.parametrize(
    ("group", "ours"),
    [
        ("a", False),
        ("arch", False),
        ("archiverx", False),
        ("other archiver", False),
        ("archiver/1.0", True),
        ("ARCHIVER", True),
        ("archiver (+https://example.org)", True),
    ],
)
def test_robots_groups_are_ours_by_their_whole_token(group, ours):
    """A group applied to us when its User-agent was a prefix of our token (``a``, ``arch``), and
    not when it named us with a version (``archiver/1.0``): protego searched the group's name
    inside ours. Now a group is ours when its token, cut at the first character outside
    ``[A-Za-z_-]`` as Google's parser cuts it, is ours, any case (RFC 9309 2.2.1)."""
    text = f"User-agent: {group}\nDisallow: /own\n\nUser-agent: *\nDisallow: /every\n"
    rules = RobotsRules.parse(text, "archiver")
    assert (rules.allows("http://h/own"), rules.allows("http://h/every")) == (not ours, ours)


async def test_a_group_that_names_a_prefix_of_our_token_is_not_ours(site, run_crawl):
    """``User-agent: arch`` with ``Disallow: /`` kept the whole site out of a crawl as archiver."""
    site.file("/robots.txt", "User-agent: arch\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "text/plain")
    site.page("/")
    await site.start()
    result = await run_crawl(site.url("/"))
    assert manifest_rows(result.snapshot.root)[site.url("/")].outcome == FETCHED


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
    [
        (404, b"", True),
        (301, b"", True),
        (None, b"", False),
        (503, b"", False),
        (429, b"", False),
        (200, b"User-agent: *\nDisallow: /x", False),
        (200, b"\xef\xbb\xbfUser-agent: *\nDisallow: /x", False),  # a byte-order mark, read as such
    ],
)
def test_rules_from_response(status, body, allowed):
    assert rules_from_response(status, body, "archiver").allows("http://h/x") is allowed


@pytest.mark.parametrize(
    ("rule", "url", "allowed"),
    [
        ("Disallow: /*?", "http://h/p?", False),  # a URL with a query, empty as it is
        ("Disallow: /p?", "http://h/p?", False),
        ("Disallow: /p$", "http://h/p?", True),  # /p? is not /p: $ anchors at the URL's end
        ("Disallow: /p$", "http://h/p", False),
        ("Disallow: /*?", "http://h/p", True),
    ],
)
def test_robots_rules_match_an_empty_query_as_written(rule, url, allowed):
    """``/p?`` is fetched as written, so rules match it as written, ``?`` and all (RFC 9309 matches
    the path and query; Google's robots.txt parser, its reference, keeps an empty one too)."""
    assert RobotsRules.parse("User-agent: *\n" + rule, "archiver").allows(url) is allowed


def test_robots_agent_token():
    assert robots_agent("archiver/0.1.0 (+https://example.org)") == "archiver"
    assert RobotsRules.parse("User-agent: *\nCrawl-delay: 3", "archiver").crawl_delay() == 3.0


async def _robots_reset(writer: asyncio.StreamWriter) -> None:
    reset(writer)


async def _robots_stalls(writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(30)  # no answer: the fetch's timeout ends it


async def _robots_cut(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 500\r\n\r\nUser-agent: *\n")
    await writer.drain()
    writer.close()


def _robots_status(status: bytes) -> Callable[[asyncio.StreamWriter], Awaitable[None]]:
    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 " + status + b"\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")

    return answer


ROBOTS_OUT_OF_REACH = {
    "connection reset": _robots_reset,
    "no answer before the timeout": _robots_stalls,
    "body cut short": _robots_cut,
    "500 on every try": _robots_status(b"500 Internal Server Error"),
    "503 on every try": _robots_status(b"503 Service Unavailable"),
    "429 on every try": _robots_status(b"429 Too Many Requests"),
}


def _site_whose_robots(answer: Callable[[asyncio.StreamWriter], Awaitable[None]]) -> RawHandler:
    """A site of two pages whose robots.txt gets ``answer``."""

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.path == "/robots.txt":
            await answer(writer)
            return False
        body = b'<a href="/a">a</a>' if request.path == "/" else b"ok"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body))
        writer.write(body)
        return True

    return handler


@pytest.mark.parametrize("kind", ROBOTS_OUT_OF_REACH)
async def test_a_robots_txt_out_of_reach_disallows_its_host_until_resumed(kind, run_crawl, tmp_path):
    server = await RawServer(_site_whose_robots(ROBOTS_OUT_OF_REACH[kind])).start()
    try:
        result = await run_crawl(server.url("/"), timeout=1.0, max_tries=2, sitemaps=False)
        root = result.snapshot.root
        rows = manifest_rows(root)
        # RFC 9309 2.3.1.4: a robots.txt unreachable for server or network errors disallows all.
        assert (rows[server.url("/")].outcome, rows[server.url("/")].reason) == (SKIPPED, ROBOTS_UNREACHABLE)
        assert server.hits("/") == 0 and result.seeds_failed
        log = (root / "logs" / "crawl.log").read_text()
        assert f"robots.txt of {server.url('')} is out of reach" in log and "--ignore-robots" in log
        # Once it answers, a resumed crawl asks it again and fetches what it allows.
        server.handler = _site_whose_robots(_robots_status(b"404 Not Found"))
        result = await run_crawl(server.url("/"), resume=True, sitemaps=False)
        rows = manifest_rows(root)
        assert rows[server.url("/")].outcome == FETCHED and rows[server.url("/a")].outcome == FETCHED
        # The robots.txt answer of the first run stays recorded: a body cut short is one verify names.
        assert set(verify_snapshot(root).counts) == ({CUT_BODY} if kind == "body cut short" else set())
    finally:
        await server.close()


async def test_a_robots_txt_out_of_reach_is_ignored_with_ignore_robots(run_crawl):
    server = await RawServer(_site_whose_robots(_robots_reset)).start()
    try:
        result = await run_crawl(server.url("/"), max_tries=2, obey_robots=False, sitemaps=False)
        assert manifest_rows(result.snapshot.root)[server.url("/a")].outcome == FETCHED
    finally:
        await server.close()


@pytest.mark.parametrize("status", [b"404 Not Found", b"410 Gone", b"403 Forbidden", b"401 Unauthorized"])
async def test_a_robots_txt_answered_4xx_allows_everything(status, run_crawl):
    server = await RawServer(_site_whose_robots(_robots_status(status))).start()
    try:
        result = await run_crawl(server.url("/"), max_tries=2, sitemaps=False)
        rows = manifest_rows(result.snapshot.root)
        assert rows[server.url("/")].outcome == FETCHED and rows[server.url("/a")].outcome == FETCHED
    finally:
        await server.close()


async def test_a_robots_txt_out_of_reach_is_asked_again_and_lets_its_urls_in_once_it_answers(
    site, other_site, run_crawl
):
    """A robots.txt out of reach was asked once a crawl: one bad moment of its server kept its host
    out for the whole crawl, every URL of it skipped. It is asked again after a while (robots_retry,
    a minute, lowered here), and once it answers, the URLs skipped meanwhile are fetched."""
    answers = iter([web.Response(status=503)])

    async def robots(request: web.Request) -> web.Response:
        return next(answers, web.Response(status=404))

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(1)  # the crawl goes on meanwhile: long enough to ask again
        return web.Response(text="<p>slow</p>", content_type="text/html")

    other_site.handler("/robots.txt", robots)
    other_site.file("/img.png", b"\x89PNG", "image/png")
    await other_site.start()
    site.page("/", links=["/slow"], body=f'<img src="{other_site.url("/img.png")}">')
    site.handler("/slow", slow)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1, robots_retry=0.05, sitemaps=False)
    root = result.snapshot.root
    rows = manifest_rows(root)
    assert rows[other_site.url("/img.png")].outcome == FETCHED
    assert other_site.hits["/robots.txt"] >= 2 and other_site.hits["/img.png"] == 1
    # Its answer once it answers is kept, as the first (503) was.
    row = manifest_rows(root, for_crawlers=True)[other_site.url("/robots.txt")]
    assert row.status == 404
    kept = warc_records(root).count(("response", other_site.url("/robots.txt")))
    assert kept == other_site.hits["/robots.txt"]


@pytest.mark.parametrize("shared", [False, True])
async def test_a_robots_txt_is_asked_again_once_a_day_old(site, run_crawl, request, shared):
    """RFC 9309 2.4: a robots.txt is not used cached for more than 24 hours. A crawl used the one
    it fetched first for as long as it ran. Here its age limit (robots_max_age) is lowered: the
    robots.txt that disallows /late from the second fetch on keeps /late out. Each answer is
    kept, as the first was (the second was in neither the WARC nor the manifest), by one process
    or by crawl nodes."""
    later = "User-agent: *\nDisallow: /late\n"
    versions = iter(["User-agent: *\nDisallow: /nothing\n"])

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text=next(versions, later))

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.5)  # longer than the age limit
        return web.Response(text='<a href="/late">late</a>', content_type="text/html")

    site.handler("/robots.txt", robots)
    site.page("/", links=["/slow"])
    site.handler("/slow", slow)
    site.page("/late")
    await site.start()
    redis = {"frontier": request.getfixturevalue("redis_url"), "crawl_id": "daily"} if shared else {}
    result = await run_crawl(site.url("/"), robots_max_age=0.2, sitemaps=False, **redis)
    root = result.snapshot.root
    rows = manifest_rows(root)
    assert (rows[site.url("/late")].outcome, rows[site.url("/late")].reason) == (SKIPPED, "robots")
    assert site.hits["/late"] == 0 and site.hits["/robots.txt"] >= 2
    robots_url = site.url("/robots.txt")
    kept = warc_records(root).count(("response", robots_url))
    assert kept == site.hits["/robots.txt"]
    assert manifest_rows(root, for_crawlers=True)[robots_url].length == len(later)  # the latest answer
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_rules_it_had_are_kept_while_a_robots_txt_asked_again_is_out_of_reach(site, run_crawl):
    """RFC 9309 2.4: past its day, a robots.txt's rules are kept while it is out of reach. Asked
    again and answered 503, it would keep the whole host out."""
    answers = iter([web.Response(text="User-agent: *\nDisallow: /nothing\n")])

    async def robots(request: web.Request) -> web.Response:
        return next(answers, web.Response(status=503))

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.5)  # longer than the age limit
        return web.Response(text='<a href="/late">late</a>', content_type="text/html")

    site.handler("/robots.txt", robots)
    site.page("/", links=["/slow"])
    site.handler("/slow", slow)
    site.page("/late")
    await site.start()
    result = await run_crawl(site.url("/"), robots_max_age=0.2, max_tries=1, sitemaps=False)
    assert manifest_rows(result.snapshot.root)[site.url("/late")].outcome == FETCHED
    assert site.hits["/robots.txt"] >= 2


async def test_a_resumed_crawl_uses_the_robots_txt_the_interrupted_one_read(site, run_crawl):
    """A robots.txt is used for a day: a crawl resumed within it asked every host's robots.txt
    again at once (and its new answer was kept nowhere), where the crawl never interrupted asks
    none. Its rules still hold after the resume."""
    site.file("/robots.txt", "User-agent: *\nDisallow: /private\n", "text/plain")
    site.page("/", links=["/a", "/private"])
    site.page("/a", links=["/b", "/private/x"])
    site.page("/b")
    await site.start()
    first = await run_crawl(site.url("/"), max_pages=1, sitemaps=False)
    root = first.snapshot.root
    await run_crawl(site.url("/"), output=root, resume=True, sitemaps=False)
    assert site.hits["/robots.txt"] == 1
    rows = manifest_rows(root)
    assert rows[site.url("/b")].outcome == FETCHED
    assert (rows[site.url("/private/x")].outcome, rows[site.url("/private/x")].reason) == (SKIPPED, "robots")
    assert site.hits["/private/x"] == 0 and site.hits["/private"] == 0
