"""Link extraction from every place a page or stylesheet can hold one."""

import functools
import html
import subprocess
import sys

import pytest
from conftest import in_linear_time

from archiver.crawling.preparing import parse_document
from archiver.findings import (
    STREAMED_BYTES,
    extract,
    extract_css,
    extract_html,
    findings,
    parse_page,
    read_page,
    root_findings,
)
from archiver.link_values import iter_css_urls, parse_meta_refresh, parse_srcset
from archiver.links import LINK, MAX_SRCDOC_DEPTH, REQUISITE

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
        # Origins a browser opens a connection to, and fetches nothing from.
        '<link rel="preconnect" href="/"><link rel="dns-prefetch preconnect" href="//cdn.test">',
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
    ("css", "urls"),
    [
        ("a{b:url(/x.png)} @import 'y.css';", ["/x.png", "y.css"]),
        ("a{b:url(url(url(/last.png)} c{d:url(/next.png)}", ["/next.png"]),  # a bad url, read to its ")"
        ("a{b:url(a(b).png)}", []),
        ("/* url(/hidden.png) */ a{b:url( '/q.png' )}", ["/q.png"]),
        ("a{b:url(/before.png)} /* never closed url(/after.png)", ["/before.png"]),
        ("a{b:image-set(\"1x.png\" 1x, '2x.png' 2x)}", ["1x.png", "2x.png"]),
        ('a{b:-webkit-image-set(url(a.png) 1x, "b.png" 2x) url(c.png)}', ["a.png", "b.png", "c.png"]),
        ('a{b:image-set("a.avif" type("image/avif"), "a.jpg" type(\'image/jpeg\'))}', ["a.avif", "a.jpg"]),
        ('a{content:"image-set(no.png)"; b:image-set(url(x.png))}', ["x.png"]),
        ("a{b:url(c.png", ["c.png"]),  # the end of the text ends a url token
        ('a{b:url(x"y.png) url(c.png)}', ["c.png"]),  # a quote makes a bad url, read to its ")"
        ("a{b:\\75 rl(x.png) U\\52 L('y.png')}", ["x.png", "y.png"]),  # a name is what its escapes spell
        ("a{b:myurl(x.png) -url(y.png) #url(z.png) 1url(w.png) --url(v.png)}", []),  # no url()
        ("@import\"a.css\"; @import/**/'b.css';", ["a.css", "b.css"]),
        ("@namespace svg url(http://www.w3.org/2000/svg); @namespace 'ns'; a{b:url(x.png)}", ["x.png"]),
    ],
)
def test_css_urls(css, urls):
    assert [url for _start, _end, url in iter_css_urls(css)] == urls


@pytest.mark.parametrize(
    ("css", "found", "then"),
    [
        ("a{b:url(" * 200_000, 0, ")"),  # one bad url, to the end
        ("url('" * 200_000, 100_000, ""),  # url('url(') a hundred thousand times
        ('url("x' + " url(" * 200_000, 1, '"'),  # one string, to the end
        ("/*" * 200_000, 0, "*/"),  # a comment never closed runs to the end, as in CSS
        ("@import " * 200_000, 0, ""),
        ("url(" + " " * 1_000_000 + "x(", 0, ")"),
        ("image-set(" * 200_000, 0, ")" * 200_000),
        ('image-set("' * 200_000, 1, ")" * 200_000),
        ("image-set((" + "(x)" * 300_000, 0, "))"),
        ("\\75 rl(" * 200_000, 0, ")"),
        ("#" * 1_000_000, 0, " "),
    ],
    ids=[
        "url(",
        "url('",
        'url("',
        "comments",
        "@import",
        "spaces",
        "image-set(",
        'image-set("',
        "nested",
        "escaped url(",
        "hashes",
    ],
)
def test_hostile_stylesheets_are_read_in_linear_time(css, found, then):
    """Each of these (a megabyte or so) was read from each "url(" or "/*" to its end again; what
    they hold is what CSS reads there, and what follows them once they end is read as CSS."""
    with in_linear_time():
        assert len(list(iter_css_urls(css))) == found
        assert [url for _start, _end, url in iter_css_urls(css + then + "url(/end.png)")][-1] == "/end.png"


@pytest.mark.parametrize(
    ("css", "urls"),
    [
        ('a{content:"/*"} b{background:url(x.png)}', ["x.png"]),
        ("a{content:'/*'} b{background:url(x.png)} /* url(no.png) */", ["x.png"]),
        ('a{background:url("a/*b.png")} b{background:url(c.png)}', ["a/*b.png", "c.png"]),
        ("a{background:url(a/*b.png)} b{background:url(c.png)} /* */", ["a/*b.png", "c.png"]),
        ('a{content:"it\\"s /*"} b{c:url(y.png)}', ["y.png"]),
        ('a{content:"a newline ends a string /*\n b{c:url(y.png)}', ["y.png"]),
    ],
)
def test_a_comment_starts_nowhere_inside_a_string_or_a_url(css, urls):
    """CSS reads "/*" as a comment only between tokens: inside a string or a url it is text."""
    assert [url for _start, _end, url in iter_css_urls(css)] == urls


@pytest.mark.parametrize(
    "css",
    [
        'a{content:"url(x.png)"}',
        "a{content:'url(x.png)' 'image-set(\"y.png\")'}",
        'a{font-family:"url(font.woff)", sans-serif}',
        "a{quotes:'@import \"q.css\"'}",
        '[title="url(t.png)"]{color:red}',
    ],
)
def test_url_inside_a_css_string_is_no_link(css):
    assert list(iter_css_urls(css)) == []
    assert extract_css(css, "http://h/s.css").links == ()


def test_a_meta_refresh_with_a_megabyte_of_spaces_is_read_in_linear_time():
    with in_linear_time():
        assert parse_meta_refresh("0; url=x" + " " * 1_000_000 + "y")[2] == "x" + " " * 1_000_000 + "y"


@pytest.mark.parametrize(
    ("content", "url"),
    [("0; url=/a", "/a"), ("5;URL='http://x/'", "http://x/"), ("3", None), ("0;url=b.html", "b.html")],
)
def test_parse_meta_refresh(content, url):
    span = parse_meta_refresh(content)
    assert (span[2] if span else None) == url


# Pages past STREAMED_BYTES are parsed as a stream (no tree): they must give what the tree gives.
STREAMED_PAGES = [
    '<a href="a.html">x</a><map><area href="/area"></map><link rel="canonical" href="/c">',
    '<link rel="stylesheet" href="s.css"><link rel="preload" as="image" imagesrcset="pre.png 2x">',
    '<img src="i.png" srcset="s1.png 1x, s2.png 2x"><picture><source srcset="p.webp"></picture>',
    '<video src="v.mp4" poster="poster.jpg"><source src="v.webm"><track src="t.vtt"></video>',
    '<input type="image" src="btn.png"><input type="text" src="no.png"><object data="o.svg"></object>',
    '<meta http-equiv="refresh" content="0; url=/next"><meta name="ROBOTS" content="noindex, NoFollow">',
    "<div style=\"background: url('bg.png')\"><p STYLE='x: url(deep.png)'><a href=in-styled>t</a></p></div>",
    "<style>body { background: url(/st.png) }</style><style>@import 'imp.css';</style>",
    '<svg><use href="sprite.svg#icon"></use><use xlink:href="/x.svg#i"></use><title>In svg</title></svg>',
    '<svg><rect fill="url(paint.svg#g)" style="fill:url(st.svg#s)"/><g mask="url(m.svg?\u00e9#m)"></g></svg>',
    '<svg><rect fill="url(f1.svg)"/><g><rect style="fill:url(s1.svg)"/></g></svg><rect fill="url(no.svg)">',
    '<head><base href="mailto:x"><base href="http://other/r/"><title> A \n title </title></head><a href=x>',
    "<body><svg><title>Image</title></svg><head><title>Late head</title></head></body>",
    '<a href="i.png">i</a><img src="i.png"><a href="#top">t</a><a href="javascript:go()">j</a>',
    "<!-- <a href='commented.html'> --><script>var s = '<a href=\"in-script\">';</script><a href=after>",
    "<p><a href=x>unclosed <b>tags<table><td background=tile.gif><tr><a href=in-table>",
    '<meta charset="iso-8859-1"><a href="caf\xe9.html">caf\xe9</a><title>d\xe9j\xe0</title>',
    '<base href="/b/"><iframe srcdoc="&lt;img src=s.png&gt;&lt;iframe srcdoc=\'&lt;a href=d.html&gt;\'&gt;">',
]


# Elements left open at the end of a page (a page cut short): what they hold counts too.
ENDING_OPEN = ["<title>Cut short: ", "<style>p { background: url(/cut.png) } ", "<a href=/last>"]


def _past_streaming(html: str, encoding: str, ending: str = "") -> bytes:
    """``html`` made long enough to be parsed as a stream, by text after its links."""
    padding = "<p>" + "padding text " * (STREAMED_BYTES // 13 + 100) + "</p>"
    return (html + padding + ending).encode(encoding, errors="xmlcharrefreplace")


@pytest.mark.parametrize("ending", ENDING_OPEN)
def test_a_large_page_cut_short_parsed_as_a_stream_gives_what_its_tree_gives(ending):
    body = _past_streaming('<a href="a.html">a</a>', "utf-8", ending + "x " * 1000)
    streamed = findings(body, BASE, "text/html", "text/html")
    assert streamed == root_findings(parse_page(body, "text/html"), BASE)
    assert len(streamed[2]) == 2 or streamed[0] is not None and streamed[0].startswith("Cut short")


@pytest.mark.parametrize("html", STREAMED_PAGES)
@pytest.mark.parametrize("charset", [None, "utf-8", "iso-8859-1", "no-such-charset"])
def test_a_large_page_parsed_as_a_stream_gives_what_its_tree_gives(html, charset):
    body = _past_streaming(html, charset if charset in ("utf-8", "iso-8859-1") else "iso-8859-1")
    content_type = f"text/html; charset={charset}" if charset else "text/html"
    streamed = findings(body, BASE, "text/html", content_type)
    tree = root_findings(parse_page(body, content_type), BASE)
    assert streamed == tree
    assert list(streamed[2].items()) == list(tree[2].items())  # in the page's order too
    assert streamed[2] or streamed[0]  # each page has a link or a title to find


def test_a_large_page_in_utf16_parsed_as_a_stream_gives_what_its_tree_gives():
    body = _past_streaming('<p style="background: url(bg.png)"><a href="u.html">u</a>', "utf-16")
    streamed = findings(body, BASE, "text/html", "text/html")
    assert streamed == root_findings(parse_page(body, "text/html"), BASE)
    assert streamed[2] == {"http://h/dir/u.html": LINK, "http://h/dir/bg.png": REQUISITE}


def test_a_page_of_megabytes_is_parsed_for_links_without_its_tree(tmp_path):
    # A tree of this page holds about ten times its size; the stream holds a chunk at a time.
    # Measured in a fresh interpreter, as the peak of its resident memory (Linux's VmHWM).
    page = tmp_path / "big.html"
    rows = "".join(
        f'<a href="/p{i}.html" class="entry">page {i}: {"words of text " * 6}</a><br>' for i in range(40_000)
    )
    page.write_text(f"<title>Big</title><div>{rows}</div>")
    code = (
        "import sys\n"
        "from archiver.findings import findings\n"
        "def peak(): return int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n"
        "body = open(sys.argv[1], 'rb').read()\n"
        "before = peak()\n"
        "found = findings(body, 'http://h/', 'text/html')\n"
        "print(len(body), len(found[2]), peak() - before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(page)], capture_output=True, text=True, check=True)
    size, links, grown_kib = map(int, done.stdout.split())
    assert size > 4_000_000 and links == 40_000
    assert grown_kib < 24 * 1024, f"parsing a {size} byte page grew the process by {grown_kib} KiB"


def test_an_image_set_in_a_style_attribute_is_a_requisite():
    body = b"""<div style="background-image:-webkit-image-set('/st/b.png' 1x, '/st/b2.png' 2x)">x</div>"""
    page = extract(body, "http://h/p.html", "text/html")
    assert [(link.url, link.kind) for link in page.links] == [
        ("http://h/st/b.png", REQUISITE),
        ("http://h/st/b2.png", REQUISITE),
    ]


@pytest.mark.parametrize(
    ("css", "url"),
    [
        (r"a{b:url(a\20 b.png)}", "a b.png"),
        (r"a{b:url(a\ b.png)}", "a b.png"),
        (r"a{b:url(a\000020b.png)}", "a b.png"),  # six hex digits end the escape without a space
        ("a{b:url(a\\20\r\nb.png)}", "a b.png"),  # CR LF after hex digits is one white space
        (r'a{b:url("caf\e9.png")}', "café.png"),
        (r"a{b:url('caf\E9 .png')}", "café.png"),
        (r'a{b:url("a\"b.png")}', 'a"b.png'),
        (r"a{b:url('it\'s.png')}", "it's.png"),
        (r"a{b:url(x\(1\).png)}", "x(1).png"),
        (r"a{b:url(back\\slash.png)}", "back\\slash.png"),
        ('a{b:url("long\\\nline.png")}', "longline.png"),  # an escaped newline continues a string
        (r"a{b:url(\0 \D800 \110000 .png)}", "\ufffd\ufffd\ufffd.png"),  # no such code points
        (r'@import "st\79 le.css";', "style.css"),
        (r'a{b:image-set("a\20 b.png" 1x, "\"q\".png" 2x)}', "a b.png"),
    ],
)
def test_css_escapes_are_read_as_css_reads_them(css, url):
    # CSS Syntax 3, "consume an escaped code point": the URL a browser fetches.
    assert [found for _start, _end, found in iter_css_urls(css)][0] == url


def test_a_stylesheet_names_the_urls_its_escapes_spell():
    css = r'a{b:url(a\20 b.png)} c{d:url("caf\e9.png")} e{f:url(x\(1\).png)} @import "q\"uote.css";'
    assert [link.url for link in extract_css(css, "http://h/css/s.css").links] == [
        "http://h/css/a%20b.png",
        "http://h/css/caf%C3%A9.png",
        "http://h/css/x(1).png",
        "http://h/css/q%22uote.css",
    ]


@pytest.mark.parametrize(
    "css",
    [
        'url("' + '\\"' * 500_000,
        'url("\\"' * 200_000,
        "url('\\'url('" * 100_000,
        "url(" + "\\41" * 300_000,
        "url(" + "\\" * 1_000_000,
        '@import "' + "\\\n" * 500_000,
        'image-set("' + '\\"' * 500_000,
    ],
    ids=["quotes", 'url("\\"', "url('\\'url('", "hex escapes", "backslashes", "continuations", "image-set"],
)
def test_stylesheets_of_escapes_are_read_in_linear_time(css):
    with in_linear_time():
        list(iter_css_urls(css))
        found = [url for _start, _end, url in iter_css_urls(css + "\n;}url(/end.png)")]
        assert found[-1:] in ([], ["/end.png"])


def test_a_megabyte_of_hex_escapes_is_one_url():
    with in_linear_time():
        found = [url for _start, _end, url in iter_css_urls("url(" + "\\41 " * 250_000 + ")")]
        assert found == ["A" * 250_000]


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


def test_a_large_page_parsed_as_a_stream_encodes_queries_as_its_tree_does():
    body = _past_streaming('<a href="/s?q=caf\xe9"><p style="background:url(/b?\xe9)">', "windows-1252")
    content_type = "text/html; charset=windows-1252"
    streamed = findings(body, BASE, "text/html", content_type)
    assert streamed[2] == {"http://h/s?q=caf%E9": LINK, "http://h/b?%C3%A9": REQUISITE}
    root, encoding = read_page(body, content_type)
    assert streamed == root_findings(root, BASE, encoding)


def srcdoc(document: str) -> str:
    """An iframe holding ``document`` in its srcdoc attribute, escaped as a page writes it."""
    return f'<iframe srcdoc="{html.escape(document)}"></iframe>'


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (
            srcdoc('<img src="i.png"><a href="b.html">b</a><link rel="stylesheet" href="/s.css">'),
            {"http://h/dir/i.png": REQUISITE, "http://h/dir/b.html": LINK, "http://h/s.css": REQUISITE},
        ),
        (
            srcdoc('<style>p{background:url(bg.png)}</style><p style="background:url(/p.png)">'),
            {"http://h/dir/bg.png": REQUISITE, "http://h/p.png": REQUISITE},
        ),
        # Against the page's base URL, as browsers resolve a srcdoc document's links...
        ('<base href="http://other/r/">' + srcdoc('<img src="i.png">'), {"http://other/r/i.png": REQUISITE}),
        # ...unless it has a <base> of its own, itself resolved against the page's.
        (srcdoc('<base href="sub/"><img src="i.png">'), {"http://h/dir/sub/i.png": REQUISITE}),
        (srcdoc('<img src="q.png?a=1&amp;b=2">'), {"http://h/dir/q.png?a=1&b=2": REQUISITE}),
        (srcdoc(srcdoc('<img src="deep.png">')), {"http://h/dir/deep.png": REQUISITE}),
        (srcdoc('<a href="#top">t</a><img src="data:image/png;base64,AA">'), {}),
        (
            '<iframe src="f.html" srcdoc="<img src=s.png>">',
            {"http://h/dir/f.html": REQUISITE, "http://h/dir/s.png": REQUISITE},
        ),
    ],
)
def test_the_document_of_an_iframe_srcdoc_is_read_for_links(page, expected):
    assert links_of(page) == expected


def test_a_srcdoc_document_writes_its_queries_in_utf8_whatever_its_page():
    body = '<a href="/s?q=café">p</a><iframe srcdoc="<a href=\'/s?q=café\'>s</a>">'.encode("cp1252")
    found = [link.url for link in extract(body, BASE, "text/html", "text/html; charset=windows-1252").links]
    assert found == ["http://h/s?q=caf%E9", "http://h/s?q=caf%C3%A9"]


def test_srcdoc_documents_are_read_as_deep_as_browsers_nest_frames():
    page = ""
    for depth in range(MAX_SRCDOC_DEPTH + 1, -1, -1):
        page = f'<img src="{depth}.png">' + (srcdoc(page) if page else "")
    expected = {f"http://h/dir/{depth}.png": REQUISITE for depth in range(MAX_SRCDOC_DEPTH + 1)}
    assert links_of(page) == expected


@pytest.mark.parametrize(
    "page",
    [
        functools.reduce(lambda inner, _n: srcdoc(inner + '<img src="x.png">'), range(200), ""),
        '<iframe srcdoc="' + "&lt;a href=x&gt;" * 200_000 + '">',
        srcdoc("<iframe srcdoc=" + "&lt;iframe/srcdoc=" * 100_000 + ">") * 3,
        srcdoc('<img src="x.png">') * 50_000,
    ],
    ids=["nested 200 deep", "a srcdoc of 200,000 tags", "unquoted nesting", "50,000 srcdocs"],
)
def test_hostile_srcdoc_documents_are_read_in_linear_time(page):
    with in_linear_time():
        body = page.encode()
        assert findings(body, BASE, "text/html", "text/html") == root_findings(parse_page(body), BASE)


SVG_DOCUMENT = b"""<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">
  <style>rect{fill:url(pattern.svg#p)} @import "s.css";</style>
  <style><![CDATA[ circle{background:url(cdata.png)} a > b {} ]]></style>
  <image href="pic.png"/><image xlink:href="/old.png"/>
  <use href="sprite.svg#icon"/><use xlink:href="#local"/>
  <a href="page.html"><text>go</text></a><a xlink:href="other.html">o</a>
  <filter id="f"><feImage href="fe.png"/></filter>
  <rect style="fill:url('bg.png')"/>
  <script href="s.js"/>
  <!-- <image href="commented.png"/> -->
</svg>"""
SVG_LINKS = {
    "http://h/img/pattern.svg": REQUISITE,
    "http://h/img/s.css": REQUISITE,
    "http://h/img/cdata.png": REQUISITE,
    "http://h/img/pic.png": REQUISITE,
    "http://h/old.png": REQUISITE,
    "http://h/img/sprite.svg": REQUISITE,
    "http://h/img/page.html": LINK,
    "http://h/img/other.html": LINK,
    "http://h/img/fe.png": REQUISITE,
    "http://h/img/bg.png": REQUISITE,
    "http://h/img/s.js": REQUISITE,
}


def svg_links(body: bytes, content_type: str = "image/svg+xml") -> dict[str, str]:
    return {
        link.url: link.kind
        for link in extract(body, "http://h/img/a.svg", "image/svg+xml", content_type).links
    }


def test_an_svg_document_is_read_for_links_as_an_html_page_is():
    # The image needs what it draws and styles with (requisites); its <a> leads elsewhere (a link).
    assert svg_links(SVG_DOCUMENT) == SVG_LINKS


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (  # the SVG namespace under a prefix, xlink under another
            b'<s:svg xmlns:s="http://www.w3.org/2000/svg" xmlns:x="http://www.w3.org/1999/xlink">'
            b'<s:image x:href="p.png"/></s:svg>',
            {"http://h/img/p.png": REQUISITE},
        ),
        (  # Adobe Illustrator names its namespaces by entities of its own DTD
            b'<!DOCTYPE svg [<!ENTITY ns_svg "http://www.w3.org/2000/svg">]>'
            b'<svg xmlns="&ns_svg;"><image href="p.png"/></svg>',
            {"http://h/img/p.png": REQUISITE},
        ),
        (
            b'<svg xmlns="http://www.w3.org/2000/svg"><image href="p.png"/><broken',
            {"http://h/img/p.png": REQUISITE},
        ),
        (b"not xml at all", {}),
        (b"", {}),
    ],
)
def test_an_svg_document_is_read_however_it_is_written(body, expected):
    assert svg_links(body) == expected


def test_an_svg_document_writes_its_queries_in_its_encoding_but_in_css():
    body = (
        b'<?xml version="1.0" encoding="windows-1252"?><svg xmlns="http://www.w3.org/2000/svg">'
        b'<a href="/s?q=caf\xe9"/><rect style="fill:url(/b.png?\xe9)"/></svg>'
    )
    assert svg_links(body) == {"http://h/s?q=caf%E9": LINK, "http://h/b.png?%C3%A9": REQUISITE}
    assert svg_links(body.replace(b"windows-1252", b"utf-8"), "image/svg+xml; charset=windows-1252") == {
        "http://h/s?q=caf%E9": LINK,
        "http://h/b.png?%C3%A9": REQUISITE,
    }


def test_svg_inside_an_html_page_is_read_with_the_same_rules():
    page = '<svg><filter><feImage href="fe.png"/></filter><a xlink:href="x.html">x</a>'
    page += '<script href="s.js"/></svg>'
    assert links_of(page) == {
        "http://h/dir/fe.png": REQUISITE,
        "http://h/dir/x.html": LINK,
        "http://h/dir/s.js": REQUISITE,
    }


@pytest.mark.parametrize(
    "body",
    [
        b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa">'
        + b"".join(b'<!ENTITY %c "%s">' % (98 + n, (b"&%c;" % (97 + n)) * 10) for n in range(9))
        + b']><svg xmlns="http://www.w3.org/2000/svg"><text>&j;</text><image href="p.png"/></svg>',
        b'<svg xmlns="http://www.w3.org/2000/svg">' + b"<g>" * 200_000 + b'<image href="p.png"/>',
        b'<svg xmlns="http://www.w3.org/2000/svg"><image href="' + b"x" * 10_000_000 + b'"/></svg>',
        b'<svg xmlns="http://www.w3.org/2000/svg">' + b'<image href="p.png"/>' * 200_000 + b"</svg>",
        b'<svg xmlns="http://www.w3.org/2000/svg"><style>' + b"url(" * 1_000_000 + b"</style></svg>",
    ],
    ids=["a billion laughs", "nested 200,000 deep", "an href of 10 MB", "200,000 images", "a hostile style"],
)
def test_hostile_svg_documents_are_read_in_linear_time(body):
    with in_linear_time():
        found = svg_links(body)
    assert len(found) <= 1


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


XHTML = "application/xhtml+xml"


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


SVG_STYLED_DOCUMENT = b"""<?xml version="1.0" encoding="UTF-8"?>
<!-- <?xml-stylesheet href="commented.css"?> -->
<?xml-stylesheet type="text/css" href="look.css?a=1&amp;b=2"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:h="http://www.w3.org/1999/xhtml">
  <?xml-stylesheet href="too-late.css"?>
  <rect fill="url(paint.svg#g)" stroke="url('edge.svg#s')" filter="url(#local)" mask="url(m.svg#m)"/>
  <g clip-path="url(clip.svg#c)" style="background:url(bg.png)"><circle marker-start="url(mk.svg#a)"/></g>
  <style>@import "imported.css"; rect{fill:url(styled.png)}</style>
  <foreignObject width="10" height="10">
    <div xmlns="http://www.w3.org/1999/xhtml" style="background:url(div-bg.png)">
      <img src="fo.png" srcset="fo-2x.png 2x"/><link rel="stylesheet" href="fo.css"/>
      <video poster="poster.png" src="clip.webm"/><a href="fo-page.html">more</a>
    </div>
    <h:img src="prefixed.png"/>
    <img src="no-xhtml.png"/>
  </foreignObject>
</svg>"""
SVG_STYLED_LINKS = {
    "http://h/img/look.css?a=1&b=2": REQUISITE,
    "http://h/img/paint.svg": REQUISITE,
    "http://h/img/edge.svg": REQUISITE,
    "http://h/img/m.svg": REQUISITE,
    "http://h/img/clip.svg": REQUISITE,
    "http://h/img/bg.png": REQUISITE,
    "http://h/img/mk.svg": REQUISITE,
    "http://h/img/imported.css": REQUISITE,
    "http://h/img/styled.png": REQUISITE,
    "http://h/img/div-bg.png": REQUISITE,
    "http://h/img/fo.png": REQUISITE,
    "http://h/img/fo-2x.png": REQUISITE,
    "http://h/img/fo.css": REQUISITE,
    "http://h/img/poster.png": REQUISITE,
    "http://h/img/clip.webm": REQUISITE,
    "http://h/img/fo-page.html": LINK,
    "http://h/img/prefixed.png": REQUISITE,
}


def test_an_svg_document_is_read_for_what_styles_it_and_the_html_it_holds():
    # Presentation attributes' url(), the stylesheets of <?xml-stylesheet?> before the root (those
    # after it, or in a comment, apply to nothing), and the XHTML of a <foreignObject> by HTML's
    # table (an <img> outside the XHTML namespace is no HTML image).
    assert svg_links(SVG_STYLED_DOCUMENT) == SVG_STYLED_LINKS


XHTML_STYLED_PAGE = b"""<?xml version="1.0" encoding="UTF-8"?>
<!-- <?xml-stylesheet href="commented.css"?> -->
<?xml-stylesheet type="text/css" href="look.css?a=1&amp;b=2"?>
<!DOCTYPE html [ <!ENTITY e "<?xml-stylesheet href='in-subset.css'?>"> ]>
<?xml-stylesheet href='/after-doctype.css'?>
<html xmlns="http://www.w3.org/1999/xhtml"><?xml-stylesheet href="too-late.css"?>
<head><base href="/b/"/></head><body><a href="p.html">p</a></body></html>"""


def test_an_xhtml_page_is_styled_by_its_xml_stylesheet_instructions():
    # As an SVG image is: those before its root element, resolved against its base URL.
    page = extract(XHTML_STYLED_PAGE, BASE, "application/xhtml+xml", "application/xhtml+xml")
    assert {link.url: link.kind for link in page.links} == {
        "http://h/b/look.css?a=1&b=2": REQUISITE,
        "http://h/after-doctype.css": REQUISITE,
        "http://h/b/p.html": LINK,
    }
    # An HTML page has no such instructions: its parser reads them as bogus comments.
    assert links_of(XHTML_STYLED_PAGE.decode()) == {"http://h/b/p.html": LINK}


def test_presentation_attributes_of_svg_inside_a_page_are_read():
    page = '<svg><rect fill="url(/p.svg#g)" stroke="url(#local)"/><use filter="url(f.svg#f)"/></svg>'
    assert links_of(page) == {"http://h/p.svg": REQUISITE, "http://h/dir/f.svg": REQUISITE}
    # Outside an <svg> such an attribute is nothing to a browser.
    assert links_of('<div fill="url(/no.png)"></div><svg></svg><p mask="url(/no.svg)">') == {}


@pytest.mark.parametrize(
    "html",
    [
        "<p>text</p><body background=late.png>",  # a body its text began before its tag
        "<body class=a><p>text</p><body background=late.png class=b>",  # a second <body> tag
        "<html><body><p>text</p></body></html><body background='late.png'>",
    ],
)
@pytest.mark.parametrize("streamed", [False, True])
def test_a_later_body_tags_background_is_fetched_as_chromium_fetches_it(html, streamed):
    """HTML's parser gives the body the attributes of a <body> tag met once the body began, where
    it lacks them, and Chromium fetches a background so given; libxml2 dropped them, and the
    crawl, a tree or a stream, found no image."""
    body = _past_streaming(html, "utf-8") if streamed else html.encode()
    found = findings(body, BASE, "text/html", "text/html")[2]
    assert found.get("http://h/dir/late.png") == REQUISITE


@pytest.mark.parametrize("streamed", [False, True])
def test_a_body_tag_in_a_script_or_a_comment_gives_the_body_nothing(streamed):
    html = "<body><script>'<body background=s.png>'</script><!-- <body background=c.png> --><p>x"
    body = _past_streaming(html, "utf-8") if streamed else html.encode()
    found = findings(body, BASE, "text/html", "text/html")[2]
    assert not {"http://h/dir/s.png", "http://h/dir/c.png"} & set(found)
    assert parse_page(body, "text/html").find("body").get("background") is None
