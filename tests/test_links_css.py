"""Link extraction from stylesheets, style elements and style attributes: url() and @import,
CSS comments, strings and escapes read as CSS reads them, in linear time."""

import pytest
from conftest import in_linear_time

from archiver.findings import extract_css
from archiver.link_values import iter_css_urls


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
