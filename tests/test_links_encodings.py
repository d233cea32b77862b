"""A document's links are read in its encoding as browsers find it: charset labels, where a
meta charset counts, a stylesheet read in its referrer's, queries written in the page's."""

import pytest
from link_cases import BASE, XHTML, svg_links

from archiver.crawling.preparing import parse_document
from archiver.findings import STREAMED_BYTES, extract
from archiver.links import REQUISITE


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'<a href="/s?q=caf\xe9">', "text/html; charset=windows-1252"),
        (b'<meta charset="windows-1252"><a href="/s?q=caf\xe9">', "text/html"),
        (b'<a href="/s?q=caf&eacute;">', "text/html; charset=iso-8859-1"),
        (b'<p>caf\xe9</p><a href="/s?q=caf\xe9">', "text/html"),  # undeclared, not UTF-8: windows-1252
    ],
)
def test_a_query_is_encoded_in_the_pages_encoding(body, content_type):
    # As browsers do (the URL standard's encoding override); the path is UTF-8 whatever the page.
    (link,) = extract(body, BASE, "text/html", content_type).links
    assert link.url == "http://h/s?q=caf%E9"


def test_every_link_of_a_page_but_its_css_encodes_its_query_in_the_pages_encoding():
    body = (
        '<meta charset="shift_jis"><a href="/\u65e5?q=\u65e5">a</a><img srcset="/i.png?\u65e5 2x">'
        '<meta http-equiv="refresh" content="5; url=/r?\u65e5"><table background="/t?\u00e9">'
        "<style>a{background:url(/s?\u65e5)}</style><p style=\"background:url('/p?\u65e5')\">"
        '<a href="?\u00e9">'
    ).encode("shift_jis", errors="xmlcharrefreplace")
    found = [link.url for link in extract(body, BASE, "text/html", "text/html").links]
    assert found == [
        "http://h/%E6%97%A5?q=%93%FA",
        "http://h/i.png?%93%FA",
        "http://h/r?%93%FA",
        "http://h/t?%26%23233%3B",
        "http://h/s?%E6%97%A5",  # CSS URLs are always UTF-8
        "http://h/dir/page.html?%26%23233%3B",
        "http://h/p?%E6%97%A5",
    ]


WINDOWS_1252_PAGE = b'<title>\x93quoted\x94 \x80</title><a href="/\x80?q=\x85">a</a><img src="/\x99.png">'


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (WINDOWS_1252_PAGE, "text/html; charset=iso-8859-1"),
        (WINDOWS_1252_PAGE, "text/html; charset=Latin1"),
        (WINDOWS_1252_PAGE, "text/html; charset=us-ascii"),
        (b'<meta charset="iso-8859-1">' + WINDOWS_1252_PAGE, "text/html"),
        (b'<meta http-equiv="Content-Type" content="text/html; charset=ascii">' + WINDOWS_1252_PAGE, None),
        (WINDOWS_1252_PAGE, "text/html; charset=utf-7"),  # no label of a browser's: the bytes decide
    ],
    ids=["iso-8859-1", "Latin1", "us-ascii", "meta", "meta http-equiv", "utf-7"],
)
def test_a_charset_is_read_as_browsers_read_its_label(body, content_type):
    """The WHATWG Encoding standard's labels: ISO-8859-1, Latin1 and US-ASCII are windows-1252,
    whose bytes 0x80-0x9F are printed characters (Latin-1 made them C1 controls)."""
    page = extract(body, BASE, "text/html", content_type)
    assert page.title == "\u201cquoted\u201d \u20ac"
    # The path in UTF-8, the query in windows-1252 ("\u2026" is its byte 0x85).
    assert [link.url for link in page.links] == ["http://h/%E2%82%AC?q=%85", "http://h/%E2%84%A2.png"]


@pytest.mark.parametrize(
    "head",
    [
        b'<!-- <meta charset="windows-1251"> --><meta charset="utf-8">',
        b'<!--[if IE]><meta charset="windows-1251"><![endif]-->',
        b'<meta name="description" content="text/html; charset=windows-1251">',
        b'<meta property="og:x" content="charset=windows-1251"><meta charset="x-no-such-label">',
        b'<div title="<meta charset=windows-1251>"></div>',
    ],
)
def test_a_meta_charset_counts_only_where_a_browser_reads_it(head):
    """The HTML standard's prescan reads markup: a <meta> in a comment or in an attribute, a
    content without http-equiv, a label browsers do not know name no charset."""
    page = extract(
        head + '<title>caf\u00e9</title><a href="/\u00e9">a</a>'.encode(), BASE, "text/html", "text/html"
    )
    assert (page.title, [link.url for link in page.links]) == ("caf\u00e9", ["http://h/%C3%A9"])


def test_a_page_that_says_it_is_utf16_is_read_as_utf8():
    # Bytes that can say so of themselves are no UTF-16 (the standard's rule for <meta>).
    body = '<meta charset="utf-16"><title>caf\u00e9</title><a href="/\u20ac">a</a>'.encode()
    page = extract(body, BASE, "text/html", "text/html")
    assert (page.title, [link.url for link in page.links]) == ("caf\u00e9", ["http://h/%E2%82%AC"])


def test_svg_and_css_read_a_charset_as_browsers_read_its_label():
    svg = b'<?xml version="1.0" encoding="iso-8859-1"?><svg xmlns="http://www.w3.org/2000/svg">'
    svg += b'<image href="/\x80.png?\x85"/></svg>'
    assert svg_links(svg) == {"http://h/%E2%82%AC.png?%85": REQUISITE}
    css = b'@charset "iso-8859-1"; a{background:url(/\x80.png)}'
    assert [link.url for link in extract(css, "http://h/s.css", "text/css").links] == [
        "http://h/%E2%82%AC.png"
    ]
    found = extract(b"a{background:url(/\x80.png)}", "http://h/s.css", "text/css", "text/css; charset=latin1")
    assert [link.url for link in found.links] == ["http://h/%E2%82%AC.png"]


@pytest.mark.parametrize(
    ("css", "content_type", "referrer", "expected"),
    [
        (b"a{background:url(/\x80.png)}", "text/css", "cp1252", "http://h/%E2%82%AC.png"),
        ("a{background:url(/\u65e5.png)}".encode("cp932"), "text/css", "cp932", "http://h/%E6%97%A5.png"),
        # Its own header, @charset or byte-order mark wins; so does UTF-8 over a UTF-16 page's.
        (
            b"a{background:url(/\xe2\x82\xac.png)}",
            "text/css; charset=utf-8",
            "cp1252",
            "http://h/%E2%82%AC.png",
        ),
        (
            b'@charset "utf-8";a{background:url(/\xe2\x82\xac.png)}',
            "text/css",
            "cp932",
            "http://h/%E2%82%AC.png",
        ),
        (b"\xef\xbb\xbfa{background:url(/\xe2\x82\xac.png)}", "text/css", "cp932", "http://h/%E2%82%AC.png"),
        (b"a{background:url(/\xe2\x82\xac.png)}", "text/css", "utf-16", "http://h/%E2%82%AC.png"),
    ],
)
def test_a_stylesheet_that_names_no_charset_is_read_in_its_referrers(css, content_type, referrer, expected):
    page = extract(css, "http://h/s.css", "text/css", content_type, referrer_encoding=referrer)
    assert [link.url for link in page.links] == [expected]


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        # Its XML declaration names its encoding; a <meta> is nothing to XML.
        (
            '<?xml version="1.0" encoding="shift_jis"?><html><a href="/\u65e5">a</a></html>'.encode("cp932"),
            XHTML,
            "/%E6%97%A5",
        ),
        (
            '<html><head><meta charset="windows-1252"/></head><a href="/\u00e9">a</a></html>'.encode(),
            XHTML,
            "/%C3%A9",
        ),
        # Neither: UTF-8, never the windows-1252 an HTML page's bytes are guessed to be.
        (b'<html><a href="/\xe9">a</a></html>', XHTML, "/%EF%BF%BD"),
        (b'<html><a href="/\xe9">a</a></html>', f"{XHTML}; charset=latin1", "/%C3%A9"),
    ],
)
def test_an_xhtml_page_is_read_in_the_encoding_xml_gives(body, content_type, expected):
    page = extract(body, BASE, XHTML, content_type)
    assert [link.url for link in page.links] == [f"http://h{expected}"]
    # So is it when the crawl also inspects it for rendering (another parse of the same page).
    assert list(parse_document(body, BASE, content_type, None, inspect=True)[0][2]) == [f"http://h{expected}"]


REPLACEMENT_LABELS = ["ISO-2022-KR", "csiso2022kr", "hz-gb-2312", "iso-2022-cn", "iso-2022-cn-ext"]


@pytest.mark.parametrize("label", REPLACEMENT_LABELS)
def test_a_document_in_a_replacement_encoding_holds_nothing(label):
    """Browsers read these labels as the "replacement" encoding, one U+FFFD for the whole
    document (bytes that could hide markup from a server's filters): no link, no title."""
    page = b"<title>t</title><a href=/a>a</a><img src=/i.png>"
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><image href="/i.png"/></svg>'
    css = b"a{background:url(/i.png)}"
    read = [
        extract(page, BASE, "text/html", f"text/html; charset={label}"),
        extract(f'<meta charset="{label}">'.encode() + page, BASE, "text/html", "text/html"),
        extract(page + b"x" * STREAMED_BYTES, BASE, "text/html", f"text/html; charset={label}"),
        extract(svg, BASE, "image/svg+xml", f"image/svg+xml; charset={label}"),
        extract(f'<?xml version="1.0" encoding="{label}"?>'.encode() + svg, BASE, "image/svg+xml"),
        extract(css, BASE, "text/css", f"text/css; charset={label}"),
        extract(f'@charset "{label}";'.encode() + css, BASE, "text/css", "text/css"),
    ]
    assert [(page.links, page.title) for page in read] == [((), None)] * len(read)
    # The same documents under a label of another encoding hold their links.
    assert extract(page, BASE, "text/html", "text/html; charset=euc-kr").title == "t"
