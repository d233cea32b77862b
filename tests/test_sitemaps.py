"""Sitemaps: read as they stream (pure, table-driven), bounded against hostile ones, and their URLs
crawled from a local site like links (robots.txt Sitemap: lines, /sitemap.xml, indexes, gzip)."""

from __future__ import annotations

import gzip
import sys
import time
import zlib
from collections.abc import Callable, Iterator

import pytest
from conftest import manifest_rows

from archiver.sitemaps import INDEX, TEXT, URLSET, Sitemap, SitemapLimits, read_sitemap
from archiver.verify.verifier import verify_snapshot

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*urls: str) -> bytes:
    return (
        f"<?xml version='1.0'?><urlset {NS}>" + "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    ).encode() + (b"</urlset>")


def index(*urls: str) -> bytes:
    body = "".join(f"<sitemap><loc>{u}</loc><lastmod>2026-01-01</lastmod></sitemap>" for u in urls)
    return f"<sitemapindex {NS}>{body}</sitemapindex>".encode()


BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY lol "lol">'
    + b"".join(
        f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10 if n > 1 else "&lol;" * 10}">'.encode() for n in range(1, 10)
    )
    + b"]><urlset><url><loc>http://h/&lol9;</loc></url><url><loc>http://h/ok</loc></url></urlset>"
)


@pytest.mark.parametrize(
    ("body", "encoding", "expected"),
    [
        (urlset("http://h/a", "http://h/b"), None, Sitemap(URLSET, ("http://h/a", "http://h/b"))),
        (index("http://h/s1.xml"), None, Sitemap(INDEX, ("http://h/s1.xml",))),
        (b"http://h/a\r\nhttp://h/b\n\nnot a url\n", None, Sitemap(TEXT, ("http://h/a", "http://h/b"))),
        (gzip.compress(urlset("http://h/a")), "gzip", Sitemap(URLSET, ("http://h/a",))),
        (gzip.compress(urlset("http://h/a")), None, Sitemap(URLSET, ("http://h/a",))),  # a .gz as it is
        (gzip.compress(gzip.compress(urlset("http://h/a"))), "gzip", Sitemap(URLSET, ("http://h/a",))),
        (zlib.compress(index("http://h/s.xml")), "deflate", Sitemap(INDEX, ("http://h/s.xml",))),
        (b"\xef\xbb\xbf\n  " + urlset("http://h/a"), None, Sitemap(URLSET, ("http://h/a",))),
        (
            urlset("HTTP://H:80/a#f", "http://h/a", "/relative", "mailto:x@h"),
            None,
            Sitemap(URLSET, ("http://h/a",)),
        ),
        (
            b"<urlset><url><loc>http://h/a&amp;b</loc></url></urlset>",
            None,
            Sitemap(URLSET, ("http://h/a&b",)),
        ),
        (b"<html><body><a href='http://h/a'>not a sitemap</a>", None, Sitemap("", ())),
        (b"<rss><channel><link>http://h/a</link></channel></rss>", None, Sitemap("", ())),
        (b"", None, Sitemap("", ())),
    ],
    ids=[
        "urlset",
        "index",
        "text",
        "gzip-content-encoding",
        "gzip-magic",
        "gzip-twice",
        "deflate",
        "bom-and-space",
        "only-absolute-http",
        "predefined-entity",
        "html",
        "rss",
        "empty",
    ],
)
def test_read_sitemap(body: bytes, encoding: str | None, expected: Sitemap) -> None:
    assert read_sitemap([body], encoding) == expected


def test_a_sitemap_read_in_small_chunks_reads_the_same() -> None:
    body = gzip.compress(urlset(*(f"http://h/{n}" for n in range(500))))
    chunks = [body[i : i + 7] for i in range(0, len(body), 7)]
    assert read_sitemap(chunks, None) == read_sitemap([body], None)


def test_billion_laughs_are_never_expanded() -> None:
    started = time.process_time()
    sitemap = read_sitemap([BILLION_LAUGHS], None)
    # libxml2 refuses the amplification outright; were it not to, the <loc> an entity would
    # complete is not read. Either way nothing is expanded.
    assert set(sitemap.urls) <= {"http://h/ok"} and (sitemap.problem or sitemap.urls)
    assert time.process_time() - started < 1.0


def test_broken_xml_keeps_the_urls_read_before_it() -> None:
    sitemap = read_sitemap([urlset("http://h/a")[:-9] + b"<url><loc>http://h/b</loc></url><oops"], None)
    assert sitemap.urls == ("http://h/a", "http://h/b")
    assert sitemap.problem and "XML" in sitemap.problem


def test_deeply_nested_xml_is_refused_by_the_parser_limits() -> None:
    body = b"<urlset><url><loc>http://h/a</loc></url>" + b"<x>" * 100_000 + b"</x>" * 100_000 + b"</urlset>"
    sitemap = read_sitemap([body], None)
    assert sitemap.urls == ("http://h/a",) and sitemap.problem


def _with_python_calls(read: Callable[[], Sitemap]) -> tuple[Sitemap, int]:
    """What ``read()`` gives, and how many calls of Python (and of C from Python) it made."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        calls += event in ("call", "c_call")

    sys.setprofile(count)
    try:
        return read(), calls
    finally:
        sys.setprofile(None)


def test_elements_no_sitemap_names_cost_no_python_of_their_own() -> None:
    """Each element was handed to Python as it was parsed, some eight calls of Python each: 2 us
    of a byte for a sitemap of ``<x/>``, 100 s of CPU for the 50 MB one may have, in a thread that
    holds the interpreter lock against the crawl's event loop. Only the root and the <loc>
    elements reach Python now: the calls made count the pieces fed, not the elements."""
    body = b"<urlset>" + b"<x/>" * 250_000 + b"<url><loc>http://h/listed</loc></url></urlset>"
    sitemap, calls = _with_python_calls(lambda: read_sitemap([body], None))
    assert sitemap.urls == ("http://h/listed",)
    assert calls < 5_000, f"{calls} calls of Python to read 250,000 elements"


def test_lines_of_a_text_sitemap_that_are_no_urls_cost_no_python_of_their_own() -> None:
    """Each line of a text sitemap was handed to URL parsing, 2 us of Python for a line that is
    no URL: 120 s of CPU for the 50 MB a sitemap may have, none of it counted against its
    50,000 URLs. Lines that do not begin as an http or https URL are passed over in C."""
    body = b"http://h/a\n" + b"x\n" * 250_000 + b"http://h/b\n"
    pieces = [body[start : start + 65_536] for start in range(0, len(body), 65_536)]
    sitemap, calls = _with_python_calls(lambda: read_sitemap(pieces, None))
    assert sitemap.urls == ("http://h/a", "http://h/b")
    assert calls < 5_000, f"{calls} calls of Python to read 250,000 lines"


def million_urls(host: str = "h") -> Iterator[bytes]:
    """A sitemap of a million URLs, made as it is read (about 30 MB)."""
    yield f"<urlset {NS}>".encode()
    for start in range(0, 1_000_000, 10_000):
        yield "".join(
            f"<url><loc>http://{host}/p{n}</loc></url>" for n in range(start, start + 10_000)
        ).encode()
    yield b"</urlset>"


def test_a_million_urls_are_read_no_further_than_the_limit() -> None:
    chunks = million_urls()
    sitemap = read_sitemap(chunks, None)
    assert len(sitemap.urls) == SitemapLimits().max_urls == 50_000 and sitemap.cut
    assert sitemap.urls[-1] == "http://h/p49999"
    assert len(list(chunks)) > 90  # the rest was never read


def test_a_gzip_bomb_is_decoded_no_further_than_the_byte_limit() -> None:
    # 1 GiB of blanks inside a <loc>: a 1 MB download.
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [compressor.compress(b"<urlset><url><loc>http://h/a</loc></url><url><loc>")]
    blank = b" " * (1024 * 1024)
    parts += [compressor.compress(blank) for _ in range(1024)]
    parts.append(compressor.flush())
    limits = SitemapLimits(max_bytes=8 * 1024 * 1024)
    started = time.process_time()
    sitemap = read_sitemap(parts, None, limits)
    assert sitemap.urls == ("http://h/a",) and sitemap.cut
    assert time.process_time() - started < 5.0


# Crawls of local sites.


async def test_sitemaps_of_robots_txt_and_sitemap_xml_feed_the_crawl(site, other_site, run_crawl):
    await other_site.start()
    site.page("/")  # links to nothing: every other page is found through a sitemap
    for n in range(1, 6):
        site.page(f"/p{n}", title=f"page {n}")
    await site.start()
    site.file("/robots.txt", f"User-agent: *\nSitemap: {site.url('/index.xml')}\n", "text/plain")
    # The index is gzipped by Content-Encoding; its first sitemap is a .gz sent as it is,
    # the second plain, and one more is listed by /sitemap.xml itself.
    site.file(
        "/index.xml",
        gzip.compress(index(site.url("/s1.xml.gz"), site.url("/s2.xml"))),
        "application/xml",
        headers={"Content-Encoding": "gzip"},
    )
    site.file(
        "/s1.xml.gz",
        gzip.compress(urlset(site.url("/p1"), site.url("/p2"), other_site.url("/x"))),
        "application/gzip",
    )
    site.file("/s2.xml", urlset(site.url("/p3"), site.url("/p1")), "text/xml")
    site.file("/sitemap.xml", f"{site.url('/p4')}\n{site.url('/p5')}\n", "text/plain")
    result = await run_crawl(site.url("/"))
    root = result.snapshot.root
    rows = manifest_rows(root, for_crawlers=True)
    for n in range(1, 6):
        row = rows[site.url(f"/p{n}")]
        assert (row.outcome, row.found_by, row.depth, row.title) == ("fetched", "sitemap", 1, f"page {n}")
    assert rows[site.url("/p1")].parent == site.url("/s1.xml.gz")
    assert rows[site.url("/p3")].parent == site.url("/s2.xml")
    assert rows[site.url("/p4")].parent == site.url("/sitemap.xml")
    out = rows[other_site.url("/x")]
    assert (out.outcome, out.reason, out.found_by) == ("skipped", "out of scope", "sitemap")
    assert other_site.hits["/x"] == 0
    for path, parent in (
        ("/index.xml", site.url("/robots.txt")),
        ("/s1.xml.gz", site.url("/index.xml")),
        ("/s2.xml", site.url("/index.xml")),
        ("/sitemap.xml", None),
    ):
        row = rows[site.url(path)]
        assert (row.found_by, row.depth, row.outcome, row.parent) == ("sitemap", 0, "fetched", parent), path
        assert row.warc_file and row.for_crawlers
        assert site.hits[path] == 1
    assert result.totals["for_crawlers"] == {"robots.txt": 1, "sitemaps": 4}
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_no_sitemaps_reads_none(site, run_crawl):
    site.page("/")
    site.file("/sitemap.xml", urlset("http://127.0.0.1/p"), "text/xml")
    await site.start()
    await run_crawl(site.url("/"), sitemaps=False)
    assert site.hits["/sitemap.xml"] == 0


async def test_sitemap_urls_meet_the_scope_and_depth_like_links(site, run_crawl):
    site.page("/docs/")
    site.page("/docs/a")
    site.page("/blog/b")
    site.page("/docs/private")
    await site.start()
    urls = [site.url(p) for p in ("/docs/a", "/blog/b", "/docs/private")]
    site.file("/sitemap.xml", urlset(*urls), "text/xml")
    result = await run_crawl(site.url("/docs/"), scope="prefix", exclude=("private",))
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/docs/a")].outcome == "fetched"
    assert rows[site.url("/blog/b")].reason == "out of scope"
    assert rows[site.url("/docs/private")].reason == "excluded"
    shallow = await run_crawl(site.url("/docs/"), output=result.snapshot.root.parent / "shallow", max_depth=0)
    assert manifest_rows(shallow.snapshot.root)[site.url("/docs/a")].reason == "depth"


async def test_sitemap_indexes_are_read_two_levels_deep(site, run_crawl):
    site.page("/")
    await site.start()
    site.file("/robots.txt", f"Sitemap: {site.url('/deep0.xml')}\n", "text/plain")
    for level in range(10):
        site.file(f"/deep{level}.xml", index(site.url(f"/deep{level + 1}.xml")), "text/xml")
    result = await run_crawl(site.url("/"))
    # deep0 (level 0) lists deep1, which lists deep2; deep3 would be a level too deep.
    assert [site.hits[f"/deep{n}.xml"] for n in range(5)] == [1, 1, 1, 0, 0]
    row = manifest_rows(result.snapshot.root, for_crawlers=True)[site.url("/deep3.xml")]
    assert (row.outcome, row.reason, row.parent) == ("skipped", "sitemap limit", site.url("/deep2.xml"))
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_sitemap_bomb_costs_what_the_limits_allow(site, other_site, run_crawl):
    """An index of 150 sitemaps, one of a million URLs, one of billion laughs."""
    await other_site.start()  # the million URLs are there: out of scope, recorded as skipped
    site.page("/")
    million = gzip.compress(b"".join(million_urls(other_site.host)), 1)
    await site.start()
    site.file("/robots.txt", f"Sitemap: {site.url('/many.xml')}\n", "text/plain")
    site.file("/many.xml", index(*(site.url(f"/s{n}.xml") for n in range(150))), "text/xml")
    for n in range(150):
        site.file(f"/s{n}.xml", urlset(site.url("/")), "text/xml")
    site.file("/s0.xml", million, "application/gzip")
    site.file("/s1.xml", BILLION_LAUGHS, "text/xml")
    started = time.monotonic()
    result = await run_crawl(site.url("/"), concurrency=8)
    rows = manifest_rows(result.snapshot.root, for_crawlers=True)
    # 100 sitemaps a host: many.xml and /sitemap.xml leave 98 of many.xml's 150.
    read = [n for n in range(150) if site.hits[f"/s{n}.xml"]]
    assert read == list(range(98))
    assert rows[site.url("/s149.xml")].reason == "sitemap limit"
    # The million-URL sitemap gave its first 50,000.
    listed = [row for row in rows.values() if row.parent == site.url("/s0.xml")]
    assert len(listed) == 50_000 and all(row.reason == "out of scope" for row in listed)
    assert rows[site.url("/")].outcome == "fetched"
    assert time.monotonic() - started < 60
    report = verify_snapshot(result.snapshot.root)
    assert report.ok, report.render_text("snap")


async def test_a_sitemap_behind_a_redirect_is_read_where_it_lands(site, run_crawl):
    site.redirect("/sitemap.xml", "/sitemaps/main.xml")
    site.page("/")
    site.page("/hidden")
    await site.start()
    site.file("/sitemaps/main.xml", urlset(site.url("/hidden")), "text/xml")
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root, for_crawlers=True)
    hop, landed = rows[site.url("/sitemap.xml")], rows[site.url("/sitemaps/main.xml")]
    assert (hop.outcome, hop.redirect_to, hop.found_by) == ("redirected", landed.url, "sitemap")
    assert (landed.outcome, landed.found_by, landed.parent, landed.depth) == (
        "fetched",
        "sitemap",
        hop.url,
        0,
    )
    assert rows[site.url("/hidden")].parent == landed.url
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_relative_sitemap_line_of_robots_txt_is_read_where_it_points(site, run_crawl):
    """RFC 9309 asks for absolute URLs; sites write "Sitemap: /s.xml" all the same. Such a line
    was taken as a URL of its own ("/s.xml", fetched and failed, with a robots.txt of its own)."""
    site.file(
        "/robots.txt", "User-agent: *\nSitemap: /maps/s.xml\nSitemap: ftp://elsewhere/s.xml\n", "text/plain"
    )
    site.page("/")
    site.page("/listed")
    await site.start()
    site.file("/maps/s.xml", urlset(site.url("/listed")), "text/xml")
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root, for_crawlers=True)
    assert rows[site.url("/maps/s.xml")].parent == site.url("/robots.txt")
    assert rows[site.url("/listed")].outcome == "fetched"
    assert all(url.startswith(site.url("/")) for url in rows), sorted(rows)


async def test_a_sitemap_robots_txt_disallows_is_not_fetched(site, run_crawl):
    site.file("/robots.txt", "User-agent: *\nDisallow: /sitemap.xml\n", "text/plain")
    site.page("/")
    site.file("/sitemap.xml", urlset("http://127.0.0.1/p"), "text/xml")
    await site.start()
    result = await run_crawl(site.url("/"))
    assert site.hits["/sitemap.xml"] == 0
    assert manifest_rows(result.snapshot.root, for_crawlers=True)[site.url("/sitemap.xml")].reason == "robots"


async def test_a_resumed_crawl_reads_its_sitemaps_without_recording_them_twice(site, run_crawl, tmp_path):
    site.page("/")
    for n in range(3):
        site.page(f"/p{n}")
    await site.start()
    site.file("/sitemap.xml", urlset(*(site.url(f"/p{n}") for n in range(3))), "text/xml")
    first = await run_crawl(site.url("/"), max_pages=2)
    assert first.totals["skipped"] >= 1
    again = await run_crawl(site.url("/"), output=first.snapshot.root, resume=True, max_pages=10)
    rows = manifest_rows(again.snapshot.root)
    assert all(rows[site.url(f"/p{n}")].outcome == "fetched" for n in range(3))
    from test_robots_kept import warc_records

    records = warc_records(again.snapshot.root)
    assert records.count(("response", site.url("/sitemap.xml"))) == 1
    assert verify_snapshot(again.snapshot.root).ok
