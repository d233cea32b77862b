"""Link extraction from every place a page or stylesheet can hold one."""

import pytest

from archiver.links import (
    LINK,
    REQUISITE,
    extract,
    extract_css,
    extract_html,
    parse_meta_refresh,
    parse_srcset,
)

BASE = "http://h/dir/page.html"


def links_of(html: str, url: str = BASE) -> dict[str, str]:
    return {link.url: link.kind for link in extract_html(html.encode(), url).links}


@pytest.mark.parametrize(
    ("html", "url", "kind"),
    [
        ('<a href="a.html">x</a>', "http://h/dir/a.html", LINK),
        ('<map><area href="/area"></map>', "http://h/area", LINK),
        ('<link rel="stylesheet" href="s.css">', "http://h/dir/s.css", REQUISITE),
        ('<link rel="icon" href="/favicon.ico">', "http://h/favicon.ico", REQUISITE),
        ('<link rel="canonical" href="/c">', "http://h/c", LINK),
        ('<img src="i.png">', "http://h/dir/i.png", REQUISITE),
        ('<img srcset="s1.png 1x, s2.png 2x">', "http://h/dir/s2.png", REQUISITE),
        ('<picture><source srcset="p.webp"></picture>', "http://h/dir/p.webp", REQUISITE),
        ('<script src="/j.js"></script>', "http://h/j.js", REQUISITE),
        ('<iframe src="f.html"></iframe>', "http://h/dir/f.html", REQUISITE),
        ('<frameset><frame src="fr.html"></frameset>', "http://h/dir/fr.html", REQUISITE),
        ('<video src="v.mp4" poster="poster.jpg"></video>', "http://h/dir/poster.jpg", REQUISITE),
        ('<video><source src="v.webm"></video>', "http://h/dir/v.webm", REQUISITE),
        ('<audio src="a.mp3"></audio>', "http://h/dir/a.mp3", REQUISITE),
        ('<video><track src="t.vtt"></video>', "http://h/dir/t.vtt", REQUISITE),
        ('<embed src="e.swf">', "http://h/dir/e.swf", REQUISITE),
        ('<object data="o.svg"></object>', "http://h/dir/o.svg", REQUISITE),
        ('<input type="image" src="btn.png">', "http://h/dir/btn.png", REQUISITE),
        ('<meta http-equiv="refresh" content="0; url=/next">', "http://h/next", LINK),
        ("<div style=\"background: url('bg.png')\"></div>", "http://h/dir/bg.png", REQUISITE),
        ("<style>body { background: url(/st.png) }</style>", "http://h/st.png", REQUISITE),
        ('<style>@import "imp.css";</style>', "http://h/dir/imp.css", REQUISITE),
        ('<body background="tile.gif"></body>', "http://h/dir/tile.gif", REQUISITE),
        ('<link rel="preload" as="image" imagesrcset="pre.png 2x">', "http://h/dir/pre.png", REQUISITE),
        ('<svg><use href="sprite.svg#icon"></use></svg>', "http://h/dir/sprite.svg", REQUISITE),
        ('<svg><use xlink:href="/x.svg#i"></use></svg>', "http://h/x.svg", REQUISITE),
        ('<svg><image href="pic.png"></image></svg>', "http://h/dir/pic.png", REQUISITE),
    ],
)
def test_every_link_source(html, url, kind):
    assert links_of(html).get(url) == kind


@pytest.mark.parametrize(
    ("body", "http_charset"),
    [
        (b'<p STYLE="background: url(bg.png)">', None),
        (b'<p StYlE = "background: url(bg.png)">', None),
        ('<p style="background: url(bg.png)">'.encode("utf-16"), None),
        ('<p style="background: url(bg.png)">'.encode("utf-16-le"), "utf-16le"),
    ],
)
def test_a_style_attribute_is_found_in_any_case_and_encoding(body, http_charset):
    content_type = f"text/html; charset={http_charset}" if http_charset else "text/html"
    page = extract(body, BASE, "text/html", content_type)
    assert [(link.url, link.kind) for link in page.links] == [("http://h/dir/bg.png", REQUISITE)]


def test_base_href_changes_resolution():
    found = links_of('<head><base href="http://other/root/"></head><a href="x">x</a>')
    assert found == {"http://other/root/x": LINK}


@pytest.mark.parametrize(
    "html",
    [
        '<a href="mailto:a@b">m</a>',
        '<a href="javascript:void(0)">j</a>',
        '<a href="#top">t</a>',
        '<img src="data:image/png;base64,AAAA">',
        '<a href="">e</a>',
        '<input type="text" src="no.png">',
        "<!-- <a href='commented.html'> -->",
    ],
)
def test_references_that_are_not_links(html):
    assert links_of(html) == {}


def test_requisite_wins_over_link_for_same_url():
    assert links_of('<a href="i.png">i</a><img src="i.png">') == {"http://h/dir/i.png": REQUISITE}


def test_title_and_malformed_html():
    page = extract_html(b"<title>  A \n title </title><p><a href=x>unclosed <b>tags", BASE)
    assert page.title == "A title"
    assert [link.url for link in page.links] == ["http://h/dir/x"]


def test_title_outside_head_is_still_found():
    assert extract_html(b"<body><svg><title>In an image</title></svg></body>", BASE).title == "In an image"
    assert extract_html(b"<head><title>First</title></head><title>Second</title>", BASE).title == "First"


@pytest.mark.parametrize(
    ("page_url", "expected"),
    [
        (
            "http://h/dir/page.html",
            [
                "http://h/dir/x.html",
                "http://h/top",
                "http://h/dir/page.html?q=1",
                "http://other/y",
                "http://h/z",
            ],
        ),
        (
            "https://h/dir/page.html?a=b",
            [
                "https://h/dir/x.html",
                "https://h/top",
                "https://h/dir/page.html?q=1",
                "https://other/y",
                "https://h/z",
            ],
        ),
        (
            "http://h/other/deeper/p",
            [
                "http://h/other/deeper/x.html",
                "http://h/top",
                "http://h/other/deeper/p?q=1",
                "http://other/y",
                "http://h/other/z",
            ],
        ),
        (
            "http://h:8080",
            [
                "http://h:8080/x.html",
                "http://h:8080/top",
                "http://h:8080/?q=1",
                "http://other/y",
                "http://h:8080/z",
            ],
        ),
    ],
)
def test_a_link_met_before_on_another_page_resolves_against_this_one(page_url, expected):
    # The same attribute values on pages at other URLs, one after the other: what
    # an earlier page resolved must not leak into a later one.
    html = (
        '<a href="x.html"></a><a href="/top"></a><a href="?q=1"></a><a href="//other/y"></a>'
        '<a href="../dir/../z"></a>'
    )
    assert [link.url for link in extract_html(html.encode(), page_url).links] == expected


def test_a_query_only_link_written_after_spaces_resolves_against_the_whole_base():
    css = 'a{background:url(" ?v=1")} b{background:url(" /top.png")} i{background:url("  x.png")}'
    found = [link.url for link in extract_css(css, "http://h/css/site.css?x").links]
    assert found == ["http://h/css/site.css?v=1", "http://h/top.png", "http://h/css/x.png"]


def test_declared_encoding_is_used():
    body = '<title>日本語</title><a href="/ページ">p</a>'.encode("shift_jis")
    page = extract(body, BASE, "text/html", "text/html; charset=shift_jis")
    assert page.title == "日本語"
    assert page.links[0].url == "http://h/%E3%83%9A%E3%83%BC%E3%82%B8"


def test_css_urls_and_imports():
    css = """
    @import url("a.css");
    @import 'b.css';
    /* url(commented.png) */
    .x { background: url( c.png ) } .y { background: url("data:image/png;base64,xx") }
    @font-face { src: url('../fonts/f.woff2') format('woff2') }
    """
    found = {link.url for link in extract_css(css, "http://h/css/site.css").links}
    assert found == {
        "http://h/css/a.css",
        "http://h/css/b.css",
        "http://h/css/c.png",
        "http://h/fonts/f.woff2",
    }


@pytest.mark.parametrize(
    ("value", "urls"),
    [
        ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
        ("a.png, b.png 2x,c.png", ["a.png", "b.png", "c.png"]),
        ("a.png 100w,b.png 200w", ["a.png", "b.png"]),
        ("  single.png  ", ["single.png"]),
    ],
)
def test_parse_srcset(value, urls):
    assert [u for _, _, u in parse_srcset(value)] == urls


@pytest.mark.parametrize(
    ("content", "url"),
    [("0; url=/a", "/a"), ("5;URL='http://x/'", "http://x/"), ("3", None), ("0;url=b.html", "b.html")],
)
def test_parse_meta_refresh(content, url):
    span = parse_meta_refresh(content)
    assert (span[2] if span else None) == url
