"""robots.txt as hostile input: bodies past the 500 KiB RFC 9309 asks a parser to read, sent
whole, without end or slowly; crawled from a local server, the snapshot verified."""

from __future__ import annotations

import asyncio

from aiohttp import web
from conftest import manifest_rows

from archiver.crawling.robots import ROBOTS_MAX_BYTES
from archiver.scope import ROBOTS
from archiver.store.rows import FETCHED, SKIPPED
from archiver.verify.verifier import verify_snapshot

RULES = b"User-agent: *\nDisallow: /kept-out\n"


def _site(site, robots) -> None:
    """A home page linking to /kept-out and /in, and its robots.txt served by ``robots``."""
    site.handler("/robots.txt", robots)
    site.page("/", links=["/kept-out", "/in"])
    site.page("/kept-out")
    site.page("/in")


async def _crawl(site, run_crawl, **options) -> tuple[dict, dict]:
    """Crawl the site (no sitemaps, one try); the rows of its pages and of robots.txt, by path.
    verify passes on the snapshot."""
    await site.start()
    result = await run_crawl(site.url("/"), sitemaps=False, max_tries=1, **options)
    root = result.snapshot.root
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    base = site.url("")
    pages = {url.removeprefix(base): row for url, row in manifest_rows(root).items()}
    kept = {url.removeprefix(base): row for url, row in manifest_rows(root, for_crawlers=True).items()}
    return pages, kept


def _obeyed(pages: dict) -> bool:
    """True if the crawl read RULES: /kept-out skipped for them, the rest fetched."""
    kept_out = (pages["/kept-out"].outcome, pages["/kept-out"].reason) == (SKIPPED, ROBOTS)
    fetched = pages["/"].outcome == FETCHED and pages["/in"].outcome == FETCHED
    return kept_out and fetched


async def test_a_rule_cut_by_the_size_limit_is_not_read(site, run_crawl):
    """Past ROBOTS_MAX_BYTES the rest is not read (RFC 9309 2.5 lets a crawler stop there), but
    the line the limit cut was read as far as it went: ``Disallow: /in-the-archive-only`` cut to
    ``Disallow: /`` kept the whole site out. A rule cut short is no rule the site wrote."""
    rule = b"Disallow: /in-the-archive-only\n"
    padding = b"# " + b"x" * (ROBOTS_MAX_BYTES - len(RULES) - len(b"Disallow: /") - 3) + b"\n"
    body = RULES + padding + rule + b"# more\n" * 1000
    assert body.index(rule) + len(b"Disallow: /") == ROBOTS_MAX_BYTES

    async def robots(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="text/plain")

    _site(site, robots)
    pages, kept = await _crawl(site, run_crawl)
    assert _obeyed(pages), pages
    assert kept["/robots.txt"].outcome == FETCHED


async def test_a_robots_txt_without_end_is_read_to_its_size_limit(site, run_crawl):
    """A robots.txt that never ends (a megabyte a second here) was read until --timeout cut it,
    a body cut short whose rules are unknown: its whole host was kept out as out of reach. Its
    first ROBOTS_MAX_BYTES hold the rules, and the crawl reads no more than those (the capture
    kept, truncated at that length)."""

    async def robots(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await response.write(RULES)
        while True:  # until the crawl hangs up
            await response.write(b"# " + b"x" * 65_000 + b"\n")
            await asyncio.sleep(0.05)

    _site(site, robots)
    pages, kept = await _crawl(site, run_crawl, timeout=3.0)
    assert _obeyed(pages), pages
    row = kept["/robots.txt"]
    assert (row.outcome, row.truncated, row.length) == (FETCHED, True, ROBOTS_MAX_BYTES)
