"""Sitemaps as hostile input, crawled from a local server: bodies past the limits or without end,
and XML that asks for files of the crawling machine; each snapshot verified."""

from __future__ import annotations

import subprocess
import sys

import pytest
from aiohttp import web
from conftest import crawled_rows

from archiver.crawling.sitemap_stage import SITEMAP_LIMIT
from archiver.sitemaps import SitemapLimits
from archiver.store.rows import FETCHED

SITE_URL = b"http://site.invalid"
"""Where a sitemap made before its server starts names the server's URL."""


async def test_a_sitemap_without_end_is_read_as_far_as_it_was_received(site, run_crawl):
    """A sitemap past --max-file-size (one without end here) was received to that size and then
    not read at all, as if a body cut at our own limit were one the server cut short: the pages
    it lists first were never found. What came is read, as a sitemap past the decoded limit is."""

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/xml"})
        await response.prepare(request)
        await response.write(f"<urlset><url><loc>{site.url('/listed')}</loc></url>".encode())
        while True:  # until the crawl hangs up
            await response.write(b"<!-- " + b"x" * 65_000 + b" -->")

    site.handler("/sitemap.xml", endless)
    site.page("/")
    site.page("/listed")
    pages, kept = await crawled_rows(site, run_crawl, max_file_size=200_000)
    assert (pages["/listed"].outcome, pages["/listed"].found_by) == (FETCHED, "sitemap")
    row = kept["/sitemap.xml"]
    assert (row.outcome, row.truncated, row.length) == (FETCHED, True, 200_000)


async def test_a_sitemap_never_reads_a_file_of_the_crawling_machine(site, run_crawl):
    """External entities (XXE), an external DTD and a parameter entity naming /etc/passwd: none
    is loaded, the <loc> an entity would complete is not read, the other URLs are."""
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "file:///etc/passwd" ['
        b'<!ENTITY passwd SYSTEM "file:///etc/passwd"><!ENTITY % dtd SYSTEM "file:///etc/passwd"> %dtd;]>'
        b"<urlset><url><loc>" + SITE_URL + b"/&passwd;</loc></url>"
        b"<url><loc>" + SITE_URL + b"/listed</loc></url></urlset>"
    )
    site.page("/")
    site.page("/listed")
    await site.start()
    body = xxe.replace(SITE_URL, site.url("").encode())
    site.file("/sitemap.xml", body, "application/xml")
    pages, kept = await crawled_rows(site, run_crawl)
    assert pages["/listed"].outcome == FETCHED
    assert set(pages) == {"/", "/listed"}, sorted(pages)
    assert kept["/sitemap.xml"].outcome == FETCHED


@pytest.mark.parametrize("loop", ["itself", "each-other"])
async def test_sitemap_indexes_in_a_loop_are_each_read_once(site, run_crawl, loop):
    """An index listing itself, or two listing each other: each is fetched once, and what they
    list beside each other is read."""
    site.page("/")
    site.page("/listed")
    await site.start()
    other = "/sitemap.xml" if loop == "itself" else "/other.xml"
    site.file("/sitemap.xml", _index(site.url(other), site.url("/pages.xml")), "application/xml")
    site.file("/other.xml", _index(site.url("/sitemap.xml")), "application/xml")
    site.file("/pages.xml", f"<urlset><url><loc>{site.url('/listed')}</loc></url></urlset>", "text/xml")
    pages, kept = await crawled_rows(site, run_crawl)
    assert pages["/listed"].outcome == FETCHED
    assert site.hits["/sitemap.xml"] == 1 and site.hits["/pages.xml"] == 1
    assert site.hits["/other.xml"] == (loop == "each-other")


def _index(*urls: str) -> str:
    return (
        "<sitemapindex>" + "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls) + "</sitemapindex>"
    )


@pytest.mark.parametrize(
    ("shape", "listed"),
    [
        ("an index of 50,000 sitemaps", 1 + 50_000),
        ("a robots.txt of 10,000 Sitemap lines", 10_000 + 1),
        ("an index two levels deep listing 1,000", 3 + 1_000),
    ],
)
async def test_sitemaps_past_the_limits_are_counted_not_held_or_written_one_by_one(
    site, run_crawl, tmp_path, shape, listed
):
    """Each sitemap past the limits (100 a host, indexes two levels deep) was held in the crawl's
    queue of sitemaps and written as a skipped row, one by one: an index of a million sitemaps
    cost a million rows. The first ``max_skipped`` are recorded as skipped, the rest counted
    once in the log; the first ``max_sitemaps`` are read as before."""
    limits = SitemapLimits()
    site.page("/")
    await site.start()
    many = (f"/s{n}.xml" for n in range(listed - 3 if "deep" in shape else listed - 1))
    if "robots" in shape:
        site.file("/robots.txt", "".join(f"Sitemap: {path}\n" for path in many), "text/plain")
    elif "deep" in shape:
        site.file("/sitemap.xml", _index(site.url("/deep1.xml")), "application/xml")
        site.file("/deep1.xml", _index(site.url("/deep2.xml")), "application/xml")
        site.file("/deep2.xml", _index(*(site.url(path) for path in many)), "application/xml")
    else:
        site.file("/sitemap.xml", _index(*(site.url(path) for path in many)), "application/xml")
    pages, kept = await crawled_rows(site, run_crawl)
    skipped = [row for row in kept.values() if row.reason == SITEMAP_LIMIT]
    assert len(skipped) == limits.max_skipped
    asked = [path for path in site.hits if path.startswith(("/s", "/deep"))]
    read = min(listed, limits.max_sitemaps) if "deep" not in shape else 3
    assert len(asked) == read, sorted(asked)
    left_out = listed - read - limits.max_skipped
    log = (tmp_path / "snap" / "logs" / "crawl.log").read_text()
    assert f"{left_out} more sitemaps past the limits" in log, log[-2000:]
    assert pages["/"].outcome == FETCHED


PEAK_MEMORY = """
import gzip, resource, sys
from archiver.sitemaps import read_sitemap
xml = b"<urlset>" + b"<x/>" * 4_000_000 + b"<url><loc>http://h/listed</loc></url></urlset>"
body = gzip.compress(xml, 9)
del xml
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
found = read_sitemap([body], "gzip")
print(found.urls, found.kind, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""
"""A sitemap of 16 MB of <x/> read in a process of its own: what it found, and how much its peak
memory grew (KiB)."""


def test_a_sitemap_of_elements_no_sitemap_names_is_read_in_flat_memory():
    """16 MB of ``<x/>`` (16 kB gzipped), within the 50 MB read of a sitemap: only <url> and
    <sitemap> elements were freed as read, so lxml held four million elements, half a gigabyte
    (1.3 GB for the 50 MB a sitemap may have). Every element is freed once read: memory stays
    flat, and the URL after them is read. Read as the crawl's sitemap stage reads it, in a
    process of its own so that its peak is the reading's alone (a whole crawl's took a minute
    of the suite)."""
    done = subprocess.run([sys.executable, "-c", PEAK_MEMORY], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    urls, kind, grown_kib = done.stdout.rsplit(" ", 2)
    assert urls == "('http://h/listed',)" and kind == "urlset"
    assert int(grown_kib) // 1024 < 100, f"reading the sitemap took {int(grown_kib) // 1024} MiB more"
