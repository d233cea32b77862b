"""Link extraction from every place an HTML page can hold one: attributes, <base>, srcset,
meta refresh, iframe srcdoc documents, a body's background."""

import functools

import pytest
from conftest import in_linear_time
from link_cases import BASE, links_of, past_streaming, srcdoc

from archiver.findings import extract, extract_css, extract_html, findings, parse_page, root_findings
from archiver.link_values import parse_meta_refresh, parse_srcset
from archiver.links import LINK, MAX_SRCDOC_DEPTH, REQUISITE


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


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("page", "title"),
    [
        # Chromium's document.title of each page (measured): the first <title> of the document's
        # own. One of an <svg>, in a <template> or in a <noscript> was taken for it (in the
        # manifest, index.html and the WACZ's pages.jsonl).
        ("<body><svg><title>In an image</title></svg></body>", None),
        ("<svg><title>svg first</title></svg><title>real later</title>", "real later"),
        ("<template><title>T</title></template><p>x", None),
        ("<noscript><title>N</title></noscript><p>x", None),
        ("<math><mi><title>M</title></mi></math>", "M"),
        ("<svg><foreignObject><title>F</title></foreignObject></svg>", "F"),
        ("<head><title>First</title></head><title>Second</title>", "First"),
        ("<body><p>x</p><title>Outside the head</title>", "Outside the head"),
    ],
)
def test_the_title_is_the_documents_as_chromium_reads_it(page: str, title: str | None, streamed: bool):
    body = past_streaming(page, "utf-8") if streamed else page.encode()
    assert extract_html(body, BASE).title == title


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


def test_an_image_set_in_a_style_attribute_is_a_requisite():
    body = b"""<div style="background-image:-webkit-image-set('/st/b.png' 1x, '/st/b2.png' 2x)">x</div>"""
    page = extract(body, "http://h/p.html", "text/html")
    assert [(link.url, link.kind) for link in page.links] == [
        ("http://h/st/b.png", REQUISITE),
        ("http://h/st/b2.png", REQUISITE),
    ]


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
    body = past_streaming(html, "utf-8") if streamed else html.encode()
    found = findings(body, BASE, "text/html", "text/html")[2]
    assert found.get("http://h/dir/late.png") == REQUISITE


@pytest.mark.parametrize("streamed", [False, True])
def test_a_body_tag_in_a_script_or_a_comment_gives_the_body_nothing(streamed):
    html = "<body><script>'<body background=s.png>'</script><!-- <body background=c.png> --><p>x"
    body = past_streaming(html, "utf-8") if streamed else html.encode()
    found = findings(body, BASE, "text/html", "text/html")[2]
    assert not {"http://h/dir/s.png", "http://h/dir/c.png"} & set(found)
    assert parse_page(body, "text/html").find("body").get("background") is None


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("page", "urls"),
    [
        # HTML strips ASCII whitespace around a URL attribute and splits a srcset on it alone:
        # str.strip() took U+00A0 and U+3000 too, and the crawl fetched another URL than
        # Chromium (measured: /x.png%C2%A0 for src="x.png&nbsp;", as editors leave it).
        (
            '<img src="\u00a0nb.png"><img src="x.png&nbsp;"><img src="\u3000ide.png">',
            ["http://h/dir/%C2%A0nb.png", "http://h/dir/x.png%C2%A0", "http://h/dir/%E3%80%80ide.png"],
        ),
        ('<img src=" \t\n a.png \r\f">', ["http://h/dir/a.png"]),
        (
            '<img srcset="a.png\u00a0b.png 2x, c.png\u2003d.png">',
            ["http://h/dir/a.png%C2%A0b.png", "http://h/dir/c.png%E2%80%83d.png"],
        ),
        ('<meta http-equiv="refresh" content="0;\u00a0url=r.html">', ["http://h/dir/%C2%A0url=r.html"]),
        # An <image> start tag is an <img> to HTML's parser (Chromium fetched it, the crawl did not).
        (
            '<p><image src="/imgtag.png"><svg><image href="/svg.png"/></svg>',
            ["http://h/imgtag.png", "http://h/svg.png"],
        ),
        # A NUL in a value is U+FFFD to the tokenizer, as to libxml2.
        ('<img src="n\x00ul.png">', ["http://h/dir/n%EF%BF%BDul.png"]),
    ],
)
def test_a_urls_attribute_is_read_as_chromiums_parser_reads_it(page: str, urls: list[str], streamed: bool):
    body = past_streaming(page, "utf-8") if streamed else page.encode()
    assert [link.url for link in extract_html(body, BASE).links] == urls
