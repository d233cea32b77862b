"""Rewriting the links of an HTML page for the offline mirror: every link source, <base>,
malformed markup, the memo shared by pages, iframe srcdoc documents."""

from __future__ import annotations

import functools
import html
from urllib.parse import unquote, urljoin

import lxml.etree
import lxml.html
import pytest
from conftest import in_linear_time
from rewrite_cases import ARCHIVED, HERE, PAGE, QUERIES, resolve, rewrite

from archiver.findings import extract_html
from archiver.links import HTML_LINK_ATTRS, iter_html_references
from archiver.mirror.linker import Memo
from archiver.mirror.rewrite import rewrite_html
from archiver.mirror.scripts import neutralise_scripts


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


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        (
            '<script type="speculationrules">{"prefetch": [{"urls": ["/x"]}]}</script>',
            '<script type="text/x-archived-script" data-archived-type="speculationrules">'
            '{"prefetch": [{"urls": ["/x"]}]}</script>',
        ),
        (
            "<script TYPE=' SpeculationRules '>{}</script>",
            "<script type=\"text/x-archived-script\" data-archived-type=' SpeculationRules '>{}</script>",
        ),
        ('<link rel="prefetch" href="/target">', '<link rel="prefetch" data-archived-href="/target">'),
        ('<link rel="prerender" href="/x">', '<link rel="prerender" data-archived-href="/x">'),
        (
            '<link rel="preconnect dns-prefetch" href="http://cdn.test">',
            '<link rel="preconnect dns-prefetch" data-archived-href="http://cdn.test">',
        ),
        (  # a stylesheet too: the page needs it, its file is linked
            '<link rel="stylesheet prefetch" href="/style.css">',
            '<link rel="stylesheet prefetch" href="../style.css">',
        ),
        (
            '<a href="/target" ping="http://t.test/p">x</a><area ping="/p" href="/target">',
            '<a href="../target.html" data-archived-ping="http://t.test/p">x</a>'
            '<area data-archived-ping="/p" href="../target.html">',
        ),
        (  # a refresh to a page not archived would leave for the live site on its own
            '<meta http-equiv="refresh" content="0; url=http://live.test/">',
            '<meta data-archived-http-equiv="refresh" content="0; url=http://live.test/">',
        ),
        (
            '<meta content="0;url=/gone" http-equiv="Refresh">',
            '<meta content="0;url=http://site.test/gone" data-archived-http-equiv="Refresh">',
        ),
        (  # to an archived page, or a reload of the page itself: kept
            '<meta http-equiv="refresh" content="0;url=/target">',
            '<meta http-equiv="refresh" content="0;url=../target.html">',
        ),
        ('<meta http-equiv="refresh" content="30">', '<meta http-equiv="refresh" content="30">'),
        ('<script type="module">go()</script>', '<script type="module">go()</script>'),
    ],
)
def test_what_would_reach_the_live_web_by_itself_is_kept_inert(markup: str, expected: str) -> None:
    assert rewrite(markup) == expected


def test_a_rendered_pages_speculation_rules_are_made_inert_once() -> None:
    rewritten = rewrite('<script type="speculationrules">{}</script><script>go()</script>')
    assert neutralise_scripts(rewritten.encode()) == (
        b'<script type="text/x-archived-script" data-archived-type="speculationrules">{}</script>'
        b'<script type="text/x-archived-script">go()</script>'
    )


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        (
            '<meta http-equiv="Content-Security-Policy" content="img-src http://site.test">',
            '<meta data-archived-http-equiv="Content-Security-Policy" content="img-src http://site.test">',
        ),
        (
            "<meta content=\"style-src 'sha256-x'\" HTTP-EQUIV=' content-security-policy '>",
            "<meta content=\"style-src 'sha256-x'\" data-archived-http-equiv=' content-security-policy '>",
        ),
        (  # in the document of a srcdoc, as in its page
            _srcdoc('<meta http-equiv="content-security-policy" content="img-src \'none\'">'),
            _srcdoc('<meta data-archived-http-equiv="content-security-policy" content="img-src \'none\'">'),
        ),
        (  # a policy that only reports is no policy in a <meta>: Chromium ignores it
            '<meta http-equiv="Content-Security-Policy-Report-Only" content="img-src \'none\'">',
            '<meta http-equiv="Content-Security-Policy-Report-Only" content="img-src \'none\'">',
        ),
    ],
)
def test_a_pages_content_security_policy_is_kept_for_the_reader_only(markup: str, expected: str) -> None:
    """A <meta http-equiv="Content-Security-Policy"> was kept as written: its sources name the
    live site (img-src http://site.test, a hash of a <style> the mirror rewrote), so from file://
    Chromium refused the mirror's own images, stylesheets and styles. Now it is kept under a name
    no browser acts on, in a srcdoc document too."""
    assert rewrite(markup) == expected


def _queried(url: str) -> str | None:
    return {"http://site.test/img/b.png?x=1&y=2": "site.test/img/b@x=1&y=2.png"}.get(url) or resolve(url)


@pytest.mark.parametrize(
    ("page", "xml", "expected"),
    [
        (
            "<style>.a{background:url(/img/b.png?x=1&amp;y=2)}</style>"
            "<svg><style>.b{background:url(/img/b.png?x=1&amp;y=2)}</style>"
            "<foreignObject><style>.c{background:url(/img/b.png?x=1&amp;y=2)}</style></foreignObject></svg>",
            False,
            "<style>.a{background:url(http://site.test/img/b.png?x=1&amp;y=2)}</style>"
            "<svg><style>.b{background:url(../img/b@x=1&amp;y=2.png)}</style>"
            "<foreignObject><style>.c{background:url(http://site.test/img/b.png?x=1&amp;y=2)}</style>"
            "</foreignObject></svg>",
        ),
        (
            '<html xmlns="http://www.w3.org/1999/xhtml"><style>.a{background:url(/img/b.png?x=1&amp;y=2)}'
            "</style></html>",
            True,
            '<html xmlns="http://www.w3.org/1999/xhtml"><style>.a{background:url(../img/b@x=1&amp;y=2.png)}'
            "</style></html>",
        ),
    ],
    ids=["svg in HTML", "XHTML"],
)
def test_a_style_whose_text_is_markup_is_rewritten_as_markup(page: str, xml: bool, expected: str) -> None:
    """The text of a <style> inside <svg> in an HTML page, or of an XHTML page's, is markup to the
    browser (url(/img/b.png?x=1&amp;y=2) asks for ?x=1&y=2): the mirror read it raw, found no file
    for ?x=1&amp;y=2 and left the live URL. Now it is read as the browser reads it and its local
    path written back escaped as markup; an HTML <style> (a <foreignObject>'s too) stays raw."""
    assert rewrite_html(page.encode(), PAGE, None, _queried, HERE, xml=xml).decode() == expected


@pytest.mark.parametrize(
    ("markup", "url"),
    [
        # The mirror reads a URL attribute as the crawl does: a NUL as U+FFFD (the tokenizer's and
        # libxml2's reading; the mirror left the live URL of n%00ul.png), spaces past ASCII kept.
        ('<img src="n\x00ul.png">', "http://site.test/dir/n%EF%BF%BDul.png"),
        ('<img src="x.png&nbsp;">', "http://site.test/dir/x.png%C2%A0"),
        ('<img srcset="a.png\u00a0b.png 2x">', "http://site.test/dir/a.png%C2%A0b.png"),
        ('<image src="/imgtag.png">', "http://site.test/imgtag.png"),
    ],
)
def test_the_mirror_looks_up_the_url_the_crawl_fetched(markup: str, url: str) -> None:
    out = rewrite_html(markup.encode(), PAGE, None, {url: "site.test/dir/local.png"}.get).decode()
    assert '="local.png' in out, out
