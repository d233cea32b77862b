"""Rewriting the url()s and @imports of stylesheets, style elements and style attributes for
the mirror: CSS escapes read as CSS reads them, a stylesheet read in the encoding the crawl
read it in."""

from __future__ import annotations

import codecs
from urllib.parse import unquote

import pytest
from rewrite_cases import HERE, PAGE, resolve

from archiver.findings import extract_css, extract_html
from archiver.link_values import iter_css_urls
from archiver.mirror.rewrite import rewrite_html
from archiver.mirror.stylesheets import rewrite_css, rewrite_css_bytes


@pytest.mark.parametrize(
    ("css", "expected"),
    [
        ("a{background:url(/img/a.png)}", "a{background:url(img/a.png)}"),
        ('a{background:url("/img/a.png")}', 'a{background:url("img/a.png")}'),
        ("a{background:url( '/img/a.png' )}", "a{background:url( 'img/a.png' )}"),
        ('@import "dir/sibling.png";', '@import "dir/sibling.png";'),
        ("@import url(/style.css) screen;", "@import url(style.css) screen;"),
        ("a{background:url(nope.png)}", "a{background:url(http://site.test/nope.png)}"),
        ("a{background:url(/img/a.png#frag)}", "a{background:url(img/a.png#frag)}"),
        ("a{background:url(data:image/png;base64,AA==)}", "a{background:url(data:image/png;base64,AA==)}"),
        ("/* url(/img/a.png) */ a{}", "/* url(/img/a.png) */ a{}"),
        (
            "@font-face{src:url(/img/a.png) format('woff2'), url(/img/b.png)}",
            "@font-face{src:url(img/a.png) format('woff2'), url(img/b.png)}",
        ),
        ("a{background:url(/old)}", "a{background:url(new/index.html)}"),
        ("a{b:url(/img/a.png)", "a{b:url(img/a.png)"),
        ("broken { url( ", "broken { url( "),
        # CSS reads no comment, and no url(), inside a string; "/*" in a url is part of it.
        ('a{content:"/*"} b{background:url(/img/a.png)}', 'a{content:"/*"} b{background:url(img/a.png)}'),
        ('a{content:"url(/img/a.png)"}', 'a{content:"url(/img/a.png)"}'),
        ("a{b:url(/x/*y)} c{d:url(/img/b.png)}", "a{b:url(http://site.test/x/*y)} c{d:url(img/b.png)}"),
        (
            'a{b:image-set("/img/a.png" 1x, \'/img/b.png\' type("image/png"), "gone.png" 2x)}',
            'a{b:image-set("img/a.png" 1x, \'img/b.png\' type("image/png"), "http://site.test/gone.png" 2x)}',
        ),
    ],
)
def test_rewrite_css(css: str, expected: str) -> None:
    assert rewrite_css(css, "http://site.test/style.css", resolve) == expected


def test_rewrite_css_from_a_folder_and_in_its_encoding() -> None:
    css = '@charset "shift_jis"; a{font-family:"ＭＳ ゴシック";background:url(../img/a.png)}'
    body = css.encode("shift_jis")
    out = rewrite_css_bytes(
        body, "http://site.test/dir/s.css", "shift_jis", resolve, css_path="site.test/dir/s.css"
    )
    assert out == body.replace(b"../img/a.png", b"../img/a.png")
    out = rewrite_css_bytes(
        body, "http://site.test/other/s.css", "shift_jis", resolve, css_path="site.test/x/y/s.css"
    )
    assert out.decode("shift_jis") == css.replace("../img/a.png", "../../img/a.png")


ESCAPED = {
    "http://site.test/a%20b.png": "site.test/a b.png",
    "http://site.test/caf%C3%A9.png": "site.test/café.png",
    "http://site.test/x(1).png": "site.test/x(1).png",
}


@pytest.mark.parametrize(
    ("css", "expected"),
    [
        (r"a{b:url(a\20 b.png)}", "a{b:url(a%20b.png)}"),
        (r"a{b:url(a\ b.png)}", "a{b:url(a%20b.png)}"),
        (r'a{b:url("caf\e9.png")}', 'a{b:url("caf%C3%A9.png")}'),
        (r"a{b:url(x\(1\).png)}", "a{b:url(x%281%29.png)}"),
        # Not archived: the absolute URL is written so that CSS reads it back whole.
        (r"a{b:url(gone\(2\).png)}", r"a{b:url(http://site.test/gone\(2\).png)}"),
        (r"a{b:url('it\'s.png')}", r"a{b:url('http://site.test/it\'s.png')}"),
        (r'a{b:url("q\"uote.png")}', 'a{b:url("http://site.test/q%22uote.png")}'),
        (r"a{b:url(gone.png#a\20\(b\))}", r"a{b:url(http://site.test/gone.png#a%20\(b\))}"),
        (r'a{b:url("gone.png?a\\b")}', r'a{b:url("http://site.test/gone.png?a\\b")}'),
        (r'a{b:url("a\20 b.png#x\"y")}', r'a{b:url("a%20b.png#x\"y")}'),
    ],
)
def test_css_escapes_are_read_then_written_back_so_css_reads_the_new_url(css: str, expected: str) -> None:
    out = rewrite_css(css, "http://site.test/style.css", ESCAPED.get)
    assert out == expected
    (before,) = extract_css(css, "http://site.test/style.css").links
    (after,) = [url for _start, _end, url in iter_css_urls(out)]
    if before.url in ESCAPED:
        assert unquote(after.partition("#")[0]) == ESCAPED[before.url].removeprefix("site.test/")
    else:
        assert extract_css(out, "http://site.test/style.css").links == (before,)


def test_css_escapes_in_a_style_element_and_a_style_attribute_are_read_as_css_reads_them() -> None:
    body = (
        rb"<style>a{b:url(a\20 b.png)} c{d:url('caf\e9.png')}</style>"
        rb'<p style="background:url(x\(1\).png)">'
    )
    assert [link.url for link in extract_html(body, PAGE).links] == [
        "http://site.test/dir/a%20b.png",
        "http://site.test/dir/caf%C3%A9.png",
        "http://site.test/dir/x(1).png",
    ]
    archived = {url.replace("site.test/", "site.test/dir/"): path for url, path in ESCAPED.items()}
    out = rewrite_html(body, PAGE, None, archived.get, HERE)
    assert out == (
        rb"<style>a{b:url(../a%20b.png)} c{d:url('../caf%C3%A9.png')}</style>"
        rb'<p style="background:url(../x%281%29.png)">'
    )


def test_a_backslash_inside_a_shift_jis_character_escapes_nothing() -> None:
    # The second byte of ソ is 0x5C, a backslash in ASCII: read as one, it swallowed the quote.
    css = 'a{b:url("/ソ")} c{d:url(/img/a.png)}'
    body = css.encode("shift_jis")
    archived = {"http://site.test/%E3%82%BD": "site.test/so.png", "http://site.test/img/a.png": "site.test/a"}
    out = rewrite_css_bytes(body, "http://site.test/s.css", "shift_jis", archived.get, "site.test/s.css")
    assert out.decode("shift_jis") == 'a{b:url("so.png")} c{d:url(a)}'


@pytest.mark.parametrize(
    ("css", "label", "expected"),
    [
        # The header named the charset: the file names it, or a page in another reads it in that.
        ('a{content:"caf\u00e9"}', "windows-1252", '@charset "windows-1252";a{content:"caf\u00e9"}'),
        ('@charset "utf-8";a{content:"caf\u00e9"}', "latin1", '@charset "latin1";a{content:"caf\u00e9"}'),
        (
            '@charset "latin1";a{content:"caf\u00e9"}',
            "ISO-8859-1",
            '@charset "latin1";a{content:"caf\u00e9"}',
        ),
        ("a{background:url(/img/a.png)}", "windows-1252", "a{background:url(img/a.png)}"),  # ASCII
    ],
)
def test_a_stylesheet_says_the_charset_its_header_gave(css: str, label: str, expected: str) -> None:
    body = css.encode("cp1252")
    out = rewrite_css_bytes(body, "http://site.test/style.css", label, resolve, "site.test/style.css")
    assert out.decode("cp1252") == expected
    # Without a header it is read as UTF-8, and says so if it is not ASCII: a page of the mirror
    # in another encoding would read it in that one.
    said = b"" if body.isascii() else b'@charset "utf-8";'
    assert rewrite_css_bytes(body, "http://site.test/style.css", None, resolve, "site.test/style.css") == (
        body if body.startswith(b"@charset") else said + body.replace(b"/img/a.png", b"img/a.png")
    )
    out = rewrite_css_bytes(css.encode("utf-16-le"), "http://site.test/s.css", "utf-16le", resolve)
    assert out.startswith(codecs.BOM_UTF16_LE)


@pytest.mark.parametrize(
    ("css", "referrer", "rule", "codec"),
    [
        (
            'a{background:url(/\u65e5.png)} a:after{content:"\u65e5"}',
            "cp932",
            '@charset "shift_jis";',
            "cp932",
        ),
        (
            'a{background:url(/caf\u00e9.png)} a:after{content:"\u00e9"}',
            "cp1252",
            '@charset "windows-1252";',
            "cp1252",
        ),
        ('@charset "utf-8";a{background:url(/\u65e5.png)} a:after{content:"\u65e5"}', "cp932", "", "utf-8"),
    ],
)
def test_a_stylesheet_that_names_no_charset_is_read_in_its_referrers_and_says_it(
    css: str, referrer: str, rule: str, codec: str
) -> None:
    """CSS's environment encoding: the page's that links it (the crawl reads it so too). Its bytes
    are kept, and its file says the encoding, as a page of the mirror in another would read it."""
    archived = {
        "http://site.test/%E6%97%A5.png": "site.test/日.png",
        "http://site.test/caf%C3%A9.png": "site.test/c.png",
    }
    body = css.encode(codec)
    out = rewrite_css_bytes(
        body, "http://site.test/s.css", None, archived.get, "site.test/s.css", None, referrer
    )
    assert out.startswith(rule.encode())
    (url,) = [url for _s, _e, url in iter_css_urls(out.decode(codec))]
    assert url in ("%E6%97%A5.png", "c.png")
    assert out[len(rule) :].decode(codec).endswith(css[-12:])  # the rest kept in its encoding
