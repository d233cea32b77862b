"""Rewriting links for the offline mirror: every link source, encodings, malformed markup."""

from __future__ import annotations

import codecs
import functools
import html
from urllib.parse import unquote, urljoin

import lxml.etree
import lxml.html
import pytest
from conftest import in_linear_time

from archiver.encodings import web_codec
from archiver.findings import extract_css, extract_html
from archiver.link_values import iter_css_urls
from archiver.links import HTML_LINK_ATTRS, iter_html_references
from archiver.mirror.linker import Memo
from archiver.mirror.rewrite import rewrite_html, rewrite_svg
from archiver.mirror.stylesheets import rewrite_css, rewrite_css_bytes
from archiver.svg import iter_svg_references

PAGE = "http://site.test/dir/page.html"
HERE = "site.test/dir/page.html"
ARCHIVED = {
    "http://site.test/target": "site.test/target.html",
    "http://site.test/dir/sibling.png": "site.test/dir/sibling.png",
    "http://site.test/img/a.png": "site.test/img/a.png",
    "http://site.test/img/b.png": "site.test/img/b.png",
    "http://site.test/style.css": "site.test/style.css",
    "http://site.test/list?page=2": "site.test/list@page=2.html",
    "http://site.test/old": "site.test/new/index.html",  # a redirect, resolved to its final file
    "http://cdn.test/lib.js": "cdn.test/lib.js",
    "http://other.test/base/x.html": "other.test/base/x.html",
    "http://site.test/%E6%97%A5%E6%9C%AC.html": "site.test/日本.html",
    "http://site.test/dir/page.html": HERE,
}


def resolve(url: str) -> str | None:
    return ARCHIVED.get(url)


def rewrite(markup: str, encoding: str | None = None, page: str = PAGE) -> str:
    return rewrite_html(markup.encode("utf-8"), page, encoding, resolve).decode("utf-8")


def _element_for(tag: str, attribute: str, value: str) -> str:
    extra = {"input": ' type="image"', "link": ' rel="stylesheet"'}.get(tag, "")
    if attribute == "imagesrcset":  # read by a preload of an image alone, as in Chromium
        extra = ' rel="preload" as="image"'
    if tag in ("td", "th"):
        return f'<table><tr><{tag} {attribute}="{value}"{extra}>x</{tag}></tr></table>'
    return f'<{tag}{extra} {attribute}="{value}">'


@pytest.mark.parametrize(("tag", "attribute"), sorted(HTML_LINK_ATTRS))
def test_every_link_attribute_is_made_local(tag: str, attribute: str) -> None:
    out = rewrite(_element_for(tag, attribute, "/img/a.png"))
    assert f'{attribute}="../img/a.png"' in out


@pytest.mark.parametrize(("tag", "attribute"), sorted(HTML_LINK_ATTRS))
def test_every_link_attribute_not_archived_becomes_absolute(tag: str, attribute: str) -> None:
    out = rewrite(_element_for(tag, attribute, "missing.png"))
    assert f'{attribute}="http://site.test/dir/missing.png"' in out


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ('<a href="/target">', '<a href="../target.html">'),
        ('<a href="/target#part">', '<a href="../target.html#part">'),
        ('<a href="../target">', '<a href="../target.html">'),
        ('<a href="http://SITE.test:80/target">', '<a href="../target.html">'),
        ('<a href="//site.test/target">', '<a href="../target.html">'),
        ("<a href='/target'>", '<a href="../target.html">'),
        ("<a href=/target>", '<a href="../target.html">'),
        ('<a HREF = "/target" >', '<a HREF = "../target.html" >'),
        ('<a href=" /target ">', '<a href="../target.html">'),
        ('<a href="/list?page=2">', '<a href="../list@page=2.html">'),
        ('<a href="/list?page=3">', '<a href="http://site.test/list?page=3">'),
        ('<a href="/old">', '<a href="../new/index.html">'),
        ('<a href="/old#x">', '<a href="../new/index.html#x">'),
        ('<a href="sibling.png">', '<a href="sibling.png">'),
        ('<a href="">', '<a href="">'),
        ('<a href="page.html">', '<a href="page.html">'),
        ('<a href="#top">', '<a href="#top">'),
        ('<a href="mailto:a@b.c">', '<a href="mailto:a@b.c">'),
        ('<a href="javascript:void(0)">', '<a href="javascript:void(0)">'),
        ('<img src="data:image/png;base64,AAAA">', '<img src="data:image/png;base64,AAAA">'),
        ('<a href="ftp://x.test/f">', '<a href="ftp://x.test/f">'),
        ('<a href="http://[bad">', '<a href="http://[bad">'),
        ('<a href="/%E6%97%A5%E6%9C%AC.html">', '<a href="../%E6%97%A5%E6%9C%AC.html">'),
        ('<a href="/日本.html">', '<a href="../%E6%97%A5%E6%9C%AC.html">'),
        ('<a href="/x?a=1&amp;b=2">', '<a href="http://site.test/x?a=1&amp;b=2">'),
        ('<a title="/target" href="/target">', '<a title="/target" href="../target.html">'),
        ('<form action="/target">', '<form action="../target.html">'),
        ('<form action="search">', '<form action="http://site.test/dir/search">'),
        ('<svg><use href="/img/a.png#i"/></svg>', '<svg><use href="../img/a.png#i"/></svg>'),
        ('<input type="text" src="/img/a.png">', '<input type="text" src="/img/a.png">'),
        ('<link rel="canonical" href="/target">', '<link rel="canonical" href="../target.html">'),
        (
            '<link rel="stylesheet" href="/style.css" integrity="sha384-x" crossorigin>',
            '<link rel="stylesheet" href="../style.css" data-archived-integrity="sha384-x" '
            "data-archived-crossorigin>",
        ),
        (
            '<script src="http://cdn.test/lib.js" integrity="sha384-x"></script>',
            '<script src="../../cdn.test/lib.js" data-archived-integrity="sha384-x"></script>',
        ),
        (
            '<script src="/nope.js" integrity="sha384-x"></script>',
            '<script src="http://site.test/nope.js" integrity="sha384-x"></script>',
        ),
        ('<img srcset="/img/a.png 1x, /img/b.png 2x">', '<img srcset="../img/a.png 1x, ../img/b.png 2x">'),
        ('<img srcset="/img/a.png, /img/b.png 2x">', '<img srcset="../img/a.png, ../img/b.png 2x">'),
        (
            '<img srcset="/img/a.png,/img/b.png 2x">',  # one URL: a comma only ends it at its end
            '<img srcset="http://site.test/img/a.png,/img/b.png 2x">',
        ),
        (
            '<picture><source srcset="/img/a.png 100w, x.png 200w" type="image/png"></picture>',
            '<picture><source srcset="../img/a.png 100w, http://site.test/dir/x.png 200w" '
            'type="image/png"></picture>',
        ),
        ('<div style="background: url(/img/a.png)">', '<div style="background: url(../img/a.png)">'),
        (
            "<div style=\"background: url('/img/a.png') , url(&quot;/img/b.png&quot;)\">",
            '<div style="background: url(&#x27;../img/a.png&#x27;) , url(&quot;../img/b.png&quot;)">',
        ),
        (
            '<style>body{background:url("/img/a.png")}</style>',
            '<style>body{background:url("../img/a.png")}</style>',
        ),
        (
            '<style>@import "/style.css"; /* url(/img/a.png) */ a{b:url(nope.png)}</style>',
            '<style>@import "../style.css"; /* url(/img/a.png) */ '
            "a{b:url(http://site.test/dir/nope.png)}</style>",
        ),
        (
            '<meta http-equiv="refresh" content="0; url=/target">',
            '<meta http-equiv="refresh" content="0; url=../target.html">',
        ),
        (
            '<meta http-equiv="Refresh" content="5;URL=\'/old\'">',
            '<meta http-equiv="Refresh" content="5;URL=&#x27;../new/index.html&#x27;">',
        ),
        ('<meta name="description" content="/target">', '<meta name="description" content="/target">'),
        ('<meta http-equiv="refresh" content="30">', '<meta http-equiv="refresh" content="30">'),
    ],
)
def test_rewrite_html(markup: str, expected: str) -> None:
    assert rewrite(markup) == expected


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        (
            '<base href="http://other.test/base/"><a href="x.html">',
            '<base data-archived-href="http://other.test/base/"><a href="../../other.test/base/x.html">',
        ),
        (
            '<a href="x.html"><base href="/base/" target="_top">',
            '<a href="http://site.test/base/x.html"><base data-archived-href="http://site.test/base/" '
            'target="_top">',
        ),
        ('<base target="_blank"><a href="/target">', '<base target="_blank"><a href="../target.html">'),
        (
            '<base href="javascript:x"><a href="/target">',
            '<base data-archived-href="javascript:x"><a href="../target.html">',
        ),
        # A fragment alone goes to the document the base names, not to this page.
        (
            '<base href="/target"><a href="#top">t</a><a href="#">u</a>',
            '<base data-archived-href="http://site.test/target"><a href="../target.html#top">t</a>'
            '<a href="../target.html#">u</a>',
        ),
        (
            '<base href="/elsewhere/"><a href="#top">',
            '<base data-archived-href="http://site.test/elsewhere/"><a href="http://site.test/elsewhere/#top">',
        ),
        (
            '<base href="page.html"><a href="#top">',
            '<base data-archived-href="http://site.test/dir/page.html"><a href="#top">',
        ),
    ],
)
def test_base_href_is_resolved_then_neutralised(markup: str, expected: str) -> None:
    assert rewrite(markup) == expected


@pytest.mark.parametrize(
    "markup",
    [
        '<a href="/target">unclosed <b>bold <i>italic</a> tail',
        '<p>stray < and > and & here <a href="/target">x</a>',
        '<a href="/target" title="unterminated>text after</a>',
        '<!-- <a href="/target"> in a comment --><a href="/target">',
        '<script>var s = "<a href=\'/target\'>";</script><a href="/target">',
        "<div><span></div></span></p></html></body>trailing text after html",
        '<a href="/target">x</a><img src="/img/a.png"',
        "<![CDATA[ odd ]]><?php echo 1 ?><!doctype weird><a href=/target>",
        '<a href="/target"\x00 id=x>nul</a>\x00',
        '<a <a href="/target">>double open',
        "<table><td>cell<td>cell</table>",
        '<textarea><a href="/target"></textarea>',
        "",
        "   ",
        "<",
        "</",
        "<a",
    ],
)
def test_no_content_lost_on_malformed_html(markup: str) -> None:
    # Only link values change (and their quotes): undoing that gives the page back.
    assert _same_text(markup, rewrite(markup))


def _same_text(before: str, after: str) -> bool:
    strip = str.maketrans("", "", "\"'")
    normal = after.replace("../target.html", "/target").replace("../img/a.png", "/img/a.png")
    return normal.translate(strip) == before.translate(strip)


def test_comment_and_script_links_are_not_touched() -> None:
    markup = '<!-- <a href="/target"> --><script>x = "<img src=/img/a.png>"</script>'
    assert rewrite(markup) == markup


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("shift_jis", "日本語のページ"),
        ("euc-jp", "日本語のページ"),
        ("gbk", "中文页面"),
        ("big5", "中文頁面"),
        ("windows-1252", "café naïve €"),
        ("iso-8859-1", "café"),
        ("koi8-r", "Привет"),
        ("utf-8", "日本語 café"),
    ],
)
def test_page_encoding_is_kept(encoding: str, text: str) -> None:
    markup = (
        f"<html><head><title>{text}</title></head><body><p>{text}</p>"
        f'<a href="/%E6%97%A5%E6%9C%AC.html">{text}</a><img alt="{text}" src="/img/a.png">'
    )
    body = markup.encode(encoding)
    out = rewrite_html(body, PAGE, encoding, resolve)
    decoded = out.decode(encoding)
    assert text in decoded and f'alt="{text}"' in decoded
    assert 'href="../%E6%97%A5%E6%9C%AC.html"' in decoded
    assert 'src="../img/a.png"' in decoded
    assert decoded.startswith(f'<meta charset="{encoding}">')  # header-only charset made explicit
    assert lxml.html.document_fromstring(out).findtext(".//title") == text


def test_an_iso_2022_jp_page_is_written_back_as_it_was_read() -> None:
    # Read as browsers read it (half-width katakana, NEC's ①), written back byte for byte: the
    # standard's writer would make the katakana full-width.
    text = b"\x1b$BF|K\\-!\x1b(B \x1b(I1\x1b(B"
    body = b'<meta charset="iso-2022-jp"><p>' + text + b'</p><a href="/%E6%97%A5%E6%9C%AC.html">x</a>'
    out = rewrite_html(body, PAGE, web_codec("iso-2022-jp") or "", resolve)
    assert text in out and b'href="../%E6%97%A5%E6%9C%AC.html"' in out


def test_shift_jis_bytes_outside_links_are_kept_exactly() -> None:
    body = (
        '<!DOCTYPE html><html><head><meta charset="shift_jis"><title>表示</title></head>'
        '<body><p>ソフト\\ウェア</p><a href="/target">リンク</a></body></html>'
    ).encode("shift_jis")
    out = rewrite_html(body, PAGE, "shift_jis", resolve)
    assert out == body.replace(b'href="/target"', b'href="../target.html"')


def test_non_ascii_url_in_a_shift_jis_page_is_resolved() -> None:
    body = '<meta charset="shift_jis"><a href="/日本.html">x</a>'.encode("shift_jis")
    out = rewrite_html(body, PAGE, None, resolve)
    assert b'href="../%E6%97%A5%E6%9C%AC.html"' in out


@pytest.mark.parametrize("encoding", ["utf-8", "shift_jis", "windows-1252"])
def test_character_references_are_read_after_the_page_is_decoded(encoding: str) -> None:
    """A reference to a character the page's encoding cannot hold (&mdash;, &#8217;) in a tag
    with a link once made the page's rewrite fail; one to a non-ASCII character in a URL
    must name that character, whatever bytes the page is written in."""
    body = (
        '<a href="/target" title="A &mdash; B &#8217;s">t</a>'
        '<img src="/%E6%97%A5%E6%9C%AC.html" alt="&#26085;">'
        '<a href="caf&#233;.html">c</a>'
    ).encode(encoding)
    out = rewrite_html(body, PAGE, encoding, resolve).decode(encoding)
    assert 'href="../target.html" title="A &mdash; B &#8217;s"' in out
    assert 'src="../%E6%97%A5%E6%9C%AC.html" alt="&#26085;"' in out
    last_href = html.unescape(out.rpartition('href="')[2].partition('"')[0])
    assert last_href == "http://site.test/dir/caf%C3%A9.html"  # made absolute as a browser resolves it
    assert extract_html(body, PAGE, encoding).links[-1].url == "http://site.test/dir/caf%C3%A9.html"


def test_header_charset_that_the_page_contradicts_wins() -> None:
    body = '<meta charset="utf-8"><p>日本</p>'.encode("shift_jis")
    out = rewrite_html(body, PAGE, "shift_jis", resolve)
    assert out.startswith(b'<meta charset="shift_jis"><meta charset="utf-8">')


def test_declared_charset_is_not_repeated() -> None:
    body = b'<!DOCTYPE html><meta charset="UTF-8"><a href="/target">'
    assert rewrite_html(body, PAGE, "utf-8", resolve) == body.replace(b"/target", b"../target.html")


def test_a_charset_said_only_in_a_comment_is_said_again() -> None:
    # A browser's prescan skips comments: from disk, the page would be read in its guess.
    body = b'<!-- <meta charset="windows-1251"> --><p>\xe4\xe0</p>'
    out = rewrite_html(body, PAGE, "windows-1251", resolve)
    assert out == b'<meta charset="windows-1251">' + body


def test_doctype_stays_first() -> None:
    out = rewrite_html(b"<!DOCTYPE html>\n<p>x", PAGE, "windows-1252", resolve)
    assert out == b'<!DOCTYPE html><meta charset="windows-1252">\n<p>x'


def test_utf16_page() -> None:
    body = '<a href="/target">日本</a>'.encode("utf-16")
    out = rewrite_html(body, PAGE, None, resolve)
    assert out.decode("utf-16") == '<a href="../target.html">日本</a>'


def test_undecodable_bytes_survive() -> None:
    body = b'<p>\xff\xfe broken \x80 utf-8</p><a href="/target">'
    out = rewrite_html(body, PAGE, None, resolve)
    assert out == body.replace(b"/target", b"../target.html")


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


def test_every_extracted_link_is_local_or_absolute() -> None:
    """Whatever findings.extract_html finds in a page, the rewritten page holds no relative URL
    that is not a local archived file."""
    markup = """<!doctype html><html><head><base href="/dir/">
    <link rel=stylesheet href=../style.css><link rel=icon href=/favicon.ico>
    <style>@import url(x.css); body{background:url(/img/b.png)}</style>
    <meta http-equiv=refresh content="10;url=/target"></head>
    <body background=bg.png><a href=/target>t</a><a href=sibling.png>s</a><area href=/old>
    <img src=/img/a.png srcset="/img/a.png 1x, /img/b.png 2x, nope.png 3x" lowsrc=low.png>
    <picture><source srcset="/img/b.png"><source src=/v.mp4></picture>
    <script src=//cdn.test/lib.js></script><iframe src=/target></iframe><frame src=f.html>
    <video src=v.webm poster=/img/a.png><track src=t.vtt></video><audio src=a.ogg></audio>
    <embed src=e.swf><object data=o.swf></object><input type=image src=/img/b.png>
    <table background=t.png><tr><td background=td.png><th background=/img/a.png></table>
    <p style="background:url('/img/b.png')">p</p></body></html>"""
    body = markup.encode()
    page = extract_html(body, PAGE)
    assert len(page.links) > 20
    out = rewrite_html(body, PAGE, "utf-8", resolve)
    root = lxml.html.document_fromstring(out)
    base_url = "file:///m/" + HERE
    for _element, _attribute, _start, _end, value, _kind in iter_html_references(root):
        if value.startswith(("http://", "https://")):
            assert resolve(value.split("#")[0]) is None, value
            continue
        assert not value.startswith("/"), value
        target = unquote(urljoin(base_url, value).split("#")[0]).removeprefix("file:///m/")
        assert target in ARCHIVED.values(), value
    assert root.find(".//base").get("href") is None


@pytest.mark.parametrize("written", ["\\\\site.test\\img\\a.png", "..\\img\\a.png", " /img/./a.png#f"])
def test_a_link_points_at_what_the_crawl_fetched_for_it(written: str) -> None:
    """Links are resolved as the crawl resolved them: backslashes read as browsers read them."""
    body = f'<img src="{html.escape(written)}">'.encode()
    (link,) = extract_html(body, PAGE).links
    assert link.url == "http://site.test/img/a.png"
    out = rewrite_html(body, PAGE, None, resolve)
    assert out.startswith(b'<img src="../img/a.png'), out


def test_a_memo_shared_by_many_documents_changes_no_byte() -> None:
    """The memo keys a reference by its base URL's folder and its document's folder; every
    reference whose result depends on more (query, fragment, empty) must bypass it."""
    import random

    import archiver.mirror.linker as rewrite_module

    references = [
        "target",
        "/target",
        "../target",
        "sibling.png",
        " sibling.png ",
        "?page=2",
        " ?x",
        "#top",
        "",
        "/img/a.png#f",
        "../img/b.png",
        "//cdn.test/lib.js",
        "old",
        "/old",
        "http://other.test/base/x.html",
        "page.html",
        "page.html?q=1",
        "missing.html",
        "list?page=2",
        "/list?page=2",
        "javascript:void(0)",
        "%E6%97%A5%E6%9C%AC.html",
    ]
    pages = [
        ("http://site.test/dir/page.html", "site.test/dir/page.html"),
        ("http://site.test/dir/page.html?v=/x/y", "site.test/dir/page@v=%2Fx%2Fy.html"),
        ("http://site.test/list?page=2", "site.test/list@page=2.html"),
        ("http://site.test/", "site.test/index.html"),
        ("http://site.test/dir/", "site.test/dir/index.html"),
        ("http://site.test/img/a.png.html", "site.test/img/a.png.html"),
    ]
    bases = [
        "",
        '<base href="/img/">',
        '<base href="http://other.test/base/">',
        '<base href="http://site.test">',
        '<base href="http://cdn.test?v=1">',
    ]  # no path: folder /
    chooser = random.Random(7)
    memo = rewrite_module.Memo()
    for _ in range(400):
        url, path = chooser.choice(pages)
        links = "".join(
            f'<a href="{chooser.choice(references)}">x</a>'
            f'<img src="{chooser.choice(references)}">'
            f'<div style="background:url({chooser.choice(references)})"></div>'
            f'<link rel="stylesheet" href="{chooser.choice(references)}" integrity="sha-x">'
            f'<meta http-equiv="refresh" content="5; url={chooser.choice(references)}">'
            for _ in range(3)
        )
        body = f"<html><head>{chooser.choice(bases)}</head><body>{links}</body></html>".encode()
        assert rewrite_html(body, url, None, resolve, path, memo) == rewrite_html(
            body, url, None, resolve, path
        )
    assert 0 < len(memo.references) < rewrite_module.MEMO_SIZE
    assert 0 < len(memo.tags) < rewrite_module.MEMO_SIZE


def test_the_memo_remembers_a_local_path_without_its_fragment_and_changes_nothing() -> None:
    # Documentation pages link to many anchors of one page: one resolution serves them all.
    resolve = {"http://h/a.html": "h/a.html"}.get
    doc = (
        b'<a href="a.html#x">x</a><a href=" a.html#y ">y</a><a href="a.html">a</a>'
        b'<a href="b.html#x">b</a><a href=" b.html ">b</a><a href="#top">top</a>'
    )
    memo = Memo()
    first = rewrite_html(doc, "http://h/p.html", None, resolve, "h/p.html", memo)
    again = rewrite_html(doc, "http://h/q.html", None, resolve, "h/q.html", memo)
    alone = rewrite_html(doc, "http://h/q.html", None, resolve, "h/q.html")
    assert first == again == alone
    assert b'href="a.html#x"' in alone and b'href="a.html#y"' in alone
    assert b'href="http://h/b.html#x"' in alone and b'href="http://h/b.html"' in alone
    assert len(memo.references) <= 4  # a.html once, and each absolute reference as written


class Guessing:
    """A resolver that guesses every answer, as LocalPaths does for a URL not fetched yet."""

    def __init__(self) -> None:
        self.guessed = 0
        self.asked: list[str] = []
        self.notes: list[tuple[str, str | None]] = []

    def __call__(self, url: str) -> str | None:
        self.asked.append(url)
        self.guessed += 1
        return "h/" + url.rpartition("/")[2] + ".html"

    def noted(self, guesses) -> None:
        self.notes.extend(guesses)


def test_the_memo_remembers_guesses_with_the_guesses_they_took() -> None:
    """Early in a crawl most links are guesses: a page's navigation, met again on its neighbour,
    is taken from the memo, and the guesses it took are handed back, so the page is still
    checked at the end of the crawl."""
    import archiver.mirror.linker as rewrite_module

    resolve = Guessing()
    memo = Memo()
    doc = b'<a href="/next">n</a><img src="/logo">'
    first = rewrite_html(doc, "http://h/a", None, resolve, "h/a.html", memo)
    again = rewrite_html(doc, "http://h/b", None, resolve, "h/b.html", memo)
    assert first == again == b'<a href="next.html">n</a><img src="logo.html">'
    assert resolve.asked == ["http://h/next", "http://h/logo"]  # once each
    assert resolve.notes == [("http://h/next", "h/next.html"), ("http://h/logo", "h/logo.html")]
    for n in range(rewrite_module.GUESSES_KEPT_FOR):  # then forgotten: asked again
        rewrite_html(b"<p>", f"http://h/{n}", None, resolve, f"h/{n}.html", memo)
    rewrite_html(doc, "http://h/c", None, resolve, "h/c.html", memo)
    assert resolve.asked[2:] == ["http://h/next", "http://h/logo"]


def test_a_query_whose_parameters_begin_like_character_names_keeps_them() -> None:
    # &sect, &copy, &not, &reg are legacy names a browser decodes without their ';', but not in
    # an attribute where a letter, a digit or '=' follows: '&section=2' stays '&section=2'.
    archived = {"http://site.test/list?page=1&section=2&copy=3&not=4&reg-": "site.test/list@q.html"}
    body = b'<a href="/list?page=1&section=2&copy=3&not=4&reg-">x</a><img src="/i.png?v=1&reg=5&copy">'
    out = rewrite_html(body, PAGE, None, archived.get)
    # ...and where nothing of the kind follows, the name is read: '&reg-' is '\u00ae-'.
    assert [link.url for link in extract_html(body, PAGE).links] == [
        "http://site.test/list?page=1&section=2&copy=3&not=4%C2%AE-",
        "http://site.test/i.png?v=1&reg=5%C2%A9",
    ]
    assert out == (
        b'<a href="http://site.test/list?page=1&amp;section=2&amp;copy=3&amp;not=4%C2%AE-">x</a>'
        b'<img src="http://site.test/i.png?v=1&amp;reg=5%C2%A9">'
    )
    archived = {"http://site.test/list?page=1&section=2&copy=3": "site.test/list@q.html"}
    assert rewrite_html(b'<a href="/list?page=1&section=2&copy=3">', PAGE, None, archived.get) == (
        b'<a href="../list@q.html">'
    )


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ('<img crossorigin src="/img/a.png">', '<img data-archived-crossorigin src="../img/a.png">'),
        (
            '<img crossorigin="anonymous" src="http://elsewhere.test/x.png">',
            '<img data-archived-crossorigin="anonymous" src="http://elsewhere.test/x.png">',
        ),
        (
            '<video crossorigin poster="/img/a.png"><source src="/v.mp4"></video>',
            '<video data-archived-crossorigin poster="../img/a.png"><source src="http://site.test/v.mp4"></video>',
        ),
        (
            '<script integrity="sha384-x" crossorigin src="http://cdn.test/lib.js"></script>',
            '<script data-archived-integrity="sha384-x" data-archived-crossorigin '
            'src="../../cdn.test/lib.js"></script>',
        ),
        # A script left live keeps its integrity: the file it names is the one it was made for.
        (
            '<script integrity="sha384-x" src="http://elsewhere.test/lib.js"></script>',
            '<script integrity="sha384-x" src="http://elsewhere.test/lib.js"></script>',
        ),
    ],
)
def test_crossorigin_goes_from_every_element_a_page_from_disk_would_load_it_for(
    markup: str, expected: str
) -> None:
    # From file:// a page's origin is null: a CORS request (what crossorigin asks) fails.
    assert rewrite(markup) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b"<!-- made by hand -->\n<!DOCTYPE html><p>x",
            b'<!-- made by hand -->\n<!DOCTYPE html><meta charset="latin1"><p>x',
        ),
        (
            b'<?xml version="1.0"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0//EN" "s.dtd">\n<html>',
            b'<?xml version="1.0"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0//EN" "s.dtd">'
            b'<meta charset="latin1">\n<html>',
        ),
        (b"<html><!DOCTYPE html>", b'<meta charset="latin1"><html><!DOCTYPE html>'),
    ],
)
def test_the_charset_added_comes_after_the_doctype_so_the_page_keeps_its_mode(
    body: bytes, expected: bytes
) -> None:
    # Before the doctype, it would put the page in quirks mode: another layout.
    assert rewrite_html(body, PAGE, "latin1", resolve) == expected


XHTML = b'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>caf\xe9</p></body></html>'


@pytest.mark.parametrize(
    ("body", "charset", "expected"),
    [
        (XHTML.replace(b"\xe9", b"\xc3\xa9"), "utf-8", XHTML.replace(b"\xe9", b"\xc3\xa9")),
        (XHTML, "ISO-8859-1", b'<?xml version="1.0" encoding="ISO-8859-1"?>' + XHTML),
        (
            b'<?xml version="1.0" encoding="utf-8"?>' + XHTML,
            "ISO-8859-1",
            b'<?xml version="1.0" encoding="ISO-8859-1"?>' + XHTML,
        ),
        (
            b"<?xml version='1.0' encoding='latin1'?>" + XHTML,
            "ISO-8859-1",
            b"<?xml version='1.0' encoding='latin1'?>" + XHTML,
        ),
    ],
)
def test_an_xhtml_document_says_its_charset_in_its_xml_declaration(
    body: bytes, charset: str, expected: bytes
) -> None:
    # An HTML <meta> before the root element is not XML: the page would show only a parse error.
    assert rewrite_html(body, PAGE, charset, resolve, xml=True) == expected


def test_an_xhtml_pages_xml_stylesheet_instructions_are_made_local() -> None:
    page = (
        b'<?xml version="1.0"?><!-- <?xml-stylesheet href="/style.css"?> -->'
        b'<?xml-stylesheet type="text/css" href="/style.css"?>'
        b'<?xml-stylesheet href="/unknown.css"?><html xmlns="http://www.w3.org/1999/xhtml">'
        b'<?xml-stylesheet href="/style.css"?><a href="/target">t</a></html>'
    )
    assert rewrite_html(page, PAGE, None, resolve, HERE, xml=True) == (
        b'<?xml version="1.0"?><!-- <?xml-stylesheet href="/style.css"?> -->'
        b'<?xml-stylesheet type="text/css" href="../style.css"?>'
        b'<?xml-stylesheet href="http://site.test/unknown.css"?><html xmlns="http://www.w3.org/1999/xhtml">'
        b'<?xml-stylesheet href="/style.css"?><a href="../target.html">t</a></html>'
    )


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


def test_a_bare_url_whose_utf8_holds_the_byte_of_a_no_break_space_is_made_local() -> None:
    # "à" is C3 A0 in UTF-8; A0, read one byte a character, is a no-break space: not CSS's white space.
    body = "a{b:url(voilà.png)}".encode()
    archived = {"http://site.test/voil%C3%A0.png": "site.test/v.png"}
    out = rewrite_css_bytes(body, "http://site.test/s.css", "utf-8", archived.get, "site.test/s.css")
    assert out == b"a{b:url(v.png)}"


QUERIES = {
    "http://site.test/s?q=caf%E9": "site.test/s@q=caf-1252.html",
    "http://site.test/s?q=caf%C3%A9": "site.test/s@q=caf-utf8.html",
    "http://site.test/c?%C3%A9": "site.test/c.png",
}


def test_a_query_is_encoded_in_the_pages_encoding_as_the_crawl_fetched_it() -> None:
    body = (
        b'<a href="/s?q=caf\xe9">a</a><div style="background:url(/c?\xe9)"></div>'
        b'<a href="/gone?q=caf\xe9">g</a>'
    )
    out = rewrite_html(body, PAGE, "windows-1252", QUERIES.get, HERE)
    assert out == (
        b'<meta charset="windows-1252"><a href="../s@q=caf-1252.html">a</a>'
        b'<div style="background:url(../c.png)"></div>'  # CSS URLs are always UTF-8
        b'<a href="http://site.test/gone?q=caf%E9">g</a>'
    )
    # What the rewrite linked is what the crawl fetched.
    fetched = {link.url for link in extract_html(body, PAGE, "windows-1252").links}
    assert fetched == {
        "http://site.test/s?q=caf%E9",
        "http://site.test/c?%C3%A9",
        "http://site.test/gone?q=caf%E9",
    }


def test_pages_in_two_encodings_sharing_a_memo_link_one_query_text_to_two_urls() -> None:
    memo = Memo()
    latin = rewrite_html(
        '<a href="/s?q=café">'.encode("cp1252"), PAGE, "windows-1252", QUERIES.get, HERE, memo
    )
    utf8 = rewrite_html('<a href="/s?q=café">'.encode(), PAGE, "utf-8", QUERIES.get, HERE, memo)
    assert latin.endswith(b'<a href="../s@q=caf-1252.html">')
    assert utf8 == b'<meta charset="utf-8"><a href="../s@q=caf-utf8.html">'


def _srcdoc(document: str) -> str:
    return f'<iframe srcdoc="{html.escape(document)}"></iframe>'


def _srcdoc_of(page: bytes) -> str:
    iframe = lxml.html.document_fromstring(page).find(".//iframe")
    assert iframe is not None
    return str(iframe.get("srcdoc"))


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            '<img src="/img/a.png"><a href="/target">t</a><img src=missing.png>',
            '<img src="../img/a.png"><a href="../target.html">t</a><img src="http://site.test/dir/missing.png">',
        ),
        (
            "<style>a{b:url(/img/a.png)}</style><p style='background:url(/img/b.png)'>",
            '<style>a{b:url(../img/a.png)}</style><p style="background:url(../img/b.png)">',
        ),
        (
            '<base href="/img/"><img src="a.png"><a href="#top">',
            '<base data-archived-href="http://site.test/img/"><img src="../img/a.png">'
            '<a href="http://site.test/img/#top">',
        ),
        ('<a href="#top">t</a><p>No link & no change</p>', None),
        (_srcdoc('<img src="/img/a.png">'), _srcdoc('<img src="../img/a.png">')),
    ],
)
def test_the_document_of_an_iframe_srcdoc_is_rewritten_and_escaped_back(
    document: str, expected: str | None
) -> None:
    page = f'<p>before</p>{_srcdoc(document)}<a href="/target">after</a>'.encode()
    out = rewrite_html(page, PAGE, None, resolve, HERE)
    assert _srcdoc_of(out) == (expected if expected is not None else document)
    before, _, after = page.partition(b"<iframe")
    assert out.startswith(before) and out.endswith(b'</iframe><a href="../target.html">after</a>')


def test_a_srcdoc_is_rewritten_as_deep_as_the_crawl_reads_it() -> None:
    from archiver.links import MAX_SRCDOC_DEPTH

    page = '<img src="/img/a.png">'
    for _depth in range(MAX_SRCDOC_DEPTH + 1):
        page = _srcdoc(page + '<img src="/img/b.png">')
    out = rewrite_html(page.encode(), PAGE, None, resolve, HERE).decode()
    documents = []
    while "srcdoc" in out:
        out = _srcdoc_of(out.encode())
        documents.append(out)
    assert len(documents) == MAX_SRCDOC_DEPTH + 1
    assert all('src="../img/b.png"' in document for document in documents[:MAX_SRCDOC_DEPTH])
    assert documents[-1] == '<img src="/img/a.png"><img src="/img/b.png">'  # one level deeper: as it was


def test_a_srcdoc_in_a_windows_1252_page_writes_its_queries_in_utf8() -> None:
    page = "<iframe srcdoc=\"<a href='/s?q=café'>s</a>\">".encode("cp1252")
    out = rewrite_html(page, PAGE, "windows-1252", QUERIES.get, HERE)
    assert out == (
        b'<meta charset="windows-1252">'
        b'<iframe srcdoc="&lt;a href=&quot;../s@q=caf-utf8.html&quot;&gt;s&lt;/a&gt;">'
    )


def test_pages_with_srcdoc_rewrite_alike_with_a_memo_and_without() -> None:
    memo = Memo()
    for url, path in (
        ("http://site.test/dir/page.html", HERE),
        ("http://site.test/x/y", "site.test/x/y.html"),
    ):
        for base in ("", '<base href="/img/">'):
            page = (base + _srcdoc('<a href="/target">t</a><a href="?page=2">p</a>') * 2).encode()
            assert rewrite_html(page, url, None, resolve, path, memo) == rewrite_html(
                page, url, None, resolve, path
            )


@pytest.mark.parametrize(
    "page",
    [
        functools.reduce(lambda inner, _n: _srcdoc(inner + '<img src="/img/a.png">'), range(200), ""),
        '<iframe srcdoc="' + "&lt;a href=/target&gt;" * 200_000 + '">',
        _srcdoc('<img src="/img/a.png"><iframe srcdoc=' + "&lt;iframe/srcdoc=" * 100_000 + ">") * 3,
        _srcdoc('<img src="/img/a.png">') * 50_000,
    ],
    ids=["nested 200 deep", "a srcdoc of 200,000 tags", "unquoted nesting", "50,000 srcdocs"],
)
def test_hostile_srcdoc_documents_are_rewritten_in_linear_time(page: str) -> None:
    with in_linear_time():
        out = rewrite_html(page.encode(), PAGE, None, resolve, HERE, Memo())
    assert out != page.encode()


SVG_URL = "http://site.test/dir/a.svg"
SVG_PATH = "site.test/dir/a.svg"


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
    from test_links import SVG_DOCUMENT, SVG_LINKS

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


@pytest.mark.parametrize("label", ["iso-8859-1", "latin1", "us-ascii"])
def test_a_page_labelled_latin1_is_rewritten_as_the_windows_1252_browsers_read(label: str) -> None:
    archived = {"http://site.test/%E2%82%AC.html": "site.test/\u20ac.html"}
    body = b'<a href="/\x80.html">\x93a\x94</a><a href="/\x85">b</a><iframe srcdoc="<p>\x93</p>"></iframe>'
    out = rewrite_html(body, PAGE, label, archived.get, HERE)
    assert out == (
        f'<meta charset="{label}">'.encode()
        + b'<a href="../%E2%82%AC.html">\x93a\x94</a><a href="http://site.test/%E2%80%A6">b</a>'
        + b'<iframe srcdoc="<p>\x93</p>"></iframe>'
    )


def test_every_link_the_crawl_finds_in_what_styles_an_svg_document_and_its_html_is_made_local() -> None:
    from test_links import SVG_STYLED_DOCUMENT, SVG_STYLED_LINKS

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


def test_a_utf16_page_a_header_names_gets_a_byte_order_mark_a_file_on_disk_is_read_by() -> None:
    # A <meta> saying UTF-16 is read as UTF-8, and XML reads UTF-16 only after a mark.
    page = '<a href="/target">\u65e5\u672c</a>'
    out = rewrite_html(page.encode("utf-16-le"), PAGE, "utf-16", resolve, HERE)
    assert out == codecs.BOM_UTF16_LE + ('<a href="../target.html">\u65e5\u672c</a>'.encode("utf-16-le"))
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><image href="/img/a.png"/></svg>'
    out = rewrite_svg(svg.encode("utf-16-be"), SVG_URL, "UTF-16BE", resolve, SVG_PATH)
    assert lxml.etree.fromstring(out).find("{*}image").get("href") == "../img/a.png"


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


@pytest.mark.parametrize("label", ["ISO-2022-KR", "hz-gb-2312"])
def test_a_document_in_a_replacement_encoding_is_kept_and_says_its_encoding(label: str) -> None:
    """A browser shows such a document as one U+FFFD: its file keeps the bytes received, links
    untouched, and names the encoding its header gave, so that read from disk it shows the same."""
    page = b'<!doctype html><a href="/target">a</a><script>x()</script>'
    out = rewrite_html(page, PAGE, label, resolve, HERE)
    assert out == f'<meta charset="{label}">'.encode() + page
    assert rewrite_html(out, PAGE, None, resolve, HERE) == out  # it says so already
    xhtml = b'<?xml version="1.0" encoding="utf-8"?><html><a href="/target">a</a></html>'
    out = rewrite_html(xhtml, PAGE, label, resolve, HERE, xml=True)
    assert out == xhtml.replace(b"utf-8", label.encode())
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><image href="/img/a.png"/></svg>'
    out = rewrite_svg(svg, SVG_URL, label, resolve, SVG_PATH)
    assert out == f'<?xml version="1.0" encoding="{label}"?>'.encode() + svg
    css = b"a{background:url(/img/a.png)}"
    out = rewrite_css_bytes(css, "http://site.test/style.css", label, resolve, "site.test/style.css")
    assert out == f'@charset "{label}";'.encode() + css


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


def test_an_xhtml_page_is_rewritten_in_the_encoding_xml_gives() -> None:
    # Its XML declaration counts, a <meta> does not; read another way, its link named another URL.
    page = '<?xml version="1.0" encoding="shift_jis"?><html><a href="/\u65e5\u672c.html">a</a></html>'
    out = rewrite_html(page.encode("cp932"), PAGE, None, resolve, HERE, xml=True)
    assert out.decode("cp932") == page.replace("/\u65e5\u672c.html", "../%E6%97%A5%E6%9C%AC.html")
    meta = '<html><head><meta charset="shift_jis"/></head><a href="/\u65e5\u672c.html">a</a></html>'
    out = rewrite_html(meta.encode(), PAGE, None, resolve, HERE, xml=True)
    assert out.decode() == meta.replace("/\u65e5\u672c.html", "../%E6%97%A5%E6%9C%AC.html")
