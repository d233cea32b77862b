"""Rewriting the links of SVG documents, and of SVG inside a page, for the mirror: every link
the crawl finds made local, the document kept XML."""

from __future__ import annotations

import lxml.etree
import lxml.html
import pytest
from rewrite_cases import ARCHIVED, QUERIES, SVG_PATH, SVG_URL, rewrite

from archiver.mirror.rewrite import rewrite_svg
from archiver.svg import iter_svg_references


def rewrite_svg_text(markup: str, archived: dict[str, str] | None = None) -> str:
    found = archived if archived is not None else ARCHIVED
    return rewrite_svg(markup.encode(), SVG_URL, None, found.get, SVG_PATH).decode()


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ('<image href="/img/a.png"/>', '<image href="../img/a.png"/>'),
        ('<image xlink:href="/img/a.png"/>', '<image xlink:href="../img/a.png"/>'),
        ("<use href='/img/b.png#icon'/>", '<use href="../img/b.png#icon"/>'),
        ('<use href="#local"/>', '<use href="#local"/>'),
        ('<feImage href="/img/a.png"/>', '<feImage href="../img/a.png"/>'),
        ('<a href="/target">t</a>', '<a href="../target.html">t</a>'),
        ('<s:image x:href="/img/a.png"/>', '<s:image x:href="../img/a.png"/>'),
        ('<script href="/nope.js"/>', '<script href="http://site.test/nope.js"/>'),
        ('<image href="/q.png?a=1&amp;b=2"/>', '<image href="q@a=1&amp;b=2.png"/>'),
        ('<image href="/r.png?a=1&amp;b=2"/>', '<image href="http://site.test/r.png?a=1&amp;b=2"/>'),
        ('<rect style="fill:url(/img/a.png)"/>', '<rect style="fill:url(../img/a.png)"/>'),
        ('<img src="/img/a.png"/>', '<img src="/img/a.png"/>'),  # no SVG element: no link
        ("<style>r{fill:url(/img/a.png)}</style>", "<style>r{fill:url(../img/a.png)}</style>"),
        (
            "<style><![CDATA[ r{fill:url(/img/a.png)} a > b {} ]]></style>",
            "<style><![CDATA[ r{fill:url(../img/a.png)} a > b {} ]]></style>",
        ),
        # Text of XML: what a URL may hold there is escaped as CSS reads it (& would be markup).
        (r"<style>r{fill:url(/q.png?a=1\26 b=2)}</style>", r"<style>r{fill:url(q@a=1\26 b=2.png)}</style>"),
        # A character reference in it: read as XML reads it, written back whole.
        (
            "<style>r{fill:url(/q.png?a=1&amp;b=2)} i{fill:url(/x)}</style>",
            "<style>r{fill:url(q@a=1&amp;b=2.png)} i{fill:url(http://site.test/x)}</style>",
        ),
        ('<![CDATA[ <image href="/img/a.png"/> ]]>', '<![CDATA[ <image href="/img/a.png"/> ]]>'),
        ('<!-- <image href="/img/a.png"/> -->', '<!-- <image href="/img/a.png"/> -->'),
    ],
)
def test_an_svg_document_has_its_links_rewritten_and_stays_xml(markup: str, expected: str) -> None:
    archived = {**ARCHIVED, "http://site.test/q.png?a=1&b=2": "site.test/dir/q@a=1&b=2.png"}
    svg = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
    svg += 'xmlns:s="http://www.w3.org/2000/svg" xmlns:x="http://www.w3.org/1999/xlink">'
    out = rewrite_svg_text(f"{svg}{markup}</svg>", archived)
    assert out == f"{svg}{expected}</svg>"
    lxml.etree.fromstring(out.encode())  # well-formed: no recovery


def test_an_svg_document_reads_its_queries_in_its_encoding_and_says_its_header_charset() -> None:
    body = b'<?xml version="1.0" encoding="windows-1252"?><svg><a href="/s?q=caf\xe9"/></svg>'
    out = rewrite_svg(body, SVG_URL, None, QUERIES.get, SVG_PATH)
    assert out == body.replace(b"/s?q=caf\xe9", b"../s@q=caf-1252.html")
    body = b'<svg><a href="/s?q=caf\xe9"/></svg>'
    out = rewrite_svg(body, SVG_URL, "windows-1252", QUERIES.get, SVG_PATH)
    assert out == b'<?xml version="1.0" encoding="windows-1252"?><svg><a href="../s@q=caf-1252.html"/></svg>'


def test_every_link_the_crawl_finds_in_an_svg_document_is_made_local() -> None:
    from test_links_svg import SVG_DOCUMENT, SVG_LINKS

    url = "http://h/img/a.svg"
    archived = {found: "h/" + found.removeprefix("http://h/").replace("/", "-") for found in SVG_LINKS}
    out = rewrite_svg(SVG_DOCUMENT, url, None, archived.get, "h/img/a.svg")
    lxml.etree.fromstring(out)
    left = [
        value for value, _requisite, _in_css in iter_svg_references(out, None) if not value.startswith("#")
    ]
    assert sorted(value.partition("#")[0] for value in left) == sorted(
        f"../{path.removeprefix('h/')}" for path in archived.values()
    )


def test_every_link_the_crawl_finds_in_what_styles_an_svg_document_and_its_html_is_made_local() -> None:
    from test_links_svg import SVG_STYLED_DOCUMENT, SVG_STYLED_LINKS

    url = "http://h/img/a.svg"
    archived = {
        found: "h/" + found.removeprefix("http://h/").replace("/", "-").replace("?", "@")
        for found in SVG_STYLED_LINKS
    }
    out = rewrite_svg(SVG_STYLED_DOCUMENT, url, None, archived.get, "h/img/a.svg")
    lxml.etree.fromstring(out)
    left = [
        value.partition("#")[0]
        for value, _requisite, _in_css in iter_svg_references(out, None)
        if not value.startswith("#")
    ]
    assert sorted(left) == sorted(f"../{path.removeprefix('h/')}" for path in archived.values())
    # What is no link is left as it was.
    for unchanged in (b"commented.css", b"too-late.css", b'<img src="no-xhtml.png"/>', b"url(#local)"):
        assert unchanged in out


def test_presentation_attributes_of_svg_inside_a_page_are_made_local() -> None:
    out = rewrite('<svg><rect fill="url(/img/a.png#g)" stroke="url(#local)" mask="url(gone.svg#m)"/></svg>')
    assert out == (
        '<svg><rect fill="url(../img/a.png#g)" stroke="url(#local)" '
        'mask="url(http://site.test/dir/gone.svg#m)"/></svg>'
    )
