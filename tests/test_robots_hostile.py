"""robots.txt as hostile input: bodies past the 500 KiB RFC 9309 asks a parser to read, sent
whole, without end or slowly; crawled from a local server, the snapshot verified."""

from __future__ import annotations

import asyncio
import time
import zlib

import brotlicffi
import pytest
from aiohttp import web
from conftest import crawled_rows, in_linear_time

from archiver.crawling.robots_limits import ROBOTS_MAX_RULES, ROBOTS_MAX_WILDCARD_RULES
from archiver.robots_answer import ROBOTS_MAX_BYTES
from archiver.scope import ROBOTS
from archiver.store.rows import FETCHED, SKIPPED

RULES = b"User-agent: *\nDisallow: /kept-out\n"


def _site(site, robots) -> None:
    """A home page linking to /kept-out and /in, and its robots.txt served by ``robots``."""
    site.handler("/robots.txt", robots)
    site.page("/", links=["/kept-out", "/in"])
    site.page("/kept-out")
    site.page("/in")


async def _crawl(site, run_crawl, **options) -> tuple[dict, dict]:
    """crawled_rows(), reading no sitemap unless told."""
    options.setdefault("sitemaps", False)
    return await crawled_rows(site, run_crawl, **options)


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


def _bomb(coding: str) -> bytes:
    """RULES, then 64 MiB of blank lines, compressed by ``coding`` (tens of kilobytes sent)."""
    if coding == "br":
        return brotlicffi.compress(RULES + b"\n" * 64 * 1024**2, quality=1)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    blank = b"\n" * 1024 * 1024
    return b"".join([compressor.compress(RULES), *(compressor.compress(blank) for _ in range(64))]) + (
        compressor.flush()
    )


@pytest.mark.parametrize("coding", ["gzip", "br"])
async def test_a_robots_txt_bomb_is_decoded_no_further_than_its_size_limit(site, run_crawl, coding):
    """A Content-Encoding that inflates to 64 MiB (a hundred times the limit): it is decoded no
    further than ROBOTS_MAX_BYTES, and its rules are read."""
    body = _bomb(coding)

    async def robots(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, headers={"Content-Type": "text/plain", "Content-Encoding": coding})

    _site(site, robots)
    with in_linear_time(60):
        pages, kept = await _crawl(site, run_crawl)
    assert _obeyed(pages), pages
    assert kept["/robots.txt"].length == min(len(body), ROBOTS_MAX_BYTES)


async def test_odd_rules_and_bytes_are_read_as_rfc_9309_reads_them(site, run_crawl):
    """A byte-order mark, bytes that are no UTF-8, a Crawl-delay no number, ``*`` and ``$`` in odd
    places, and Sitemap: lines that are no URL, a thousand bytes long, or robots.txt itself: the
    rules that are rules are obeyed, and the crawl goes on."""
    text = (
        b"\xef\xbb\xbfUser-agent: *\nCrawl-delay: NaN\nCrawl-delay: -5\nDisallow: /kept-out$\n"
        b"Disallow: /\xff\xfe*\nDisallow: ***$$\nAllow: /in*$\nDisallow: *-out\n"
        b"Sitemap: not a url\nSitemap: /robots.txt\nSitemap: /" + b"s" * 1000 + b".xml\n"
    )

    async def robots(request: web.Request) -> web.StreamResponse:
        return web.Response(body=text, content_type="text/plain")

    _site(site, robots)
    started = time.monotonic()
    pages, kept = await _crawl(site, run_crawl, sitemaps=True)
    assert _obeyed(pages), pages
    assert kept["/" + "s" * 1000 + ".xml"].status == 404 and kept["/robots.txt"].status == 200
    assert time.monotonic() - started < 30  # no NaN or negative Crawl-delay waited out


async def test_rules_past_the_limits_are_ignored_and_the_log_says_so(site, run_crawl, tmp_path):
    """20,000 rules with wildcards and 10,000 plain ones after the rules that matter, within the
    512 KiB read: each URL was matched against all of them on the crawl's event loop. The first
    ROBOTS_MAX_WILDCARD_RULES and ROBOTS_MAX_RULES are read (RULES among them, obeyed), the
    rest ignored (``Disallow: /in`` at the end among them), and the log says how many."""
    wildcards = b"Disallow: /*a*Q\n" * 20_000
    plain = b"".join(b"Disallow: /p%d/\n" % n for n in range(10_000))
    body = RULES + wildcards + plain + b"Disallow: /in\n"
    assert len(body) <= ROBOTS_MAX_BYTES

    async def robots(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="text/plain")

    _site(site, robots)
    pages, kept = await _crawl(site, run_crawl)
    assert _obeyed(pages), pages
    ignored = (1 + 20_000 + 10_000 + 1) - ROBOTS_MAX_RULES  # the wildcard ones first past their limit
    assert 1 + ROBOTS_MAX_WILDCARD_RULES < ROBOTS_MAX_RULES < 1 + ROBOTS_MAX_WILDCARD_RULES + 10_000
    log = (tmp_path / "snap" / "logs" / "crawl.log").read_text()
    assert f"{ignored} rules past the limits" in log, log
