"""Sitemaps as hostile input, crawled from a local server: bodies past the limits or without end,
and XML that asks for files of the crawling machine; each snapshot verified."""

from __future__ import annotations

from aiohttp import web
from conftest import manifest_rows

from archiver.store.rows import FETCHED
from archiver.verify.verifier import verify_snapshot


async def _crawl(site, run_crawl, **options) -> tuple[dict, dict]:
    """Crawl the site from / (one try); the rows of its pages and of its robots.txt and sitemaps, by
    path. verify passes on the snapshot."""
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1, **options)
    root = result.snapshot.root
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    base = site.url("")
    pages = {url.removeprefix(base): row for url, row in manifest_rows(root).items()}
    kept = {url.removeprefix(base): row for url, row in manifest_rows(root, for_crawlers=True).items()}
    return pages, kept


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
    pages, kept = await _crawl(site, run_crawl, max_file_size=200_000)
    assert (pages["/listed"].outcome, pages["/listed"].found_by) == (FETCHED, "sitemap")
    row = kept["/sitemap.xml"]
    assert (row.outcome, row.truncated, row.length) == (FETCHED, True, 200_000)
