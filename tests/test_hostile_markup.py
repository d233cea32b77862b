"""Markup that costs a parser far more than its size: start tags crowded with attributes (libxml2
compares each with every one before it) and <style> elements of thousands of URLs. The crawl,
the mirror and verify read such pages in time that grows with their size, and find what a
browser finds in them."""

from __future__ import annotations

import lxml.etree
import pytest
from conftest import crawled_rows, in_linear_time

from archiver.crowded_tags import MAX_NAMES, READ_NAMES, thin_crowded_tags
from archiver.findings import findings
from archiver.html_stream import parse_html, read_elements
from archiver.store.rows import FETCHED

KEPT_AT_MOST = MAX_NAMES + len(READ_NAMES)


def _crowded(count: int, last: bytes = b' href="/after"') -> bytes:
    """A page of one <a> of ``count`` attributes of different names, then ``last``."""
    names = b" ".join(b"data-n%d=v%d" % (number, number) for number in range(count))
    return b"<!doctype html><p><a " + names + last + b">crowded</a></p>"


def _parsed_a(page: bytes, reader: str) -> dict[str, str]:
    """The attributes of the page's <a> as ``reader`` (a tree or a stream of lxml's) gives them."""
    if reader == "tree":
        root = parse_html(page, "utf-8")
        assert root is not None
        element = next(root.iter("a"))
        return dict(element.attrib)
    for _event, element in read_elements(page, ("start",), "utf-8"):
        if element.tag == "a":
            return dict(element.attrib)
    raise AssertionError("no <a> read")


@pytest.mark.parametrize("reader", ["tree", "stream"])
def test_a_tag_crowded_with_attributes_reaches_libxml2_thinned_to_its_first_names_and_links(reader):
    attributes = _parsed_a(_crowded(8_000, b' href="/after" style="background:url(b.png)"'), reader)
    assert len(attributes) <= KEPT_AT_MOST
    assert [name for name in attributes][:MAX_NAMES] == [f"data-n{number}" for number in range(MAX_NAMES)]
    assert attributes["href"] == "/after" and attributes["style"] == "background:url(b.png)"


def test_thinning_keeps_each_names_first_value_as_html_does():
    """A tag of 100 names each written twice: libxml2 gets each kept name's first value, as it
    reads it from the whole tag, and the names the crawl reads past the first MAX_NAMES."""
    names = [f"n{number}" for number in range(100)]
    firsts = " ".join(f'{name}="first"' for name in names)
    page = f'<img {firsts} SRC="/img.png" {" ".join(f"{name}=later" for name in names)}>'.encode()
    whole = lxml.etree.fromstring(page, lxml.etree.HTMLParser(encoding="utf-8")).find(".//img")
    root = parse_html(page, "utf-8")
    assert whole is not None and root is not None
    thinned = root.find(".//img")
    assert thinned is not None
    assert list(thinned.attrib) == [*names[:MAX_NAMES], "src"]
    assert all(thinned.get(name) == whole.get(name) for name in thinned.attrib)


@pytest.mark.parametrize(
    "around",
    [
        (b"<script>var x = '", b"';</script>"),
        (b"<!-- ", b" -->"),
        (b"<textarea>", b"</textarea>"),
        (b"<style>/* ", b" */</style>"),
    ],
)
def test_text_that_only_looks_like_a_crowded_tag_is_given_as_it_is(around):
    page = b"<p>" + around[0] + _crowded(200) + around[1] + b"<a " + b" x" * 10 + b">"
    assert thin_crowded_tags(page) is page


async def test_a_crawl_reads_crowded_tags_and_huge_styles_in_time_that_grows_with_their_size(site, run_crawl):
    """100,000 attributes in a tag: libxml2 alone would take minutes (11 s for 20,000, four
    times as long for twice as many), and the crawl's parse, and verify's, would hold a worker
    that long."""
    site.page("/", links=["/crowded", "/styled"])
    site.file(
        "/crowded",
        _crowded(100_000) + b"<body " + b" ".join(b"b%d" % n for n in range(30_000)) + b" background=bg.png>",
    )
    styles = b"".join(
        b"p.c%d{background:url(/img/%d.png)}" % (number, number % 3) for number in range(20_000)
    )
    site.file("/styled", b"<style>" + styles + b"@font-face{src:url(/font.woff2)}</style>")
    for path in ("/after", "/img/0.png", "/img/1.png", "/img/2.png", "/font.woff2", "/bg.png"):
        site.file(path, b"x", "image/png")
    with in_linear_time():
        pages, _kept = await crawled_rows(site, run_crawl, sitemaps=False)
    for path in ("/after", "/img/0.png", "/img/2.png", "/font.woff2", "/bg.png"):
        assert pages[path].outcome == FETCHED, path


def test_a_styles_urls_are_each_read_with_the_rule_they_are_in():
    css = "".join(f"p.c{number}{{background:url(/i{number % 2}.png)}}" for number in range(20_000))
    page = f"<style>{css}@font-face{{src:url(/f.woff2)}}</style>".encode()
    with in_linear_time():
        _title, _base, links, _nofollow, hints = findings(page, "http://h/", "text/html")
    assert {"http://h/i0.png", "http://h/i1.png", "http://h/f.woff2"} <= set(links)
    assert hints["http://h/f.woff2"][1] == "font" and hints["http://h/i1.png"][1] == "image"


def _nested(depths: tuple[int, ...], filler: bytes = b"", prefix: bytes = b"") -> bytes:
    """A page linking /{prefix}dN from inside N nested <div>s for each N of ``depths``, then
    /{prefix}after."""
    page = b"<!doctype html><title>deep</title><body>" + filler
    for depth in depths:
        page += b"<div>" * depth + b'<a href="/%sd%d">in</a>' % (prefix, depth) + b"</div>" * depth
    return page + b'<a href="/%safter">after</a></body>' % prefix


async def test_links_nested_deeper_than_libxml2_reads_are_found_as_chromium_shows_them(site, run_crawl):
    """libxml2 stops reading a page at 256 nested elements, and dropped the rest: its links were
    neither followed nor missed by verify (read alike). Chromium puts an element deeper than
    512 beside its parent and shows all the page holds: the tree is now built so, once libxml2
    stopped; a page parsed as a stream (over 256 KB) is read 2048 deep."""
    site.page("/", links=["/small", "/large"])
    site.file("/small", _nested((100, 300, 600, 5_000)))
    site.file("/large", _nested((100, 300, 2_000), b"<p>" + b"x" * 300_000 + b"</p>", b"large-"))
    linked = ["/d100", "/d300", "/d600", "/d5000", "/after"]
    linked += ["/large-d100", "/large-d300", "/large-d2000", "/large-after"]
    for path in linked:
        site.page(path)
    pages, _kept = await crawled_rows(site, run_crawl, sitemaps=False)
    for path in linked:
        assert pages[path].outcome == FETCHED, path
    root = parse_html(_nested((600,)))
    assert root is not None
    assert max(len(list(element.iterancestors())) for element in root.iter()) == 512
